"""The client over a list of struxd replicas: one nng REQ socket dialled to all.

Retry rules are those of docs/PROTOCOL.md ("Replicas and retries"), the same
as the C client's: nng never resends by itself; a request whose connection
closes before the answer, or whose answer does not come in time, is sent
again (same bytes: same id, same seed) at most ``retries`` times; an
``overloaded`` answer is retried after a growing backoff for up to
``overload_wait`` seconds and is not a failure.  A call returns one answer.
"""
from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import pynng

from ._errors import StruxError, TransportError

Request = Union[Mapping[str, Any], bytes, str]
Response = Dict[str, Any]

# nng errors after which the request is known not to be answered by the
# replica it went to: send it again elsewhere
_LOST = (pynng.ConnectionReset, pynng.Timeout, pynng.ConnectionRefused,
         pynng.ConnectionAborted, asyncio.TimeoutError)


@dataclass
class Stats:
    """Counters since the client was opened."""
    calls: int = 0        #: calls made
    attempts: int = 0     #: requests sent, retries included
    retries: int = 0      #: resent after a lost connection or a timeout
    overloaded: int = 0   #: resent after an ``overloaded`` answer
    failed: int = 0       #: calls that ended in a transport error
    connected: int = 0    #: replicas connected now


def _body(request: Request) -> bytes:
    if isinstance(request, bytes):
        return request
    if isinstance(request, str):
        return request.encode()
    return json.dumps(request, ensure_ascii=False).encode()


def _request_id(body: bytes) -> Any:
    try:
        return json.loads(body).get("id")
    except (ValueError, AttributeError):
        return None


def _is_overloaded(resp: Any) -> bool:
    return (isinstance(resp, dict) and resp.get("ok") is False
            and (resp.get("error") or {}).get("code") == "overloaded")


def transport_failure(request: Request, message: str) -> Response:
    """The answer a batch records for a request that got none (code ``transport``)."""
    return {"ok": False, "id": _request_id(_body(request)),
            "error": {"code": "transport", "message": message}}


class AsyncClient:
    """An asyncio client over one or more struxd replicas.

    Args:
        addrs: replica addresses (``tcp://HOST:PORT``, ``ipc:///PATH``), or one string.
        timeout: seconds to wait for each attempt's answer (None: forever).
        retries: how often one request is sent again after a lost connection or a timeout.
        overload_wait: seconds during which ``overloaded`` answers are retried (0: never).
        backoff: first wait after ``overloaded``, seconds; doubles up to 1 s.

    Raises:
        TransportError: when none of the replicas can be reached now (those
            that cannot are dialled again in the background, so a replica
            started later joins by itself).

    Any number of coroutines of one event loop may call at once.
    """

    def __init__(self, addrs: Union[str, Sequence[str]], *, timeout: Optional[float] = 600.0,
                 retries: int = 3, overload_wait: float = 60.0, backoff: float = 0.02) -> None:
        if isinstance(addrs, str):
            addrs = [addrs]
        addrs = [a.strip() for a in addrs if a and a.strip()]
        if not addrs:
            raise ValueError("no replica address given")
        self.addrs: List[str] = list(addrs)
        self.timeout = timeout
        self.retries = max(0, int(retries))
        self.overload_wait = max(0.0, float(overload_wait))
        self.backoff = max(0.001, float(backoff))
        self._stats = Stats()
        self._lock = threading.Lock()
        # resend_time=-1: a resend on a live connection would run the model twice
        self._sock = pynng.Req0(resend_time=-1, recv_max_size=0, reconnect_time_min=50,
                                reconnect_time_max=1000)
        self._sock.add_post_pipe_connect_cb(lambda _p: self._count("connected", 1))
        self._sock.add_post_pipe_remove_cb(lambda _p: self._count("connected", -1))
        reached, first_error = 0, None
        for a in self.addrs:
            try:
                self._sock.dial(a, block=True)
                reached += 1
            except pynng.NNGException as e:
                first_error = first_error or f"{a}: {e}"
                # the failed dialer is gone; this one keeps trying in the background
                self._sock.dial(a, block=False)
        if not reached:
            self._sock.close()
            raise TransportError(f"cannot connect to any replica ({first_error})")

    def _count(self, field: str, n: int = 1) -> None:
        with self._lock:
            setattr(self._stats, field, getattr(self._stats, field) + n)

    @property
    def stats(self) -> Stats:
        """A copy of the counters."""
        with self._lock:
            return Stats(**vars(self._stats))

    async def _attempt(self, body: bytes) -> bytes:
        ctx = self._sock.new_context()
        try:
            await asyncio.wait_for(ctx.asend(body), self.timeout)
            return await asyncio.wait_for(ctx.arecv(), self.timeout)
        finally:
            ctx.close()

    async def call(self, request: Request) -> Response:
        """Sends one request (a dict, or its JSON text) and returns the response dict.

        The response may say ``"ok": false`` (an error answer of struxd);
        only the transport failing after all retries raises.

        Raises:
            TransportError: no answer after ``retries`` retries.
        """
        body = _body(request)
        self._count("calls")
        give_up = time.monotonic() + self.overload_wait
        failures, backoff = 0, self.backoff
        while True:
            self._count("attempts")
            try:
                raw = await self._attempt(body)
            except _LOST as e:
                if failures >= self.retries:
                    self._count("failed")
                    what = "timed out" if isinstance(e, (pynng.Timeout, asyncio.TimeoutError)) \
                        else f"connection lost ({e})"
                    raise TransportError(f"no answer after {failures + 1} attempts: {what}",
                                         request_id=_request_id(body)) from e
                failures += 1
                self._count("retries")
                await asyncio.sleep(0.01 * failures)
                continue
            resp = json.loads(raw)
            # `overloaded` comes before any model work: sending again never runs it twice
            if _is_overloaded(resp) and time.monotonic() + backoff < give_up:
                self._count("overloaded")
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 1.0)
                continue
            return resp

    async def result(self, request: Request) -> Any:
        """Sends one request and returns its ``output``.

        Raises:
            StruxError: the answer is an error (``code``, ``message``, ``pointer``).
            TransportError: no answer after the retries.
        """
        resp = await self.call(request)
        if not resp.get("ok"):
            raise StruxError.from_response(resp)
        return resp.get("output")

    async def batch(self, requests: Iterable[Request], *, concurrency: int = 16,
                    progress: bool = False) -> List[Response]:
        """Answers every request, at most ``concurrency`` in flight, in input order.

        Never raises for one request: a request that got no answer after the
        retries is recorded as ``{"ok": false, "error": {"code": "transport"}}``.
        ``progress=True`` draws a tqdm bar when tqdm is installed.
        """
        reqs = list(requests)
        out: List[Optional[Response]] = [None] * len(reqs)
        sem = asyncio.Semaphore(max(1, concurrency))
        bar = _progress_bar(len(reqs)) if progress else None

        async def one(i: int) -> None:
            async with sem:
                try:
                    out[i] = await self.call(reqs[i])
                except TransportError as e:
                    out[i] = transport_failure(reqs[i], str(e))
                if bar is not None:
                    bar.update(1)

        try:
            await asyncio.gather(*(one(i) for i in range(len(reqs))))
        finally:
            if bar is not None:
                bar.close()
        return [r for r in out if r is not None]

    def close(self) -> None:
        """Closes the socket; calls still waiting fail."""
        self._sock.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


def _progress_bar(total: int) -> Any:
    try:
        from tqdm import tqdm  # optional
    except ImportError:
        return None
    return tqdm(total=total, unit="req")


class Client:
    """A thread-safe synchronous client over one or more struxd replicas.

    Same arguments and retry rules as :class:`AsyncClient`, whose event loop
    runs on a private thread: any number of threads may call at once.
    """

    def __init__(self, addrs: Union[str, Sequence[str]], **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="strux-client",
                                        daemon=True)
        self._thread.start()
        try:
            self._async = AsyncClient(addrs, **options)
        except BaseException:
            self._stop_loop()
            raise

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    @property
    def stats(self) -> Stats:
        """A copy of the counters."""
        return self._async.stats

    def call(self, request: Request) -> Response:
        """See :meth:`AsyncClient.call`."""
        return self._run(self._async.call(request))

    def result(self, request: Request) -> Any:
        """See :meth:`AsyncClient.result`."""
        return self._run(self._async.result(request))

    def batch(self, requests: Iterable[Request], *, concurrency: int = 16,
              progress: bool = False) -> List[Response]:
        """See :meth:`AsyncClient.batch`."""
        return self._run(self._async.batch(requests, concurrency=concurrency, progress=progress))

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def close(self) -> None:
        """Closes the socket and stops the client's thread."""
        if self._loop.is_closed():
            return
        self._async.close()
        self._stop_loop()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

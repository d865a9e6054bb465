"""One client per worker process, shared by the Spark and Dask helpers.

A Spark Python worker or a Dask worker process runs many tasks one after the
other; each task's function finds the process's client here, made on first
use and kept until the process exits, so a job opens one connection per
process and replica, not one per partition.
"""
from __future__ import annotations

import atexit
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ._client import Client, transport_failure
from ._errors import StruxError, TransportError

#: the columns every result carries; all null on a row that was answered
ERROR_COLUMNS = ("error_code", "error_message", "error_pointer")

_clients: Dict[Tuple[Any, ...], Client] = {}
_lock = threading.Lock()


def worker_client(addrs: Tuple[str, ...], options: Tuple[Tuple[str, Any], ...]) -> Client:
    """The process's client for these replicas and options, made on first use.

    Raises:
        TransportError: no replica reachable now (nothing is kept: the next call tries again).
    """
    key = (addrs, options)
    with _lock:
        c = _clients.get(key)
        if c is None:
            c = Client(list(addrs), **dict(options))
            _clients[key] = c
        return c


@atexit.register
def _close_all() -> None:
    with _lock:
        for c in _clients.values():
            c.close()
        _clients.clear()


def request_maker(column: str, base: Mapping[str, Any], id_column: Optional[str],
                   seed_column: Optional[str]) -> Callable[[Dict[str, List[Any]], int], Dict[str, Any]]:
    """``make(cols, i)``: the request for row i of the columns ``cols`` (name -> list)."""
    def make(cols: Dict[str, List[Any]], i: int) -> Dict[str, Any]:
        q = dict(base)
        q["document"] = cols[column][i]
        q["id"] = cols[id_column][i] if id_column else i
        if seed_column and cols[seed_column][i] is not None:
            q["seed"] = int(cols[seed_column][i])
        return q
    return make


class Unfit(Exception):
    """An answered output that the result's column cannot hold (error code ``unrepresentable``)."""

    def __init__(self, pointer: str, message: str) -> None:
        super().__init__(message)
        self.pointer = pointer


def answer_rows(documents: Sequence[Any], make: Callable[[int], Dict[str, Any]],
                answer: Callable[[Mapping[str, Any]], List[Any]], n_outputs: int, *,
                addrs: Tuple[str, ...], client_options: Tuple[Tuple[str, Any], ...],
                concurrency: int, raise_on_error: bool, column: str,
                row_id: Callable[[int], Any]) -> Tuple[List[List[Any]], List[List[Any]]]:
    """Sends one request per row (``make(i)``) and returns the result's columns.

    Returns ``(values, errors)``: ``values[k][i]`` is ``answer(response)[k]``
    for an answered row i (None otherwise), ``errors`` the three lists of
    error code, message and pointer (None for an answered row).  A null
    document is an error row without a request.

    Raises:
        StruxError: the first error row's, when ``raise_on_error``.
    """
    live = [i for i, d in enumerate(documents) if d is not None]
    reqs = [make(i) for i in live]
    try:
        resps = worker_client(addrs, client_options).batch(reqs, concurrency=concurrency)
    except TransportError as e:  # no replica reachable when the client was made
        resps = [transport_failure(q, str(e)) for q in reqs]
    by_row: Dict[int, Mapping[str, Any]] = dict(zip(live, resps))
    values: List[List[Any]] = [[] for _ in range(n_outputs)]
    errors: List[List[Any]] = [[], [], []]
    for i in range(len(documents)):
        resp = by_row.get(i)
        err: Tuple[Optional[str], Optional[str], Optional[str]] = (None, None, None)
        vals: List[Any] = [None] * n_outputs
        if resp is None:
            err = ("bad_request", f"{column} is null", "/document")
        elif not resp.get("ok"):
            e = resp.get("error") or {}
            err = (e.get("code") or "internal", e.get("message"), e.get("pointer"))
        else:
            try:
                vals = answer(resp)
            except Unfit as u:
                err = ("unrepresentable", str(u), u.pointer)
        if err[0] is not None and raise_on_error:
            raise StruxError(err[1] or "", code=err[0], pointer=err[2], request_id=row_id(i),
                             response=dict(resp) if resp else None)
        for k, v in enumerate(vals):
            values[k].append(v)
        for k, v in enumerate(err):
            errors[k].append(v)
    return values, errors

#!/usr/bin/env python3
"""MaskBench for peer engines, measured the way `strux maskbench` measures strux.

The method is copied from tools/strux/cmd_maskbench.c so that the numbers can be
put side by side on one machine:

  * each schema file runs in its own forked child (a crash or a timeout is
    counted, not fatal); the timeout covers reading, compiling and all
    instances of that file;
  * TTFM = compile the schema + compute the first mask (engine tokenizer and
    vocabulary are built once in the parent before the fork, as strux loads its
    tokenizer once);
  * for each test instance: `json.dumps(data, ensure_ascii=False)` (data the
    default encoder cannot spell, NaN/Infinity, is skipped, as strux skips it),
    tokenized with the Qwen3 tokenizer as plain text (no special tokens, added
    tokens in the text are not recognised: strux's plain encode); then for each
    token a full mask computation is timed (a TBM sample), the token must be
    allowed by the mask and is committed; after the last token one more mask
    (also a TBM sample) must allow <|im_end|>;
  * per schema: compile_error (the engine declined or raised at compile),
    invalidation_error (an invalid instance accepted), else validation_error (a
    valid instance rejected), else passing; crash; timeout.
  * `tokens` counts every mask check that passed, the end-of-turn one included,
    as strux does.

Everything runs on one thread: the environment pins rayon/OpenMP/torch to one
thread and no engine's parallel (batch) mask path is used.

Output, per engine: the strux summary line with "engine" and "version" added,
and with --out one JSON line per schema (strux's fields plus "engine").
"""

import argparse
import importlib.metadata
import json
import os
import select
import signal
import sys
import time

# Before any engine is imported: no engine may use a second core.
for _v in ("RAYON_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
           "NUMEXPR_NUM_THREADS"):
    os.environ[_v] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

EOS = 151645  # <|im_end|>, the end-of-turn token strux requires at the end

ENGINES = ("llguidance", "llguidance-exact", "xgrammar", "outlines-core")


def now_us():
    return time.perf_counter_ns() / 1000.0


def bit(mask, tok):
    return (int(mask[tok >> 5]) >> (tok & 31)) & 1


# ---- engines ---------------------------------------------------------------
#
# Each engine is a class built once in the parent (tokenizer/vocabulary work)
# whose compile(schema) returns a matcher with reset(), fill(mask) (the timed
# full mask into a preallocated int32 array) and accept(token) -> bool.


class LLGuidance:
    """llguidance's JSON-schema grammar + LLMatcher.  Package defaults
    (whitespace_flexible, "," and ":" with free whitespace around them) or,
    for "llguidance-exact", exactly json.dumps' separators and no other
    whitespace."""

    def __init__(self, tok_json, n_vocab, exact):
        import llguidance
        import llguidance.numpy  # noqa: F401  (checks numpy is there)

        self.L = llguidance
        self.version = importlib.metadata.version("llguidance")
        self.tok = llguidance.LLTokenizer(tok_json, n_vocab=n_vocab, eos_token=EOS)
        self.n_vocab = self.tok.vocab_size
        self.overrides = None
        if exact:
            self.overrides = {"whitespace_flexible": False, "item_separator": ", ",
                              "key_separator": ": "}
        self.options = self.overrides or "package defaults"

    def compile(self, schema):
        L = self.L
        g = L.LLMatcher.grammar_from_json_schema(schema, overrides=self.overrides)
        m = L.LLMatcher(self.tok, g, log_level=0)
        if m.is_error():
            raise CompileError(m.get_error())
        return _LLGMatcher(m)


class _LLGMatcher:
    def __init__(self, m):
        self.m = m

    def reset(self):
        self.m.reset()

    def fill(self, mask):
        self.m.unsafe_compute_mask_ptr(mask.ctypes.data, mask.nbytes)

    def accept(self, t):
        return self.m.consume_token(t)


class XGrammar:
    """XGrammar's compile_json_schema with the package defaults, one compiler
    thread, tokenizer info from the same tokenizer.json."""

    def __init__(self, tok_path, n_vocab):
        import torch

        torch.set_num_threads(1)
        import transformers
        import xgrammar

        self.torch = torch
        self.xgr = xgrammar
        self.version = importlib.metadata.version("xgrammar")
        hf = transformers.PreTrainedTokenizerFast(tokenizer_file=tok_path)
        self.info = xgrammar.TokenizerInfo.from_huggingface(hf, vocab_size=n_vocab,
                                                            stop_token_ids=[EOS])
        self.n_vocab = n_vocab
        self.options = "package defaults (compile_json_schema(schema)), max_threads=1, no cache"

    def compile(self, schema):
        xgr = self.xgr
        # A compiler per schema: its cache must not carry work between schemas.
        c = xgr.GrammarCompiler(self.info, max_threads=1, cache_enabled=False)
        cg = c.compile_json_schema(json.dumps(schema))
        return _XGRMatcher(xgr.GrammarMatcher(cg), self.torch)


class _XGRMatcher:
    def __init__(self, m, torch):
        self.m = m
        self.torch = torch
        self.t = None

    def reset(self):
        self.m.reset()

    def fill(self, mask):
        if self.t is None:
            # a 1 x words int32 tensor sharing the numpy mask's memory
            self.t = self.torch.from_numpy(mask).view(1, -1)
        self.m.fill_next_token_bitmask(self.t)

    def accept(self, t):
        return self.m.accept_token(t)


class OutlinesCore:
    """outlines-core: schema -> regex (package default whitespace `[ ]?`) ->
    Index over the byte-level vocabulary -> Guide; the mask is
    Guide.write_mask_into."""

    def __init__(self, tok_json, n_vocab):
        import outlines_core

        self.oc = outlines_core
        self.version = importlib.metadata.version("outlines-core")
        d = json.loads(tok_json)
        byte_of = _bytes_to_unicode_inverse()
        added = {a["id"] for a in d.get("added_tokens", [])}
        vocab = {}
        for s, i in d["model"]["vocab"].items():
            if i in added:
                continue
            vocab.setdefault(bytes(byte_of[c] for c in s), []).append(i)
        self.vocab = outlines_core.Vocabulary(EOS, vocab)
        self.n_vocab = n_vocab
        self.options = "build_regex_from_schema defaults (whitespace [ ]?)"

    def compile(self, schema):
        oc = self.oc
        regex = oc.json_schema.build_regex_from_schema(json.dumps(schema))
        return _OCMatcher(oc.Guide(oc.Index(regex, self.vocab)))


class _OCMatcher:
    def __init__(self, g):
        self.g = g

    def reset(self):
        self.g.reset()

    def fill(self, mask):
        self.g.write_mask_into(mask.ctypes.data, mask.size, 4)

    def accept(self, t):
        try:
            self.g.advance(t, return_tokens=False)
        except Exception:  # outlines raises on a token it does not allow
            return False
        return True


def _bytes_to_unicode_inverse():
    """GPT-2 byte-level alias table, char -> byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


class CompileError(Exception):
    pass


def make_engine(name, tok_path, tok_json, n_vocab):
    if name == "llguidance":
        return LLGuidance(tok_json, n_vocab, exact=False)
    if name == "llguidance-exact":
        return LLGuidance(tok_json, n_vocab, exact=True)
    if name == "xgrammar":
        return XGrammar(tok_path, n_vocab)
    if name == "outlines-core":
        return OutlinesCore(tok_json, n_vocab)
    raise ValueError(name)


# ---- the child: one schema file -------------------------------------------


def run_schema(path, engine, hf_tok, out_fd):
    import numpy as np

    res = {"file": path}
    tbm = []
    tokens = valid_rejected = invalid_accepted = ntests = 0
    status = "passing"
    words = (engine.n_vocab + 31) // 32
    mask = np.zeros(words, dtype=np.int32)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except Exception as e:  # noqa: BLE001
        doc = None
        status = "compile_error"
        res["message"] = "cannot read: %s" % e
    if doc is not None:
        t0 = now_us()
        try:
            m = engine.compile(doc.get("schema"))
            m.fill(mask)
        except Exception as e:  # noqa: BLE001  any refusal at compile time
            m = None
            status = "compile_error"
            res["message"] = ("%s: %s" % (type(e).__name__, e))[:2000]
        if m is not None:
            res["ttfm_us"] = now_us() - t0
            for t in doc.get("tests", []):
                ntests += 1
                valid = t.get("valid") is True
                try:
                    text = json.dumps(t.get("data"), ensure_ascii=False, allow_nan=False)
                except (ValueError, TypeError):
                    continue  # unspellable data (NaN): not counted either way
                ids = hf_tok.encode(text, add_special_tokens=False).ids
                accepted = True
                m.reset()
                n = len(ids)
                for k in range(n + 1):
                    a = now_us()
                    m.fill(mask)
                    tbm.append(now_us() - a)
                    want = ids[k] if k < n else EOS
                    if not bit(mask, want):
                        accepted = False
                        break
                    if k < n and not m.accept(want):
                        accepted = False  # the mask allowed it: an engine inconsistency
                        res["inconsistent"] = True
                        break
                    tokens += 1
                if valid and not accepted:
                    valid_rejected += 1
                if not valid and accepted:
                    invalid_accepted += 1
            if invalid_accepted:
                status = "invalidation_error"
            elif valid_rejected:
                status = "validation_error"
    res.update(status=status, tests=ntests, tokens=tokens, valid_rejected=valid_rejected,
               invalid_accepted=invalid_accepted, tbm=tbm)
    data = (json.dumps(res, separators=(",", ":")) + "\n").encode()
    while data:
        k = os.write(out_fd, data)
        data = data[k:]


# ---- the parent -------------------------------------------------------------


def warm_up(engine):
    """One compile and mask of a trivial schema in the parent, so that lazy
    one-time set-up of an engine (tables built on first use) is inherited by
    every child instead of being charged to each schema's TTFM."""
    import numpy as np

    mask = np.zeros((engine.n_vocab + 31) // 32, dtype=np.int32)
    m = engine.compile({"type": "object", "properties": {"a": {"type": "string"}}})
    m.fill(mask)
    m.accept(4913)  # '{"'
    m.fill(mask)
    del m


def pct(v, p):
    if not v:
        return 0.0
    i = int(p * (len(v) - 1) + 0.5)
    return v[min(i, len(v) - 1)]


class Tally:
    def __init__(self, engine_name, out):
        self.engine = engine_name
        self.c = dict(schemas=0, passing=0, compile_error=0, validation_error=0,
                      invalidation_error=0, crash=0, timeout=0)
        self.tokens = 0
        self.ttfm = []
        self.tbm = []
        self.out = out

    def record(self, path, status, r):
        self.c["schemas"] += 1
        self.c[status if status in self.c else "timeout"] += 1
        if r is not None:
            self.tokens += r.get("tokens", 0)
            if "ttfm_us" in r:
                self.ttfm.append(r["ttfm_us"])
            self.tbm.extend(r.get("tbm", []))
        if self.out:
            line = dict(r) if r is not None else {}
            tb = line.pop("tbm", [])
            if tb:
                line["tbm_avg_us"] = sum(tb) / len(tb)
                line["tbm_max_us"] = max(tb)
            line["file"] = path
            line["status"] = status
            line["engine"] = self.engine
            self.out.write(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n")

    def summary(self, version, isolation):
        self.ttfm.sort()
        self.tbm.sort()
        f = lambda x: round(x, 1)  # noqa: E731  strux prints %.1f
        s = {"engine": self.engine, "version": version}
        if isolation != "fork":
            s["isolation"] = isolation
        s.update(self.c)
        s["tokens"] = self.tokens
        s["ttfm_us"] = {"p50": f(pct(self.ttfm, .5)), "p90": f(pct(self.ttfm, .9)),
                        "p99": f(pct(self.ttfm, .99)),
                        "max": f(self.ttfm[-1] if self.ttfm else 0)}
        s["tbm_us"] = {"avg": f(sum(self.tbm) / len(self.tbm) if self.tbm else 0),
                       "p50": f(pct(self.tbm, .5)), "p90": f(pct(self.tbm, .9)),
                       "p99": f(pct(self.tbm, .99)), "p999": f(pct(self.tbm, .999)),
                       "max": f(self.tbm[-1] if self.tbm else 0)}
        return json.dumps(s, separators=(",", ":"))


def run_one(path, engine, hf_tok, timeout_ms):
    """Forks a child for one schema; returns (status, result or None)."""
    rfd, wfd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        code = 0
        try:
            run_schema(path, engine, hf_tok, wfd)
        except BaseException:  # noqa: BLE001  reported as a crash by the parent
            import traceback

            traceback.print_exc()
            code = 1
        finally:
            os._exit(code)
    os.close(wfd)
    start = time.monotonic()
    buf = bytearray()
    timed_out = False
    while True:
        left = timeout_ms / 1000.0 - (time.monotonic() - start)
        if left <= 0:
            timed_out = True
            break
        r, _, _ = select.select([rfd], [], [], min(left, 0.05))
        if r:
            chunk = os.read(rfd, 1 << 16)
            if not chunk:
                break
            buf += chunk
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, st = os.waitpid(pid, 0)
    os.close(rfd)
    if timed_out:
        return "timeout", None
    if not (os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0) or not buf:
        return "crash", None
    try:
        r = json.loads(buf)
    except ValueError:
        return "crash", None
    return r.get("status") or "crash", r


class Worker:
    """--isolation worker: one long-lived forked process runs the schemas one
    after another, as a server would (no per-schema fork, so no copy-on-write
    and first-touch page faults in TTFM); it is killed on a timeout and replaced
    after a crash or a timeout."""

    def __init__(self, engine, hf_tok):
        self.engine = engine
        self.hf_tok = hf_tok
        self.pid = None

    def _start(self):
        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.close(req_w)
            os.close(res_r)
            code = 0
            try:
                with os.fdopen(req_r, "rb") as f:
                    for line in f:
                        run_schema(line.rstrip(b"\n").decode(), self.engine, self.hf_tok, res_w)
            except BaseException:  # noqa: BLE001  reported as a crash by the parent
                import traceback

                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        os.close(req_r)
        os.close(res_w)
        self.pid, self.req, self.res, self.buf = pid, req_w, res_r, bytearray()

    def _stop(self, kill):
        if kill:
            os.kill(self.pid, signal.SIGKILL)
        os.close(self.req)
        os.close(self.res)
        os.waitpid(self.pid, 0)
        self.pid = None

    def run(self, path, timeout_ms):
        if self.pid is None:
            self._start()
        try:
            os.write(self.req, path.encode() + b"\n")
        except BrokenPipeError:  # the worker died between two schemas
            self._stop(kill=False)
            return "crash", None
        start = time.monotonic()
        while b"\n" not in self.buf:
            left = timeout_ms / 1000.0 - (time.monotonic() - start)
            if left <= 0:
                self._stop(kill=True)
                return "timeout", None
            r, _, _ = select.select([self.res], [], [], min(left, 0.05))
            if r:
                chunk = os.read(self.res, 1 << 16)
                if not chunk:
                    self._stop(kill=False)
                    return "crash", None
                self.buf += chunk
        i = self.buf.index(b"\n")
        line, self.buf = bytes(self.buf[:i]), self.buf[i + 1:]
        try:
            r = json.loads(line)
        except ValueError:
            self._stop(kill=True)
            return "crash", None
        return r.get("status") or "crash", r

    def close(self):
        if self.pid is not None:
            self._stop(kill=False)


class ForkEach:
    """--isolation fork (strux's way): a fresh forked child per schema."""

    def __init__(self, engine, hf_tok):
        self.engine = engine
        self.hf_tok = hf_tok

    def run(self, path, timeout_ms):
        return run_one(path, self.engine, self.hf_tok, timeout_ms)

    def close(self):
        pass


def read_list(list_path, base):
    files = []
    with open(list_path, encoding="utf-8") as f:
        for line in f:
            name = line.strip()
            if not name or name.startswith("#"):
                continue
            if not os.path.isabs(name) and not os.path.exists(name):
                name = os.path.join(base, name)
            files.append(name)
    return files


def default_shared():
    return os.environ.get("STRUX_SHARED") or os.path.normpath(os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared"))


def out_path_for(out, engine, several):
    if not out or not several:
        return out
    root, ext = os.path.splitext(out)
    return "%s.%s%s" % (root, engine, ext)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", action="append",
                    help="one of %s; repeat or comma-separate; default all installed"
                    % ", ".join(ENGINES))
    ap.add_argument("--timeout-ms", type=int, default=60000,
                    help="per schema: reading, compile and all instances (default 60000)")
    ap.add_argument("--out", help="per-schema JSON lines; with several engines "
                    "RESULTS.ENGINE.jsonl per engine")
    ap.add_argument("--list", help="file of schema names, one a line, relative to "
                    "--base unless they exist as given")
    ap.add_argument("--base", help="folder for --list names (default $STRUX_SHARED/maskbench)")
    ap.add_argument("--tokenizer", help="tokenizer.json (default $STRUX_SHARED/qwen3-tokenizer)")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    ap.add_argument("--isolation", choices=("fork", "worker"), default="fork",
                    help="fork: a fresh child per schema, as strux (default); worker: one "
                    "long-lived child for all schemas, replaced after a crash or timeout")
    ap.add_argument("--no-warmup", action="store_true",
                    help="skip the parent's one compile + mask of a trivial schema before "
                    "forking (then each child pays the engine's first-use costs in its TTFM)")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()

    shared = default_shared()
    files = list(a.files)
    if a.list:
        files += read_list(a.list, a.base or os.path.join(shared, "maskbench"))
    if not files or a.timeout_ms < 1:
        ap.print_usage(sys.stderr)
        return 2
    names = []
    for e in a.engine or []:
        names += [x for x in e.split(",") if x]
    explicit = bool(names)
    names = names or list(ENGINES)
    for n in names:
        if n not in ENGINES:
            print("maskbench_peers: unknown engine %s" % n, file=sys.stderr)
            return 2

    from tokenizers import Tokenizer

    tok_path = a.tokenizer or os.path.join(shared, "qwen3-tokenizer", "tokenizer.json")
    with open(tok_path, encoding="utf-8") as f:
        tok_json = f.read()
    hf_tok = Tokenizer.from_str(tok_json)
    # Plain text, as strux's sx_tok_encode without SX_TOK_SPECIAL: "<|im_end|>"
    # inside a JSON string is those characters, not the control token.
    hf_tok.encode_special_tokens = True
    n_vocab = hf_tok.get_vocab_size(with_added_tokens=True)

    rc = 0
    for name in names:
        try:
            engine = make_engine(name, tok_path, tok_json, n_vocab)
        except ImportError as e:
            print("maskbench_peers: %s not installed (%s), skipped" % (name, e), file=sys.stderr)
            if explicit:
                rc = 1
            continue
        if not a.no_warmup:
            warm_up(engine)
        path = out_path_for(a.out, name, len(names) > 1)
        out = open(path, "w", encoding="utf-8") if path else None
        t = Tally(name, out)
        if not a.quiet:
            print("maskbench_peers: %s %s (%s) on %d schemas" % (name, engine.version,
                  engine.options, len(files)), file=sys.stderr)
        last = -1
        runner = (Worker if a.isolation == "worker" else ForkEach)(engine, hf_tok)
        for i, fpath in enumerate(files):
            status, r = runner.run(fpath, a.timeout_ms)
            if status == "crash" and r is not None:
                r = None  # a crash counts nothing, as in strux
            t.record(fpath, status, r)
            pc = 100 * (i + 1) // len(files)
            if not a.quiet and pc // 5 != last // 5:
                print("maskbench_peers: %s %d/%d schemas, %d passing, %d crash, %d timeout"
                      % (name, i + 1, len(files), t.c["passing"], t.c["crash"],
                         t.c["timeout"]), file=sys.stderr)
                last = pc
        runner.close()
        if out:
            out.close()
        print(t.summary(engine.version, a.isolation), flush=True)
        del engine
    return rc


if __name__ == "__main__":
    sys.exit(main())

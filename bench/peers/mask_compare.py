#!/usr/bin/env python3
"""strux's masks against llguidance's, proven token by token (issue 28 item 5).

    bench/peers/run_mask_compare.sh [--every N] [--offset K] [--pos-every K]
        [--instances N] [--sampled N] [--witnesses W] [--out FILE]
        [--repros FILE] [--list FILE] [FILE...]

For each schema file of the MaskBench dev set (every Nth from --offset of the
sorted list, or the files given) that both engines compile, prefixes are
taken from its valid instances and from documents sampled by each engine
(judged valid by the oracle first).  Each prefix text is tokenized with the
Qwen3 tokenizer as plain text; at every --pos-every-th token position (and
where either engine stops accepting the text) both engines' full next-token
masks are computed and compared over the tokenizer's ids (added tokens left
out; <|im_end|> stands for "the document may end here").

For a token allowed by one engine only, the engine that allows it writes a
witness: a whole document starting with prefix + token.
  * strux allows, llguidance refuses: strux's shortest completion and one
    random completion drawn from strux's own masks (bench_mask_peer).  An
    invalid one proves strux under-constrained (a soundness bug); a valid
    one proves llguidance over-constrained.
  * llguidance allows, strux refuses: up to two completions sampled under
    llguidance's own masks (biased toward closing the document).  A valid
    one proves strux over-constrained; an invalid one proves llguidance
    under-constrained.
  * "may end here" differences: the prefix itself is the witness.
Documents are judged by the project's oracle (tools/oracle_jsonschema.py, in
the repo's .venv, through oracle_judge.py); a verdict the oracle leaves open
(documented departures of Python's checker) and an engine that finds no
completion leave the token undecided.  At most W differing tokens per
position and direction are witnessed (a random sample); the rest are counted
as not tried.

Whitespace: both engines run compact (no whitespace; llguidance
whitespace_flexible=false with separators "," and ":"), and prefixes are the
instances written json.dumps(separators=(",", ":"), ensure_ascii=False), so
that layout policy (strux bounds whitespace runs, llguidance does not) does
not drown the comparison.  Properties in any order for both.

Output: one summary JSON line; --out gets one line per witnessed token;
--repros gets the proven strux errors (schema, prefix, token, completion,
the oracle's reason) as JSON lines.
"""
import argparse
import json
import os
import random
import select
import subprocess
import sys
import time

for _v in ("RAYON_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ[_v] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import numpy as np  # noqa: E402

EOS = 151645  # <|im_end|>
FIRST_ADDED = 151643  # ids from here on are added (special) tokens
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
COMPACT = {"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"}


class Timeout(Exception):
    pass


class LineProc:
    """A child speaking JSON lines; every answer within timeout seconds."""

    def __init__(self, argv, env=None):
        self.argv, self.env = argv, env
        self.p = None
        self.start()

    def start(self):
        self.p = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  env=self.env, bufsize=0)
        self.buf = b""

    def restart(self):
        self.p.kill()
        self.p.wait()
        self.start()

    def _fill(self, need, timeout):
        end = time.time() + timeout
        while True:
            if need(self.buf):
                return
            left = end - time.time()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                raise Timeout(self.argv[0])
            chunk = os.read(self.p.stdout.fileno(), 1 << 20)
            if not chunk:
                raise Timeout("%s exited" % self.argv[0])
            self.buf += chunk

    def ask(self, req, timeout):
        self.p.stdin.write((json.dumps(req, ensure_ascii=False) + "\n").encode())
        return self.line(timeout)

    def line(self, timeout):
        self._fill(lambda b: b"\n" in b, timeout)
        head, _, self.buf = self.buf.partition(b"\n")
        return json.loads(head)

    def raw(self, n, timeout):
        self._fill(lambda b: len(b) >= n, timeout)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


class Strux:
    def __init__(self, binary, prop_order, escapes="any"):
        self.proc = LineProc([binary])
        self.prop_order = prop_order
        self.escapes = escapes  # sx_gr_esc: "any" judges every spelling JSON allows
        self.schema = None

    def compile(self, schema):
        self.schema = schema
        r = self.proc.ask({"op": "compile", "schema": schema, "ws": "compact",
                           "prop_order": int(self.prop_order), "escapes": self.escapes}, 60)
        if r.get("ok"):
            self.words = r["mask_words"]
        return r

    def masks(self, ids, at):
        r = self.proc.ask({"op": "masks", "tokens": ids, "at": at}, 120)
        out = []
        for _ in range(r["n"]):
            raw = self.proc.raw(4 * self.words, 120)
            out.append(np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little"))
        return r["accepted"], out

    def complete(self, ids, seed=0, steps=0):
        r = self.proc.ask({"op": "complete", "tokens": ids, "seed": seed, "steps": steps}, 60)
        return bytes.fromhex(r["doc"]) if r.get("ok") else None


class Judge:
    def __init__(self, python):
        self.proc = LineProc([python, os.path.join(HERE, "oracle_judge.py")])
        self.cache = {}

    def __call__(self, schema_text, doc):
        key = (schema_text, doc)
        if key not in self.cache:
            try:
                r = self.proc.ask({"schema": schema_text, "doc": doc.hex()}, 30)
                self.cache[key] = (r["verdict"], r["why"])
            except Timeout:
                self.proc.restart()
                self.cache[key] = ("unknown", "oracle timed out")
            r = self.cache[key]
            if len(self.cache) > 4096:
                self.cache.clear()
            return r
        return self.cache[key]


class LLG:
    def __init__(self, tok_json, n_vocab):
        import llguidance

        self.L = llguidance
        self.tok = llguidance.LLTokenizer(tok_json, n_vocab=n_vocab, eos_token=EOS)
        self.n_vocab = self.tok.vocab_size
        self.words = (self.n_vocab + 31) // 32
        self.buf = np.zeros(self.words, dtype=np.int32)

    def compile(self, schema):
        g = self.L.LLMatcher.grammar_from_json_schema(schema, overrides=COMPACT)
        m = self.L.LLMatcher(self.tok, g, log_level=0)
        if m.is_error():
            raise ValueError(m.get_error())
        return m

    def mask(self, m):
        self.buf[:] = 0
        m.unsafe_compute_mask_ptr(self.buf.ctypes.data, self.buf.nbytes)
        return np.unpackbits(self.buf.view(np.uint8), bitorder="little").copy()

    def sample(self, m, rng, closers, max_steps=200):
        """Tokens drawn from m's own masks until end-of-turn, biased toward
        closing the document; None if it does not end within max_steps."""
        out = []
        for _ in range(max_steps):
            bits = self.mask(m)
            if m.is_error():  # its own limits: an empty mask, not an end
                return None
            if bits[EOS] and (rng.random() < 0.8 or not bits[:FIRST_ADDED].any()):
                return out
            allowed = np.flatnonzero(bits[:FIRST_ADDED])
            if not len(allowed):
                return None
            c = [t for t in closers if bits[t]]
            t = int(rng.choice(c)) if c and rng.random() < 0.6 else int(rng.choice(allowed))
            if not m.consume_token(t):
                return None
            out.append(t)
        return None


def default_shared():
    s = os.environ.get("STRUX_SHARED")
    return s if s else os.path.join(ROOT, "..", "shared")


class Tally(dict):
    def add(self, k, n=1):
        self[k] = self.get(k, 0) + n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--list", help="file names relative to $STRUX_SHARED/maskbench")
    ap.add_argument("--every", type=int, default=1, help="every Nth schema file (sorted)")
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--pos-every", type=int, default=1, help="compare every Kth token position")
    ap.add_argument("--instances", type=int, default=1, help="valid instances per schema")
    ap.add_argument("--sampled", type=int, default=1,
                    help="documents sampled by each engine per schema, used as prefixes")
    ap.add_argument("--witnesses", type=int, default=2,
                    help="differing tokens witnessed per position and direction")
    ap.add_argument("--schema-witnesses", type=int, default=16,
                    help="witnesses per schema and direction at most")
    ap.add_argument("--property-order", action="store_true",
                    help="strux keeps members in `properties` order (as llguidance does)")
    ap.add_argument("--escapes", choices=("any", "canonical"), default="any",
                    help="strux's spellings of characters (sx_gr_esc): any (default, as llguidance "
                         "and the oracle take them) or canonical (strux's generation default)")
    ap.add_argument("--max-tokens", type=int, default=400, help="positions per prefix at most")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip", type=int, default=0,
                    help="leave out the first N files of the shuffled selection")
    ap.add_argument("--out", help="one JSON line per witnessed token")
    ap.add_argument("--repros", help="proven strux errors, one JSON line each")
    ap.add_argument("--strux-bin", default=os.path.join(ROOT, "build", "bench_mask_peer"))
    ap.add_argument("--oracle-python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    ap.add_argument("--budget-s", type=float, default=0, help="stop after this long (0: none)")
    a = ap.parse_args()

    shared = default_shared()
    base = os.path.join(shared, "maskbench")
    if a.files:
        files = a.files
    elif a.list:
        with open(a.list) as f:
            files = [os.path.join(base, ln.strip()) for ln in f if ln.strip()]
    else:
        files = sorted(os.path.join(base, n) for n in os.listdir(base) if n.endswith(".json"))
    total_files = len(files)
    files = files[a.offset::a.every]
    # in a random order, so that a run cut short by --budget-s is still a
    # sample of every source split rather than the first ones alphabetically
    random.Random(a.seed).shuffle(files)
    files = files[a.skip:]  # to go on after a run that stopped

    from tokenizers import Tokenizer

    tok_path = os.path.join(shared, "qwen3-tokenizer", "tokenizer.json")
    with open(tok_path, encoding="utf-8") as f:
        tok_json = f.read()
    hf = Tokenizer.from_str(tok_json)
    hf.encode_special_tokens = True
    n_vocab = hf.get_vocab_size(with_added_tokens=True)
    llg = LLG(tok_json, n_vocab)
    strux = Strux(a.strux_bin, a.property_order, a.escapes)
    judge = Judge(a.oracle_python)
    rng = random.Random(a.seed)
    closers = [hf.token_to_id(s) for s in ('"', "}", "]", '"}', '"]', "}]", "]}", "0", "1",
                                           "null", "true", "a", "}}", '"}}', ",")]
    closers = [c for c in closers if c is not None]
    out = open(a.out, "w") if a.out else None
    rep = open(a.repros, "w") if a.repros else None
    T = Tally()
    t_start = time.time()
    n_cmp = FIRST_ADDED  # ids compared: the tokenizer's own, added tokens left out

    def record(kind, f, schema_text, prefix_ids, tok, doc, verdict, why, engine):
        rec = {"kind": kind, "file": os.path.basename(f), "engine": engine,
               "prefix": llg.tok.decode_bytes(prefix_ids).decode("utf-8", "replace"),
               "token": tok, "token_text": (llg.tok.decode_bytes([tok]).decode("utf-8", "replace")
                                            if tok is not None else "<end>"),
               "doc": doc.decode("utf-8", "replace") if doc is not None else None,
               "verdict": verdict, "why": why}
        if out:
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
        if rep and kind in ("strux_under", "strux_over"):
            rec["schema"] = json.loads(schema_text)
            rep.write(json.dumps(rec, ensure_ascii=False) + "\n")
            rep.flush()

    for fi, f in enumerate(files):
        if a.budget_s and time.time() - t_start > a.budget_s:
            break
        T.add("schemas_tried")
        with open(f, encoding="utf-8") as fh:
            doc = json.load(fh)
        schema = doc.get("schema")
        schema_text = json.dumps(schema)
        try:
            r = strux.compile(schema)
        except Timeout:
            strux.proc.restart()
            T.add("strux_compile_timeout")
            continue
        try:
            # compiled afresh for each prefix: copies of one matcher share
            # llguidance's lexer, whose expression budget runs out
            lm = llg.compile(schema)
        except Exception:  # noqa: BLE001
            lm = None
        if not r.get("ok") or lm is None:
            T.add("declined_strux" if not r.get("ok") else "declined_llguidance")
            if not r.get("ok") and lm is None:
                T.add("declined_both")
            continue
        T.add("schemas_compared")
        budget = {"s": a.schema_witnesses, "l": a.schema_witnesses}
        texts = []
        for t in doc.get("tests", []):
            if t.get("valid") is True and len([x for x in texts if x[0] == "instance"]) < a.instances:
                try:
                    texts.append(("instance", json.dumps(t["data"], ensure_ascii=False,
                                                         separators=(",", ":"), allow_nan=False)))
                except (ValueError, TypeError):
                    pass
        for k in range(a.sampled):
            try:
                d = strux.complete([], seed=rng.randrange(1, 1 << 30), steps=40)
            except Timeout:
                strux.proc.restart()
                strux.compile(schema)
                d = None
            if d is not None and judge(schema_text, d)[0] == "valid":
                texts.append(("strux_sample", d.decode("utf-8", "replace")))
            m2 = llg.compile(schema)
            s = llg.sample(m2, rng, closers)
            if s is not None:
                d = llg.tok.decode_bytes(s)
                if judge(schema_text, d)[0] == "valid":
                    texts.append(("llg_sample", d.decode("utf-8", "replace")))
        for origin, text in texts:
            ids = hf.encode(text, add_special_tokens=False).ids[: a.max_tokens]
            T.add("prefixes_" + origin)
            acc_l = llg.compile(schema).validate_tokens(ids)
            pos = sorted(set(range(0, len(ids) + 1, a.pos_every)) | {len(ids), acc_l})
            try:
                acc_s, smasks = strux.masks(ids, pos)
                if acc_s not in pos:
                    _, extra = strux.masks(ids, [acc_s])
                    pos = sorted(pos + [acc_s])
                    smasks.insert(pos.index(acc_s), extra[0])
            except Timeout:
                strux.proc.restart()
                strux.compile(schema)
                T.add("strux_mask_timeout")
                continue
            if acc_s < len(ids):
                T.add("refused_prefix_strux_" + origin)
            if acc_l < len(ids):
                T.add("refused_prefix_llg_" + origin)
            lim = min(acc_s, acc_l)
            lm = llg.compile(schema)
            done = 0
            for pi, p in enumerate(pos):
                if p > lim:
                    break
                while done < p and lm.consume_token(ids[done]):
                    done += 1
                lmask = llg.mask(lm) if done == p else None
                if lm.is_error():
                    # llguidance gave up on its own limits ("too many
                    # expressions constructed"): its mask is no mask
                    T.add("llg_errors")
                    T.add("llg_error: " + lm.get_error().split("\n")[0][:60])
                    break
                smask = smasks[pi]
                T.add("positions")
                T.add("tokens_compared", n_cmp)
                s_only = np.flatnonzero(smask[:n_cmp] & ~lmask[:n_cmp])
                l_only = np.flatnonzero(lmask[:n_cmp] & ~smask[:n_cmp])
                end_s, end_l = int(smask[EOS]), int(lmask[EOS])
                if len(s_only) or len(l_only) or end_s != end_l:
                    T.add("positions_differing")
                T.add("tokens_strux_only", len(s_only))
                T.add("tokens_llg_only", len(l_only))
                prefix = ids[:p]
                pbytes = llg.tok.decode_bytes(prefix)
                if end_s != end_l:
                    T.add("end_strux_only" if end_s else "end_llg_only")
                    v, why = judge(schema_text, pbytes)
                    if end_s:
                        kind = {"invalid": "strux_under", "valid": "llg_over"}.get(v, "undecided_s")
                    else:
                        kind = {"valid": "strux_over", "invalid": "llg_under"}.get(v, "undecided_l")
                    T.add("end_" + kind)
                    T.add(kind)
                    record(kind, f, schema_text, prefix, None, pbytes, v, why,
                           "strux" if end_s else "llguidance")
                # strux allows, llguidance refuses: strux's own completions
                k = max(0, min(a.witnesses, budget["s"]))
                pick = list(s_only) if len(s_only) <= k else rng.sample(list(s_only), k)
                budget["s"] -= len(pick)
                T.add("not_tried_strux_only", len(s_only) - len(pick))
                # llguidance allows only the canonical tokens of text it has
                # forced (a tokenization policy, not a grammar difference)
                ff = lm.compute_ff_bytes() if len(pick) else b""
                for t in pick:
                    t = int(t)
                    verdicts = []
                    for seed in (0, rng.randrange(1, 1 << 30)):
                        try:
                            d = strux.complete(prefix + [t], seed=seed, steps=30)
                        except Timeout:
                            strux.proc.restart()
                            strux.compile(schema)
                            d = None
                        if d is None:
                            continue
                        v, why = judge(schema_text, d)
                        verdicts.append((v, why, d))
                        if v == "invalid":
                            break
                    bad = [x for x in verdicts if x[0] == "invalid"]
                    good = [x for x in verdicts if x[0] == "valid"]
                    if bad:
                        T.add("strux_under")
                        record("strux_under", f, schema_text, prefix, t, bad[0][2], "invalid",
                               bad[0][1], "strux")
                    tb = llg.tok.decode_bytes([t])
                    forced = bool(ff) and (ff.startswith(tb) or tb.startswith(ff))
                    if good and forced:
                        T.add("llg_over_forced_tokenization")
                    elif good:
                        T.add("llg_over")
                        record("llg_over", f, schema_text, prefix, t, good[0][2], "valid", "",
                               "strux")
                    if not bad and not good:
                        T.add("undecided_strux_only")
                        record("undecided_s", f, schema_text, prefix, t,
                               verdicts[0][2] if verdicts else None,
                               verdicts[0][0] if verdicts else "no completion",
                               verdicts[0][1] if verdicts else "", "strux")
                # llguidance allows, strux refuses: llguidance's own samples
                k = max(0, min(a.witnesses, budget["l"]))
                pick = list(l_only) if len(l_only) <= k else rng.sample(list(l_only), k)
                budget["l"] -= len(pick)
                T.add("not_tried_llg_only", len(l_only) - len(pick))
                for t in pick:
                    t = int(t)
                    verdict = None
                    for _ in range(2):
                        m2 = lm.deep_copy()
                        if not m2.consume_token(t):
                            break
                        s = llg.sample(m2, rng, closers)
                        if s is None:
                            continue
                        d = llg.tok.decode_bytes(prefix + [t] + s)
                        v, why = judge(schema_text, d)
                        if v in ("valid", "invalid"):
                            verdict = (v, why, d)
                            break
                    if verdict is None:
                        T.add("undecided_llg_only")
                        record("undecided_l", f, schema_text, prefix, t, None, "no verdict", "",
                               "llguidance")
                    elif verdict[0] == "valid":
                        T.add("strux_over")
                        record("strux_over", f, schema_text, prefix, t, verdict[2], "valid", "",
                               "llguidance")
                    else:
                        T.add("llg_under")
                        record("llg_under", f, schema_text, prefix, t, verdict[2], "invalid",
                               verdict[1], "llguidance")
        if (fi + 1) % 10 == 0:
            print("mask_compare: %d/%d schemas, %s" % (fi + 1, len(files), json.dumps(dict(T))),
                  file=sys.stderr, flush=True)
    T["dev_set_files"] = total_files
    T["every"] = a.every
    T["offset"] = a.offset
    T["pos_every"] = a.pos_every
    T["property_order"] = int(a.property_order)
    T["files_selected"] = len(files) + a.skip
    T["skipped"] = a.skip
    T["seconds"] = round(time.time() - t_start, 1)
    print(json.dumps(dict(sorted(T.items()))))
    for fh in (out, rep):
        if fh:
            fh.close()
    return 1 if T.get("strux_under") or T.get("strux_over") else 0


if __name__ == "__main__":
    sys.exit(main())

"""Apache Spark integration: a DataFrame column of documents in, a column of extracted JSON out.

    from strux_client.spark import extract, classify
    out = extract(df, "text", schema, addrs=["tcp://10.0.0.1:7400", "tcp://10.0.0.2:7400"])
    out.select("id", "output.total", "error_code")
    labelled = classify(df, "text", ["spam", "ham"], addrs=addrs)   # label, scores

Both run through ``DataFrame.mapInArrow``: each Python worker process holds one
:class:`~strux_client.Client` dialled to all replicas, made on its first batch and
reused for every later task the worker runs (Spark reuses Python workers by
default), so a job opens one connection per worker and replica, not one per
partition or row.  Within a worker, ``concurrency`` requests are in flight at once.

A row whose request fails (an error answer of struxd, or no answer after the
client's retries) becomes an error row -- ``output`` null, ``error_code``,
``error_message`` and ``error_pointer`` set -- and the job goes on, unless
``raise_on_error=True``.  The client's retries (docs/PROTOCOL.md, "Replicas and
retries") send a request whose replica died to another one with the same bytes,
so a replica killed during the job neither loses nor doubles a row.

Needs ``pyspark`` and ``pyarrow`` (``pip install 'strux-client[spark]'``).
"""
from __future__ import annotations

import json
from typing import (Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple,
                    Union)

from ._workers import ERROR_COLUMNS, Unfit, answer_rows, request_maker

__all__ = ["extract", "classify", "spark_type", "ERROR_COLUMNS"]


Addrs = Union[str, Sequence[str]]


# ---- JSON Schema -> a Spark (and Arrow) column type ------------------------------------------

class _Col:
    """One node of the column type derived from a JSON Schema.

    ``kind`` is one of string, long, double, boolean, struct, array, map, or
    json (any value, kept as its JSON text: what a struct cannot express).
    """

    def __init__(self, kind: str, fields: Optional[List[Tuple[str, "_Col"]]] = None,
                 item: Optional["_Col"] = None) -> None:
        self.kind = kind
        self.fields = fields or []
        self.item = item

    def sig(self) -> str:
        """A text naming the column type, equal for equal types."""
        if self.kind == "struct":
            return "struct<" + ",".join(f"{json.dumps(n)}:{c.sig()}" for n, c in self.fields) + ">"
        if self.kind in ("array", "map"):
            return f"{self.kind}<{self.item.sig()}>"
        return self.kind

    def spark(self) -> Any:
        from pyspark.sql import types as T
        if self.kind == "struct":
            return T.StructType([T.StructField(n, c.spark(), True) for n, c in self.fields])
        if self.kind == "array":
            return T.ArrayType(self.item.spark(), True)
        if self.kind == "map":
            return T.MapType(T.StringType(), self.item.spark(), True)
        return {"string": T.StringType(), "json": T.StringType(), "long": T.LongType(),
                "double": T.DoubleType(), "boolean": T.BooleanType()}[self.kind]

    def arrow(self) -> Any:
        import pyarrow as pa
        if self.kind == "struct":
            return pa.struct([pa.field(n, c.arrow(), True) for n, c in self.fields])
        if self.kind == "array":
            return pa.list_(pa.field("element", self.item.arrow(), True))
        if self.kind == "map":
            return pa.map_(pa.string(), self.item.arrow())
        return {"string": pa.string(), "json": pa.string(), "long": pa.int64(),
                "double": pa.float64(), "boolean": pa.bool_()}[self.kind]

    def convert(self, v: Any, ptr: str) -> Any:
        """The output value ``v`` as this column holds it; raises Unfit when it cannot."""
        if v is None:
            return None
        k = self.kind
        if k == "json":
            return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
        if k == "struct" and isinstance(v, dict):
            return {n: c.convert(v.get(n), f"{ptr}/{_escape(n)}") for n, c in self.fields}
        if k == "array" and isinstance(v, list):
            return [self.item.convert(x, f"{ptr}/{i}") for i, x in enumerate(v)]
        if k == "map" and isinstance(v, dict):
            return [(n, self.item.convert(x, f"{ptr}/{_escape(n)}")) for n, x in v.items()]
        if k == "string" and isinstance(v, str):
            return v
        if k == "boolean" and isinstance(v, bool):
            return v
        if k == "long" and isinstance(v, int) and not isinstance(v, bool):
            if -2**63 <= v < 2**63:
                return v
            raise Unfit(ptr, f"integer {v} does not fit a 64-bit column")
        if k == "long" and isinstance(v, float) and v.is_integer() and abs(v) < 2**63:
            return int(v)  # 1.0 is an integer under JSON Schema
        if k == "double" and isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                return float(v)
            except OverflowError:
                raise Unfit(ptr, f"integer {v} does not fit a double column") from None
        raise Unfit(ptr, f"a {type(v).__name__} where the column holds {k}")


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


_SCALAR = {"string": "string", "integer": "long", "number": "double", "boolean": "boolean"}


def _same(cols: List[_Col]) -> Optional[_Col]:
    """The one column all of ``cols`` agree on (same Spark type), or None."""
    first = cols[0]
    if all(c.sig() == first.sig() for c in cols[1:]):
        return first
    return None


def _of_values(values: List[Any]) -> _Col:
    kinds = set()
    for v in values:
        if v is None:
            continue
        if isinstance(v, bool):
            kinds.add("boolean")
        elif isinstance(v, int):
            kinds.add("long")
        elif isinstance(v, float):
            kinds.add("double")
        elif isinstance(v, str):
            kinds.add("string")
        else:
            kinds.add("json")
    if kinds == {"long", "double"}:
        return _Col("double")
    return _Col(kinds.pop()) if len(kinds) == 1 else _Col("json")


def _derive(s: Any, root: Any, seen: Tuple[str, ...]) -> _Col:
    if not isinstance(s, Mapping):
        return _Col("json")  # true / false schemas: any value
    ref = s.get("$ref")
    if isinstance(ref, str):
        if not ref.startswith("#") or ref in seen:
            return _Col("json")  # remote, or recursive: a struct cannot nest itself
        target: Any = root
        for part in ref[1:].split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                return _Col("json")
        return _derive(target, root, seen + (ref,))
    if "const" in s:
        return _of_values([s["const"]])
    if isinstance(s.get("enum"), list) and s["enum"]:
        return _of_values(s["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(s.get(key), list) and s[key]:
            branches = [b for b in s[key] if not (isinstance(b, dict) and b.get("type") == "null")]
            if not branches:
                return _Col("json")
            return _same([_derive(b, root, seen) for b in branches]) or _Col("json")
    t = s.get("type")
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        t = rest[0] if len(rest) == 1 else ("number" if set(rest) == {"integer", "number"} else None)
    if t in _SCALAR:
        return _Col(_SCALAR[t])
    if t == "array" or (t is None and ("items" in s or "prefixItems" in s)):
        items = s.get("items")
        if isinstance(s.get("prefixItems"), list) or isinstance(items, list):
            return _Col("json")  # a tuple's members differ in type
        return _Col("array", item=_derive(items if items is not None else True, root, seen))
    if t == "object" or (t is None and "properties" in s):
        props = s.get("properties")
        if isinstance(props, dict) and props:
            return _Col("struct", fields=[(n, _derive(p, root, seen)) for n, p in props.items()])
        extra = s.get("additionalProperties")
        if isinstance(extra, dict) and not s.get("patternProperties"):
            return _Col("map", item=_derive(extra, root, seen))
        return _Col("json")
    return _Col("json")


def _column(schema: Union[Mapping[str, Any], bool]) -> _Col:
    return _derive(schema, schema, ())


def spark_type(schema: Union[Mapping[str, Any], bool]) -> Any:
    """The Spark type :func:`extract` gives the output of ``schema`` (a JSON Schema).

    An object with ``properties`` becomes a struct (members not listed there
    are dropped), an array a Spark array, an object with only
    ``additionalProperties`` a map; ``integer`` is bigint, ``number`` double;
    an ``enum``/``const`` takes its values' type; ``anyOf``/``oneOf`` whose
    branches agree take that type.  What a Spark type cannot express (tuples,
    mixed unions, recursion through ``$ref``, any value) is a string holding
    the value's JSON text.
    """
    return _column(schema).spark()


# ---- the mapInArrow function ----------------------------------------------------------------

def _map_fn(*, column: str, keep: List[str], base: Mapping[str, Any], addrs: Tuple[str, ...],
            client_options: Tuple[Tuple[str, Any], ...], concurrency: int, raise_on_error: bool,
            id_column: Optional[str], seed_column: Optional[str],
            outputs: List[Tuple[str, Any]],
            answer: Callable[[Mapping[str, Any]], List[Any]]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The function mapInArrow runs on each partition's record batches.

    ``answer(resp)`` turns one ok response into the values of ``outputs``
    (name, arrow type); it may raise Unfit.
    """
    make = request_maker(column, base, id_column, seed_column)
    needed = sorted({column, *keep, *(c for c in (id_column, seed_column) if c)})

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        for batch in batches:
            if batch.num_rows == 0:
                continue
            cols = {n: batch.column(batch.schema.get_field_index(n)).to_pylist() for n in needed}
            values, errors = answer_rows(
                cols[column], lambda i: make(cols, i), answer, len(outputs), addrs=addrs,
                client_options=client_options, concurrency=concurrency,
                raise_on_error=raise_on_error, column=column,
                row_id=lambda i: cols[id_column][i] if id_column else None)
            arrays = [batch.column(batch.schema.get_field_index(n)) for n in keep]
            arrays += [pa.array(v, type=t) for v, (_, t) in zip(values, outputs)]
            arrays += [pa.array(v, type=pa.string()) for v in errors]
            names = keep + [n for n, _ in outputs] + list(ERROR_COLUMNS)
            yield pa.RecordBatch.from_arrays(arrays, names=names)
    return run


def _apply(df: Any, column: str, base: Dict[str, Any], outputs: List[Tuple[str, Any, Any]],
           answer: Callable[[Mapping[str, Any]], List[Any]], *, addrs: Addrs,
           keep: Optional[Sequence[str]], id_column: Optional[str], seed_column: Optional[str],
           concurrency: int, raise_on_error: bool, client_options: Optional[Mapping[str, Any]]) -> Any:
    from pyspark.sql import types as T
    names = df.columns
    for c in (column, id_column, seed_column, *(keep or ())):
        if c is not None and c not in names:
            raise ValueError(f"no column {c!r} in the DataFrame ({', '.join(names)})")
    kept = list(names if keep is None else keep)
    added = [n for n, _, _ in outputs] + list(ERROR_COLUMNS)
    clash = sorted(set(kept) & set(added))
    if clash:
        raise ValueError(f"kept columns {clash} clash with the result's; pass keep= without them")
    if isinstance(addrs, str):
        addrs = [addrs]
    addr_tuple = tuple(a.strip() for a in addrs if a and a.strip())
    if not addr_tuple:
        raise ValueError("no replica address given")
    json.dumps(base)  # a request that cannot be sent fails here, on the driver
    fields = [df.schema[n] for n in kept]
    fields += [T.StructField(n, st, True) for n, st, _ in outputs]
    fields += [T.StructField(n, T.StringType(), True) for n in ERROR_COLUMNS]
    fn = _map_fn(column=column, keep=kept, base=base, addrs=addr_tuple,
                 client_options=tuple(sorted((client_options or {}).items())),
                 concurrency=max(1, int(concurrency)), raise_on_error=raise_on_error,
                 id_column=id_column, seed_column=seed_column,
                 outputs=[(n, at) for n, _, at in outputs], answer=answer)
    return df.mapInArrow(fn, T.StructType(fields))


def extract(df: Any, column: str, schema: Union[Mapping[str, Any], bool], *, addrs: Addrs,
            output: str = "struct", output_column: str = "output",
            options: Optional[Mapping[str, Any]] = None, keep: Optional[Sequence[str]] = None,
            id_column: Optional[str] = None, seed_column: Optional[str] = None,
            concurrency: int = 16, raise_on_error: bool = False,
            client_options: Optional[Mapping[str, Any]] = None) -> Any:
    """Extracts JSON valid under ``schema`` from every document of ``df[column]``.

    Args:
        df: a pyspark DataFrame.
        column: the string column holding the documents.
        schema: the JSON Schema every output is valid under.
        addrs: the struxd replicas (``tcp://HOST:PORT``, ``ipc:///PATH``); each
            Python worker dials all of them once.
        output: ``"struct"``: the output as the Spark type :func:`spark_type`
            derives from ``schema``; ``"string"``: its JSON text, exactly as
            generated (nothing dropped, any schema).
        output_column: the name of the output column.
        options: more request fields sent with every row (``max_tokens``,
            ``temperature``, ``system``, ... as in docs/PROTOCOL.md).
        keep: the input columns the result keeps (default: all).
        id_column: a column whose value is each request's ``id`` (server logs).
        seed_column: a column whose value is each request's ``seed``: with a
            temperature above 0 a rerun task (or job) then gets the same outputs.
        concurrency: requests in flight per Python worker.
        raise_on_error: raise :class:`~strux_client.StruxError` in the task
            (failing the job) instead of writing an error row.
        client_options: :class:`~strux_client.Client` options (``timeout``,
            ``retries``, ``overload_wait``, ``backoff``).

    Returns:
        A DataFrame with the kept columns, ``output_column`` (null on an error
        row) and ``error_code``, ``error_message``, ``error_pointer`` (null when
        answered).  An output value the struct type cannot hold (an integer
        beyond 64 bits) is an error row with code ``unrepresentable`` and the
        pointer to the value; ``output="string"`` never has those.
    """
    if output not in ("struct", "string"):
        raise ValueError("output must be 'struct' or 'string'")
    from pyspark.sql import types as T
    base = dict(options or {})
    base["schema"] = schema
    if output == "struct":
        col = _column(schema)
        outputs = [(output_column, col.spark(), col.arrow())]

        def answer(resp: Mapping[str, Any]) -> List[Any]:
            return [col.convert(resp.get("output"), "/output")]
    else:
        import pyarrow as pa
        outputs = [(output_column, T.StringType(), pa.string())]

        def answer(resp: Mapping[str, Any]) -> List[Any]:
            text = resp.get("text")
            return [text if isinstance(text, str) else
                    json.dumps(resp.get("output"), ensure_ascii=False, separators=(",", ":"))]
    return _apply(df, column, base, outputs, answer, addrs=addrs, keep=keep, id_column=id_column,
                  seed_column=seed_column, concurrency=concurrency, raise_on_error=raise_on_error,
                  client_options=client_options)


def classify(df: Any, column: str, labels: Sequence[str], *, addrs: Addrs,
             label_column: str = "label", scores_column: Optional[str] = "scores",
             options: Optional[Mapping[str, Any]] = None, keep: Optional[Sequence[str]] = None,
             id_column: Optional[str] = None, seed_column: Optional[str] = None,
             concurrency: int = 16, raise_on_error: bool = False,
             client_options: Optional[Mapping[str, Any]] = None) -> Any:
    """Gives every document of ``df[column]`` one of ``labels``, with the label scores.

    The request is strux's ``choices`` mode: ``label_column`` is the label
    (the most probable one at temperature 0, the default), ``scores_column``
    a ``map<string,double>`` of every label's probability under the model,
    summing to 1 (docs/PROTOCOL.md, "Label scores"); ``scores_column=None``
    leaves the scores out and asks struxd not to compute them.  The other
    arguments, and the error columns, are those of :func:`extract`.
    """
    import pyarrow as pa
    from pyspark.sql import types as T
    labels = [str(x) for x in labels]
    if not labels or len(set(labels)) != len(labels):
        raise ValueError("labels must be distinct, and at least one")
    base = dict(options or {})
    base["choices"] = labels
    if scores_column is None:
        base["scores"] = False
    outputs: List[Tuple[str, Any, Any]] = [(label_column, T.StringType(), pa.string())]
    if scores_column is not None:
        outputs.append((scores_column, T.MapType(T.StringType(), T.DoubleType(), True),
                        pa.map_(pa.string(), pa.float64())))

    def answer(resp: Mapping[str, Any]) -> List[Any]:
        label = resp.get("output")
        if not isinstance(label, str):
            raise Unfit("/output", "the answer's label is not a string")
        if scores_column is None:
            return [label]
        scores = resp.get("scores") or {}
        return [label, [(k, float(v)) for k, v in scores.items()]]
    return _apply(df, column, base, outputs, answer, addrs=addrs, keep=keep, id_column=id_column,
                  seed_column=seed_column, concurrency=concurrency, raise_on_error=raise_on_error,
                  client_options=client_options)

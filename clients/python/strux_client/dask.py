"""Dask integration: a Dask DataFrame column of documents in, extracted JSON out.

    import dask.dataframe as dd
    from strux_client.dask import extract, classify
    out = extract(ddf, "text", schema, addrs=["tcp://10.0.0.1:7400", "tcp://10.0.0.2:7400"])
    out.compute()   # ..., output, error_code, error_message, error_pointer

Both run through ``DataFrame.map_partitions``: each worker process (Dask's
``processes`` scheduler, or a ``distributed`` worker) holds one
:class:`~strux_client.Client` dialled to all replicas, made on its first
partition and reused; threads of one process share it.  Errors are rows, as
in :mod:`strux_client.spark`; the client's retries make a replica killed
during the computation lose and double no row.

Needs ``dask[dataframe]`` (``pip install 'strux-client[dask]'``).
"""
from __future__ import annotations

import json
from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple, Union

from ._workers import ERROR_COLUMNS, answer_rows, request_maker

__all__ = ["extract", "classify", "ERROR_COLUMNS"]

Addrs = Union[str, Sequence[str]]


def _text(resp: Mapping[str, Any]) -> List[Any]:
    text = resp.get("text")
    return [text if isinstance(text, str) else
            json.dumps(resp.get("output"), ensure_ascii=False, separators=(",", ":"))]


def _value(resp: Mapping[str, Any]) -> List[Any]:
    return [resp.get("output")]


def _partition(pdf: Any, *, column: str, keep: List[str], base: Mapping[str, Any],
               outputs: List[str], answer: Callable[[Mapping[str, Any]], List[Any]],
               addrs: Tuple[str, ...], client_options: Tuple[Tuple[str, Any], ...],
               concurrency: int, raise_on_error: bool, id_column: Optional[str],
               seed_column: Optional[str]) -> Any:
    """The function map_partitions runs on each pandas partition."""
    import pandas as pd
    needed = {column, *(c for c in (id_column, seed_column) if c)}
    cols = {n: pdf[n].astype(object).where(pdf[n].notna(), None).tolist() for n in needed}
    make = request_maker(column, base, id_column, seed_column)
    values, errors = answer_rows(
        cols[column], lambda i: make(cols, i), answer, len(outputs), addrs=addrs,
        client_options=client_options, concurrency=concurrency, raise_on_error=raise_on_error,
        column=column, row_id=lambda i: cols[id_column][i] if id_column else None)
    out = pdf[keep].copy()
    for name, v in zip(outputs, values):
        out[name] = pd.Series(v, index=pdf.index, dtype=object)
    for name, v in zip(ERROR_COLUMNS, errors):
        out[name] = pd.Series(v, index=pdf.index, dtype=object)
    return out


def _apply(ddf: Any, column: str, base: Mapping[str, Any], outputs: List[str],
           answer: Callable[[Mapping[str, Any]], List[Any]], *, addrs: Addrs,
           keep: Optional[Sequence[str]], id_column: Optional[str], seed_column: Optional[str],
           concurrency: int, raise_on_error: bool,
           client_options: Optional[Mapping[str, Any]]) -> Any:
    import pandas as pd
    names = list(ddf.columns)
    for c in (column, id_column, seed_column, *(keep or ())):
        if c is not None and c not in names:
            raise ValueError(f"no column {c!r} in the DataFrame ({', '.join(map(str, names))})")
    kept = list(names if keep is None else keep)
    clash = sorted(set(kept) & set(outputs + list(ERROR_COLUMNS)))
    if clash:
        raise ValueError(f"kept columns {clash} clash with the result's; pass keep= without them")
    if isinstance(addrs, str):
        addrs = [addrs]
    addr_tuple = tuple(a.strip() for a in addrs if a and a.strip())
    if not addr_tuple:
        raise ValueError("no replica address given")
    json.dumps(base)  # a request that cannot be sent fails here, not on a worker
    meta = ddf._meta[kept].copy()
    for n in outputs + list(ERROR_COLUMNS):
        meta[n] = pd.Series([], dtype=object)
    return ddf.map_partitions(
        _partition, column=column, keep=kept, base=dict(base), outputs=outputs, answer=answer,
        addrs=addr_tuple, client_options=tuple(sorted((client_options or {}).items())),
        concurrency=max(1, int(concurrency)), raise_on_error=raise_on_error,
        id_column=id_column, seed_column=seed_column, meta=meta)


def extract(ddf: Any, column: str, schema: Union[Mapping[str, Any], bool], *, addrs: Addrs,
            output: str = "json", output_column: str = "output",
            options: Optional[Mapping[str, Any]] = None, keep: Optional[Sequence[str]] = None,
            id_column: Optional[str] = None, seed_column: Optional[str] = None,
            concurrency: int = 16, raise_on_error: bool = False,
            client_options: Optional[Mapping[str, Any]] = None) -> Any:
    """Extracts JSON valid under ``schema`` from every document of ``ddf[column]``.

    ``output="json"``: ``output_column`` holds the JSON text exactly as
    generated; ``output="value"``: the parsed value (dicts, lists, ...).  The
    other arguments, and the result's error columns, are those of
    :func:`strux_client.spark.extract`.
    """
    if output not in ("json", "value"):
        raise ValueError("output must be 'json' or 'value'")
    base = dict(options or {})
    base["schema"] = schema
    return _apply(ddf, column, base, [output_column], _text if output == "json" else _value,
                  addrs=addrs, keep=keep, id_column=id_column, seed_column=seed_column,
                  concurrency=concurrency, raise_on_error=raise_on_error,
                  client_options=client_options)


def _label_and_scores(resp: Mapping[str, Any]) -> List[Any]:
    return [resp.get("output"), dict(resp.get("scores") or {})]


def classify(ddf: Any, column: str, labels: Sequence[str], *, addrs: Addrs,
             label_column: str = "label", scores_column: str = "scores",
             options: Optional[Mapping[str, Any]] = None, keep: Optional[Sequence[str]] = None,
             id_column: Optional[str] = None, seed_column: Optional[str] = None,
             concurrency: int = 16, raise_on_error: bool = False,
             client_options: Optional[Mapping[str, Any]] = None) -> Any:
    """Gives every document one of ``labels``: ``label_column`` the label,
    ``scores_column`` a dict of every label's probability (summing to 1).
    See :func:`strux_client.spark.classify`."""
    labels = [str(x) for x in labels]
    if not labels or len(set(labels)) != len(labels):
        raise ValueError("labels must be distinct, and at least one")
    base = dict(options or {})
    base["choices"] = labels
    return _apply(ddf, column, base, [label_column, scores_column], _label_and_scores,
                  addrs=addrs, keep=keep, id_column=id_column, seed_column=seed_column,
                  concurrency=concurrency, raise_on_error=raise_on_error,
                  client_options=client_options)

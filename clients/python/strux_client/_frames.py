"""Batch answers as columns: plain lists, pandas or Arrow (when installed)."""
from __future__ import annotations

import json
from typing import Any, Dict, List, Sequence

COLUMNS = ("id", "ok", "output", "error_code", "error_message", "error_pointer",
           "completion_tokens", "total_ms")


def to_columns(responses: Sequence[Dict[str, Any]]) -> Dict[str, List[Any]]:
    """One list per field, row i from response i: ``id``, ``ok``, ``output`` (the
    parsed value), ``error_code``/``error_message``/``error_pointer`` (None when
    ok), ``completion_tokens`` and ``total_ms`` (None when absent)."""
    cols: Dict[str, List[Any]] = {c: [] for c in COLUMNS}
    for r in responses:
        err = r.get("error") or {}
        cols["id"].append(r.get("id"))
        cols["ok"].append(bool(r.get("ok")))
        cols["output"].append(r.get("output"))
        cols["error_code"].append(err.get("code"))
        cols["error_message"].append(err.get("message"))
        cols["error_pointer"].append(err.get("pointer"))
        cols["completion_tokens"].append((r.get("usage") or {}).get("completion_tokens"))
        cols["total_ms"].append((r.get("timing") or {}).get("total_ms"))
    return cols


def to_pandas(responses: Sequence[Dict[str, Any]]) -> Any:
    """A pandas DataFrame of :func:`to_columns` (needs pandas)."""
    import pandas as pd
    return pd.DataFrame(to_columns(responses), columns=list(COLUMNS))


def to_arrow(responses: Sequence[Dict[str, Any]]) -> Any:
    """A pyarrow Table of :func:`to_columns`; ``output`` is JSON text, since
    outputs of different schemas share no Arrow type (needs pyarrow)."""
    import pyarrow as pa
    cols = to_columns(responses)
    cols["output"] = [None if o is None else json.dumps(o, ensure_ascii=False)
                      for o in cols["output"]]
    return pa.table(cols)

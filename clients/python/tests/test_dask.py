"""strux_client.dask against real struxd replicas: two worker processes, a replica restarted mid-compute."""
import json
import os
import threading
import time

import jsonschema
import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")

from strux_client.dask import classify, extract  # noqa: E402

LIGHT = bool(os.environ.get("STRUX_LIGHT"))
ITEM = {"type": "object", "additionalProperties": False, "required": ["name", "n"],
        "properties": {"name": {"type": "string", "maxLength": 10},
                       "n": {"type": "integer", "minimum": 0, "maximum": 99999}}}


def frame(n, parts):
    pdf = pd.DataFrame({"id": range(n), "doc": [f"name x{i}, n {i}" for i in range(n)],
                        "seed": [i + 1 for i in range(n)]})
    return dd.from_pandas(pdf, npartitions=parts)


def served(replicas, i):
    with open(os.path.join(replicas.root, f"r{i}.log")) as f:
        return sum("status=ok" in line for line in f)


def test_extract_through_a_restart(replicas):
    n = 60 if LIGHT else 400
    out = extract(frame(n, 8), "doc", ITEM, addrs=replicas.addrs, keep=["id"], id_column="id",
                  seed_column="seed", options={"temperature": 1.0, "max_tokens": 32},
                  client_options={"timeout": 30, "retries": 5})
    assert list(out.columns) == ["id", "output", "error_code", "error_message", "error_pointer"]
    done = {}
    job = threading.Thread(target=lambda: done.update(
        df=out.compute(scheduler="processes", num_workers=2)))
    before = served(replicas, 1)
    job.start()
    deadline = time.monotonic() + 120
    while served(replicas, 1) < before + n // 8 and job.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job.is_alive(), "the compute ended before the restart"
    replicas.restart(1)
    job.join(timeout=300)
    df = done["df"]
    assert sorted(df["id"].tolist()) == list(range(n)), "every row once"
    assert df["error_code"].isna().all(), df[df["error_code"].notna()].head()
    for text in df["output"]:
        jsonschema.validate(json.loads(text), ITEM)
    assert served(replicas, 1) > before + n // 8, "the restarted replica served again"


def test_values_labels_and_error_rows(replicas):
    ddf = frame(40, 4)
    got = extract(ddf, "doc", ITEM, addrs=replicas.addrs, output="value",
                  options={"max_tokens": 32}).compute(scheduler="threads")
    assert got["id"].tolist() == list(range(40)) and got["doc"].iloc[3] == "name x3, n 3"
    for v in got["output"]:
        jsonschema.validate(v, ITEM)
    labels = ["red", "green", "blue"]
    lab = classify(ddf, "doc", labels, addrs=replicas.addrs, keep=["id"]).compute()
    for label, scores in zip(lab["label"], lab["scores"]):
        assert label in labels and sorted(scores) == sorted(labels)
        assert abs(sum(scores.values()) - 1) < 1e-6
    bad = extract(ddf, "doc", {"type": "string", "pattern": "(a)\\1"}, addrs=replicas.addrs,
                  keep=["id"]).compute()
    assert len(bad) == 40 and bad["output"].isna().all()
    assert set(bad["error_code"]) == {"schema_unsupported"}
    assert set(bad["error_pointer"]) == {"/schema/pattern"}
    # one partition at a time: no other partition's requests still running after the raise
    with pytest.raises(Exception) as e:
        extract(ddf, "doc", {"type": "string", "pattern": "(a)\\1"}, addrs=replicas.addrs,
                raise_on_error=True).compute(scheduler="sync")
    assert getattr(e.value, "code", None) == "schema_unsupported"

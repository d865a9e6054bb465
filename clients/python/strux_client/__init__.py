"""strux_client: a Python client for struxd replicas (docs/PROTOCOL.md).

    from strux_client import Client
    with Client(["tcp://10.0.0.1:7400", "tcp://10.0.0.2:7400"]) as c:
        out = c.result({"schema": schema, "document": text})       # output, or StruxError
        answers = c.batch(requests, concurrency=32, progress=True)  # dicts, input order

Retries never double an answer: see the README and docs/PROTOCOL.md.
DataFrame jobs: strux_client.spark (Apache Spark) and strux_client.dask (Dask), imported on their own.
"""
from ._client import AsyncClient, Client, Stats, transport_failure
from ._errors import StruxError, TransportError
from ._frames import to_arrow, to_columns, to_pandas

__version__ = "0.1.0"
__all__ = ["AsyncClient", "Client", "Stats", "StruxError", "TransportError", "to_arrow",
           "to_columns", "to_pandas", "transport_failure"]

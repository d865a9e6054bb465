"""Errors as exceptions that carry strux's error code and JSON Pointer."""
from __future__ import annotations

from typing import Any, Dict, Optional


class StruxError(Exception):
    """An error answer of struxd (docs/PROTOCOL.md, "Errors").

    Attributes:
        code: the strux error code (``bad_request``, ``schema_unsupported``, ...).
        pointer: JSON Pointer into the request naming what is to blame, or None.
        request_id: the request's ``id``.
        response: the whole response dict, when there was one.
    """

    def __init__(self, message: str, *, code: str = "internal", pointer: Optional[str] = None,
                 request_id: Any = None, response: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(f"{code}: {message}" + (f" at {pointer}" if pointer else ""))
        self.code = code
        self.message = message
        self.pointer = pointer
        self.request_id = request_id
        self.response = response

    @classmethod
    def from_response(cls, resp: Dict[str, Any]) -> "StruxError":
        e = resp.get("error") or {}
        return cls(e.get("message", ""), code=e.get("code", "internal"), pointer=e.get("pointer"),
                   request_id=resp.get("id"), response=resp)


class TransportError(StruxError):
    """No answer came: every replica tried lost the connection or timed out."""

    def __init__(self, message: str, *, request_id: Any = None) -> None:
        super().__init__(message, code="transport", request_id=request_id)

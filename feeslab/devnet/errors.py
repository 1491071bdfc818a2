"""Errors the devnet answers with, in the shapes real nodes use.

``RpcError`` is raised by a JSON-RPC method and becomes the ``error`` member of
that call's response (EIP-1474 codes; geth's wording where geth has one).
"""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000  # geth's generic "invalid input" / server error
EXECUTION_REVERTED = 3


class RpcError(Exception):
    """A JSON-RPC error: ``code``, ``message`` and optional ``data``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

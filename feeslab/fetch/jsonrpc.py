"""JSON-RPC 2.0 building and reading, with no I/O: what every transport shares.

A transport takes a list of ``RpcCall`` and returns one ``RpcResult`` per call, in call order.
Here are the pieces between: the request body for calls and their ids (`build_body`), the
batches a long list is cut into (`chunks`), the matching of answer items to calls by id
(`read_items`) and the service's hints in an error answer (`backoff_seconds`,
`service_says`). HTTP (``transport.py``) and WebSocket (``ws.py``) send and wait; they read
and build only through this module.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from feeslab.errors import RpcError
from feeslab.protocol.costs import DEFAULT_METHOD_COST, METHOD_COSTS, method_cost

__all__ = [
    "LARGE_ANSWERS",
    "MOST_LARGE_ANSWERS",
    "RATE_LIMIT_CODE",
    "Outcome",
    "RpcCall",
    "RpcResult",
    "backoff_seconds",
    "build_body",
    "chunks",
    "json_or_none",
    "read_items",
    "service_says",
]

RATE_LIMIT_CODE = -32005  # EIP-1474 "limit exceeded", the older deployments' 429 body
MOST_A_CALL_COSTS = max(DEFAULT_METHOD_COST, *METHOD_COSTS.values())
"""[credits] The dearest call: a batch of n calls costs at most n times this."""
LARGE_ANSWERS = frozenset({
    "eth_feeHistory", "eth_getBlockByHash", "eth_getBlockByNumber", "eth_getBlockReceipts",
    "eth_getLogs", "eth_getUncleByBlockHashAndIndex", "eth_getUncleByBlockNumberAndIndex",
})
"""Methods whose answers are block-sized (a header is 0.5-11 KB, a fee history ~40 KB)."""
MOST_LARGE_ANSWERS = 500
"""Calls of :data:`LARGE_ANSWERS` a batch holds at most, whatever its size: an answer stays a
few MB, while small answers (counts, storage words) go up to geth's 1,000 a batch."""


@dataclass(frozen=True)
class RpcCall:
    """One JSON-RPC call: ``method`` and positional ``params``."""

    method: str
    params: list[Any] = field(default_factory=list)


class RpcResult:
    """The answer to one ``RpcCall``: either ``result`` or ``error`` (an ``RpcError``, not raised).

    Attributes
    ----------
    call : RpcCall
    result : Any
        The ``result`` member (may legitimately be None, e.g. an unknown block).
    error : RpcError or None
    """

    __slots__ = ("call", "error", "result")

    def __init__(self, call: RpcCall, result: Any = None, error: RpcError | None = None) -> None:
        self.call = call
        self.result = result
        self.error = error

    @property
    def ok(self) -> bool:
        return self.error is None

    def unwrap(self) -> Any:
        """The result, or raise the error."""
        if self.error is not None:
            raise self.error
        return self.result

    def __repr__(self) -> str:
        if self.error is not None:
            return f"RpcResult({self.call.method}, error={self.error!r})"
        return f"RpcResult({self.call.method}, result={_short(self.result)})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RpcResult):
            return NotImplemented
        return (self.call, self.result, self.error) == (other.call, other.result, other.error)

    __hash__ = None  # type: ignore[assignment]


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def build_body(calls: Sequence[RpcCall], ids: Sequence[int]) -> bytes:
    """The request body for ``calls`` with ``ids``: one object for one call, else a batch.

    Params go as given: a list, or an object (the wallet API's named params).
    """
    items = [
        {"jsonrpc": "2.0", "id": i, "method": c.method, "params": c.params}
        for c, i in zip(calls, ids, strict=True)
    ]
    payload: object = items[0] if len(items) == 1 else items
    try:
        return orjson.dumps(payload)
    except TypeError:  # orjson refuses ints past 64 bits (a wallet's values): the stdlib takes them
        return json.dumps(payload, separators=(",", ":")).encode()


def backoff_seconds(body: object) -> float | None:
    """``error.data.backoff_seconds`` from an older deployment's -32005 body (or item) [s]."""
    error = body.get("error") if isinstance(body, Mapping) else None
    data = error.get("data") if isinstance(error, Mapping) else None
    value = data.get("backoff_seconds") if isinstance(data, Mapping) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


_LONG_DIGITS = re.compile(rb"[0-9]{19,}")


def json_or_none(content: bytes) -> object:
    """``content`` decoded as JSON, or None when it is not JSON."""
    # orjson is 2-3x the stdlib's speed on 500-header answers, but reads an integer past 64
    # bits as a float: a run of 19+ digits (rare: results are hex strings) takes the stdlib
    if _LONG_DIGITS.search(content) is None:
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError:
            pass  # NaN and the like, which the stdlib reads
    try:
        return json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None


def service_says(body: object, content: bytes | bytearray) -> str:
    """The service's explanation in an error answer, for the exception message."""
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            parts = [str(error[k]) for k in ("message", "details") if error.get(k)]
            if parts:
                return ": ".join(parts)
        elif isinstance(error, str):
            return error
    return content[:200].decode("utf-8", "replace").strip() or "(empty body)"


@dataclass
class Outcome:
    """What one answer settled: answers by id, and the ids to send again."""

    answered: dict[int, RpcResult]
    retry_ids: list[int]
    rate_limited: int = 0  # how many of retry_ids came back -32005
    wait: float | None = None  # the service's hint for the retried ids [s]


def read_items(
    items: Iterable[Any], calls: Mapping[int, RpcCall], *, secrets: Sequence[str] = ()
) -> Outcome:
    """Match JSON-RPC answer items to the calls ``{id: call}``.

    Items with an id we did not send, and duplicates, are ignored: their calls count as
    missing and go again. An item answering -32005 (limit exceeded) goes again too.
    """
    answered: dict[int, RpcResult] = {}
    retry_ids: list[int] = []
    hints: list[float] = []
    if isinstance(items, list) and len(items) == len(calls):
        # the usual answer: every call answered once with a result; checked, then taken whole
        try:
            answered = {item["id"]: RpcResult(calls[item["id"]], item["result"]) for item in items}
        except (KeyError, TypeError):
            answered = {}
        else:
            if len(answered) == len(calls) and all("error" not in item for item in items):
                return Outcome(answered, [])
            answered = {}
    for item in items:
        if not isinstance(item, Mapping):
            continue
        rid = item.get("id")
        if not isinstance(rid, int):  # a string, a list or an object as id: not one we sent
            continue
        if rid not in calls or rid in answered or rid in retry_ids:
            continue
        call = calls[rid]
        error = item.get("error")
        if error is not None:
            if isinstance(error, Mapping) and error.get("code") == RATE_LIMIT_CODE:
                retry_ids.append(rid)
                hint = backoff_seconds(item)
                if hint is not None:
                    hints.append(hint)
                continue
            answered[rid] = RpcResult(call, error=RpcError.from_object(error, secrets=secrets))
        elif "result" in item:
            answered[rid] = RpcResult(call, result=item["result"])
    missing = [rid for rid in calls if rid not in answered and rid not in retry_ids]
    return Outcome(answered, retry_ids + missing, len(retry_ids), max(hints) if hints else None)


def chunks(
    items: Sequence[RpcCall], size: int, max_cost: float | None = None
) -> list[Sequence[RpcCall]]:
    """``items`` in batches of at most ``size`` calls, of them at most
    :data:`MOST_LARGE_ANSWERS` of :data:`LARGE_ANSWERS`, and, when given, at most
    ``max_cost`` credits each (costed per call from ``feeslab.protocol.costs``; a batch holds at
    least one call)."""
    mixed = False
    if size > MOST_LARGE_ANSWERS:
        large = {call.method in LARGE_ANSWERS for call in items}
        if large == {True}:
            size = MOST_LARGE_ANSWERS
        mixed = len(large) == 2
    if not mixed and (max_cost is None or max_cost >= size * MOST_A_CALL_COSTS):
        return [items[i : i + size] for i in range(0, len(items), size)]
    most = math.inf if max_cost is None else max_cost
    out: list[Sequence[RpcCall]] = []
    begin, credits, big = 0, 0, 0
    costs: dict[str, int] = {}
    for i, call in enumerate(items):
        cost = costs.get(call.method)
        if cost is None:
            cost = costs[call.method] = method_cost(call.method)
        heavy = call.method in LARGE_ANSWERS
        if i > begin and (i - begin >= size or credits + cost > most
                          or (heavy and big >= MOST_LARGE_ANSWERS)):
            out.append(items[begin:i])
            begin, credits, big = i, 0, 0
        credits += cost
        big += heavy
    if begin < len(items):
        out.append(items[begin:])
    return out

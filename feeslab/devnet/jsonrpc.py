"""The JSON-RPC 2.0 envelope: bytes in, bytes out, with geth's answers to bad input.

``parse_request`` turns a body into a ``Request`` (one call or a batch; every item is checked
here, not in the method code); ``request_costs`` prices it before anything runs (calls that
will fail are charged too, as on the real service); ``execute`` runs each call through a
dispatcher and encodes the answer.

What a bad body gets (geth's wording):

- not JSON, not UTF-8, too deeply nested, NaN or an absurd number: one ``-32700 parse error``
  with ``id: null``;
- ``[]``: one ``-32600 empty batch``; more than 1000 items: one ``-32600 batch too large``;
- an item that is not an object, lacks ``"jsonrpc": "2.0"`` or a method name, or has an id that
  is not a string, a number or null: ``-32600 invalid request`` in that item's place;
- params that are neither an array nor an object: ``-32602 non-array args``.

A call without an ``id`` is a notification: it runs, is charged, and gets no answer. Any exception
a method raises other than ``RpcError`` becomes ``-32603 internal error`` (logged here, never
sent). Every answer is encoded ASCII-only, so no input text can make encoding fail.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from feeslab.devnet import rpc
from feeslab.devnet._encoded import Encoded, encode
from feeslab.devnet.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RpcError,
)
from feeslab.protocol.costs import REJECTED_REQUEST_COST, method_cost

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 5 * 1024 * 1024
"""geth's default HTTP body limit; a larger body gets HTTP 413."""

MAX_BATCH_ITEMS = 1000
"""geth's default batch item limit."""

REJECTED = "invalid_request"
"""Ledger name under which refused envelopes and items are charged."""

SUBSCRIPTION_METHODS = frozenset({"eth_subscribe", "eth_unsubscribe"})


@dataclass
class CallContext:
    """What a method needs besides its params: the chain it was sent to, all chains, transport."""

    chain: Any
    chains: Any
    transport: str  # "http" | "ws"


Dispatcher = Callable[[CallContext, str, Any], Any]


class Call(NamedTuple):  # a tuple, not a frozen dataclass: made 1,000 times a batch
    """One item of a request.

    ``error`` is set when the item itself is invalid; such an item is answered with it and never
    dispatched. ``notification`` is True for a valid call without an ``id``.
    """

    id: Any = None
    method: str | None = None
    params: Any = None
    notification: bool = False
    error: RpcError | None = None


@dataclass(frozen=True)
class Request:
    """A parsed body: its calls, whether it was a batch, or one error answering the whole body."""

    calls: tuple[Call, ...] = ()
    batch: bool = False
    error: RpcError | None = None

    @property
    def first_id(self) -> Any:
        """The id to put in a 402/429 body: the single call's id, else null."""
        if not self.batch and self.calls and self.calls[0].error is None:
            return self.calls[0].id
        return None


# -- parsing ----------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


MAX_DEPTH = 1000  # nesting beyond this is refused before parsing
_STRINGS = {
    bytes: re.compile(rb'"(?:[^"\\]|\\.)*"'),
    str: re.compile(r'"(?:[^"\\]|\\.)*"'),
}
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_DEPTH_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_STEPS = np.zeros(256, np.int32)
_STEPS[[ord("["), ord("{")]], _STEPS[[ord("]"), ord("}")]] = 1, -1


def _deepest(raw: bytes) -> int:
    """The deepest nesting of a body without backslashes: every quote opens or closes a
    string there, so a bracket is inside one where an odd number of quotes precede it."""
    codes = np.frombuffer(raw, np.uint8)
    outside = (np.cumsum(codes == ord('"'), dtype=np.int64) & 1) == 0
    return int(np.cumsum(_STEPS[codes] * outside).max(initial=0))


def _too_deep(body: bytes | str) -> bool:
    """Whether arrays/objects nest deeper than ``MAX_DEPTH`` (strings skipped)."""
    opens = body.count(b"[" if isinstance(body, bytes) else "[")
    opens += body.count(b"{" if isinstance(body, bytes) else "{")
    if opens <= MAX_DEPTH:
        return False
    raw = body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass")
    if b"\\" not in raw:  # a batch of 500 calls has 1,000 brackets: no regex, no loop here
        return _deepest(raw) > MAX_DEPTH
    bare = _STRINGS[type(body)].sub(b"" if isinstance(body, bytes) else "", body)
    if isinstance(bare, str):
        bare = bare.encode("utf-8", "surrogatepass")
    brackets = bare.translate(None, _NOT_BRACKETS)  # C speed: only the brackets remain
    depth = 0
    step = _DEPTH_STEP
    for byte in brackets:
        depth += step[byte]
        if depth > MAX_DEPTH:
            return True
    return False


def _decode(body: bytes | str) -> Any:
    # The C decoder recurses on the C stack, and libraries such as web3 raise the
    # recursion limit far above what that stack holds: deep nesting must be
    # refused before json.loads, or it crashes the process.
    if _too_deep(body):
        raise ValueError("nested too deeply")
    # json.loads on bytes detects UTF-8/16/32 and raises on invalid UTF-8
    return json.loads(body, parse_constant=_reject_constant)


def _valid_id(value: Any) -> bool:
    if value is None or isinstance(value, str):
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _parse_call(item: Any) -> Call:
    if not isinstance(item, dict):
        return Call(error=RpcError(INVALID_REQUEST, "invalid request"))
    has_id = "id" in item
    call_id = item.get("id")
    if has_id and not _valid_id(call_id):
        return Call(error=RpcError(INVALID_REQUEST, "invalid request"))
    method = item.get("method")
    if item.get("jsonrpc") != "2.0" or not isinstance(method, str) or not method:
        return Call(id=call_id, error=RpcError(INVALID_REQUEST, "invalid request"))
    params = item.get("params")
    if params is None:
        params = []
    elif not isinstance(params, list | dict):
        return Call(id=call_id, method=method, error=RpcError(INVALID_PARAMS, "non-array args"))
    return Call(id=call_id, method=method, params=params, notification=not has_id)


def parse_request(body: bytes | str) -> Request:
    """Parse a JSON-RPC body into a single call or a batch.

    Never raises: any problem is carried in the result.
    """
    try:
        data = _decode(body)
    except (ValueError, RecursionError, TypeError):
        # ValueError covers bad JSON, invalid UTF-8 and int-too-long; RecursionError deep nesting
        return Request(error=RpcError(PARSE_ERROR, "parse error"))
    if isinstance(data, list):
        if not data:
            return Request(batch=True, error=RpcError(INVALID_REQUEST, "empty batch"))
        if len(data) > MAX_BATCH_ITEMS:
            return Request(batch=True, error=RpcError(INVALID_REQUEST, "batch too large"))
        return Request(calls=tuple(_parse_call(item) for item in data), batch=True)
    return Request(calls=(_parse_call(data),))


def request_costs(request: Request) -> list[tuple[str, int]]:
    """``(name, credits)`` for each item of ``request``, priced before it runs.

    Valid calls cost their method's price even if they will fail; invalid items and a refused
    body cost ``REJECTED_REQUEST_COST`` each.
    """
    if request.error is not None:
        return [(REJECTED, REJECTED_REQUEST_COST)]
    costs = []
    for call in request.calls:
        if call.method is None:
            costs.append((REJECTED, REJECTED_REQUEST_COST))
        else:
            costs.append((call.method, method_cost(call.method)))
    return costs


# -- answering --------------------------------------------------------------------------------


def error_object(call_id: Any, error: RpcError) -> dict[str, Any]:
    """A JSON-RPC error response."""
    return {"jsonrpc": "2.0", "id": call_id, "error": error.to_json()}


def _encode_response(call: Call, response: dict[str, Any]) -> bytes:
    try:
        return encode(response)
    except (TypeError, ValueError, RecursionError):
        log.exception("result of %r is not JSON-encodable", call.method)
        return encode(error_object(call.id, RpcError(INTERNAL_ERROR, "internal error")))


def run_call(call: Call, ctx: CallContext, dispatch: Dispatcher) -> bytes | None:
    """Run one parsed call; return its encoded response, or None for a notification."""
    if call.error is not None:
        return encode(error_object(call.id, call.error))
    try:
        if ctx.transport != "ws" and call.method in SUBSCRIPTION_METHODS:
            # geth: subscriptions need a connection that can push
            raise RpcError(METHOD_NOT_FOUND, "notifications not supported")
        result = dispatch(ctx, call.method, call.params)
        response = {"jsonrpc": "2.0", "id": call.id, "result": result}
    except RpcError as exc:
        response = error_object(call.id, exc)
    except Exception:
        log.exception("internal error in %r", call.method)
        response = error_object(call.id, RpcError(INTERNAL_ERROR, "internal error"))
    if call.notification:
        return None
    if isinstance(response.get("result"), Encoded):  # already JSON: spliced in as is
        call_id = str(call.id).encode() if type(call.id) is int else encode(call.id)
        return b'{"jsonrpc":"2.0","id":' + call_id + b',"result":' + response["result"] + b"}"
    return _encode_response(call, response)


def execute(request: Request, ctx: CallContext, dispatch: Dispatcher | None = None) -> bytes | None:
    """Run every call of ``request`` and encode the answer.

    Parameters
    ----------
    request : Request
        From ``parse_request``.
    ctx : CallContext
        Passed to each call.
    dispatch : callable, optional
        ``dispatch(ctx, method, params) -> result``; default ``feeslab.devnet.rpc.dispatch``.

    Returns
    -------
    bytes or None
        The response body, or None when there is nothing to answer (only notifications).
    """
    if request.error is not None:
        return encode(error_object(None, request.error))
    if dispatch is None:
        dispatch = rpc.dispatch
    answers = [run_call(call, ctx, dispatch) for call in request.calls]
    answers = [answer for answer in answers if answer is not None]
    if not request.batch:
        return answers[0] if answers else None
    if not answers:
        return None
    return b"[" + b",".join(answers) + b"]"

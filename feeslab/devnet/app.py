"""The devnet's HTTP and WebSocket surface: a plain Starlette route list and small endpoints.

Routes (``{key}`` is the API key; mainnet also answers without a network prefix):

=========================================  ====================================================
``POST /v3/{key}``, ``/{network}/v3/{key}``  node JSON-RPC (networks: mainnet, sepolia,
                                             polygon-mainnet, base-mainnet)
``WS /ws/v3/{key}``, ``/{network}/ws/v3/{key}``  node JSON-RPC, ``eth_subscribe("newHeads")``
``GET /networks/{chain_id}/{endpoint}``    Gas API, HTTP Basic ``key:secret``
``GET /v3/{key}/networks/{chain_id}/{endpoint}``  Gas API, key only
``GET /devnet/credits``, ``/devnet/info``  the ledger and the chains (HTTP Basic)
``GET /devnet/contracts``                  deployed contracts, ABIs, storage layouts
``WS /wallet``                             the multichain wallet API (CAIP-25), no key;
                                           loopback (or allowed) browser origins only
``POST /devnet/wallet``                    play the wallet's user: change the grants of open
                                           sessions (HTTP Basic; body: ``DevnetWallet.
                                           change_grant`` options as JSON)
``POST /api/v0/{command}``                 the IPFS storage API subset (kubo's HTTP RPC), HTTP
                                           Basic; see ``feeslab.devnet.ipfs``
=========================================  ====================================================

Order of checks on a node request: network (404), key (401), HTTP method (405), content type
(415), body size (413), then the credit ledger (402, 429) and the calls. A rejected answer from
a known key costs 5 credits; 401, 402, 429 and 5xx cost nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from feeslab.devnet import auth, ipfs
from feeslab.devnet.credits import Decision, payment_required_body, too_many_requests_body
from feeslab.devnet.errors import RpcError
from feeslab.devnet.gasapi import NoBaseFeeError
from feeslab.devnet.jsonrpc import (
    MAX_BODY_BYTES,
    CallContext,
    encode,
    error_object,
    execute,
    parse_request,
    request_costs,
)
from feeslab.devnet.subscriptions import HeadSubscriptions, poll_interval
from feeslab.devnet.wallet import wallet_ws
from feeslab.protocol.costs import GAS_API_COSTS, event_cost, gas_api_cost, http_status_cost

if TYPE_CHECKING:
    from feeslab.devnet.service import Devnet

log = logging.getLogger(__name__)

ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
JSON_CONTENT_TYPES = {"application/json", "application/json-rpc", "application/jsonrequest"}
DRAIN_LIMIT = 64 * 1024 * 1024  # read (and drop) this much of an oversized body before answering
GAS_ENDPOINTS = {
    "baseFeeHistory": "base_fee_history",
    "suggestedGasFees": "suggested_gas_fees",
    "baseFeePercentile": "base_fee_percentile",
    "busyThreshold": "busy_threshold",
}
assert set(GAS_ENDPOINTS) == set(GAS_API_COSTS)
FEE = "http_4xx"  # ledger name for the 5-credit charge on a rejected request


# -- helpers --------------------------------------------------------------------------------


def _devnet(conn: Request | WebSocket) -> Devnet:
    return conn.app.state.devnet


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    # ASCII-only encoding: text echoed from the request can never break the answer
    return Response(encode(body), status, headers=headers, media_type="application/json")


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _rejected(devnet: Devnet | None, status: int, body: Any, headers=None) -> Response:
    """A 4xx answer; charged its fee when the caller's key is known (``devnet`` given)."""
    if devnet is not None:
        devnet.ledger.charge_fee(FEE, http_status_cost(status))
    return _json(body, status, headers)


def _rpc_error_body(message: str, code: int = -32600) -> dict[str, Any]:
    return error_object(None, RpcError(code, message))


def _limit_response(decision: Decision, request_id: Any = 1) -> Response:
    if decision.status == 402:
        return _json(payment_required_body(request_id), 402)
    return _json(
        too_many_requests_body(request_id), 429, {"Retry-After": str(decision.retry_after)}
    )


def _unauthorized(message: str, basic: bool = False) -> Response:
    headers = {"WWW-Authenticate": auth.BASIC_CHALLENGE} if basic else None
    return _json(auth.unauthorized_body(message), 401, headers)


def _chain_for(devnet: Devnet, network: str) -> Any:
    return devnet.chains.by_network.get(network)


def _network_404(devnet: Devnet, network: str) -> dict[str, Any]:
    return {
        "error": f"unknown network {_clip(network)!r}",
        "networks": sorted(devnet.chains.by_network),
    }


async def _read_body(request: Request) -> bytes | None:
    """The body, or None when it exceeds ``MAX_BODY_BYTES`` (then drained, up to a limit)."""
    declared = request.headers.get("content-length", "")
    too_big = declared.isdigit() and int(declared) > MAX_BODY_BYTES
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                too_big = True
            if too_big:
                # keep reading so the client sees our 413 instead of a reset connection
                chunks.clear()
                if size > DRAIN_LIMIT:
                    break
                continue
            chunks.append(chunk)
    except ClientDisconnect:
        _log_disconnect(request, size)
        raise
    return None if too_big else b"".join(chunks)


def _log_disconnect(request: Request, received: int | None = None) -> None:
    """One line for a client that hung up before sending its whole request."""
    client = request.client
    where = f"{client.host}:{client.port}" if client else "a client"
    declared = request.headers.get("content-length", "?")
    got = "" if received is None else f" after {received} of {declared[:20]} body bytes"
    log.info("%s disconnected%s (%s %s)", where, got, request.method, request.url.path[:80])
    request.state.disconnect_logged = True


async def client_gone(request: Request, exc: Exception) -> Response:
    """A client hung up mid-request: one log line, no traceback, nobody to answer."""
    if not getattr(request.state, "disconnect_logged", False):
        _log_disconnect(request)
    return Response(None, 400)


# -- node JSON-RPC over HTTP ------------------------------------------------------------------


async def node_missing_key(request: Request) -> Response:
    return _unauthorized(auth.KEY_REQUIRED)


async def node_http(request: Request) -> Response:
    devnet = _devnet(request)
    network = request.path_params.get("network", "mainnet")
    key_problem = auth.check_key(devnet.credentials, request.path_params.get("key"))
    known = None if key_problem else devnet
    chain = _chain_for(devnet, network)
    if chain is None:
        return _rejected(known, 404, _network_404(devnet, network))
    if key_problem:
        return _unauthorized(key_problem)
    if request.method != "POST":
        return _rejected(devnet, 405, {"error": "method not allowed"}, {"Allow": "POST"})
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type not in JSON_CONTENT_TYPES:
        body = _rpc_error_body("invalid content type, only application/json is supported")
        return _rejected(devnet, 415, body)
    raw = await _read_body(request)
    if raw is None:
        body = _rpc_error_body(f"content length too large (limit {MAX_BODY_BYTES} bytes)")
        return _rejected(devnet, 413, body)
    rpc_request = parse_request(raw)
    decision = devnet.ledger.admit(request_costs(rpc_request))
    if not decision.admitted:
        return _limit_response(decision, rpc_request.first_id)
    ctx = CallContext(chain=chain, chains=devnet.chains, transport="http")
    payload = await run_in_threadpool(execute, rpc_request, ctx, devnet.dispatch)
    return Response(payload or b"", 200, media_type="application/json")


# -- Gas API ----------------------------------------------------------------------------------


async def _gas_answer(request: Request, devnet: Devnet) -> Response:
    if request.method not in ("GET", "HEAD"):
        return _rejected(devnet, 405, {"error": "method not allowed"}, {"Allow": "GET"})
    raw_id = request.path_params["chain_id"]
    chain = devnet.chains.by_id.get(int(raw_id)) if raw_id.isdigit() else None
    if chain is None:
        supported = sorted(devnet.chains.by_id)
        body = {
            "error": f"unsupported chain id {_clip(raw_id)!r}; supported: "
            + ", ".join(map(str, supported)),
            "supported_chain_ids": supported,
        }
        return _rejected(devnet, 400, body)
    endpoint = request.path_params["endpoint"]
    if endpoint not in GAS_ENDPOINTS:
        body = {
            "error": f"unknown endpoint {_clip(endpoint)!r}",
            "endpoints": sorted(GAS_ENDPOINTS),
        }
        return _rejected(devnet, 404, body)
    decision = devnet.ledger.admit([(endpoint, gas_api_cost(endpoint))])
    if not decision.admitted:
        return _limit_response(decision)
    compute = getattr(devnet.gas, GAS_ENDPOINTS[endpoint])
    try:
        return _json(await run_in_threadpool(compute, chain))
    except NoBaseFeeError as exc:  # a chain whose recent blocks predate London
        return _json({"error": str(exc)}, 400)


def _basic_refusal(request: Request) -> Response | None:
    """The 401 for a request without the devnet's Basic key:secret; None when it has them."""
    problem = auth.check_basic(_devnet(request).credentials, request.headers.get("authorization"))
    return _unauthorized(problem, basic=True) if problem else None


async def gas_basic(request: Request) -> Response:
    refusal = _basic_refusal(request)
    return refusal or await _gas_answer(request, _devnet(request))


async def gas_key(request: Request) -> Response:
    devnet = _devnet(request)
    problem = auth.check_key(devnet.credentials, request.path_params.get("key"))
    if problem:
        return _unauthorized(problem)
    return await _gas_answer(request, devnet)


# -- the devnet's own endpoints ---------------------------------------------------------------


async def devnet_credits(request: Request) -> Response:
    refusal = _basic_refusal(request)
    return refusal or _json(_devnet(request).ledger.usage().to_json())


async def devnet_contracts(request: Request) -> Response:
    refusal = _basic_refusal(request)
    return refusal or _json(await run_in_threadpool(_devnet(request).contracts))


async def devnet_info(request: Request) -> Response:
    refusal = _basic_refusal(request)
    return refusal or _json(await run_in_threadpool(_devnet(request).info))


USER_EDITS = ("revoke", "remove_chains", "remove_methods", "remove_accounts", "add_accounts")


async def devnet_wallet_user(request: Request) -> Response:
    refusal = _basic_refusal(request)
    if refusal is not None:
        return refusal
    devnet = _devnet(request)
    if request.method != "POST":
        return _rejected(None, 405, {"error": "method not allowed"}, {"Allow": "POST"})
    raw = await _read_body(request)  # capped as the JSON-RPC route is
    if raw is None:
        return _json({"error": f"content length too large (limit {MAX_BODY_BYTES} bytes)"}, 413)
    try:
        edits = json.loads(raw or b"{}")
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        return _json({"error": "the body must be a JSON object"}, 400)
    unknown = sorted(set(edits) - set(USER_EDITS)) if isinstance(edits, dict) else None
    if unknown is None or unknown:
        body = {"error": f"unknown options {unknown}" if unknown else "the body must be an object"}
        return _json({**body, "options": list(USER_EDITS)}, 400)
    try:
        changed = await run_in_threadpool(lambda: devnet.wallet.change_grant(**edits))
    except ValueError as exc:  # CaipError: a malformed ID or an account the wallet lacks
        return _json({"error": str(exc)}, 400)
    return _json({"changed": changed})


# -- node JSON-RPC over WebSocket -------------------------------------------------------------

_connection_serials = itertools.count(1)


class _WsSession:
    """One WebSocket connection: its messages, its subscriptions and the task pushing heads."""

    def __init__(self, websocket: WebSocket, devnet: Devnet, chain: Any) -> None:
        self.ws = websocket
        self.devnet = devnet
        self.chain = chain
        self.ctx = CallContext(chain=chain, chains=devnet.chains, transport="ws")
        self.serial = next(_connection_serials)
        self.heads = HeadSubscriptions(chain, devnet.format_new_head, prefix=str(self.serial))
        self.send_lock = asyncio.Lock()
        self.closed = False

    # dispatch (runs on a worker thread) ---------------------------------------------------

    def dispatch(self, ctx: CallContext, method: str, params: Any) -> Any:
        if method == "eth_subscribe":
            return self.heads.subscribe(params)
        if method == "eth_unsubscribe":
            return self.heads.unsubscribe(params)
        return self.devnet.dispatch(ctx, method, params)

    # sending ---------------------------------------------------------------------------------

    async def send(self, payload: bytes | str) -> bool:
        text = payload.decode("ascii") if isinstance(payload, bytes) else payload
        async with self.send_lock:
            if self.closed:
                return False
            try:
                await self.ws.send_text(text)
            except Exception:  # the peer went away; the receive loop will notice
                self.closed = True
                return False
        return True

    async def close_for_payment(self, request_id: Any = 1) -> None:
        # Infura severs WebSocket connections once the daily balance is gone
        await self.send(encode(payment_required_body(request_id)))
        async with self.send_lock:
            if not self.closed:
                self.closed = True
                with contextlib.suppress(Exception):
                    await self.ws.close(code=1008, reason="daily credit limit reached")

    # messages ------------------------------------------------------------------------------

    async def handle(self, body: bytes | str) -> None:
        if self.devnet.latency_ms:
            await asyncio.sleep(self.devnet.latency_ms / 1000)
        rpc_request = parse_request(body)
        decision = self.devnet.ledger.admit(request_costs(rpc_request))
        if decision.status == 402:
            await self.close_for_payment(rpc_request.first_id)
            return
        if decision.status == 429:
            await self.send(encode(too_many_requests_body(rpc_request.first_id)))
            return
        payload = await run_in_threadpool(execute, rpc_request, self.ctx, self.dispatch)
        if payload is not None:
            await self.send(payload)
        self.heads.activate()

    async def receive_loop(self) -> None:
        while not self.closed:
            message = await self.ws.receive()
            if message["type"] == "websocket.disconnect":
                self.closed = True
                return
            text = message.get("text")
            await self.handle(text if text is not None else message.get("bytes") or b"")

    # newHeads ------------------------------------------------------------------------------

    async def push_heads(self) -> None:
        interval = poll_interval(self.devnet.block_time)
        cost = event_cost("newHeads")

        def charge() -> bool:
            return self.devnet.ledger.charge_event("newHeads", cost)

        while not self.closed:
            await asyncio.sleep(interval)
            if not self.heads.active:
                continue
            events, exhausted = await run_in_threadpool(self.heads.due, charge)
            for sub_id, header in events:
                if not await self.send(encode(_notification(sub_id, header))):
                    return
            if exhausted:
                await self.close_for_payment()
                return

    async def run(self) -> None:
        pusher = asyncio.create_task(self.push_heads())
        try:
            await self.receive_loop()
        except Exception:  # a disconnect mid-receive, or a bug: end this connection only
            log.debug("websocket session ended", exc_info=True)
        finally:
            self.closed = True
            pusher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pusher


def _notification(sub_id: str, header: dict) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "eth_subscription",
        "params": {"subscription": sub_id, "result": header},
    }


async def _deny(websocket: WebSocket, status: int, body: dict[str, Any]) -> None:
    """Refuse a handshake with an HTTP answer, or close 1008 where the server cannot."""
    try:
        await websocket.send_denial_response(_json(body, status))
    except RuntimeError:
        await websocket.close(code=1008, reason=str(body.get("error", ""))[:120])


async def ws_missing_key(websocket: WebSocket) -> None:
    await _deny(websocket, 401, auth.unauthorized_body(auth.KEY_REQUIRED))


async def node_ws(websocket: WebSocket) -> None:
    devnet = _devnet(websocket)
    network = websocket.path_params.get("network", "mainnet")
    chain = _chain_for(devnet, network)
    if chain is None:
        await _deny(websocket, 404, _network_404(devnet, network))
        return
    problem = auth.check_key(devnet.credentials, websocket.path_params.get("key"))
    if problem:
        await _deny(websocket, 401, auth.unauthorized_body(problem))
        return
    await websocket.accept()
    await _WsSession(websocket, devnet, chain).run()


# -- the app ----------------------------------------------------------------------------------


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _json({"error": exc.detail}, exc.status_code, exc.headers)


async def server_error(request: Request, exc: Exception) -> Response:
    return _json({"error": "internal error"}, 500)


class LatencyMiddleware:
    """Sleep ``latency_ms`` before handling each HTTP request (WebSocket messages sleep in
    their session)."""

    def __init__(self, app: Any, latency_ms: float = 0.0) -> None:
        self.app = app
        self.delay = latency_ms / 1000

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.delay > 0:
            await asyncio.sleep(self.delay)
        await self.app(scope, receive, send)


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    devnet = app.state.devnet
    # touch every chain once so the first request does not pay for building it
    heads = await run_in_threadpool(lambda: {c.network: c.head() for c in devnet.chains})
    log.info("devnet ready: seed %s, heads %s", devnet.seed, heads)
    yield


routes = [
    Route("/devnet/credits", devnet_credits),
    Route("/devnet/info", devnet_info),
    Route("/devnet/contracts", devnet_contracts),
    Route("/devnet/wallet", devnet_wallet_user, methods=ALL_METHODS),
    WebSocketRoute("/wallet", wallet_ws),
    Route("/api/v0/{command:path}", ipfs.api, methods=ALL_METHODS),
    Route("/networks/{chain_id}/{endpoint}", gas_basic, methods=ALL_METHODS),
    Route("/v3/{key}/networks/{chain_id}/{endpoint}", gas_key, methods=ALL_METHODS),
    Route("/v3/{key}", node_http, methods=ALL_METHODS),
    Route("/v3/{key}/", node_http, methods=ALL_METHODS),  # a trailing slash, as clients send
    Route("/v3", node_missing_key, methods=ALL_METHODS),
    Route("/v3/", node_missing_key, methods=ALL_METHODS),
    Route("/{network}/v3/{key}", node_http, methods=ALL_METHODS),
    Route("/{network}/v3/{key}/", node_http, methods=ALL_METHODS),
    Route("/{network}/v3", node_missing_key, methods=ALL_METHODS),
    Route("/{network}/v3/", node_missing_key, methods=ALL_METHODS),
    WebSocketRoute("/ws/v3/{key}", node_ws),
    WebSocketRoute("/ws/v3", ws_missing_key),
    WebSocketRoute("/ws/v3/", ws_missing_key),
    WebSocketRoute("/{network}/ws/v3/{key}", node_ws),
    WebSocketRoute("/{network}/ws/v3", ws_missing_key),
    WebSocketRoute("/{network}/ws/v3/", ws_missing_key),
]


def create_app(devnet: Devnet) -> Starlette:
    """The Starlette app serving ``devnet``."""
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[Middleware(LatencyMiddleware, latency_ms=devnet.latency_ms)],
        exception_handlers={
            HTTPException: http_error,
            ClientDisconnect: client_gone,
            Exception: server_error,
        },
    )
    app.state.devnet = devnet
    return app

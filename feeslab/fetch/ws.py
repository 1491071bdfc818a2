"""JSON-RPC over one WebSocket: the same ``handle_request`` interface, plus subscriptions.

::

    async with AsyncWebSocketTransport(url=f"{devnet.ws_url}/ws/v3/{devnet.api_key}") as t:
        results = await t.handle_request([RpcCall("eth_blockNumber", [])])
        async for head in await t.subscribe("newHeads"):
            ...

Concurrent requests share the connection and are told apart by id (ids are assigned here).
A reader task routes each answer to its waiting request and each ``eth_subscription``
notification to its subscription. ``WebSocketTransport`` is the blocking twin: it runs the
async transport on the blocking clients' event-loop thread, so it also works inside a running
Jupyter kernel.

Answers are read like ``transport.py``'s, and refusals by the same map
(``feeslab.fetch.retry.status_error``) and driver: per-item errors come back as ``RpcError``
values; a 429 (one error object answering a whole batch, with id null: it is taken to answer
the oldest batch still waiting, as the service answers a connection's messages in order) or a
-32005 item is retried with backoff;
an unanswered request is sent again after ``timeout``; a dropped connection is reopened for
the next attempt (subscriptions end with ``TransportError``). The service closes the socket
after a 402 message: every waiting request, every subscription and every later call raises
``CreditsExhausted``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar, Unpack

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from feeslab._redact import scrub_exception
from feeslab.errors import (
    ConfigError,
    CreditsExhausted,
    FeeslabError,
    RateLimited,
    RpcError,
    TransportError,
)
from feeslab.fetch import jsonrpc
from feeslab.fetch.core import (
    RpcCore,
    TransportOptions,
    TransportReports,
    gather_or_cancel,
    send_batch,
)
from feeslab.fetch.credits import Budget
from feeslab.fetch.jsonrpc import RpcCall, RpcResult
from feeslab.fetch.loop import Blocking, LoopThread
from feeslab.fetch.retry import Retryable, status_error

__all__ = ["AsyncSubscription", "AsyncWebSocketTransport", "Subscription", "WebSocketTransport"]

MAX_MESSAGE_BYTES = 32 * 1024 * 1024  # geth's WebSocket read limit
_T = TypeVar("_T")
_END = object()  # queued when a subscription ends


class _Group:
    """One request in flight: its ids and the answers collected so far."""

    def __init__(self, ids: Sequence[int], loop: asyncio.AbstractEventLoop) -> None:
        self.ids = set(ids)
        self.answers: list[Mapping[str, object]] = []
        # None once every call is answered; the one error item refusing the whole batch
        self.future: asyncio.Future[Mapping[str, object] | None] = loop.create_future()

    def add(self, item: Mapping[str, object]) -> None:
        self.answers.append(item)
        if len(self.answers) >= len(self.ids) and not self.future.done():
            self.future.set_result(None)

    def fail_whole(self, item: Mapping[str, object]) -> None:
        # the service answered the whole batch with one error (429 for a batch)
        if not self.future.done():
            self.future.set_result(item)


class AsyncSubscription:
    """Notifications of one ``eth_subscribe``: an async iterator of their ``result`` members.

    Attributes
    ----------
    id : str
        The subscription id the node gave.
    kind : str
        E.g. ``"newHeads"``.
    received_ns : int or None
        When the notification last returned was read off the socket
        (``time.monotonic_ns()``) [ns]: how long it waited before the caller took it is the
        caller's lag (``feeslab.watch`` measures from it, through ``feeslab.fetch.heads``).
    """

    def __init__(self, transport: AsyncWebSocketTransport, sub_id: str, kind: str) -> None:
        self.id = sub_id
        self.kind = kind
        self._transport = transport
        # (result (JSON), monotonic ns read), then _END
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._error: FeeslabError | None = None
        self._closed = False
        self.received_ns: int | None = None

    def __repr__(self) -> str:
        return f"<AsyncSubscription {self.kind} {self.id}>"

    def _push(self, value: object) -> None:
        self._queue.put_nowait((value, time.monotonic_ns()))

    def _end(self, error: FeeslabError | None) -> None:
        self._error = error
        self._queue.put_nowait(_END)

    def __aiter__(self) -> AsyncSubscription:
        return self

    async def __anext__(self) -> Any:
        if self._closed:
            raise StopAsyncIteration
        value = await self._queue.get()
        if value is _END:
            self._closed = True
            self._queue.put_nowait(_END)  # later calls end too
            if self._error is not None:
                raise self._error
            raise StopAsyncIteration
        result, self.received_ns = value
        return result

    def ready(self) -> list[Any]:
        """The notifications already received and not yet taken, oldest first, without
        waiting (an end of the subscription stays queued for the iteration to raise)."""
        taken: list[Any] = []
        while not self._queue.empty():
            value = self._queue.get_nowait()
            if value is _END:
                self._queue.put_nowait(_END)
                break
            result, self.received_ns = value
            taken.append(result)
        return taken

    def detach(self) -> None:
        """End the iteration now, without telling the node (no message is sent): for a
        caller about to close the connection, or one that must not wait on a busy socket.
        Later notifications of this id are dropped."""
        if self._closed:
            return
        self._transport._subs.pop(self.id, None)
        self._end(None)

    async def aclose(self) -> None:
        """Unsubscribe (``eth_unsubscribe``) and end the iteration."""
        if self._closed:
            return
        self._closed = True
        self._transport._subs.pop(self.id, None)
        if self._transport.connected:
            with contextlib.suppress(FeeslabError):
                await self._transport.handle_request([RpcCall("eth_unsubscribe", [self.id])])
        self._end(None)


class AsyncWebSocketTransport(TransportReports):
    """JSON-RPC over one WebSocket connection, for ``asyncio`` code.

    Parameters
    ----------
    url : str
        ``ws(s)://.../ws/v3/<KEY>``.
    limits, retry, credits_per_second, governor, ledger, budget, on_response, clock
        As for ``feeslab.fetch.transport.AsyncHTTPTransport`` (also as the keywords
        ``max_batch``, ``max_concurrency``, ``timeout``, ``retries``, ...); ``timeout`` is the
        wait for the connection and for each answer [s] (default 30).
    sleep : callable, optional
        ``await sleep(seconds)``; default ``asyncio.sleep``.
    max_size : int
        Largest message accepted (default 32 MiB, geth's limit).
    on_message : callable, optional
        ``on_message(message)`` for each message that is a notification of another API (no
        id, a method): the wallet's ``wallet_notify``, for one.
    on_close : callable, optional
        ``on_close(error)`` when the connection ends (error None: closed by this side).
    """

    def __init__(
        self,
        *,
        url: str,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        max_size: int = MAX_MESSAGE_BYTES,
        on_message: Callable[[dict[str, object]], None] | None = None,
        on_close: Callable[[FeeslabError | None], None] | None = None,
        **options: Unpack[TransportOptions],
    ) -> None:
        self._core = RpcCore.build(url=url, schemes=("ws", "wss"), **options)
        self._timeout = self._core.limits.seconds
        self._sleep = sleep
        self._max_size = max_size
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._connect_lock: asyncio.Lock | None = None
        self._limit: asyncio.Semaphore | None = None
        self._waiting: dict[int, _Group] = {}
        self._subs: dict[str, AsyncSubscription] = {}
        self._early: dict[str, list[object]] = {}  # notifications that beat their subscribe answer
        self._exhausted: CreditsExhausted | None = None
        self._closing = False
        self._on_message = on_message
        self._on_close = on_close
        self.opened = False
        """Whether the connection was ever opened (a wallet's session dies with it)."""

    @property
    def connected(self) -> bool:
        return self._ws is not None and self._reader is not None and not self._reader.done()

    # -- connection -----------------------------------------------------------------------

    async def connect(self) -> None:
        """Open the connection (done on first use; a dropped connection is reopened)."""
        if self._exhausted is not None:
            raise self._exhausted
        if self._connect_lock is None:
            self._connect_lock = asyncio.Lock()
        async with self._connect_lock:
            if self.connected:
                return
            self._closing = False
            secrets = self._core.secrets
            try:
                ws = await connect(
                    self._core.url,
                    open_timeout=self._timeout,
                    max_size=self._max_size,
                    ping_interval=None,  # the node does not need keepalives; answers do it
                )
            except InvalidStatus as exc:
                scrub_exception(exc, secrets)  # it stays chained as __context__
                raise self._handshake_error(exc) from None
            except (InvalidURI, ValueError) as exc:  # a URL websockets refuses: "#frag", a port
                scrub_exception(exc, secrets)
                message = f"the WebSocket URL cannot be used: {exc}"
                raise ConfigError(message, secrets=secrets) from None
            except (OSError, TimeoutError, InvalidHandshake) as exc:
                scrub_exception(exc, secrets)
                error = TransportError(
                    f"cannot open the WebSocket: {type(exc).__name__}: {exc}", secrets=secrets
                )
                raise error from exc
            self._ws = ws
            self._reader = asyncio.create_task(self._read(ws))
            self.opened = True

    def _handshake_error(self, exc: InvalidStatus) -> FeeslabError:
        status = exc.response.status_code
        body_bytes = exc.response.body or b""
        try:
            body = json.loads(body_bytes)
        except ValueError:
            body = None
        said = jsonrpc.service_says(body, body_bytes)
        error = status_error(status, said, secrets=self._core.secrets,
                             credits_spent=self._core.credits_spent)  # fmt: skip
        # the handshake is not retried (connect() is called by each attempt): a 429 or 5xx
        # there is what the attempt failed with
        return error.error if isinstance(error, Retryable) else error

    async def _read(self, ws: ClientConnection) -> None:
        error: FeeslabError | None = None
        try:
            async for message in ws:
                self._dispatch(message)
        except ConnectionClosed as exc:
            error = TransportError(f"the WebSocket closed: {exc}", secrets=self._core.secrets)
        finally:
            if self._exhausted is not None:
                error = self._exhausted
            elif error is None and not self._closing:
                rcvd = ws.close_code
                error = TransportError(
                    f"the service closed the WebSocket (code {rcvd})", secrets=self._core.secrets
                )
            self._ws = None
            self._fail_all(error)

    def _fail_all(self, error: FeeslabError | None) -> None:
        for group in set(self._waiting.values()):
            if not group.future.done():
                group.future.set_exception(error or TransportError("the WebSocket was closed"))
                group.future.exception()  # mark retrieved: a late failure is not "never seen"
        self._waiting.clear()
        for sub in list(self._subs.values()):
            sub._end(error)
        self._subs.clear()
        if self._on_close is not None:
            self._on_close(error)

    def _dispatch(self, message: str | bytes) -> None:
        try:
            body = json.loads(message)
        except ValueError:
            return  # no id to blame; the request it answered times out and goes again
        if isinstance(body, list):
            for item in body:
                self._answer(item, whole=False)
        elif isinstance(body, Mapping):
            if (
                self._on_message is not None
                and "id" not in body
                and isinstance(body.get("method"), str)
            ):
                self._on_message(dict(body))
            elif body.get("method") == "eth_subscription":
                self._notify(body.get("params"))
            else:
                self._answer(body, whole=True)

    def _answer(self, item: object, *, whole: bool) -> None:
        if not isinstance(item, Mapping):
            return
        error = item.get("error")
        code = error.get("code") if isinstance(error, Mapping) else None
        if code == 402 and isinstance(error, Mapping):  # (a code is only read from a Mapping)
            exhausted = status_error(402, "", secrets=self._core.secrets,
                                     credits_spent=self._core.credits_spent,
                                     details=error.get("details"))  # fmt: skip
            assert isinstance(exhausted, CreditsExhausted)
            self._exhausted = exhausted
            self._fail_all(self._exhausted)  # the service closes the socket next
            return
        group = self._waiting.get(item.get("id"))  # type: ignore[arg-type]  # any id: ours match
        refused = code in (429, jsonrpc.RATE_LIMIT_CODE)
        if group is None and whole and item.get("id") is None and refused:
            # a refused batch is answered with id null: the service answers a connection's
            # messages in order, so it is the oldest batch still waiting for any answer
            group = next(
                (
                    g
                    for g in self._waiting.values()
                    if not g.answers and len(g.ids) > 1 and not g.future.done()
                ),
                None,
            )
        if group is None:
            return
        if whole and refused and len(group.ids) > 1:
            group.fail_whole(item)
        else:
            group.add(item)

    def _notify(self, params: object) -> None:
        if not isinstance(params, Mapping):
            return
        sub_id = params.get("subscription")
        sub = self._subs.get(sub_id)  # type: ignore[arg-type]  # any id: ours match
        if sub is not None:
            sub._push(params.get("result"))
        elif isinstance(sub_id, str) and len(self._early) < 64:
            self._early.setdefault(sub_id, []).append(params.get("result"))

    # -- requests ---------------------------------------------------------------------------

    async def handle_request(self, calls: Sequence[RpcCall]) -> list[RpcResult]:
        """Send ``calls`` (split into batches, multiplexed); results in call order."""
        calls = list(calls)
        if not calls:
            return []
        if self._limit is None:
            self._limit = asyncio.Semaphore(self._core.max_concurrency)
        limit = self._limit

        async def run(chunk: Sequence[RpcCall]) -> list[RpcResult]:
            async with limit:
                return await self._send_batch(chunk)

        batches = jsonrpc.chunks(calls, self._core.max_batch)
        parts = await gather_or_cancel([run(c) for c in batches])
        return [result for part in parts for result in part]

    async def _send_batch(self, calls: Sequence[RpcCall]) -> list[RpcResult]:
        return await send_batch(self._core, calls, self._exchange, self._sleep)

    async def _exchange(self, pending: Mapping[int, RpcCall]) -> jsonrpc.Outcome:
        """One attempt: send the calls, wait for their answers, read them."""
        try:
            await self.connect()
        except TransportError as exc:  # a network failure or a 5xx handshake: as over HTTP
            raise Retryable(exc) from None
        except RateLimited as exc:  # a 429 handshake: waited out like any 429
            raise Retryable(exc, exc.retry_after) from None
        assert self._ws is not None
        group = _Group(list(pending), asyncio.get_running_loop())
        for rid in pending:
            self._waiting[rid] = group
        calls = list(pending.values())
        try:
            await self._ws.send(jsonrpc.build_body(calls, list(pending)).decode())
            whole = await asyncio.wait_for(asyncio.shield(group.future), self._timeout)
        except TimeoutError:
            whole = None  # the unanswered calls count as missing and go again
        except ConnectionClosed as exc:
            if self._exhausted is not None:
                raise self._exhausted from None
            raise Retryable(TransportError(f"the WebSocket closed: {exc}")) from None
        except TransportError as exc:
            raise Retryable(exc) from None
        finally:
            for rid in pending:
                self._waiting.pop(rid, None)
        if whole is not None:
            self._core.record(calls, 429)
            said = jsonrpc.service_says(whole, b"")
            raise status_error(429, said, label="WebSocket", wait=jsonrpc.backoff_seconds(whole),
                               secrets=self._core.secrets)  # fmt: skip
        self._core.record(calls, 200)
        return jsonrpc.read_items(group.answers, pending, secrets=self._core.secrets)

    @property
    def closing(self) -> bool:
        """Whether this side is closing (or has closed) the connection."""
        return self._closing

    async def call_once(
        self, method: str, params: list[Any] | Mapping[str, Any]
    ) -> Mapping[str, Any]:
        """One call sent once, with ``params`` as given (a list, or an object for the wallet
        API), and its raw answer item: no retry, no reconnect of a dropped connection.

        Raises
        ------
        TransportError
            No answer within ``timeout``, or the connection closed.
        """
        await self.connect()
        assert self._ws is not None
        (rid,) = self._core.next_ids(1)
        group = _Group([rid], asyncio.get_running_loop())
        self._waiting[rid] = group
        try:
            # an RpcCall's params are a list, but the wallet API's are an object: build_body
            # sends either as given
            call = RpcCall(method, params)  # type: ignore[arg-type]
            await self._ws.send(jsonrpc.build_body([call], [rid]).decode())
            await asyncio.wait_for(asyncio.shield(group.future), self._timeout)
        except TimeoutError:
            message = f"no answer to {method} within {self._timeout:g} s"
            raise TransportError(message, secrets=self._core.secrets) from None
        except ConnectionClosed as exc:
            message = f"the connection closed: {exc}"
            raise TransportError(message, secrets=self._core.secrets) from None
        finally:
            self._waiting.pop(rid, None)
        (item,) = group.answers
        return item

    # -- subscriptions ----------------------------------------------------------------------

    async def subscribe(self, kind: str = "newHeads", *params: object) -> AsyncSubscription:
        """``eth_subscribe(kind, *params)``; iterate the result for the notifications.

        Raises
        ------
        RpcError
            When the node refuses the subscription.
        """
        (answer,) = await self.handle_request([RpcCall("eth_subscribe", [kind, *params])])
        sub_id = answer.unwrap()
        if not isinstance(sub_id, str):
            raise RpcError(None, f"eth_subscribe answered {sub_id!r}, not a subscription id")
        sub = AsyncSubscription(self, sub_id, kind)
        self._subs[sub_id] = sub
        for value in self._early.pop(sub_id, []):
            sub._push(value)
        return sub

    # -- closing ----------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the connection; open subscriptions end."""
        self._closing = True
        ws, reader = self._ws, self._reader
        if ws is not None:
            await ws.close()
        if reader is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await reader
        self._ws = self._reader = None

    aclose = close

    async def __aenter__(self) -> AsyncWebSocketTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


# -- the blocking twin --------------------------------------------------------------------------


class Subscription:
    """The blocking twin of ``AsyncSubscription``: iterate it for the notifications."""

    def __init__(self, inner: AsyncSubscription, loop: LoopThread) -> None:
        self._inner = inner
        self._loop = loop
        self.id = inner.id
        self.kind = inner.kind

    def __repr__(self) -> str:
        return f"<Subscription {self.kind} {self.id}>"

    @property
    def received_ns(self) -> int | None:
        """When the notification last returned was read off the socket (monotonic) [ns]."""
        return self._inner.received_ns

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        try:
            return self._loop.run(self._inner.__anext__())
        except StopAsyncIteration:
            raise StopIteration from None

    def close(self) -> None:
        """Unsubscribe and end the iteration."""
        self._loop.run(self._inner.aclose())

    def ready(self) -> list[Any]:
        """The notifications already received and not yet taken, without waiting (see
        ``AsyncSubscription.ready``): a slow consumer takes a backlog in one go."""
        return self._loop.call(self._inner.ready)

    def detach(self) -> None:
        """End the iteration now without telling the node (see ``AsyncSubscription.detach``);
        safe from any thread."""
        if not self._loop.closed:
            self._loop.call(self._inner.detach)


class WebSocketTransport(Blocking):
    """JSON-RPC over one WebSocket, blocking: ``AsyncWebSocketTransport`` on the blocking clients'
    event-loop thread, never on the caller's loop, so this works from a Jupyter cell.
    Options are those of ``AsyncWebSocketTransport``.
    """

    _inner: AsyncWebSocketTransport

    def __init__(
        self,
        *,
        url: str,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        max_size: int = MAX_MESSAGE_BYTES,
        on_message: Callable[[dict[str, object]], None] | None = None,
        on_close: Callable[[FeeslabError | None], None] | None = None,
        **options: Unpack[TransportOptions],
    ) -> None:
        def make() -> AsyncWebSocketTransport:
            return AsyncWebSocketTransport(url=url, sleep=sleep, max_size=max_size,
                                           on_message=on_message, on_close=on_close,
                                           **options)  # fmt: skip

        super().__init__(make)

    def __repr__(self) -> str:
        return repr(self._inner).replace("AsyncWebSocketTransport", "WebSocketTransport")

    @property
    def asynchronous(self) -> AsyncWebSocketTransport:
        """The async transport this one runs, for code already on its loop thread
        (``loop_thread``: ``feeslab.fetch.heads`` awaits it there)."""
        return self._inner

    @property
    def credits_spent(self) -> int:
        return self._inner.credits_spent

    def charging(self, budget: Budget | None) -> contextlib.AbstractContextManager[None]:
        """Charge ``budget`` with each request's price before it is sent, while inside."""
        return self._inner.charging(budget)

    def handle_request(self, calls: Sequence[RpcCall]) -> list[RpcResult]:
        """Send ``calls``; results in call order (see ``AsyncWebSocketTransport``)."""
        return self._run(self._inner.handle_request(calls))

    def subscribe(self, kind: str = "newHeads", *params: object) -> Subscription:
        """``eth_subscribe(kind, *params)``; iterate the result for the notifications."""
        return Subscription(self._run(self._inner.subscribe(kind, *params)), self._loop)

"""JSON-RPC over HTTP: one small interface, async, and its blocking wrapper.

A transport takes a list of ``RpcCall`` and returns one ``RpcResult`` per call, in call order::

    with HTTPTransport(url=f"{devnet.url}/v3/{devnet.api_key}") as t:
        block, chain = t.handle_request([RpcCall("eth_blockNumber", []),
                                         RpcCall("eth_chainId", [])])

``AsyncHTTPTransport`` (tasks; each batch sent by ``httpx.AsyncClient``, keep-alive) is the
transport; ``HTTPTransport`` runs it on the blocking clients' event-loop thread
(``feeslab.fetch.loop``), so it works inside a running Jupyter kernel. Requests are built and
answers matched by ``feeslab.fetch.jsonrpc``; the retry policy (``Retry``), limits
(``Limits``), credit governor and each batch's attempts are ``feeslab.fetch.core``'s, shared
with the WebSocket transport.

What happens to each answer
---------------------------
Refused answers are read by the one status-to-error map of every client
(``feeslab.fetch.retry.status_error``) and retried by its one driver (``retry.drive``):

=====================================  ==========================================================
HTTP 200, JSON-RPC items               each item's ``result`` or ``error`` (an ``RpcError``, not
                                       raised) goes to its call, matched by id
HTTP 200, some ids missing             the answered items are kept; the missing calls are sent
                                       again (retries); still missing -> ``ProtocolError``
HTTP 200, not JSON / not JSON-RPC      retried (a truncated or proxied answer is usually
                                       transient); after the retries -> ``ProtocolError``. The
                                       service may have charged the calls each time.
item error -32005 (limit exceeded)     that item is retried like a 429 (``data.backoff_seconds``)
HTTP 429                               retried after ``Retry-After`` (seconds or HTTP-date), else
                                       the body's ``error.data.backoff_seconds``, else backoff;
                                       not counted against ``retries``: after
                                       ``rate_limit_patience`` seconds of nothing but 429s (no
                                       request served) -> ``RateLimited``
HTTP 5xx, connect/read errors,         retried with backoff; after the retries ->
timeouts                               ``TransportError`` (the last httpx error as __cause__)
HTTP 402                               ``CreditsExhausted`` at once (retrying cannot help)
HTTP 401, 403                          ``AuthError`` at once
HTTP 404                               ``ConfigError`` (wrong URL or network)
any other status                       ``ProtocolError``
a whole-request error object           ``RpcError`` raised (e.g. -32600 "batch too large")
=====================================  ==========================================================

Backoff is exponential with full jitter: attempt ``n`` waits ``uniform(0, min(cap, base * 2**n))``.
A 429 also pauses the whole transport, so the other batches in flight do not hammer the
service meanwhile.

Pacing
------
With ``credits_per_second`` the transport paces itself (`CreditGovernor`: a token bucket at
``GOVERNOR_HEADROOM`` of the rate, with ``GOVERNOR_BURST`` of a second's burst, costed per call
from ``feeslab.protocol.costs``), cuts batches to at most the bucket's share of one of the
``max_concurrency`` batches in flight, and adapts (AIMD): a 429 halves the rate, a quiet
stretch wins it back. ``connect()`` passes the plan's rate by default.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Required, Unpack

import httpx

from feeslab._redact import describe
from feeslab.errors import (
    ProtocolError,
    RpcError,
    TransportError,
    redact,
)
from feeslab.fetch._tls import shared_ssl_context
from feeslab.fetch.core import (
    CUT_SPACING,
    DEFAULT_BACKOFF,
    DEFAULT_BACKOFF_CAP,
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_CONCURRENCY,
    DEFAULT_RATE_LIMIT_PATIENCE,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    GOVERNOR_BURST,
    GOVERNOR_HEADROOM,
    QUIET_SECONDS,
    RATE_CUT,
    RATE_FLOOR,
    RECOVERY_PER_SECOND,
    CreditGovernor,
    Limits,
    Retry,
    RpcCore,
    TransportOptions,
    TransportReports,
    gather_or_cancel,
    send_batch,
)
from feeslab.fetch.jsonrpc import (
    RATE_LIMIT_CODE,
    Outcome,
    RpcCall,
    RpcResult,
    backoff_seconds,
    build_body,
    chunks,
    json_or_none,
    read_items,
    service_says,
)
from feeslab.fetch.loop import Blocking
from feeslab.fetch.retry import Retryable, http_error, status_error

__all__ = [
    "CUT_SPACING",
    "DEFAULT_BACKOFF",
    "DEFAULT_BACKOFF_CAP",
    "DEFAULT_MAX_BATCH",
    "DEFAULT_MAX_CONCURRENCY",
    "DEFAULT_RATE_LIMIT_PATIENCE",
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT",
    "GOVERNOR_BURST",
    "GOVERNOR_HEADROOM",
    "QUIET_SECONDS",
    "RATE_CUT",
    "RATE_FLOOR",
    "RECOVERY_PER_SECOND",
    "AsyncHTTPTransport",
    "CreditGovernor",
    "HTTPOptions",
    "HTTPTransport",
    "Limits",
    "Retry",
    "RpcCall",
    "RpcResult",
    "read_items",
    "redact",
]

_USER_AGENT = "feeslab-fetch"
OnBatch = Callable[[Sequence[RpcCall], list[RpcResult]], list[RpcResult] | None]
"""``on_batch(calls, results)``: one batch's answers, as they arrive. What it returns, when
not None, stands for them (one result per call): e.g. each header reduced to what a scan
keeps, so that the decoded batch is freed at once rather than when the last batch comes."""


class HTTPOptions(TransportOptions, total=False):
    """The keywords of both HTTP transports but ``sleep`` (documented at
    ``AsyncHTTPTransport``): declared once, for ``HTTPTransport`` to hand on."""

    url: Required[str]
    headers: Mapping[str, str] | None
    auth: tuple[str, str] | httpx.Auth | None
    transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None


class _SyncTransport(httpx.AsyncBaseTransport):
    """A sync-only httpx transport given to the async client: each request on a worker
    thread, so that one that blocks (a test's slow fault) stalls only its own batch."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await asyncio.to_thread(self._inner.handle_request, request)
        content = await asyncio.to_thread(response.read)
        return httpx.Response(response.status_code, headers=response.headers, content=content,
                              extensions=response.extensions)  # fmt: skip

    async def aclose(self) -> None:
        await asyncio.to_thread(self._inner.close)


def _async_transport(
    transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None,
) -> httpx.AsyncBaseTransport | None:
    """What the async client sends through: an async transport as it is (``MockTransport``
    is both), a sync-only one on worker threads, None: httpx's own."""
    if transport is None or isinstance(transport, httpx.AsyncBaseTransport):
        return transport
    return _SyncTransport(transport)


def _interpret(
    response: httpx.Response,
    calls: Mapping[int, RpcCall],
    *,
    secrets: Sequence[str],
    credits_spent: int,
) -> Outcome:
    """Read one HTTP answer to the calls ``{id: call}``.

    Raises ``Retryable`` for a transient failure of the whole request and a ``FeeslabError``
    for a final one.
    """
    status = response.status_code
    content = response.content
    body = json_or_none(content)
    if status != 200:
        raise http_error(response, body, secrets=secrets, credits_spent=credits_spent)
    if body is None:
        said = service_says(body, content)
        error = ProtocolError(f"the answer is not JSON: {said}", status=200, secrets=secrets)
        raise Retryable(error)
    items = body if isinstance(body, list) else [body]
    if not all(isinstance(item, Mapping) for item in items):
        raise Retryable(ProtocolError("the answer is not JSON-RPC", status=200, secrets=secrets))
    if isinstance(body, Mapping) and body.get("id") is None and "error" in body:
        # one error for the whole request (e.g. -32600 "batch too large")
        if isinstance(body["error"], Mapping) and body["error"].get("code") == RATE_LIMIT_CODE:
            said = service_says(body, content)
            raise status_error(RATE_LIMIT_CODE, said, secrets=secrets, wait=backoff_seconds(body))
        raise RpcError.from_object(body["error"], secrets=secrets)
    return read_items(items, calls, secrets=secrets)


class AsyncHTTPTransport(TransportReports):
    """JSON-RPC over HTTP for ``asyncio`` code.

    Parameters
    ----------
    url : str
        The node endpoint, e.g. ``https://mainnet.infura.io/v3/<KEY>``.
    limits : Limits, optional
        ``max_batch`` (calls per HTTP request; longer lists are split, default 100),
        ``max_concurrency`` (requests in flight at once, default 8) and ``timeout`` (per
        request, default 30 s). Or give those three as keywords.
    retry : Retry, optional
        ``retries`` (further attempts after a 5xx, malformed answer or network error, default
        5; a 429 is not counted: it is waited out and the governor slows down),
        ``rate_limit_patience`` (the hard stop for 429s: a batch that has waited this long on
        429s while no request of the transport was served raises ``RateLimited``, default
        600 s), ``backoff``/``backoff_cap`` (the jittered exponential backoff [s]) and ``rng``
        (the jitter's source). Or give those as keywords.
    credits_per_second : float, optional
        Pace requests with a client-side token bucket (`CreditGovernor`) charged
        ``feeslab.protocol.costs.method_cost`` per call, so that a big scan stays under the plan's
        throughput [credits/s]; batches are then also cut to at most the bucket's share of one
        batch in flight (``rate / max_concurrency`` credits). None (the default here; ``connect``
        passes the plan's rate) disables both.
    governor : Governor, optional
        Pace with this instead of a ``CreditGovernor`` of its own: anything with its methods
        (a cluster's bucket shared by many transports, ``feeslab.cluster``); not with
        ``credits_per_second``.
    headers : mapping, optional
        Extra request headers.
    auth : tuple or httpx.Auth, optional
        E.g. ``(key, secret)`` for HTTP Basic.
    transport : httpx.AsyncBaseTransport or httpx.BaseTransport, optional
        An httpx transport to send through (e.g. ``httpx.MockTransport`` in tests, for fault
        injection). An async one is awaited on the loop; a sync-only one is called on a
        worker thread (``asyncio.to_thread``), so that it may block.
    ledger : CreditLedger, optional
        The one count of credits: every answer is booked there (a private ledger when None);
        ``credits_spent`` and ``CreditsExhausted`` report its total.
    budget : Budget, optional
        Charged each request's price before it is sent: ``BudgetExceeded`` instead of sending
        past its limit.
    on_response : callable, optional
        ``on_response(calls, http_status)`` after every HTTP answer (an observer).
    sleep : callable, optional
        ``await sleep(seconds)``; default ``asyncio.sleep`` (injectable for tests).
    clock : callable, optional
        Monotonic seconds for the governor; default ``time.monotonic``.
    """

    def __init__(
        self,
        *,
        url: str,
        headers: Mapping[str, str] | None = None,
        auth: tuple[str, str] | httpx.Auth | None = None,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        **options: Unpack[TransportOptions],
    ) -> None:
        self._core = RpcCore.build(url=url, auth=auth, **options)
        limits = self._core.limits
        self._sleep = sleep
        merged = {"Content-Type": "application/json", "User-Agent": _USER_AGENT}
        merged.update(headers or {})
        # the async core does its own I/O: one keep-alive connection per batch in flight, on
        # this loop; measured against httpx's sync client on a pool of threads in
        # docs/architecture.md ("Concurrency")
        self._client = httpx.AsyncClient(
            transport=_async_transport(transport),
            limits=httpx.Limits(max_connections=max(limits.max_concurrency, 10)),
            headers=merged,
            timeout=limits.httpx_timeout(),
            auth=auth,
            verify=shared_ssl_context(),
        )
        self._limit: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

    def _semaphore(self) -> asyncio.Semaphore:
        # one per loop: requests of every caller share max_concurrency
        loop = asyncio.get_running_loop()
        if self._limit is None or self._limit[0] is not loop:
            self._limit = (loop, asyncio.Semaphore(self._core.max_concurrency))
        return self._limit[1]

    async def handle_request(
        self, calls: Sequence[RpcCall], *, on_batch: OnBatch | None = None
    ) -> list[RpcResult]:
        """Send ``calls`` (split into batches, run concurrently); results in call order.

        ``on_batch(calls, results)`` runs as each batch's answers arrive (e.g. to store them
        before the other batches end); a list it returns stands for that batch's results.
        """
        calls = list(calls)
        if not calls:
            return []
        core = self._core
        limit = self._semaphore()
        stop = threading.Event()

        async def run(chunk: Sequence[RpcCall]) -> list[RpcResult]:
            async with limit:
                results = await send_batch(core, chunk, self._exchange, self._sleep, stop)
            if on_batch is not None:
                kept = on_batch(chunk, results)
                if kept is not None:
                    results = kept
            return results

        batches = chunks(calls, core.max_batch, core.chunks_limit(calls))
        if len(batches) == 1:
            return await run(batches[0])
        parts = await gather_or_cancel([run(c) for c in batches])
        return [result for part in parts for result in part]

    async def _exchange(self, pending: Mapping[int, RpcCall]) -> Outcome:
        """One HTTP request for the calls ``{id: call}``, its answer read and decoded here, on
        the loop's thread, where ``on_batch`` then runs at once: decoded batches do not wait
        (up to seven of 500 Shanghai headers, 40 MB, were seen waiting) and are reduced one at
        a time."""
        core = self._core
        calls = list(pending.values())
        try:
            response = await self._client.post(core.url, content=build_body(calls, list(pending)))
        except httpx.HTTPError as exc:
            # the cause keeps its type; its request shows no key
            error = TransportError(describe(exc, core.secrets), secrets=core.secrets)
            error.__cause__ = exc
            raise Retryable(error) from None
        core.record(calls, response.status_code)
        try:
            return _interpret(
                response, pending, secrets=core.secrets, credits_spent=core.credits_spent
            )
        finally:
            # httpx binds a response and its stream to each other (a reference cycle) and the
            # fetches pause the collector (feeslab.fetch._gc): unbound, the answer's bytes (2
            # MB a batch of 500 headers) are freed once read, not at the collector's next pass
            response.stream = httpx.ByteStream(b"")

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def __aenter__(self) -> AsyncHTTPTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def blocking_sleep(sleep: Callable[[float], object]) -> Callable[[float], Awaitable[None]]:
    """An awaitable ``sleep`` for the async core from a blocking one (``time.sleep``: the
    loop's own ``asyncio.sleep``; a test's fake: called as it is)."""
    if sleep is time.sleep:
        return asyncio.sleep

    async def slept(seconds: float) -> None:
        sleep(seconds)

    return slept


class HTTPTransport(Blocking, TransportReports):
    """JSON-RPC over HTTP, blocking: ``AsyncHTTPTransport`` run on the blocking clients' loop
    thread (``feeslab.fetch.loop``).

    Safe to call from a Jupyter cell (where a loop is already running in the caller's
    thread) and from many threads at once.

    Parameters
    ----------
    sleep : callable, optional
        ``sleep(seconds)``; default ``time.sleep`` (a test's fake clock).
    **options
        As for ``AsyncHTTPTransport`` (``transport`` may be an ``httpx.MockTransport``).
    """

    _inner: AsyncHTTPTransport

    def __init__(
        self, *, sleep: Callable[[float], object] = time.sleep, **options: Unpack[HTTPOptions]
    ) -> None:
        def make() -> AsyncHTTPTransport:
            return AsyncHTTPTransport(sleep=blocking_sleep(sleep), **options)

        super().__init__(make)
        self._core = self._inner._core

    @property
    def asynchronous(self) -> AsyncHTTPTransport:
        """The async transport this one runs, for code already on its loop thread
        (``loop_thread``: ``feeslab.fetch.heads`` awaits it there)."""
        return self._inner

    def handle_request(
        self, calls: Sequence[RpcCall], *, on_batch: OnBatch | None = None
    ) -> list[RpcResult]:
        """Send ``calls`` (split into batches, run concurrently); results in call order.

        ``on_batch(calls, results)`` runs (on the transport's thread) as each batch's answers
        arrive, e.g. to store them before the other batches end; a list it returns stands for
        that batch's results.
        """
        calls = list(calls)
        if not calls:
            return []
        return self._run(self._inner.handle_request(calls, on_batch=on_batch))

    def submit(
        self, calls: Sequence[RpcCall], *, on_batch: OnBatch | None = None
    ) -> Future[list[RpcResult]]:
        """``handle_request(calls, on_batch=on_batch)`` started on the loop thread without
        waiting: a future of its results. A scan keeps a few parts in flight this way, with no
        thread of its own. The future is running from the start, as a started job on a pool
        is: ``cancel()`` leaves it be, so that batches already out land (and are kept by
        ``on_batch``) rather than being paid for and lost."""
        if self._closed or self._loop.closed:
            raise TransportError("this client is closed")
        done: Future[list[RpcResult]] = Future()
        done.set_running_or_notify_cancel()
        task = asyncio.run_coroutine_threadsafe(
            self._inner.handle_request(list(calls), on_batch=on_batch), self._loop.loop
        )

        def land(task: Future[list[RpcResult]]) -> None:
            try:
                done.set_result(task.result())
            except BaseException as exc:  # the batch's error, raised where it is awaited
                done.set_exception(exc)

        task.add_done_callback(land)
        return done

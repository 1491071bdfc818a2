"""JSON-RPC over HTTP: one small interface, a sync and an async twin.

A transport takes a list of ``RpcCall`` and returns one ``RpcResult`` per call, in call order::

    with HTTPTransport(url=f"{devnet.url}/v3/{devnet.api_key}") as t:
        block, chain = t.handle_request([RpcCall("eth_blockNumber", []),
                                         RpcCall("eth_chainId", [])])

``HTTPTransport`` (``httpx.Client`` + a thread pool) and ``AsyncHTTPTransport``
(``httpx.AsyncClient`` + tasks) share the request building, answer parsing, retry policy and
credit governor below; only the waiting and the sending differ. The sync twin never touches an
event loop, so it works inside a running Jupyter kernel.

What happens to each answer
---------------------------
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
from ``feeslab._costs``), cuts batches to at most the bucket's share of one of the
``max_concurrency`` batches in flight, and adapts (AIMD): a 429 halves the rate, a quiet
stretch wins it back. ``connect()`` passes the plan's rate by default.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import itertools
import json
import math
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from feeslab._costs import DEFAULT_METHOD_COST, METHOD_COSTS, http_status_cost, method_cost
from feeslab._redact import describe, register_secrets, scrub_exception, secrets_in_url
from feeslab.errors import (
    AuthError,
    ConfigError,
    CreditsExhausted,
    FeeslabError,
    ProtocolError,
    RateLimited,
    RpcError,
    TransportError,
    redact,
)
from feeslab.fetch._tls import shared_ssl_context

__all__ = [
    "AsyncHTTPTransport",
    "CreditGovernor",
    "HTTPTransport",
    "RpcCall",
    "RpcResult",
    "redact",
]

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_BATCH = 100
DEFAULT_MAX_CONCURRENCY = 8
DEFAULT_RETRIES = 5
DEFAULT_BACKOFF = 0.5
DEFAULT_BACKOFF_CAP = 30.0
RATE_LIMIT_CODE = -32005  # EIP-1474 "limit exceeded", the older deployments' 429 body
GOVERNOR_HEADROOM = 0.95
"""The governor runs at this share of ``credits_per_second``: the service measures arrivals,
not departures, so a client pacing at exactly the limit meets the odd 429."""
GOVERNOR_BURST = 0.5
"""The client's bucket holds this share of one second's credits (the service's holds a whole
second): a request the service queues before admitting it can arrive together with later
ones, and the smaller burst keeps the service's bucket ahead of ours from the first second."""
RATE_CUT = 0.5  # AIMD: a 429 multiplies the governor's rate by this
RATE_FLOOR = 1 / 64  # ... but never below this share of the ceiling
CUT_SPACING = 1.0  # [s] the 429s of one burst (every batch in flight) cut the rate once
QUIET_SECONDS = 2.0  # [s] without a 429 before the rate climbs back
RECOVERY_PER_SECOND = 0.1  # share of the ceiling won back per quiet second
DEFAULT_RATE_LIMIT_PATIENCE = 600.0
"""[s] A batch refused with 429 for this long (the waits added up) while the transport got no
request served at all raises ``RateLimited``: the hard stop for a service that answers
nothing but 429. 429s are not failures counted against ``retries``."""

_USER_AGENT = "feeslab-fetch"
OnBatch = Callable[[Sequence["RpcCall"], list["RpcResult"]], None]
"""``on_batch(calls, results)``: one batch's answers, as they arrive."""
_T = TypeVar("_T")
_KEY_IN_URL = re.compile(r"/v3/([^/?#]+)")


# -- the interface ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RpcCall:
    """One JSON-RPC call: ``method`` and positional ``params``."""

    method: str
    params: list = field(default_factory=list)


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


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


# -- the credit governor ---------------------------------------------------------------------


class CreditGovernor:
    """A client-side token bucket charged ``method_cost`` credits per call, adaptive (AIMD).

    It mirrors the service's governor (``feeslab/devnet/credits.py`` models it): refilled
    continuously, a request may go when the bucket is positive and then takes its whole cost;
    it holds ``GOVERNOR_BURST`` of a second's worth where the service holds one second's.
    ``reserve`` books a request and says how long to wait first, so concurrent callers queue
    fairly without holding a lock while they wait.

    It runs at ``GOVERNOR_HEADROOM`` of the plan's rate (the *ceiling*). When 429s come anyway
    (another client on the same key, a plan smaller than assumed) ``rate_limited`` empties the
    bucket until the service's ``Retry-After`` has passed and halves the rate (once per
    ``CUT_SPACING``, however many batches in flight were refused together, never below
    ``RATE_FLOOR`` of the ceiling); after ``QUIET_SECONDS`` without a 429, ``served`` wins the
    rate back by ``RECOVERY_PER_SECOND`` of the ceiling per second, up to the ceiling.

    Parameters
    ----------
    credits_per_second : float
        The plan's throughput [credits/s]; the bucket runs at ``GOVERNOR_HEADROOM`` of it.
    clock : callable
        Monotonic seconds (injectable for tests).

    Attributes
    ----------
    ceiling : float
        The rate it runs at without 429s [credits/s].
    rate : float
        The rate it runs at now [credits/s].
    cuts : int
        How many times a 429 halved the rate.
    """

    def __init__(
        self, credits_per_second: float, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not credits_per_second > 0:
            raise ConfigError("credits_per_second must be > 0 (or None to disable the governor)")
        self.ceiling = credits_per_second * GOVERNOR_HEADROOM
        self.rate = self.ceiling
        self.cuts = 0
        self._clock = clock
        self._level = self.rate * GOVERNOR_BURST
        self._t = clock()
        self._last_cut = -math.inf
        self._last_429 = -math.inf
        self._last_raise = self._t
        self._lock = threading.Lock()
        self._told: Future | None = None

    def follow(self, told: Future) -> None:
        """Take the plan's rate from ``told`` (a future of credits/s, or None: keep this one)
        once it is known, without waiting for it (``connect`` asks a devnet for its limit while
        the first requests go)."""
        self._told = told

    def settle(self, timeout: float | None = None) -> None:
        """Wait (up to ``timeout`` [s]) for the rate ``follow`` was given, and take it."""
        told = self._told
        if told is not None:
            with contextlib.suppress(Exception):  # unknown: keep pacing at the rate we have
                told.result(timeout)
            self._take_told()

    def _take_told(self) -> None:
        told = self._told
        if told is None or not told.done():
            return
        self._told = None
        rate = None if told.cancelled() or told.exception() else told.result()
        if rate:
            with self._lock:
                self._refill(self._clock())
                cut = self.rate / self.ceiling  # keep a slow-down a 429 has made
                self.ceiling = rate * GOVERNOR_HEADROOM
                self.rate = self.ceiling * cut

    def _refill(self, now: float) -> None:
        if now > self._t:  # refill up to now (not while earlier bookings lie in the future)
            refilled = self._level + (now - self._t) * self.rate
            self._level = min(self.rate * GOVERNOR_BURST, refilled)
            self._t = now

    def reserve(self, cost: float) -> float:
        """Book ``cost`` credits; returns the seconds to wait before sending."""
        if self._told is not None:
            self._take_told()
        with self._lock:
            now = self._clock()
            self._refill(now)
            if self._level <= 0:
                # the bucket turns positive at this time; book our start there
                self._t += (-self._level) / self.rate + 1e-3
                self._level = 1e-3 * self.rate
            self._level -= cost
            return max(0.0, self._t - now)

    def batch_credits(self, concurrency: int) -> float:
        """The most credits one batch should carry [credits]: the ceiling's one-second bucket
        shared by the ``concurrency`` batches in flight, so none of them overdraws it alone."""
        self.settle(timeout=5.0)  # a big fetch's batches: worth the plan's own rate
        return self.ceiling / max(1, concurrency)

    def rate_limited(self, wait: float | None = None) -> None:
        """A 429 (or -32005) came: nothing goes before ``wait`` seconds, and the rate halves."""
        with self._lock:
            now = self._clock()
            self._refill(now)
            # the quiet stretch starts when the service lets requests in again
            self._last_429 = max(self._last_429, now + (wait or 0.0))
            if now - self._last_cut >= CUT_SPACING:
                self.rate = max(self.ceiling * RATE_FLOOR, self.rate * RATE_CUT)
                self._last_cut = now
                self.cuts += 1
            # the service's bucket is empty at least until it said; ours too
            self._level = min(self._level, 0.0)
            self._t = max(self._t, now + (wait or 0.0))

    def served(self) -> None:
        """A request was served: after a quiet stretch, win rate back towards the ceiling."""
        with self._lock:
            now = self._clock()
            if self.rate >= self.ceiling:
                return
            quiet_since = self._last_429 + QUIET_SECONDS
            if now <= quiet_since:
                return
            self._refill(now)
            gained = (now - max(self._last_raise, quiet_since)) * RECOVERY_PER_SECOND
            self.rate = min(self.ceiling, self.rate + gained * self.ceiling)
            self._last_raise = now

    def __repr__(self) -> str:
        return f"CreditGovernor(rate={self.rate:,.0f}/s, ceiling={self.ceiling:,.0f}/s)"


# -- request building and answer parsing (shared by the twins) ---------------------------------


class _Stopped(Exception):
    """Internal: another batch of the same request failed; this one was not sent."""


class _Retry(Exception):
    """Internal: this attempt failed in a way worth another try."""

    def __init__(self, error: FeeslabError, wait: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.wait = wait  # what the service asked for, if it said


def _build_body(calls: Sequence[RpcCall], ids: Sequence[int]) -> bytes:
    items = [
        {"jsonrpc": "2.0", "id": i, "method": c.method, "params": c.params}
        for c, i in zip(calls, ids, strict=True)
    ]
    payload: Any = items[0] if len(items) == 1 else items
    return json.dumps(payload, separators=(",", ":")).encode()


def _retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header: delta-seconds or an HTTP-date."""
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


def _backoff_seconds(body: Any) -> float | None:
    """``error.data.backoff_seconds`` from an older deployment's -32005 body (or item)."""
    error = body.get("error") if isinstance(body, Mapping) else None
    data = error.get("data") if isinstance(error, Mapping) else None
    value = data.get("backoff_seconds") if isinstance(data, Mapping) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def _json_or_none(content: bytes) -> Any:
    try:
        return json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None


def _service_says(body: Any, content: bytes) -> str:
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
class _Outcome:
    """What one HTTP answer settled: answers by id, and the ids to send again."""

    answered: dict[int, RpcResult]
    retry_ids: list[int]
    rate_limited: int = 0  # how many of retry_ids came back -32005
    wait: float | None = None  # the service's hint for the retried ids


def _interpret(
    response: httpx.Response,
    calls: Mapping[int, RpcCall],
    *,
    secrets: Sequence[str],
    credits_spent: int,
) -> _Outcome:
    """Read one HTTP answer to the calls ``{id: call}``.

    Raises ``_Retry`` for a transient failure of the whole request and a ``FeeslabError`` for a
    final one.
    """
    status = response.status_code
    content = response.content
    body = _json_or_none(content)
    said = _service_says(body, content)
    if status == 429:
        wait = _retry_after(response.headers)
        if wait is None:
            wait = _backoff_seconds(body)
        raise _Retry(RateLimited(f"HTTP 429: {said}", retry_after=wait, secrets=secrets), wait)
    if status == 402:
        details = body.get("error", {}).get("details") if isinstance(body, Mapping) else None
        raise CreditsExhausted(credits_spent=credits_spent, details=details, secrets=secrets)
    if status in (401, 403):
        raise AuthError(f"HTTP {status}: {said}", status=status, secrets=secrets)
    if status >= 500:
        raise _Retry(TransportError(f"HTTP {status}: {said}", secrets=secrets))
    if status == 404:
        raise ConfigError(f"HTTP 404 (check the URL and network): {said}", secrets=secrets)
    if status != 200:
        raise ProtocolError(f"unexpected HTTP {status}: {said}", status=status, secrets=secrets)
    if body is None:
        raise _Retry(ProtocolError(f"the answer is not JSON: {said}", status=200, secrets=secrets))
    items = body if isinstance(body, list) else [body]
    if not all(isinstance(item, Mapping) for item in items):
        raise _Retry(ProtocolError("the answer is not JSON-RPC", status=200, secrets=secrets))
    if isinstance(body, Mapping) and body.get("id") is None and "error" in body:
        # one error for the whole request (e.g. -32600 "batch too large")
        if isinstance(body["error"], Mapping) and body["error"].get("code") == RATE_LIMIT_CODE:
            wait = _backoff_seconds(body)
            raise _Retry(RateLimited(f"HTTP 200: {said}", retry_after=wait, secrets=secrets), wait)
        raise RpcError.from_object(body["error"], secrets=secrets)
    return read_items(items, calls, secrets=secrets)


def read_items(
    items: Iterable[Any], calls: Mapping[int, RpcCall], *, secrets: Sequence[str] = ()
) -> _Outcome:
    """Match JSON-RPC answer items to the calls ``{id: call}`` (shared with ``ws.py``).

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
                return _Outcome(answered, [])
            answered = {}
    for item in items:
        if not isinstance(item, Mapping):
            continue
        rid = item.get("id")
        if not isinstance(rid, int | str):  # a list or an object as id: not one we sent
            continue
        if rid not in calls or rid in answered or rid in retry_ids:
            continue
        call = calls[rid]
        error = item.get("error")
        if error is not None:
            if isinstance(error, Mapping) and error.get("code") == RATE_LIMIT_CODE:
                retry_ids.append(rid)
                hint = _backoff_seconds(item)
                if hint is not None:
                    hints.append(hint)
                continue
            answered[rid] = RpcResult(call, error=RpcError.from_object(error, secrets=secrets))
        elif "result" in item:
            answered[rid] = RpcResult(call, result=item["result"])
    missing = [rid for rid in calls if rid not in answered and rid not in retry_ids]
    return _Outcome(answered, retry_ids + missing, len(retry_ids), max(hints) if hints else None)


_MOST_A_CALL_COSTS = max(DEFAULT_METHOD_COST, *METHOD_COSTS.values())


def _chunks(
    items: Sequence[RpcCall], size: int, max_cost: float | None = None
) -> list[Sequence[RpcCall]]:
    """``items`` in batches of at most ``size`` calls and, when given, at most ``max_cost``
    credits each (costed per call from ``feeslab._costs``; a batch holds at least one call)."""
    if max_cost is None or max_cost >= size * _MOST_A_CALL_COSTS:
        return [items[i : i + size] for i in range(0, len(items), size)]
    out: list[Sequence[RpcCall]] = []
    begin, credits = 0, 0
    costs: dict[str, int] = {}
    for i, call in enumerate(items):
        cost = costs.get(call.method)
        if cost is None:
            cost = costs[call.method] = method_cost(call.method)
        if i > begin and (i - begin >= size or credits + cost > max_cost):
            out.append(items[begin:i])
            begin, credits = i, 0
        credits += cost
    if begin < len(items):
        out.append(items[begin:])
    return out


def _secrets_of(url: str, auth: Any) -> list[str]:
    found = _KEY_IN_URL.findall(url)
    if isinstance(auth, tuple | list):
        found.extend(str(part) for part in auth)
    return found


def _check_options(
    url: str, max_batch: int, max_concurrency: int, retries: int, schemes: tuple[str, ...]
) -> None:
    if not url or not isinstance(url, str):
        raise ConfigError(f"url is required, e.g. {schemes[-1]}://mainnet.infura.io/v3/<KEY>")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        scrub_exception(exc, _secrets_of(url, 0))  # it stays chained as __context__
        raise ConfigError(f"invalid url {url!r}: {exc}", secrets=_secrets_of(url, 0)) from None
    if parsed.scheme not in schemes or not parsed.host:
        raise ConfigError(
            f"url must be a {'/'.join(schemes)} URL, not {url!r}", secrets=_secrets_of(url, 0)
        )
    if max_batch < 1 or max_concurrency < 1 or retries < 0:
        raise ConfigError("max_batch and max_concurrency must be >= 1 and retries >= 0")


class _Core:
    """Options and bookkeeping the two twins share."""

    def __init__(
        self,
        *,
        url: str,
        max_batch: int,
        max_concurrency: int,
        credits_per_second: float | None,
        retries: int,
        backoff: float,
        backoff_cap: float,
        on_response: Callable[[Sequence[RpcCall], int], None] | None,
        clock: Callable[[], float],
        rng: random.Random | None,
        auth: Any,
        schemes: tuple[str, ...] = ("http", "https"),
        rate_limit_patience: float = DEFAULT_RATE_LIMIT_PATIENCE,
    ) -> None:
        _check_options(url, max_batch, max_concurrency, retries, schemes)
        if not rate_limit_patience > 0:
            raise ConfigError("rate_limit_patience must be > 0 seconds")
        self.rate_limit_patience = rate_limit_patience
        self.url = url
        self.max_batch = max_batch
        self.max_concurrency = max_concurrency
        self.retries = retries
        self.backoff = backoff
        self.backoff_cap = backoff_cap
        self.on_response = on_response
        self.clock = clock
        self.rng = rng or random.Random()
        self.secrets = _secrets_of(url, auth)
        # and mask them in httpx's and websockets' log records (any provider's URL key too)
        register_secrets(*self.secrets, *secrets_in_url(url))
        self.governor = (
            CreditGovernor(credits_per_second, clock=clock) if credits_per_second else None
        )
        self.credits_spent = 0
        self.attempts = 0  # HTTP requests sent, all batches together
        self.served = 0  # of which served (HTTP 200)
        self.rate_limited = 0  # answers that were 429 (or a request's -32005)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._paused_until = 0.0

    def next_ids(self, n: int) -> list[int]:
        with self._lock:
            return [next(self._ids) for _ in range(n)]

    def before_send(self, calls: Iterable[RpcCall]) -> float:
        """Seconds to wait before sending: the governor's booking and any 429 pause."""
        wait = (
            self.governor.reserve(sum(method_cost(c.method) for c in calls))
            if (self.governor)
            else 0.0
        )
        return max(wait, self._paused_until - self.clock())

    def record(self, calls: Sequence[RpcCall], status: int) -> None:
        # what the service charged: every call of a served request, a fee for other 4xx
        with self._lock:
            self.attempts += 1
            if status == 200:
                self.served += 1
                methods = Counter(c.method for c in calls)
                self.credits_spent += sum(method_cost(m) * n for m, n in methods.items())
            else:
                self.credits_spent += http_status_cost(status)
        if self.on_response is not None:
            self.on_response(list(calls), status)

    def batch_cost_limit(self, calls: Sequence[RpcCall]) -> float | None:
        """The most credits a batch of ``calls`` may carry (None: only ``max_batch`` limits)."""
        governor = self.governor
        if governor is None:
            return None
        if len(calls) * _MOST_A_CALL_COSTS <= governor.ceiling / self.max_concurrency:
            return None  # too few to cut: no need to wait for the plan's own rate
        return governor.batch_credits(self.max_concurrency)

    def backoff_wait(self, attempt: int, hint: float | None, rate_limited: bool) -> float:
        if hint is not None:
            wait = hint
        else:
            wait = self.rng.uniform(0, min(self.backoff_cap, self.backoff * 2**attempt))
        if rate_limited:
            with self._lock:
                self.rate_limited += 1
            if self.governor is not None:
                # slow down, and hold every batch until the service's bucket refills
                self.governor.rate_limited(wait)
            # pause the whole transport; before_send makes every batch (this one too) wait
            with self._lock:
                self._paused_until = max(self._paused_until, self.clock() + wait)
            return 0.0
        return wait

    def note_served(self) -> None:
        if self.governor is not None:
            self.governor.served()

    def interpret(self, response: httpx.Response, pending: Mapping[int, RpcCall]) -> _Outcome:
        self.record(list(pending.values()), response.status_code)
        return _interpret(response, pending, secrets=self.secrets, credits_spent=self.credits_spent)

    def partial_failure(self, outcome: _Outcome) -> _Retry | None:
        """Why some calls of a served request must go again (None: their answers were lost)."""
        if not outcome.rate_limited:
            return None
        error = RateLimited(
            f"{outcome.rate_limited} call(s) answered -32005 (limit exceeded)",
            retry_after=outcome.wait,
        )
        return _Retry(error, outcome.wait)

    def give_up(self, failure: _Retry | None, missing: int, attempts: int) -> FeeslabError:
        if failure is None:
            return ProtocolError(
                f"{missing} call(s) never came back (no answer with their id) after "
                f"{attempts} attempts",
                status=200,
            )
        error = failure.error
        if isinstance(error, RateLimited):
            error.attempts = attempts
            error.message = redact(f"{error.message} (gave up after {attempts} attempts)")
            error.args = (error.message,)
        return error

    def transport_error(self, exc: httpx.HTTPError) -> _Retry:
        # the cause keeps its type; its request shows no key
        error = TransportError(describe(exc, self.secrets), secrets=self.secrets)
        error.__cause__ = exc
        return _Retry(error)

    def batch_steps(
        self, calls: Sequence[RpcCall], stop: threading.Event | None
    ) -> Generator[tuple[str, Any], Any, list[RpcResult]]:
        """One batch's attempts, as steps for a sync or async driver (``_send_batch``).

        Yields ``("sleep", seconds)`` (answered with None) and ``("post", body)`` (answered
        with the httpx response, or with the httpx error thrown in); returns the results.

        A 429 (or -32005) is not a failure: the batch waits as told (the governor slows down)
        and goes again, however often, as long as the service serves some request now and
        then. Only when the transport got nothing served while this batch waited out
        ``rate_limit_patience`` seconds of 429s does it raise ``RateLimited``. Other transient
        failures count against ``retries``.
        """
        ids = self.next_ids(len(calls))
        pending = dict(zip(ids, calls, strict=True))
        done: dict[int, RpcResult] = {}
        failure: _Retry | None = None
        failures = 0  # transient failures other than 429s: bounded by retries
        refusals = 0  # 429s in a row (the backoff's exponent when the service gives no wait)
        starved = 0.0  # seconds of 429 waits since the transport last got a request served
        served_seen = self.served
        while True:
            wait = self.before_send(pending.values())
            if wait > 0:
                yield ("sleep", wait)
            if stop is not None and stop.is_set():
                raise _Stopped
            body = _build_body(list(pending.values()), list(pending))
            try:
                response = yield ("post", body)
                outcome = self.interpret(response, pending)
            except _Retry as retry:
                failure = retry
            except httpx.HTTPError as exc:
                failure = self.transport_error(exc)
            except FeeslabError:
                if stop is not None:
                    stop.set()
                raise
            else:
                self.note_served()
                done.update(outcome.answered)
                pending = {rid: pending[rid] for rid in outcome.retry_ids}
                if not pending:
                    break
                failure = self.partial_failure(outcome)
            if failure is not None and isinstance(failure.error, RateLimited):
                if self.served != served_seen:  # the service serves: not starving
                    served_seen, starved = self.served, 0.0
                wait = failure.wait
                if wait is None:
                    wait = self.rng.uniform(0, min(self.backoff_cap, self.backoff * 2**refusals))
                refusals += 1
                starved += wait
                if starved > self.rate_limit_patience:
                    raise self.starved(failure, starved, refusals)
                self.backoff_wait(refusals, wait, True)  # pauses the transport, slows down
                continue
            refusals = 0
            failures += 1
            if failures > self.retries:
                raise self.give_up(failure, len(pending), failures)
            wait = self.backoff_wait(failures - 1, failure.wait if failure else None, False)
            if wait > 0:
                yield ("sleep", wait)
        return [done[rid] for rid in ids]

    def starved(self, failure: _Retry, seconds: float, refusals: int) -> RateLimited:
        """The hard stop: only 429s for ``rate_limit_patience`` seconds."""
        last = failure.error
        return RateLimited(
            f"{last}; the service answered only 429 (rate limited) for {seconds:,.0f} s "
            f"({refusals} refusals in a row, no request served meanwhile), past "
            f"rate_limit_patience={self.rate_limit_patience:g} s",
            retry_after=last.retry_after if isinstance(last, RateLimited) else None,
            attempts=refusals,
            secrets=self.secrets,
        )


async def gather_or_cancel(coros: Sequence[Awaitable[_T]]) -> list[_T]:
    """Run ``coros`` concurrently; results in order.

    On the first failure the others are cancelled (a 402 should not let seven more batches
    knock on the door) and that failure is raised, not a sibling's ``_Stopped``.
    """
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    errors = [t.exception() for t in tasks if not t.cancelled() and t.exception() is not None]
    real = [e for e in errors if not isinstance(e, _Stopped)]
    if real or errors:
        raise (real or errors)[0]
    return [task.result() for task in tasks]


def _client_kwargs(
    url: str, timeout: Any, headers: Mapping[str, str] | None, auth: Any
) -> dict[str, Any]:
    merged = {"Content-Type": "application/json", "User-Agent": _USER_AGENT}
    merged.update(headers or {})
    timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
    return {"headers": merged, "timeout": timeout, "auth": auth, "verify": shared_ssl_context()}


# -- async ---------------------------------------------------------------------------------------


class _CoreReports:
    """What every transport reports from its ``_Core``: a repr without secrets, and counts."""

    _core: _Core

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._where()}>"

    def _where(self) -> str:
        """The endpoint, with any key or secret in it masked."""
        return redact(self._core.url, self._core.secrets)

    @property
    def credits_spent(self) -> int:
        """Credits the service charged this transport so far (by the cost table)."""
        return self._core.credits_spent

    @property
    def attempts(self) -> int:
        """Requests sent so far, retries included."""
        return self._core.attempts

    @property
    def rate_limited(self) -> int:
        """Answers so far that were HTTP 429 (or -32005, limit exceeded), each waited out."""
        return self._core.rate_limited

    @property
    def governor(self) -> CreditGovernor | None:
        """The pacing: ``rate``, ``ceiling`` [credits/s] and ``cuts``; None when unpaced."""
        return self._core.governor


class AsyncHTTPTransport(_CoreReports):
    """JSON-RPC over HTTP for ``asyncio`` code.

    Parameters
    ----------
    url : str
        The node endpoint, e.g. ``https://mainnet.infura.io/v3/<KEY>``.
    max_batch : int
        Calls per HTTP request; longer lists are split (default 100).
    max_concurrency : int
        Requests in flight at once (default 8).
    credits_per_second : float, optional
        Pace requests with a client-side token bucket (`CreditGovernor`) charged
        ``feeslab._costs.method_cost`` per call, so that a big scan stays under the plan's
        throughput [credits/s]; batches are then also cut to at most the bucket's share of one
        batch in flight (``rate / max_concurrency`` credits). None (the default here; ``connect``
        passes the plan's rate) disables both.
    retries : int
        Further attempts after a 5xx, malformed answer or network error (default 5). A 429 is
        not counted: it is waited out (``Retry-After``) and the governor slows down.
    rate_limit_patience : float
        The hard stop for 429s [s]: a batch that has waited this long on 429s while no request
        of the transport was served raises ``RateLimited`` (default 600).
    backoff, backoff_cap : float
        Base and cap (seconds) of the exponential backoff with full jitter.
    timeout : float or httpx.Timeout
        Per request (default 30 s).
    headers : mapping, optional
        Extra request headers.
    auth : tuple or httpx.Auth, optional
        E.g. ``(key, secret)`` for HTTP Basic.
    transport : httpx.AsyncBaseTransport, optional
        An httpx transport to send through (e.g. ``httpx.MockTransport`` in tests).
    on_response : callable, optional
        ``on_response(calls, http_status)`` after every HTTP answer, for a credits ledger.
    sleep : callable, optional
        ``await sleep(seconds)``; default ``asyncio.sleep`` (injectable for tests).
    clock : callable, optional
        Monotonic seconds for the governor; default ``time.monotonic``.
    rng : random.Random, optional
        Source of the backoff jitter.
    """

    def __init__(
        self,
        *,
        url: str,
        max_batch: int = DEFAULT_MAX_BATCH,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        credits_per_second: float | None = None,
        retries: int = DEFAULT_RETRIES,
        rate_limit_patience: float = DEFAULT_RATE_LIMIT_PATIENCE,
        backoff: float = DEFAULT_BACKOFF,
        backoff_cap: float = DEFAULT_BACKOFF_CAP,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        transport: httpx.AsyncBaseTransport | None = None,
        on_response: Callable[[Sequence[RpcCall], int], None] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self._core = _Core(
            url=url,
            max_batch=max_batch,
            max_concurrency=max_concurrency,
            credits_per_second=credits_per_second,
            retries=retries,
            backoff=backoff,
            backoff_cap=backoff_cap,
            on_response=on_response,
            clock=clock,
            rng=rng,
            auth=auth,
            rate_limit_patience=rate_limit_patience,
        )
        self._sleep = sleep
        self._client = httpx.AsyncClient(
            transport=transport, **_client_kwargs(url, timeout, headers, auth)
        )

    async def handle_request(
        self, calls: Sequence[RpcCall], *, on_batch: OnBatch | None = None
    ) -> list[RpcResult]:
        """Send ``calls`` (split into batches, run concurrently); results in call order.

        ``on_batch(calls, results)`` runs as each batch's answers arrive (e.g. to store them
        before the other batches end).
        """
        calls = list(calls)
        if not calls:
            return []
        limit = asyncio.Semaphore(self._core.max_concurrency)

        stop = threading.Event()

        async def run(chunk: Sequence[RpcCall]) -> list[RpcResult]:
            async with limit:
                results = await self._send_batch(chunk, stop)
            if on_batch is not None:
                on_batch(chunk, results)
            return results

        chunks = _chunks(calls, self._core.max_batch, self._core.batch_cost_limit(calls))
        parts = await gather_or_cancel([run(c) for c in chunks])
        return [result for part in parts for result in part]

    async def _send_batch(
        self, calls: Sequence[RpcCall], stop: threading.Event | None = None
    ) -> list[RpcResult]:
        steps = self._core.batch_steps(calls, stop)
        reply: Any = None
        thrown: BaseException | None = None
        while True:
            try:
                kind, arg = steps.throw(thrown) if thrown else steps.send(reply)
            except StopIteration as finished:
                return finished.value
            reply, thrown = None, None
            if kind == "sleep":
                await self._sleep(arg)
            else:
                try:
                    reply = await self._client.post(self._core.url, content=arg)
                except httpx.HTTPError as exc:
                    thrown = exc

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def __aenter__(self) -> AsyncHTTPTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# -- sync ----------------------------------------------------------------------------------------


class HTTPTransport(_CoreReports):
    """JSON-RPC over HTTP, blocking: the twin of ``AsyncHTTPTransport``.

    Batches run on a private thread pool through one ``httpx.Client``; no event loop is used,
    so it is safe to call from a Jupyter cell (where a loop is already running).

    Parameters
    ----------
    url, max_batch, max_concurrency, credits_per_second, retries, rate_limit_patience,
    backoff, backoff_cap, timeout, headers, auth, on_response, clock, rng
        As for ``AsyncHTTPTransport``.
    transport : httpx.BaseTransport, optional
        An httpx transport to send through (e.g. ``httpx.MockTransport``).
    sleep : callable, optional
        ``sleep(seconds)``; default ``time.sleep``.
    """

    def __init__(
        self,
        *,
        url: str,
        max_batch: int = DEFAULT_MAX_BATCH,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        credits_per_second: float | None = None,
        retries: int = DEFAULT_RETRIES,
        rate_limit_patience: float = DEFAULT_RATE_LIMIT_PATIENCE,
        backoff: float = DEFAULT_BACKOFF,
        backoff_cap: float = DEFAULT_BACKOFF_CAP,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        transport: httpx.BaseTransport | None = None,
        on_response: Callable[[Sequence[RpcCall], int], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self._core = _Core(
            url=url,
            max_batch=max_batch,
            max_concurrency=max_concurrency,
            credits_per_second=credits_per_second,
            retries=retries,
            backoff=backoff,
            backoff_cap=backoff_cap,
            on_response=on_response,
            clock=clock,
            rng=rng,
            auth=auth,
            rate_limit_patience=rate_limit_patience,
        )
        self._sleep = sleep
        limits = httpx.Limits(max_connections=max(max_concurrency, 10))
        self._client = httpx.Client(
            transport=transport, limits=limits, **_client_kwargs(url, timeout, headers, auth)
        )
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def handle_request(
        self, calls: Sequence[RpcCall], *, on_batch: OnBatch | None = None
    ) -> list[RpcResult]:
        """Send ``calls`` (split into batches, run concurrently); results in call order.

        ``on_batch(calls, results)`` runs (on a worker thread) as each batch's answers arrive,
        e.g. to store them before the other batches end.
        """
        calls = list(calls)
        if not calls:
            return []
        chunks = _chunks(calls, self._core.max_batch, self._core.batch_cost_limit(calls))
        if len(chunks) == 1:
            return self._send_batch(chunks[0], None, on_batch)
        stop = threading.Event()
        futures = [
            self._executor().submit(self._send_batch, chunk, stop, on_batch) for chunk in chunks
        ]
        try:
            parts = [future.result() for future in futures]
        except BaseException:
            # a failure stops the batches not yet sent (a 402 should not let seven more knock);
            # raise the real error, not a sibling's _Stopped
            stop.set()
            for future in futures:
                future.cancel()
            for future in futures:
                error = None if future.cancelled() else future.exception()
                if error is not None and not isinstance(error, _Stopped):
                    raise error from None
            raise
        return [result for part in parts for result in part]

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self._core.max_concurrency, thread_name_prefix="feeslab-fetch"
                )
            return self._pool

    def _send_batch(
        self,
        calls: Sequence[RpcCall],
        stop: threading.Event | None = None,
        on_batch: OnBatch | None = None,
    ) -> list[RpcResult]:
        steps = self._core.batch_steps(calls, stop)
        reply: Any = None
        thrown: BaseException | None = None
        while True:
            try:
                kind, arg = steps.throw(thrown) if thrown else steps.send(reply)
            except StopIteration as finished:
                if on_batch is not None:
                    on_batch(calls, finished.value)
                return finished.value
            reply, thrown = None, None
            if kind == "sleep":
                self._sleep(arg)
            else:
                try:
                    reply = self._client.post(self._core.url, content=arg)
                except httpx.HTTPError as exc:
                    thrown = exc

    def close(self) -> None:
        """Close the connection pool and the worker threads."""
        with self._pool_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None
        self._client.close()

    def __enter__(self) -> HTTPTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

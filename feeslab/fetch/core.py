"""What every client of the fetch layer shares: the limits, the credit governor and one
batch's attempts (the retry policy and its driver are ``feeslab.fetch.retry``'s).

``Retry`` and ``Limits`` follow httpx's ``Timeout``/``Limits``: small values given once and
read by every client (JSON-RPC over HTTP and WebSocket, the storage API, the Gas API), so all
of them back off the same way (exponential with full jitter: attempt ``n`` waits
``uniform(0, min(cap, base * 2**n))``, or what the service said) and read ``Retry-After`` the
same way (seconds or an HTTP-date).

``RpcCore`` holds a JSON-RPC transport's options and bookkeeping (ids, pacing, the 429 pause,
the budgets, what was sent) and ``send_batch`` runs one batch's attempts over any ``exchange``
(an HTTP POST, a WebSocket message) with the one retry driver (``retry.drive``): the HTTP and
WebSocket transports differ only in that exchange. ``RpcCore.before_send`` is the one place a
budget is charged (``charging``), and ``RpcCore.record`` the one place a refused request's
credits are given back.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import random
import re
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict, TypeVar, Unpack

import httpx

from feeslab._redact import register_secrets, scrub_exception, secrets_in_url
from feeslab.errors import ConfigError, FeeslabError, ProtocolError, RateLimited, redact
from feeslab.fetch.credits import Budget, CreditLedger
from feeslab.fetch.jsonrpc import MOST_A_CALL_COSTS, Outcome, RpcCall, RpcResult
from feeslab.fetch.retry import (
    DEFAULT_BACKOFF,
    DEFAULT_BACKOFF_CAP,
    DEFAULT_RATE_LIMIT_PATIENCE,
    DEFAULT_RETRIES,
    Retry,
    Retryable,
    drive,
    retry_after,
)
from feeslab.protocol.costs import TokenBucket, http_status_cost, method_cost

__all__ = [
    "DEFAULT_BACKOFF",
    "DEFAULT_BACKOFF_CAP",
    "DEFAULT_RATE_LIMIT_PATIENCE",
    "DEFAULT_RETRIES",
    "CreditGovernor",
    "Governor",
    "Limits",
    "PolicyOptions",
    "Retry",
    "Retryable",
    "RpcCore",
    "Stopped",
    "TransportOptions",
    "TransportReports",
    "check_url",
    "gather_or_cancel",
    "make_policies",
    "retry_after",
    "secrets_of",
    "send_batch",
]

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_BATCH = 100
DEFAULT_MAX_CONCURRENCY = 8
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

_T = TypeVar("_T")
_KEY_IN_URL = re.compile(r"/v3/([^/?#]+)")


# -- the policies --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """How much a client sends at once.

    Parameters
    ----------
    max_batch : int
        Calls per JSON-RPC request; longer lists are split.
    max_concurrency : int
        Requests in flight at once.
    timeout : float or httpx.Timeout
        Per request [s].
    """

    max_batch: int = DEFAULT_MAX_BATCH
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    timeout: float | httpx.Timeout = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        if self.max_batch < 1 or self.max_concurrency < 1:
            raise ConfigError("max_batch and max_concurrency must be >= 1 and retries >= 0")

    @property
    def seconds(self) -> float | None:
        """The timeout as one number [s] (httpx's read timeout for an ``httpx.Timeout``)."""
        timeout = self.timeout
        return timeout.read if isinstance(timeout, httpx.Timeout) else timeout

    def httpx_timeout(self) -> httpx.Timeout:
        timeout = self.timeout
        return timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)


class PolicyOptions(TypedDict, total=False):
    """The flat keywords of ``Limits`` and ``Retry`` a transport takes instead of them (None:
    the default; see ``make_policies``)."""

    max_batch: int | None
    max_concurrency: int | None
    timeout: float | httpx.Timeout | None
    retries: int | None
    backoff: float | None
    backoff_cap: float | None
    rate_limit_patience: float | None
    rng: random.Random | None


class TransportOptions(PolicyOptions, total=False):
    """What every JSON-RPC transport hands on to ``RpcCore.build`` (documented at
    ``feeslab.fetch.transport.AsyncHTTPTransport``)."""

    limits: Limits | None
    retry: Retry | None
    credits_per_second: float | None
    governor: Governor | None
    ledger: CreditLedger | None
    budget: Budget | None
    on_response: Callable[[Sequence[RpcCall], int], None] | None
    clock: Callable[[], float]


# -- the credit governor ---------------------------------------------------------------------


class Governor(Protocol):
    """What paces a transport: a ``CreditGovernor``, or anything with its methods (a
    cluster's bucket shared by many transports, ``feeslab.cluster``)."""

    ceiling: float
    rate: float
    cuts: int

    def settle(self, timeout: float | None = None) -> None: ...
    def reserve(self, cost: float) -> float: ...
    def batch_credits(self, concurrency: int) -> float: ...
    def rate_limited(self, wait: float | None = None) -> None: ...
    def served(self) -> None: ...


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
        self.cuts = 0
        self._clock = clock
        self._bucket = TokenBucket(self.ceiling, burst=GOVERNOR_BURST, now=clock())
        self._last_cut = -math.inf
        self._last_429 = -math.inf
        self._last_raise = self._bucket.t
        self._lock = threading.Lock()
        self._told: Future[float | None] | None = None

    def follow(self, told: Future[float | None]) -> None:
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

    @property
    def rate(self) -> float:
        return self._bucket.rate

    @rate.setter
    def rate(self, value: float) -> None:
        self._bucket.rate = value

    def _refill(self, now: float) -> None:
        self._bucket.refill(now)  # not while earlier bookings lie in the future

    def reserve(self, cost: float) -> float:
        """Book ``cost`` credits; returns the seconds to wait before sending."""
        if self._told is not None:
            self._take_told()
        with self._lock:
            now = self._clock()
            bucket = self._bucket
            bucket.refill(now)
            if bucket.level <= 0:
                # the bucket turns positive at this time; book our start there
                bucket.t += bucket.seconds_to_positive() + 1e-3
                bucket.level = 1e-3 * bucket.rate
            bucket.level -= cost
            return max(0.0, bucket.t - now)

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
            self._bucket.level = min(self._bucket.level, 0.0)
            self._bucket.t = max(self._bucket.t, now + (wait or 0.0))

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


# -- one batch's attempts ---------------------------------------------------------------------


class Stopped(Exception):
    """Another batch of the same request failed; this one was not sent."""


LAND_WITHIN = 5.0  # [s] a request already out when a sibling batch fails is let land this long
# the tasks whose request is out (send_batch's exchange): its answer is charged for, landed or not
_EXCHANGING: weakref.WeakSet[asyncio.Future[object]] = weakref.WeakSet()


async def gather_or_cancel(coros: Sequence[Awaitable[_T]]) -> list[_T]:
    """Run ``coros`` concurrently; results in order.

    On the first failure the others still to send are cancelled (a 402 should not let seven
    more batches knock on the door), those whose request is out are let land first, for
    :data:`LAND_WITHIN` at most: the service has charged for their answers, and what runs as
    they land (``on_batch``: a scan's resume notes) keeps them. Then that failure is raised,
    not a sibling's ``Stopped``.
    """
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        out = [task for task in tasks if not task.done() and task in _EXCHANGING]
        for task in tasks:
            if not task.done() and task not in _EXCHANGING:
                task.cancel()
        if out:
            await asyncio.wait(out, timeout=LAND_WITHIN)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    errors = [e for t in tasks if not t.cancelled() and (e := t.exception()) is not None]
    real = [e for e in errors if not isinstance(e, Stopped)]
    if real or errors:
        raise (real or errors)[0]
    return [task.result() for task in tasks]


def secrets_of(url: str, auth: object) -> list[str]:
    """The key in a ``/v3/<key>`` URL and the parts of a ``(key, secret)`` auth."""
    found = _KEY_IN_URL.findall(url)
    if isinstance(auth, tuple | list):
        found.extend(str(part) for part in auth)
    return found


def check_url(url: str, schemes: tuple[str, ...]) -> None:
    """``ConfigError`` unless ``url`` is an absolute URL of one of ``schemes``."""
    if not url or not isinstance(url, str):
        raise ConfigError(f"url is required, e.g. {schemes[-1]}://mainnet.infura.io/v3/<KEY>")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        scrub_exception(exc, secrets_of(url, 0))  # it stays chained as __context__
        raise ConfigError(f"invalid url {url!r}: {exc}", secrets=secrets_of(url, 0)) from None
    if parsed.scheme not in schemes or not parsed.host:
        raise ConfigError(
            f"url must be a {'/'.join(schemes)} URL, not {url!r}", secrets=secrets_of(url, 0)
        )


class RpcCore:
    """A JSON-RPC transport's options and bookkeeping, whatever carries its messages.

    Parameters
    ----------
    url : str
    limits : Limits
    retry : Retry
    credits_per_second : float or None
        Pace with a ``CreditGovernor`` at this rate [credits/s]; None: unpaced.
    governor : Governor, optional
        Pace with this instead (a ``CreditGovernor`` made by the caller, or a cluster's bucket
        shared by many transports); not with ``credits_per_second``.
    on_response : callable or None
        ``on_response(calls, status)`` after every answer: the credit ledger's hook.
    clock : callable
        Monotonic seconds.
    auth : object
        ``(key, secret)`` or None: masked like the key in the URL.
    schemes : tuple of str
        The URL schemes this transport speaks.
    ledger : CreditLedger, optional
        The one count of credits: what every answer cost is booked there (a private ledger
        when None), and ``credits_spent`` and ``CreditsExhausted`` report its total.
    budget : Budget, optional
        Charged each request's price before it is sent (``BudgetExceeded`` instead of
        sending past it); a request that turns out free (429, 5xx, 402) is refunded. More
        budgets are charged while inside :meth:`charging`.
    """

    def __init__(
        self,
        *,
        url: str,
        limits: Limits,
        retry: Retry,
        credits_per_second: float | None,
        on_response: Callable[[Sequence[RpcCall], int], None] | None,
        clock: Callable[[], float],
        auth: object,
        schemes: tuple[str, ...] = ("http", "https"),
        ledger: CreditLedger | None = None,
        budget: Budget | None = None,
        governor: Governor | None = None,
    ) -> None:
        check_url(url, schemes)
        if governor is not None and credits_per_second is not None:
            raise ConfigError("give credits_per_second= or governor=, not both")
        self.ledger = ledger if ledger is not None else CreditLedger()
        # every budget each request is charged against: the transport's own, then those of
        # the fetches running (``charging``, nested); swapped whole, read without a lock
        self.budgets: tuple[Budget, ...] = () if budget is None else (budget,)
        self.url = url
        self.limits = limits
        self.retry = retry
        self.max_batch = limits.max_batch
        self.max_concurrency = limits.max_concurrency
        self.on_response = on_response
        self.clock = clock
        self.secrets = secrets_of(url, auth)
        # and mask them in httpx's and websockets' log records (any provider's URL key too)
        register_secrets(*self.secrets, *secrets_in_url(url))
        self.governor: Governor | None = governor or (
            CreditGovernor(credits_per_second, clock=clock) if credits_per_second else None
        )
        self.attempts = 0  # requests sent, all batches together
        self.served = 0  # of which served (HTTP 200)
        self.rate_limited = 0  # answers that were 429 (or a request's -32005)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._paused_until = 0.0

    @classmethod
    def build(
        cls,
        *,
        url: str,
        auth: object = None,
        schemes: tuple[str, ...] = ("http", "https"),
        limits: Limits | None = None,
        retry: Retry | None = None,
        credits_per_second: float | None = None,
        governor: Governor | None = None,
        ledger: CreditLedger | None = None,
        budget: Budget | None = None,
        on_response: Callable[[Sequence[RpcCall], int], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        **flat: Unpack[PolicyOptions],
    ) -> RpcCore:
        """A core from a transport's keywords: ``limits``/``retry`` or their flat keywords
        (``max_batch``, ``retries``, ...; see ``make_policies``), and the rest as above."""
        limits, retry = make_policies(limits, retry, flat)
        return cls(url=url, limits=limits, retry=retry, credits_per_second=credits_per_second,
                   on_response=on_response, clock=clock, auth=auth, schemes=schemes,
                   ledger=ledger, budget=budget, governor=governor)  # fmt: skip

    def next_ids(self, n: int) -> list[int]:
        with self._lock:
            return [next(self._ids) for _ in range(n)]

    @property
    def credits_spent(self) -> int:
        """What the ledger counts [credits]."""
        return self.ledger.spent

    def served_count(self) -> int:
        """Requests served so far (HTTP 200): a 429 streak is the hard stop only while this
        stands still."""
        return self.served

    @contextlib.contextmanager
    def charging(self, budget: Budget | None) -> Iterator[None]:
        """Charge ``budget`` too with each request's price before it is sent, while inside:
        ``BudgetExceeded`` instead of sending past it (nested, every enclosing budget is
        charged as well). None: nothing changes."""
        if budget is None:
            yield
            return
        previous = self.budgets
        self.budgets = (*previous, budget)
        try:
            yield
        finally:
            self.budgets = previous

    def before_send(self, calls: Iterable[RpcCall]) -> float:
        """Seconds to wait before sending: the governor's booking and any 429 pause.

        Every budget is charged here first, the one place a request is charged: on
        ``BudgetExceeded`` nothing is sent and nothing stays charged.
        """
        governor, budgets = self.governor, self.budgets
        cost = sum(method_cost(c.method) for c in calls) if governor or budgets else 0
        if budgets:
            _charge_all(budgets, cost)
        wait = governor.reserve(cost) if governor else 0.0
        return max(wait, self._paused_until - self.clock())

    def record(self, calls: Sequence[RpcCall], status: int) -> None:
        """Book one answer with the ledger (and give a refused request's budget back)."""
        with self._lock:
            self.attempts += 1
            if status == 200:
                self.served += 1
        if self.budgets and status != 200:
            charged = sum(method_cost(c.method) for c in calls)
            for budget in self.budgets:
                budget.refund(charged - http_status_cost(status))
        self.ledger.record_request(calls, status)
        if self.on_response is not None:
            self.on_response(list(calls), status)

    def chunks_limit(self, calls: Sequence[RpcCall]) -> float | None:
        """The most credits a batch of ``calls`` may carry (None: only ``max_batch`` limits)."""
        governor = self.governor
        if governor is None:
            return None
        if len(calls) * MOST_A_CALL_COSTS <= governor.ceiling / self.max_concurrency:
            return None  # too few to cut: no need to wait for the plan's own rate
        return governor.batch_credits(self.max_concurrency)

    def refused(self, wait: float) -> None:
        """A 429 (or -32005): slow down, and pause every batch for ``wait`` seconds."""
        with self._lock:
            self.rate_limited += 1
        if self.governor is not None:
            # slow down, and hold every batch until the service's bucket refills
            self.governor.rate_limited(wait)
        # pause the whole transport; before_send makes every batch (this one too) wait
        with self._lock:
            self._paused_until = max(self._paused_until, self.clock() + wait)

    def partial_failure(self, outcome: Outcome) -> Retryable:
        """Why some calls of a served request must go again: -32005 items, or ids missing."""
        if outcome.rate_limited:
            error: FeeslabError = RateLimited(
                f"{outcome.rate_limited} call(s) answered -32005 (limit exceeded)",
                retry_after=outcome.wait,
            )
            return Retryable(error, outcome.wait)
        error = ProtocolError(
            f"{len(outcome.retry_ids)} call(s) never came back (no answer with their id) "
            f"after {self.retry.retries + 1} attempts",
            status=200,
        )
        return Retryable(error)


def _charge_all(budgets: Sequence[Budget], cost: int) -> None:
    """Charge every budget ``cost``, or none of them (a refusal gives back the others)."""
    charged: list[Budget] = []
    try:
        for budget in budgets:
            budget.charge(cost)
            charged.append(budget)
    except BaseException:
        for budget in charged:
            budget.refund(cost)
        raise


Exchange = Callable[[Mapping[int, RpcCall]], Awaitable[Outcome]]
"""``await exchange({id: call})``: send the calls once and read the answer (``Outcome``);
raises ``Retryable`` for a transient failure and a ``FeeslabError`` for a final one."""


async def send_batch(
    core: RpcCore,
    calls: Sequence[RpcCall],
    exchange: Exchange,
    sleep: Callable[[float], Awaitable[None]],
    stop: threading.Event | None = None,
) -> list[RpcResult]:
    """One batch's attempts over ``exchange``, driven by ``retry.drive``; results in call order.

    A 429 (or -32005) is not a failure: the batch waits as told (the governor slows down and
    the whole transport pauses) and goes again, however often, as long as the service serves
    some request now and then; only when the transport got nothing served while this batch
    waited out ``rate_limit_patience`` seconds of 429s does it raise ``RateLimited``. Other
    transient failures count against ``retries``. Calls answered by an attempt are kept; the
    next attempt sends only those still missing.
    """
    ids = core.next_ids(len(calls))
    pending = dict(zip(ids, calls, strict=True))
    done: dict[int, RpcResult] = {}

    async def attempt() -> list[RpcResult]:
        nonlocal pending
        wait = core.before_send(pending.values())
        if wait > 0:
            await sleep(wait)
        if stop is not None and stop.is_set():
            raise Stopped
        task = asyncio.current_task()  # None only outside a task: nothing to mark then
        try:
            if task is not None:
                _EXCHANGING.add(task)
            try:
                outcome = await exchange(pending)
            finally:
                if task is not None:
                    _EXCHANGING.discard(task)
        except FeeslabError:  # final (a Retryable is not one): the sibling batches stop
            if stop is not None:
                stop.set()
            raise
        if core.governor is not None:
            core.governor.served()
        done.update(outcome.answered)
        pending = {rid: pending[rid] for rid in outcome.retry_ids}
        if pending:
            raise core.partial_failure(outcome)
        return [done[rid] for rid in ids]

    return await drive(attempt, core.retry, sleep, served=core.served_count,
                       refused=core.refused, secrets=core.secrets)  # fmt: skip


class TransportReports:
    """What every JSON-RPC transport reports from its ``RpcCore``: a repr without secrets,
    and counts."""

    _core: RpcCore

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.where()}>"

    def where(self) -> str:
        """The endpoint, with any key or secret in it masked."""
        return redact(self._core.url, self._core.secrets)

    def charging(self, budget: Budget | None) -> contextlib.AbstractContextManager[None]:
        """Charge ``budget`` with each request's price before it is sent, while inside
        (``BudgetExceeded`` instead of sending past it; a refused request is refunded)."""
        return self._core.charging(budget)

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
    def governor(self) -> Governor | None:
        """The pacing: ``rate``, ``ceiling`` [credits/s] and ``cuts``; None when unpaced (given
        at construction: ``credits_per_second=`` or ``governor=``)."""
        return self._core.governor

    @property
    def limits(self) -> Limits:
        """How much it sends at once: ``max_batch``, ``max_concurrency``, ``timeout``."""
        return self._core.limits

    @property
    def url(self) -> str:
        """The endpoint as given, key and all: to build another transport to it (a cluster's
        workers); never to print (:meth:`where` is the masked form)."""
        return self._core.url


def make_policies(
    limits: Limits | None, retry: Retry | None, options: Mapping[str, Any]
) -> tuple[Limits, Retry]:
    """``limits`` and ``retry`` as given, else built from the transports' flat keywords
    (``max_batch``, ``retries``, ``backoff``, ...); both at once is a ``ConfigError``."""
    limit_names = ("max_batch", "max_concurrency", "timeout")
    retry_names = ("retries", "backoff", "backoff_cap", "rate_limit_patience", "rng")
    unknown = set(options) - {*limit_names, *retry_names}
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(unknown))}")
    flat_limits = {k: options[k] for k in limit_names if options.get(k) is not None}
    flat_retry = {k: options[k] for k in retry_names if options.get(k) is not None}
    if (limits is not None and flat_limits) or (retry is not None and flat_retry):
        raise ConfigError("give limits=/retry= or their separate keywords, not both")
    return limits or Limits(**flat_limits), retry or Retry(**flat_retry)

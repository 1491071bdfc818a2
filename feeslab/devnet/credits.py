"""The devnet's credit ledger: a daily balance and a throughput governor for one API key.

Two limits, as on the real service:

- the **daily balance**: credits spent since 00:00 UTC; a request costing more than what remains
  is refused with HTTP 402 (not charged), and the balance comes back whole at the next 00:00 UTC;
- the **throughput governor**: a token bucket holding at most one second's worth of credits
  (``credits_per_second``), refilled continuously. A request is admitted while the bucket is
  positive and then takes its whole cost, so one big batch may drive it negative and the next
  requests wait; a refused request gets HTTP 429 with ``Retry-After`` = whole seconds after which
  the bucket is positive again (at least 1).

Refused requests (402, 429) cost nothing. Every call inside a batch is charged its own cost.
The ledger is thread-safe and its clocks are injectable for tests.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from feeslab.protocol.costs import TokenBucket

SECONDS_PER_DAY = 86_400

PAYMENT_REQUIRED_DETAILS = (
    "You have reached your daily credit limit. To continue making requests, "
    "upgrade your plan or purchase additional credits"
)
TOO_MANY_REQUESTS_DETAILS = (
    "You have surpassed your allowed throughput limit. "
    "Reduce the amount of requests per second or upgrade for more capacity."
)


def _error_body(request_id: Any, code: int, event: int, message: str, details: str) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": code, "event": event, "message": message, "details": details},
    }


def payment_required_body(request_id: Any = 1) -> dict[str, Any]:
    """The HTTP 402 body (MetaMask docs, "Avoid rate limiting")."""
    return _error_body(request_id, 402, -33000, "Payment Required", PAYMENT_REQUIRED_DETAILS)


def too_many_requests_body(request_id: Any = 1) -> dict[str, Any]:
    """The HTTP 429 body (MetaMask docs, "Avoid rate limiting")."""
    return _error_body(request_id, 429, -33200, "Too Many Requests", TOO_MANY_REQUESTS_DETAILS)


@dataclass(frozen=True)
class Decision:
    """What the ledger said about one request.

    Attributes
    ----------
    status : int
        200 when admitted and charged, 402 over the daily balance, 429 over throughput.
    retry_after : int
        Seconds to wait before retrying (only meaningful with 429).
    """

    status: int
    retry_after: int = 0

    @property
    def admitted(self) -> bool:
        return self.status == 200


@dataclass(frozen=True)
class Usage:
    """A snapshot of one key's day: ``spent``, ``remaining`` and ``by_method`` (credits)."""

    spent: int
    remaining: int
    by_method: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return {"spent": self.spent, "remaining": self.remaining, "by_method": dict(self.by_method)}


class CreditLedger:
    """Credits spent by one API key, with its daily balance and throughput governor.

    Parameters
    ----------
    daily_credits : int
        Credits available per UTC day.
    credits_per_second : float
        Refill rate of the throughput bucket; also its capacity (a one-second burst).
    wall_clock : callable, optional
        Unix time in seconds, for the 00:00 UTC reset (default ``time.time``).
    monotonic : callable, optional
        A monotonic clock in seconds, for the bucket (default ``time.monotonic``).
    """

    def __init__(
        self,
        daily_credits: int,
        credits_per_second: float,
        *,
        wall_clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if daily_credits < 0:
            raise ValueError("daily_credits must be >= 0")
        if credits_per_second <= 0:
            raise ValueError("credits_per_second must be > 0")
        self.daily_credits = int(daily_credits)
        self.credits_per_second = float(credits_per_second)
        self._wall = wall_clock
        self._mono = monotonic
        self._lock = threading.Lock()
        self._day = self._today()
        self._spent = 0
        self._by_method: dict[str, int] = {}
        # the throughput governor: one second's burst (the client's governor is the same bucket)
        self._bucket = TokenBucket(self.credits_per_second, burst=1.0, now=self._mono())

    # -- internals (call with the lock held) --------------------------------------------------

    def _today(self) -> int:
        return int(self._wall() // SECONDS_PER_DAY)

    def _roll_day(self) -> None:
        today = self._today()
        if today != self._day:
            self._day = today
            self._spent = 0
            self._by_method.clear()

    def _refill(self) -> None:
        self._bucket.refill(self._mono())

    def _record(self, items: Iterable[tuple[str, int]]) -> None:
        for name, cost in items:
            self._spent += cost
            self._by_method[name] = self._by_method.get(name, 0) + cost

    # -- public -------------------------------------------------------------------------------

    def admit(self, items: Iterable[tuple[str, int]]) -> Decision:
        """Admit and charge a request, or refuse it.

        Parameters
        ----------
        items : iterable of (str, int)
            ``(method, credits)`` for each call in the request (one item for a single call).

        Returns
        -------
        Decision
            200 (charged), 402 (over the daily balance) or 429 (over throughput, with
            ``retry_after``). Refused requests are not charged.
        """
        items = list(items)
        total = sum(cost for _, cost in items)
        with self._lock:
            self._roll_day()
            if total > self.daily_credits - self._spent:
                return Decision(402)
            self._refill()
            if self._bucket.level <= 0:
                # whole seconds after which the bucket is strictly positive, so a client that
                # waits exactly Retry-After is admitted
                wait = self._bucket.seconds_to_positive()
                return Decision(429, retry_after=math.floor(wait) + 1)
            self._bucket.level -= total
            self._record(items)
            return Decision(200)

    def charge_event(self, name: str, cost: int) -> bool:
        """Charge a pushed event against the daily balance only.

        An event cannot be answered with 429, so it skips the governor (but still drains it).

        Returns
        -------
        bool
            False when the balance cannot pay for it (nothing is charged).
        """
        with self._lock:
            self._roll_day()
            if cost > self.daily_credits - self._spent:
                return False
            self._refill()
            self._bucket.level -= cost
            self._record([(name, cost)])
            return True

    def charge_fee(self, name: str, cost: int) -> None:
        """Charge a fee that is owed whatever the balance (e.g. 5 credits for a 4xx answer)."""
        if cost <= 0:
            return
        with self._lock:
            self._roll_day()
            self._record([(name, cost)])

    def usage(self) -> Usage:
        """Today's spending so far."""
        with self._lock:
            self._roll_day()
            remaining = max(0, self.daily_credits - self._spent)
            return Usage(self._spent, remaining, dict(self._by_method))

    def exhausted(self) -> bool:
        """True when nothing is left of today's balance."""
        return self.usage().remaining <= 0

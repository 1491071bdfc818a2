"""One credit bucket for a whole cluster, kept by the dask scheduler.

A semaphore would bound requests in flight, not credits per second; an Actor lives on one
worker and dies with it. So the bucket lives on the scheduler, which outlives any worker: a
scheduler plugin (:class:`CreditsPlugin`) adds a few handlers, and each worker's transport
books every batch there before sending it (:class:`ClusterGovernor`, a drop-in for the
transport's ``CreditGovernor``). The bucket itself *is* a ``CreditGovernor`` (the same token
bucket, headroom, burst and AIMD as one process), so a cluster paces exactly as one client
would, and a 429 met by any worker slows them all. The plugin also keeps each bucket's
ledger (credits the service charged, 429s met) and the job's ``budget``, which no worker may
pass; a job with several API keys has a bucket and a ledger per key, one budget for all.

A worker's booking is a *lease*: held in its name from ``reserve`` until the ``charge`` of
the answer frees it. A worker that dies in between (killed, lost, out of memory) never
charges, so the scheduler frees every lease of a worker when it leaves the cluster
(``SchedulerPlugin.remove_worker``), and any lease older than ``lease_seconds`` (a request
that never got an answer, e.g. a connection error that a live worker retried): booked
credits always return to what is truly in flight, and a long job whose workers were
retried is not refused its budget for bookings nobody will spend. The retried task books
again for what it sends.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin

from feeslab.errors import BudgetExceeded
from feeslab.fetch.transport import GOVERNOR_BURST, CreditGovernor

__all__ = ["LEASE_SECONDS", "PLUGIN_NAME", "ClusterGovernor", "CreditsPlugin", "scheduler_call"]

PLUGIN_NAME = "feeslab-credits"
LEASE_SECONDS = 600.0
"""A booking not charged within this long is freed [s]: far beyond a batch's wait for the
bucket plus its request's timeout, so only a request nobody will answer is ever freed."""
_OPS = ("open", "reserve", "rate_limited", "served", "charge", "report", "close")


@dataclass
class _Lease:
    """Credits one batch booked before sending, in its worker's name, until ``expires``."""

    credits: int
    expires: float  # on the plugin's clock [s]


class _Cap:
    """A job's budget and what its workers spent and booked against it [credits]; shared by
    the buckets of one job's API keys. Bookings are leases, by worker, oldest first."""

    def __init__(self, budget: int | None) -> None:
        self.budget = budget
        self.spent = 0
        self.leases: dict[str, deque[_Lease]] = {}
        self.released = 0  # booked by workers that left, or by leases that expired

    @property
    def booked(self) -> int:
        """Reserved by batches not yet answered [credits]."""
        return sum(lease.credits for held in self.leases.values() for lease in held)

    def hold(self, worker: str, credits: int, expires: float) -> None:
        self.leases.setdefault(worker, deque()).append(_Lease(credits, expires))

    def free(self, worker: str, credits: int) -> None:
        """An answer came for ``credits`` the worker booked: its oldest leases, that much.
        (Which of its leases does not matter: a worker's batches cost alike, and the total
        is what the budget counts.)"""
        held = self.leases.get(worker)
        while held and credits > 0:
            take = min(credits, held[0].credits)
            held[0].credits -= take
            credits -= take
            if held[0].credits == 0:
                held.popleft()
        if held is not None and not held:
            del self.leases[worker]

    def drop(self, worker: str) -> int:
        """The worker left: every lease it held freed; the credits freed."""
        freed = sum(lease.credits for lease in self.leases.pop(worker, ()))
        self.released += freed
        return freed

    def expire(self, now: float) -> int:
        """Free the leases past their time; the credits freed."""
        freed = 0
        for worker in list(self.leases):
            held = self.leases[worker]
            while held and held[0].expires <= now:
                freed += held.popleft().credits
            if not held:
                del self.leases[worker]
        self.released += freed
        return freed


class _Bucket:
    """One API key's bucket and ledger on the scheduler."""

    def __init__(self, credits_per_second: float | None, cap: _Cap) -> None:
        self.governor = CreditGovernor(credits_per_second) if credits_per_second else None
        if self.governor is not None:  # start empty: the driver has just drawn on the same
            self.governor.reserve(self.governor.rate * GOVERNOR_BURST)  # key (the plan's sample)
        self.cap = cap
        self.spent = 0  # credits the service charged this key, every worker together
        self.requests = 0
        self.refusals = 0  # HTTP 429 answers
        self.calls: dict[str, int] = {}

    def report(self) -> dict[str, Any]:
        """The ledger; ``booked`` and ``released``: the job's leases in flight, and those
        freed for workers that left or leases that expired [credits], all keys together."""
        governor = self.governor
        return {"spent": self.spent, "requests": self.requests, "refusals": self.refusals,
                "cuts": governor.cuts if governor else 0, "calls": dict(self.calls),
                "rate": governor.rate if governor else None, "booked": self.cap.booked,
                "released": self.cap.released}  # fmt: skip


class CreditsPlugin(SchedulerPlugin):
    """The scheduler's side: ``feeslab_credits_<op>`` handlers over named buckets.

    Parameters
    ----------
    lease_seconds : float
        A booking no answer has freed within this long is freed [s].
    clock : callable
        Monotonic seconds, for the leases' expiry.
    """

    name = PLUGIN_NAME

    def __init__(self, *, lease_seconds: float = LEASE_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        if not lease_seconds > 0:
            raise ValueError(f"lease_seconds must be > 0, not {lease_seconds!r}")
        self.buckets: dict[str, _Bucket] = {}
        self.lease_seconds = lease_seconds
        self.clock = clock

    async def start(self, scheduler: Any) -> None:
        self._lock = threading.Lock()  # made where it runs: a plugin is pickled to get there
        for op in _OPS:
            scheduler.handlers[f"feeslab_credits_{op}"] = getattr(self, f"_{op}")

    def remove_worker(self, scheduler: Any, worker: str, **kwargs: Any) -> None:
        """A worker left (closed, killed, lost): free its leases in every job's cap; its
        task, retried elsewhere, books again for what it sends."""
        with self._lock:
            for cap in {id(b.cap): b.cap for b in self.buckets.values()}.values():
                cap.drop(worker)

    def _open(self, name: str, credits_per_second: float | None = None,
              budget: int | None = None, group: str | None = None) -> dict[str, Any]:
        """A bucket ``name`` (kept if it exists); ``group``: the bucket whose budget it shares
        (another API key of the same job)."""
        with self._lock:
            cap = self.buckets[group].cap if group is not None else _Cap(budget)
            bucket = self.buckets.setdefault(name, _Bucket(credits_per_second, cap))
        return bucket.report()

    def _reserve(self, name: str, cost: float, worker: str = "") -> dict[str, Any]:
        """Book ``cost`` credits as a lease in ``worker``'s name (refused past the budget)."""
        bucket = self.buckets[name]
        cap = bucket.cap
        with self._lock:
            now = self.clock()
            cap.expire(now)
            booked = cap.booked
            if cap.budget is not None and cap.spent + booked + cost > cap.budget:
                return {"refused": True, "spent": cap.spent + booked, "budget": cap.budget}
            cap.hold(worker, int(cost), now + self.lease_seconds)
        wait = bucket.governor.reserve(cost) if bucket.governor else 0.0
        return {"wait": wait, "rate": bucket.governor.rate if bucket.governor else None}

    def _rate_limited(self, name: str, wait: float | None = None) -> None:
        governor = self.buckets[name].governor
        if governor is not None:
            governor.rate_limited(wait)

    def _served(self, name: str) -> float | None:
        governor = self.buckets[name].governor
        if governor is None:
            return None
        governor.served()
        return governor.rate

    def _charge(self, name: str, credits: int, booked: int, status: int,
                calls: dict[str, int], worker: str = "") -> None:
        """Book an answer's ``credits`` and free ``booked`` credits of ``worker``'s leases."""
        bucket = self.buckets[name]
        with self._lock:
            bucket.spent += credits
            bucket.cap.spent += credits
            bucket.cap.free(worker, booked)
            bucket.requests += 1
            bucket.refusals += status == 429
            if status == 200:
                for method, n in calls.items():
                    bucket.calls[method] = bucket.calls.get(method, 0) + n

    def _report(self, name: str) -> dict[str, Any] | None:
        bucket = self.buckets.get(name)
        if bucket is None:
            return None
        with self._lock:
            bucket.cap.expire(self.clock())
            return bucket.report()

    def _close(self, name: str) -> dict[str, Any] | None:
        with self._lock:
            bucket = self.buckets.pop(name, None)
        return None if bucket is None else bucket.report()


def scheduler_call(client: Any, op: str, **options: Any) -> Any:
    """Call the plugin's handler ``op`` from the driver (a ``distributed.Client``)."""
    async def call() -> Any:
        return await getattr(client.scheduler, f"feeslab_credits_{op}")(**options)

    return client.sync(call)


def install(client: Any) -> None:
    """Register the plugin on ``client``'s scheduler unless it is there already (its buckets
    are kept across jobs)."""
    def present(dask_scheduler: Any) -> bool:
        return PLUGIN_NAME in dask_scheduler.plugins

    if not client.run_on_scheduler(present):
        client.register_plugin(CreditsPlugin(), name=PLUGIN_NAME)


class ClusterGovernor:
    """A worker's stand-in for ``CreditGovernor``: every booking goes to the scheduler's bucket.

    Parameters
    ----------
    worker : distributed.Worker
        The worker whose scheduler connection and event loop carry the calls.
    name : str
        The bucket's name (one per job, or per API key).
    credits_per_second : float
        The plan's throughput [credits/s]; the bucket runs at the same headroom.
    workers : int
        Workers sharing the bucket: a batch carries at most its share of one second's credits.
    """

    def __init__(self, worker: Any, name: str, credits_per_second: float, workers: int) -> None:
        self._worker = worker
        self.name = name
        self.ceiling = CreditGovernor(credits_per_second).ceiling
        self.rate = self.ceiling
        self.cuts = 0
        self.workers = max(1, workers)

    def _call(self, op: str, **options: Any) -> Any:
        from distributed.utils import sync

        rpc = getattr(self._worker.scheduler, f"feeslab_credits_{op}")
        return sync(self._worker.loop, rpc, name=self.name, **options)

    def settle(self, timeout: float | None = None) -> None:
        """Nothing to wait for: the rate was fixed when the job was planned."""

    def reserve(self, cost: float) -> float:
        """Book ``cost`` credits in the cluster's bucket, leased in this worker's name until
        the answer's :meth:`charge` (or the worker leaves); the seconds to wait before sending.

        Raises
        ------
        BudgetExceeded
            When the job's spending and bookings plus ``cost`` would pass its budget.
        """
        answer = self._call("reserve", cost=cost, worker=self._worker.address)
        if answer.get("refused"):
            raise BudgetExceeded(planned=int(cost), budget=answer["budget"],
                                 spent=answer["spent"])  # fmt: skip
        if answer["rate"] is not None:
            self.rate = answer["rate"]
        return float(answer["wait"])

    def batch_credits(self, concurrency: int) -> float:
        """A batch's share of one second: every worker's ``concurrency`` batches in flight."""
        return self.ceiling / (max(1, concurrency) * self.workers)

    def rate_limited(self, wait: float | None = None) -> None:
        self.cuts += 1
        self._call("rate_limited", wait=wait)

    def served(self) -> None:
        if self.rate < self.ceiling:  # only a slowed-down bucket has rate to win back
            rate = self._call("served")
            if rate is not None:
                self.rate = rate

    def charge(self, credits: int, booked: int, status: int, calls: dict[str, int]) -> None:
        """Book what the service charged for one request (and free its reservation)."""
        self._call("charge", credits=credits, booked=booked, status=status, calls=calls,
                   worker=self._worker.address)  # fmt: skip

    def __repr__(self) -> str:
        return f"ClusterGovernor({self.name!r}, ceiling={self.ceiling:,.0f}/s)"

"""The credit cost table, as data read by both the client and the devnet.

One table for both sides means a client's estimate and the devnet's charge cannot drift apart.

Sources: the interface (section 8) for the five node methods it lists and ``baseFeeHistory``;
the MetaMask "Credit cost" page (docs.metamask.io, Services > "Credit cost") for the rest.
Rules carried over from that page:

- every call inside a batch is charged its own cost (batching saves requests, not credits);
- a WebSocket subscription event is charged per event (``newHeads``: 50 per block);
- HTTP 402 and 429 answers are free, and so is any 5xx; any other 4xx answer costs 5;
- a method the table does not name costs 80.

The plans' limits (`PLANS`) come from the provider's "Infura plans" page
(docs.metamask.io/services/get-started/pricing) and its support page "What are Infura's daily
limits?" (support.metamask.io/develop/account/limits/daily-limits), as of January 2026; the
interface leaves them open (section 8: "Request rate limits: not shown").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from types import MappingProxyType

DEFAULT_METHOD_COST = 80
"""Credits for a node method the table does not name."""

REJECTED_REQUEST_COST = 5
"""Credits for a 4xx answer other than 402/429 (and for a JSON-RPC envelope that is refused)."""

METHOD_COSTS = MappingProxyType(
    {
        # interface section 8
        "eth_getStorageAt": 80,
        "eth_estimateGas": 300,
        "eth_call": 80,
        "eth_getUncleByBlockNumberAndIndex": 150,
        "eth_getUncleByBlockHashAndIndex": 150,
        # MetaMask credit cost table
        "eth_blockNumber": 80,
        "eth_chainId": 5,
        "eth_getBlockByNumber": 80,
        "eth_feeHistory": 80,
        "eth_subscribe": 5,
        "eth_unsubscribe": 10,
        # not named by the table: "any other method 80" (REFERENCE.md), written out because the
        # devnet serves it and a client estimates it
        "eth_blobBaseFee": 80,
        "eth_getBlockReceipts": 80,  # the transactions dataset's second call a block
    }
)
"""Credits per JSON-RPC node method."""

GAS_API_COSTS = MappingProxyType(
    {
        "baseFeeHistory": 80,  # interface section 8
        "suggestedGasFees": 80,
        "baseFeePercentile": 80,
        "busyThreshold": 80,
    }
)
"""Credits per Gas API endpoint."""

EVENT_COSTS = MappingProxyType({"newHeads": 50})
"""Credits per WebSocket subscription event, by subscription kind."""


def method_cost(name: str) -> int:
    """Credits charged for one call of the JSON-RPC method ``name``.

    Parameters
    ----------
    name : str
        The method name as sent, e.g. ``"eth_call"``.

    Returns
    -------
    int
        Its cost, or ``DEFAULT_METHOD_COST`` for a method the table does not name.
    """
    return METHOD_COSTS.get(name, DEFAULT_METHOD_COST)


def batch_cost(methods: Iterable[str]) -> int:
    """Credits for a batch: the sum of its calls' costs."""
    return sum(method_cost(name) for name in methods)


def gas_api_cost(endpoint: str) -> int:
    """Credits charged for one Gas API call to ``endpoint``."""
    return GAS_API_COSTS.get(endpoint, DEFAULT_METHOD_COST)


def event_cost(kind: str) -> int:
    """Credits charged for one subscription event of ``kind`` (e.g. ``"newHeads"``)."""
    return EVENT_COSTS.get(kind, DEFAULT_METHOD_COST)


def http_status_cost(status: int) -> int:
    """Credits for an answer that failed at the HTTP level with ``status``.

    402 and 429 are free (the request was not served), and so is any 5xx (the service's fault);
    any other 4xx costs ``REJECTED_REQUEST_COST``. Successful statuses return 0: a served request
    is charged by what it asked for, not by its status.
    """
    if status in (402, 429) or status >= 500 or status < 400:
        return 0
    return REJECTED_REQUEST_COST


@dataclass(frozen=True)
class PlanLimits:
    """One plan's limits: ``daily_credits`` [credits/day] and ``credits_per_second`` [credits/s]."""

    name: str
    daily_credits: int
    credits_per_second: int


PLANS = MappingProxyType(
    {
        "core": PlanLimits("core", 3_000_000, 500),  # the free plan
        "developer": PlanLimits("developer", 15_000_000, 4_000),
        "team": PlanLimits("team", 75_000_000, 40_000),  # the largest self-serve plan
    }
)
"""The provider's self-serve plans by name (see the module notes for the source)."""

DEFAULT_SERVICE_PLAN = "core"
"""The plan a client paces for on the real service when it is told no rate: the free plan's
throughput is within every plan's, so a key on any plan meets no 429 by default."""


DEFAULT_DEVNET_PLAN = "team"
"""The plan a devnet's default limits copy (``feeslab/devnet/server.py``): what a client paces
for on a devnet root whose limits it cannot ask (no secret for ``GET /devnet/info``)."""


def plan_credits_per_second(name: str) -> int:
    """The throughput of the plan called ``name`` (``"core"``, ``"developer"``, ``"team"``)
    [credits/s]; ``KeyError`` naming the known plans otherwise."""
    try:
        return PLANS[name.strip().lower()].credits_per_second
    except KeyError:
        raise KeyError(f"unknown plan {name!r}; known plans: {', '.join(PLANS)}") from None


# the devnet's default limits, and `feeslab serve`'s, without importing the devnet
TEAM_PLAN_DAILY_CREDITS = PLANS["team"].daily_credits
TEAM_PLAN_CREDITS_PER_SECOND = PLANS["team"].credits_per_second


class TokenBucket:
    """A token bucket of credits, refilled continuously: the client's governor and the
    devnet's throughput limit are both one of these.

    A request may go while the bucket is positive and then takes its whole cost, so one big
    batch may drive it negative and the next requests wait. Not locked: its owner holds a lock
    around every use.

    Parameters
    ----------
    rate : float
        Refill rate [credits/s].
    burst : float
        The bucket holds ``burst`` seconds of ``rate`` [s] (and starts full).
    now : float
        The owner's monotonic clock at creation [s].

    Attributes
    ----------
    level : float
        Credits in the bucket now (negative: owed) [credits].
    t : float
        The time ``level`` is measured at [s]; a booking may put it in the future.
    """

    __slots__ = ("burst", "level", "rate", "t")

    def __init__(self, rate: float, *, burst: float, now: float) -> None:
        self.rate = rate
        self.burst = burst
        self.level = rate * burst
        self.t = now

    def refill(self, now: float) -> None:
        """Add what flowed in up to ``now`` (nothing while ``t`` lies in the future)."""
        if now > self.t:
            self.level = min(self.rate * self.burst, self.level + (now - self.t) * self.rate)
            self.t = now

    def seconds_to_positive(self) -> float:
        """How long after ``t`` the bucket turns positive [s] (0 when it is)."""
        return max(0.0, -self.level / self.rate)

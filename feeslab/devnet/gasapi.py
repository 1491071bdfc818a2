"""Gas API payloads computed from a devnet chain (pure functions, no I/O).

Shapes follow the MetaMask/Infura Gas API reference: fee values are decimal gwei strings
formatted exactly from integer wei with nine decimals (``14585610312`` wei ->
``"14.585610312"``), never through a float.

The window
    Every statistic uses the *history window*: the previous 500 blocks, i.e. blocks
    ``head - 499 .. head`` (fewer near genesis). Blocks before London have no base fee and are
    left out, so a window that straddles London yields fewer than 500 values, and a window
    wholly before London yields none: ``base_fee_history`` then answers ``[]`` and the other
    functions raise ``NoBaseFeeError``. On the devnet's chains the head is far past London, so
    the normal window is 500 post-London blocks.

Percentiles
    Nearest rank on the sorted integer wei values: the ``p``-th percentile of ``N`` values is
    the ``ceil(p * N / 100)``-th smallest. It is always an observed base fee, and no float is
    involved.

Tips
    ``suggestedGasFees``' tips come from the devnet's own blocks, as a node serves them: each
    block's ``eth_feeHistory`` reward row over its transactions (geth's gas-weighted
    percentiles of their effective tips, :func:`feeslab.devnet.transactions.fee_history_rewards`;
    zeros for an empty block), the rows MetaMask's estimator asks ``eth_feeHistory`` for. The
    Gas API's reference documents each field's meaning but not how it is computed; the rule
    followed is the one MetaMask's gas-fee-controller says it translated from the Gas API's
    predecessor (ConsenSys' MetaSwap gas API), see :func:`suggested_gas_fees`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from feeslab.devnet.transactions import fee_history_rewards
from feeslab.protocol import eip1559

HISTORY_BLOCKS = 500
GWEI = 10**9

# suggestedGasFees follows MetaMask's fee-history estimator (@metamask/gas-fee-controller,
# fetchGasEstimatesViaEthFeeHistory and calculateGasFeeEstimatesForPriorityLevels, "translated
# from the MetaSwap API"): eth_feeHistory's rewards of the last 5 blocks at the 10th/20th/30th
# percentile, the lower median of each, scaled down a little and floored; the base fee scaled
# up for headroom.
RECENT_BLOCKS = 5
LEVELS: dict[str, dict[str, int]] = {
    "low": {"percentile": 10, "base_fee_pct": 110, "tip_pct": 94, "min_tip": 1_000_000_000},
    "medium": {"percentile": 20, "base_fee_pct": 120, "tip_pct": 97, "min_tip": 1_500_000_000},
    "high": {"percentile": 30, "base_fee_pct": 125, "tip_pct": 98, "min_tip": 2_000_000_000},
}
# inclusion wait as (min, max) block intervals: a high-tip transaction should make the next
# block or the one after, a low-tip one may wait a few
WAIT_BLOCKS: dict[str, tuple[int, int]] = {"low": (1, 5), "medium": (1, 3), "high": (1, 2)}
TREND_BLOCKS = 10  # trends and the historical tip range look at this many recent blocks


class NoBaseFeeError(ValueError):
    """The history window holds no post-London block, so there is no base fee to report."""


def format_gwei(wei: int) -> str:
    """Exact decimal gwei string with nine decimals: ``14585610312`` -> ``"14.585610312"``."""
    sign = "-" if wei < 0 else ""
    whole, frac = divmod(abs(wei), GWEI)
    return f"{sign}{whole}.{frac:09d}"


def nearest_rank(values: Sequence[int], percentile: int) -> int:
    """The nearest-rank ``percentile`` (0..100) of integer ``values`` (see the module)."""
    if not values:
        raise NoBaseFeeError("no values")
    return eip1559.nearest_rank(values, percentile)


def _window(chain: Any) -> tuple[int, int]:
    """The history window's half-open block range ``[start, stop)``."""
    stop = chain.head() + 1
    return max(0, stop - HISTORY_BLOCKS), stop


def base_fees_wei(chain: Any) -> list[int]:
    """Base fees of the history window, oldest first, pre-London blocks left out [wei]."""
    start, stop = _window(chain)
    return [fee for fee in chain.base_fees(start, stop) if fee is not None]


def _require(fees: list[int]) -> list[int]:
    if not fees:
        raise NoBaseFeeError("no post-London block in the last 500 blocks")
    return fees


def base_fee_history(chain: Any) -> list[str]:
    """``baseFeeHistory``: the previous 500 blocks' base fees, oldest first, in gwei."""
    return [format_gwei(fee) for fee in base_fees_wei(chain)]


def base_fee_percentile(chain: Any) -> dict[str, str]:
    """``baseFeePercentile``: the nearest-rank median of the history window's base fees."""
    fees = _require(base_fees_wei(chain))
    return {"baseFeePercentile": format_gwei(nearest_rank(fees, 50))}


def busy_threshold(chain: Any) -> dict[str, str]:
    """``busyThreshold``: the nearest-rank 90th percentile of the window's base fees."""
    fees = _require(base_fees_wei(chain))
    return {"busyThreshold": format_gwei(nearest_rank(fees, 90))}


def _recent(chain: Any, count: int) -> range:
    head = chain.head()
    return range(max(0, head - count + 1), head + 1)


def _lower_median(values: Sequence[int]) -> int:
    """MetaMask's medianOf: the lower middle value."""
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def level_estimate(
    level: str, tips_at_percentile: Sequence[int], base_fee: int, block_time_ms: int
) -> dict[str, Any]:
    """One urgency level of ``suggestedGasFees``.

    Parameters
    ----------
    level : {"low", "medium", "high"}
    tips_at_percentile : sequence of int
        Each recent block's tip at the level's percentile [wei].
    base_fee : int
        The estimated base fee of the next block [wei].
    block_time_ms : int
        The chain's block interval [ms].

    Notes
    -----
    tip = max(median(tips) * tip_pct // 100, min_tip);
    maxFee = base_fee * base_fee_pct // 100 + tip (MetaMask's method: 110/120/125 % of the
    base fee, which covers one or two blocks of EIP-1559 rises at 12.5 % each).
    """
    settings = LEVELS[level]
    tip = _lower_median(tips_at_percentile) * settings["tip_pct"] // 100
    tip = max(tip, settings["min_tip"])
    max_fee = base_fee * settings["base_fee_pct"] // 100 + tip
    low, high = WAIT_BLOCKS[level]
    return {
        "suggestedMaxPriorityFeePerGas": format_gwei(tip),
        "suggestedMaxFeePerGas": format_gwei(max_fee),
        "minWaitTimeEstimate": low * block_time_ms,
        "maxWaitTimeEstimate": high * block_time_ms,
    }


def _trend(latest: int, history: Sequence[int]) -> str:
    """Trend of ``latest`` against the median of ``history``: "up" if at or above it."""
    return "up" if latest >= _lower_median(history) else "down"


def network_congestion(base_fee: int, history: Sequence[int]) -> float:
    """Share of the window's base fees strictly below ``base_fee`` (0..1, 4 decimals)."""
    below = sum(1 for fee in history if fee < base_fee)
    return round(below / len(history), 4)


def _rewards(chain: Any, count: int, percentiles: Sequence[float]) -> list[list[int]]:
    """``eth_feeHistory(count, "latest", percentiles)``'s reward rows, oldest first [wei]."""
    start, stop = _recent(chain, count).start, chain.head() + 1
    return fee_history_rewards(chain.history, start, stop, percentiles)


def suggested_gas_fees(chain: Any) -> dict[str, Any]:
    """``suggestedGasFees`` for the block after the head, from the chain's last blocks.

    The Gas API's reference says what each field means, not how it is computed; the devnet
    computes them as follows. Tips are the ``eth_feeHistory`` reward rows of the blocks'
    transactions (see the module), what a client asking the devnet's node would see.

    - ``low``/``medium``/``high``: MetaMask's estimator (``level_estimate``) over the last 5
      blocks' rewards at the 10th/20th/30th percentile, as ``eth_feeHistory(5, "latest",
      [10, 20, 30])`` gives them; the base fee it scales is the next block's (MetaMask's is
      the head's), so ``suggestedMaxFeePerGas`` covers the block the transaction can enter.
      Wait times are 1-5, 1-3 and 1-2 block intervals (MetaMask's are fixed seconds of
      mainnet's; the devnet's chains have other block times).
    - ``estimatedBaseFee``: the next block's base fee by EIP-1559 from the head.
    - ``networkCongestion``: the share of the window's base fees below the estimated one.
    - ``latestPriorityFeeRange``: the head block's rewards at the 0th and 100th percentile:
      its cheapest and its dearest effective tip (0 and 0 for an empty block).
    - ``historicalPriorityFeeRange``: the lowest 0th and highest 100th percentile rewards over
      the last 10 blocks.
    - ``historicalBaseFeeRange``: min and max of the window's base fees.
    - ``baseFeeTrend``: "up" if the estimated base fee is at or above the median of the last 10
      base fees; ``priorityFeeTrend``: "up" if the head's 50th percentile reward is at or
      above the lower median of the last 10 blocks' 50th percentile rewards.

    Raises
    ------
    NoBaseFeeError
        When the head is before London (there is no base fee to estimate).

    References
    ----------
    .. [1] MetaMask, "Get EIP-1559 gas prices" (Gas API reference, ``suggestedGasFees``),
       https://docs.metamask.io/services/reference/gas-api/api-reference/gasprices-type2/
    .. [2] MetaMask/core ``packages/gas-fee-controller/src/fetchGasEstimatesViaEthFeeHistory``
       (``calculateGasFeeEstimatesForPriorityLevels``, ``medianOf``).
    """
    history = _require(base_fees_wei(chain))
    head = chain.head()
    base_fee = chain.next_base_fee(head)
    block_time_ms = chain.params.slot_time_s * 1000
    recent = _rewards(chain, RECENT_BLOCKS, [10, 20, 30])
    result: dict[str, Any] = {}
    for column, level in enumerate(LEVELS):
        tips = [row[column] for row in recent]
        result[level] = level_estimate(level, tips, base_fee, block_time_ms)
    spans = _rewards(chain, TREND_BLOCKS, [0, 50, 100])
    latest_min, latest_median, latest_max = spans[-1]
    result.update(
        {
            "estimatedBaseFee": format_gwei(base_fee),
            "networkCongestion": network_congestion(base_fee, history),
            "latestPriorityFeeRange": [format_gwei(latest_min), format_gwei(latest_max)],
            "historicalPriorityFeeRange": [
                format_gwei(min(row[0] for row in spans)),
                format_gwei(max(row[2] for row in spans)),
            ],
            "historicalBaseFeeRange": [format_gwei(min(history)), format_gwei(max(history))],
            "priorityFeeTrend": _trend(latest_median, [row[1] for row in spans]),
            "baseFeeTrend": _trend(base_fee, history[-TREND_BLOCKS:]),
        }
    )
    return result

"""Gas API payloads, recomputed independently from the chain's blocks.

Base fees are read from block headers and re-derived with EIP-1559's reference rule; gwei
strings are checked with ``decimal``; percentiles with the nearest-rank definition written
out here.
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
from decimal import Decimal, localcontext

import httpx
import pytest
from protocol_reference import effective_gas_tip, geth_rewards
from protocol_reference import eip1559_base_fee as eip1559

from feeslab.devnet import gasapi
from feeslab.devnet.chain import Chain

GWEI_STRING = re.compile(r"^\d+\.\d{9}$")


def to_wei(gwei: str) -> int:
    """Parse a gwei string exactly."""
    assert GWEI_STRING.match(gwei), gwei
    value = Decimal(gwei) * 10**9
    assert value == value.to_integral_value()
    return int(value)


def rank(values: list[int], p: int) -> int:
    """Nearest-rank percentile: the ceil(p/100 * N)-th smallest."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(Decimal(p) / 100 * len(ordered))) - 1]


@pytest.fixture(scope="module")
def mainnet(devnet) -> Chain:
    chain = devnet.chains.by_id[1]
    chain.warm()
    return chain


@pytest.fixture(scope="module")
def window_fees(mainnet) -> list[int]:
    """The previous 500 blocks' base fees, from their headers [wei]."""
    head = mainnet.head()
    return [mainnet.block(n).header.base_fee_per_gas for n in range(head - 499, head + 1)]


def test_format_gwei_is_exact():
    assert gasapi.format_gwei(14585610312) == "14.585610312"
    assert gasapi.format_gwei(0) == "0.000000000"
    assert gasapi.format_gwei(1) == "0.000000001"
    assert gasapi.format_gwei(10**9) == "1.000000000"
    rng = random.Random(5)
    for _ in range(2000):
        wei = rng.randrange(0, 10 ** rng.randrange(1, 40))
        text = gasapi.format_gwei(wei)
        assert GWEI_STRING.match(text)
        with localcontext(prec=80):  # enough digits for any value here: no rounding
            assert Decimal(text) == Decimal(wei).scaleb(-9)


def test_base_fee_history(mainnet, window_fees):
    history = gasapi.base_fee_history(mainnet)
    assert len(history) == 500
    assert [to_wei(s) for s in history] == window_fees
    # and those header fees follow EIP-1559 from block to block
    head = mainnet.head()
    for n in range(head - 498, head + 1):
        parent = mainnet.block(n - 1).header
        fee = eip1559(parent.base_fee_per_gas, parent.gas_used, parent.gas_limit)
        assert window_fees[n - (head - 499)] == fee


def test_percentile_and_busy_threshold(mainnet, window_fees):
    median = to_wei(gasapi.base_fee_percentile(mainnet)["baseFeePercentile"])
    busy = to_wei(gasapi.busy_threshold(mainnet)["busyThreshold"])
    assert median == rank(window_fees, 50)
    assert busy == rank(window_fees, 90)
    # the defining property: at least p% at or below, fewer than p% strictly below
    assert sum(f <= busy for f in window_fees) >= 450 > sum(f < busy for f in window_fees)
    assert sum(f <= median for f in window_fees) >= 250 > sum(f < median for f in window_fees)
    assert median <= busy


def _rewards(rpc, numbers, percentiles) -> list[list[int]]:
    """geth's eth_feeHistory reward rows of blocks ``numbers``, recomputed here from their
    full transactions and receipts fetched over HTTP (``protocol_reference.geth_rewards``)."""
    rows = []
    for n in numbers:
        block = rpc("eth_getBlockByNumber", hex(n), True)
        rows.append(geth_rewards(block, rpc("eth_getBlockReceipts", hex(n)), percentiles))
    return rows


def test_suggested_gas_fees(mainnet, window_fees, rpc):
    fees = gasapi.suggested_gas_fees(mainnet)
    assert set(fees) == {
        "low", "medium", "high", "estimatedBaseFee", "networkCongestion",
        "latestPriorityFeeRange", "historicalPriorityFeeRange", "historicalBaseFeeRange",
        "priorityFeeTrend", "baseFeeTrend",
    }
    head = mainnet.block(mainnet.head()).header
    next_fee = eip1559(head.base_fee_per_gas, head.gas_used, head.gas_limit)
    assert to_wei(fees["estimatedBaseFee"]) == next_fee
    last5 = range(head.number - 4, head.number + 1)
    recent = _rewards(rpc, last5, [10, 20, 30])  # eth_feeHistory(5, latest, [10, 20, 30])
    assert len({tuple(row) for row in recent}) == 5  # the blocks' own tips, each its own
    settings = {"low": (0, 110, 94, 1.0), "medium": (1, 120, 97, 1.5), "high": (2, 125, 98, 2.0)}
    block_ms = 12_000  # mainnet's slot time
    previous = None
    for level, (column, base_pct, tip_pct, floor_gwei) in settings.items():
        entry = fees[level]
        assert set(entry) == {
            "suggestedMaxPriorityFeePerGas", "suggestedMaxFeePerGas",
            "minWaitTimeEstimate", "maxWaitTimeEstimate",
        }
        median = sorted(row[column] for row in recent)[2]
        tip = max(median * tip_pct // 100, int(floor_gwei * 10**9))
        assert to_wei(entry["suggestedMaxPriorityFeePerGas"]) == tip
        assert to_wei(entry["suggestedMaxFeePerGas"]) == next_fee * base_pct // 100 + tip
        assert isinstance(entry["minWaitTimeEstimate"], int)
        assert isinstance(entry["maxWaitTimeEstimate"], int)
        assert block_ms <= entry["minWaitTimeEstimate"] <= entry["maxWaitTimeEstimate"]
        assert entry["maxWaitTimeEstimate"] % block_ms == 0
        if previous is not None:  # more urgency, more money, less waiting
            assert to_wei(entry["suggestedMaxFeePerGas"]) >= to_wei(
                previous["suggestedMaxFeePerGas"]
            )
            assert entry["maxWaitTimeEstimate"] <= previous["maxWaitTimeEstimate"]
        previous = entry
    congestion = fees["networkCongestion"]
    assert 0 <= congestion <= 1
    assert congestion == round(sum(f < next_fee for f in window_fees) / 500, 4)
    assert [to_wei(x) for x in fees["historicalBaseFeeRange"]] == [
        min(window_fees),
        max(window_fees),
    ]
    # the ranges: the blocks' cheapest and dearest tips (rewards at 0 and 100), the trend of
    # their 50th percentile reward against the last 10 blocks' lower median
    spans = _rewards(rpc, range(head.number - 9, head.number + 1), [0, 50, 100])
    head_block = rpc("eth_getBlockByNumber", hex(head.number), True)
    tips = sorted(effective_gas_tip(tx, head.base_fee_per_gas)
                  for tx in head_block["transactions"])  # fmt: skip
    assert spans[-1][0] == tips[0] and spans[-1][2] == tips[-1]
    assert [to_wei(x) for x in fees["latestPriorityFeeRange"]] == [tips[0], tips[-1]]
    assert [to_wei(x) for x in fees["historicalPriorityFeeRange"]] == [
        min(row[0] for row in spans), max(row[2] for row in spans)]  # fmt: skip
    medians = sorted(row[1] for row in spans)
    assert fees["priorityFeeTrend"] == ("up" if spans[-1][1] >= medians[4] else "down")
    last10 = sorted(window_fees[-10:])
    assert fees["baseFeeTrend"] == ("up" if next_fee >= last10[4] else "down")


class _At:
    """A chain seen when block ``at`` was its head (the Gas API reads nothing above it)."""

    def __init__(self, chain: Chain, at: int) -> None:
        self._chain, self.at = chain, at

    def __getattr__(self, name: str):
        return getattr(self._chain, name)

    def head(self) -> int:
        return self.at


LEVELS = {"low": (0, 110, 94, 10**9), "medium": (1, 120, 97, 15 * 10**8),
          "high": (2, 125, 98, 2 * 10**9)}  # fmt: skip


@pytest.mark.parametrize("at", [120_011, 121_019, 209_247])  # busy heads: tips above the floors
def test_suggested_tips_are_the_last_blocks_fee_history_rewards(mainnet, rpc, at):
    fees = gasapi.suggested_gas_fees(_At(mainnet, at))
    head = mainnet.block(at).header
    next_fee = eip1559(head.base_fee_per_gas, head.gas_used, head.gas_limit)
    recent = _rewards(rpc, range(at - 4, at + 1), [10, 20, 30])
    above = 0
    for level, (column, base_pct, tip_pct, floor) in LEVELS.items():
        median = sorted(row[column] for row in recent)[2]  # MetaMask's medianOf: the lower
        tip = max(median * tip_pct // 100, floor)
        above += tip > floor
        assert to_wei(fees[level]["suggestedMaxPriorityFeePerGas"]) == tip, level
        assert to_wei(fees[level]["suggestedMaxFeePerGas"]) == next_fee * base_pct // 100 + tip
    assert above >= 2  # the blocks' tips decide, not the floors


def short_chain(mainnet: Chain, height: int, london: int | None) -> Chain:
    """Mainnet's rules cut at ``height``, London moved to ``london`` (None: no London)."""
    forks = {k: v for k, v in mainnet.params.forks.items() if k not in ("london", "merge")}
    eip1559_rules = mainnet.params.eip1559
    if london is not None:
        forks["london"] = london
        eip1559_rules = ((london, 2, 8),)
    params = dataclasses.replace(
        mainnet.params,
        height=height,
        forks=forks,
        eip1559=eip1559_rules,
        consensus=((0, "ethash"),),
    )
    return Chain(params, seed=3)


def test_window_straddling_london(mainnet):
    chain = short_chain(mainnet, height=1000, london=800)
    history = gasapi.base_fee_history(chain)
    assert len(history) == 201  # blocks 800..1000; 501..799 have no base fee
    expected = [chain.block(n).header.base_fee_per_gas for n in range(800, 1001)]
    assert [to_wei(s) for s in history] == expected
    assert expected[0] == 10**9
    assert to_wei(gasapi.base_fee_percentile(chain)["baseFeePercentile"]) == rank(expected, 50)
    assert gasapi.suggested_gas_fees(chain)["historicalBaseFeeRange"] == [
        gasapi.format_gwei(min(expected)),
        gasapi.format_gwei(max(expected)),
    ]


def test_window_before_london(mainnet):
    chain = short_chain(mainnet, height=300, london=None)
    assert gasapi.base_fee_history(chain) == []
    for function in (gasapi.base_fee_percentile, gasapi.busy_threshold, gasapi.suggested_gas_fees):
        with pytest.raises(gasapi.NoBaseFeeError):
            function(chain)


def test_short_chain_window(mainnet):
    """Near genesis the window holds every block there is."""
    chain = short_chain(mainnet, height=120, london=0)
    history = gasapi.base_fee_history(chain)
    assert len(history) == 121
    assert history[0] == "1.000000000"


def test_gas_api_over_http(devnet, mainnet, window_fees):
    base = f"{devnet.url}/v3/{devnet.api_key}/networks/1"
    history = httpx.get(f"{base}/baseFeeHistory", timeout=60).json()
    assert [to_wei(s) for s in history] == window_fees
    auth = (devnet.api_key, devnet.api_key_secret)
    percentile = httpx.get(f"{devnet.url}/networks/1/baseFeePercentile", auth=auth, timeout=60)
    assert to_wei(percentile.json()["baseFeePercentile"]) == rank(window_fees, 50)
    busy = httpx.get(f"{base}/busyThreshold", timeout=60).json()
    assert to_wei(busy["busyThreshold"]) == rank(window_fees, 90)
    suggested = httpx.get(f"{base}/suggestedGasFees", timeout=60).json()
    head = mainnet.block(mainnet.head()).header
    next_fee = eip1559(head.base_fee_per_gas, head.gas_used, head.gas_limit)
    assert to_wei(suggested["estimatedBaseFee"]) == next_fee
    assert suggested == gasapi.suggested_gas_fees(mainnet)  # what test_suggested_gas_fees checks
    base_l2 = f"{devnet.url}/v3/{devnet.api_key}/networks/8453/baseFeeHistory"
    l2 = devnet.chains.by_id[8453]
    expected = l2.base_fees(l2.head() - 499, l2.head() + 1)
    assert [to_wei(s) for s in httpx.get(base_l2, timeout=60).json()] == expected

"""feeslab.analysis.revenue: composition, windows, heavy tails and forks on revenue frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from feeslab import samples
from feeslab.analysis import revenue

ETH = 10**18


def _frame() -> pd.DataFrame:
    """Five blocks with parts past int64 (a 9,000 ETH fee), written out by hand."""
    return pd.DataFrame({
        "block_number": [100, 101, 102, 103, 110],
        "static_reward_wei": [2 * ETH] * 5,
        "uncle_inclusion_reward_wei": [0, ETH // 16, 0, 2 * ETH // 16, 0],
        "flashbots_bundle_gas_fee_wei": pd.Series([0, ETH, 0, 3, 0], dtype=object),
        "other_gas_fee_wei": pd.Series([ETH // 2, 0, 9_000 * ETH + 1, 5, 0], dtype=object),
        "flashbots_coinbase_transfer_wei": pd.Series([0, ETH // 4, 0, 0, 0], dtype=object),
    })  # fmt: skip


def test_composition_adds_the_parts_and_their_shares():
    frame = _frame()
    out = revenue.revenue_composition(frame)
    assert out["gas_fee_eth"].tolist() == [0.5, 1.0, 9_000.000000000000000001, 8e-18, 0.0]
    assert out["total_eth"].tolist() == pytest.approx([2.5, 3.3125, 9_002.0, 2.125, 2.0])
    assert out["bundle_eth"].tolist() == pytest.approx([0.0, 1.25, 0.0, 3e-18, 0.0])
    assert out["has_bundle"].tolist() == [False, True, False, True, False]
    parts = ["static_reward", "uncle_inclusion_reward", "gas_fee", "flashbots_coinbase_transfer"]
    assert out[[f"{p}_share" for p in parts]].sum(axis=1).tolist() == pytest.approx([1.0] * 5)
    assert out.loc[1, "bundle_share"] == pytest.approx(1.25 / 3.3125)
    assert out.loc[1, "flashbots_bundle_gas_fee_share"] == pytest.approx(1.0 / 3.3125)
    # the gas fee can be given whole (as revenue_from_transactions does)
    whole = frame.drop(columns=["flashbots_bundle_gas_fee_wei", "other_gas_fee_wei",
                                "flashbots_coinbase_transfer_wei"])  # fmt: skip
    whole["gas_fee_wei"] = pd.Series([ETH // 2, ETH, 9_000 * ETH + 1, 8, 0], dtype=object)
    plain = revenue.revenue_composition(whole)
    assert plain["total_eth"].tolist() == pytest.approx([2.5, 3.0625, 9_002.0, 2.125, 2.0])
    assert "bundle_share" not in plain.columns


def test_windows_sum_exactly_and_split_where_told():
    out = revenue.revenue_by_window(_frame(), window=5)
    assert out.index.tolist() == [100, 110] and out["blocks"].tolist() == [4, 1]
    # 0.5 + 1 + 9000 (+1 wei) + 8 wei ETH of gas fees in the first window
    assert out.loc[100, "gas_fee_eth"] == (ETH // 2 + ETH + 9_000 * ETH + 1 + 8) / ETH
    assert out.loc[100, "total_eth"] == pytest.approx(8 + 0.1875 + 9_001.5 + 0.25)
    assert out.loc[100, "blocks_with_bundle"] == 2
    assert out.loc[100, "bundle_share"] == pytest.approx((1.25 + 3e-18) / out.loc[100, "total_eth"])
    assert out.loc[100, "mean_total_eth"] == pytest.approx(out.loc[100, "total_eth"] / 4)


def test_windows_of_the_real_sample_add_up_to_its_exact_sums():
    frame = samples.miner_revenue_2021()
    out = revenue.revenue_by_window(frame, window=100_000)
    assert out["blocks"].sum() == 800_000 and len(out) == 9  # 12.7M .. 13.5M: 9 windows
    # the sums of tests/test_samples_revenue.py (computed from the source CSV)
    gas = 27_061_199_154_364_347_204_518 + 252_936_290_513_422_806_915_753
    assert out["gas_fee_eth"].sum() == pytest.approx(gas / ETH, rel=1e-12)
    assert out["flashbots_coinbase_transfer_eth"].sum() == pytest.approx(
        34_057_689_494_058_639_284_689 / ETH, rel=1e-12)  # fmt: skip
    assert out["static_reward_eth"].sum() == 1_600_000.0


def test_top_block_shares_and_the_largest_blocks_named():
    values = pd.Series([1.0] * 999 + [1_001.0])
    shares = revenue.top_block_shares(values, fractions=(0.001, 0.01))
    assert shares["blocks"].tolist() == [1, 10]
    assert shares["share"].tolist() == pytest.approx([1_001 / 2_000, 1_010 / 2_000])
    assert shares["threshold"].tolist() == [1_001.0, 1.0]
    composition = revenue.revenue_composition(_frame())
    top = revenue.largest_blocks(composition, "gas_fee_eth", n=2)
    assert top.index.tolist() == [102, 101]
    assert top.loc[102, "share_of_total"] == pytest.approx(9_000 / 9_001.5)
    with pytest.raises(ValueError, match="fractions"):
        revenue.top_block_shares(values, fractions=(0.0,))


def test_the_real_sample_has_a_heavy_tail_and_its_largest_block():
    composition = revenue.revenue_composition(samples.miner_revenue_2021())
    shares = revenue.top_block_shares(composition["gas_fee_eth"])
    assert shares.loc[0.001, "share"] > 0.1  # 0.1 % of blocks, over a tenth of the fees
    top = revenue.largest_blocks(composition, "gas_fee_eth", n=1)
    assert top.index.tolist() == [13_307_440]
    assert top["gas_fee_eth"].iloc[0] == pytest.approx(7_676.795, abs=1e-3)


def test_uncle_rates_by_revenue_read_forks_from_the_next_block():
    composition = pd.DataFrame({
        "block_number": np.arange(8),
        "gas_fee_eth": [0.1, 5.0, 0.1, 5.0, 0.1, 5.0, 0.1, 5.0],
        "has_bundle": [False, True] * 4,
    })  # fmt: skip
    # forks after every high-fee block: the next block includes one uncle
    uncles = pd.DataFrame({"block_number": np.arange(9),
                           "uncle_count": [0, 0, 1, 0, 1, 0, 1, 0, 1]})  # fmt: skip
    out = revenue.uncle_rate_by_revenue(composition, uncles, quantiles=(0.5,))
    assert out.loc["all", "blocks"] == 8 and out.loc["all", "uncles"] == 4
    assert out.loc["bundle", "rate"] == 1.0 and out.loc["no bundle", "rate"] == 0.0
    assert out.loc["bundle", "ratio"] == 2.0
    # two bands cut at the median, 2.55 ETH
    assert out.index[-2:].tolist() == ["gas_fee_eth in [0, 2.55)", "gas_fee_eth in [2.55, inf)"]
    assert out["rate"].iloc[-2:].tolist() == [0.0, 1.0]
    assert (out["lower"] <= out["rate"]).all() and (out["rate"] <= out["upper"]).all()
    own = revenue.uncle_rate_by_revenue(composition, uncles, lag=0)
    assert own.loc["bundle", "rate"] == 0.0  # the same block's own uncles: none here


def test_bad_revenue_frames_are_refused():
    with pytest.raises(TypeError, match="float"):
        revenue.revenue_composition(pd.DataFrame({"block_number": [1], "gas_fee_wei": [1.5]}))
    with pytest.raises(ValueError, match="none of the columns"):
        revenue.revenue_composition(pd.DataFrame({"block_number": [1], "fee": [1]}))
    with pytest.raises(ValueError, match="negative at block 7"):
        revenue.revenue_composition(pd.DataFrame({"block_number": [7], "gas_fee_wei": [-1]}))
    with pytest.raises(ValueError, match="each block once"):
        revenue.revenue_composition(pd.DataFrame({"block_number": [1, 1], "gas_fee_wei": [1, 2]}))
    with pytest.raises(ValueError, match="window"):
        revenue.revenue_by_window(_frame(), window=0)

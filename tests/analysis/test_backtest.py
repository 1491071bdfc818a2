"""feeslab.analysis.backtest on markets small enough to work out by hand (in the comments),
and the lowest tip taken from fee history or from a transactions frame."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from feeslab.analysis import backtest
from feeslab.frames.base_fees import fee_history_frame

BASE = [100, 100, 120, 80, 90, 90]  # blocks 100..105 [wei]
LOW = [1, 2, 5, 0, 3, 1]  # their lowest included tips [wei]; cheapest prices 101 102 125 80 93 91


def _history() -> pd.DataFrame:
    n = len(BASE)
    frame = fee_history_frame({
        "block_number": np.arange(100, 100 + n), "base_fee_wei": BASE,
        "gas_used_ratio": [0.5] * n, "base_fee_per_blob_gas_wei": [None] * n,
        "blob_gas_used_ratio": [np.nan] * n, "reward_p0_wei": LOW,
    }, [0])  # fmt: skip
    frame.attrs = {"chain_id": 1, "source": "test market"}
    return frame


def _suggest(rows: list[tuple[int, int, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["block_number", "max_fee_per_gas_wei",
                                       "max_priority_fee_per_gas_wei"])  # fmt: skip


def test_inclusion_by_hand():
    market = backtest.market_frame(_history())
    assert market.attrs["lowest_tip_source"] == "fee_history reward_p0"
    assert market["cheapest_price_wei"].tolist() == [101, 102, 125, 80, 93, 91]
    out = backtest.inclusion(_suggest([
        (100, 110, 2),  # block 101: 110 >= 102 and 2 >= 2: delay 1, pays min(110, 102) = 102
        (101, 110, 4),  # block 102: 110 < 125; block 103: delay 2, pays 84 against 80
        (102, 200, 1),  # block 103 (empty: lowest tip 0): delay 1, pays 81 against 80
        (103, 50, 9),  # never covers a base fee: not included
    ]), market, horizon=2)
    assert out["block_number"].tolist() == [100, 101, 102, 103]
    assert out["delay"].tolist() == [1, 2, 1, pd.NA]
    assert out["paid_wei"].tolist() == [102, 84, 81, pd.NA]
    assert out["overpay_wei"].tolist() == [0, 4, 1, pd.NA]
    assert out["overpay_pct"].tolist()[:3] == [0.0, 5.0, 1.25]
    assert math.isnan(out["overpay_gwei"].iloc[3])


def test_tip_below_the_lowest_waits_even_when_the_fee_covers():
    market = backtest.market_frame(_history())
    # head 100, tip 1: block 101 wants 2 (no), 102 wants 5 (no), 103 wants 0: delay 3
    out = backtest.inclusion(_suggest([(100, 1000, 1)]), market, horizon=3)
    assert out["delay"].tolist() == [3]
    # a horizon the market cannot show after the head is left out
    assert backtest.inclusion(_suggest([(104, 1000, 1)]), market, horizon=3).empty


def test_lowest_tip_from_transactions():
    history = _history()
    tx = pd.DataFrame({"block_number": [101, 101, 102, 104],
                       "effective_tip_wei": pd.array([7, 3, 4, None], dtype="Int64")})
    market = backtest.market_frame(history, transactions=tx)
    assert market.attrs["lowest_tip_source"] == "transactions"
    assert market["lowest_tip_wei"].tolist() == [0, 3, 4, 0, 0, 0]


def test_backtest_summary_and_regimes_by_hand():
    market = backtest.market_frame(_history())
    sugg = {"a": _suggest([(100, 110, 2), (101, 110, 4), (102, 200, 1)]),
            "b": _suggest([(100, 50, 0), (101, 50, 0), (102, 50, 0)])}
    regimes = pd.DataFrame({"block_number": [100, 101, 102],
                            "regime": pd.Categorical(["calm", "rising", "calm"],
                                                     categories=["calm", "rising"])})
    out = backtest.backtest(sugg, market, horizon=3, regimes=regimes)
    assert out[["estimator", "regime"]].values.tolist() == [
        ["a", "all"], ["a", "calm"], ["a", "rising"],
        ["b", "all"], ["b", "calm"], ["b", "rising"]]
    a = out.iloc[0]
    # delays 1, 2, 1: two of three within 1 block, all within 3; median 1, p90 2
    assert a["suggestions"] == 3
    assert a["within_1"] == pytest.approx(2 / 3) and a["within_3"] == 1.0
    assert math.isnan(a["within_10"])  # past the horizon: not measured
    assert (a["median_delay"], a["p90_delay"]) == (1.0, 2.0)
    assert a["overpay_gwei_median"] == pytest.approx(1e-9)  # overpayments 0, 4, 1 wei
    calm = out.iloc[1]
    assert calm["suggestions"] == 2 and calm["within_1"] == 1.0
    b = out.iloc[3]
    assert b["within_3"] == 0.0 and b["median_delay"] == np.inf
    assert math.isnan(b["overpay_gwei_median"])
    assert out.attrs["horizon"] == 3 and out.attrs["source"] == "test market"


def test_blob_multiples_by_hand():
    frame = pd.DataFrame({
        "block_number": np.arange(10, 15),
        "base_fee_per_blob_gas_wei": pd.array([10, 12, 9, 11, 20], dtype="Int64"),
        "fork": ["a", "a", "b", "b", "b"],
    })
    needed = backtest.blob_multiples(frame, within=2)
    # the least fee of the next two blocks over the current: 9/10, 9/12, 11/9
    assert needed["k_needed"].tolist() == [0.9, 0.75, 11 / 9]
    by_fork = backtest.blob_multiples_by_fork(frame, within=2, share=0.99)
    assert by_fork["fork"].tolist() == ["a", "b"]
    assert by_fork["k"].tolist() == [0.9, 11 / 9]
    assert by_fork["share_at_1"].tolist() == [1.0, 0.0]
    assert by_fork["blocks"].tolist() == [2, 1]


def test_inputs_are_checked():
    with pytest.raises(ValueError, match="horizon"):
        backtest.inclusion(_suggest([]), backtest.market_frame(_history()), horizon=0)
    with pytest.raises(ValueError, match="consecutive"):
        backtest.market_frame(_history().iloc[[0, 2]])
    with pytest.raises(ValueError, match="reward_p0_wei"):
        backtest.market_frame(_history().drop(columns="reward_p0_wei"))


def test_blob_k_on_the_real_blob_market():
    from feeslab import samples

    market = samples.blob_market()
    table = backtest.blob_multiples_by_fork(market, within=3, share=0.99)
    assert table["fork"].tolist() == ["cancun", "prague", "osaka", "bpo1", "bpo2"]
    needed = backtest.blob_multiples(market, within=3)
    for row in table.itertuples():
        k = needed.loc[needed["fork"] == row.fork, "k_needed"].to_numpy()
        assert len(k) == row.blocks
        assert np.mean(k <= row.k) >= 0.99 > np.mean(k < row.k)  # the least such k observed
    assert table["blocks"].sum() == len(market) - 3

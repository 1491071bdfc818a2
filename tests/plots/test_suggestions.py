"""feeslab.plots.suggestions draws exactly the values of the tables it is given."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from feeslab.plots import suggestions

TABLE = pd.DataFrame({
    "estimator": ["a", "b", "a", "b"], "regime": ["all", "all", "calm", "calm"],
    "within_1": [0.5, 0.9, 0.25, 1.0], "within_3": [0.75, 1.0, 0.5, 1.0],
    "within_10": [1.0, 1.0, 1.0, 1.0], "overpay_gwei_median": [0.1, 0.4, 0.2, 0.3],
    "overpay_pct_median": [1.0, 4.0, 2.0, 3.0],
})


def test_plot_inclusion_bars_are_the_shares_in_percent():
    ax = suggestions.plot_inclusion(TABLE)
    widths = sorted(round(p.get_width(), 9) for p in ax.patches)
    assert widths == sorted([50.0, 90.0, 75.0, 100.0, 100.0, 100.0])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    calm = suggestions.plot_inclusion(TABLE, regime="calm")
    assert 25.0 in [round(p.get_width(), 9) for p in calm.patches]
    with pytest.raises(ValueError, match="regime"):
        suggestions.plot_inclusion(TABLE, regime="rising")


def test_plot_overpayment_and_tradeoff_draw_the_medians():
    ax = suggestions.plot_overpayment(TABLE, unit="gwei")
    assert [round(p.get_width(), 9) for p in ax.patches] == [0.1, 0.4]
    ax = suggestions.plot_overpayment(TABLE, unit="pct", regime="calm")
    assert [round(p.get_width(), 9) for p in ax.patches] == [2.0, 3.0]
    ax = suggestions.plot_tradeoff(TABLE)
    points = np.concatenate([c.get_offsets() for c in ax.collections])
    assert points.tolist() == [[1.0, 0.5], [4.0, 0.9]]  # shares, on a logit axis in percent
    assert ax.get_yscale() == "logit" and ax.get_ylabel().endswith("(logit scale)")
    assert ax.yaxis.get_major_formatter()(0.9, 0) == "90 %"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]
    with pytest.raises(TypeError, match="backtest"):
        suggestions.plot_tradeoff(TABLE.drop(columns="within_1"))


def test_plot_blob_k_bars_are_the_margins_k_minus_1_from_zero():
    table = pd.DataFrame({"fork": ["cancun", "prague"], "k": [1.125, 1.0667],
                          "share_at_1": [0.881, 0.981]})
    ax = suggestions.plot_blob_k(table)
    assert [round(p.get_height(), 9) for p in ax.patches] == [12.5, 6.67]
    assert ax.get_ylim()[0] == 0
    assert [t.get_text() for t in ax.texts] == ["k = 1.125\n88% at k = 1",
                                                "k = 1.067\n98% at k = 1"]


def test_plot_missed_draws_what_each_estimator_missed_on_a_log_axis_and_none_at_the_edge():
    table = TABLE.assign(suggestions=4)
    ax = suggestions.plot_missed(table)
    assert ax.get_xscale() == "log" and "(log scale)" in ax.get_xlabel()
    within_1, within_3, within_10, hollow = ax.collections
    assert np.allclose(within_1.get_offsets()[:, 0], [50.0, 10.0])
    assert within_3.get_offsets()[:, 0].tolist() == [25.0]  # b got all in: not on the log axis
    assert len(within_10.get_offsets()) == 0
    assert hollow.get_offsets()[:, 0].tolist() == [12.5, 12.5, 12.5]  # half of one of 4, [%]
    assert ax.get_xlim()[0] < 12.5


def test_plot_tradeoff_draws_coinciding_estimators_once_and_names_them_together():
    # ethers and viem score alike: two markers in one place would hide one of them
    table = pd.DataFrame({
        "estimator": ["ethers", "viem", "MetaMask low", "Gas API low", "geth"], "regime": "all",
        "within_1": [0.838, 0.838, 0.985, 0.991, 0.705],
        "overpay_pct_median": [1.4, 1.4, 4.75, 4.72, 2.2],
    })
    ax = suggestions.plot_tradeoff(table)
    points = np.concatenate([c.get_offsets() for c in ax.collections])
    assert points.tolist() == [[1.4, 0.838], [4.75, 0.985], [4.72, 0.991], [2.2, 0.705]]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "ethers = viem", "MetaMask low", "Gas API low", "geth"]
    low, high = ax.get_ylim()
    assert low < 0.705 and high > 0.991  # every point inside the logit axis's ticks


def test_plot_tradeoff_leaves_room_for_a_point_just_under_a_tick():
    # 994 of 995 heads: 99.8995 %, a hair under the 99.9 % tick, must not sit on the frame
    table = pd.DataFrame({"estimator": ["high", "low"], "regime": "all",
                          "within_1": [994 / 995, 0.705], "overpay_pct_median": [12.3, 2.2]})
    ax = suggestions.plot_tradeoff(table)
    low, high = ax.get_ylim()
    logit = lambda p: np.log(p / (1 - p))  # noqa: E731
    assert logit(high) - logit(994 / 995) > 0.1
    assert logit(0.705) - logit(low) > 0.1

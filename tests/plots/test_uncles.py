"""feeslab.plots.uncles: the artists, data and labels each plot draws."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.dates import date2num

from feeslab.analysis import uncles as U
from feeslab.plots import (
    REWARD_PARTS,
    plot_concentration,
    plot_depth_distribution,
    plot_miner_shares,
    plot_miner_uncles,
    plot_model_vs_data,
    plot_rewards,
    plot_uncle_rate,
    plot_uncle_rate_against,
)


def scan(counts, start=0):
    return pd.DataFrame({"block_number": np.arange(start, start + len(counts)),
                         "uncle_count": np.asarray(counts, dtype=np.int64)})


def errorbar(ax):
    (container,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    return container


def bar_extents(container):
    """Bottom and top of each vertical error bar of an errorbar container, flattened."""
    (segments,) = container.lines[2]
    return [end for seg in segments.get_segments() for end in (seg[0][1], seg[1][1])]


def bounds(table):
    return [v for pair in zip(table["lower"], table["upper"], strict=True) for v in pair]


def test_plot_uncle_rate_by_window_draws_rates_and_their_intervals():
    rng = np.random.default_rng(5)
    table = U.uncle_rate_by_window(scan(rng.binomial(1, 0.08, 3_000), start=10_000), 1_000)
    ax = plot_uncle_rate(table)
    bars = errorbar(ax)
    x, y = bars.lines[0].get_data()
    assert list(x) == [10_500, 11_500, 12_500]  # window centres
    assert list(y) == table["rate"].tolist()
    assert bar_extents(bars) == pytest.approx(bounds(table))
    assert ax.get_ylabel() == "uncle rate [uncles/block]"
    assert ax.get_xlabel() == "block number (window centre)"


def test_plot_uncle_rate_by_era_and_by_day():
    blocks = scan([1, 0, 0, 0, 1, 1], start=29_997)
    blocks["timestamp"] = pd.to_datetime(
        [1_704_067_200 + 40_000 * i for i in range(6)], unit="s", utc=True
    )
    eras = U.uncle_rate_by_era(blocks, spec="mainnet@devnet")  # a spec by its label
    ax = plot_uncle_rate(eras)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["genesis", "byzantium"]
    assert list(errorbar(ax).lines[0].get_ydata()) == eras["rate"].tolist()
    assert ax.get_xlabel() == "era"
    days = U.uncle_rate_by_day(blocks)
    ax = plot_uncle_rate(days, color="C3")
    x = errorbar(ax).lines[0].get_xdata()
    assert list(date2num(x)) == list(date2num(days.index.tz_localize(None)))
    assert ax.get_xlabel() == "day (UTC)"


def test_plot_depth_distribution_draws_a_bar_per_depth_with_error_bars():
    table = U.depth_distribution(pd.DataFrame({"depth": [1] * 30 + [2] * 8 + [3] * 2}))
    ax = plot_depth_distribution(table, log=True)
    (bars,) = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert [p.get_x() + p.get_width() / 2 for p in bars.patches] == [1, 2, 3, 4, 5, 6]
    assert [p.get_height() for p in bars.patches] == table["share"].tolist()
    assert bars.errorbar is not None
    (segments,) = bars.errorbar.lines[2]
    tops = [seg[1][1] for seg in segments.get_segments()]
    assert tops == pytest.approx(table["upper"].tolist())
    assert ax.get_yscale() == "log"
    assert ax.get_xlabel() == "depth: including block - uncle [blocks]"
    assert ax.get_ylabel() == "share of uncles [fraction]"


def test_plot_rewards_stacks_the_three_parts_per_era():
    blocks = scan([1, 0, 2, 0], start=29_998)
    uncles = pd.DataFrame({"block_number": [29_998, 30_000, 30_000],
                           "uncle_number": [29_997, 29_999, 29_998],
                           "depth": [1, 1, 2]})  # fmt: skip
    table = U.rewards_by_era(blocks, uncles, spec="mainnet@devnet")
    ax = plot_rewards(table)
    containers = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert len(containers) == 3
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        label for _, label, _ in REWARD_PARTS
    ]
    block, nephew, uncle = containers
    assert [p.get_height() for p in block.patches] == table["block_reward_eth"].tolist()
    # stacked: each part starts where the one below ends
    assert [p.get_y() for p in nephew.patches] == table["block_reward_eth"].tolist()
    assert [p.get_y() for p in uncle.patches] == pytest.approx(
        (table["block_reward_eth"] + table["nephew_reward_eth"]).tolist()
    )
    assert [t.get_text() for t in ax.get_xticklabels()] == ["genesis", "byzantium"]
    assert ax.get_ylabel() == "issuance [ETH/block]"


def test_plot_rewards_zooms_on_nephew_and_uncle_rewards():
    blocks = scan([1, 0, 2, 0], start=29_998)
    uncles = pd.DataFrame({"block_number": [29_998, 30_000, 30_000],
                           "uncle_number": [29_997, 29_999, 29_998],
                           "depth": [1, 1, 2]})  # fmt: skip
    table = U.rewards_by_era(blocks, uncles, spec="mainnet@devnet")
    ax = plot_rewards(table, parts=["uncle_reward_eth", "nephew_reward_eth"])
    nephew, uncle = [c for c in ax.containers if isinstance(c, BarContainer)]
    # the stack starts at zero, not on top of the block reward, so the small parts fill the axis
    assert [p.get_y() for p in nephew.patches] == [0.0, 0.0]
    assert [p.get_height() for p in nephew.patches] == table["nephew_reward_eth"].tolist()
    assert [p.get_y() for p in uncle.patches] == table["nephew_reward_eth"].tolist()
    assert ax.get_ylim()[1] < table["block_reward_eth"].min()  # the block reward is not drawn
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["nephew rewards (includers)", "uncle rewards"]
    with pytest.raises(ValueError, match="parts must name"):
        plot_rewards(table, parts=["tips"])


def test_plot_miner_shares_draws_the_largest_on_top_with_short_addresses():
    miners = ["0x" + c * 40 for c in "abc"]
    table = U.miner_shares(pd.DataFrame({"miner": [miners[0]] * 5 + [miners[1]] * 3 +
                                         [miners[2]]}))
    ax = plot_miner_shares(table, top=2)
    (bars,) = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert len(bars.patches) == 2
    widths = {p.get_y() + p.get_height() / 2: p.get_width() for p in bars.patches}
    assert widths == {1.0: 5 / 9, 0.0: 3 / 9}
    ticks = dict(zip(ax.get_yticks(), [t.get_text() for t in ax.get_yticklabels()], strict=True))
    assert ticks == {1: "0xaaaa…aaaa", 0: "0xbbbb…bbbb"}
    assert ax.get_xlabel() == "share of blocks [fraction]"


def test_plot_miner_uncles_places_each_miner_at_its_share_and_stale_rate():
    blocks = pd.DataFrame({"block_number": range(10), "miner": list("aaaaaabbbc"),
                           "uncle_count": [0, 1, 0, 0, 1, 0, 0, 0, 0, 0]})
    uncles = pd.DataFrame({"block_number": [1, 4], "miner": ["b", "c"]})
    table = U.miner_uncles(blocks, uncles)
    ax = plot_miner_uncles(table)
    x, y = errorbar(ax).lines[0].get_data()
    assert list(x) == table["share"].tolist()
    assert list(y) == table["stale_rate"].tolist()
    assert "stale rate" in ax.get_ylabel() and "[fraction]" in ax.get_ylabel()
    assert ax.get_xlabel() == "share of canonical blocks [fraction]"


def test_plot_concentration_draws_both_indexes_per_group():
    blocks = pd.DataFrame({"miner": list("aabbbbcd"), "window": [0, 0, 0, 0, 1000, 1000,
                                                                  1000, 1000]})
    table = U.miner_concentration(blocks, by="window")
    ax = plot_concentration(table)
    sample, unbiased = ax.get_lines()
    assert list(sample.get_xdata()) == [0, 1000]
    assert list(sample.get_ydata()) == table["hhi"].tolist()
    assert list(unbiased.get_ydata()) == table["hhi_unbiased"].tolist()
    assert ax.get_ylabel() == "Herfindahl-Hirschman index [1]"
    assert ax.get_xlabel() == "window"


def test_plot_model_vs_data_draws_observed_bins_and_the_model_line():
    rng = np.random.default_rng(3)
    gas = rng.uniform(0, 20e6, 6_000)
    heights = pd.DataFrame(
        {
            "gas_used": gas,
            "block_time_s": 13.0,
            "forked": rng.random(6_000) < -np.expm1(-(1 + 0.05 * gas / 1e6) / 13),
        }
    )
    table = U.model_vs_data(heights, U.fit_propagation_delay(heights), bins=4)
    ax = plot_model_vs_data(table)
    observed = errorbar(ax)
    assert list(observed.lines[0].get_ydata()) == table["rate"].tolist()
    assert bar_extents(observed) == pytest.approx(bounds(table))
    model = [line for line in ax.get_lines() if line.get_label().startswith("model")]
    assert list(model[0].get_ydata()) == table["predicted"].tolist()
    assert list(model[0].get_xdata()) == table["x"].tolist()
    assert ax.get_xlabel() == "gas used [Mgas]"
    assert ax.get_ylabel() == "fork rate [forks/height]"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "model: 1 - exp(-delay / block time)", "observed"]


@pytest.mark.parametrize(
    ("plot", "frame"),
    [
        (plot_uncle_rate, U.uncle_rate(scan([0, 1, 0]))),
        (plot_depth_distribution, U.depth_distribution(pd.DataFrame({"depth": [1, 2]}))),
        (plot_miner_shares, U.miner_shares(pd.DataFrame({"miner": ["a", "b"]}))),
        (plot_concentration, U.miner_concentration(pd.DataFrame({"miner": ["a", "b", "b"]}))),
    ],
)
def test_plots_draw_on_the_axes_given_and_make_a_figure_only_without_one(plot, frame):
    _, ax = plt.subplots()
    before = plt.get_fignums()
    assert plot(frame, ax=ax) is ax
    assert plt.get_fignums() == before
    made = plot(frame)
    assert made is not ax
    assert made.figure.number not in before
    with pytest.raises(TypeError, match="columns"):
        plot(pd.DataFrame({"x": [1]}))


def test_plot_uncle_rate_against_a_column_puts_each_rate_at_its_value():
    table = U.uncle_rate(scan([1, 0, 0, 1, 1, 1, 0, 0]), by=pd.Series(["a"] * 4 + ["b"] * 4))
    table["mean_block_time_s"] = [9.0, 2.5]
    ax = plot_uncle_rate_against(table, x="mean_block_time_s", xlabel="mean block time [s]")
    bars = errorbar(ax)
    x, y = bars.lines[0].get_data()
    assert list(x) == [9.0, 2.5]
    assert list(y) == table["rate"].tolist()
    assert bar_extents(bars) == pytest.approx(bounds(table))
    assert [t.get_text() for t in ax.texts] == ["a", "b"]
    assert ax.get_xlabel() == "mean block time [s]"
    with pytest.raises(TypeError, match="'gas'"):
        plot_uncle_rate_against(table, x="gas")
    plt.close("all")

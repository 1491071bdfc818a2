"""feeslab.plots.blobs: the artists, data and labels each blob plot draws."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba
from matplotlib.patches import Rectangle

from feeslab import plots
from feeslab.analysis import fees
from feeslab.plots import plot_blob_base_fee, plot_blob_regimes, plot_blob_usage, plot_burn
from feeslab.protocol.chainspec import ChainSpec

CANCUN_FRACTION = 3_338_477


@pytest.fixture
def chain() -> pd.DataFrame:
    """300 blocks made by EIP-4844's rule (Cancun): 100 full, 100 empty, 100 at target."""
    blobs = [6] * 100 + [0] * 100 + [3] * 100
    excess = [10 * 2**17]
    for count in blobs[:-1]:
        excess.append(max(0, excess[-1] + count * 2**17 - 3 * 2**17))
    frame = pd.DataFrame(
        {
            "block_number": np.arange(175_000, 175_300),
            "timestamp": pd.date_range("2024-03-14", periods=300, freq="12s", tz="UTC"),
            "base_fee_wei": np.full(300, 10**10),
            "gas_used": np.full(300, 15_000_000),
            "blob_gas_used": pd.array(np.array(blobs) * 2**17, dtype="Int64"),
            "excess_blob_gas": pd.array(excess, dtype="Int64"),
            "uncle_count": np.zeros(300, dtype=np.int64),
        }
    )
    frame["blob_base_fee_wei"] = fees.blob_base_fees(frame, spec=ChainSpec.devnet(1))
    return frame


def test_blob_base_fee_draws_the_fees_on_a_log_axis(chain):
    ax = plot_blob_base_fee(chain, forks={"cancun": 175_000})
    line = ax.get_lines()[0]
    assert np.array_equal(line.get_xdata(), chain["block_number"].to_numpy())
    assert np.array_equal(line.get_ydata(), chain["blob_base_fee_wei"].astype(float).to_numpy())
    assert ax.get_yscale() == "log"
    assert "wei" in ax.get_ylabel()
    assert any(t.get_text() == "cancun" for t in ax.texts)


def test_blob_usage_shades_the_bracket_and_draws_target_and_max(chain):
    usage = fees.infer_blob_usage(chain, spec=ChainSpec.devnet(1))
    ax = plot_blob_usage(usage, truth=chain["blob_gas_used"] // 2**17)
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["target", "max", "carried"]
    target = ax.get_lines()[0].get_ydata()
    assert set(np.unique(target)) == {3.0}
    assert "blobs" in ax.get_ylabel()


def test_regimes_colour_each_regime(chain):
    regimes = fees.blob_fee_regimes(chain, window=16)
    ax = plot_blob_regimes(chain, regimes)
    drawn = {c.get_label(): len(c.get_offsets()) for c in ax.collections}
    counts = regimes["regime"].astype(str).value_counts().to_dict()
    assert drawn == {k: v for k, v in counts.items() if v}
    assert {"rising", "falling"} <= set(drawn)


def test_burn_stacks_blob_on_base_fee(chain):
    daily = fees.burn_by_day(fees.fee_burn(chain, spec=ChainSpec.devnet(1)), freq="h")
    ax = plot_burn(daily)
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(bars) == 2 * len(daily)
    base, blob = bars[: len(daily)], bars[len(daily) :]
    assert [b.get_height() for b in base] == pytest.approx(daily["base_fee_burn_eth"].tolist())
    assert [b.get_y() for b in blob] == pytest.approx(daily["base_fee_burn_eth"].tolist())
    assert ax.get_ylabel() == "ETH per hour [ETH]"


def test_plots_name_the_frame_they_need():
    with pytest.raises(TypeError, match="infer_blob_usage"):
        plot_blob_usage(pd.DataFrame({"x": [1]}))
    with pytest.raises(TypeError, match="burn_by_day"):
        plot_burn(pd.DataFrame({"x": [1]}))


# -- the real market's plots ----------------------------------------------------------------


def market_days() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "min_blob_base_fee_wei": [1, 1, 10], "median_blob_base_fee_wei": [1, 100, 20],
            "max_blob_base_fee_wei": [1, 10**12, 30], "mean_blobs": [2.5, 3.0, 4.0],
            "target_blobs": [3, 3, 6], "max_blobs": [6, 6, 9],
            "fork": ["cancun", "cancun", "prague"],
        },
        index=pd.to_datetime(["2025-05-05", "2025-05-06", "2025-05-07"], utc=True),
    )  # fmt: skip


def test_plot_blob_fee_by_period_draws_the_range_and_the_median_and_marks_forks():
    from feeslab.plots import plot_blob_fee_by_period

    ax = plot_blob_fee_by_period(market_days())
    assert ax.get_yscale() == "log"
    median = ax.lines[0]
    assert median.get_ydata().tolist() == [1.0, 100.0, 20.0]
    assert len(ax.collections) == 1  # the min-max band
    assert [t.get_text() for t in ax.texts] == ["prague"]  # where the fork changes
    assert ax.get_ylabel() == "blob base fee [wei / blob gas] (log scale)"
    assert ax.get_legend().get_bbox_to_anchor().x0 > ax.get_window_extent().x1 - 1  # off the data


def test_plot_blob_fee_by_period_puts_the_names_of_close_forks_either_side_of_their_lines():
    from feeslab.plots import plot_blob_fee_by_period

    days = pd.date_range("2025-01-01", periods=400, freq="D", tz="UTC")
    forks = ["prague"] * 200 + ["osaka"] * 6 + ["bpo1"] * 194  # six days apart in 400
    frame = pd.DataFrame({"min_blob_base_fee_wei": 1, "median_blob_base_fee_wei": 2,
                          "max_blob_base_fee_wei": 3, "fork": forks}, index=days)
    ax = plot_blob_fee_by_period(frame)
    sides = {t.get_text(): t.get_horizontalalignment() for t in ax.texts}
    assert sides == {"osaka": "right", "bpo1": "left"}


def test_plot_blob_counts_by_period_draws_means_against_target_and_max():
    from feeslab.plots import plot_blob_counts_by_period

    ax = plot_blob_counts_by_period(market_days())
    assert ax.lines[0].get_ydata().tolist() == [2.5, 3.0, 4.0]
    labels = [line.get_label() for line in ax.lines[1:3]]
    assert labels == ["target", "max"]
    assert ax.get_ylim()[0] == 0


def test_plot_excess_branches_stacks_the_branches_present_to_100_percent():
    from feeslab.plots import plot_excess_branches

    shares = pd.DataFrame(
        {"below_target": [0.0, 0.0], "target": [0.25, 0.5], "reserve": [0.75, 0.5],
         "either": [0.0, 0.0], "off_rule": [0.0, 0.0], "blocks": [4, 2]},
        index=pd.to_datetime(["2025-12-04", "2025-12-05"], utc=True),
    )  # fmt: skip
    ax = plot_excess_branches(shares)
    assert len(ax.collections) == 2  # target and reserve: branches never taken are left out
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["target", "reserve"]
    assert ax.get_ylim() == (0, 100)


def test_plot_blob_fee_vs_reserve_draws_both_prices():
    from feeslab.plots import plot_blob_fee_vs_reserve

    blocks = pd.DataFrame({"block_number": [1, 2], "blob_base_fee_wei": [5, 7],
                           "reserve_price_wei": pd.array([100, None], dtype="Int64")})  # fmt: skip
    ax = plot_blob_fee_vs_reserve(blocks)
    assert ax.lines[0].get_ydata().tolist() == [5.0, 7.0]
    assert ax.lines[1].get_ydata()[0] == 100.0 and np.isnan(ax.lines[1].get_ydata()[1])
    with pytest.raises(TypeError, match="reserve_price_wei"):
        plot_blob_fee_vs_reserve(blocks.drop(columns="reserve_price_wei"))


def test_plot_blob_counts_by_branch_colours_each_block_by_its_branch():
    frame = pd.DataFrame({"block_number": [10, 11, 12, 13],
                          "blob_gas_used": pd.array([9, 9, 4, 6], dtype="Int64") * 2**17})
    branches = pd.Series(["target", "either", "reserve", "target"])
    ax = plots.plot_blob_counts_by_branch(frame, branches, target=6, maximum=9)
    drawn = {c.get_label(): c.get_offsets().tolist() for c in ax.collections}
    assert drawn == {"target": [[10, 9], [13, 6]], "reserve": [[12, 4]], "either": [[11, 9]]}
    colours = {c.get_label(): tuple(c.get_facecolor()[0]) for c in ax.collections}
    assert colours["reserve"] == to_rgba(plots.EXCESS_BRANCH_COLOURS["reserve"])
    assert [(line.get_label(), line.get_ydata()[0]) for line in ax.get_lines()] == [
        ("blob target", 6), ("blob max", 9)]  # not "target": that names a branch here
    assert ax.get_ylabel() == "blobs per block [blobs]"
    with pytest.raises(ValueError, match="excess_branches"):
        plots.plot_blob_counts_by_branch(frame, branches.iloc[:3])

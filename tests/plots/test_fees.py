"""feeslab.plots.fees: the artists, data and labels each plot draws."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.patches import Rectangle

import feeslab.plots
from feeslab.analysis import fees
from feeslab.plots import (
    plot_base_fee,
    plot_base_fee_bounds,
    plot_block_states,
    plot_fee_summary,
    plot_gas_api_percentiles,
    plot_regime_spans,
    plot_regimes,
    plot_utilisation,
    plot_volatility,
)

LIMIT, TARGET = 30_000_000, 15_000_000


@pytest.fixture
def history() -> pd.DataFrame:
    """600 blocks built with EIP-1559 from known gas: full, empty, swinging, near target."""
    used = [LIMIT] * 150 + [0] * 150 + [LIMIT, 0] * 75 + [TARGET + 200_000] * 150
    fee = [20 * 10**9]
    for gas in used:
        fee.append(int(fees.next_base_fee(fee[-1], gas, LIMIT)))
    frame = pd.DataFrame(
        {
            "block_number": np.arange(1_000, 1_000 + len(fee)),
            "base_fee_wei": fee,
            "gas_used": [*used, TARGET],
            "gas_limit": LIMIT,
        }
    )
    frame["base_fee_gwei"] = frame["base_fee_wei"] / 1e9
    # Sepolia's rules (London from genesis, elasticity 2, denominator 8) are the ones used
    frame.attrs.update(chain_id=11155111, chain_spec="sepolia")
    return frame


def _line(ax, label):
    (line,) = [line for line in ax.lines if line.get_label() == label]
    return line


def test_every_fee_plot_is_exported_in_sorted_order():
    assert fees.__all__ == sorted(fees.__all__)
    assert feeslab.plots.fees.__all__ == sorted(feeslab.plots.fees.__all__)
    assert {n for n in feeslab.plots.fees.__all__ if n.startswith("plot_")} <= set(
        feeslab.plots.__all__
    )


def test_plot_base_fee_draws_the_gwei_series_against_block_numbers(history):
    ax = plot_base_fee(history, label="devnet", color="C3")
    (line,) = ax.lines
    assert list(line.get_xdata()) == history["block_number"].tolist()
    assert np.allclose(line.get_ydata(), history["base_fee_wei"] / 1e9)
    assert line.get_label() == "devnet" and line.get_color() == "C3"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("block number", "base fee [gwei]")
    # from wei alone (no gwei column), and with a positional index
    ax = plot_base_fee(history[["base_fee_wei"]])
    assert np.allclose(ax.lines[0].get_ydata(), history["base_fee_wei"] / 1e9)
    assert list(ax.lines[0].get_xdata()) == list(range(len(history)))
    assert ax.get_xlabel() == "row"


def test_plots_draw_on_the_axes_given_and_make_no_figure_of_their_own(history, monkeypatch):
    monkeypatch.setattr(plt, "show", lambda *a, **k: pytest.fail("plt.show() was called"))
    fig, ax = plt.subplots()
    before = plt.get_fignums()
    inferred = fees.infer_utilisation(history)
    assert plot_base_fee(history, ax=ax) is ax
    assert plot_utilisation(inferred, ax=ax) is ax
    assert plot_volatility(history.assign(volatility=fees.rolling_volatility(history)), ax=ax) is ax
    assert plt.get_fignums() == before
    plt.close(fig)
    assert plot_base_fee(history).figure.number in plt.get_fignums()


@pytest.mark.parametrize(
    ("plot", "frame"),
    [
        (plot_base_fee, pd.DataFrame({"x": [1]})),
        (plot_utilisation, pd.DataFrame({"gas_used_target_ratio": [1.0]})),
        (plot_block_states, pd.DataFrame({"base_fee_wei": [1]})),
        (plot_volatility, pd.DataFrame({"base_fee_wei": [1]})),
        (plot_regimes, pd.DataFrame({"drift": [0.0]})),
        (plot_regime_spans, pd.DataFrame({"regime": ["calm"]})),
        (plot_gas_api_percentiles, pd.DataFrame({"base_fee_wei": [1]})),
        (plot_base_fee_bounds, pd.DataFrame({"blocks_ahead": [0]})),
        (plot_fee_summary, pd.DataFrame({"blocks": [1.0]})),
        (plot_base_fee, pd.Series([1, 2])),
    ],
)
def test_plots_refuse_frames_without_their_columns(plot, frame):
    with pytest.raises(TypeError, match=r"frame must be|fee_summary rows"):
        plot(frame)


def test_plot_utilisation_draws_the_interval_the_estimate_and_the_truth(history):
    inferred = fees.infer_utilisation(history)
    truth = fees.gas_used_target_ratio(history)
    ax = plot_utilisation(inferred, truth=truth, full_ratio=2.0)
    (band,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert band.get_label().endswith("rounding interval (too narrow to see)")  # fees of gwei
    estimate = _line(ax, "inferred from base fees")
    assert np.allclose(estimate.get_ydata(), inferred["gas_used_target_ratio"], equal_nan=True)
    headers = _line(ax, "from headers")
    assert np.allclose(headers.get_ydata(), truth, equal_nan=True)
    assert headers.get_linestyle() == "None"
    levels = sorted(
        line.get_ydata()[0] for line in ax.lines if line.get_label() in ("target", "full block")
    )
    assert levels == [1.0, 2.0]
    assert ax.get_ylabel() == "gas used / gas target [1]"
    assert {t.get_text() for t in ax.get_legend().get_texts()} >= {"target", "from headers"}


def width(inferred: pd.DataFrame) -> pd.Series:
    return inferred["gas_used_target_ratio_high"] - inferred["gas_used_target_ratio_low"]


def test_a_rounding_interval_too_narrow_to_see_stays_out_of_the_legend(history):
    # at 20 gwei and up the interval is a few parts in 1e10 of the target wide
    high_fees = fees.infer_utilisation(history.iloc[:150])
    ax = plot_utilisation(high_fees)
    assert width(high_fees).max() < 1e-6
    (band,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert band.get_label().startswith("_")  # drawn, unnamed
    assert "rounding interval" not in {t.get_text() for t in ax.get_legend().get_texts()}
    # at base fees of tens of wei the change rounds off most of the information: named
    used = [TARGET + 3_000_000, TARGET - 3_000_000] * 20
    fee = [64]
    for gas in used:
        fee.append(int(fees.next_base_fee(fee[-1], gas, LIMIT)))
    cheap = history.iloc[: len(fee)].assign(base_fee_wei=fee, gas_used=[*used, TARGET])
    inferred = fees.infer_utilisation(cheap)
    assert width(inferred).max() > 0.05
    ax = plot_utilisation(inferred)
    assert "rounding interval" in {t.get_text() for t in ax.get_legend().get_texts()}


def test_plot_block_states_marks_full_and_empty_blocks_where_they_are(history):
    states = fees.block_states(fees.infer_utilisation(history))
    ax = plot_block_states(history.assign(state=states))
    full = next(line for line in ax.lines if line.get_label().startswith("full"))
    empty = next(line for line in ax.lines if line.get_label().startswith("empty"))
    assert full.get_label() == f"full ({(states == 'full').sum():,})"
    assert full.get_marker() == "^" and empty.get_marker() == "v"
    assert set(full.get_xdata()) == set(history["block_number"][states == "full"])
    assert set(empty.get_xdata()) == set(history["block_number"][states == "empty"])
    assert not any(line.get_label().startswith("unclear") for line in ax.lines)
    assert ax.get_ylabel() == "base fee [gwei]"


def test_plot_volatility_and_plot_regimes_draw_what_the_analysis_gave(history):
    volatility = fees.rolling_volatility(history, window=20)
    ax = plot_volatility(history.assign(volatility=volatility))
    assert np.allclose(ax.lines[0].get_ydata(), volatility, equal_nan=True)
    assert ax.get_ylabel() == "volatility of log base fee [1/√block]"
    regimes = fees.fee_regimes(history, window=32)
    ax = plot_regimes(regimes, drift_threshold=0.25)
    assert np.allclose(_line(ax, "drift").get_ydata(), regimes["drift"], equal_nan=True)
    assert np.allclose(_line(ax, "spread").get_ydata(), regimes["spread"], equal_nan=True)
    dotted = sorted(line.get_ydata()[0] for line in ax.lines if line.get_linestyle() == ":")
    assert dotted == [-0.25, 0.25]
    assert ax.get_ylabel() == "excess gas used / target [1]"


def test_plot_regime_spans_shades_each_run_once_in_its_colour(history):
    spans = fees.regime_spans(fees.fee_regimes(history, window=32))
    ax = plot_regime_spans(spans)
    shades = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(shades) == len(spans) >= 4
    first = shades[0]
    assert first.get_x() == spans["first_block"].iloc[0] - 0.5
    assert first.get_x() + first.get_width() == spans["last_block"].iloc[0] + 0.5
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sorted(legend) == sorted(spans["regime"].astype(str).unique())  # once per regime
    colour = feeslab.plots.REGIME_COLOURS[str(spans["regime"].iloc[0])]
    assert np.allclose(first.get_facecolor()[:3], plt.matplotlib.colors.to_rgb(colour))


def test_plot_gas_api_percentiles_draws_the_three_series(history):
    frame = fees.gas_api_percentiles(history, window=100)
    ax = plot_gas_api_percentiles(frame)
    labels = [line.get_label() for line in ax.lines]
    assert labels == ["base fee", "baseFeePercentile (median)", "busyThreshold (90th percentile)"]
    assert np.allclose(
        ax.lines[2].get_ydata(), frame["busy_threshold_wei"].astype(float) / 1e9, equal_nan=True
    )
    assert ax.get_ylabel() == "base fee [gwei]"


def test_plot_base_fee_bounds_draws_the_fan_between_empty_and_full_blocks():
    bounds = fees.base_fee_bounds(25 * 10**9, 12)
    ax = plot_base_fee_bounds(bounds)
    (band,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert band.get_label() == "reachable"
    full, empty = _line(ax, "all blocks full"), _line(ax, "all blocks empty")
    assert list(full.get_xdata()) == list(range(13))
    assert np.allclose(full.get_ydata(), bounds["highest_base_fee_gwei"])
    assert np.allclose(empty.get_ydata(), bounds["lowest_base_fee_gwei"])
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("blocks ahead [blocks]", "base fee [gwei]")


def test_plot_fee_summary_draws_a_bar_per_chain_with_the_unit(history):
    summary = pd.DataFrame(
        [
            fees.fee_summary(history, name="a"),
            fees.fee_summary(history, max_change_denominator=16, name="b"),
        ]
    )
    ax = plot_fee_summary(summary, column="max_fall")
    bars = ax.patches
    assert [bar.get_width() for bar in bars] == [0.125, 0.0625]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    assert ax.get_xlabel() == "largest fall per block [fraction]"
    assert ax.yaxis_inverted()  # first chain on top
    ax = plot_fee_summary(summary, column="max_fall", percent=True)
    assert [bar.get_width() for bar in ax.patches] == [12.5, 6.25]
    assert ax.get_xlabel() == "largest fall per block [%]"
    with pytest.raises(ValueError, match="needs a fraction"):
        plot_fee_summary(summary, column="median_base_fee_gwei", percent=True)


def test_plot_tip_cdf_draws_one_step_line_per_block_from_zero_to_100():
    import matplotlib.pyplot as plt

    from feeslab.analysis.fees import tip_cdf
    from feeslab.plots import plot_tip_cdf

    txs = pd.DataFrame({"block_number": [7, 7, 8], "effective_tip_wei": [10**9, 0, 2 * 10**9],
                        "gas_used": [30_000, 10_000, 21_000]})  # fmt: skip
    ax = plot_tip_cdf(tip_cdf(txs))
    seven, eight = ax.lines
    assert seven.get_label() == "7" and eight.get_label() == "8"
    assert seven.get_xdata().tolist() == [0.0, 0.0, 1.0]  # from the origin, then each tip [gwei]
    assert seven.get_ydata().tolist() == [0.0, 25.0, 100.0]
    assert ax.get_xscale() == "symlog" and ax.get_ylim() == (0, 100)
    with pytest.raises(TypeError, match="tip_cdf"):
        plot_tip_cdf(txs)
    plt.close("all")

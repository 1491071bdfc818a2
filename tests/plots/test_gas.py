"""feeslab.plots.gas: the artists, data and labels each plot draws."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from feeslab.plots import plot_cost_history, plot_estimate_accuracy


@pytest.fixture
def accuracy() -> pd.DataFrame:
    return pd.DataFrame(
        {"transaction": ["burn", "revert"],
         "gas_estimate": pd.array([50_750, None], dtype="Int64"),
         "gas_needed": pd.array([50_000, None], dtype="Int64"),
         "overshoot_ratio": [0.015, float("nan")],
         "error": pd.Series([None, "feeslab: not allowed"], dtype="str")}
    )


def test_plot_estimate_accuracy_draws_the_overshoot_in_percent(accuracy):
    ax = plot_estimate_accuracy(accuracy.assign(overshoot_gas=pd.array([750, None], dtype="Int64")))
    (overshoots,) = ax.containers
    assert [bar.get_width() for bar in overshoots] == pytest.approx([1.5, 0])
    assert [t.get_text() for t in ax.texts] == ["+1.5 % (750 gas)", ""]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "burn", "revert\n(feeslab: not allowed)",
    ]
    assert ax.get_xlabel() == "eth_estimateGas above the gas needed [%]"
    (tolerance,) = ax.get_lines()
    assert list(tolerance.get_xdata()) == [1.5, 1.5]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["estimator's tolerance (1.5 %)"]
    assert ax.get_xlim()[1] > 1.5  # the tolerance line and the labels fit


def test_plot_cost_history_draws_a_line_per_transaction_in_the_unit_asked(accuracy):
    costs = pd.DataFrame(
        {"block_number": [1, 2, 1, 2], "transaction": ["a", "a", "b", "b"],
         "gas": [21_000, 21_000, 50_000, 50_000], "cost_eth": [0.1, 0.2, 0.3, 0.4],
         "cost_gwei": [1e8, 2e8, 3e8, 4e8]}
    )
    _, ax = plt.subplots()
    assert plot_cost_history(costs, ax=ax) is ax
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["a (21,000 gas)", "b (50,000 gas)"]
    assert list(lines[1].get_ydata()) == [0.3, 0.4] and list(lines[1].get_xdata()) == [1, 2]
    assert ax.get_ylabel() == "cost [ETH]" and ax.get_xlabel() == "block number"
    gwei = plot_cost_history(costs, unit="gwei")
    assert gwei is not ax and gwei.get_ylabel() == "cost [gwei]"
    assert list(gwei.get_lines()[0].get_ydata()) == [1e8, 2e8]
    with pytest.raises(ValueError, match="unit"):
        plot_cost_history(costs, unit="wei")
    with pytest.raises(TypeError, match="cost_over_history"):
        plot_cost_history(accuracy)

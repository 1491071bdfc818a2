"""feeslab.plots.storage: the artists, data and labels each plot draws."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.dates import date2num

from feeslab.analysis.storage import layout_table
from feeslab.devnet.contracts import load_artifacts
from feeslab.plots import (
    plot_implementation_periods,
    plot_oracle_answers,
    plot_storage_layout,
    plot_token_balances,
)


@pytest.fixture
def token_layout() -> pd.DataFrame:
    return layout_table(load_artifacts()["FeeslabToken"].storage_layout)


def test_plot_storage_layout_draws_a_box_per_variable_at_its_bytes(token_layout):
    ax = plot_storage_layout(token_layout)
    bars = ax.patches
    assert len(bars) == len(token_layout) == 7
    by_label = dict(zip(token_layout["label"], bars, strict=True))
    # decimals: 1 byte at offset 20; owner: 20 bytes at offset 0, both on slot 5's row
    assert (by_label["decimals"].get_x(), by_label["decimals"].get_width()) == (20, 1)
    assert (by_label["owner"].get_x(), by_label["owner"].get_width()) == (0, 20)
    assert by_label["owner"].get_y() == by_label["decimals"].get_y()
    hatched = {label for label, bar in by_label.items() if bar.get_hatch()}
    assert hatched == {"_balances", "_allowances", "_name", "_symbol"}
    texts = [t.get_text() for t in ax.texts]
    assert "decimals\nuint8" in texts and "owner\naddress" in texts
    assert ax.get_xlim() == (32, 0)  # byte 31 on the left, as the word reads in hex
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0", "1", "2", "3", "4", "5"]
    assert ax.get_xlabel() == "offset from the slot's low-order end [bytes]"
    assert ax.get_ylabel() == "slot"


def test_plots_draw_on_the_axes_given_and_make_no_figure_of_their_own(token_layout):
    fig, ax = plt.subplots()
    before = plt.get_fignums()
    assert plot_storage_layout(token_layout, ax=ax) is ax
    assert plt.get_fignums() == before
    plt.close(fig)
    assert plot_storage_layout(token_layout).figure.number in plt.get_fignums()
    with pytest.raises(TypeError, match="layout_table"):
        plot_storage_layout(pd.DataFrame({"x": [1]}))


def test_plot_token_balances_draws_one_step_line_per_holder():
    balances = pd.DataFrame(
        {"block_number": [1, 2, 3, 1, 2, 3], "holder": ["a", "a", "a", "b", "b", "b"],
         "balance": [1.0, 2.0, 0.5, 3.0, 3.0, 4.0], "share": [0.1, 0.2, 0.05, 0.3, 0.3, 0.4]}
    )
    ax = plot_token_balances(balances)
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["a", "b"]
    assert lines[1].get_drawstyle() == "steps-post"
    assert list(lines[1].get_ydata()) == [3.0, 3.0, 4.0]
    assert ax.get_ylabel() == "balance [tokens]" and ax.get_xlabel() == "block number"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]
    shares = plot_token_balances(balances, column="share")
    assert shares.get_ylabel() == "share of supply [fraction]"
    assert list(shares.get_lines()[0].get_ydata()) == [0.1, 0.2, 0.05]
    with pytest.raises(ValueError, match="column"):
        plot_token_balances(balances.assign(other=1), column="other")


def test_plot_implementation_periods_draws_periods_and_the_spans_changes_hide_in():
    a, b = "0x" + "aa" * 20, "0x" + "bb" * 20
    periods = pd.DataFrame(
        {"implementation": [a, b, a], "first_block": [100, 400, 900], "last_block": [300, 800, 900],
         "samples": [3, 5, 1], "changed_after": pd.array([None, 300, 800], dtype="Int64")}
    )
    ax = plot_implementation_periods(periods)
    lines = ax.get_lines()
    assert [list(line.get_xdata()) for line in lines] == [[100, 300], [400, 800], [900, 900]]
    assert [list(line.get_ydata()) for line in lines] == [[0, 0], [1, 1], [0, 0]]
    spans = ax.patches  # axvspan: one rectangle per change
    assert [(s.get_x(), s.get_x() + s.get_width()) for s in spans] == [(300, 400), (800, 900)]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0xaaaa…aaaa", "0xbbbb…bbbb"]
    assert ax.get_xlabel() == "block number" and ax.get_ylabel() == "implementation"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["changed in here"]


def test_plot_oracle_answers_steps_the_answer_over_time_or_blocks():
    rounds = pd.DataFrame(
        {"block_number": [10, 15, 20], "answer": [2000.5, 1990.0, 2010.25],
         "updated_at": pd.to_datetime([1_700_000_000, 1_700_000_060, 1_700_000_120], unit="s",
                                      utc=True)}
    )
    ax = plot_oracle_answers(rounds, unit="USD per ETH")
    (line,) = ax.get_lines()
    assert list(line.get_ydata()) == [2000.5, 1990.0, 2010.25]
    assert line.get_drawstyle() == "steps-post"
    expected_x = date2num(rounds["updated_at"].dt.tz_localize(None).to_numpy())
    assert np.allclose(date2num(line.get_xdata()), expected_x)
    assert ax.get_ylabel() == "answer [USD per ETH]"
    assert ax.get_xlabel() == "round updated at [UTC]"
    by_block = plot_oracle_answers(rounds, x="block_number")
    assert list(by_block.get_lines()[0].get_xdata()) == [10, 15, 20]
    assert by_block.get_xlabel() == "block number"
    with pytest.raises(ValueError, match="x must be"):
        plot_oracle_answers(rounds.assign(t=1), x="t")

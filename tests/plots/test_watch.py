"""feeslab.plots.watch: a watch's column over the block numbers, the replaced blocks marked, and
a redraw on the same Axes that replaces the lines' data instead of adding lines."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from feeslab.plots import plot_watch, watch_label


def _frame(first: int, fees: list[float], blobs: list[int | None], reorged: list[bool]):
    return pd.DataFrame({
        "block_number": np.arange(first, first + len(fees), dtype=np.int64),
        "base_fee_gwei": fees,
        "blob_count": pd.array(blobs, dtype="Int64"),
        "reorged": reorged,
    })  # fmt: skip


def test_plot_watch_draws_the_column_and_marks_the_replaced_blocks():
    frame = _frame(100, [1.0, 2.0, 3.0, 2.5], [1, None, 3, 0], [False, False, True, False])
    ax = plot_watch(frame, column="blob_count", color="tab:green")
    line, mark = ax.get_lines()
    assert line.get_xdata().tolist() == [100, 101, 102, 103]
    assert np.isnan(line.get_ydata()[1]) and line.get_ydata()[[0, 2, 3]].tolist() == [1, 3, 0]
    assert line.get_color() == "tab:green"
    assert mark.get_xdata().tolist() == [102] and mark.get_ydata().tolist() == [3.0]
    assert ax.get_ylabel() == "blob_count [blobs]" and ax.get_xlabel() == "block number"


def test_a_redraw_on_the_same_axes_replaces_the_data():
    _, ax = plt.subplots()
    plot_watch(_frame(100, [1.0, 2.0], [0, 0], [False, False]), ax=ax)
    plot_watch(_frame(200, [5.0, 6.0, 7.0], [0, 0, 0], [False, True, False]), ax=ax)
    line, mark = ax.get_lines()  # still two lines
    assert line.get_xdata().tolist() == [200, 201, 202]
    assert line.get_ydata().tolist() == [5.0, 6.0, 7.0]
    assert mark.get_xdata().tolist() == [201]
    assert ax.get_xlim()[0] <= 200 and ax.get_xlim()[1] >= 202  # rescaled to the new rows
    assert ax.get_ylabel() == "base_fee_gwei [gwei]"


def test_a_frame_without_the_column_is_a_type_error():
    with pytest.raises(TypeError, match="a watch's frame"):
        plot_watch(_frame(1, [1.0], [0], [False]), column="reward_p50_wei")


def test_labels_carry_the_units():
    assert watch_label("reward_p50_wei") == "reward_p50_wei [wei]"
    assert watch_label("gas_used") == "gas_used [gas]"
    assert watch_label("gas_target_ratio") == "gas_target_ratio"
    assert watch_label("blob_gas_used") == "blob_gas_used [gas]"

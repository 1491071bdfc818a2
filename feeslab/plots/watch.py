"""The plot of a watch's frame (``feeslab.frames.watch``): one column over the block numbers.

:func:`plot_watch` draws a column of ``watch.frame`` and marks the rows that replaced another
block (``reorged``). Drawn again on the same Axes it replaces its lines' data instead of adding
lines: the live figure of a watch (``feeslab.watch``) redraws a kept figure this way, which
costs a third of making a new one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from feeslab.plots._base import _axes, _documented, _require

__all__ = ["plot_watch", "watch_label"]

_LINE, _MARK = "feeslab-watch-line", "feeslab-watch-reorged"  # the artists' gids
_UNITS = (("_gwei", "[gwei]"), ("_wei", "[wei]"), ("_ratio", ""), ("blob_count", "[blobs]"))


def watch_label(column: str) -> str:
    """The axis label of a watch's column: its name and unit (``base_fee_gwei [gwei]``)."""
    for suffix, unit in _UNITS:
        if column.endswith(suffix):
            return f"{column} {unit}".strip()
    if column.startswith("gas_") or column.endswith("_gas") or column.endswith("_gas_used"):
        return f"{column} [gas]"
    return column


@_documented
def plot_watch(
    frame: pd.DataFrame, *, column: str = "base_fee_gwei", ax: Axes | None = None,
    **kwargs: Any,
) -> Axes:
    """A column of a watch's frame over the block numbers, its replaced blocks marked.

    Parameters
    ----------
    frame : pandas.DataFrame
        ``watch.frame`` (``feeslab.frames.watch.watch_dtypes``): ``block_number``,
        ``reorged`` and ``column``.
    column : str
        The column to draw (default the base fee [gwei]); an ``Int64`` column's absent values
        leave a gap.
    %(ax)s
    **kwargs
        Passed to ``Axes.plot`` for the line (on the first draw).

    Returns
    -------
    matplotlib.axes.Axes
        A line of ``column`` and red crosses on the rows that replaced another block (a
        reorg); labelled with the column's unit. Drawn again on these Axes, the same two
        lines with new data, rescaled.
    """
    frame = _require(frame, {"block_number", "reorged", column}, "a watch's frame")
    ax = _axes(ax)
    x = frame["block_number"].to_numpy(dtype=np.int64)
    y = frame[column].to_numpy(dtype=np.float64, na_value=np.nan)
    reorged = frame["reorged"].to_numpy(dtype=bool)
    drawn = {line.get_gid(): line for line in ax.get_lines()}
    line, mark = drawn.get(_LINE), drawn.get(_MARK)
    if line is None or mark is None:
        options: dict[str, Any] = {"lw": 1.2, "color": "tab:blue"} | kwargs
        (line,) = ax.plot(x, y, gid=_LINE, **options)
        (mark,) = ax.plot(x[reorged], y[reorged], "x", color="tab:red", gid=_MARK,
                          label="replaced (reorg)")  # fmt: skip
        ax.set_ylabel(watch_label(column))
        ax.set_xlabel("block number")
        ax.ticklabel_format(axis="x", style="plain", useOffset=False)
        ax.grid(alpha=0.3)
    else:
        line.set_data(x, y)
        mark.set_data(x[reorged], y[reorged])
        ax.relim()
        ax.autoscale_view()
    return ax

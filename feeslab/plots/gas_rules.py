"""Plots of each fork's transaction gas rules: what example transactions cost, fork by fork.

Each function draws a frame :mod:`feeslab.analysis.gas` returned; nothing is computed here
beyond placing it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter

from feeslab.plots._base import _axes, _documented, _require

__all__ = ["plot_fork_gas", "plot_intrinsic_and_floor"]

_THOUSANDS = FuncFormatter(lambda v, _: f"{v:,.0f}")  # 4,000,000 rather than 4 and "1e6"
_UNITS = {"gas": ("gas", "gas charged [gas]"), "ETH": ("cost_eth", "cost at the base fee [ETH]")}


@_documented
def plot_fork_gas(
    frame: pd.DataFrame, *, ax: Axes | None = None, unit: str = "gas", **kwargs: Any
) -> Axes:
    """What each transaction costs under each fork's rules: one group of bars per fork, one
    bar per transaction, on a linear axis from zero.

    Transactions whose costs differ by orders of magnitude (a transfer and a 100 KB post, 300-
    fold) are best drawn on axes of their own (pass one transaction's rows per axes): on one
    log axis a 14 % change would look like nothing.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.gas.fork_gas_table`'s frame: ``transaction``, ``fork``,
        ``gas`` [gas] and ``cost_eth`` [ETH], in the forks' order.
    %(ax)s
    unit : {"gas", "ETH"}
        Plot ``gas`` [gas] or ``cost_eth`` [ETH].
    **kwargs
        Passed to ``Axes.bar``.

    Returns
    -------
    matplotlib.axes.Axes
        One bar container per transaction (``ax.containers``, labelled with its name), each
        bar labelled with its value; a legend (right of the axes) when there are several.

    Raises
    ------
    ValueError
        An unknown ``unit``.
    """
    if unit not in _UNITS:
        raise ValueError(f"unit must be one of {', '.join(_UNITS)}, not {unit!r}")
    column, label = _UNITS[unit]
    frame = _require(frame, {"transaction", "fork", column}, "fork_gas_table's frame")
    ax = _axes(ax)
    forks = list(dict.fromkeys(frame["fork"]))
    names = list(dict.fromkeys(frame["transaction"]))
    width = 0.8 / max(len(names), 1)
    x = np.arange(len(forks))
    for i, name in enumerate(names):
        rows = frame[frame["transaction"] == name].set_index("fork").reindex(forks)
        values = rows[column].to_numpy(np.float64)
        bars = ax.bar(x + (i - (len(names) - 1) / 2) * width, values, width, label=str(name),
                      **kwargs)  # fmt: skip
        text = [f"{v:,.0f}" if unit == "gas" else f"{v:.2g}" for v in values]
        ax.bar_label(bars, text, padding=2, fontsize="x-small", rotation=90)
    ax.set_xticks(x, forks)
    ax.set_xlabel("fork")
    ax.set_ylabel(label)
    ax.set_ylim(0, float(np.nanmax(frame[column].to_numpy(np.float64))) * 1.3)  # label room
    if unit == "gas":
        ax.yaxis.set_major_formatter(_THOUSANDS)
    if len(names) > 1:
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


@_documented
def plot_intrinsic_and_floor(
    frame: pd.DataFrame, transaction: str, *, ax: Axes | None = None, **kwargs: Any
) -> Axes:
    """One transaction's intrinsic gas and calldata floor under each fork, side by side, as
    bars from zero: it is charged the larger (EIP-7623, from Prague).

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.gas.fork_gas_table`'s frame: ``transaction``, ``fork``,
        ``intrinsic_gas`` and ``floor_gas`` (``<NA>`` before Prague) [gas].
    transaction : str
        The transaction to draw (a value of ``transaction``).
    %(ax)s
    **kwargs
        Passed to ``Axes.bar``.

    Returns
    -------
    matplotlib.axes.Axes
        Two bar containers (``ax.containers``: ``intrinsic gas``, ``calldata floor``), the
        floor's height NaN before Prague (no bar: "no floor" is written in its place); each
        bar labelled with its value; a legend right of the axes.

    Raises
    ------
    ValueError
        A transaction the frame does not have.
    """
    frame = _require(frame, {"transaction", "fork", "intrinsic_gas", "floor_gas"},
                     "fork_gas_table's frame")  # fmt: skip
    rows = frame[frame["transaction"] == transaction]
    if rows.empty:
        known = ", ".join(repr(name) for name in dict.fromkeys(frame["transaction"]))
        raise ValueError(f"no transaction {transaction!r} in the frame (it has {known})")
    ax = _axes(ax)
    forks = rows["fork"].tolist()
    x = np.arange(len(forks))
    width = 0.38
    for i, (column, colour, name) in enumerate((("intrinsic_gas", "#9ecae1", "intrinsic gas"),
                                               ("floor_gas", "#d6604d", "calldata floor"))):
        values = rows[column].astype("float64").to_numpy(na_value=np.nan)
        bars = ax.bar(x + (i - 0.5) * width, values, width, color=colour, label=name, **kwargs)
        text = ["" if np.isnan(v) else f"{v:,.0f}" for v in values]
        ax.bar_label(bars, text, padding=2, fontsize="x-small", rotation=90)
        for bar, value in zip(bars, values, strict=True):
            if np.isnan(value):  # no bar: say why
                ax.annotate("no floor", (bar.get_x() + bar.get_width() / 2, 0), xytext=(0, 2),
                            textcoords="offset points", ha="center", va="bottom",
                            fontsize="x-small", rotation=90)  # fmt: skip
    ax.set_xticks(x, forks)
    ax.set_xlabel("fork")
    ax.set_ylabel("gas [gas]")
    parts = rows[["intrinsic_gas", "floor_gas"]].astype("float64")
    top = np.nanmax(parts.to_numpy(na_value=np.nan))
    ax.set_ylim(0, float(top) * 1.3)  # room for the labels
    ax.yaxis.set_major_formatter(_THOUSANDS)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax

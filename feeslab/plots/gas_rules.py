"""Plots of each fork's transaction gas rules: what example transactions cost, fork by fork.

Each function draws a frame :mod:`feeslab.analysis.gas` returned; nothing is computed here
beyond placing it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from feeslab.plots._base import _axes, _documented, _require

__all__ = ["plot_fork_gas"]

_UNITS = {"gas": ("gas", "gas charged [gas]"), "ETH": ("cost_eth", "cost at the base fee [ETH]")}


@_documented
def plot_fork_gas(
    frame: pd.DataFrame, *, ax: Axes | None = None, unit: str = "gas", **kwargs: Any
) -> Axes:
    """What each transaction costs under each fork's rules: one group of bars per fork, one
    bar per transaction, on a log axis (a transfer and a 100 KB post differ 300-fold).

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
        bar labelled with its value.

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
    ax.set_yscale("log")
    ax.set_xticks(x, forks)
    ax.set_xlabel("fork")
    ax.set_ylabel(label)
    ax.margins(y=0.35)  # room for the labels above the tallest bars on the log axis
    ax.legend(fontsize="small", loc="upper left")
    return ax

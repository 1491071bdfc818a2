"""Plots of calls and gas: estimates against the gas needed, costs over a fee history.

Each function draws a frame :mod:`feeslab.analysis.gas` returned; nothing is computed here
beyond placing it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from feeslab.plots._base import _axes, _documented, _require

__all__ = ["plot_cost_history", "plot_estimate_accuracy"]

_COST_UNITS = {"ETH": "cost_eth", "gwei": "cost_gwei"}


@_documented
def plot_estimate_accuracy(
    accuracy: pd.DataFrame, *, ax: Axes | None = None, tolerance: float = 0.015, **kwargs: Any
) -> Axes:
    """How far ``eth_estimateGas`` overshoots the gas each transaction needs, in percent.

    Needed and estimated gas differ by well under 2 %, so bars of both would look the same:
    the figure shows the difference, one bar per transaction, against the estimator's
    stopping tolerance.

    Parameters
    ----------
    accuracy : pandas.DataFrame
        :func:`feeslab.analysis.gas.estimate_accuracy`'s frame: ``transaction``,
        ``overshoot_ratio`` [1] (and ``overshoot_gas`` [gas], ``error`` when present).
    %(ax)s
    tolerance : float, default 0.015
        The estimator's stopping tolerance [1], drawn as a dashed line (geth's 1.5 %).
    **kwargs
        Passed to ``Axes.barh``.

    Returns
    -------
    matplotlib.axes.Axes
        One bar container (``ax.containers``) of overshoots [%], each labelled with its
        percentage (two significant digits) and its gas; transactions that failed get no bar
        and are named with their error.
    """
    accuracy = _require(accuracy, {"transaction", "overshoot_ratio"}, "estimate_accuracy's frame")
    ax = _axes(ax)
    y = np.arange(len(accuracy))
    percent = accuracy["overshoot_ratio"].to_numpy(np.float64) * 100
    bars = ax.barh(y, np.nan_to_num(percent), height=0.6, **kwargs)
    gas = (accuracy["overshoot_gas"] if "overshoot_gas" in accuracy.columns
           else pd.Series([pd.NA] * len(accuracy)))
    labels = []
    for value, extra in zip(percent, gas, strict=True):
        if np.isnan(value):
            labels.append("")
        else:
            labels.append(f"+{value:.2g} %" + ("" if pd.isna(extra) else f" ({int(extra):,} gas)"))
    ax.bar_label(bars, labels, padding=3, fontsize="small")
    ax.axvline(tolerance * 100, color="0.3", ls="--", lw=1,
               label=f"estimator's tolerance ({tolerance * 100:g} %)")
    names = []
    errors = accuracy["error"] if "error" in accuracy.columns else [None] * len(accuracy)
    for name, error in zip(accuracy["transaction"], errors, strict=True):
        names.append(str(name) if pd.isna(error) else f"{name}\n({error})")
    ax.set_yticks(y, names)
    ax.set_ylim(len(accuracy) - 0.5, -0.5)
    ax.set_xlim(0, tolerance * 100 * 1.45)  # room for the labels right of the tolerance line
    ax.set_xlabel("eth_estimateGas above the gas needed [%]")
    ax.legend(fontsize="small", loc="lower right")
    return ax


@_documented
def plot_cost_history(
    costs: pd.DataFrame, *, ax: Axes | None = None, unit: str = "ETH", **kwargs: Any
) -> Axes:
    """What each transaction would have cost, block by block.

    Parameters
    ----------
    costs : pandas.DataFrame
        :func:`feeslab.analysis.gas.cost_over_history`'s frame.
    %(ax)s
    unit : {"ETH", "gwei"}
        The cost's unit.
    **kwargs
        Passed to ``Axes.plot``.

    Returns
    -------
    matplotlib.axes.Axes
        One line per transaction, labelled with its name and gas, and a legend.
    """
    if unit not in _COST_UNITS:
        raise ValueError(f"unit must be 'ETH' or 'gwei', not {unit!r}")
    column = _COST_UNITS[unit]
    costs = _require(costs, {"block_number", "transaction", "gas", column},
                     "cost_over_history's frame")
    ax = _axes(ax)
    options = {"linewidth": 0.8, **kwargs}
    for name, rows in costs.groupby("transaction", sort=False):
        gas = int(rows["gas"].iloc[0])
        ax.plot(rows["block_number"], rows[column], label=f"{name} ({gas:,} gas)", **options)
    ax.set_xlabel("block number")
    ax.set_ylabel(f"cost [{unit}]")
    ax.legend(fontsize="small")
    return ax

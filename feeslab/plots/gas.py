"""Plots of calls and gas: estimates against the gas needed, costs over a fee history.

Each function draws a frame :mod:`feeslab.analysis.gas` returned; nothing is computed here
beyond placing it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from feeslab.plots._base import _axes, _require

__all__ = ["plot_cost_history", "plot_estimate_accuracy"]

_COST_UNITS = {"ETH": "cost_eth", "gwei": "cost_gwei"}


def plot_estimate_accuracy(
    accuracy: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any
) -> Axes:
    """Two bars per transaction: the gas it needs and what ``eth_estimateGas`` answered.

    Parameters
    ----------
    accuracy : pandas.DataFrame
        :func:`feeslab.analysis.gas.estimate_accuracy`'s frame.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure when None.
    **kwargs
        Passed to both ``Axes.barh`` calls.

    Returns
    -------
    matplotlib.axes.Axes
        Two bar containers (``ax.containers``): "needed (eth_call search)" then
        "eth_estimateGas"; each estimate labelled with its overshoot in percent (two
        significant digits). Transactions that failed are drawn empty and named with their
        error.
    """
    accuracy = _require(accuracy, {"transaction", "gas_estimate", "gas_needed",
                                   "overshoot_ratio"}, "estimate_accuracy's frame")
    ax = _axes(ax)
    y = np.arange(len(accuracy))
    needed = accuracy["gas_needed"].astype("float64").fillna(0).to_numpy()
    estimate = accuracy["gas_estimate"].astype("float64").fillna(0).to_numpy()
    ax.barh(y - 0.2, needed, height=0.4, label="needed (eth_call search)", **kwargs)
    bars = ax.barh(y + 0.2, estimate, height=0.4, label="eth_estimateGas", **kwargs)
    ratios = accuracy["overshoot_ratio"].to_numpy(np.float64)
    ax.bar_label(bars, ["" if np.isnan(r) else f"+{r * 100:.2g} %" for r in ratios],
                 padding=2, fontsize="small")
    names = []
    errors = accuracy["error"] if "error" in accuracy.columns else [None] * len(accuracy)
    for name, error in zip(accuracy["transaction"], errors, strict=True):
        names.append(str(name) if pd.isna(error) else f"{name}\n({error})")
    ax.set_yticks(y, names)
    ax.set_ylim(len(accuracy) - 0.5, -0.5)
    ax.set_xlabel("gas limit [gas]")
    ax.legend(fontsize="small", loc="lower right")
    return ax


def plot_cost_history(
    costs: pd.DataFrame, *, ax: Axes | None = None, unit: str = "ETH", **kwargs: Any
) -> Axes:
    """What each transaction would have cost, block by block.

    Parameters
    ----------
    costs : pandas.DataFrame
        :func:`feeslab.analysis.gas.cost_over_history`'s frame.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure when None.
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

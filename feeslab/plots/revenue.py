"""Plots of miners' revenue: its parts per window, and the Flashbots bundles' share.

Each function draws a frame :func:`feeslab.analysis.revenue.revenue_by_window` returned;
nothing is computed here beyond placing it (a window's sum over its blocks is its mean per
block).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from feeslab.plots._base import _axes, _documented, _require

__all__ = ["REVENUE_PART_LABELS", "plot_bundle_share", "plot_revenue_by_window"]

#: The parts of :data:`feeslab.analysis.revenue.COMPONENTS` as the legend names them.
REVENUE_PART_LABELS: dict[str, str] = {
    "static_reward": "static reward",
    "uncle_inclusion_reward": "uncle inclusion reward",
    "gas_fee": "gas fees (whole fee before London, tips after)",
    "flashbots_coinbase_transfer": "coinbase transfers (bundles)",
}


def _events(ax: Axes, events: Mapping[str, int] | None, scale: float) -> None:
    for name, block in (events or {}).items():
        ax.axvline(block / scale, color="black", linewidth=1, linestyle="--")
        ax.annotate(name, (block / scale, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(3, -12), textcoords="offset points", fontsize=8)  # fmt: skip


def _window_edges(windows: pd.DataFrame, scale: float) -> np.ndarray:
    """Each window's first block and, last, the end of the last window [blocks / scale]."""
    starts = windows.index.to_numpy(dtype=np.float64)
    width = float(windows.attrs.get("window", np.diff(starts).min() if len(starts) > 1 else 1))
    return np.asarray(np.r_[starts, starts[-1] + width], dtype=np.float64) / scale


@_documented
def plot_revenue_by_window(
    windows: pd.DataFrame,
    *,
    ax: Axes | None = None,
    events: Mapping[str, int] | None = None,
    scale: float = 1e6,
    **kwargs: Any,
) -> Axes:
    """Mean revenue per block in each window, stacked by part [ETH per block].

    Parameters
    ----------
    windows : pandas.DataFrame
        :func:`~feeslab.analysis.revenue.revenue_by_window`'s frame: ``blocks`` and a
        ``<part>_eth`` column per part present.
    %(ax)s
    events : mapping of str to int, optional
        Names and first blocks to mark (e.g. ``{"London": 12_965_000}``).
    scale : float
        Block numbers on the x axis are divided by it (1e6: millions).
    **kwargs
        Passed to ``Axes.stairs`` (one call per part).
    """
    _require(windows, ["blocks", "total_eth"], "revenue_by_window's frame")
    ax = _axes(ax)
    edges = _window_edges(windows, scale)
    base = np.zeros(len(windows))
    blocks = windows["blocks"].to_numpy(dtype=np.float64)
    for part, label in REVENUE_PART_LABELS.items():
        if f"{part}_eth" not in windows.columns:
            continue
        top = base + windows[f"{part}_eth"].to_numpy(dtype=np.float64) / blocks
        ax.stairs(top, edges, baseline=base, fill=True, label=label, **kwargs)
        base = top
    ax.set_xlabel(f"block number [{'millions' if scale == 1e6 else f'x {scale:g}'}]")
    ax.set_ylabel("revenue [ETH per block, mean]")
    ax.legend(loc="upper left", fontsize=8)
    _events(ax, events, scale)
    return ax


@_documented
def plot_bundle_share(
    windows: pd.DataFrame,
    *,
    ax: Axes | None = None,
    events: Mapping[str, int] | None = None,
    scale: float = 1e6,
    **kwargs: Any,
) -> Axes:
    """The share of each window's revenue paid through Flashbots bundles [%].

    Parameters
    ----------
    windows : pandas.DataFrame
        :func:`~feeslab.analysis.revenue.revenue_by_window`'s frame of a revenue frame with
        bundle columns (``bundle_share``).
    %(ax)s
    events : mapping of str to int, optional
        Names and first blocks to mark.
    scale : float
        Block numbers on the x axis are divided by it (1e6: millions).
    **kwargs
        Passed to ``Axes.stairs``.
    """
    _require(windows, ["bundle_share"], "revenue_by_window's frame with bundle columns")
    ax = _axes(ax)
    ax.stairs(100 * windows["bundle_share"].to_numpy(dtype=np.float64),
              _window_edges(windows, scale),
              **{"color": "tab:purple", "baseline": None, **kwargs})  # fmt: skip
    ax.set_xlabel(f"block number [{'millions' if scale == 1e6 else f'x {scale:g}'}]")
    ax.set_ylabel("bundle share of revenue [%]")
    _events(ax, events, scale)
    return ax

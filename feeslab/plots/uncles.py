"""Plots of uncles: rates with their intervals, depth, rewards by era, miners, the delay model.

Each function draws a frame :mod:`feeslab.analysis.uncles` returned; nothing is computed here
beyond placing it (interval bounds become error bars, addresses are shortened for ticks).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from feeslab.plots._base import _axes, _documented, _require

__all__ = [
    "REWARD_PARTS",
    "plot_concentration",
    "plot_depth_distribution",
    "plot_miner_shares",
    "plot_miner_uncles",
    "plot_model_vs_data",
    "plot_rewards",
    "plot_uncle_rate",
    "plot_uncle_rate_against",
]

#: The parts of issuance :func:`plot_rewards` stacks: column, label, colour.
REWARD_PARTS: tuple[tuple[str, str, str], ...] = (
    ("block_reward_eth", "block reward", "#4c72b0"),
    ("nephew_reward_eth", "nephew rewards (includers)", "#dd8452"),
    ("uncle_reward_eth", "uncle rewards", "#c44e52"),
)
_RATE_LABEL = "uncle rate [uncles/block]"


def _error(frame: pd.DataFrame, value: str, lower: str, upper: str) -> np.ndarray:
    """Error bar lengths below and above ``value`` (2 x n)."""
    centre = frame[value].to_numpy(dtype=float)
    return np.vstack(
        [centre - frame[lower].to_numpy(dtype=float), frame[upper].to_numpy(dtype=float) - centre]
    )


def _short(label: object) -> str:
    """``0x1234…cdef`` for an address, the label as text otherwise."""
    text = str(label)
    if text.startswith("0x") and len(text) == 42:
        return f"{text[:6]}…{text[-4:]}"
    return text


def _categories(ax: Axes, labels: Sequence[object] | pd.Index) -> np.ndarray:
    positions = np.arange(len(labels))
    ax.set_xticks(positions, [_short(v) for v in labels])
    return positions


@_documented
def plot_uncle_rate(frame: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """Uncle rate per group with its confidence interval as error bars.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.uncles.uncle_rate` (by group),
        :func:`~feeslab.analysis.uncles.uncle_rate_by_window` (drawn at window centres
        against block number), :func:`~feeslab.analysis.uncles.uncle_rate_by_day` (against
        the UTC day) or :func:`~feeslab.analysis.uncles.uncle_rate_by_era` (one tick per era):
        ``rate``, ``lower``, ``upper`` [uncles/block].
    %(ax)s
    **kwargs
        Passed to ``Axes.errorbar`` (e.g. ``label``, ``color``, ``fmt``).

    Returns
    -------
    matplotlib.axes.Axes
    """
    _require(frame, ["rate", "lower", "upper"], "an uncle rate table")
    ax = _axes(ax)
    if "stop_block" in frame.columns:
        x = (frame.index.to_numpy(dtype=float) + frame["stop_block"].to_numpy(dtype=float)) / 2
        ax.set_xlabel("block number (window centre)")
    elif isinstance(frame.index, pd.DatetimeIndex):
        x = frame.index.to_numpy()
        ax.set_xlabel("day (UTC)")
    else:
        x = _categories(ax, frame.index)
        ax.set_xlabel(str(frame.index.name or "group"))
    options = {"fmt": "o", "capsize": 3, "ms": 4, **kwargs}
    ax.errorbar(x, frame["rate"].to_numpy(dtype=float),
                yerr=_error(frame, "rate", "lower", "upper"), **options)
    ax.set_ylabel(_RATE_LABEL)
    ax.set_ylim(bottom=0)
    return ax


@_documented
def plot_uncle_rate_against(
    frame: pd.DataFrame,
    *,
    x: str,
    ax: Axes | None = None,
    xlabel: str | None = None,
    annotate: bool = True,
    **kwargs: Any,
) -> Axes:
    """Uncle rate with its interval against one numeric column of the same table.

    Parameters
    ----------
    frame : pandas.DataFrame
        An uncle rate table (:func:`feeslab.analysis.uncles.uncle_rate`,
        :func:`~feeslab.analysis.uncles.uncle_rate_by_window`) with ``rate``, ``lower``,
        ``upper`` [uncles/block] and the column ``x``, e.g. a window's mean block time
        (:func:`~feeslab.analysis.uncles.mean_block_time_by_window`) or a bin's median gas.
    x : str
        The column drawn on the x axis.
    %(ax)s
    xlabel : str, optional
        The x label, with its unit (default: ``x``).
    annotate : bool, default True
        Write each row's index (window start, bin) beside its point.
    **kwargs
        Passed to ``Axes.errorbar``.

    Returns
    -------
    matplotlib.axes.Axes
        One point per row with its interval as an error bar; y from 0.
    """
    _require(frame, ["rate", "lower", "upper", x], f"an uncle rate table with an {x!r} column")
    ax = _axes(ax)
    xs = frame[x].to_numpy(dtype=float)
    rates = frame["rate"].to_numpy(dtype=float)
    options = {"fmt": "o", "capsize": 3, "ms": 4, **kwargs}
    ax.errorbar(xs, rates, yerr=_error(frame, "rate", "lower", "upper"), **options)
    if annotate:
        for label, px, py in zip(frame.index, xs, rates, strict=True):
            text = f"{label:,}" if isinstance(label, int | np.integer) else str(label)
            ax.annotate(
                text, (px, py), xytext=(5, 3), textcoords="offset points", fontsize="x-small"
            )
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(_RATE_LABEL)
    ax.set_ylim(bottom=0)
    return ax


@_documented
def plot_depth_distribution(
    frame: pd.DataFrame, *, ax: Axes | None = None, log: bool = False, **kwargs: Any
) -> Axes:
    """Share of uncles at each depth, with intervals.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.uncles.depth_distribution`: ``share``, ``lower``, ``upper``
        indexed by ``depth`` [blocks].
    %(ax)s
    log : bool
        A logarithmic share axis, to see the rare deep uncles (empty depths then vanish).
    **kwargs
        Passed to ``Axes.bar``.

    Returns
    -------
    matplotlib.axes.Axes
    """
    _require(frame, ["share", "lower", "upper"], "a depth distribution")
    ax = _axes(ax)
    depth = frame.index.to_numpy()
    options = {"color": "#4c72b0", "capsize": 3, **kwargs}
    ax.bar(depth, frame["share"].to_numpy(dtype=float),
           yerr=_error(frame, "share", "lower", "upper"), **options)
    ax.set_xticks(depth)
    ax.set_xlabel("depth: including block - uncle [blocks]")
    ax.set_ylabel("share of uncles [fraction]")
    if log:
        ax.set_yscale("log")
    return ax


@_documented
def plot_rewards(
    frame: pd.DataFrame,
    *,
    ax: Axes | None = None,
    parts: Sequence[str] | None = None,
    **kwargs: Any,
) -> Axes:
    """Issuance per block in each era, stacked: block reward, nephew and uncle rewards.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.uncles.rewards_by_era`: ``block_reward_eth``,
        ``nephew_reward_eth`` and ``uncle_reward_eth`` [ETH/block] indexed by ``era``.
    %(ax)s
    parts : sequence of str, optional
        The columns to stack, in :data:`REWARD_PARTS` order; all three when None. Pass
        ``["nephew_reward_eth", "uncle_reward_eth"]`` to zoom on the parts a 2-5 ETH block
        reward would flatten.
    **kwargs
        Passed to each ``Axes.bar`` (e.g. ``width``).

    Returns
    -------
    matplotlib.axes.Axes
    """
    known = [column for column, _, _ in REWARD_PARTS]
    chosen = known if parts is None else list(parts)
    unknown = sorted(set(chosen) - set(known))
    if unknown or not chosen:
        raise ValueError(f"parts must name some of {known}, got {list(chosen)}")
    _require(frame, chosen, "a rewards-by-era table")
    ax = _axes(ax)
    x = _categories(ax, frame.index)
    bottom = np.zeros(len(frame))
    for column, label, colour in (part for part in REWARD_PARTS if part[0] in chosen):
        values = frame[column].to_numpy(dtype=float)
        ax.bar(x, values, bottom=bottom, label=label, **({"color": colour} | kwargs))
        bottom = bottom + values
    ax.set_xlabel(str(frame.index.name or "era"))
    ax.set_ylabel("issuance [ETH/block]")
    ax.legend()
    return ax


@_documented
def plot_miner_shares(
    frame: pd.DataFrame, *, ax: Axes | None = None, top: int | None = None, **kwargs: Any
) -> Axes:
    """Each miner's share of the blocks with its interval, largest at the top.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.uncles.miner_shares`: ``share``, ``lower``, ``upper``
        indexed by miner, largest first.
    %(ax)s
    top : int, optional
        Draw only the first ``top`` rows.
    **kwargs
        Passed to ``Axes.barh``.

    Returns
    -------
    matplotlib.axes.Axes
    """
    _require(frame, ["share", "lower", "upper"], "a miner share table")
    ax = _axes(ax)
    shown = frame if top is None else frame.iloc[:top]
    y = np.arange(len(shown))[::-1]
    options = {"color": "#4c72b0", "capsize": 3, **kwargs}
    ax.barh(y, shown["share"].to_numpy(dtype=float),
            xerr=_error(shown, "share", "lower", "upper"), **options)
    ax.set_yticks(y, [_short(v) for v in shown.index])
    ax.set_xlabel("share of blocks [fraction]")
    ax.set_ylabel(str(frame.index.name or "miner"))
    return ax


@_documented
def plot_miner_uncles(frame: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """Each miner's stale rate against its share of the blocks, with intervals.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.uncles.miner_uncles`: ``share`` [fraction] and
        ``stale_rate``, ``stale_lower``, ``stale_upper`` [fraction] per miner.
    %(ax)s
    **kwargs
        Passed to ``Axes.errorbar``.

    Returns
    -------
    matplotlib.axes.Axes
    """
    _require(frame, ["share", "stale_rate", "stale_lower", "stale_upper"],
             "a miner uncle table")
    ax = _axes(ax)
    options = {"fmt": "o", "capsize": 3, "ms": 4, **kwargs}
    ax.errorbar(frame["share"].to_numpy(dtype=float), frame["stale_rate"].to_numpy(dtype=float),
                yerr=_error(frame, "stale_rate", "stale_lower", "stale_upper"),
                **options)
    ax.set_xlabel("share of canonical blocks [fraction]")
    ax.set_ylabel("stale rate: stale / (canonical + stale) [fraction]")
    ax.set_ylim(bottom=0)
    return ax


@_documented
def plot_concentration(frame: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """Herfindahl-Hirschman index of block production per group.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.uncles.miner_concentration` with ``by=``: ``hhi`` and
        ``hhi_unbiased`` [1] per group (numeric groups, e.g. window starts, on a number
        axis; others one tick each).
    %(ax)s
    **kwargs
        Passed to both ``Axes.plot`` calls.

    Returns
    -------
    matplotlib.axes.Axes
    """
    _require(frame, ["hhi", "hhi_unbiased"], "a miner concentration table")
    ax = _axes(ax)
    if pd.api.types.is_numeric_dtype(frame.index):
        x = frame.index.to_numpy()
    else:
        x = _categories(ax, frame.index)
    ax.plot(x, frame["hhi"].to_numpy(dtype=float), marker="o", label="HHI (sample)", **kwargs)
    ax.plot(x, frame["hhi_unbiased"].to_numpy(dtype=float), marker="s", ls="--",
            label="HHI (unbiased)", **kwargs)
    ax.set_xlabel(str(frame.index.name or "group"))
    ax.set_ylabel("Herfindahl-Hirschman index [1]")
    ax.set_ylim(bottom=0)
    ax.legend()
    return ax


@_documented
def plot_model_vs_data(frame: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """Observed fork rate per bin (with intervals) and the delay model's prediction.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.uncles.model_vs_data`: ``x`` (bin mean of the covariate,
        named with its unit in ``attrs["x_label"]``), ``rate``, ``lower``, ``upper`` and
        ``predicted`` [forks/height].
    %(ax)s
    **kwargs
        Passed to ``Axes.errorbar`` (the observed rates).

    Returns
    -------
    matplotlib.axes.Axes
    """
    _require(frame, ["x", "rate", "lower", "upper", "predicted"], "a model_vs_data table")
    ax = _axes(ax)
    x = frame["x"].to_numpy(dtype=float)
    options = {"fmt": "o", "capsize": 3, "ms": 4, "label": "observed", **kwargs}
    ax.errorbar(x, frame["rate"].to_numpy(dtype=float),
                yerr=_error(frame, "rate", "lower", "upper"), **options)
    ax.plot(x, frame["predicted"].to_numpy(dtype=float), color="k", lw=1.5,
            label="model: 1 - exp(-delay / block time)")
    ax.set_xlabel(frame.attrs.get("x_label", "covariate"))
    ax.set_ylabel("fork rate [forks/height]")
    ax.set_ylim(bottom=0)
    ax.legend()
    return ax

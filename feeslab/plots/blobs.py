"""Plots of the blob market: blob base fee, usage bracketed from fees, regimes, burn.

Each function draws a frame :mod:`feeslab.analysis.blobs` returned (or a blocks/fee-history
frame with its columns); nothing is computed here beyond placing it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from feeslab.plots._base import _axes, _documented, _require

__all__ = [
    "BLOB_REGIME_COLOURS",
    "EXCESS_BRANCH_COLOURS",
    "plot_blob_base_fee",
    "plot_blob_counts_by_branch",
    "plot_blob_counts_by_period",
    "plot_blob_fee_by_period",
    "plot_blob_fee_vs_reserve",
    "plot_blob_regimes",
    "plot_blob_usage",
    "plot_burn",
    "plot_excess_branches",
]

#: Colours of the regimes of :func:`feeslab.analysis.blobs.blob_fee_regimes`.
BLOB_REGIME_COLOURS: dict[str, str] = {
    "floor": "#bababa",
    "calm": "#e0f3f8",
    "volatile": "#fdb863",
    "rising": "#e66101",
    "falling": "#5e3c99",
}


#: Colours of the branches of :func:`feeslab.analysis.blobs.excess_branches`.
EXCESS_BRANCH_COLOURS: dict[str, str] = {
    "below_target": "#bababa",
    "target": "#4393c3",
    "reserve": "#d6604d",
    "either": "#fdb863",
    "off_rule": "#000000",
}


def _blob_fee_wei(frame: pd.DataFrame) -> np.ndarray:
    for column in ("blob_base_fee_wei", "base_fee_per_blob_gas_wei"):
        if column in frame.columns:
            return np.asarray(frame[column].astype("float64").to_numpy(na_value=np.nan))
    raise TypeError("frame must have blob_base_fee_wei or base_fee_per_blob_gas_wei [wei]")


def _forks(ax: Axes, forks: Mapping[str, int] | None) -> None:
    for name, block in (forks or {}).items():
        ax.axvline(block, color="#404040", linewidth=0.8, linestyle=":")
        ax.annotate(name, (block, 1.0), xycoords=("data", "axes fraction"), fontsize=8,
                    rotation=90, va="top", ha="right")  # fmt: skip


@_documented
def plot_blob_base_fee(
    frame: pd.DataFrame,
    *,
    ax: Axes | None = None,
    forks: Mapping[str, int] | None = None,
    **kwargs: Any,
) -> Axes:
    """The blob base fee per block, on a log axis [wei per blob gas].

    Parameters
    ----------
    frame : pandas.DataFrame
        ``block_number`` and ``blob_base_fee_wei`` (:func:`~feeslab.analysis.blobs.blob_base_fees`
        added to ``Lab.blocks``) or ``base_fee_per_blob_gas_wei`` (``Lab.fee_history``).
    %(ax)s
    forks : mapping of str to int, optional
        Fork names and first blocks to mark.
    **kwargs
        Passed to ``Axes.plot``.
    """
    _require(frame, ["block_number"], "a blocks or fee-history frame")
    ax = _axes(ax)
    ax.plot(frame["block_number"], _blob_fee_wei(frame), **{"linewidth": 0.8, **kwargs})
    ax.set_yscale("log")
    ax.set_xlabel("block number")
    ax.set_ylabel("blob base fee [wei / blob gas]")
    _forks(ax, forks)
    return ax


@_documented
def plot_blob_usage(
    usage: pd.DataFrame,
    *,
    ax: Axes | None = None,
    truth: pd.Series | None = None,
    **kwargs: Any,
) -> Axes:
    """Blobs per block bracketed from fees (:func:`~feeslab.analysis.blobs.infer_blob_usage`).

    The bracket is shaded, the target and max drawn as steps; ``truth`` (blobs actually
    carried, when known) is drawn as points on top. ``kwargs`` go to ``fill_between``.

    Parameters
    ----------
    %(ax)s
    """
    _require(usage, ["block_number", "blobs_low", "blobs_high", "target_blobs", "max_blobs"],
             "infer_blob_usage's frame")  # fmt: skip
    ax = _axes(ax)
    x = usage["block_number"].to_numpy()
    ax.fill_between(x, usage["blobs_low"], usage["blobs_high"], step="mid",
                    **{"color": "#92c5de", "label": "bracket from fees", **kwargs})  # fmt: skip
    ax.step(x, usage["target_blobs"].astype("float64"), where="mid", color="#1a9641",
            linewidth=1, label="target")  # fmt: skip
    ax.step(x, usage["max_blobs"].astype("float64"), where="mid", color="#d7191c", linewidth=1,
            label="max")  # fmt: skip
    if truth is not None:
        ax.plot(x, np.asarray(truth, dtype=float), ".", markersize=2, color="#404040",
                label="carried")  # fmt: skip
    ax.set_xlabel("block number")
    ax.set_ylabel("blobs per block [blobs]")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # off the data
    return ax


@_documented
def plot_blob_regimes(
    frame: pd.DataFrame, regimes: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any
) -> Axes:
    """The blob base fee coloured by regime (:func:`~feeslab.analysis.blobs.blob_fee_regimes`).

    ``frame`` gives ``block_number`` and the fee; ``regimes`` is aligned with it. ``kwargs``
    go to ``Axes.scatter``.

    Parameters
    ----------
    %(ax)s
    """
    _require(frame, ["block_number"], "a blocks or fee-history frame")
    _require(regimes, ["regime"], "blob_fee_regimes' frame")
    ax = _axes(ax)
    x = frame["block_number"].to_numpy()
    fee = _blob_fee_wei(frame)
    labels = regimes["regime"].astype(str).to_numpy()
    for name, colour in BLOB_REGIME_COLOURS.items():
        mask = labels == name
        if mask.any():
            ax.scatter(x[mask], fee[mask], s=2, color=colour, label=name, **kwargs)
    ax.set_yscale("log")
    ax.set_xlabel("block number")
    ax.set_ylabel("blob base fee [wei / blob gas]")
    ax.legend(loc="upper left", fontsize=8, markerscale=4)
    return ax


@_documented
def plot_burn(daily: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """ETH burned per UTC day (or hour), execution base fee and blob fee stacked
    (:func:`~feeslab.analysis.blobs.burn_by_day`); issuance as a line when any.

    ``kwargs`` go to ``Axes.bar``.

    Parameters
    ----------
    %(ax)s
    """
    _require(daily, ["base_fee_burn_eth", "blob_fee_burn_eth", "issuance_eth"],
             "burn_by_day's frame")  # fmt: skip
    ax = _axes(ax)
    x = daily.index
    width = kwargs.pop("width", 0.8)
    ax.bar(x, daily["base_fee_burn_eth"], width=width, color="#4393c3", label="base fee burn",
           **kwargs)  # fmt: skip
    ax.bar(x, daily["blob_fee_burn_eth"], width=width, bottom=daily["base_fee_burn_eth"],
           color="#d6604d", label="blob fee burn", **kwargs)  # fmt: skip
    if (daily["issuance_eth"] > 0).any():
        ax.plot(x, daily["issuance_eth"], color="#1b7837", marker="o", label="issuance (EL)")
    period = pd.Timedelta(pd.tseries.frequencies.to_offset(daily.attrs.get("freq", "D")))
    hourly = period < pd.Timedelta(days=1)
    ax.set_xlabel("hour (UTC)" if hourly else "day (UTC)")
    ax.set_ylabel(f"ETH per {'hour' if hourly else 'day'} [ETH]")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # off the data
    ax.tick_params(axis="x", labelrotation=30)
    return ax


def _period_forks(ax: Axes, frame: pd.DataFrame) -> None:
    """A dotted line and the fork's name where ``frame``'s ``fork`` column changes."""
    if "fork" not in frame.columns or frame.empty:
        return
    forks = frame["fork"].astype(str).to_numpy()
    changes = np.flatnonzero(forks[1:] != forks[:-1]) + 1
    previous = None
    for i in changes:
        ax.axvline(frame.index[i], color="#404040", linewidth=0.8, linestyle=":")
        # forks days apart on a span of years (Osaka, BPO1): the second name goes right of its
        # line, or the two names print over each other
        close = previous is not None and i - previous < 0.02 * len(frame)
        ax.annotate(forks[i], (frame.index[i], 1.0), xycoords=("data", "axes fraction"),
                    fontsize=8, rotation=90, va="top", ha="left" if close else "right")  # fmt: skip
        previous = i


@_documented
def plot_blob_fee_by_period(frame: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """The blob base fee per period: the range (min to max) as a band, the median as a line.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.blobs.blob_market_by_period`'s frame (its ``fork`` column,
        when present, marks where each fork starts).
    %(ax)s
    **kwargs
        Passed to ``Axes.plot`` (the median line).

    Returns
    -------
    matplotlib.axes.Axes
        Log y axis ``blob base fee [wei / blob gas] (log scale)``; the band is
        ``ax.collections[0]``; the legend right of the axes, off the data.
    """
    _require(frame, ["min_blob_base_fee_wei", "median_blob_base_fee_wei",
                     "max_blob_base_fee_wei"], "blob_market_by_period's frame")  # fmt: skip
    ax = _axes(ax)
    x = frame.index
    low = frame["min_blob_base_fee_wei"].to_numpy(dtype=float)
    high = frame["max_blob_base_fee_wei"].to_numpy(dtype=float)
    ax.fill_between(x, low, high, step="mid", color="#9ecae1", lw=0, label="lowest to highest")
    ax.plot(x, frame["median_blob_base_fee_wei"].to_numpy(dtype=float),
            **{"color": "#08519c", "lw": 0.9, "label": "median", **kwargs})  # fmt: skip
    ax.set_yscale("log")
    ax.set_ylabel("blob base fee [wei / blob gas] (log scale)")
    ax.set_xlabel("day (UTC)")
    _period_forks(ax, frame)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # off the data
    return ax


@_documented
def plot_blob_counts_by_period(
    frame: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any
) -> Axes:
    """Mean blobs per block per period, against the fork's target and maximum when given.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.blobs.blob_market_by_period`'s frame; optional
        ``target_blobs`` and ``max_blobs`` columns (each period's fork's) draw as steps.
    %(ax)s
    **kwargs
        Passed to ``Axes.plot`` (the mean line).

    Returns
    -------
    matplotlib.axes.Axes
        y label ``blobs per block [blobs]``, from 0.
    """
    _require(frame, ["mean_blobs"], "blob_market_by_period's frame")
    ax = _axes(ax)
    x = frame.index
    style = {"color": "#08519c", "lw": 0.9, "label": "mean blobs per block", **kwargs}
    ax.plot(x, frame["mean_blobs"].to_numpy(dtype=float), **style)
    for column, dash in (("target_blobs", "--"), ("max_blobs", ":")):
        if column in frame.columns:
            ax.step(x, frame[column].to_numpy(dtype=float), where="mid", color="#404040",
                    ls=dash, lw=1, label=column.replace("_blobs", ""))  # fmt: skip
    ax.set_ylim(bottom=0)
    ax.set_ylabel("blobs per block [blobs]")
    ax.set_xlabel("day (UTC)")
    _period_forks(ax, frame)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # off the data
    return ax


@_documented
def plot_excess_branches(frame: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """Per period, the shares of blocks whose excess followed each branch, stacked to 1.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.blobs.branch_shares_by_period`'s frame.
    %(ax)s
    **kwargs
        Passed to ``Axes.stackplot``.

    Returns
    -------
    matplotlib.axes.Axes
        One stacked area per branch present (``ax.collections``), y ``share of blocks [%]``.

    References
    ----------
    EIP-4844 (the target branch) and EIP-7918 (the reserve branch), https://eips.ethereum.org/
    """
    _require(frame, ["blocks"], "branch_shares_by_period's frame")
    ax = _axes(ax)
    shown = [b for b in EXCESS_BRANCH_COLOURS if b in frame.columns and frame[b].any()]
    ax.stackplot(frame.index, *(frame[b].to_numpy(dtype=float) * 100 for b in shown),
                 labels=[b.replace("_", " ") for b in shown],
                 colors=[EXCESS_BRANCH_COLOURS[b] for b in shown], **kwargs)  # fmt: skip
    ax.set_ylim(0, 100)
    ax.set_ylabel("share of blocks [%]")
    ax.set_xlabel("day (UTC)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # off the data
    return ax


@_documented
def plot_blob_fee_vs_reserve(frame: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """The blob base fee per block beside EIP-7918's reserve price (1/16 of the base fee).

    Parameters
    ----------
    frame : pandas.DataFrame
        Blocks with ``block_number``, ``blob_base_fee_wei`` and ``reserve_price_wei``
        (:func:`feeslab.analysis.blobs.reserve_price`) [wei per blob gas].
    %(ax)s
    **kwargs
        Passed to ``Axes.plot`` (the blob base fee).

    Returns
    -------
    matplotlib.axes.Axes
        Two lines on a log y axis: the blob base fee and the reserve price.

    References
    ----------
    EIP-7918, "Blob base fee bounded by execution cost", https://eips.ethereum.org/EIPS/eip-7918
    """
    _require(frame, ["block_number", "blob_base_fee_wei", "reserve_price_wei"],
             "blocks with blob_base_fee_wei and reserve_price_wei")  # fmt: skip
    ax = _axes(ax)
    x = frame["block_number"].to_numpy()
    ax.plot(x, _blob_fee_wei(frame), **{"lw": 0.8, "label": "blob base fee", **kwargs})
    ax.plot(x, frame["reserve_price_wei"].astype("float64").to_numpy(na_value=np.nan),
            color="#d6604d", lw=0.8, label="reserve price: base fee / 16")  # fmt: skip
    ax.set_yscale("log")
    ax.set_xlabel("block number")
    ax.set_ylabel("price [wei / blob gas] (log scale)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # off the data
    return ax


@_documented
def plot_blob_counts_by_branch(
    frame: pd.DataFrame,
    branches: pd.Series,
    *,
    ax: Axes | None = None,
    target: int | None = None,
    maximum: int | None = None,
    **kwargs: Any,
) -> Axes:
    """Blobs per block, each block coloured by the branch its own excess followed.

    A block's excess comes from its parent's, so its colour says how the parent's blobs were
    counted: EIP-4844's *target* branch, EIP-7918's *reserve* branch, *either* (a full
    parent), *below target* (excess reset to 0).

    Parameters
    ----------
    frame : pandas.DataFrame
        Blocks with ``block_number`` and ``blob_gas_used`` [blob gas].
    branches : pandas.Series
        :func:`feeslab.analysis.blobs.excess_branches` of ``frame``, aligned with it.
    %(ax)s
    target, maximum : int, optional
        The fork's target and maximum blobs per block, drawn as dashed and dotted lines.
    **kwargs
        Passed to ``Axes.scatter`` (once per branch present).

    Returns
    -------
    matplotlib.axes.Axes
        One scatter per branch present (``ax.collections``, in the order of
        ``EXCESS_BRANCH_COLOURS``), y ``blobs per block [blobs]``.

    References
    ----------
    EIP-4844 and EIP-7918, https://eips.ethereum.org/
    """
    _require(frame, ["block_number", "blob_gas_used"], "blocks with blob_gas_used")
    if len(branches) != len(frame):
        raise ValueError(f"branches has {len(branches)} rows, frame {len(frame)}: "
                         "pass excess_branches(frame)")  # fmt: skip
    ax = _axes(ax)
    x = frame["block_number"].to_numpy()
    blobs = frame["blob_gas_used"].astype("float64").to_numpy(na_value=np.nan) / 2**17
    labels = np.asarray(branches.astype(str))
    for name, colour in EXCESS_BRANCH_COLOURS.items():
        mask = labels == name
        if mask.any():
            ax.scatter(x[mask], blobs[mask], **{"s": 6, "color": colour,
                                                "label": name.replace("_", " "), **kwargs})
    for value, dash, label in ((target, "--", "blob target"), (maximum, ":", "blob max")):
        if value is not None:
            ax.axhline(value, color="#404040", linewidth=1, linestyle=dash, label=label)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("block number")
    ax.set_ylabel("blobs per block [blobs]")
    return ax

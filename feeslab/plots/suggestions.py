"""Plots of fee suggestions scored by :mod:`feeslab.analysis.backtest`: how soon each gets in,
what it overpays, and the blob fee multiple each fork needed.

Each function draws a frame the analysis returned; nothing is computed here beyond placing it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter, NullLocator

from feeslab.plots._base import _axes, _documented, _require

__all__ = [
    "plot_blob_k",
    "plot_inclusion",
    "plot_missed",
    "plot_overpayment",
    "plot_tradeoff",
]

_WITHIN = ("within_1", "within_3", "within_10")
_WITHIN_COLOURS = ("#2166ac", "#67a9cf", "#d1e5f0")
#: Shares labelled on plot_tradeoff's logit axis [fraction]
_LOGIT_TICKS = (0.01, 0.1, 0.2, 0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9995)


def _one_regime(table: pd.DataFrame, regime: str) -> pd.DataFrame:
    rows = table[table["regime"] == regime]
    if rows.empty:
        raise ValueError(f"the table has no rows of regime {regime!r} "
                         f"(has {sorted(table['regime'].unique())})")  # fmt: skip
    return rows


@_documented
def plot_inclusion(
    table: pd.DataFrame, *, ax: Axes | None = None, regime: str = "all", **kwargs: Any
) -> Axes:
    """Share of each estimator's suggestions included within 1, 3 and 10 blocks, as bars.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`feeslab.analysis.backtest.backtest`'s table.
    %(ax)s
    regime : str
        Which rows to draw (``"all"``, or one regime).
    **kwargs
        Passed to ``Axes.barh``.

    Returns
    -------
    matplotlib.axes.Axes
    """
    rows = _one_regime(_require(table, ["estimator", "regime", *_WITHIN], "backtest()'s table"),
                       regime)  # fmt: skip
    ax = _axes(ax)
    y = np.arange(len(rows))
    height = 0.8 / len(_WITHIN)
    for k, (column, colour) in enumerate(zip(_WITHIN, _WITHIN_COLOURS, strict=True)):
        blocks = column.split("_")[1]
        ax.barh(y + (k - 1) * height, rows[column].to_numpy(dtype=float) * 100, height=height,
                color=colour, label=f"within {blocks} block{'s' * (blocks != '1')}",
                **kwargs)  # fmt: skip
    ax.set_yticks(y, rows["estimator"].tolist())
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("suggestions included [%]")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=len(_WITHIN), fontsize=8)
    return ax


@_documented
def plot_missed(
    table: pd.DataFrame, *, ax: Axes | None = None, regime: str = "all", **kwargs: Any
) -> Axes:
    """Share of each estimator's suggestions *not* included within 1, 3 and 10 blocks, as
    points on a log axis.

    Shares included of 98.5 % and 99.9 % look alike on a 0-100 % axis; what they miss, 1.5 %
    and 0.1 %, differ fifteen-fold, and a log axis shows it. An estimator that missed none
    cannot sit on a log axis: it is drawn hollow at the axis's left edge, below one
    suggestion's share (``100 / suggestions`` %), and the legend says so.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`feeslab.analysis.backtest.backtest`'s table (with ``suggestions``).
    %(ax)s
    regime : str
        Which rows to draw (``"all"``, or one regime).
    **kwargs
        Passed to ``Axes.scatter``.

    Returns
    -------
    matplotlib.axes.Axes
        One filled scatter per window (``ax.collections``, x = 100 - share included [%]),
        then one hollow scatter of the estimators that missed none; x axis log scale.
    """
    columns = ["estimator", "regime", "suggestions", *_WITHIN]
    rows = _one_regime(_require(table, columns, "backtest()'s table"), regime)
    ax = _axes(ax)
    y = np.arange(len(rows))
    # half of one suggestion's share: left of every share that is not zero
    edge = 50.0 / float(rows["suggestions"].max())
    markers = ("o", "s", "D")
    hollow_x: list[float] = []
    hollow_y: list[float] = []
    for k, (column, colour, marker) in enumerate(zip(_WITHIN, _WITHIN_COLOURS, markers,
                                                     strict=True)):  # fmt: skip
        missed = (1.0 - rows[column].to_numpy(dtype=float)) * 100
        offset = (k - 1) * 0.22
        some = missed > 0
        blocks = column.split("_")[1]
        ax.scatter(missed[some], y[some] + offset, color=colour, marker=marker,
                   edgecolors="#404040", linewidths=0.5, s=30, zorder=3,
                   label=f"within {blocks} block{'s' * (blocks != '1')}", **kwargs)  # fmt: skip
        hollow_x += [edge] * int((~some).sum())
        hollow_y += list(y[~some] + offset)
    if hollow_x:
        ax.scatter(hollow_x, hollow_y, facecolors="none", edgecolors="#404040", marker="o",
                   s=30, zorder=3, label="none missed (drawn at the left edge)")  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlim(left=edge / 1.5)
    ax.set_yticks(y, rows["estimator"].tolist())
    ax.invert_yaxis()
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.grid(axis="x", color="#e0e0e0", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_xlabel("suggestions not included [%] (log scale)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, fontsize=8)
    return ax


@_documented
def plot_overpayment(
    table: pd.DataFrame,
    *,
    ax: Axes | None = None,
    regime: str = "all",
    unit: str = "gwei",
    **kwargs: Any,
) -> Axes:
    """Each estimator's median overpayment against the cheapest price that got in with the
    same delay, as bars.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`feeslab.analysis.backtest.backtest`'s table.
    %(ax)s
    regime : str
        Which rows to draw (``"all"``, or one regime).
    unit : {"gwei", "pct"}
        ``overpay_gwei_median`` [gwei] or ``overpay_pct_median`` [%].
    **kwargs
        Passed to ``Axes.barh``.

    Returns
    -------
    matplotlib.axes.Axes
    """
    if unit not in ("gwei", "pct"):
        raise ValueError(f"unit must be 'gwei' or 'pct', got {unit!r}")
    column = f"overpay_{unit}_median"
    rows = _one_regime(_require(table, ["estimator", "regime", column], "backtest()'s table"),
                       regime)  # fmt: skip
    ax = _axes(ax)
    kwargs.setdefault("color", "#d6604d")
    ax.barh(np.arange(len(rows)), rows[column].to_numpy(dtype=float), **kwargs)
    ax.set_yticks(np.arange(len(rows)), rows["estimator"].tolist())
    ax.invert_yaxis()
    ax.set_xlabel("median overpayment " + ("[gwei]" if unit == "gwei" else "[%]"))
    return ax


@_documented
def plot_tradeoff(
    table: pd.DataFrame, *, ax: Axes | None = None, regime: str = "all", **kwargs: Any
) -> Axes:
    """Inclusion within 1 block against median overpayment [%], one point per estimator.

    The inclusion axis is a logit scale (50 %, 90 %, 99 %, 99.9 % equally spaced), so that
    estimators near 100 % stay apart. Estimators within 0.1 of each other on both axes (% and
    percentage points: the same place in the figure) share one marker, named together in the
    legend ("a = b"): one could otherwise hide the other.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`feeslab.analysis.backtest.backtest`'s table.
    %(ax)s
    regime : str
        Which rows to draw.
    **kwargs
        Passed to ``Axes.scatter`` (once per point).

    Returns
    -------
    matplotlib.axes.Axes
        One scatter per point (``ax.collections``) at (overpayment [%], share included in
        the next block [fraction]), y axis in logit scale labelled in percent (its label
        says "(logit scale)").
    """
    columns = ["estimator", "regime", "within_1", "overpay_pct_median"]
    rows = _one_regime(_require(table, columns, "backtest()'s table"), regime)
    ax = _axes(ax)
    x = rows["overpay_pct_median"].to_numpy(dtype=float)
    y = rows["within_1"].to_numpy(dtype=float)
    # within 0.1 of a drawn point (% and percentage points): the same place, drawn once
    points: list[tuple[float, float, list[str]]] = []
    for name, xi, yi in zip(rows["estimator"], x, y, strict=True):
        near = [p for p in points if abs(p[0] - xi) <= 0.1 and abs(p[1] - yi) * 100 <= 0.1]
        if near:
            near[0][2].append(str(name))
        else:
            points.append((float(xi), float(yi), [str(name)]))
    # one marker per point, named in a legend: close points would overprint labels
    markers = "osD^v<>ph*"
    for k, (xi, yi, names) in enumerate(points):
        ax.scatter([xi], [yi], marker=markers[k % len(markers)], label=" = ".join(names), **kwargs)
    below = [t for t in _LOGIT_TICKS if t < y.min()]
    above = [t for t in _LOGIT_TICKS if t > y.max()]
    if below and above:  # shares strictly between 0 and 1: the logit axis, from tick to tick
        ax.set_yscale("logit")
        ax.set_yticks([t for t in _LOGIT_TICKS if below[-1] <= t <= above[0]])
        # a margin past the outer ticks: a point just under a tick is not cut by the frame
        low, high = np.log(below[-1] / (1 - below[-1])), np.log(above[0] / (1 - above[0]))
        pad = 0.05 * (high - low)
        ax.set_ylim(1 / (1 + np.exp(pad - low)), 1 / (1 + np.exp(-high - pad)))
        ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v * 100:.6g} %"))
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8)
    ax.set_xlabel("median overpayment [%]")
    scale = " (logit scale)" if ax.get_yscale() == "logit" else ""
    ax.set_ylabel(f"included in the next block [%]{scale}")
    return ax


@_documented
def plot_blob_k(table: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """The margin k - 1 over the blob base fee each fork needed, as bars from zero [%], with
    the share included at k = 1.

    Bars of k itself would have to start at 1 (or be all alike from 0); their margins, from
    zero, compare as the forks' needs do: 12.5 % is 1.9 times 6.7 %.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`feeslab.analysis.backtest.blob_multiples_by_fork`'s table.
    %(ax)s
    **kwargs
        Passed to ``Axes.bar``.

    Returns
    -------
    matplotlib.axes.Axes
        One bar per fork of height ``(k - 1) * 100`` [%], each labelled with its k and the
        share included at k = 1.
    """
    rows = _require(table, ["fork", "k", "share_at_1"], "blob_multiples_by_fork()'s table")
    ax = _axes(ax)
    x = np.arange(len(rows))
    kwargs.setdefault("color", "#4393c3")
    k = rows["k"].to_numpy(dtype=float)
    bars = ax.bar(x, (k - 1) * 100, **kwargs)
    for bar, one, share in zip(bars, k, rows["share_at_1"].to_numpy(dtype=float), strict=True):
        ax.annotate(f"k = {one:.4g}\n{share:.0%} at k = 1",
                    (bar.get_x() + bar.get_width() / 2, bar.get_height()), xytext=(0, 2),
                    textcoords="offset points", ha="center", fontsize=8)  # fmt: skip
    ax.set_xticks(x, rows["fork"].tolist())
    ax.set_ylim(0, max(1.0, float((k.max() - 1) * 100)) * 1.25)
    ax.set_ylabel("margin k - 1 over the blob base fee [%]")
    return ax

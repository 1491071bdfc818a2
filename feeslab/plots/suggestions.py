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

__all__ = ["plot_blob_k", "plot_inclusion", "plot_overpayment", "plot_tradeoff"]

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
        the next block [fraction]), y axis in logit scale labelled in percent.
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
    ax.set_ylabel("included in the next block [%]")
    return ax


@_documented
def plot_blob_k(table: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """The blob fee multiple k each fork needed, as bars, with the share included at k = 1.

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
    """
    rows = _require(table, ["fork", "k", "share_at_1"], "blob_multiples_by_fork()'s table")
    ax = _axes(ax)
    x = np.arange(len(rows))
    kwargs.setdefault("color", "#4393c3")
    bars = ax.bar(x, rows["k"].to_numpy(dtype=float), **kwargs)
    for bar, share in zip(bars, rows["share_at_1"].to_numpy(dtype=float), strict=True):
        ax.annotate(f"{share:.0%} at k=1", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    xytext=(0, 2), textcoords="offset points", ha="center", fontsize=8)  # fmt: skip
    ax.set_xticks(x, rows["fork"].tolist())
    ax.axhline(1.0, color="#404040", linewidth=0.8, linestyle=":")
    ax.set_ylim(0.9, max(1.2, float(rows["k"].max()) * 1.05))
    ax.set_ylabel("k = max fee per blob gas / blob base fee [1]")
    return ax

"""Plots of fees: base fee history, inferred utilisation, full and empty blocks, volatility,
regimes, the Gas API's percentiles, forecast bounds and chains side by side.

Each function draws a frame :mod:`feeslab.analysis.fees` returned (or a fee frame with its
columns added); nothing is computed here beyond placing it. Block numbers go on the x axis
when the frame has ``block_number``, else its index.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from feeslab.plots._base import _axes, _documented, _require

__all__ = [
    "REGIME_COLOURS",
    "STATE_MARKERS",
    "SUMMARY_LABELS",
    "VISIBLE_FRACTION",
    "plot_base_fee",
    "plot_base_fee_bounds",
    "plot_block_states",
    "plot_fee_summary",
    "plot_gas_api_percentiles",
    "plot_regime_spans",
    "plot_regimes",
    "plot_tip_cdf",
    "plot_utilisation",
    "plot_volatility",
]

_GWEI = 1e9
#: Colours of the regimes of :func:`feeslab.analysis.fees.fee_regimes`.
REGIME_COLOURS: dict[str, str] = {
    "calm": "#d9d9d9",
    "volatile": "#fdb863",
    "rising": "#e66101",
    "falling": "#5e3c99",
}
#: Marker and colour of the states of :func:`feeslab.analysis.fees.block_states` drawn.
STATE_MARKERS: dict[str, tuple[str, str]] = {
    "full": ("^", "#d7191c"),
    "empty": ("v", "#2c7bb6"),
    "unclear": ("x", "#7f7f7f"),
}
#: Axis labels (with units) of :func:`feeslab.analysis.fees.fee_summary`'s values.
SUMMARY_LABELS: dict[str, str] = {
    "blocks": "blocks [blocks]",
    "median_base_fee_gwei": "median base fee [gwei]",
    "busy_threshold_gwei": "busy threshold (90th percentile) [gwei]",
    "max_rise": "largest rise per block [fraction]",
    "max_fall": "largest fall per block [fraction]",
    "volatility": "volatility of log base fee [1/√block]",
    "scaled_volatility": "spread of gas used / target, from fees [1]",
    "mean_gas_used_target_ratio": "mean gas used / target [1]",
    "full_share": "share of full blocks [fraction]",
    "empty_share": "share of empty blocks [fraction]",
}
VISIBLE_FRACTION = 0.005
"""A band narrower than this share of its plot's range does not show: it gets no legend entry."""
_BLOCK_LABEL = "block number"
_RATIO_LABEL = "gas used / gas target [1]"


def _x(frame: pd.DataFrame) -> np.ndarray:
    if "block_number" in frame.columns:
        return np.asarray(frame["block_number"].to_numpy())
    return np.asarray(frame.index.to_numpy())


def _x_label(frame: pd.DataFrame) -> str:
    return _BLOCK_LABEL if "block_number" in frame.columns else "row"


def _gwei(frame: pd.DataFrame, stem: str) -> np.ndarray:
    """``<stem>_gwei`` if the frame has it, else ``<stem>_wei`` in gwei."""
    if f"{stem}_gwei" in frame.columns:
        return np.asarray(frame[f"{stem}_gwei"].to_numpy(dtype=float, na_value=np.nan))
    return np.asarray(frame[f"{stem}_wei"].astype("float64").to_numpy(na_value=np.nan) / _GWEI)


def _has(frame: object, stem: str) -> bool:
    return isinstance(frame, pd.DataFrame) and (
        f"{stem}_gwei" in frame.columns or f"{stem}_wei" in frame.columns
    )


def _base_fee_frame(frame: object, what: str) -> pd.DataFrame:
    if not _has(frame, "base_fee"):
        raise TypeError(f"frame must be {what} (a 'base_fee_gwei' or 'base_fee_wei' column)")
    return frame


@_documented
def plot_base_fee(frame: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """Base fee per block.

    Parameters
    ----------
    frame : pandas.DataFrame
        A fee frame (``Lab.fee_history``, ``Lab.base_fee_history``, ``Lab.blocks``): the
        ``base_fee_gwei`` column (or ``base_fee_wei``), against ``block_number``.
    %(ax)s
    **kwargs
        Passed to ``Axes.plot`` (e.g. ``label``, ``color``, ``lw``).

    Returns
    -------
    matplotlib.axes.Axes
        One line (``ax.lines[-1]``), y label ``base fee [gwei]``.
    """
    frame = _base_fee_frame(frame, "a fee frame")
    ax = _axes(ax)
    ax.plot(_x(frame), _gwei(frame, "base_fee"), **{"lw": 1.0, **kwargs})
    ax.set_xlabel(_x_label(frame))
    ax.set_ylabel("base fee [gwei]")
    return ax


@_documented
def plot_utilisation(
    frame: pd.DataFrame,
    *,
    ax: Axes | None = None,
    truth: pd.Series | None = None,
    full_ratio: float | None = None,
    **kwargs: Any,
) -> Axes:
    """Gas used / target inferred from base fees, with its rounding interval.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.fees.infer_utilisation`'s frame.
    %(ax)s
    truth : pandas.Series, optional
        The ratio from the headers (:func:`feeslab.analysis.fees.gas_used_target_ratio`),
        aligned with ``frame``, drawn as markers over the estimate.
    full_ratio : float, optional
        Gas limit / target (2 on Ethereum): a dotted line where blocks are full.
    **kwargs
        Passed to ``Axes.plot`` for the estimate.

    Returns
    -------
    matplotlib.axes.Axes
        The interval (``ax.collections[0]``, from ``fill_between``), the estimate line
        (label ``inferred from base fees``), the truth markers (``from headers``) if given,
        and dotted lines at the target (1) and at ``full_ratio``. The interval is in the
        legend only where it shows: when its widest point is at least
        :data:`VISIBLE_FRACTION` of the estimate's range.
    """
    frame = _require(
        frame,
        {"gas_used_target_ratio", "gas_used_target_ratio_low", "gas_used_target_ratio_high"},
        "infer_utilisation's frame",
    )
    ax = _axes(ax)
    x = _x(frame)
    low = frame["gas_used_target_ratio_low"].to_numpy(dtype=float, na_value=np.nan)
    high = frame["gas_used_target_ratio_high"].to_numpy(dtype=float, na_value=np.nan)
    mid = frame["gas_used_target_ratio"].to_numpy(dtype=float, na_value=np.nan)
    # at ordinary base fees the interval is under 1e-8 wide: a legend entry would name nothing
    widest = np.nanmax(high - low, initial=0.0)
    span = np.nanmax(mid, initial=0.0) - np.nanmin(mid, initial=0.0)
    visible = widest >= VISIBLE_FRACTION * (span or 1.0)
    ax.fill_between(
        x, low, high, step="mid", alpha=0.3,
        label="rounding interval" if visible else "_rounding interval (too narrow to see)",
    )  # fmt: skip
    ax.plot(
        x,
        frame["gas_used_target_ratio"].to_numpy(),
        **{"lw": 0.8, "drawstyle": "steps-mid", "label": "inferred from base fees", **kwargs},
    )
    if truth is not None:
        ax.plot(
            x,
            np.asarray(truth, dtype=float),
            ls="none",
            marker=".",
            ms=3,
            color="black",
            label="from headers",
        )
    ax.axhline(1.0, color="grey", ls=":", lw=1, label="target")
    if full_ratio is not None:
        ax.axhline(full_ratio, color="firebrick", ls=":", lw=1, label="full block")
    ax.set_xlabel(_x_label(frame))
    ax.set_ylabel(_RATIO_LABEL)
    ax.legend(loc="best", fontsize="small")
    return ax


@_documented
def plot_block_states(frame: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """Base fee per block, with full, empty and unclear blocks marked.

    Parameters
    ----------
    frame : pandas.DataFrame
        A fee frame with ``base_fee_gwei`` (or ``_wei``) and a ``state`` column
        (:func:`feeslab.analysis.fees.block_states`).
    %(ax)s
    **kwargs
        Passed to ``Axes.plot`` for the base fee line.

    Returns
    -------
    matplotlib.axes.Axes
        The base fee line, then one marker series per state present among ``full``,
        ``empty`` and ``unclear`` (labelled with the state and its count).
    """
    frame = _base_fee_frame(frame, "a fee frame with a 'state' column")
    _require(frame, {"state"}, "a fee frame with a 'state' column")
    ax = _axes(ax)
    x, fee = _x(frame), _gwei(frame, "base_fee")
    ax.plot(x, fee, **{"lw": 0.8, "color": "grey", "label": "base fee", **kwargs})
    state = frame["state"].astype(object).to_numpy()
    for name, (marker, colour) in STATE_MARKERS.items():
        chosen = state == name
        if chosen.any():
            ax.plot(
                x[chosen],
                fee[chosen],
                ls="none",
                marker=marker,
                color=colour,
                ms=5,
                label=f"{name} ({int(chosen.sum()):,})",
            )
    ax.set_xlabel(_x_label(frame))
    ax.set_ylabel("base fee [gwei]")
    ax.legend(loc="upper right", fontsize="small")
    return ax


@_documented
def plot_volatility(frame: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """Rolling volatility of the base fee.

    Parameters
    ----------
    frame : pandas.DataFrame
        With a ``volatility`` column (:func:`feeslab.analysis.fees.rolling_volatility`
        assigned to a fee frame) and ``block_number``.
    %(ax)s
    **kwargs
        Passed to ``Axes.plot``.

    Returns
    -------
    matplotlib.axes.Axes
        One line; y label ``volatility of log base fee [1/√block]``.
    """
    frame = _require(frame, {"volatility"}, "a frame with a 'volatility' column")
    ax = _axes(ax)
    ax.plot(_x(frame), frame["volatility"].to_numpy(dtype=float), **{"lw": 1.0, **kwargs})
    ax.set_xlabel(_x_label(frame))
    ax.set_ylabel("volatility of log base fee [1/√block]")
    return ax


@_documented
def plot_regimes(
    frame: pd.DataFrame,
    *,
    ax: Axes | None = None,
    drift_threshold: float | None = 0.25,
    **kwargs: Any,
) -> Axes:
    """Drift and spread of the base fee's excess utilisation, as ``fee_regimes`` measured.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.fees.fee_regimes`'s frame (``drift``, ``spread``).
    %(ax)s
    drift_threshold : float, optional
        Draws dotted lines at ± this drift (the rising / falling thresholds); None: none.
    **kwargs
        Passed to ``Axes.plot`` for both lines.

    Returns
    -------
    matplotlib.axes.Axes
        Lines labelled ``drift`` and ``spread``; y label in units of the gas target.
    """
    frame = _require(frame, {"drift", "spread"}, "fee_regimes' frame")
    ax = _axes(ax)
    x = _x(frame)
    ax.plot(x, frame["drift"].to_numpy(dtype=float), **{"lw": 1.0, "label": "drift", **kwargs})
    ax.plot(x, frame["spread"].to_numpy(dtype=float), **{"lw": 1.0, "label": "spread", **kwargs})
    if drift_threshold is not None:
        for level in (drift_threshold, -drift_threshold):
            ax.axhline(level, color="grey", ls=":", lw=1)
    ax.axhline(0.0, color="black", lw=0.5)
    ax.set_xlabel(_x_label(frame))
    ax.set_ylabel("excess gas used / target [1]")
    ax.legend(loc="upper right", fontsize="small")
    return ax


@_documented
def plot_regime_spans(
    spans: pd.DataFrame,
    *,
    ax: Axes | None = None,
    colours: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> Axes:
    """Shade each run of a fee regime (draw a base fee over it with :func:`plot_base_fee`).

    Parameters
    ----------
    spans : pandas.DataFrame
        :func:`feeslab.analysis.fees.regime_spans`'s frame.
    %(ax)s
    colours : dict, optional
        Colour per regime (default :data:`REGIME_COLOURS`).
    **kwargs
        Passed to ``Axes.axvspan`` (e.g. ``alpha``).

    Returns
    -------
    matplotlib.axes.Axes
        One shaded span per run (``ax.patches``), from ``first_block - 0.5`` to
        ``last_block + 0.5``, each regime labelled once for the legend.
    """
    spans = _require(spans, {"regime", "first_block", "last_block"}, "regime_spans' frame")
    ax = _axes(ax)
    colours = {**REGIME_COLOURS, **(colours or {})}
    seen: set[str] = set()
    for row in spans.itertuples(index=False):
        regime = str(row.regime)
        label = regime if regime not in seen else "_nolegend_"
        seen.add(regime)
        ax.axvspan(
            row.first_block - 0.5,
            row.last_block + 0.5,
            lw=0,
            **{"color": colours.get(regime, "white"), "alpha": 0.5, "label": label, **kwargs},
        )
    ax.set_xlabel(_BLOCK_LABEL)
    ax.legend(loc="upper right", fontsize="small")
    return ax


@_documented
def plot_gas_api_percentiles(frame: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """Base fee with the Gas API's ``baseFeePercentile`` and ``busyThreshold`` over time.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.fees.gas_api_percentiles`'s frame.
    %(ax)s
    **kwargs
        Passed to ``Axes.plot`` for the base fee line.

    Returns
    -------
    matplotlib.axes.Axes
        Three lines: ``base fee``, ``baseFeePercentile (median of 500)`` and
        ``busyThreshold (90th percentile)``; y label in gwei.
    """
    frame = _require(
        frame, {"base_fee_percentile_gwei", "busy_threshold_gwei"}, "gas_api_percentiles' frame"
    )
    _base_fee_frame(frame, "gas_api_percentiles' frame")
    ax = _axes(ax)
    x = _x(frame)
    ax.plot(
        x, _gwei(frame, "base_fee"), **{"lw": 0.6, "color": "grey", "label": "base fee", **kwargs}
    )
    ax.plot(x, _gwei(frame, "base_fee_percentile"), lw=1.5, label="baseFeePercentile (median)")
    ax.plot(x, _gwei(frame, "busy_threshold"), lw=1.5, label="busyThreshold (90th percentile)")
    ax.set_xlabel(_x_label(frame))
    ax.set_ylabel("base fee [gwei]")
    ax.legend(loc="upper right", fontsize="small")
    return ax


@_documented
def plot_base_fee_bounds(frame: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """The lowest and highest base fee reachable k blocks ahead, as a fan.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.fees.base_fee_bounds`'s frame.
    %(ax)s
    **kwargs
        Passed to ``Axes.fill_between`` (e.g. ``color``, ``alpha``).

    Returns
    -------
    matplotlib.axes.Axes
        The reachable band (``ax.collections[0]``) and its edges as two lines, ``all blocks
        full`` and ``all blocks empty``; x label ``blocks ahead [blocks]``.
    """
    frame = _require(frame, {"blocks_ahead"}, "base_fee_bounds' frame")
    if not (_has(frame, "lowest_base_fee") and _has(frame, "highest_base_fee")):
        raise TypeError("frame must be base_fee_bounds' frame (lowest/highest base fee columns)")
    ax = _axes(ax)
    k = frame["blocks_ahead"].to_numpy()
    low, high = _gwei(frame, "lowest_base_fee"), _gwei(frame, "highest_base_fee")
    ax.fill_between(k, low, high, **{"alpha": 0.25, "label": "reachable", **kwargs})
    ax.plot(k, high, color="firebrick", lw=1.2, label="all blocks full")
    ax.plot(k, low, color="steelblue", lw=1.2, label="all blocks empty")
    ax.set_xlabel("blocks ahead [blocks]")
    ax.set_ylabel("base fee [gwei]")
    ax.legend(loc="upper left", fontsize="small")
    return ax


@_documented
def plot_fee_summary(
    summary: pd.DataFrame,
    *,
    column: str = "scaled_volatility",
    ax: Axes | None = None,
    percent: bool = False,
    **kwargs: Any,
) -> Axes:
    """One value of :func:`feeslab.analysis.fees.fee_summary` per chain, as bars.

    Parameters
    ----------
    summary : pandas.DataFrame
        One row per chain (index: the chains' names), columns as ``fee_summary`` returns
        (``pd.DataFrame([fee_summary(...), ...])``).
    column : str
        The value to show.
    %(ax)s
    percent : bool, default False
        Show a fraction (``full_share``, ``max_rise``...) in percent: bars times 100, the
        label's ``[fraction]`` as ``[%]``.
    **kwargs
        Passed to ``Axes.barh``.

    Returns
    -------
    matplotlib.axes.Axes
        One bar per chain (``ax.patches``), y tick labels the chains, x label with the unit.
    """
    summary = _require(summary, {column}, f"fee_summary rows with a {column!r} column")
    ax = _axes(ax)
    names = [str(n) for n in summary.index]
    label = SUMMARY_LABELS.get(column, column)
    if percent and not label.endswith("[fraction]"):
        raise ValueError(f"percent=True needs a fraction; {column!r} is {label!r}")
    scale = 100.0 if percent else 1.0
    ax.barh(names, summary[column].to_numpy(dtype=float) * scale, **kwargs)
    ax.invert_yaxis()  # first chain on top
    ax.set_xlabel(label.replace("[fraction]", "[%]") if percent else label)
    return ax


@_documented
def plot_tip_cdf(
    frame: pd.DataFrame, *, ax: Axes | None = None, by: str = "block_number", **kwargs: Any
) -> Axes:
    """The tips inside each block as a cumulative distribution: one step line per block.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`feeslab.analysis.fees.tip_cdf`'s frame (``by``, ``tip_wei``, ``share``).
    %(ax)s
    by : str, default "block_number"
        The column naming each line (as given to ``tip_cdf``).
    **kwargs
        Passed to each ``Axes.step``.

    Returns
    -------
    matplotlib.axes.Axes
        One line per group labelled with it, x ``tip [gwei]`` on a symlog axis (zero tips
        stay visible), y ``share of the block's gas at or below [%]``.
    """
    frame = _require(frame, {by, "tip_wei", "share"}, "tip_cdf's frame")
    ax = _axes(ax)
    for key, group in frame.groupby(by, sort=True):
        label = f"{key:,}" if isinstance(key, int | np.integer) else str(key)
        tips = np.r_[0.0, group["tip_wei"].to_numpy(dtype=float) / _GWEI]
        shares = np.r_[0.0, group["share"].to_numpy(dtype=float) * 100]
        ax.step(tips, shares, where="post", **{"lw": 1.2, "label": label, **kwargs})
    ax.set_xscale("symlog", linthresh=0.01)
    ax.set_xlabel("tip [gwei] (symlog: linear below 0.01)")
    ax.set_ylabel("share of the block's gas at or below [%]")
    ax.set_ylim(0, 100)
    ax.legend(title=by.replace("_", " "), fontsize="small")
    return ax

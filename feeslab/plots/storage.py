"""Plots of storage: slot layouts, token balances, proxy implementations, oracle answers.

Each function draws a frame :mod:`feeslab.analysis.storage` returned; nothing is computed
here beyond placing it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from matplotlib.axes import Axes

from feeslab.plots._base import _axes, _documented, _require

__all__ = [
    "plot_implementation_periods",
    "plot_oracle_answers",
    "plot_storage_layout",
    "plot_token_balances",
]

_WORD_BYTES = 32


def _short(address: str) -> str:
    return f"{address[:6]}…{address[-4:]}" if len(address) == 42 else address


@_documented
def plot_storage_layout(table: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """Draw each slot as a 32-byte word and every variable as a box at its bytes.

    The high-order byte 31 is on the left and byte 0 on the right, as the word reads in hex,
    so packed variables appear where ``eth_getStorageAt``'s answer shows them. Mappings,
    dynamic arrays, strings and bytes are hatched: their slot holds a marker or a length, and
    their data lives at hashed slots.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`feeslab.analysis.storage.layout_table`'s frame (or some of its rows).
    %(ax)s
    **kwargs
        Passed to ``Axes.barh`` (e.g. ``color``, ``edgecolor``).

    Returns
    -------
    matplotlib.axes.Axes
        One bar per variable (``ax.patches``), labelled with its name and type.
    """
    table = _require(table, {"label", "slot", "offset_bytes", "size_bytes", "type_label",
                             "encoding"}, "layout_table's frame")
    ax = _axes(ax)
    slot_rows = {s: i for i, s in enumerate(sorted({int(s) for s in table["slot"]}))}
    y = [slot_rows[int(s)] for s in table["slot"]]
    widths = [min(int(n), _WORD_BYTES - int(o)) for n, o in
              zip(table["size_bytes"], table["offset_bytes"], strict=True)]
    options = {"height": 0.8, "edgecolor": "black", "linewidth": 1.0, "alpha": 0.85, **kwargs}
    bars = ax.barh(y, widths, left=table["offset_bytes"].tolist(), **options)
    for bar, encoding in zip(bars, table["encoding"], strict=True):
        if encoding != "inplace":
            bar.set_hatch("//")
    for row, y_pos, width in zip(table.itertuples(), y, widths, strict=True):
        text = f"{row.label}\n{row.type_label}"
        if int(row.size_bytes) > _WORD_BYTES:
            text += f" ({(int(row.size_bytes) + 31) // 32} slots)"
        ax.text(
            int(row.offset_bytes) + width / 2,
            y_pos,
            text,
            ha="center",
            va="center",
            fontsize="small",
            bbox={"facecolor": "white", "alpha": 0.8, "linewidth": 0},
        )
    ax.set_xlim(_WORD_BYTES, 0)
    ax.set_xticks(range(0, _WORD_BYTES + 1, 4))
    ax.set_ylim(len(slot_rows) - 0.5, -0.5)
    ax.set_yticks(range(len(slot_rows)), [str(s) for s in slot_rows])
    ax.set_xlabel("offset from the slot's low-order end [bytes]")
    ax.set_ylabel("slot")
    ax.set_title("storage layout")
    return ax


@_documented
def plot_token_balances(
    balances: pd.DataFrame, *, ax: Axes | None = None, column: str = "balance", **kwargs: Any
) -> Axes:
    """One step line per holder: its balance (or share of supply) over blocks.

    Parameters
    ----------
    balances : pandas.DataFrame
        :func:`feeslab.analysis.storage.token_balances`' frame.
    %(ax)s
    column : {"balance", "share"}
        Tokens held, or the fraction of the supply (needs ``total_supply=`` in the analysis).
    **kwargs
        Passed to ``Axes.step``.

    Returns
    -------
    matplotlib.axes.Axes
        One line per holder, labelled with the holder, and a legend.
    """
    balances = _require(balances, {"block_number", "holder", column}, "token_balances' frame")
    labels = {"balance": "balance [tokens]", "share": "share of supply [fraction]"}
    if column not in labels:
        raise ValueError(f"column must be 'balance' or 'share', not {column!r}")
    ax = _axes(ax)
    for holder, rows in balances.groupby("holder", sort=False):
        ax.step(rows["block_number"], rows[column], where="post", label=_short(str(holder)),
                **kwargs)
    ax.set_xlabel("block number")
    ax.set_ylabel(labels[column])
    ax.legend(title="holder", fontsize="small")
    return ax


@_documented
def plot_implementation_periods(
    periods: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any
) -> Axes:
    """Which implementation a proxy used over blocks, with the interval each change hides in.

    Parameters
    ----------
    periods : pandas.DataFrame
        :func:`feeslab.analysis.storage.implementation_periods`' frame.
    %(ax)s
    **kwargs
        Passed to ``Axes.plot`` for the periods.

    Returns
    -------
    matplotlib.axes.Axes
        One thick line per period from ``first_block`` to ``last_block`` on its
        implementation's row (a dot for a single sample), and one grey span per change over
        ``(changed_after, first_block]``.
    """
    periods = _require(periods, {"implementation", "first_block", "last_block",
                                 "changed_after"}, "implementation_periods' frame")
    ax = _axes(ax)
    rows = {a: i for i, a in enumerate(dict.fromkeys(periods["implementation"]))}
    options = {"linewidth": 6, "marker": "o", "solid_capstyle": "butt", **kwargs}
    for period in periods.itertuples():
        y = rows[period.implementation]
        ax.plot([period.first_block, period.last_block], [y, y], color=f"C{y}", **options)
    changes = periods[periods["changed_after"].notna()]
    for i, change in enumerate(changes.itertuples()):
        ax.axvspan(int(change.changed_after), change.first_block, color="0.6", alpha=0.5,
                   label="changed in here" if i == 0 else None)
    ax.set_yticks(range(len(rows)), [_short(a) for a in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel("block number")
    ax.set_ylabel("implementation")
    if len(changes):
        ax.legend(fontsize="small")
    return ax


@_documented
def plot_oracle_answers(
    rounds: pd.DataFrame,
    *,
    ax: Axes | None = None,
    x: str = "updated_at",
    unit: str = "USD",
    **kwargs: Any,
) -> Axes:
    """An oracle's answer as a step line: each value holds until the next round.

    Parameters
    ----------
    rounds : pandas.DataFrame
        :func:`feeslab.analysis.storage.oracle_rounds`' or ``round_updates``' frame.
    %(ax)s
    x : {"updated_at", "block_number"}
        The round's own time, or the block where it was sampled.
    unit : str, default "USD"
        The answer's unit, for the axis label.
    **kwargs
        Passed to ``Axes.step``.

    Returns
    -------
    matplotlib.axes.Axes
        One step line.
    """
    rounds = _require(rounds, {"answer", x}, "oracle_rounds' frame")
    xlabels = {"updated_at": "round updated at [UTC]", "block_number": "block number"}
    if x not in xlabels:
        raise ValueError(f"x must be 'updated_at' or 'block_number', not {x!r}")
    ax = _axes(ax)
    ax.step(rounds[x], rounds["answer"], where="post", **kwargs)
    if x == "updated_at":
        import matplotlib.dates as mdates

        locator = mdates.AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_xlabel(xlabels[x])
    ax.set_ylabel(f"answer [{unit}]")
    return ax

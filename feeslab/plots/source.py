"""Where a figure's data comes from, said on the figure: real chain or simulator, and which blocks.

A reader must never take the devnet's simulated blocks (or its simulated dates) for a real chain's:
every figure of the notebooks carries a source line made here from the frame's own ``attrs``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure

__all__ = ["add_source", "describe_source"]

SIMULATED = "devnet (simulated)"


def describe_source(
    frame: pd.DataFrame, *, column: str = "block_number", date_column: str = "timestamp"
) -> str:
    """Say where ``frame``'s rows come from, as a figure's source line should.

    Parameters
    ----------
    frame : pandas.DataFrame
        A frame from :class:`feeslab.Lab`, :mod:`feeslab.samples` or :mod:`feeslab.analysis`,
        whose ``attrs`` name its ``source`` (``"devnet"`` for the simulator) and its chain
        (``chain_spec``, ``network`` or ``chain_id``).
    column : str, default "block_number"
        The column (or index level) of block numbers whose range is named; left out when absent.

    date_column : str, default "timestamp"
        The column of UTC times whose first and last day are named for a real chain (left out
        when absent; the devnet's dates are simulated and never named).

    Returns
    -------
    str
        ``"devnet (simulated), blocks a-b"`` for the simulator, else ``"<network>, blocks a-b,
        <first day> to <last day> (<source>)"``, e.g. ``"mainnet, blocks 0-8,191, 2015-07-30 to
        2015-08-03 (era1)"``. Blocks that do not fill their range are not called a range: up to
        five are listed (``"blocks 1, 5 and 9"``), more are counted (``"1,024 blocks of
        1-99,999"``).

    Raises
    ------
    ValueError
        When ``attrs`` say nothing of the source: a frame that lost its ``attrs`` (some pandas
        operations drop them) cannot be labelled, and guessing would defeat the purpose.
    """
    attrs = frame.attrs
    source = attrs.get("source")
    if source is None:
        raise ValueError(
            "frame.attrs has no 'source': say where the data comes from "
            "(copy the attrs of the frame it came from)"
        )
    blocks = _block_range(frame, column)
    if source == "devnet":
        return SIMULATED + blocks
    spec = str(attrs.get("chain_spec", ""))
    chain_id = attrs.get("chain_id")
    network = (
        attrs.get("network") or spec.split("@")[0] or _NETWORKS.get(chain_id, f"chain {chain_id}")
    )
    return f"{network}{blocks}{_days(frame, date_column)} ({source})"


_NETWORKS = {1: "mainnet", 11155111: "sepolia", 137: "polygon-mainnet", 8453: "base-mainnet"}


def _block_range(frame: pd.DataFrame, column: str) -> str:
    if column in frame.columns:
        values = frame[column]
    elif column in (frame.index.names or []):
        values = frame.index.get_level_values(column).to_series()
    else:
        return ""
    numbers = sorted({int(value) for value in values.dropna()})
    if not numbers:
        return ""
    first, last = numbers[0], numbers[-1]
    if first == last:
        return f", block {first:,}"
    if len(numbers) == last - first + 1:
        return f", blocks {first:,}-{last:,}"
    if len(numbers) <= 5:  # a few blocks are named, never called a range
        named = [f"{number:,}" for number in numbers]
        return f", blocks {', '.join(named[:-1])} and {named[-1]}"
    return f", {len(numbers):,} blocks of {first:,}-{last:,}"


def _days(frame: pd.DataFrame, column: str) -> str:
    """``", <first day> to <last day>"`` of a UTC time column (one day once), else ``""``."""
    if column not in frame.columns or not pd.api.types.is_datetime64_any_dtype(frame[column]):
        return ""
    times = frame[column].dropna()
    times = times[times.dt.year > 1970]  # mainnet's genesis header says 0 (1970-01-01)
    if times.empty:
        return ""
    first, last = (f"{moment:%Y-%m-%d}" for moment in (times.min(), times.max()))
    return f", {first}" if first == last else f", {first} to {last}"


def add_source(target: Axes | Figure | SubFigure, text: str, **kwargs: Any) -> Figure | SubFigure:
    """Write ``"Source: <text>"`` under the figure, right-aligned, where tight_layout keeps room.

    Parameters
    ----------
    target : matplotlib.axes.Axes or matplotlib.figure.Figure
        The figure, or any of its Axes.
    text : str
        Where the data comes from, e.g. :func:`describe_source`'s answer.
    **kwargs
        Passed to :meth:`matplotlib.figure.Figure.supxlabel` (over the small grey default).

    Returns
    -------
    matplotlib.figure.Figure
        The figure written on.

    Raises
    ------
    ValueError
        When ``text`` is empty: a source line must say something.
    """
    if not text.strip():
        raise ValueError("a source line needs a source: got an empty text")
    figure = target.figure if isinstance(target, Axes) else target
    assert figure is not None  # an Axes always belongs to a figure
    # supxlabel, not fig.text: tight_layout keeps room for it under the x labels
    style = {"x": 0.99, "ha": "right", "fontsize": 8, "color": "dimgrey", **kwargs}
    figure.supxlabel(f"Source: {text}", **style)
    return figure

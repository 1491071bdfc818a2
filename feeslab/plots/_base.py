"""What every plot module shares: the Axes to draw on, the frame check, and the docstring
entries every plot function has."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

import pandas as pd
from matplotlib.axes import Axes


def _axes(ax: Axes | None) -> Axes:
    """``ax``, or the Axes of a new figure when it is None (the only place figures are made)."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots()
    return ax


def _require(frame: object, columns: Iterable[str], what: str) -> pd.DataFrame:
    """``frame``, checked to be a DataFrame with ``columns``; else a TypeError naming what the
    plot expects (the analysis function that makes it)."""
    wanted = list(columns)
    if not isinstance(frame, pd.DataFrame) or not set(wanted) <= set(frame.columns):
        raise TypeError(f"frame must be {what} (columns {', '.join(sorted(wanted))})")
    return frame


_ENTRIES = {
    "ax": ("ax : matplotlib.axes.Axes, optional", "Where to draw; a new figure when None."),
}  # written once here, not in every plot function's Parameters section

F = TypeVar("F", bound=Callable[..., object])


def _documented(func: F) -> F:
    """``func`` with the shared entries (``%(ax)s``) filled into its docstring."""
    doc = func.__doc__ or ""
    for name, (head, body) in _ENTRIES.items():
        # at the placeholder's own indent: 4 spaces before Python 3.13, none after (3.13's
        # compiler strips a docstring's common indent)
        def entry(m: re.Match[str], head: str = head, body: str = body) -> str:
            return f"{m[1]}{head}\n{m[1]}    {body}"

        doc = re.sub(rf"^([ \t]*)%\({name}\)s$", entry, doc, flags=re.MULTILINE)
    func.__doc__ = doc
    return func

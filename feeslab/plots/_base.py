"""What every plot module shares: the Axes to draw on, the frame check, and the docstring
entries every plot function has."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import pandas as pd
from matplotlib.axes import Axes


def _axes(ax: Axes | None) -> Axes:
    """``ax``, or the Axes of a new figure when it is None (the only place figures are made)."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots()
    return ax


def _require(frame: Any, columns: Iterable[str], what: str) -> pd.DataFrame:
    """``frame``, checked to be a DataFrame with ``columns``; else a TypeError naming what the
    plot expects (the analysis function that makes it)."""
    wanted = list(columns)
    if not isinstance(frame, pd.DataFrame) or not set(wanted) <= set(frame.columns):
        raise TypeError(f"frame must be {what} (columns {', '.join(sorted(wanted))})")
    return frame


_ENTRIES = {
    "%(ax)s": "ax : matplotlib.axes.Axes, optional\n        Where to draw; a new figure when None.",
}  # written once here, not in every plot function's Parameters section

F = TypeVar("F", bound=Callable[..., Any])


def _documented(func: F) -> F:
    """``func`` with the shared entries (``%(ax)s``) filled into its docstring."""
    doc = func.__doc__ or ""
    for placeholder, entry in _ENTRIES.items():
        doc = doc.replace(placeholder, entry)
    func.__doc__ = doc
    return func

"""What every plot module shares: the Axes to draw on, and the frame check."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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

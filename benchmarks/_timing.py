"""The one way the benchmarks time a piece of work: the median of repeated runs."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def median_timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median seconds of ``repeat`` runs of ``fn``, and what its last run returned."""
    samples, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), value


def median_seconds(fn: Callable[[], Any], repeat: int) -> float:
    """Median seconds of ``repeat`` runs of ``fn``."""
    return median_timed(fn, repeat)[0]

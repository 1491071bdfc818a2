"""What a job of partitions did (``feeslab.jobs``): below the datasets, whose results carry it
(``UncleScan.report``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["JobReport"]


@dataclass(frozen=True)
class JobReport:
    """What a job of partitions did.

    Attributes
    ----------
    computed, skipped : tuple of str
        Partition files written by this run, and those found already written (when it
        started, or by the time a worker came to them).
    credits : int
        Credits the workers' requests were charged, all workers together [credits].
    rate_limited : int
        HTTP 429 answers the workers met.
    seconds : float
        Wall time of the run [s].
    dashboard : str or None
        The dask dashboard's address.
    calls : dict of str to int
        Calls the workers' requests carried, per method (served requests).
    keys : tuple of dict
        Per API key (``source`` first, then ``keys=``): ``spent`` [credits], ``refusals``
        (429s) and ``requests``.
    """

    out: Path
    computed: tuple[str, ...]
    skipped: tuple[str, ...]
    credits: int
    rate_limited: int
    seconds: float
    dashboard: str | None = None
    calls: dict[str, int] = field(default_factory=dict)
    keys: tuple[dict[str, int], ...] = ()

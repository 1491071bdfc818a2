"""Block headers: ``eth_getBlockByNumber`` without transactions, one row per block.

See ``feeslab.frames.parse_blocks`` for the columns (blob columns included).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from feeslab.datasets._checks import check_range, is_archive
from feeslab.fetch._gc import gc_paused
from feeslab.fetch.credits import Plan
from feeslab.fetch.node import quantity
from feeslab.fetch.transport import RpcCall
from feeslab.frames import parse_blocks

__all__ = ["calls", "get", "headers", "plan"]

METHOD = "eth_getBlockByNumber"


def calls(numbers: Sequence[int]) -> list[RpcCall]:
    """The calls for the headers of ``numbers``, in order."""
    return [RpcCall(METHOD, [quantity(n), False]) for n in numbers]


def headers(source: Any, numbers: Sequence[int], **options: Any) -> list[dict | None]:
    """The decoded headers of ``numbers`` from a node, in order (None where it has none).

    ``options`` go to ``NodeClient.run`` (``progress``, ``on_chunk``).
    """
    return source.results(calls(numbers), description="blocks", **options)


def _title(start: int, stop: int) -> str:
    return f"blocks {start:,} to {stop - 1:,}"


def plan(source: Any, start: int, stop: int) -> Plan:
    """What :func:`get` costs: a header per block [credits]; nothing from archive files."""
    check_range(start, stop)
    if is_archive(source):
        return Plan([], title=_title(start, stop) + " (era1)")
    return Plan([(METHOD, stop - start)], title=_title(start, stop))


def get(
    source: Any,
    start: int,
    stop: int,
    *,
    budget: int | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Block headers of ``start`` .. ``stop - 1``.

    Parameters
    ----------
    source : RpcSource or Era1Source
        Where the blocks come from.
    start, stop : int
        The blocks, as ``range(start, stop)``.
    budget : int, optional
        Refuse (``BudgetExceeded``) before sending if spending so far plus the plan would
        pass it [credits].
    progress : bool, optional
        A progress bar on long fetches (default: the connection's setting).

    Returns
    -------
    pandas.DataFrame
        See ``feeslab.frames.parse_blocks``.
    """
    if is_archive(source):
        return source.blocks(start, stop, progress=progress)
    check_range(start, stop)
    with source.budgeted(plan(source, start, stop), budget), gc_paused():
        source.check_head(stop)  # the decoded headers die before the collector resumes:
        found = headers(source, range(start, stop), progress=progress)
        return source.tag(parse_blocks([b for b in found if b is not None]))

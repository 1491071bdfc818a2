"""Fee history: base fees, gas used ratios and tip percentiles per block (``eth_feeHistory``).

One call answers up to 1,024 blocks for 80 credits, so months of fee history cost little.
See ``feeslab.frames.parse_fee_history`` for the columns (blob columns included).

References
----------
.. [1] Ethereum execution APIs, ``eth_feeHistory``, https://github.com/ethereum/execution-apis
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from feeslab.datasets._checks import check_range, is_archive
from feeslab.fetch.credits import Plan, PlanLine
from feeslab.fetch.node import quantity
from feeslab.fetch.transport import RpcCall
from feeslab.frames import parse_fee_history

__all__ = ["MAX_BLOCKS", "calls", "get", "plan"]

MAX_BLOCKS = 1024  # blocks per eth_feeHistory call (geth's and Infura's limit)
PERCENTILES = (10, 50, 90)


def calls(start: int, stop: int, percentiles: Sequence[float] = PERCENTILES) -> list[RpcCall]:
    """The calls covering ``start`` .. ``stop - 1``, oldest first, each ending at its newest
    block and reaching back at most :data:`MAX_BLOCKS`."""
    newest = range(stop - 1, start - 1, -MAX_BLOCKS)
    return [
        RpcCall("eth_feeHistory",
                [quantity(min(MAX_BLOCKS, n - start + 1)), quantity(n), list(percentiles)])
        for n in reversed(newest)
    ]


def _title(start: int, stop: int) -> str:
    return f"fee history of blocks {start:,} to {stop - 1:,}"


def plan(source: Any, start: int, stop: int) -> Plan:
    """What :func:`get` costs: a call per 1,024 blocks; nothing from archive files."""
    check_range(start, stop)
    if is_archive(source):
        return Plan([], title=_title(start, stop) + " (era1)")
    return Plan([PlanLine.of("eth_feeHistory", len(calls(start, stop)))], title=_title(start, stop))


def get(
    source: Any,
    start: int,
    stop: int,
    *,
    percentiles: Sequence[float] = PERCENTILES,
    budget: int | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Base fees, gas used ratios and tip percentiles of blocks ``start`` .. ``stop - 1``.

    Parameters
    ----------
    source : RpcSource or Era1Source
        Where the blocks come from (era1 files: the tips computed from bodies and receipts
        as geth does).
    start, stop : int
        The blocks, as ``range(start, stop)``.
    percentiles : sequence of float
        Tip percentiles, rising, each a ``reward_p<q>_wei`` column.
    budget : int, optional
        Refuse (``BudgetExceeded``) before sending if spending so far plus the plan would
        pass it [credits].
    progress : bool, optional
        A progress bar on long reads of files.

    Returns
    -------
    pandas.DataFrame
        See ``feeslab.frames.parse_fee_history``.
    """
    if is_archive(source):
        return source.fee_history(start, stop, percentiles=percentiles, progress=progress)
    check_range(start, stop)
    source.check_budget(plan(source, start, stop), budget)
    source.check_head(stop)
    # one call at a time: an answer of 1,024 blocks is big enough on its own
    answers = [source.results([call], progress=False)[0] for call in calls(start, stop,
                                                                             percentiles)]
    # each answer ends with the base fee of the block after its newest: drop that row
    frames = [parse_fee_history(a, percentiles=percentiles).iloc[:-1] for a in answers]
    frame = pd.concat(frames, ignore_index=True)
    return source.tag(frame[(frame["block_number"] >= start) & (frame["block_number"] < stop)])

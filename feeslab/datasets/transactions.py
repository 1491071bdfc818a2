"""Transactions: every transaction of a range of blocks, with what its receipt says it paid.

Two calls a block, ``eth_getBlockByNumber(n, true)`` (the transactions) and
``eth_getBlockReceipts(n)`` (gas used, effective gas price), 80 credits each. Whole blocks are
large (a mainnet block's transactions and receipts run to hundreds of KB), so the range is
fetched :data:`GROUP` blocks a request, :data:`AHEAD` requests in flight, each answer slimmed to
the fee fields as it arrives and each group turned into rows at once: memory stays flat however
long the range. Each settled group's rows are cached as Parquet, so a rerun, or a run that
stopped part way (a budget, a 402), reads them back and asks only for the rest.
See ``feeslab.frames.parse_transactions`` for the columns.

References
----------
.. [1] Ethereum execution APIs, ``eth_getBlockReceipts``, https://github.com/ethereum/execution-apis
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future

import pandas as pd

from feeslab._progress import ProgressBar
from feeslab.datasets._checks import check_range
from feeslab.datasets.registry import BY_RANGE, START, STOP, Dataset
from feeslab.fetch.credits import Plan, PlanLine
from feeslab.fetch.node import quantity
from feeslab.fetch.transport import RpcCall, RpcResult
from feeslab.frames.transactions import parse_transactions, slim_full_block, slim_receipts
from feeslab.sources.rpc import RpcSource

__all__ = ["AHEAD", "DATASETS", "GROUP", "calls", "get", "plan"]

BLOCK_METHOD = "eth_getBlockByNumber"
RECEIPTS_METHOD = "eth_getBlockReceipts"
GROUP = 16  # blocks a request (32 calls): a few MB of answers at mainnet's sizes
AHEAD = 8  # requests in flight (the transport's connections kept busy)
DATASET = "transactions/v1"  # the cache's name for the groups' rows


def calls(start: int, stop: int) -> list[RpcCall]:
    """Each block's full block and receipts, block by block."""
    return [call for n in range(start, stop)
            for call in (RpcCall(BLOCK_METHOD, [quantity(n), True]),
                         RpcCall(RECEIPTS_METHOD, [quantity(n)]))]  # fmt: skip


def _groups(start: int, stop: int) -> list[tuple[int, int]]:
    """The range cut at multiples of :data:`GROUP` blocks: a whole group is cached under its
    own name, so any later range that holds part of it reads that part back."""
    first = start - start % GROUP
    return [(max(start, a), min(stop, a + GROUP)) for a in range(first, stop, GROUP)]


def _whole(group: tuple[int, int]) -> str:
    """The cache's name for the whole aligned group ``group`` lies in."""
    a = group[0] - group[0] % GROUP
    return f"{a}-{a + GROUP}"


def _title(start: int, stop: int) -> str:
    return f"transactions of blocks {start:,} to {stop - 1:,}"


def plan(source: RpcSource, start: int, stop: int, *, less_cached: bool = True) -> Plan:
    """What :func:`get` costs: a full block and its receipts per block, less the groups
    whose rows the cache holds (unless ``less_cached=False``) [credits]."""
    check_range(start, stop)
    groups = _groups(start, stop)
    kept = _kept(source, groups) if less_cached else [None] * len(groups)
    cached = sum(b - a for (a, b), rows in zip(groups, kept, strict=True) if rows is not None)
    fresh = stop - start - cached
    return Plan([PlanLine.of(BLOCK_METHOD, fresh), PlanLine.of(RECEIPTS_METHOD, fresh)],
                title=_title(start, stop))  # fmt: skip


def _kept(source: RpcSource, groups: list[tuple[int, int]]) -> list[pd.DataFrame | None]:
    """Each group's rows where the cache holds them (its whole aligned group's, or the very
    part a range ending inside it kept), else None."""
    whole: list[pd.DataFrame | None] = source.cached_frames(DATASET, [_whole(g) for g in groups])
    parts = [i for i, ((a, b), rows) in enumerate(zip(groups, whole, strict=True))
             if rows is None and b - a < GROUP]  # fmt: skip
    exact = source.cached_frames(DATASET, [f"{groups[i][0]}-{groups[i][1]}" for i in parts])
    for i, rows in zip(parts, exact, strict=True):
        whole[i] = rows
    for i, ((a, b), rows) in enumerate(zip(groups, whole, strict=True)):
        if rows is not None and b - a < GROUP and len(rows):  # a part: its blocks' rows
            whole[i] = rows[rows["block_number"].between(a, b - 1)].reset_index(drop=True)
    return whole


def _slim(answer: RpcResult) -> RpcResult:
    """An answer reduced to the fee fields as it arrives."""
    if answer.error is not None or answer.result is None:
        return answer
    slim = slim_full_block if answer.call.method == BLOCK_METHOD else slim_receipts
    return RpcResult(answer.call, result=slim(answer.result))


def _rows(source: RpcSource, answers: list[RpcResult]) -> pd.DataFrame:
    blocks, receipts = [], []
    for block, block_receipts in zip(answers[::2], answers[1::2], strict=True):
        found = block.unwrap()
        if found is None:
            raise source.missing(int(block.call.params[0], 16))
        blocks.append(found)
        receipts.append(block_receipts.unwrap() or [])
    return parse_transactions(blocks, receipts)


def get(
    source: RpcSource,
    start: int,
    stop: int,
    *,
    budget: int | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Every transaction of blocks ``start`` .. ``stop - 1``, one row each.

    Parameters
    ----------
    source : RpcSource
        The node.
    start, stop : int
        The blocks, as ``range(start, stop)``.
    budget : int, optional
        Refuse (``BudgetExceeded``) before sending if spending so far plus the plan would
        pass it [credits].
    progress : bool, optional
        A progress bar over the blocks (default: the connection's setting).

    Returns
    -------
    pandas.DataFrame
        See ``feeslab.frames.parse_transactions``; ``attrs`` say its chain.
    """
    check_range(start, stop)
    with source.budgeted(plan(source, start, stop), budget):
        source.prepare()
        source.check_head(stop)
        groups = _groups(start, stop)
        frames = _kept(source, groups)
        todo = [g for g, rows in enumerate(frames) if rows is None]
        bar = _bar(source, groups, todo, progress)
        pending: deque[tuple[int, Future[list[RpcResult]]]] = deque()
        try:
            for g in todo:
                pending.append((g, source.node.submit(calls(*groups[g]), reduce=_slim)))
                if len(pending) >= AHEAD:
                    _land(source, groups, frames, *pending.popleft(), bar)
            while pending:
                _land(source, groups, frames, *pending.popleft(), bar)
        finally:
            for _, future in pending:
                future.cancel()
            if bar is not None:
                bar.close()
    parts = [rows for rows in frames if rows is not None and len(rows)]
    if not parts:
        return source.tag(parse_transactions([], []))
    frame = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    return source.tag(frame)


def _land(source: RpcSource, groups: list[tuple[int, int]], frames: list[pd.DataFrame | None],
          g: int, future: Future[list[RpcResult]],
          bar: ProgressBar | None) -> None:  # fmt: skip
    """Group ``g``'s rows from its answers, kept in the cache at once (what a stopped run
    has paid for stays paid for), under its blocks' names."""
    rows = _rows(source, future.result())
    frames[g] = rows
    a, b = groups[g]
    source.keep_frames(DATASET, [(f"{a}-{b}", rows, b - 1)])
    if bar is not None:
        bar.update(b - a)
        bar.set_postfix(credits=f"{source.credits.spent:,}")


def _bar(source: RpcSource, groups: list[tuple[int, int]], todo: list[int],
         progress: bool | None) -> ProgressBar | None:  # fmt: skip
    """A bar over the blocks when more than a few groups are to be fetched."""
    if not (source.node.progress if progress is None else progress) or len(todo) < 4:
        return None
    from feeslab._progress import progress_bar  # a widget in Jupyter, text on stderr elsewhere

    total = groups[-1][1] - groups[0][0]
    left = sum(groups[g][1] - groups[g][0] for g in todo)
    return progress_bar(total=total, initial=total - left, description="transactions",
                        unit="block")  # fmt: skip


DATASETS = (
    Dataset("transactions", get, plan=plan, cli="transactions", options=(START, STOP),
            summary="every transaction of blocks --start .. --stop - 1, with its receipt's "
                    "gas used and effective gas price", partitions=BY_RANGE, bodies=True),
)

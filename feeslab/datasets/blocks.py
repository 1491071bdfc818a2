"""Block headers: ``eth_getBlockByNumber`` without transactions, one row per block.

See ``feeslab.frames.parse_blocks`` for the columns (blob columns included).

:func:`get` streams: the range is fetched a chunk (``NodeClient.chunk`` blocks) at a time, each
header slimmed to what the frame reads as its batch arrives (``feeslab.frames.slim_block``,
after the answer cache has it whole) and each chunk turned into frame columns at once, so the
decoded JSON of a long range is never held together; the chunks' frames are joined at the end.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from feeslab.datasets._checks import check_range
from feeslab.datasets.registry import BY_RANGE, START, STOP, Dataset
from feeslab.errors import CreditsExhausted
from feeslab.fetch._gc import gc_paused
from feeslab.fetch.credits import Plan
from feeslab.fetch.node import DEFAULT_CHUNK, quantity
from feeslab.fetch.transport import RpcCall, RpcResult
from feeslab.frames import parse_blocks, slim_block
from feeslab.sources.rpc import RpcSource

if TYPE_CHECKING:
    from feeslab._progress import ProgressBar

__all__ = ["DATASETS", "calls", "get", "headers", "plan"]

METHOD = "eth_getBlockByNumber"


def calls(numbers: Sequence[int]) -> list[RpcCall]:
    """The calls for the headers of ``numbers``, in order."""
    return [RpcCall(METHOD, [quantity(n), False]) for n in numbers]


def headers(source: RpcSource, numbers: Sequence[int], **options: object) -> list[Any]:
    """The decoded headers of ``numbers`` from a node, in order (None where it has none).

    ``options`` go to ``NodeClient.run`` (``progress``, ``on_chunk``).
    """
    found: list[Any] = source.results(calls(numbers), description="blocks", **options)
    return found


def _title(start: int, stop: int) -> str:
    return f"blocks {start:,} to {stop - 1:,}"


def plan(source: RpcSource, start: int, stop: int) -> Plan:
    """What :func:`get` costs: a header per block [credits]."""
    check_range(start, stop)
    return Plan([(METHOD, stop - start)], title=_title(start, stop))


def get(
    source: RpcSource,
    start: int,
    stop: int,
    *,
    budget: int | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Block headers of ``start`` .. ``stop - 1``.

    Parameters
    ----------
    source : RpcSource
        The node (``lab.blocks`` reads era1 files too: ``feeslab.datasets.registry``).
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
    check_range(start, stop)
    with source.budgeted(plan(source, start, stop), budget), gc_paused():
        source.check_head(stop)  # the decoded headers die before the collector resumes
        parts = [f for f in _frames(source, start, stop, progress) if len(f)]
        if not parts:
            return source.tag(parse_blocks([]))
        frame = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
        return source.tag(frame)


def _slim(answer: RpcResult) -> RpcResult:
    """A header's answer reduced to what the frame reads, as it arrives."""
    if answer.error is not None or answer.result is None:
        return answer
    return RpcResult(answer.call, result=slim_block(answer.result))


def _frames(source: RpcSource, start: int, stop: int,
            progress: bool | None) -> Iterator[pd.DataFrame]:  # fmt: skip
    """The frame of each chunk of ``start`` .. ``stop - 1`` in order (blocks the node does not
    have left out), each made as soon as its headers are there."""
    node = source.node
    bar = _bar(source, start, stop, progress)
    try:
        for a in range(start, stop, node.chunk):
            b = min(stop, a + node.chunk)
            before = node.ledger.cached
            try:
                answers = node.run(calls(range(a, b)), progress=False, reduce=_slim)
            except CreditsExhausted as exc:  # the chunks before this one were answered too
                exc.answers_kept = a - start + getattr(exc, "answers_kept", 0)
                raise
            found = [answer.unwrap() for answer in answers]
            del answers
            yield parse_blocks([header for header in found if header is not None])
            if bar is not None:  # counted from the cached ones, as its initial
                bar.update(b - a - (node.ledger.cached - before))
                bar.set_postfix(credits=f"{source.credits.spent:,}")
    finally:
        if bar is not None:
            bar.close()


def _bar(source: RpcSource, start: int, stop: int,
         progress: bool | None) -> ProgressBar | None:  # fmt: skip
    """A bar over the range's calls when at least half a chunk of them is to be sent."""
    node = source.node
    if not (node.progress if progress is None else progress) or stop - start < DEFAULT_CHUNK // 2:
        return None
    cached = 0
    if node.caching and node.cache is not None:
        cached = node.cache.count_cached((c.method, c.params)
                                         for c in calls(range(start, stop))).get(METHOD, 0)
    if stop - start - cached < DEFAULT_CHUNK // 2:
        return None
    from feeslab._progress import progress_bar  # a widget in Jupyter, text on stderr elsewhere

    return progress_bar(total=stop - start, initial=cached, description="blocks", unit="call")


DATASETS = (
    Dataset("blocks", get, plan=plan, summary="block headers of --start .. --stop - 1",
            cli="blocks", options=(START, STOP), partitions=BY_RANGE, bodies=True),
)

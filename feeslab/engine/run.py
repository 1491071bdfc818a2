"""The in-process executor: plan -> chunks -> extract -> transform -> sink, for any dataset
declared as :class:`~feeslab.engine.chunks.Chunked`.

:func:`run` is every chunked dataset's fetch. In order:

1. **plan** (:func:`plan`): the calls of the chunks the cache does not hold, priced; refused
   (``BudgetExceeded``) before anything is sent when spending so far plus the plan would pass
   ``budget``, and every request charged against the budget as it goes.
2. **chunks**: the range cut at multiples of the dataset's chunk size; settled chunks whose
   rows the cache holds are read back, not asked.
3. **extract**: the chunks' calls on the source's node client, ``ahead`` chunks in flight;
   a staged extract (a generator) is sent each stage's answers as soon as they land, whatever
   the chunk's place, so that later chunks' second stages do not wait behind the first's.
4. **transform**: each chunk's answers into rows as soon as the chunk is complete.
5. **sink**: settled chunks' rows written to the cache on one writing thread
   (:class:`_Keeper`: the fetch never waits for Parquet or a disk), so a rerun, or a run that
   was stopped or killed, reads them back and asks only for the chunks that were in flight;
   the chunks joined in block order into the returned frame, tagged with the source's chain.

A progress bar over the blocks shows when more than a few blocks are to be fetched.
"""

from __future__ import annotations

import contextlib
from collections import Counter, deque
from collections.abc import Generator, Iterator, Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from feeslab.engine.chunks import Chunked, MissingBlock, Params
from feeslab.fetch._gc import gc_paused
from feeslab.fetch.core import LAND_WITHIN
from feeslab.fetch.credits import Plan
from feeslab.fetch.transport import RpcCall, RpcResult

if TYPE_CHECKING:
    from feeslab._progress import ProgressBar
    from feeslab.sources.rpc import RpcSource

__all__ = ["check_range", "plan", "run"]


def check_range(start: int, stop: int) -> None:
    """``start`` .. ``stop - 1`` must be a non-empty range of block numbers, as ``range()``."""
    # checked at run time too: a notebook passes whatever it has (a float, a bool, a numpy int)
    for name, value in (("start", start), ("stop", stop)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be a non-negative block number, not {value!r}")
    if stop <= start:
        raise ValueError(f"stop ({stop}) must be greater than start ({start}), as in range()")


def _title(spec: Chunked, start: int, stop: int) -> str:
    return f"{spec.name} of blocks {start:,} to {stop - 1:,}"


def _whole(spec: Chunked, chunk: tuple[int, int]) -> str:
    """The cache's name for the whole aligned chunk ``chunk`` lies in."""
    a = chunk[0] - chunk[0] % spec.size
    return f"{a}-{a + spec.size}"


def _key(chunk: tuple[int, int]) -> str:
    return f"{chunk[0]}-{chunk[1]}"


def _kept(spec: Chunked, source: RpcSource,
          chunks: Sequence[tuple[int, int]]) -> list[pd.DataFrame | None]:  # fmt: skip
    """Each chunk's rows where the cache holds them (its whole aligned chunk's, or the very
    part a range ending inside it kept), else None."""
    if spec.store is None:
        return [None] * len(chunks)
    found = source.cached_frames(spec.store, [_whole(spec, c) for c in chunks])
    parts = [i for i, ((a, b), rows) in enumerate(zip(chunks, found, strict=True))
             if rows is None and b - a < spec.size]  # fmt: skip
    exact = source.cached_frames(spec.store, [_key(chunks[i]) for i in parts])
    for i, rows in zip(parts, exact, strict=True):
        found[i] = rows
    for i, ((a, b), rows) in enumerate(zip(chunks, found, strict=True)):
        if rows is not None and b - a < spec.size and len(rows):  # a part: its blocks' rows
            found[i] = rows[rows["block_number"].between(a, b - 1)].reset_index(drop=True)
    return found


def _first_calls(spec: Chunked, start: int, stop: int, params: Params) -> Sequence[RpcCall]:
    """The calls a chunk's extract sends first (all of them, for a one-stage extract)."""
    extracted = spec.extract(start, stop, params)
    if isinstance(extracted, Generator):
        try:
            return next(extracted)
        except StopIteration:
            return []
        finally:
            extracted.close()
    return extracted


def plan(spec: Chunked, source: RpcSource, start: int, stop: int, params: Params, *,
         less_cached: bool = True) -> Plan:  # fmt: skip
    """What :func:`run` costs [credits]: the calls of every chunk the cache does not hold
    (for a staged extract, its first stage's: a dataset whose later stages cost more gives its
    own plan), less the answers the answer cache holds (``cached_answers``).

    ``less_cached=False``: the cost from scratch, the same on every run."""
    check_range(start, stop)
    chunks = spec.chunks(start, stop)
    kept = _kept(spec, source, chunks) if less_cached else [None] * len(chunks)
    calls = [call for chunk, rows in zip(chunks, kept, strict=True) if rows is None
             for call in _first_calls(spec, *chunk, params)]  # fmt: skip
    title = _title(spec, start, stop)
    if spec.cached_answers:
        return source.plan(calls, title, less_cached=less_cached)
    return Plan(list(Counter(call.method for call in calls).items()), title=title)


def run(spec: Chunked, source: RpcSource, start: int, stop: int, params: Params, *,
        budget: int | None = None, progress: bool | None = None) -> pd.DataFrame:  # fmt: skip
    """The rows of blocks ``start`` .. ``stop - 1`` (see the module for the steps).

    Parameters
    ----------
    spec : Chunked
        The dataset's declaration.
    source : RpcSource
        The node.
    start, stop : int
        The blocks, as ``range(start, stop)``.
    params : mapping
        The dataset's other parameters, handed to its extract and transform.
    budget : int, optional
        Refuse (``BudgetExceeded``) before sending if spending so far plus the plan would
        pass it [credits]; every request is charged against it as it goes.
    progress : bool, optional
        A progress bar over the blocks (default: the connection's setting).

    Returns
    -------
    pandas.DataFrame
        The chunks' rows in block order, ``attrs`` naming the source's chain.
    """
    check_range(start, stop)
    with source.budgeted(plan(spec, source, start, stop, params), budget), gc_paused():
        source.prepare()
        source.check_head(stop)
        chunks = spec.chunks(start, stop)
        frames = _kept(spec, source, chunks)
        todo = [i for i, rows in enumerate(frames) if rows is None]
        bar = _bar(spec, source, chunks, todo, progress)
        keeper = _Keeper(source, spec.store if todo else None)
        try:
            for i, rows in _stream(spec, source, [chunks[i] for i in todo], params):
                frames[todo[i]] = rows
                keeper.keep(chunks[todo[i]], rows)
                if bar is not None:
                    bar.update(chunks[todo[i]][1] - chunks[todo[i]][0])
                    bar.set_postfix(credits=f"{source.credits.spent:,}")
        finally:
            keeper.close()
            if bar is not None:
                bar.close()
    parts = [rows for rows in frames if rows is not None and len(rows)]
    if not parts:
        return source.tag(spec.empty(params))
    frame = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    return source.tag(frame)


@dataclass
class _InFlight:
    """One chunk on its way: its extract (a generator, or None for one stage) and the
    future of its current stage's answers; ``raw`` once it is complete."""

    index: int
    chunk: tuple[int, int]
    stages: Generator[Sequence[RpcCall], list[RpcResult], Any] | None
    future: Future[list[RpcResult]] | None
    raw: Any = None
    done: bool = False


def _stream(spec: Chunked, source: RpcSource, chunks: Sequence[tuple[int, int]],
            params: Params) -> Iterator[tuple[int, pd.DataFrame]]:  # fmt: skip
    """``(i, rows)`` of each of ``chunks`` in order, ``spec.ahead`` chunks in flight."""
    node, queued = source.node, iter(enumerate(chunks))
    flight: deque[_InFlight] = deque()

    def send(calls: Sequence[RpcCall]) -> Future[list[RpcResult]] | None:
        if not calls:
            return None
        return node.submit(calls, reduce=spec.reduce, cached=spec.cached_answers)

    def advance(item: _InFlight, answers: list[RpcResult]) -> None:
        """Hand a stage's answers on: the next stage sent, or the chunk complete."""
        if item.stages is None:
            item.raw, item.done, item.future = answers, True, None
            return
        try:
            item.future = send(item.stages.send(answers))
        except StopIteration as end:
            item.raw, item.done, item.future = end.value, True, None
            return
        if item.future is None:  # a stage with no calls: its answers are none
            advance(item, [])

    def begin() -> None:
        while len([f for f in flight if not f.done]) < spec.ahead:
            found = next(queued, None)
            if found is None:
                return
            i, chunk = found
            extracted = spec.extract(*chunk, params)
            if isinstance(extracted, Generator):
                item = _InFlight(i, chunk, extracted, None)
                try:
                    item.future = send(next(extracted))
                except StopIteration as end:
                    item.raw, item.done = end.value, True
                else:
                    if item.future is None:
                        advance(item, [])
            else:
                item = _InFlight(i, chunk, None, send(extracted))
                if item.future is None:
                    item.raw, item.done = [], True
            flight.append(item)

    try:
        begin()
        while flight:
            waiting = {f.future: f for f in flight if not f.done and f.future is not None}
            if not flight[0].done:
                landed, _ = futures.wait(waiting, return_when=futures.FIRST_COMPLETED)
                for future in landed:
                    advance(waiting[future], future.result())
            while flight and flight[0].done:
                item = flight.popleft()
                try:
                    rows = spec.transform(item.raw, *item.chunk, params)
                except MissingBlock as missing:
                    raise source.missing(missing.number) from None
                item.raw = None
                yield item.index, rows
            begin()
    except BaseException:
        pending = [f.future for f in flight if f.future is not None]
        for future in pending:
            future.cancel()
        for item in flight:
            if item.stages is not None:
                item.stages.close()
        # requests already sent are paid for: let them land (and be cached) before raising
        futures.wait([f for f in pending if not f.cancelled()], timeout=LAND_WITHIN)
        raise


class _Keeper:
    """Settled chunks' rows written to the cache as Parquet on one writing thread, each chunk
    as soon as it is complete: a run stopped, or killed, part way has paid for what it kept,
    and the fetch never waits for the disk. Nothing without a cache or a store name."""

    def __init__(self, source: RpcSource, store: str | None) -> None:
        self.source, self.store = source, store
        caching = store is not None and source.node.caching
        self.writer = ThreadPoolExecutor(1, "feeslab-keep") if caching else None

    def keep(self, chunk: tuple[int, int], rows: pd.DataFrame) -> None:
        if self.writer is not None and self.store is not None:
            with contextlib.suppress(RuntimeError):  # shut: the fetch has ended
                self.writer.submit(self.source.keep_frames, self.store,
                                   [(_key(chunk), rows, chunk[1] - 1)])  # fmt: skip

    def close(self) -> None:
        if self.writer is not None:
            self.writer.shutdown(wait=True)


def _bar(spec: Chunked, source: RpcSource, chunks: Sequence[tuple[int, int]],
         todo: Sequence[int], progress: bool | None) -> ProgressBar | None:  # fmt: skip
    """A bar over the blocks when at least ``spec.bar_from`` blocks are to be fetched."""
    total = chunks[-1][1] - chunks[0][0]
    left = sum(chunks[i][1] - chunks[i][0] for i in todo)
    if not (source.node.progress if progress is None else progress) or left < spec.bar_from:
        return None
    from feeslab._progress import progress_bar  # a widget in Jupyter, text on stderr elsewhere

    return progress_bar(total=total, initial=total - left, description=spec.name,
                        unit=spec.unit)  # fmt: skip

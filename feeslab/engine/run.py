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
   (:class:`feeslab.engine.keep.Keeper`: the fetch never waits for Parquet or a disk), a run
   of chunks to a file, so a rerun, or a run that was stopped or killed, reads them back and
   asks only for the chunks that were in flight (of a staged extract, only the batches in
   flight: ``Chunked.notes``); the chunks joined in block order into the returned frame,
   tagged with the source's chain.

A progress bar over the blocks shows when more than a few blocks are to be fetched.
"""

from __future__ import annotations

import gc
import itertools
from collections import Counter, deque
from collections.abc import Generator, Iterator, Mapping, Sequence
from concurrent import futures
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from feeslab.engine import keep
from feeslab.engine.chunks import Chunk, Chunked, MissingBlock, Params
from feeslab.fetch._gc import gc_paused
from feeslab.fetch.core import LAND_WITHIN
from feeslab.fetch.credits import Plan
from feeslab.fetch.transport import RpcCall, RpcResult

if TYPE_CHECKING:
    from feeslab._progress import ProgressBar
    from feeslab.sources.rpc import RpcSource

__all__ = ["Layout", "check_range", "layout", "plan", "run"]

SWEEP = 4  # chunks between sweeps of the young generations (the collector is paused)


def check_range(start: int, stop: int) -> None:
    """``start`` .. ``stop - 1`` must be a non-empty range of block numbers, as ``range()``."""
    # checked at run time too: a notebook passes whatever it has (a float, a bool, a numpy int)
    for name, value in (("start", start), ("stop", stop)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be a non-negative block number, not {value!r}")
    if stop <= start:
        raise ValueError(f"stop ({stop}) must be greater than start ({start}), as in range()")


def _title(spec: Chunked, start: int, stop: int) -> str:
    return f"{spec.name.replace('_', ' ')} of blocks {start:,} to {stop - 1:,}"


@dataclass(frozen=True)
class Layout:
    """A fetch's chunks: those the cache holds, with their rows, and those left to fetch."""

    cached: Mapping[tuple[int, int], pd.DataFrame]
    todo: list[tuple[int, int]]

    @property
    def chunks(self) -> list[tuple[int, int]]:
        """Every chunk, in block order."""
        return sorted([*self.cached, *self.todo])


def layout(spec: Chunked, source: RpcSource, start: int, stop: int, *,
           less_cached: bool = True, params: Params | None = None) -> Layout:  # fmt: skip
    """Blocks ``start`` .. ``stop - 1`` cut at the multiples of ``spec.size``, and also, with a
    cache, where kept runs end (of a chunk they hold in part only the rest is fetched) and,
    with ``cut_at_settled``, where settled blocks end (the settled part kept too); the chunks
    a kept run holds are read back (none looked up unless ``less_cached``)."""
    check_range(start, stop)
    spec = spec.bound(params or {})
    if spec.from_stop:
        cuts = {start, *range(stop - spec.size, start, -spec.size), stop}
    else:
        cuts = {start, *range((start // spec.size + 1) * spec.size, stop, spec.size), stop}
    runs = keep.kept_runs(spec, source, start, stop) if less_cached else {}
    cuts.update(edge for run in runs for edge in run if start < edge < stop)
    caching = source.node.caching and spec.store is not None
    settled = source.node.settled_below() if caching and (runs or spec.cut_at_settled) else 0
    if spec.cut_at_settled and start < settled < stop:
        cuts.add(settled)
    chunks = list(itertools.pairwise(sorted(cuts)))
    found = keep.cached(spec, source, chunks, runs, settled=settled, params=params or {})
    return Layout(found, [c for c in chunks if c not in found])


def _first_calls(spec: Chunked, chunk: Chunk, params: Params) -> Sequence[RpcCall]:
    """The calls a chunk's extract sends first (all of them, for a one-stage extract)."""
    extracted = spec.extract(chunk, params)
    if isinstance(extracted, Generator):
        try:
            return next(extracted)
        except StopIteration:
            return []
        finally:
            extracted.close()
    return extracted


def plan(spec: Chunked, source: RpcSource, start: int, stop: int, params: Params, *,
         less_cached: bool = True, laid: Layout | None = None,
         sending: bool = True) -> Plan:  # fmt: skip
    """What :func:`run` costs [credits]: the calls of every chunk the cache does not hold
    (for a staged extract, its first stage's: a dataset whose later stages cost more gives its
    own plan), less the answers the answer cache holds (``cached_answers``).

    ``less_cached=False``: the cost from scratch, the same on every run. ``sending=False``:
    nothing is sent, so the cache is left out until it is open (its chain's identity, one
    request, not yet learnt): the most the fetch can cost."""
    check_range(start, stop)
    spec = spec.bound(params)
    less_cached = less_cached and (sending or source.node.cache_open)
    laid = laid or layout(spec, source, start, stop, less_cached=less_cached, params=params)
    calls = [call for a, b in laid.todo for call in _first_calls(spec, Chunk(a, b), params)]
    title = _title(spec, start, stop)
    if spec.cached_answers:
        return source.plan(calls, title, less_cached=less_cached)
    return Plan(list(Counter(call.method for call in calls).items()), title=title)


def run(spec: Chunked, source: RpcSource, start: int, stop: int, params: Params, *,
        budget: int | None = None, progress: bool | None = None,
        laid: Layout | None = None) -> pd.DataFrame:  # fmt: skip
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
    laid : Layout, optional
        The chunks as :func:`layout` laid them already (a dataset that planned with them).

    Returns
    -------
    pandas.DataFrame
        The chunks' rows in block order, ``attrs`` naming the source's chain.
    """
    check_range(start, stop)
    spec = spec.bound(params)
    # a budget is checked before anything is sent: against what the open cache leaves, or else
    # against the most the fetch can cost
    planned = None if laid is not None or budget is None else plan(
        spec, source, start, stop, params, sending=False)
    with source.budgeted(planned, budget), gc_paused():
        source.prepare()
        source.check_head(stop)
        laid = laid or layout(spec, source, start, stop, params=params)
        frames = dict(laid.cached)
        known = keep.noted(spec, source, start, stop) if laid.todo else {}
        bar = _bar(spec, source, laid, progress)
        keeper = keep.Keeper(spec, source, laid.todo, bar)
        try:
            for chunk, rows, complete in _stream(spec, source, laid.todo, params, known, keeper):
                frames[chunk] = rows
                keeper.finished(chunk, rows, complete)
                if bar is not None:
                    bar.set_postfix(credits=f"{source.credits.spent:,}")
        except BaseException:
            keeper.stop_early()
            raise
        finally:
            keeper.close()
            if bar is not None:
                bar.close()
    parts = [frames[c] for c in sorted(frames) if len(frames[c])]
    if not parts:
        return source.tag(spec.empty(params))
    frame = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    return source.tag(frame)


@dataclass
class _InFlight:
    """One chunk on its way: its extract (a generator, or None for one stage), the future of
    its current stage's answers and how many stages were sent; ``raw`` once complete."""

    chunk: Chunk
    stages: Generator[Sequence[RpcCall], list[RpcResult], Any] | None
    future: Future[list[RpcResult]] | None = None
    sent: int = 0
    raw: Any = None
    done: bool = False


def _stream(spec: Chunked, source: RpcSource, chunks: Sequence[tuple[int, int]],
            params: Params, known: Mapping[int, int], keeper: keep.Keeper,
            ) -> Iterator[tuple[tuple[int, int], pd.DataFrame, bool]]:  # fmt: skip
    """``(chunk, rows, complete)`` of each of ``chunks`` in order: ``spec.ahead`` chunks in
    their first stage at once, each later stage sent as soon as the one before lands."""
    node, queued, swept = source.node, iter(chunks), 0
    flight: deque[_InFlight] = deque()
    watch = keeper.on_batch if keeper.watches_batches else None

    def send(item: _InFlight, calls: Sequence[RpcCall]) -> None:
        first = item.sent == 0
        item.sent += 1
        if not calls:
            item.future = None
            return
        if first:
            keeper.asking((item.chunk.start, item.chunk.stop))
        item.future = node.submit(calls, reduce=spec.reduce, cached=spec.cached_answers,
                                  on_batch=watch if first else None)  # fmt: skip

    def advance(item: _InFlight, answers: list[RpcResult]) -> None:
        """Hand a stage's answers on, until a stage with calls is sent or the chunk ends."""
        while True:
            if item.stages is None:
                item.raw, item.done, item.future = answers, True, None
                return
            try:
                send(item, item.stages.send(answers) if item.sent else next(item.stages))
            except StopIteration as end:
                item.raw, item.done, item.future = end.value, True, None
                return
            if item.future is not None:
                return
            answers = []  # a stage with no calls: its answers are none

    def begin() -> None:
        # ahead chunks in their first stage; later stages and completed chunks waiting for
        # the oldest to complete are bounded too
        while sum(1 for f in flight if f.sent <= 1 and not f.done) < spec.ahead \
                and len(flight) < 4 * spec.ahead:  # fmt: skip
            found = next(queued, None)
            if found is None:
                return
            a, b = found
            chunk = Chunk(a, b, {n: v for n, v in known.items() if a <= n < b} if known else {})
            extracted = spec.extract(chunk, params)
            if isinstance(extracted, Generator):
                item = _InFlight(chunk, extracted)
                advance(item, [])
            else:
                item = _InFlight(chunk, None)
                send(item, extracted)
                if item.future is None:
                    item.raw, item.done = [], True
            flight.append(item)

    try:
        begin()
        while flight:
            if not flight[0].done:
                waiting = {f.future: f for f in flight if f.future is not None}
                landed, _ = futures.wait(waiting, return_when=futures.FIRST_COMPLETED)
                for future in landed:
                    advance(waiting[future], future.result())
            while flight and flight[0].done:
                item = flight.popleft()
                rows = spec.transform(item.raw, item.chunk, params)
                complete = spec.complete is None or spec.complete(item.raw)
                item.raw = None
                yield (item.chunk.start, item.chunk.stop), rows, complete
                swept += 1  # the collector is paused: the HTTP machinery's few cyclic
                if swept % SWEEP == 0:  # leftovers would pile up, so sweep the young ones
                    gc.collect(1)
            begin()
    except MissingBlock as missing:
        _cancel(flight)
        raise source.missing(missing.number) from None
    except BaseException:
        _cancel(flight)
        raise


def _cancel(flight: Sequence[_InFlight]) -> None:
    """Cancel what has not been sent; let what was sent land (and be noted) before raising."""
    pending = [f.future for f in flight if f.future is not None]
    for future in pending:
        future.cancel()
    for item in flight:
        if item.stages is not None:
            item.stages.close()
    futures.wait([f for f in pending if not f.cancelled()], timeout=LAND_WITHIN)


def _bar(spec: Chunked, source: RpcSource, laid: Layout,
         progress: bool | None) -> ProgressBar | None:  # fmt: skip
    """A bar over the blocks when at least ``spec.bar_from`` blocks are to be fetched."""
    chunks = laid.chunks
    total = chunks[-1][1] - chunks[0][0]
    left = sum(b - a for a, b in laid.todo)
    if not (source.node.progress if progress is None else progress) or left < spec.bar_from:
        return None
    from feeslab._progress import progress_bar  # a widget in Jupyter, text on stderr elsewhere

    return progress_bar(total=total, initial=total - left, description=spec.name,
                        unit=spec.unit)  # fmt: skip

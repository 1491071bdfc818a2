"""Uncles: every uncle included by a range of blocks, and each block's uncle count.

Uncle counts first (``eth_getUncleCountByBlockNumber``: which blocks have uncles and how
many; the same 80 credits as a header, whose ``uncles`` list says as much, in about a
thirtieth of the bytes), then ``eth_getUncleByBlockNumberAndIndex`` only for uncles that
exist: about 80 x blocks + 150 x uncles credits, instead of 300 x blocks for probing both
indexes everywhere. The plan estimates the uncles from a sample of counts, which the scan
reuses.

The scan streams: the range is cut into pieces of :data:`PIECE` blocks (at multiples of it),
a few pieces' counts are in flight while the one before is read, and each piece's uncles are
asked for while later pieces' counts are still coming. Memory stays flat however long the
range. The settled pieces' uncles frames are cached as Parquet, a run of consecutive pieces to
a file, so a rerun reads frames back without decoding an answer.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import itertools
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from feeslab._costs import method_cost
from feeslab.datasets._checks import check_range
from feeslab.datasets.registry import BY_RANGE, START, STOP, Dataset, Option, PartsPlan
from feeslab.errors import ProtocolError
from feeslab.fetch._gc import gc_paused
from feeslab.fetch.core import LAND_WITHIN
from feeslab.fetch.credits import Budget, Plan, PlanLine
from feeslab.fetch.node import quantity
from feeslab.fetch.transport import RpcCall, RpcResult
from feeslab.frames import UNCLE_DTYPES, parse_uncles, uncle_scan_frame
from feeslab.sources.rpc import RpcSource

__all__ = ["DATASETS", "PIECE", "SAMPLE", "UncleScan", "calls", "count_calls", "get", "plan",
           "plan_and_sample", "plan_parts"]

SAMPLE = 200  # uncle counts read to estimate a scan's uncles (the scan reuses them)
METHOD = "eth_getUncleByBlockNumberAndIndex"
COUNT_METHOD = "eth_getUncleCountByBlockNumber"
# blocks a piece: the unit streamed and cached; aligned, so that scans of other ranges share
# the inner pieces
PIECE = 4_000  # a multiple of connect()'s batches (1,000 counts): a piece sends only full ones
AHEAD = 3  # pieces whose counts are in flight while the one before is read (ints: cheap)
NOTE_AFTER = 1.0  # [s] a piece in flight this long has its batches' counts noted (_Notes),
# and a finished piece held this long is cached with those held with it (_Runs)
RUN = 25  # finished pieces at most in one cached file (a run: 100,000 blocks)
SWEEP = 4  # pieces between sweeps of the young generations (the collector is paused)
DATASET = "uncles/v1"  # the cache's name for the pieces' frames
NOTES = "uncle_counts/v1"  # and for the count batches of unfinished pieces


@dataclass(frozen=True, repr=False)
class UncleScan:
    """The result of an uncle scan (:func:`get`, ``Lab.uncles``).

    Attributes
    ----------
    uncles : pandas.DataFrame
        One row per uncle (see ``feeslab.frames.parse_uncles``).
    blocks : pandas.DataFrame
        One row per scanned block with its ``uncle_count``, zeros included, so that rates
        count blocks without uncles (see ``feeslab.frames.uncle_scan_frame``).
    plan : Plan
        The credits the scan was planned to cost before it ran.
    report : JobReport or None
        What a cluster job did (``feeslab.cluster.JobReport``); None in one process.
    """

    uncles: pd.DataFrame
    blocks: pd.DataFrame
    plan: Plan
    report: Any = None

    def _summary(self) -> tuple[str, str]:
        if self.blocks.empty:
            return "no blocks", ""
        first, last = self.blocks["block_number"].iloc[[0, -1]]
        rate = len(self.uncles) / len(self.blocks)
        return (f"blocks {first:,} to {last:,}",
                f"{len(self.uncles):,} uncles in {len(self.blocks):,} blocks "
                f"({rate:.4f} a block), planned {self.plan.total:,} credits")

    def __repr__(self) -> str:
        span, counts = self._summary()
        return f"<UncleScan of {span}: {counts}>" if counts else f"<UncleScan of {span}>"

    def _repr_html_(self) -> str:
        import html

        span, counts = self._summary()
        table = self.uncles.head(5).to_html(index=False)
        return (f"<p><b>UncleScan</b> of {html.escape(span)}: {html.escape(counts)}</p>"
                f"{table}<p>first 5 uncles of {len(self.uncles):,}; "
                "<code>.uncles</code>, <code>.blocks</code>, <code>.plan</code></p>")


def calls(wanted: Sequence[tuple[int, int]]) -> list[RpcCall]:
    """The calls for the uncles at (block number, index) pairs, in order."""
    return [RpcCall(METHOD, [quantity(n), quantity(i)]) for n, i in wanted]


def count_calls(numbers: Sequence[int]) -> list[RpcCall]:
    """The calls for the uncle counts of blocks ``numbers``, in order."""
    return [RpcCall(COUNT_METHOD, [quantity(n)]) for n in numbers]


def _title(start: int, stop: int) -> str:
    return f"uncle scan of blocks {start:,} to {stop - 1:,}"


def _pieces(source: RpcSource, start: int, stop: int, runs: Iterable[tuple[int, int]] = ()
            ) -> list[tuple[int, int]]:
    """``start`` .. ``stop - 1`` cut at the multiples of :data:`PIECE`; with a cache, also
    where settled blocks end, so that the settled part of the last piece is cached too, and
    where the cached ``runs`` end, so that of a piece they hold in part only the rest is
    fetched (a scan from block 100,007 cached, one from 100,000 asks for 7 blocks, not 4,000)."""
    cuts = {start, *range((start // PIECE + 1) * PIECE, stop, PIECE), stop}
    if source.node.caching:
        settled = source.node.settled_below()
        if start < settled < stop:
            cuts.add(settled)
        cuts.update(edge for run in runs for edge in run if start < edge < stop)
    return list(itertools.pairwise(sorted(cuts)))


def _run_of(key: str) -> tuple[int, int] | None:
    """The blocks ``start`` .. ``stop - 1`` a cached file's key ``"start-stop"`` names."""
    first, _, stop = key.partition("-")
    if not (first.isdigit() and stop.isdigit()) or int(first) >= int(stop):
        return None
    return int(first), int(stop)


def _covering(runs: list[tuple[int, int]], wanted: list[tuple[int, int]]
              ) -> dict[tuple[int, int], tuple[int, int]]:
    """For each piece of ``wanted`` (ascending) that one of ``runs`` holds whole, the longest
    reaching such run: one sweep, as both ascend."""
    runs = sorted(runs)
    out, reach, i = {}, None, 0
    for a, b in wanted:
        while i < len(runs) and runs[i][0] <= a:
            if reach is None or runs[i][1] > reach[1]:
                reach = runs[i]
            i += 1
        if reach is not None and reach[1] >= b:
            out[(a, b)] = reach
    return out


def _inside(frame: pd.DataFrame, run: tuple[int, int], piece: tuple[int, int]) -> pd.DataFrame:
    """The rows of ``run``'s uncles frame about ``piece``'s blocks."""
    if run == piece:
        return frame
    numbers = frame["block_number"].to_numpy()
    return frame[(numbers >= piece[0]) & (numbers < piece[1])].reset_index(drop=True)


def _kept_runs(source: RpcSource, start: int, stop: int) -> dict[tuple[int, int], str]:
    """The cached runs of pieces (:class:`_Runs`, any scan's) that may hold blocks of
    ``start`` .. ``stop - 1``, with their keys: those ending in the range or up to :data:`RUN`
    pieces past it (a longer run, none of this version's, is only not reused)."""
    cache = source.node.cache if source.node.caching else None
    if cache is None:
        return {}
    keys = cache.chunk_keys(DATASET, start, stop + RUN * PIECE)
    return {run: key for key in keys if (run := _run_of(key)) is not None and run[0] < stop}


def _cached(source: RpcSource, pieces: list[tuple[int, int]], runs: Mapping[tuple[int, int], str]
            ) -> dict[tuple[int, int], pd.DataFrame]:
    """The settled pieces whose uncles frame the cache holds: inside one of the ``runs``
    (:func:`_kept_runs`), each file needed read once."""
    settled = source.node.settled_below() if source.node.caching else 0
    wanted = [(a, b) for a, b in pieces if b <= settled]
    if not wanted or not runs:
        return {}
    use = _covering(list(runs), wanted)
    needed = sorted(set(use.values()))
    frames = dict(zip(needed, source.cached_frames(DATASET, [runs[r] for r in needed]),
                      strict=True))
    return {piece: _inside(found, run, piece) for piece, run in use.items()
            if (found := frames[run]) is not None and list(found.columns) == [*UNCLE_DTYPES]}


def _sample(todo: list[tuple[int, int]], sample: int) -> list[int]:
    """``sample`` block numbers spread over the pieces left to fetch."""
    count = sum(b - a for a, b in todo)
    if not count:
        return []
    blocks_left = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in todo])
    return [int(n) for n in blocks_left[:: max(1, count // sample)]]


def _plan_of(start: int, stop: int, todo: list[tuple[int, int]], sampled: dict[int, int],
             cached: dict[tuple[int, int], pd.DataFrame]) -> Plan:
    """The scan's plan: the pieces left to fetch estimated from ``sampled`` uncle counts, and
    the cached pieces' calls taken off."""
    count = stop - start
    left = sum(b - a for a, b in todo)
    per_block = sum(sampled.values()) / max(1, len(sampled))
    known = sum(len(f) for f in cached.values())
    lines = [PlanLine.of(COUNT_METHOD, count),
             PlanLine.of(METHOD, known + round(per_block * left),
                         estimated=left > len(sampled))]
    return Plan(lines, title=_title(start, stop)).minus_cached(
        {COUNT_METHOD: count - left, METHOD: known})


def _count_of(result: Any) -> Any:
    """An uncle count's answer as an int; anything but a hex quantity (a null, a malformed
    answer) as it is, for :func:`_checked` to raise."""
    if type(result) is str and result[:2] == "0x":
        with contextlib.suppress(ValueError):
            return int(result, 16)
    return result


def _uncle_count(answer: RpcResult) -> RpcResult:
    """A count's answer decoded as it arrives (an error answer stays as it is)."""
    if answer.error is not None:
        return answer
    return RpcResult(answer.call, result=_count_of(answer.result))


def _checked(source: RpcSource, number: int, count: Any) -> int:
    """``count`` (as ``_uncle_count`` left it) if an int; else the error it stands for."""
    if type(count) is int:
        return count
    if count is None:
        raise source.missing(number)
    raise ProtocolError(f"{COUNT_METHOD} for block {number:,} answered {str(count)[:40]!r}, "
                        "not a hex quantity")


def _counts(source: RpcSource, numbers: Sequence[int], results: Sequence[RpcResult]) -> np.ndarray:
    """The uncle counts ``_uncle_count`` left of each answer (an error answer raises)."""
    out = np.empty(len(numbers), dtype=np.int64)
    for j, answer in enumerate(results):
        out[j] = _checked(source, numbers[j], answer.unwrap())
    return out


def _stream(source: RpcSource, todo: list[tuple[int, int]], known: dict[int, int],
            sampled: dict[int, int], progress: bool | None, runs: _Runs | None
            ) -> Iterator[tuple[tuple[int, int], pd.DataFrame, bool]]:
    """Each piece of ``todo`` in order, as ``(piece, uncles frame, complete)``; ``known``: uncle
    counts already read (the plan's sample), ``sampled``: filled with the counts of those
    sample numbers the scan reads; ``runs``: where the caller keeps the finished pieces (with
    a cache), whose writing thread notes the counts too. ``complete`` is False when a node
    answered null for an uncle its header lists (a lagging node): such a piece is not
    cached."""
    node = source.node
    pieces = iter(todo)
    counting: deque[tuple[Any, ...]] = deque()  # (piece, numbers asked, future of counts)
    uncles: deque[tuple[Any, ...]] = deque()  # (piece, wanted, future or None)
    bar = _bar(source, sum(b - a for a, b in todo), progress)
    notes = _Notes(source, runs.writer, todo) if runs is not None else None
    note = notes if bar is None else _counting(notes, bar)
    swept = 0

    def wait(future: Future[Any]) -> Any:
        """``future.result()``; meanwhile the notes of pieces in flight long enough go, and
        the finished pieces held long enough."""
        while notes is not None and runs is not None:
            try:
                return future.result(timeout=NOTE_AFTER)
            except TimeoutError:
                if future.done():  # done meanwhile, or the fetch's own timeout: as it is
                    return future.result()
                notes.due()
                runs.due()
        return future.result()

    def ask_counts() -> None:
        while len(counting) < AHEAD:
            piece = next(pieces, None)
            if piece is None:
                return
            ask = [n for n in range(*piece) if n not in known]
            if notes is not None:
                notes.asked(piece)
            counting.append((piece, ask, node.submit(count_calls(ask), on_batch=note,
                                                    reduce=_uncle_count) if ask else None))

    def finish() -> tuple[tuple[int, int], pd.DataFrame, bool]:
        piece, wanted, future = uncles.popleft()
        objects = [a.unwrap() for a in wait(future)] if future is not None else []
        rows = [(n, i, u) for (n, i), u in zip(wanted, objects, strict=True) if u is not None]
        complete = len(rows) == len(wanted)
        if notes is not None:
            notes.done(piece, kept=complete)
        return piece, parse_uncles(rows), complete

    try:
        ask_counts()
        while counting:
            (a, b), ask, future = counting.popleft()
            counts = np.zeros(b - a, dtype=np.int64)
            try:
                answers = wait(future) if future is not None else []
            except BaseException:  # e.g. out of credits: the pieces before may still finish
                while uncles:
                    try:
                        done = finish()
                    except Exception:
                        break
                    yield done
                raise
            if answers:
                counts[np.asarray(ask, dtype=np.int64) - a] = _counts(source, ask, answers)
            del answers
            for n in range(a, b):
                if n in known:
                    counts[n - a] = known[n]
            if bar is not None:  # the blocks read before the scan (the plan's sample)
                bar.update(b - a - len(ask))
            del future
            # the collector is paused (decoding makes no cycles), but the HTTP machinery's
            # few cyclic leftovers would pile up over a long scan: sweep the young ones now
            # and then
            swept += 1
            if swept % SWEEP == 0:
                gc.collect(1)
            for n in sampled:
                if a <= n < b:
                    sampled[n] = int(counts[n - a])
            ask_counts()
            where = np.flatnonzero(counts)
            wanted = [(a + int(j), i) for j in where for i in range(int(counts[j]))]
            uncles.append(((a, b), wanted, node.submit(calls(wanted)) if wanted else None))
            while uncles and (uncles[0][2] is None or uncles[0][2].done()):
                yield finish()
        while uncles:
            yield finish()
    except BaseException:
        for _, _, pending in (*counting, *uncles):
            if pending is not None:
                pending.cancel()
        if notes is not None:
            notes.flush()
            # count batches already sent are paid for: noted as they land, as long as the
            # transport lets a failed request's batches in flight land
            futures.wait([f for _, _, f in counting if f is not None], timeout=LAND_WITHIN)
        raise
    finally:
        if bar is not None:
            bar.close()


class _Runs:
    """Finished pieces' uncles frames, cached by the scan's one writing thread (``writer``) in
    runs of consecutive pieces, a Parquet file a run keyed ``"start-stop"`` (:func:`_cached`
    finds a piece inside any run). A run is written when its first piece has been held for
    :data:`NOTE_AFTER`, when it has :data:`RUN` pieces, when a piece that cannot join it
    comes, and when the scan ends or stops early: a fast scan writes a few files (one file
    a piece, each small frame made Arrow beside the thread decoding answers, made a first
    scan 1.16x slower than one without a cache), a slow one a file a piece as before."""

    def __init__(self, source: RpcSource, writer: Any) -> None:
        self.source, self.writer = source, writer
        self.settled = source.node.settled_below()
        self.held: list[tuple[tuple[int, int], pd.DataFrame]] = []
        self.since = 0.0  # when the first held piece came

    def add(self, piece: tuple[int, int], frame: pd.DataFrame, complete: bool) -> None:
        """Hold ``piece``'s frame if it is to be kept (``complete``, settled)."""
        keep = complete and piece[1] <= self.settled
        if self.held and not (keep and self.held[-1][0][1] == piece[0]):
            self.write()  # the run ends: a gap, or a piece not kept
        if keep:
            if not self.held:
                self.since = time.monotonic()
            self.held.append((piece, frame))
        if len(self.held) >= RUN:
            self.write()
        else:
            self.due()

    def due(self) -> None:
        """Write the run held if its first piece came :data:`NOTE_AFTER` ago or more."""
        if self.held and time.monotonic() - self.since >= NOTE_AFTER:
            self.write()

    def write(self) -> None:
        """Hand the run held to the writing thread (its frames joined there)."""
        if not self.held:
            return
        held, self.held = self.held, []
        with contextlib.suppress(RuntimeError):  # the writer is shut: the scan has ended
            self.writer.submit(_keep, self.source, held[0][0][0], held[-1][0][1],
                               [frame for _, frame in held])


class _Notes:
    """An ``on_batch`` noting each settled batch's uncle counts in the cache (written by the
    scan's one writing thread), so that an interrupted scan pays again only for the batches
    in flight: held back while their piece is younger than :data:`NOTE_AFTER` (a piece done
    by then is kept whole as Parquet, and its notes would be dropped unread; writing them all
    made a first scan 1.25x slower than one without a cache), written as they come after
    that, and all of them when the scan stops early (an error, Ctrl-C, out of credits)."""

    def __init__(self, source: RpcSource, writer: Any, todo: list[tuple[int, int]]) -> None:
        node = source.node
        self.cache, self.settled, self.writer = node.cache, node.settled_below(), writer
        self.todo, self.starts = todo, [a for a, _ in todo]
        self.lock = threading.Lock()
        # notes made as their batch lands, (key, bytes, newest block): bytes, which the
        # collector does not track; holding the batches' answers made each of the scan's
        # sweeps of the young generations (its collector is paused) twice as long
        self.held: dict[tuple[int, int], list[tuple[str, bytes, int]]] = {}
        self.since: dict[tuple[int, int], float] = {}  # pieces asked for, notes held back
        self.open: set[tuple[int, int]] = set()  # pieces whose notes are written as they come
        self.stopped = False  # the scan stopped early: every note is written as it comes

    def asked(self, piece: tuple[int, int]) -> None:
        with self.lock:
            self.since[piece] = time.monotonic()

    def __call__(self, sent: Sequence[Any], results: Sequence[Any]) -> None:
        if not sent:
            return
        first, last = int(sent[0].params[0], 16), int(sent[-1].params[0], 16)  # they ascend
        counts = [answer.result for answer in results]  # as _uncle_count left them
        if last >= self.settled or any(type(c) is not int for c in counts):
            return  # not settled; or an error, a null, a malformed answer: the scan raises it
        numbers = (np.arange(first, last + 1, dtype=np.int64) if last - first + 1 == len(sent)
                   else [int(call.params[0], 16) for call in sent])  # around known counts
        note = (f"{first}-{last}", np.array([numbers, counts], dtype=np.int64).tobytes(), last)
        piece = self.todo[bisect.bisect_right(self.starts, first) - 1]
        with self.lock:
            if piece not in self.open and not self.stopped:
                self.held.setdefault(piece, []).append(note)
                return
        self._write([note])

    def due(self) -> None:
        """Write the held notes of pieces in flight for :data:`NOTE_AFTER` or longer."""
        now = time.monotonic()
        items = []
        with self.lock:
            for piece in [p for p, t in self.since.items() if now - t >= NOTE_AFTER]:
                del self.since[piece]
                self.open.add(piece)
                items += self.held.pop(piece, [])
        self._write(items)

    def done(self, piece: tuple[int, int], kept: bool) -> None:
        """``piece``'s frame is made: its held notes are dropped if the frame is to be kept."""
        with self.lock:
            self.since.pop(piece, None)
            self.open.discard(piece)
            items = self.held.pop(piece, [])
        if not kept:
            self._write(items)

    def flush(self) -> None:
        """The scan stops early: every count held back is noted, and every count still to
        land is noted as it lands."""
        with self.lock:
            self.stopped = True
            items = [item for held in self.held.values() for item in held]
            self.held.clear()
        self._write(items)

    def _write(self, items: list[tuple[str, bytes, int]]) -> None:
        if items and self.cache is not None:  # (notes are made only with a cache)
            # RuntimeError: the writer is shut (the scan stopped while this was held)
            with contextlib.suppress(RuntimeError):
                self.writer.submit(self.cache.put_chunks, NOTES, items,
                                   settled_below=self.settled)


def _counting(note: Any, bar: Any) -> Any:
    """``note`` that also moves ``bar`` as each count batch arrives: under pacing a piece's
    uncle call waits behind the next pieces' counts, so a bar moved by whole pieces stood
    at 0 % for the first half of a paced scan."""

    def on_batch(sent: Sequence[Any], results: Sequence[Any]) -> None:
        bar.update(len(sent))
        if note is not None:
            note(sent, results)

    return on_batch


def _noted_counts(source: RpcSource, start: int, stop: int) -> dict[int, int]:
    """The uncle counts an interrupted scan of blocks in ``start`` .. ``stop - 1`` noted."""
    cache = source.node.cache if source.node.caching else None
    if cache is None:
        return {}
    known: dict[int, int] = {}
    for _, data in cache.chunks_between(NOTES, start, stop):
        numbers, counts = np.frombuffer(data, dtype=np.int64).reshape(2, -1).tolist()
        known.update(zip(numbers, counts, strict=True))
    return known


def _bar(source: RpcSource, total: int, progress: bool | None) -> Any:
    show = source.node.progress if progress is None else progress
    if not show or total < PIECE:
        return None
    from feeslab._progress import progress_bar  # a widget in Jupyter, text on stderr elsewhere

    return progress_bar(total=total, initial=0, description="uncles", unit="block")


def plan(
    source: RpcSource, start: int, stop: int, *, sample: int = SAMPLE, budget: int | None = None,
    less_cached: bool = True,
) -> Plan:
    """What :func:`get` will cost, before it runs.

    The uncles are estimated from the uncle counts of ``sample`` blocks spread over those the
    cache does not hold yet (fetched and cached, for the scan to reuse).

    Parameters
    ----------
    budget : int, optional
        Refuse (``BudgetExceeded``) before the sample is bought if the scan's counts alone
        (the sample among them) would pass it, and after it if the whole plan would [credits].
    less_cached : bool, default True
        Leave out what the cache holds; False: the cost from scratch, the same on every run.
    """
    check_range(start, stop)
    return _plan_and_sample(source, start, stop, sample, budget, less_cached=less_cached)[0]


def _counts_alone(source: RpcSource, start: int, stop: int, budget: int | None) -> Budget | None:
    """The budget, checked against the scan's uncle counts alone before anything is sent."""
    cap = None if budget is None else Budget(budget)
    if cap is not None:
        cap.check(Plan([PlanLine.of(COUNT_METHOD, stop - start)]), source.credits)
    return cap


def _left(source: RpcSource, start: int, stop: int, sample: int, *, less_cached: bool = True
          ) -> tuple[dict[tuple[int, int], pd.DataFrame], list[tuple[int, int]], list[int]]:
    """After the set-up round trip: the cached pieces (none looked up unless
    ``less_cached``), the pieces left to fetch and the sample's block numbers among them."""
    source.prepare()
    source.check_head(stop)
    runs = _kept_runs(source, start, stop) if less_cached else {}
    pieces = _pieces(source, start, stop, runs)
    cached = _cached(source, pieces, runs)
    todo = [p for p in pieces if p not in cached]
    return cached, todo, _sample(todo, sample)


def _plan_and_sample(source: RpcSource, start: int, stop: int, sample: int, budget: int | None,
                     *, less_cached: bool = True,
                     ) -> tuple[Plan, dict[int, int], list[tuple[int, int]],
                                dict[tuple[int, int], pd.DataFrame]]:
    """The plan (its sample bought), the sampled uncle counts by number, the pieces left to
    fetch and the cached ones."""
    cap = _counts_alone(source, start, stop, budget)
    cached, todo, numbers = _left(source, start, stop, sample, less_cached=less_cached)
    with source.budgeted(cap):  # the sample charged like any request
        probe = source.results(count_calls(numbers), description="uncle counts",
                               progress=False) if numbers else []
    sampled = {n: _checked(source, n, _count_of(answer))
               for n, answer in zip(numbers, probe, strict=True)}
    result = _plan_of(start, stop, todo, sampled, cached)
    if cap is not None:
        cap.check(result)
    return result, sampled, todo, cached


def plan_and_sample(source: RpcSource, start: int, stop: int, *, sample: int = SAMPLE,
                    budget: int | None = None) -> tuple[Plan, dict[int, int]]:  # fmt: skip
    """The scan's plan, its sample of ``sample`` uncle counts bought, and those counts
    by block number: what a caller that splits the scan (``feeslab.cluster``) hands each part
    as ``get(..., known_counts=)``, so that no count is bought twice.

    Raises
    ------
    BudgetExceeded
        Before the sample is bought, or after, when the plan would pass ``budget`` [credits].
    """
    result, sampled, _, _ = _plan_and_sample(source, start, stop, sample, budget)
    return result, sampled


def get(
    source: RpcSource,
    start: int,
    stop: int,
    *,
    budget: int | None = None,
    progress: bool | None = None,
    known_counts: Mapping[int, int] | None = None,
) -> UncleScan:
    """Every uncle included by blocks ``start`` .. ``stop - 1`` (like ``range``).

    Parameters
    ----------
    source : RpcSource
        The node (``lab.uncles`` reads era1 files too: ``feeslab.datasets.registry``).
    budget : int, optional
        Refuse (``BudgetExceeded``) before sending, the plan's sample included, if spending
        so far plus the plan would pass it [credits]. Without one the sample is not bought
        ahead: the scan reads the same counts and the plan is worked out from them.
    progress : bool, optional
        A progress bar on long fetches.
    known_counts : mapping of int to int, optional
        Uncle counts [uncles] of blocks already read elsewhere (a cluster job's plan sample):
        they are not asked for again.

    Returns
    -------
    UncleScan
        ``.uncles`` (one row per uncle), ``.blocks`` (uncle count per scanned block, zeros
        included) and ``.plan`` (the credits planned, less what the cache held).
    """
    check_range(start, stop)
    cap = None if budget is None else Budget(budget)
    if cap is not None:
        cap.check(0, source.credits)  # counts from what is spent already
    # only counts and frames outlive a piece: little left to collect after; every request,
    # the plan's sample included, charged against the budget before it goes
    with gc_paused(), source.budgeted(cap):
        if budget is not None:
            planned, known, todo, cached = _plan_and_sample(source, start, stop, SAMPLE, budget)
            sampled = dict(known)
        else:
            cached, todo, numbers = _left(source, start, stop, SAMPLE)
            known = _sample_cached(source, numbers)  # e.g. bought by plan_uncles before
            sampled = dict.fromkeys(numbers, 0) | known
        if known_counts:
            given = {n: int(c) for n, c in known_counts.items() if start <= n < stop}
            known, sampled = known | given, sampled | given
        if todo:
            known = _noted_counts(source, start, stop) | known
        if cached:  # pieces kept as frames stand for their counts' and uncles' answers
            source.credits.record_cached(COUNT_METHOD, sum(b - a for a, b in cached))
            source.credits.record_cached(METHOD, sum(len(f) for f in cached.values()))
        frames = dict(cached)
        # the cache is written on a thread of its own, beside the fetch: in order, so a piece's
        # notes are written before they are dropped, and all of it before the scan returns
        writer = ThreadPoolExecutor(1, "feeslab-keep") if source.node.caching and todo else None
        runs = _Runs(source, writer) if writer is not None else None
        try:
            for piece, frame, complete in _stream(source, todo, known, sampled, progress, runs):
                frames[piece] = frame
                if runs is not None:
                    runs.add(piece, frame, complete)
        finally:
            if runs is not None:
                runs.write()  # what is held, even if the scan stopped early
                runs.writer.shutdown(wait=True)
        if budget is None:
            planned = _plan_of(start, stop, todo, sampled, cached)
        parts = [frames[p] for p in sorted(frames) if len(frames[p])] or [parse_uncles([])]
        uncles = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
        uncles = source.tag(uncles)
        counts = source.tag(uncle_scan_frame(np.arange(start, stop, dtype=np.int64), uncles))
        return UncleScan(uncles=uncles, blocks=counts, plan=planned)


def _keep(source: RpcSource, start: int, stop: int, frames: list[pd.DataFrame]) -> None:
    """Cache a run of finished pieces' uncles ``frames`` (blocks ``start`` .. ``stop - 1``) as
    one, and drop the notes it makes useless."""
    frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    source.keep_frames(DATASET, [(f"{start}-{stop}", frame, stop - 1)])
    if source.node.cache is not None:
        source.node.cache.drop_chunks(NOTES, start, stop)


def _sample_cached(source: RpcSource, numbers: Sequence[int]) -> dict[int, int]:
    """The sample's uncle counts the answer cache holds (none are asked for)."""
    cache = source.node.cache if numbers and source.node.caching else None
    if cache is None:
        return {}
    found = cache.get_many((c.method, c.params) for c in count_calls(numbers))
    return {n: c for n, c in zip(numbers, map(_count_of, found), strict=True)
            if type(c) is int}


def plan_parts(source: RpcSource, params: Mapping[str, Any], cuts: Sequence[tuple[int, int]],
               budget: int | None) -> PartsPlan:  # fmt: skip
    """A cluster job's plan: the sample bought once, on the driver, each partition's share of
    the credits worked out from it, and the sampled counts, which each partition is handed
    (``known_counts``) so that no count is bought twice."""
    start, stop = params["start"], params["stop"]
    whole, sampled = plan_and_sample(source, start, stop, budget=budget)
    per_block = sum(line.credits for line in whole.lines if line.method != COUNT_METHOD)
    per_block /= stop - start
    each = method_cost(COUNT_METHOD)
    credits = tuple(round(sum(1 for n in range(lo, hi) if n not in sampled) * each
                          + per_block * (hi - lo)) for lo, hi in cuts)  # fmt: skip
    return PartsPlan(whole, credits, sampled, bought=len(sampled) * each)


def _assemble(source: RpcSource, rows: pd.DataFrame, params: Mapping[str, Any],
              planned: Plan) -> UncleScan:  # fmt: skip
    """The scan of every partition's (or era1 files') uncle rows."""
    uncles = source.tag(rows)
    numbers = np.arange(params["start"], params["stop"], dtype=np.int64)
    return UncleScan(uncles=uncles, blocks=source.tag(uncle_scan_frame(numbers, uncles)),
                     plan=planned)  # fmt: skip


def _written(scan: UncleScan, per_block: bool = False) -> pd.DataFrame:
    return scan.blocks if per_block else scan.uncles


DATASETS = (
    Dataset("uncles", get, plan=plan, cli="uncles", options=(
        START, STOP,
        Option(("--per-block",), "per_block", "one row per scanned block with its "
               "uncle_count instead", switch=True, written_only=True),
    ), summary="every uncle included by blocks --start .. --stop - 1", partitions=BY_RANGE,
            rows=lambda scan: scan.uncles, assemble=_assemble, plan_parts=plan_parts,
            context="known_counts", written=_written),
)

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

This streaming (``_stream`` and ``_Keeper``, one marked section) is the one part of the scan
the other datasets do not share: two stages pipelined across pieces. Everything else goes
the registry's one way: plan, partitions (``plan_parts``: the sample bought once, its counts
handed to every partition), an executor (in this process, or ``feeslab.cluster``'s workers,
each running :func:`get` on its partition), and resume from the same cache either way.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, ParamSpec, TypeAlias

import numpy as np
import pandas as pd

from feeslab._progress import ProgressBar
from feeslab.datasets._checks import check_range
from feeslab.datasets.registry import BY_RANGE, START, STOP, Dataset, Option, Params, PartsPlan
from feeslab.errors import ProtocolError
from feeslab.fetch._gc import gc_paused
from feeslab.fetch.core import LAND_WITHIN
from feeslab.fetch.credits import Budget, Plan, PlanLine
from feeslab.fetch.node import quantity
from feeslab.fetch.transport import RpcCall, RpcResult
from feeslab.frames import UNCLE_DTYPES, parse_uncles, uncle_scan_frame
from feeslab.protocol.costs import method_cost
from feeslab.sources.rpc import RpcSource

if TYPE_CHECKING:
    from feeslab.cluster import JobReport

__all__ = ["DATASETS", "PIECE", "SAMPLE", "UncleScan", "calls", "count_calls", "get", "plan",
           "plan_and_sample", "plan_parts"]

_P = ParamSpec("_P")
_Piece: TypeAlias = tuple[int, int]  # blocks a .. b - 1
_Answers: TypeAlias = Future[list[RpcResult]]

SAMPLE = 200  # uncle counts read to estimate a scan's uncles (the scan reuses them)
METHOD = "eth_getUncleByBlockNumberAndIndex"
COUNT_METHOD = "eth_getUncleCountByBlockNumber"
# blocks a piece: the unit streamed and cached; aligned, so that scans of other ranges share
# the inner pieces
PIECE = 4_000  # a multiple of connect()'s batches (1,000 counts): a piece sends only full ones
AHEAD = 3  # pieces whose counts are in flight while the one before is read (ints: cheap)
RUN = 25  # finished pieces at most in one cached file (a run: 100,000 blocks)
NOTE_AFTER = 1.0  # [s] a piece in flight, or a run held, this long is written as it goes
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
    report: JobReport | None = None

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
    """The cached runs of pieces (:class:`_Keeper`, any scan's) that may hold blocks of
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


def _count_of(result: object) -> object:
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


def _checked(source: RpcSource, number: int, count: object) -> int:
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


# The streaming part, the one piece of this module no other dataset shares (why: a scan is two
# stages, counts then uncles, pipelined across pieces; the job path's partitions run it whole):
# _stream keeps AHEAD pieces' counts in flight and asks each piece's uncles as soon as its
# counts are in; _Keeper caches what finishes, on one writing thread, so a rerun reads it back.


def _stream(source: RpcSource, todo: list[tuple[int, int]], known: dict[int, int],
            keeper: _Keeper
            ) -> Iterator[tuple[tuple[int, int], pd.DataFrame, bool]]:
    """Each piece of ``todo`` as ``(piece, uncles frame, complete)``, in order; ``known``: counts
    read before (not asked). Not ``complete``: a node answered null for an uncle its header
    lists (not to be cached)."""
    node, pieces, swept = source.node, iter(todo), 0
    counting: deque[tuple[_Piece, list[int], _Answers | None]] = deque()  # piece, asked, counts
    uncles: deque[tuple[_Piece, list[tuple[int, int]], _Answers | None]] = deque()  # wanted

    def ask_counts() -> None:
        while len(counting) < AHEAD and (piece := next(pieces, None)) is not None:
            ask = [n for n in range(*piece) if n not in known]
            keeper.asking(piece)
            counting.append((piece, ask, node.submit(
                count_calls(ask), on_batch=keeper.on_batch, reduce=_uncle_count) if ask else None))

    def finish() -> tuple[tuple[int, int], pd.DataFrame, bool]:
        piece, wanted, future = uncles.popleft()
        objects = [a.unwrap() for a in future.result()] if future is not None else []
        rows = [(n, i, u) for (n, i), u in zip(wanted, objects, strict=True) if u is not None]
        return piece, parse_uncles(rows), len(rows) == len(wanted)

    try:
        ask_counts()
        while counting:
            (a, b), ask, future = counting.popleft()
            try:
                answers = future.result() if future is not None else []
            except BaseException:  # e.g. out of credits: the pieces before may still finish
                with contextlib.suppress(Exception):
                    while uncles:
                        yield finish()
                raise
            counts = np.zeros(b - a, dtype=np.int64)
            if answers:
                counts[np.asarray(ask, dtype=np.int64) - a] = _counts(source, ask, answers)
            del answers, future
            for n in range(a, b):
                if n in known:
                    counts[n - a] = known[n]
            if keeper.bar is not None:  # the blocks read before the scan (the sample)
                keeper.bar.update(b - a - len(ask))
            swept += 1  # the collector is paused: the HTTP machinery's few cyclic leftovers
            if swept % SWEEP == 0:  # would pile up over a long scan, so sweep the young ones
                gc.collect(1)
            ask_counts()
            where = np.flatnonzero(counts)
            wanted = [(a + int(j), i) for j in where for i in range(int(counts[j]))]
            uncles.append(((a, b), wanted, node.submit(calls(wanted)) if wanted else None))
            while uncles and (uncles[0][2] is None or uncles[0][2].done()):
                yield finish()
        while uncles:
            yield finish()
    except BaseException:
        for *_, pending in (*counting, *uncles):
            if pending is not None:
                pending.cancel()
        keeper.stop_early()
        # count batches already sent are paid for: noted as they land, as long as the
        # transport lets a failed request's batches in flight land
        futures.wait([f for *_, f in counting if f is not None], timeout=LAND_WITHIN)
        raise


class _Keeper:
    """What a scan caches, written in order by its one writing thread: finished pieces' uncles
    frames, a run of consecutive pieces to a Parquet file (written at :data:`RUN` pieces,
    :data:`NOTE_AFTER` after its first, at a gap and at the end; a file a piece made a fast
    first scan 1.16x slower), and the count batches of pieces in flight as notes (held by
    piece as they land, dropped when it finishes, written once it has been in flight
    :data:`NOTE_AFTER`, when the scan stops early, or when a lagging node left it incomplete:
    a slow scan, even one killed outright, pays again only for the batches in flight; writing
    every note made a fast first scan 1.25x slower)."""

    def __init__(self, source: RpcSource, todo: list[tuple[int, int]],
                 bar: ProgressBar | None) -> None:  # fmt: skip
        node = source.node
        self.source, self.todo, self.starts, self.bar = source, todo, [a for a, _ in todo], bar
        self.cache = node.cache if node.caching and todo else None
        self.settled = node.settled_below() if self.cache is not None else 0
        self.writer = ThreadPoolExecutor(1, "feeslab-keep") if self.cache is not None else None
        self.lock = threading.Lock()
        self.notes: dict[tuple[int, int], list[tuple[str, bytes, int]]] = {}
        self.asked: dict[tuple[int, int], float] = {}  # pieces in flight, notes held: since
        self.run: list[tuple[tuple[int, int], pd.DataFrame]] = []
        self.since = 0.0  # when the run's first piece came
        if self.cache is None and bar is None:
            self.on_batch = None  # type: ignore[assignment]  # nothing to do per batch

    def on_batch(self, sent: Sequence[RpcCall], results: Sequence[RpcResult]) -> None:
        """A count batch landed (on a transport thread): the bar moves (a paced piece's uncles
        wait behind later pieces' counts) and its settled counts are held."""
        if self.bar is not None:
            self.bar.update(len(sent))
        if self.cache is None or not sent:
            return
        first, last = int(sent[0].params[0], 16), int(sent[-1].params[0], 16)  # they ascend
        counts = [answer.result for answer in results]  # as _uncle_count left them
        if last >= self.settled or any(type(c) is not int for c in counts):
            return  # not settled; or an error, a null, a malformed answer: the scan raises it
        numbers = (np.arange(first, last + 1, dtype=np.int64) if last - first + 1 == len(sent)
                   else [int(call.params[0], 16) for call in sent])  # around known counts
        note = (f"{first}-{last}", np.array([numbers, counts], dtype=np.int64).tobytes(), last)
        now, due = time.monotonic(), [note]
        with self.lock:
            piece = self.todo[bisect.bisect_right(self.starts, first) - 1]
            if piece in self.asked:
                self.notes.setdefault(piece, []).append(note)
                due = []
            for old in [p for p, t in self.asked.items() if now - t >= NOTE_AFTER]:
                del self.asked[old]  # from now on its notes are written as they land
                due += self.notes.pop(old, [])
        self._note(due)

    def asking(self, piece: tuple[int, int]) -> None:
        with self.lock:
            self.asked[piece] = time.monotonic()

    def finished(self, piece: tuple[int, int], frame: pd.DataFrame, complete: bool) -> None:
        with self.lock:
            self.asked.pop(piece, None)
            notes = self.notes.pop(piece, [])
        keep = complete and piece[1] <= self.settled and self.cache is not None
        if not complete:
            self._note(notes)
        if self.run and not (keep and self.run[-1][0][1] == piece[0]):
            self.write()  # the run ends: a gap, or a piece not kept
        if keep:
            self.since = self.since if self.run else time.monotonic()
            self.run.append((piece, frame))
            if len(self.run) >= RUN or time.monotonic() - self.since >= NOTE_AFTER:
                self.write()

    def stop_early(self) -> None:  # every count held is noted, and those to land as they land
        with self.lock:
            self.asked.clear()
            notes = [note for held in self.notes.values() for note in held]
            self.notes.clear()
        self._note(notes)

    def write(self) -> None:
        run, self.run = self.run, []
        if run:
            self._submit(_keep, self.source, run[0][0][0], run[-1][0][1], [f for _, f in run])

    def close(self) -> None:
        self.write()  # what is held, even if the scan stopped early
        if self.writer is not None:
            self.writer.shutdown(wait=True)

    def _note(self, notes: list[tuple[str, bytes, int]]) -> None:
        if notes and self.cache is not None:
            self._submit(self.cache.put_chunks, NOTES, notes, settled_below=self.settled)

    def _submit(self, job: Callable[_P, object], *args: _P.args, **options: _P.kwargs) -> None:
        if self.writer is not None:
            with contextlib.suppress(RuntimeError):  # the writer is shut: the scan has ended
                self.writer.submit(job, *args, **options)


def _bar(source: RpcSource, total: int, progress: bool | None) -> ProgressBar | None:
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
        bar = _bar(source, sum(b - a for a, b in todo), progress)
        keeper = _Keeper(source, todo, bar)
        try:
            for piece, frame, complete in _stream(source, todo, known, keeper):
                frames[piece] = frame
                keeper.finished(piece, frame, complete)
        finally:
            keeper.close()
            if bar is not None:
                bar.close()
        parts = [frames[p] for p in sorted(frames) if len(frames[p])] or [parse_uncles([])]
        uncles = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
        if budget is None:  # the sample's counts, as the scan found them
            found = uncles["block_number"].value_counts()
            sampled = {n: known[n] if n in known else int(found.get(n, 0)) for n in sampled}
            planned = _plan_of(start, stop, todo, sampled, cached)
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


def plan_parts(source: RpcSource, params: Params, cuts: Sequence[tuple[int, int]],
               budget: int | None) -> PartsPlan:  # fmt: skip
    """A cluster job's plan: the sample bought once, on the driver, each partition's share of
    the credits worked out from it, and the sampled counts, which each partition is handed
    (``known_counts``) so that no count is bought twice."""
    start, stop = BY_RANGE.span(params)
    whole, sampled = plan_and_sample(source, start, stop, budget=budget)
    per_block = (sum(line.credits for line in whole.lines if line.method != COUNT_METHOD)
                 / (stop - start))  # fmt: skip
    each = method_cost(COUNT_METHOD)
    credits = tuple(round(sum(1 for n in range(lo, hi) if n not in sampled) * each
                          + per_block * (hi - lo)) for lo, hi in cuts)  # fmt: skip
    return PartsPlan(whole, credits, sampled, bought=len(sampled) * each)


def _assemble(source: RpcSource, rows: pd.DataFrame, params: Params,
              planned: Plan) -> UncleScan:  # fmt: skip
    """The scan of every partition's (or era1 files') uncle rows."""
    uncles = source.tag(rows)
    numbers = np.arange(*BY_RANGE.span(params), dtype=np.int64)
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
            context="known_counts", written=_written, bodies=True),
)

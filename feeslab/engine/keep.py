"""The engine's sink to the cache: settled chunks' rows kept as Parquet, a run of consecutive
chunks to a file, and a staged extract's first-stage answers noted while their chunk is in
flight; and reading both back.

Keys name blocks: a run of chunks covering blocks ``a`` .. ``b - 1`` is kept under ``"a-b"``
(its newest block ``b - 1`` is what the cache's range queries see), so a later fetch of any
range finds, for each chunk it needs, the file reaching furthest that holds it whole
(:func:`covering`), reads that file once and slices it.

The writing is done by :class:`Keeper`, on one thread of its own: the fetch never waits for
Parquet or a disk.
"""

from __future__ import annotations

import bisect
import contextlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, ParamSpec

import numpy as np
import pandas as pd

from feeslab.engine.chunks import Chunked
from feeslab.fetch.node import block_of
from feeslab.fetch.transport import RpcCall, RpcResult

if TYPE_CHECKING:
    from feeslab._progress import ProgressBar
    from feeslab.sources.rpc import RpcSource

__all__ = ["Keeper", "cached", "covering", "kept_runs", "noted", "run_of"]

_P = ParamSpec("_P")
Span = tuple[int, int]  # blocks a .. b - 1


def run_of(key: str) -> Span | None:
    """The blocks ``start`` .. ``stop - 1`` a kept file's key ``"start-stop"`` names."""
    first, _, stop = key.partition("-")
    if not (first.isdigit() and stop.isdigit()) or int(first) >= int(stop):
        return None
    return int(first), int(stop)


def covering(runs: Sequence[Span], wanted: Sequence[Span]) -> dict[Span, Span]:
    """For each chunk of ``wanted`` (ascending) that one of ``runs`` holds whole, the longest
    reaching such run: one sweep, as both ascend."""
    ordered = sorted(runs)
    out: dict[Span, Span] = {}
    reach: Span | None = None
    i = 0
    for a, b in wanted:
        while i < len(ordered) and ordered[i][0] <= a:
            if reach is None or ordered[i][1] > reach[1]:
                reach = ordered[i]
            i += 1
        if reach is not None and reach[1] >= b:
            out[(a, b)] = reach
    return out


def _inside(frame: pd.DataFrame, run: Span, chunk: Span) -> pd.DataFrame:
    """The rows of ``run``'s frame about ``chunk``'s blocks."""
    if run == chunk:
        return frame
    numbers = frame["block_number"].to_numpy()
    return frame[(numbers >= chunk[0]) & (numbers < chunk[1])].reset_index(drop=True)


def kept_runs(spec: Chunked, source: RpcSource, start: int, stop: int) -> dict[Span, str]:
    """The kept runs (any fetch's) that may hold blocks of ``start`` .. ``stop - 1``, with
    their keys: those ending in the range or up to ``spec.run`` chunks past it (a longer
    run is only not reused)."""
    store = spec.store_name
    cache = source.node.cache if source.node.caching and store is not None else None
    if cache is None or store is None:
        return {}
    keys = cache.chunk_keys(store, start, stop + max(1, spec.run) * spec.size)
    return {run: key for key in keys if (run := run_of(key)) is not None and run[0] < stop}


def cached(spec: Chunked, source: RpcSource, chunks: Sequence[Span], runs: Mapping[Span, str],
           *, settled: int, params: Mapping[str, object]) -> dict[Span, pd.DataFrame]:  # fmt: skip
    """The chunks below ``settled`` whose rows a kept run holds, each file read once (a file
    whose columns are not those of ``params``' rows is left alone)."""
    wanted = [(a, b) for a, b in chunks if b <= settled]
    store = spec.store_name
    if not wanted or not runs or store is None:
        return {}
    use = covering(list(runs), wanted)
    needed = sorted(set(use.values()))
    frames = dict(zip(needed, source.cached_frames(store, [runs[r] for r in needed]),
                      strict=True))  # fmt: skip
    columns = list(spec.empty(params).columns)
    return {chunk: _inside(found, run, chunk) for chunk, run in use.items()
            if (found := frames[run]) is not None and list(found.columns) == columns}


def noted(spec: Chunked, source: RpcSource, start: int, stop: int) -> dict[int, int]:
    """The first-stage answers a stopped fetch of blocks in ``start`` .. ``stop - 1`` noted,
    by block number."""
    cache = source.node.cache if source.node.caching else None
    if cache is None or spec.notes is None:
        return {}
    known: dict[int, int] = {}
    for _, data in cache.chunks_between(spec.notes.store, start, stop):
        numbers, values = np.frombuffer(data, dtype=np.int64).reshape(2, -1).tolist()
        known.update(zip(numbers, values, strict=True))
    return known


class Keeper:
    """What a fetch keeps, written in order by its one writing thread: completed chunks' rows,
    a run of consecutive chunks to a Parquet file (written at ``spec.run`` chunks,
    ``spec.run_seconds`` after its first, at a gap and at the end), and the first-stage
    answers of chunks in flight as notes (held by chunk as they land, dropped when it
    completes, written once it has been in flight ``run_seconds``, when the fetch stops
    early, or when a chunk completes without being kept: a slow fetch, even one killed
    outright, pays again only for the batches in flight; writing every note made a fast
    first scan 1.25x slower). It also moves the bar as each first-stage batch lands."""

    def __init__(self, spec: Chunked, source: RpcSource, todo: Sequence[Span],
                 bar: ProgressBar | None) -> None:  # fmt: skip
        node = source.node
        self.spec, self.source, self.todo, self.bar = spec, source, list(todo), bar
        self.starts = [a for a, _ in self.todo]
        keeps = spec.store is not None or spec.notes is not None
        self.cache = node.cache if node.caching and keeps and todo else None
        self.settled = node.settled_below() if self.cache is not None else 0
        self.writer = ThreadPoolExecutor(1, "feeslab-keep") if self.cache is not None else None
        self.lock = threading.Lock()
        self.notes: dict[Span, list[tuple[str, bytes, int]]] = {}
        self.asked: dict[Span, float] = {}  # chunks in flight, notes held: since
        self.moved: dict[Span, int] = {}  # blocks the bar moved for a chunk's batches
        self.run: list[tuple[Span, pd.DataFrame]] = []
        self.since = 0.0  # when the run's first chunk came

    @property
    def watches_batches(self) -> bool:
        """Whether the first stage's batches are to be handed to :meth:`on_batch`."""
        return self.bar is not None or (self.cache is not None and self.spec.notes is not None)

    def on_batch(self, sent: Sequence[RpcCall], results: Sequence[RpcResult]) -> None:
        """A first-stage batch landed (on a transport thread): the bar moves and its settled
        answers are held as notes."""
        if not sent:
            return
        numbers = [block_of(call) for call in sent]
        first = numbers[0]
        if first is None:
            return
        chunk = self.todo[bisect.bisect_right(self.starts, first) - 1]
        if self.bar is not None:
            blocks = len(set(numbers))
            with self.lock:
                self.moved[chunk] = self.moved.get(chunk, 0) + blocks
            self.bar.update(blocks)
        notes = self.spec.notes
        if self.cache is None or notes is None:
            return
        values = [notes.value(answer) for answer in results]
        last = max(n for n in numbers if n is not None)
        if last >= self.settled or any(v is None for v in values) or None in numbers:
            return  # not settled; or an error, a null, a malformed answer: the fetch raises it
        data = np.array([numbers, values], dtype=np.int64).tobytes()
        note = (f"{first}-{last}", data, last)
        now, due = time.monotonic(), [note]
        with self.lock:
            if chunk in self.asked:
                self.notes.setdefault(chunk, []).append(note)
                due = []
            for old in [c for c, t in self.asked.items() if now - t >= self.spec.run_seconds]:
                del self.asked[old]  # from now on its notes are written as they land
                due += self.notes.pop(old, [])
        self._note(due)

    def asking(self, chunk: Span) -> None:
        """``chunk``'s first stage is sent."""
        with self.lock:
            self.asked[chunk] = time.monotonic()

    def finished(self, chunk: Span, frame: pd.DataFrame, complete: bool) -> None:
        """``chunk`` is complete: its bar's remainder, and its rows kept (when ``complete``
        and settled) in the run."""
        with self.lock:
            self.asked.pop(chunk, None)
            notes = self.notes.pop(chunk, [])
            moved = self.moved.pop(chunk, 0)
        if self.bar is not None:
            self.bar.update(chunk[1] - chunk[0] - moved)
        keep = (complete and chunk[1] <= self.settled and self.cache is not None
                and self.spec.store is not None)  # fmt: skip
        if not complete:
            self._note(notes)
        if self.run and not (keep and self.run[-1][0][1] == chunk[0]):
            self.write()  # the run ends: a gap, or a chunk not kept
        if keep:
            self.since = self.since if self.run else time.monotonic()
            self.run.append((chunk, frame))
            if (len(self.run) >= self.spec.run
                    or time.monotonic() - self.since >= self.spec.run_seconds):  # fmt: skip
                self.write()

    def stop_early(self) -> None:
        """The fetch stops: every answer held is noted, and those to land as they land."""
        with self.lock:
            self.asked.clear()
            notes = [note for held in self.notes.values() for note in held]
            self.notes.clear()
        self._note(notes)

    def write(self) -> None:
        """Write the run held, as one file."""
        run, self.run = self.run, []
        if run:
            self._submit(self._keep, run[0][0][0], run[-1][0][1], [f for _, f in run])

    def close(self) -> None:
        """Write what is held (even if the fetch stopped early) and wait for the writer."""
        self.write()
        if self.writer is not None:
            self.writer.shutdown(wait=True)

    def _keep(self, start: int, stop: int, frames: list[pd.DataFrame]) -> None:
        """Keep a run's rows (blocks ``start`` .. ``stop - 1``) as one file, and drop the
        notes it makes useless."""
        store = self.spec.store_name
        assert store is not None
        frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        self.source.keep_frames(store, [(f"{start}-{stop}", frame, stop - 1)])
        if self.spec.notes is not None and self.cache is not None:
            self.cache.drop_chunks(self.spec.notes.store, start, stop)

    def _note(self, notes: list[tuple[str, bytes, int]]) -> None:
        if notes and self.cache is not None and self.spec.notes is not None:
            self._submit(self.cache.put_chunks, self.spec.notes.store, notes,
                         settled_below=self.settled)  # fmt: skip

    def _submit(self, job: Callable[_P, object], *args: _P.args, **options: _P.kwargs) -> None:
        if self.writer is not None:
            with contextlib.suppress(RuntimeError):  # the writer is shut: the fetch has ended
                self.writer.submit(job, *args, **options)

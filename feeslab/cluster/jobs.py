"""Partitioned jobs on dask.distributed: one plan, one credit bucket, one Parquet file a partition.

A job is one dataset's fetch, described by a :class:`JobSpec` (how one partition is planned and
computed, through the same ``feeslab.datasets`` code a single process runs, and how the
partitions' rows become the one-process result). It is planned whole on the driver before
anything runs, then cut into partitions: one per era1 file for archive files, one per
``partition_blocks`` blocks for a node. Each partition runs as one dask task on a worker and
writes its rows to ``part-<first>-<last>.parquet`` in the job's directory, atomically (a
temporary file renamed over the name), before the task ends. A partition whose file exists is
done: a rerun of a killed job skips it and spends nothing for it. :func:`run_job` is the one
runner; :class:`feeslab.cluster.datasets.DatasetJob` is the spec of every dataset that
declares partitions (``feeslab.datasets.REGISTRY``).

Workers read no SQLite cache (``cache=False``): the partition files are the settled answers, so
no two processes ever write one cache. The driver's own cache keeps an uncle plan's sample,
which each worker is handed for its range, so the cluster buys exactly the calls one process
would. Every worker's batches are booked in one token bucket on the scheduler
(:mod:`feeslab.cluster._governor`), with the job's ``budget``.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import itertools
import json
import math
import os
import queue
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from feeslab.errors import BudgetExceeded, ConfigError, FeeslabError
from feeslab.fetch.cache import default_cache_dir
from feeslab.fetch.credits import Plan
from feeslab.frames.io import frame_from_bytes, write_bytes
from feeslab.frames.partitions import (
    MANIFEST,
    concat_partitions,
    partition_bytes,
    read_partition,
    write_partition,
)
from feeslab.sources.base import JSON_RPC, Source
from feeslab.sources.rpc import NodeSpec, RpcSource, open_node

__all__ = [
    "DEFAULT_PARTITION_BLOCKS",
    "MANIFEST",
    "JobPlan",
    "JobReport",
    "JobResult",
    "JobSpec",
    "Partition",
    "plan_job",
    "read_partitions",
    "run_job",
]

DEFAULT_PARTITION_BLOCKS = 8_192
"""Blocks per partition of a node scan [blocks]: an era1 file's worth, about 660,000 credits."""
MANIFEST_SECONDS = 2.0  # [s] the manifest is rewritten at most this often while a job runs
PROGRESS_SECONDS = 1.0  # [s] the bar's credits are asked of the scheduler this often
_FORMAT = 1
WRITER, ROWS, SPENT, LINKS = "feeslab_run", "feeslab_rows", "feeslab_credits", "feeslab_links"
# a partition file's attrs: who wrote it, what it cost and an era1 file's end links, read back
# when a killed attempt wrote the file before it could answer
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt() parameters
_MMAP_THRESHOLD_MAX = 32 * 2**20  # [bytes] where glibc's own sliding thresholds stop (64-bit),
_TRIM_THRESHOLD_MAX = 2 * _MMAP_THRESHOLD_MAX  # which a process dask did not start reaches
_MMAP_THRESHOLD_FIXED = 128 * 2**10  # [bytes] glibc's default, fixed once any threshold is set


@dataclass(frozen=True)
class Partition:
    """One task of a job: blocks ``start`` .. ``stop - 1``, from ``file`` (era1) or a node;
    for a series of blocks (storage, calls), ``blocks`` are those of the series in that range,
    in the series' order."""

    start: int
    stop: int
    file: str | None = None
    credits: int = 0  # planned [credits]
    blocks: tuple[int, ...] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """The partition's file name in the job's directory."""
        return f"part-{self.start:09d}-{self.stop - 1:09d}.parquet"


@dataclass(frozen=True, repr=False)
class JobPlan:
    """The whole job, planned before anything runs.

    Attributes
    ----------
    job : str
        The job's identity (dataset, range, chain): what the directory is named by.
    plan : Plan
        The credits the whole job costs (the dataset's plan, as one process would run it).
    partitions : tuple of Partition
        In block order.
    out : Path
        The job's directory (partition files and ``_manifest.json``).
    context : mapping of int to object, or None
        What the plan learnt that the partitions reuse (an uncle scan's sampled uncle
        counts by block), handed to each partition's task for its range.
    bought : int
        Credits the driver spent while planning (an uncle scan's sample), part of
        ``plan.total`` the workers do not spend again [credits].
    """

    job: str
    dataset: str
    start: int
    stop: int
    plan: Plan
    partitions: tuple[Partition, ...]
    out: Path
    context: Mapping[int, object] | None = field(default=None, compare=False)
    bought: int = 0

    def done(self) -> list[Partition]:
        """The partitions whose file is already written (one directory listing)."""
        present = {p.name for p in self.out.glob("part-*.parquet")} if self.out.is_dir() else set()
        return [p for p in self.partitions if p.name in present]

    def __repr__(self) -> str:
        done = len(self.done())
        return (f"<JobPlan {self.dataset} of blocks {self.start:,} to {self.stop - 1:,}: "
                f"{len(self.partitions)} partitions ({done} written), "
                f"{self.plan.total:,} credits, in {self.out}>")  # fmt: skip


@dataclass(frozen=True)
class JobReport:
    """What a cluster job did.

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


@dataclass(frozen=True, repr=False)
class JobResult:
    """A frame computed on a cluster: the one-process frame, its plan and the run's report.

    Attributes
    ----------
    frame : pandas.DataFrame
        The rows of every partition, in block order, ``attrs`` as one process sets them.
    plan : Plan
        The credits the whole job was planned to cost.
    report : JobReport
    value : object
        What the dataset gives in one process, row for row, dtypes and ``attrs`` included:
        the frame, or e.g. an ``UncleScan`` (with this ``report``).
    """

    frame: pd.DataFrame
    plan: Plan
    report: JobReport
    value: object = None

    def __repr__(self) -> str:
        return (f"<JobResult {len(self.frame):,} rows, {len(self.report.computed)} partitions "
                f"computed, {len(self.report.skipped)} skipped, {self.report.credits:,} "
                "credits>")  # fmt: skip


class JobSpec:
    """How one dataset runs as a cluster job: a small description the runner follows.

    A spec is a frozen dataclass of the dataset's parameters (it is pickled to every
    worker). The runner plans the whole job on the driver (:meth:`plan_job`: by default the
    dataset's plan of the whole, of each partition, cut with :meth:`cut` on a node or by era1
    file), computes each partition on a worker with :meth:`compute`, writes the frame as
    Parquet, and hands the partitions' frames, concatenated in block order, to
    :meth:`finish`.
    """

    name: ClassVar[str]

    def span(self) -> Partition:
        """The whole job as one partition (its blocks, or its series)."""
        raise NotImplementedError

    def key(self) -> str:
        """The parameters that make two jobs of the same blocks differ (in the job's name)."""
        return ""

    def plan(self, source: Source, part: Partition) -> Plan:
        """What one process pays for ``part`` [credits] (on the driver)."""
        raise NotImplementedError

    def plan_job(self, source: Source, *, out: str | os.PathLike[str] | None,
                 partition_blocks: int, budget: int | None) -> JobPlan:  # fmt: skip
        """The whole job's plan and partitions (:func:`plan_job`)."""
        return _plan_partitions(self, source, out=out, partition_blocks=partition_blocks)

    def cut(self, whole: Partition, size: int) -> list[Partition]:
        """A node job's partitions of about ``size`` blocks, in block order (credits unset)."""
        return [Partition(lo, min(whole.stop, lo + size))
                for lo in range(whole.start, whole.stop, size)]  # fmt: skip

    def part_context(self, context: Mapping[int, object] | None,
                     part: Partition) -> Mapping[int, object] | None:  # fmt: skip
        """What ``part``'s task needs of the plan's ``context``."""
        return None

    def compute(self, source: Source, part: Partition,
                context: Mapping[int, object] | None) -> pd.DataFrame:  # fmt: skip
        """``part``'s rows, by the dataset's own code (on a worker; ``source`` reads that
        partition's era1 file or the node, with no cache)."""
        raise NotImplementedError

    def finish(self, source: Source, frame: pd.DataFrame, job: JobPlan,
               report: JobReport) -> JobResult:  # fmt: skip
        """The result from the partitions' rows (attrs not yet set): the frame tagged as one
        process tags it, by default."""
        frame = _tag(source, frame)
        return JobResult(frame=frame, plan=job.plan, report=report, value=frame)


_NodeSpec = NodeSpec  # how a worker reaches the node: what it opens with open_node


@dataclass(frozen=True)
class _Task:
    """What every partition task of one run shares."""

    spec: JobSpec
    out: str
    bucket: str
    workers: int
    node: _NodeSpec | None = None
    run: str = ""  # this run of the job: a partition file names the run that wrote it
    tune_malloc: bool = True  # glibc's heap as in a process dask did not start (_process_heap)
    write_behind: bool = False  # the file's disk write left to the process's writer (_Writes)


# -- the plan ------------------------------------------------------------------------------------


def _job_id(dataset: str, start: int, stop: int, where: str) -> str:
    digest = hashlib.sha256(f"{dataset}|{start}|{stop}|{where}".encode()).hexdigest()[:16]
    return f"{dataset}-{start}-{stop}-{digest}"


def _era1_partitions(source: Source, start: int, stop: int) -> tuple[list[Partition], str]:
    """One partition per era1 file a range touches, and what names them in the job's id."""
    from feeslab.sources.era1 import Era1Source

    if not isinstance(source, Era1Source):
        raise ConfigError(f"a cluster job reads a node or era1 files, not {source!r}")
    parts = []
    for first, after, path in source.ranges():
        lo, hi = max(start, first), min(stop, after)
        if lo < hi:
            parts.append(Partition(lo, hi, file=str(path)))
    source.covering(start, stop)  # every block covered, or Era1Error naming the gap
    return parts, "era1:" + ",".join(Path(p.file).name for p in parts)  # type: ignore[arg-type]


def _directory(out: str | os.PathLike[str] | None, job: str) -> Path:
    return Path(out) if out is not None else default_cache_dir() / "jobs" / job


def _check_size(partition_blocks: object) -> None:
    if (not isinstance(partition_blocks, int) or isinstance(partition_blocks, bool)
            or partition_blocks < 1):  # fmt: skip
        raise ValueError(f"partition_blocks must be a positive int, not {partition_blocks!r}")


def plan_job(
    spec: JobSpec,
    source: Source,
    *,
    out: str | os.PathLike[str] | None = None,
    partition_blocks: int = DEFAULT_PARTITION_BLOCKS,
    budget: int | None = None,
) -> JobPlan:
    """The whole job's plan (what one process would pay) and its partitions.

    Parameters
    ----------
    spec : JobSpec
        The dataset and its parameters (e.g. :class:`feeslab.cluster.datasets.BlocksJob`).
    source : RpcSource or Era1Source
    out : path, optional
        The job's directory; default ``<cache>/jobs/<job>`` (``$FEESLAB_CACHE_DIR``).
    partition_blocks : int
        Blocks per partition of a node job [blocks] (of a series: its blocks); era1 files
        are one partition each.
    budget : int, optional
        Refuse (``BudgetExceeded``) before a plan that buys a sample (uncles) buys it.
    """
    _check_size(partition_blocks)
    return spec.plan_job(source, out=out, partition_blocks=partition_blocks, budget=budget)


def _plan_partitions(spec: JobSpec, source: Source, *, out: str | os.PathLike[str] | None,
                     partition_blocks: int) -> JobPlan:  # fmt: skip
    """The dataset's plan of the whole job and of each partition."""
    whole = spec.span()
    plan = spec.plan(source, whole)  # the dataset's own checks: a range, a node, its arguments
    if JSON_RPC not in source.offers():  # files: one partition each
        parts, where = _era1_partitions(source, whole.start, whole.stop)
    else:
        parts = spec.cut(whole, partition_blocks)
        # the chain (id and genesis hash), and the partitioning, which names the files
        where = f"{source.label}:{_node_of(source).node.identity}:{partition_blocks}"
    parts = [replace(p, credits=spec.plan(source, p).total) for p in parts]
    key = spec.key()
    job = _job_id(spec.name, whole.start, whole.stop, f"{where}|{key}" if key else where)
    return JobPlan(job, spec.name, whole.start, whole.stop, plan, tuple(parts),
                   _directory(out, job))  # fmt: skip


_PLANNED = ("file", "start", "stop", "planned_credits", "written")


def _check_manifest(job: JobPlan) -> dict[str, dict[str, Any]]:
    """Refuse a directory that holds another job's partitions; what an earlier run of this
    job noted of the partitions it wrote (rows, credits, seconds), by file name."""
    path = job.out / MANIFEST
    if not path.exists():
        return {}
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a feeslab job manifest ({exc})") from None
    if old.get("job") != job.job:
        raise ConfigError(f"{job.out} holds the partitions of another job ({old.get('job')!r}, "
                          f"not {job.job!r}): give another out=")  # fmt: skip
    return {entry["file"]: {k: v for k, v in entry.items() if k not in _PLANNED}
            for entry in old.get("partitions", []) if entry.get("written")}  # fmt: skip


def _write_manifest(job: JobPlan, written: dict[str, dict[str, Any]],
                    done: Sequence[Partition]) -> None:  # fmt: skip
    """``_manifest.json``: the job, its partitions and which are written (``done`` when the run
    began, and ``written`` since), atomically."""
    found = {p.name for p in done} | set(written)
    body = {
        "format": _FORMAT, "job": job.job, "dataset": job.dataset,
        "start": job.start, "stop": job.stop, "planned_credits": job.plan.total,
        "partitions": [
            {"file": p.name, "start": p.start, "stop": p.stop, "planned_credits": p.credits,
             "written": p.name in found, **written.get(p.name, {})}
            for p in job.partitions
        ],
    }  # fmt: skip
    handle, temporary = tempfile.mkstemp(dir=job.out, prefix=f".{MANIFEST}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as file:
            json.dump(body, file, indent=1)
        os.replace(temporary, job.out / MANIFEST)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read_partitions(out: str | os.PathLike[str]) -> pd.DataFrame:
    """Every written partition of the job in ``out``, in block order, exact ints kept."""
    out = Path(out)
    paths = sorted(out.glob("part-*.parquet"))
    if not paths:
        raise ConfigError(f"no partition files (part-*.parquet) in {out}")
    return _concat([_read_partition(p) for p in paths])


def _write_partition(frame: pd.DataFrame, path: Path, spent: int, run: str,
                     links: dict[str, str] | None = None) -> None:  # fmt: skip
    """``frame`` as ``path`` (``feeslab.frames.partitions``), saying the run that wrote it,
    its rows, the credits they cost and an era1 file's end links; without the frame's own
    ``attrs`` (the driver tags the whole frame)."""
    write_partition(frame, path, _attrs(frame, spent, run, links or {}))


def _attrs(frame: pd.DataFrame, spent: int, run: str,
           links: dict[str, str]) -> dict[str, object]:  # fmt: skip
    """What a partition file says of itself: the run that wrote it, its rows, the credits
    they cost, an era1 file's end links."""
    return {WRITER: run, ROWS: len(frame), SPENT: spent, LINKS: links}


_read_partition = read_partition
_concat = concat_partitions


# -- on a worker -----------------------------------------------------------------------------


def _node_source(task: _Task) -> RpcSource:
    """A worker's source for one partition: the driver's spec opened (no cache; what the
    driver knows answered without asking), paced by the cluster's bucket."""
    from distributed import get_worker

    from feeslab.cluster._governor import ClusterGovernor

    spec = task.node
    assert spec is not None
    bucket = ClusterGovernor(get_worker(), task.bucket, spec.credits_per_second or math.inf,
                             task.workers)  # fmt: skip
    return open_node(spec, bucket=bucket)


def _check_links(job: JobPlan, noted: dict[str, dict[str, Any]]) -> None:
    """Each era1 file's first parent is the previous file's last hash, as one process checks."""
    from feeslab.sources.era1 import Era1Error

    for before, after in itertools.pairwise(job.partitions):
        last = noted.get(before.name, {}).get("last_hash")
        parent = noted.get(after.name, {}).get("first_parent")
        if last is not None and parent is not None and last != parent:
            raise Era1Error(f"{Path(after.file or '').name}: block {after.start:,}: its "
                            "parentHash is not the previous file's last hash",
                            path=after.file, block=after.start)  # fmt: skip


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The C library if it is glibc (its ``mallopt``), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 (glibc's own symbol: not musl)
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def _nanny_worker() -> bool:
    """Whether this runs on a worker process a nanny started (with the nanny's environment
    from its start; a worker in the driver's process, ``processes=False``, is not one)."""
    try:
        from distributed import get_worker

        return get_worker().nanny is not None
    except (ImportError, ValueError):  # not on a worker
        return False


_heap_lock = threading.Lock()
_heap_users = 0  # partitions running in this process under _process_heap, all threads


@contextmanager
def _process_heap(enabled: bool = True) -> Iterator[None]:
    """glibc's allocator as in a process dask did not start, while partitions run.

    A dask nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536`` (to hand freed
    memory back to the system). Setting any threshold fixes glibc's mmap threshold at
    128 KiB: every buffer above it (an era1 file's header columns, a Parquet page) is mapped,
    zero-filled and unmapped afresh, where a process started without it reuses its heap. A
    worker's era1 scan did 0.6x one process's work per CPU second (``benchmarks/cluster.py``).
    So while partitions run, the thresholds are where glibc's own sliding ones end; when the
    last ends, dask's are put back (the next ``free`` at the heap's top returns memory). A
    process-wide change, made only in a worker a nanny started with
    ``MALLOC_TRIM_THRESHOLD_`` set, on glibc; ``run_job(tune_malloc=False)`` turns it off.
    """
    global _heap_users
    libc = _glibc() if enabled and _nanny_worker() else None
    try:
        trim = int(os.environ["MALLOC_TRIM_THRESHOLD_"])
        mmap = int(os.environ.get("MALLOC_MMAP_THRESHOLD_", _MMAP_THRESHOLD_FIXED))
    except (KeyError, ValueError):  # started without: glibc's thresholds still slide
        libc = None
    if libc is None:
        yield
        return
    with _heap_lock:
        if _heap_users == 0:
            libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)
            libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD_MAX)
        _heap_users += 1
    try:
        yield
    finally:
        with _heap_lock:
            _heap_users -= 1
            if _heap_users == 0:
                libc.mallopt(_M_MMAP_THRESHOLD, mmap)
                libc.mallopt(_M_TRIM_THRESHOLD, trim)


def run_partition(task: _Task, part: Partition,
                  context: Mapping[int, object] | None) -> dict[str, Any]:  # fmt: skip
    """One partition, on a worker: its rows (``task.spec.compute``) written to ``part.name``
    (atomically), unless an earlier attempt wrote them. Returns what it did, with the rows
    it computed as ``frame`` (the driver need not read the file back); a feeslab error (a
    budget refused, a 402, a damaged file) as data, raised again on the driver with its type
    and attributes. ``seconds`` and ``cpu_seconds``: the whole task's, the file's writing
    included."""
    began, cpu = time.perf_counter(), time.thread_time()
    with _process_heap(task.tune_malloc):
        done = _run_partition(task, part, context)
    if "frame" in done:  # computed here (not an error, nor a file found written)
        done.update(seconds=round(time.perf_counter() - began, 4),
                    cpu_seconds=round(time.thread_time() - cpu, 4))  # fmt: skip
    return done


def _run_partition(task: _Task, part: Partition,
                   context: Mapping[int, object] | None) -> dict[str, Any]:  # fmt: skip
    path = Path(task.out) / part.name
    if path.exists():
        written = frame_from_bytes(path.read_bytes()).attrs
        if written.get(WRITER) != task.run:  # another run's (a killed job's task finishing)
            return {"file": part.name, "skipped": True}
        # this run's attempt, killed after the file's rename, before its answer: the file
        # says what it read and spent
        return {"file": part.name, "rows": written.get(ROWS, 0), "credits": written.get(SPENT, 0),
                **written.get(LINKS, {}), "earlier_attempt": True}  # fmt: skip
    from feeslab.sources.era1 import Era1Source

    files: Era1Source | None = None
    node: RpcSource | None = None
    try:
        if part.file is not None:
            files = Era1Source(part.file)
            frame = task.spec.compute(files, part, context)
        else:
            node = _node_source(task)
            frame = task.spec.compute(node, part, context)
    except FeeslabError as exc:
        # handed back as data, raised on the driver (feeslab's errors pickle whole), so that
        # dask neither retries nor logs a user's budget or a 402 as a task failure
        return {"file": part.name, "error": exc}
    finally:
        for opened in (files, node):
            if opened is not None:
                opened.close()
    # an era1 file's end links, as its read noted them (checked across files on the driver)
    links = {} if files is None or part.file is None else files.ends[Path(part.file)]
    spent = 0 if node is None else node.credits.spent
    data = partition_bytes(frame, _attrs(frame, spent, task.run, links))
    if task.write_behind:
        _WRITES.submit(task.run, data, path)
    else:
        write_bytes(data, path)
    frame.attrs.clear()  # as _read_partition gives it
    return {"file": part.name, "rows": len(frame), "credits": spent, **links, "frame": frame}


@dataclass
class _RunWrites:
    """One run's partition writes in this process: how many are pending, and the CPU seconds
    each took, by file name [s]."""

    pending: int = 0
    cpu: dict[str, float] = field(default_factory=dict)


class _Writes:
    """A worker's partition files written to the disk on a thread of its own (write-behind).

    A partition's file is encoded by its task, but written, flushed (``fsync``: 3-15 ms a
    file, waiting on the disk) and renamed here, while the worker's next partition is
    computed. The driver :meth:`settle`s a run's writes on every worker once the tasks have
    answered, and writes any file still missing (a worker gone since) from the rows it was
    handed. So when a job ends every file is on the disk, and a file under its name is whole.
    """

    KEPT_RUNS = 64  # runs whose writes are noted (a dead driver's are never settled)

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._pool: ThreadPoolExecutor | None = None
        self._runs: OrderedDict[str, _RunWrites] = OrderedDict()

    def submit(self, run: str, data: bytes, path: Path) -> None:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="feeslab-writes")
            if run not in self._runs:
                self._runs[run] = _RunWrites()
                while len(self._runs) > self.KEPT_RUNS:
                    self._runs.popitem(last=False)
            self._runs[run].pending += 1
            self._pool.submit(self._write, self._runs[run], data, path)

    def _write(self, noted: _RunWrites, data: bytes, path: Path) -> None:
        cpu = time.thread_time()
        try:
            write_bytes(data, path)
        except OSError:  # the file stays missing: the driver writes it (or raises the error)
            pass
        finally:
            with self._lock:
                noted.cpu[path.name] = time.thread_time() - cpu
                noted.pending -= 1
                self._lock.notify_all()

    def settle(self, run: str) -> dict[str, dict[str, float]]:
        """Once ``run``'s writes in this process are done (written, or failed): the CPU
        seconds each took, by file name (``cpu``)."""
        with self._lock:
            noted = self._runs.get(run)
            if noted is None:
                return {"cpu": {}}
            self._lock.wait_for(lambda: noted.pending == 0)
            self._runs.pop(run, None)
        return {"cpu": noted.cpu}


_WRITES = _Writes()  # this process's (a worker's) partition writes


async def _settle_writes(run: str) -> dict[str, dict[str, float]]:
    """On a worker (``client.run``): :meth:`_Writes.settle` of ``run``, waited for on a thread,
    so that the worker's event loop (its heartbeats, other jobs' tasks) never waits on a disk."""
    import asyncio

    return await asyncio.to_thread(_WRITES.settle, run)


# -- on the driver -------------------------------------------------------------------------


def _node_spec(source: RpcSource) -> NodeSpec:
    """What a worker opens to reach ``source``'s node: the spec the Lab was opened from, paced
    at the rate it settled on (a devnet's own, once told), with what the driver knows (chain,
    head, devnet or not); no cache, no progress bars, no Gas API, no credentials beyond the
    URL's."""
    spec = source.node_spec
    if spec is None:
        raise ConfigError(f"a cluster job needs a node opened by connect() (open_node), not "
                          f"{source!r} built by hand")  # fmt: skip
    if spec.websocket:
        raise ConfigError("a cluster scan reaches the node over HTTP(S): connect() without "
                          "websocket=True")  # fmt: skip
    return replace(
        spec, credits_per_second=source.paced_at(timeout=5.0), devnet_root=None, api_key=None,
        api_key_secret=None, gas_url=None, cache=False, progress=False,
        devnet=source.is_devnet, chain_id=source.chain_id(), head=source.head())


def _settle(client: Any, job: JobPlan, run: str, written: dict[str, dict[str, Any]],
            frames: dict[str, pd.DataFrame]) -> None:  # fmt: skip
    """Every file this run's tasks computed on the disk: each worker's writes waited for
    (:class:`_Writes`; their CPU added to the partition's ``cpu_seconds``), then any file
    still missing (its worker gone since, or its write failed there) written here from the
    rows its task handed back."""
    for answer in client.run(_settle_writes, run, on_error="return").values():
        if not isinstance(answer, dict):  # a worker gone meanwhile: its files are checked below
            continue
        for name, cpu in answer["cpu"].items():
            if "cpu_seconds" in written.get(name, {}):
                written[name]["cpu_seconds"] = round(written[name]["cpu_seconds"] + cpu, 4)
    for name, frame in frames.items():
        if not (job.out / name).exists():
            noted = written[name]
            links: dict[str, str] = {k: noted[k] for k in ("first_parent", "last_hash")
                                     if k in noted}  # fmt: skip
            _write_partition(frame.copy(deep=False), job.out / name, noted["credits"], run,
                             links)  # fmt: skip


def _tag(source: Source, frame: pd.DataFrame) -> pd.DataFrame:
    return source.tag(frame)  # Era1Source and RpcSource alike


def _node_of(source: Source) -> RpcSource:
    """The node ``source`` asks: itself, or a ``CombinedSource``'s (era1 files beside it)."""
    from feeslab.sources.combined import CombinedSource

    if isinstance(source, RpcSource):
        return source
    if isinstance(source, CombinedSource):
        return source.node_source
    raise ConfigError(f"a cluster job reads a node or era1 files, not {source!r}")


def _rpc_of(connection: object) -> RpcSource:
    """The node source of a Lab or an RpcSource."""
    found = getattr(connection, "data_source", connection)
    if not isinstance(found, RpcSource):
        raise ConfigError(f"keys= takes Labs or RpcSources on a node, not {connection!r}")
    return found


def _node_specs(source: Source,
                keys: Sequence[object]) -> tuple[list[RpcSource], list[NodeSpec]]:  # fmt: skip
    """Every API key's source and what its workers need, all on one chain."""
    if JSON_RPC not in source.offers():
        if keys:
            raise ConfigError("keys= multiplies a node's rate: era1 files need none")
        return [], []
    sources = [_node_of(source), *(_rpc_of(k) for k in keys)]
    specs = [_node_spec(s) for s in sources]
    first = sources[0]
    for other, spec in zip(sources[1:], specs[1:], strict=True):
        if (spec.chain_id, other.label) != (specs[0].chain_id, first.label):
            raise ConfigError(f"every key must reach the same chain: {other!r} is on "
                              f"{other.label} chain {spec.chain_id}, not {first.label} "
                              f"chain {specs[0].chain_id}")  # fmt: skip
    return sources, specs


def _distributed() -> None:
    """ConfigError naming the extra to install, without dask.distributed."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ConfigError("a cluster job needs dask.distributed: pip install 'feeslab[dask]'"
                          ) from None  # fmt: skip


def run_job(
    spec: JobSpec,
    source: Source,
    *,
    client: Any,
    out: str | os.PathLike[str] | None = None,
    budget: int | None = None,
    progress: bool | None = None,
    partition_blocks: int = DEFAULT_PARTITION_BLOCKS,
    keys: Sequence[object] = (),
    planned: JobPlan | None = None,
    tune_malloc: bool = True,
) -> JobResult:
    """Run the job ``spec`` describes on a dask cluster: what ``spec.finish`` makes of it.

    Parameters
    ----------
    spec : JobSpec
        The dataset and its parameters.
    source : RpcSource or Era1Source
        Where the blocks come from (era1 files must be readable by every worker at the
        same path; a node reachable from every worker).
    client : distributed.Client
        The cluster.
    out : path, optional
        The job's directory of partition files, on storage every worker shares; default
        ``<cache>/jobs/<job>``. A rerun skips the partitions already written there.
    budget : int, optional
        The most the job may spend, the driver's plan and every worker together [credits]:
        the plan is refused before anything runs (``BudgetExceeded``), and the cluster's
        bucket refuses any batch that would pass it.
    progress : bool, optional
        A progress bar over the partitions, and the dashboard's address printed (default on).
    partition_blocks : int
        Blocks per partition of a node job [blocks].
    keys : sequence of Lab or RpcSource
        Connections with other API keys to the same chain: the partitions are dealt among
        ``source`` and these in turn, each key paced by its own bucket at its plan's rate
        (so n keys buy n times the credits per second), its spending in its own ledger
        (``lab.credits``); ``budget`` counts them all.
    planned : JobPlan, optional
        What :func:`plan_job` gave for the same arguments.
    tune_malloc : bool
        While a partition runs on a worker a dask nanny started (glibc), its allocator's
        thresholds are those of a process dask did not start (``_process_heap``: dask's
        ``MALLOC_TRIM_THRESHOLD_`` made a worker's era1 scan 0.6x as fast per core); False
        leaves them as dask set them.

    Returns
    -------
    JobResult
        What ``spec.finish`` makes of the partitions' rows: the rows, the plan, the
        :class:`JobReport` and ``value``, what one process gives.
    """
    _distributed()  # or ConfigError naming the extra to install
    from feeslab.cluster import _governor

    began = time.perf_counter()
    sources, specs = _node_specs(source, keys)
    job = planned if planned is not None else plan_job(
        spec, source, out=out, partition_blocks=partition_blocks, budget=budget)
    if budget is not None and job.plan.total > budget:  # a plan made without the budget
        raise BudgetExceeded(planned=job.plan.total, budget=budget)
    job.out.mkdir(parents=True, exist_ok=True)
    noted_before = _check_manifest(job)
    done = job.done()
    todo = [p for p in job.partitions if p not in done]
    written = {p.name: noted_before[p.name] for p in done if p.name in noted_before}
    _write_manifest(job, written, done)
    show = True if progress is None else progress
    dashboard = getattr(client, "dashboard_link", None)
    if show and dashboard:
        print(f"dask dashboard: {dashboard}", file=sys.stderr, flush=True)
    run = f"{job.job}-{uuid.uuid4().hex[:8]}"
    # a bucket per API key; era1 files spend no credits: no bucket, no scheduler calls
    buckets = [f"{run}-key{i}" for i in range(len(specs))]
    reports: list[dict[str, Any]] = []
    frames: dict[str, pd.DataFrame] = {}  # the rows the tasks computed, by file name
    if todo:
        if buckets:
            # the workers' share: the budget less what the plan bought on the driver
            remaining = None if budget is None else budget - job.bought
            _governor.install(client)
            for i, bucket in enumerate(buckets):
                _governor.scheduler_call(
                    client, "open", name=bucket, budget=remaining,
                    credits_per_second=specs[i].credits_per_second,
                    group=buckets[0] if i else None)  # fmt: skip
        threads = max(1, sum(client.nthreads().values())) if specs else 1
        task = _Task(spec, str(job.out), buckets[0] if buckets else "", threads, run=run,
                     tune_malloc=tune_malloc, write_behind=True)  # fmt: skip
        tasks = [replace(task, bucket=buckets[i % len(buckets)], node=specs[i % len(specs)])
                 if specs else task for i in range(len(todo))]  # fmt: skip
        # one graph for all the partitions (one message to the scheduler, not one each)
        futures = client.map(run_partition, tasks, todo,
                             [spec.part_context(job.context, p) for p in todo],
                             key=[f"feeslab-{run}-{p.name}" for p in todo], pure=False)  # fmt: skip
        arrived: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for future in futures:  # told as each ends, not polled
            future.add_done_callback(arrived.put)
        pending = set(futures)  # a future let go of once gathered: its worker drops the rows
        del futures
        bar = None
        if show:
            from feeslab._progress import progress_bar

            bar = progress_bar(total=len(job.partitions), initial=len(done),
                               description="partitions", unit="part")  # fmt: skip
        noted = time.monotonic()

        def finished() -> Iterator[dict[str, Any]]:
            """The tasks' answers as they end, those ended together gathered in one round
            trip; meanwhile the bar shows the credits spent (asked every PROGRESS_SECONDS)."""
            asked = time.monotonic()
            wait = PROGRESS_SECONDS if bar is not None and specs else None
            while pending:
                ready = []
                with contextlib.suppress(queue.Empty):
                    ready.append(arrived.get(timeout=wait))
                    while len(ready) < len(pending):
                        ready.append(arrived.get_nowait())
                pending.difference_update(ready)
                if ready:
                    answers = client.gather(ready)
                    del ready
                    yield from answers
                if wait is not None and time.monotonic() - asked >= PROGRESS_SECONDS:
                    spent = sum((_governor.scheduler_call(client, "report", name=b) or {})
                                .get("spent", 0) for b in buckets)  # fmt: skip
                    bar.set_postfix(credits=f"{spent:,}", refresh=True)  # type: ignore[union-attr]
                    asked = time.monotonic()

        try:
            for answer in finished():
                if "error" in answer:
                    raise answer["error"]
                name = answer.pop("file")
                if "frame" in answer:
                    frames[name] = answer.pop("frame")
                written[name] = answer
                if time.monotonic() - noted > MANIFEST_SECONDS:  # not once a partition: n^2
                    _write_manifest(job, written, done)
                    noted = time.monotonic()
                if bar is not None:
                    bar.update(1)
            _settle(client, job, run, written, frames)
        except BaseException as exc:
            client.cancel(list(pending))
            if isinstance(exc, Exception):  # the partitions computed are kept all the same
                with contextlib.suppress(Exception):
                    _settle(client, job, run, written, frames)
            raise
        finally:
            _write_manifest(job, written, done)
            if bar is not None:
                bar.close()
            reports = [_governor.scheduler_call(client, "close", name=b) or {} for b in buckets]
            for own, report in zip(sources, reports, strict=False):
                for method, n in report.get("calls", {}).items():  # each key's own ledger
                    own.credits.record_request([method] * n, 200)
    _check_links(job, written)
    # the rows the tasks handed back; only files found written are read
    frame = _concat([frames.pop(p.name) if p.name in frames else _read_partition(job.out / p.name)
                     for p in job.partitions])  # fmt: skip
    calls: Counter[str] = Counter()
    for report in reports:
        calls.update(report.get("calls", {}))
    result = JobReport(
        out=job.out, computed=tuple(p.name for p in todo if not written[p.name].get("skipped")),
        skipped=tuple(p.name for p in job.partitions
                      if p in done or written[p.name].get("skipped")),
        credits=sum(r.get("spent", 0) for r in reports),
        rate_limited=sum(r.get("refusals", 0) for r in reports),
        seconds=time.perf_counter() - began, dashboard=dashboard, calls=dict(calls),
        keys=tuple({k: r.get(k, 0) for k in ("spent", "refusals", "requests")} for r in reports),
    )  # fmt: skip
    return spec.finish(source, frame, job, result)

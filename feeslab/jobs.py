"""A dataset's fetch as a job of partitions: one plan, one Parquet file a partition, resumed
from the files; the runner apart from the executor that computes the partitions.

A job is one dataset's fetch (:class:`DatasetJob`: the dataset and its parameters), planned
whole before anything runs (:func:`plan_job`: the dataset's own plan, or its ``plan_parts``
for a plan that buys a sample once) and cut into partitions: one a file for a source of files
(era1), one per ``partition_blocks`` blocks for a node, a series of blocks by block. Each
partition is computed by the dataset's own fetch (``feeslab.datasets.registry.rows``: the
engine's chunks, in one process) and written to ``part-<first>-<last>.parquet`` in the job's
directory atomically (a temporary file renamed over the name). A partition whose file exists
is done: a rerun of a killed job skips it and spends nothing for it, whichever executor ran
it. :func:`run_job` is the one runner; an :class:`Executor` computes the partitions:

- :class:`InProcess` here, one after the other (``lab.<dataset>(..., out=)``);
- ``feeslab.cluster.executor.Dask`` on a dask cluster's workers (``client=``), every worker's
  requests paced by one bucket on the scheduler.

This module sits above ``feeslab.datasets`` (it runs their declarations) and below
``feeslab.cluster`` (whose executor it does not know).

Partitions read no SQLite cache: the partition files are the settled answers, so no two
processes ever write one cache. The driver's own cache keeps an uncle plan's sample, which
each partition is handed for its range, so a job buys exactly the calls one process would.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import hashlib
import itertools
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

from feeslab.engine.report import JobReport
from feeslab.errors import BudgetExceeded, ConfigError, FeeslabError
from feeslab.fetch.cache import default_cache_dir
from feeslab.fetch.credits import Plan
from feeslab.frames.io import frame_from_bytes, write_bytes
from feeslab.frames.partitions import (
    JOB,
    MANIFEST,
    concat_partitions,
    partition_bytes,
    read_partition,
    write_partition,
)
from feeslab.sources.base import JSON_RPC, Source

if TYPE_CHECKING:
    from feeslab.datasets.registry import Dataset
    from feeslab.sources.base import Node
    from feeslab.sources.rpc import RpcSource
    from feeslab.sources.spec import NodeSpec

__all__ = [
    "DEFAULT_PARTITION_BLOCKS",
    "MANIFEST",
    "DatasetJob",
    "Executor",
    "InProcess",
    "JobPlan",
    "JobReport",
    "JobResult",
    "Partition",
    "Task",
    "plan",
    "plan_job",
    "read_partitions",
    "run",
    "run_job",
    "run_partition",
    "settle_writes",
]

DEFAULT_PARTITION_BLOCKS = 8_192
"""Blocks per partition of a node scan [blocks]: an era1 file's worth, about 660,000 credits."""
MANIFEST_SECONDS = 2.0  # [s] the manifest is rewritten at most this often while a job runs
_FORMAT = 1
WRITER, ROWS, SPENT, LINKS = "feeslab_run", "feeslab_rows", "feeslab_credits", "feeslab_links"
# a partition file's attrs: who wrote it, what it cost and an era1 file's end links, read back
# when a killed attempt wrote the file before it could answer
RUN_OPTIONS = ("budget", "progress")  # fetch parameters that are the run's, not the job's

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


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class DatasetJob:
    """Dataset ``dataset`` (a name in ``feeslab.datasets.REGISTRY``) with ``params`` as a job
    of partitions (pickled to every worker: the name, not the declaration, travels; a
    dataset of one's own reaches workers by ``FEESLAB_DATASETS``)."""

    dataset: str
    params: tuple[tuple[str, object], ...]

    @classmethod
    def of(cls, dataset: Dataset | str, *args: Any, **kwargs: Any) -> tuple[DatasetJob,
                                                                             dict[str, Any]]:
        """The job of ``dataset`` with a call's arguments, and the run's options
        (``budget``, ``progress``)."""
        from feeslab.datasets import REGISTRY

        found = REGISTRY[dataset] if isinstance(dataset, str) else dataset
        if found.partitions is None:
            raise ConfigError(f"{found.name} runs in one process: it has no partitions")
        params = found.bind(*args, **kwargs)
        options = {k: params.pop(k) for k in RUN_OPTIONS if k in params}
        if found.context is not None:
            params.pop(found.context, None)
        for name, value in params.items():  # sequences as tuples: hashable, picklable
            if isinstance(value, (list, range)):
                params[name] = tuple(value)
        job = cls(found.name, tuple(params.items()))
        job.span()  # an empty series or a bad range refused here, not on the workers
        return job, options

    @property
    def name(self) -> str:
        """The dataset's name."""
        return self.dataset

    @property
    def declared(self) -> Dataset:
        """The dataset's declaration."""
        from feeslab.datasets import REGISTRY

        return REGISTRY[self.dataset]

    def arguments(self) -> dict[str, object]:
        """The job's parameters as the dataset's fetch takes them."""
        return dict(self.params)

    def span(self) -> Partition:
        """The whole job as one partition (its blocks, or its series)."""
        from feeslab.datasets import registry

        partitions = self.declared.partitions
        assert partitions is not None
        params = self.arguments()
        start, stop = partitions.span(params)
        if partitions.kind == "range":
            return Partition(start, stop)
        return Partition(start, stop, blocks=tuple(registry.blocks_of(params["blocks"])))

    def key(self) -> str:
        """The parameters that make two jobs of the same blocks differ (in the job's name)."""
        params = self.arguments()
        if self.declared.partitions is not None and self.declared.partitions.kind == "range":
            params.pop("start"), params.pop("stop")
        return _digest(params) if params else ""

    def _narrow(self, part: Partition) -> dict[str, object]:
        partitions = self.declared.partitions
        assert partitions is not None
        return partitions.narrow(self.arguments(), part.start, part.stop, part.blocks)

    def plan(self, source: Source, part: Partition) -> Plan:
        """What one process pays for ``part`` [credits] (on the driver)."""
        from feeslab.datasets import registry

        # the workers read no cache: the cost from scratch, where the plan can leave it out
        params = {**self._narrow(part), "less_cached": False}
        return registry.plan(self.declared, source, params)

    def plan_job(self, source: Source, *, out: str | os.PathLike[str] | None,
                 partition_blocks: int, budget: int | None) -> JobPlan:  # fmt: skip
        """The whole job's plan and partitions (:func:`plan_job`)."""
        from feeslab.datasets import registry

        declared = self.declared
        if declared.plan_parts is None or registry.holds(source, declared):
            return _plan_partitions(self, source, out=out, partition_blocks=partition_blocks)
        whole = self.span()
        parts = self.cut(whole, partition_blocks)
        params = self.arguments()
        # the in-process plan's one cutoff check (EIP-4444): a range below a pruned node's
        # history is refused before the sample is bought, and a probe it sent is counted
        plan_parts = declared.plan_parts
        made, probe = registry.guarded_plan(declared, source, params, lambda: plan_parts(
            source, params, [(p.start, p.stop) for p in parts], budget))
        if probe.lines:
            made = dataclasses.replace(made, plan=_with(made.plan, probe),
                                       bought=made.bought + probe.total)
        parts = [dataclasses.replace(p, credits=c) for p, c in zip(parts, made.credits,
                                                                    strict=True)]
        where = f"{source.label}:{source.identity}:{partition_blocks}"
        job = _job_id(self.name, whole.start, whole.stop, _where(where, self.key()))
        return JobPlan(job, self.name, whole.start, whole.stop, made.plan, tuple(parts),
                       _directory(out, job), context=dict(made.context),
                       bought=made.bought)  # fmt: skip

    def cut(self, whole: Partition, size: int) -> list[Partition]:
        """A node job's partitions of about ``size`` blocks, in block order (credits unset)."""
        partitions = self.declared.partitions
        assert partitions is not None
        if partitions.kind == "series":
            return _cut_series(whole, size)
        if partitions.align > 1:  # whole calls, counted from the stop down
            size = -(-size // partitions.align) * partitions.align
            cuts = [*range(whole.stop, whole.start, -size), whole.start]
            return [Partition(lo, hi) for hi, lo in itertools.pairwise(cuts)][::-1]
        return [Partition(lo, min(whole.stop, lo + size))
                for lo in range(whole.start, whole.stop, size)]  # fmt: skip

    def part_context(self, context: Mapping[int, object] | None,
                     part: Partition) -> Mapping[int, object] | None:  # fmt: skip
        """What ``part``'s task needs of the plan's ``context``."""
        if self.declared.context is None:
            return None
        return {n: c for n, c in (context or {}).items() if part.start <= n < part.stop}

    def compute(self, source: Source, part: Partition,
                context: Mapping[int, object] | None) -> pd.DataFrame:  # fmt: skip
        """``part``'s rows, by the dataset's own fetch (``source`` reads that partition's
        file or the node, with no cache)."""
        from feeslab.datasets import registry

        params = {**self._narrow(part), "progress": False}
        if self.declared.context is not None and context:
            # what the driver bought while planning (a sample): not asked for again
            params[self.declared.context] = context
        return registry.rows(self.declared, source, params)

    def finish(self, source: Source, frame: pd.DataFrame, job: JobPlan,
               report: JobReport) -> JobResult:  # fmt: skip
        """The result from the partitions' rows: what one process gives."""
        from feeslab.datasets import registry

        rows = source.tag(frame)
        _describe(job.out, self.dataset, self.arguments(), rows.attrs)
        value = registry.assemble(self.declared, source, rows, self.arguments(), job.plan)
        if dataclasses.is_dataclass(value) and hasattr(value, "report"):
            value = dataclasses.replace(value, report=report)  # type: ignore[type-var]
        return JobResult(frame=rows, plan=job.plan, report=report, value=value)


@dataclass(frozen=True)
class Task:
    """What every partition task of one run shares.

    ``open_node(task)`` opens the node on the process computing a partition (a worker's:
    paced by its cluster's bucket ``bucket``); ``write_behind``: the file's disk write left to
    the process's writer (:class:`_Writes`)."""

    spec: DatasetJob
    out: str
    bucket: str = ""
    workers: int = 1
    node: NodeSpec | None = None
    run: str = ""  # this run of the job: a partition file names the run that wrote it
    write_behind: bool = False
    open_node: Callable[[Task], RpcSource] | None = None
    source: Source | None = field(default=None, compare=False)  # in process: the driver's


# -- the plan ------------------------------------------------------------------------------------


def _job_id(dataset: str, start: int, stop: int, where: str) -> str:
    digest = hashlib.sha256(f"{dataset}|{start}|{stop}|{where}".encode()).hexdigest()[:16]
    return f"{dataset}-{start}-{stop}-{digest}"


def _directory(out: str | os.PathLike[str] | None, job: str) -> Path:
    return Path(out) if out is not None else default_cache_dir() / "jobs" / job


def _check_size(partition_blocks: object) -> None:
    if (not isinstance(partition_blocks, int) or isinstance(partition_blocks, bool)
            or partition_blocks < 1):  # fmt: skip
        raise ValueError(f"partition_blocks must be a positive int, not {partition_blocks!r}")


def plan_job(
    spec: DatasetJob,
    source: Source,
    *,
    out: str | os.PathLike[str] | None = None,
    partition_blocks: int = DEFAULT_PARTITION_BLOCKS,
    budget: int | None = None,
) -> JobPlan:
    """The whole job's plan (what one process would pay) and its partitions.

    Parameters
    ----------
    spec : DatasetJob
        The dataset and its parameters.
    source : Source
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


def _plan_partitions(spec: DatasetJob, source: Source, *, out: str | os.PathLike[str] | None,
                     partition_blocks: int) -> JobPlan:  # fmt: skip
    """The dataset's plan of the whole job and of each partition."""
    whole = spec.span()
    plan = spec.plan(source, whole)  # the dataset's own checks: a range, a node, its arguments
    if JSON_RPC not in source.offers():  # files: one partition each
        files = source.file_parts(whole.start, whole.stop)
        if files is None:
            raise ConfigError(f"a job reads a node or files, not {source!r}")
        parts = [Partition(lo, hi, file=path) for lo, hi, path in files]
        where = "era1:" + ",".join(Path(path).name for _, _, path in files)
    else:
        parts = spec.cut(whole, partition_blocks)
        # the chain (id and genesis hash), and the partitioning, which names the files
        where = f"{source.label}:{source.identity}:{partition_blocks}"
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


def _describe(out: Path, dataset: str, params: Mapping[str, object],
              attrs: Mapping[Hashable, object]) -> None:  # fmt: skip
    """``_job.json`` in the job's folder: what its partitions hold (dataset, parameters, the
    frames' ``attrs``), so that the folder reads as a source (``feeslab.sources.partitions``);
    written atomically."""
    body = {"dataset": dataset, "parameters": params,
            "attrs": {k: v for k, v in attrs.items() if isinstance(v, (str, int, float))}}
    handle, temporary = tempfile.mkstemp(dir=out, prefix=f".{JOB}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as file:
            json.dump(body, file, indent=1, default=list)
        os.replace(temporary, out / JOB)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _with(planned: Plan, probe: Plan) -> Plan:
    """``planned`` with the cutoff's probe added, under its own title."""
    whole = planned + probe
    whole.title = planned.title
    return whole


def _where(where: str, key: str) -> str:
    return f"{where}|{key}" if key else where


def _cut_series(whole: Partition, size: int) -> list[Partition]:
    """The series' distinct blocks, sorted, ``size`` a partition; each partition holds the
    series' blocks of its range in the series' order (repeats included, as one process
    sends them)."""
    assert whole.blocks is not None
    starts = sorted(set(whole.blocks))[::size]
    groups: list[list[int]] = [[] for _ in starts]
    for n in whole.blocks:
        groups[bisect.bisect_right(starts, n) - 1].append(n)
    return [Partition(lo, max(group) + 1, blocks=tuple(group))
            for lo, group in zip(starts, groups, strict=True)]  # fmt: skip


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


def _part_source(task: Task, path: str) -> Source:
    """The source of one file of the job's (the driver's own in process)."""
    if task.source is not None:
        return task.source.part(path)
    from feeslab.sources.combined import file_source  # a worker: the source of its format

    return file_source(path)


def _node_source(task: Task) -> Node:
    """The node for one partition: the driver's in process; else the driver's spec opened by
    the executor's ``open_node`` (no cache; what the driver knows answered without asking)."""
    if task.source is not None:
        node = task.source.rpc()
        if node is None:
            raise ConfigError(f"{task.source!r} has no node")
        return node
    if task.open_node is None:
        raise ConfigError("a partition on a node needs the executor's open_node")
    return task.open_node(task)


def run_partition(task: Task, part: Partition,
                  context: Mapping[int, object] | None) -> dict[str, Any]:  # fmt: skip
    """One partition: its rows (``task.spec.compute``) written to ``part.name`` (atomically),
    unless an earlier attempt wrote them. Returns what it did, with the rows it computed as
    ``frame`` (the driver need not read the file back); a feeslab error (a budget refused, a
    402, a damaged file) as data, raised again on the driver with its type and attributes.
    ``seconds`` and ``cpu_seconds``: the whole task's, the file's writing included."""
    began, cpu = time.perf_counter(), time.thread_time()
    done = _run_partition(task, part, context)
    if "frame" in done:  # computed here (not an error, nor a file found written)
        done.update(seconds=round(time.perf_counter() - began, 4),
                    cpu_seconds=round(time.thread_time() - cpu, 4))  # fmt: skip
    return done


def _run_partition(task: Task, part: Partition,
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
    files: Source | None = None
    node: Node | None = None
    before = 0
    try:
        if part.file is not None:
            files = _part_source(task, part.file)
            frame = task.spec.compute(files, part, context)
        else:
            node = _node_source(task)
            before = node.credits.spent  # the driver's ledger in process: this part's share
            frame = task.spec.compute(node, part, context)
    except FeeslabError as exc:
        # handed back as data, raised on the driver (feeslab's errors pickle whole), so that
        # dask neither retries nor logs a user's budget or a 402 as a task failure
        return {"file": part.name, "error": exc}
    finally:
        for opened in (files, node):
            if opened is not None and opened is not task.source:
                opened.close()
    # an era1 file's end links, as its read noted them (checked across files on the driver)
    links = {} if files is None or part.file is None else files.links(part.file)
    spent = 0 if node is None else node.credits.spent - before
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


def settle_writes(run: str) -> dict[str, dict[str, float]]:
    """This process's :meth:`_Writes.settle` of ``run`` (a worker's, asked by its driver)."""
    return _WRITES.settle(run)


def _settle(executor: Executor, job: JobPlan, run: str, written: dict[str, dict[str, Any]],
             frames: dict[str, pd.DataFrame]) -> None:  # fmt: skip
    """Every file this run's tasks computed on the disk: each worker's writes waited for
    (:class:`_Writes`; their CPU added to the partition's ``cpu_seconds``), then any file
    still missing (its worker gone since, or its write failed there) written here from the
    rows its task handed back."""
    for answer in executor.settle(run):  # a worker gone meanwhile: its files are checked below
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




# -- on the driver -------------------------------------------------------------------------


class Executor(Protocol):
    """What computes a job's partitions for :func:`run_job`: :class:`InProcess`, or
    ``feeslab.cluster.executor.Dask`` on a dask cluster."""

    dashboard: str | None  # where to watch it, if anywhere

    def open(self, run: str, nodes: Sequence[Node], budget: int | None) -> None:
        """Get ready for run ``run`` on ``nodes`` (one per API key; none for files), spending
        at most ``budget`` [credits] all together."""

    def task(self, task: Task, index: int) -> Task:
        """Partition ``index``'s task as this executor runs it (its key's node, its pacer)."""

    def map(self, tasks: Sequence[Task], parts: Sequence[Partition],
            contexts: Sequence[Mapping[int, object] | None]
            ) -> Iterator[dict[str, Any] | None]:  # fmt: skip
        """Each partition's answer (:func:`run_partition`) as it ends, in any order; None
        now and then while none ends (the bar's credits are asked then)."""

    def spent(self) -> int | None:
        """Credits the partitions spent so far, when it can say [credits]."""

    def settle(self, run: str) -> list[dict[str, dict[str, float]]]:
        """Each process's :func:`settle_writes` of ``run``."""

    def cancel(self) -> None:
        """Stop the partitions not yet computed."""

    def close(self) -> list[dict[str, Any]]:
        """End the run: per node (API key), ``spent``, ``refusals``, ``requests``, ``calls``."""


class InProcess:
    """The partitions one after the other in this process, on the driver's own source (its
    pacing, its ledger, ``budget`` charged on it): ``lab.<dataset>(..., out=)``. A job
    stopped here is resumed from the same files by any executor, and the other way round."""

    dashboard: str | None = None

    def __init__(self, source: Source) -> None:
        self.source = source
        self.budget: int | None = None

    def open(self, run: str, nodes: Sequence[Node], budget: int | None) -> None:
        if len(nodes) > 1:
            raise ConfigError("keys= paces other API keys on a cluster: give client= too")
        self.budget = budget

    def task(self, task: Task, index: int) -> Task:
        return replace(task, source=self.source)

    def map(self, tasks: Sequence[Task], parts: Sequence[Partition],
            contexts: Sequence[Mapping[int, object] | None]
            ) -> Iterator[dict[str, Any] | None]:  # fmt: skip
        from feeslab.fetch.credits import Budget

        node = self.source.rpc()
        cap = None if self.budget is None or node is None else Budget(self.budget)
        with node.budgeted(cap) if node is not None else contextlib.nullcontext():
            for task, part, context in zip(tasks, parts, contexts, strict=True):
                yield run_partition(task, part, context)

    def spent(self) -> int | None:
        return None

    def settle(self, run: str) -> list[dict[str, dict[str, float]]]:
        return [settle_writes(run)]

    def cancel(self) -> None:
        return None

    def close(self) -> list[dict[str, Any]]:
        return []


class Reaches(Protocol):
    """What reaches a node: a source, or a ``Lab`` (``keys=``)."""

    def rpc(self) -> Node | None:
        """The node, or None (files)."""


def _nodes(source: Source, keys: Sequence[Reaches]) -> list[Node]:
    """Every API key's node (``source``'s first), all on one chain; none for files."""
    if JSON_RPC not in source.offers():
        if keys:
            raise ConfigError("keys= multiplies a node's rate: era1 files need none")
        return []
    nodes = []
    for each in (source, *keys):
        node = each.rpc()
        if node is None:
            raise ConfigError(f"keys= takes Labs or sources on a node, not {each!r}")
        nodes.append(node)
    first = nodes[0]
    for other in nodes[1:]:
        if (other.chain_id(), other.label) != (first.chain_id(), first.label):
            raise ConfigError(f"every key must reach the same chain: {other!r} is on "
                              f"{other.label} chain {other.chain_id()}, not {first.label} "
                              f"chain {first.chain_id()}")  # fmt: skip
    return nodes


def run_job(
    spec: DatasetJob,
    source: Source,
    executor: Executor,
    *,
    out: str | os.PathLike[str] | None = None,
    budget: int | None = None,
    progress: bool | None = None,
    partition_blocks: int = DEFAULT_PARTITION_BLOCKS,
    keys: Sequence[Reaches] = (),
    planned: JobPlan | None = None,
) -> JobResult:
    """Run the job ``spec`` describes with ``executor``: what ``spec.finish`` makes of it.

    Parameters
    ----------
    spec : DatasetJob
        The dataset and its parameters.
    source : Source
        Where the blocks come from (files must be readable by every worker at the same path;
        a node reachable from every worker).
    executor : Executor
        What computes the partitions (:class:`InProcess`, ``feeslab.cluster.executor.Dask``).
    out : path, optional
        The job's directory of partition files, on storage every worker shares; default
        ``<cache>/jobs/<job>``. A rerun skips the partitions already written there.
    budget : int, optional
        The most the job may spend, the driver's plan and the partitions together [credits]:
        the plan is refused before anything runs (``BudgetExceeded``), and any request that
        would pass it is refused.
    progress : bool, optional
        A progress bar over the partitions, and the dashboard's address printed (default on).
    partition_blocks : int
        Blocks per partition of a node job [blocks].
    keys : sequence of Lab or Source
        Nodes of other API keys to the same chain (on a cluster): the partitions are dealt
        among ``source`` and these in turn, each key paced at its plan's rate, its spending in
        its own ledger (``lab.credits``); ``budget`` counts them all.
    planned : JobPlan, optional
        What :func:`plan_job` gave for the same arguments.

    Returns
    -------
    JobResult
        The rows, the plan, the :class:`JobReport` and ``value``, what one process gives.
    """
    began = time.perf_counter()
    nodes = _nodes(source, keys)
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
    if show and executor.dashboard:
        print(f"dask dashboard: {executor.dashboard}", file=sys.stderr, flush=True)
    run = f"{job.job}-{uuid.uuid4().hex[:8]}"
    reports: list[dict[str, Any]] = []
    frames: dict[str, pd.DataFrame] = {}  # the rows the partitions computed, by file name
    if todo:
        # the partitions' share: the budget less what the plan bought on the driver
        executor.open(run, nodes, None if budget is None else budget - job.bought)
        tasks = [executor.task(Task(spec, str(job.out), run=run), i) for i in range(len(todo))]
        bar = None
        if show:
            from feeslab._progress import progress_bar

            bar = progress_bar(total=len(job.partitions), initial=len(done),
                               description="partitions", unit="part")  # fmt: skip
        noted = time.monotonic()
        try:
            for answer in executor.map(tasks, todo, [spec.part_context(job.context, p)
                                                     for p in todo]):  # fmt: skip
                if answer is None:  # none ended for a while: the credits so far
                    spent = executor.spent()
                    if bar is not None and spent is not None:
                        bar.set_postfix(credits=f"{spent:,}", refresh=True)
                    continue
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
            _settle(executor, job, run, written, frames)
        except BaseException as exc:
            executor.cancel()
            if isinstance(exc, Exception):  # the partitions computed are kept all the same
                with contextlib.suppress(Exception):
                    _settle(executor, job, run, written, frames)
            raise
        finally:
            _write_manifest(job, written, done)
            if bar is not None:
                bar.close()
            reports = executor.close()
            for own, report in zip(nodes, reports, strict=False):
                for method, n in report.get("calls", {}).items():  # each key's own ledger
                    own.credits.record_request([method] * n, 200)
    _check_links(job, written)
    # the rows the partitions handed back; only files found written are read
    frame = concat_partitions([frames.pop(p.name) if p.name in frames
                               else read_partition(job.out / p.name)
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
        seconds=time.perf_counter() - began, dashboard=executor.dashboard, calls=dict(calls),
        keys=tuple({k: r.get(k, 0) for k in ("spent", "refusals", "requests")} for r in reports),
    )  # fmt: skip
    return spec.finish(source, frame, job, result)


def plan(dataset: Dataset | str, source: Source, *args: Any,
         out: str | os.PathLike[str] | None = None,
         partition_blocks: int = DEFAULT_PARTITION_BLOCKS, **kwargs: Any) -> JobPlan:  # fmt: skip
    """The whole job's plan (what one process would pay) and its partitions, before it runs.

    Parameters
    ----------
    dataset : str or Dataset
        A dataset with partitions (``feeslab.datasets.REGISTRY``).
    source : Source
    *args, **kwargs
        The dataset's arguments, as ``lab.<dataset>`` takes them (``budget``: refused before
        a plan that buys a sample, an uncle scan's, buys it).
    out : path, optional
        The job's directory; default ``<cache>/jobs/<job>`` (``$FEESLAB_CACHE_DIR``).
    partition_blocks : int
        Blocks per partition of a node job [blocks] (of a series: its blocks); era1 files
        are one partition each.
    """
    _check_size(partition_blocks)
    job, options = DatasetJob.of(dataset, *args, **kwargs)
    return job.plan_job(source, out=out, partition_blocks=partition_blocks,
                        budget=options.get("budget"))  # fmt: skip


def run(dataset: Dataset | str, source: Source, *args: Any, executor: Executor,
        planned: JobPlan | None = None, **kwargs: Any) -> JobResult:  # fmt: skip
    """Dataset ``dataset`` as a job of partitions computed by ``executor``: ``.value`` is what
    one process gives (``lab.<dataset>(...)``), row for row, dtypes and ``attrs`` included.

    Parameters
    ----------
    dataset : str or Dataset
        A dataset with partitions (``feeslab.datasets.REGISTRY``).
    source : Source
    *args, **kwargs
        The dataset's arguments (``budget`` and ``progress`` apply to the whole run), and
        :func:`run_job`'s options: ``out``, ``partition_blocks``, ``keys``.
    executor : Executor
        :class:`InProcess`, or ``feeslab.cluster.executor.Dask``.
    planned : JobPlan, optional
        What :func:`plan` gave for the same arguments (a sample it bought is not bought
        again).
    """
    runner = {k: kwargs.pop(k) for k in ("out", "partition_blocks", "keys") if k in kwargs}
    job, options = DatasetJob.of(dataset, *args, **kwargs)
    return run_job(job, source, executor, planned=planned, **options, **runner)

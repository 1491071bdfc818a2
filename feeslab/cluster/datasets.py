"""Any dataset with partitions as a cluster job: :class:`DatasetJob`, :func:`run`, :func:`plan`.

One job spec serves every dataset of ``feeslab.datasets.REGISTRY`` that declares
``partitions``: it plans the job with the dataset's own plan (or its ``plan_parts``, for a
plan that buys a sample once), cuts it as the dataset's :class:`~feeslab.datasets.registry.
Partitioning` says (by range, by whole calls, or a series by block), computes each partition
with the dataset's own fetch (or reads it from the partition's era1 file), and assembles the
result from the rows as one process does. The runner is :func:`feeslab.cluster.jobs.run_job`.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import itertools
import json
import os
import tempfile
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from feeslab.cluster.jobs import (
    DEFAULT_PARTITION_BLOCKS,
    JobPlan,
    JobReport,
    JobResult,
    JobSpec,
    Partition,
    _check_size,
    _directory,
    _job_id,
    _node_of,
    _plan_partitions,
    run_job,
)
from feeslab.datasets import REGISTRY, registry
from feeslab.datasets.registry import Dataset
from feeslab.errors import ConfigError
from feeslab.fetch.credits import Plan
from feeslab.frames.partitions import JOB
from feeslab.sources.base import Source

__all__ = ["DatasetJob", "plan", "run"]

RUN_OPTIONS = ("budget", "progress")  # fetch parameters that are the run's, not the job's


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class DatasetJob(JobSpec):
    """Dataset ``dataset`` (a name in ``REGISTRY``) with ``params`` as a cluster job (pickled
    to every worker: the name, not the declaration, travels)."""

    dataset: str
    params: tuple[tuple[str, object], ...]

    @classmethod
    def of(cls, dataset: Dataset | str, *args: Any, **kwargs: Any) -> tuple[DatasetJob,
                                                                             dict[str, Any]]:
        """The job of ``dataset`` with a call's arguments, and the run's options
        (``budget``, ``progress``)."""
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
    def name(self) -> str:  # type: ignore[override]
        return self.dataset

    @property
    def declared(self) -> Dataset:
        """The dataset's declaration."""
        return REGISTRY[self.dataset]

    def arguments(self) -> dict[str, object]:
        """The job's parameters as the dataset's fetch takes them."""
        return dict(self.params)

    def span(self) -> Partition:
        partitions = self.declared.partitions
        assert partitions is not None
        params = self.arguments()
        start, stop = partitions.span(params)
        if partitions.kind == "range":
            return Partition(start, stop)
        return Partition(start, stop, blocks=tuple(registry.blocks_of(params["blocks"])))

    def key(self) -> str:
        params = self.arguments()
        if self.declared.partitions is not None and self.declared.partitions.kind == "range":
            params.pop("start"), params.pop("stop")
        return _digest(params) if params else ""

    def _narrow(self, part: Partition) -> dict[str, object]:
        partitions = self.declared.partitions
        assert partitions is not None
        return partitions.narrow(self.arguments(), part.start, part.stop, part.blocks)

    def plan(self, source: Source, part: Partition) -> Plan:
        # the workers read no cache: the cost from scratch, where the plan can leave it out
        params = {**self._narrow(part), "less_cached": False}
        return registry.plan(self.declared, source, params)

    def plan_job(self, source: Source, *, out: str | os.PathLike[str] | None,
                 partition_blocks: int, budget: int | None) -> JobPlan:  # fmt: skip
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
        where = f"{source.label}:{_node_of(source).node.identity}:{partition_blocks}"
        job = _job_id(self.name, whole.start, whole.stop, _where(where, self.key()))
        return JobPlan(job, self.name, whole.start, whole.stop, made.plan, tuple(parts),
                       _directory(out, job), context=dict(made.context),
                       bought=made.bought)  # fmt: skip

    def cut(self, whole: Partition, size: int) -> list[Partition]:
        partitions = self.declared.partitions
        assert partitions is not None
        if partitions.kind == "series":
            return _cut_series(whole, size)
        if partitions.align > 1:  # whole calls, counted from the stop down
            size = -(-size // partitions.align) * partitions.align
            cuts = [*range(whole.stop, whole.start, -size), whole.start]
            return [Partition(lo, hi) for hi, lo in itertools.pairwise(cuts)][::-1]
        return super().cut(whole, size)

    def part_context(self, context: Mapping[int, object] | None,
                     part: Partition) -> Mapping[int, object] | None:  # fmt: skip
        if self.declared.context is None:
            return None
        return {n: c for n, c in (context or {}).items() if part.start <= n < part.stop}

    def compute(self, source: Source, part: Partition,
                context: Mapping[int, object] | None) -> pd.DataFrame:  # fmt: skip
        params = {**self._narrow(part), "progress": False}
        if self.declared.context is not None and context:
            # what the driver bought while planning (a sample): not asked for again
            params[self.declared.context] = context
        return registry.rows(self.declared, source, params)

    def finish(self, source: Source, frame: pd.DataFrame, job: JobPlan,
               report: JobReport) -> JobResult:  # fmt: skip
        rows = source.tag(frame)
        _describe(job.out, self.dataset, self.arguments(), rows.attrs)
        value = registry.assemble(self.declared, source, rows, self.arguments(), job.plan)
        if dataclasses.is_dataclass(value) and hasattr(value, "report"):
            value = dataclasses.replace(value, report=report)  # type: ignore[type-var]
        return JobResult(frame=rows, plan=job.plan, report=report, value=value)


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


def plan(dataset: Dataset | str, source: Source, *args: Any,
         out: str | os.PathLike[str] | None = None,
         partition_blocks: int = DEFAULT_PARTITION_BLOCKS, **kwargs: Any) -> JobPlan:  # fmt: skip
    """The whole job's plan (what one process would pay) and its partitions, before it runs.

    Parameters
    ----------
    dataset : str or Dataset
        A dataset with partitions (``feeslab.datasets.REGISTRY``).
    source : RpcSource or Era1Source
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


def run(dataset: Dataset | str, source: Source, *args: Any, client: Any,
        planned: JobPlan | None = None, **kwargs: Any) -> JobResult:  # fmt: skip
    """Dataset ``dataset`` on a dask cluster: ``.value`` is what one process gives
    (``lab.<dataset>(...)``), row for row, dtypes and ``attrs`` included.

    Parameters
    ----------
    dataset : str or Dataset
        A dataset with partitions (``feeslab.datasets.REGISTRY``).
    source : RpcSource or Era1Source
    *args, **kwargs
        The dataset's arguments (``budget`` and ``progress`` apply to the whole run), and
        :func:`~feeslab.cluster.jobs.run_job`'s options: ``out``, ``partition_blocks``,
        ``keys``, ``tune_malloc``.
    client : distributed.Client
    planned : JobPlan, optional
        What :func:`plan` gave for the same arguments (a sample it bought is not bought
        again).
    """
    runner = {k: kwargs.pop(k) for k in ("out", "partition_blocks", "keys", "tune_malloc")
              if k in kwargs}  # fmt: skip
    job, options = DatasetJob.of(dataset, *args, **kwargs)
    result: JobResult = run_job(job, source, client=client, planned=planned, **options, **runner)
    return result


"""The dask executor of jobs: a job's partitions (``feeslab.jobs``) as tasks on a
cluster's workers, every worker's requests paced by one bucket per API key on the scheduler
(:mod:`feeslab.cluster._governor`), which also enforces the job's budget across them."""

from __future__ import annotations

import contextlib
import queue
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from feeslab.cluster import _governor
from feeslab.cluster._worker import compute, paced_node, settle
from feeslab.jobs import Partition, Task
from feeslab.sources.base import Node
from feeslab.sources.spec import NodeSpec

__all__ = ["PROGRESS_SECONDS", "Dask"]

PROGRESS_SECONDS = 1.0  # [s] the bar's credits are asked of the scheduler this often


class Dask:
    """Partitions on ``client``'s cluster (``tune_malloc``: glibc's heap on each worker as in
    a process dask did not start, ``feeslab.cluster._heap``)."""

    def __init__(self, client: Any, *, tune_malloc: bool = True) -> None:
        self.client, self.tune_malloc = client, tune_malloc
        self.dashboard: str | None = getattr(client, "dashboard_link", None)
        self.buckets: list[str] = []
        self.specs: list[NodeSpec] = []
        self.pending: set[Any] = set()

    def open(self, run: str, nodes: Sequence[Node], budget: int | None) -> None:
        """A bucket per API key on the scheduler; files spend no credits: none."""
        self.specs = [node.worker_spec() for node in nodes]
        self.buckets = [f"{run}-key{i}" for i in range(len(self.specs))]
        if self.buckets:
            _governor.install(self.client)
        for i, (bucket, spec) in enumerate(zip(self.buckets, self.specs, strict=True)):
            _governor.scheduler_call(self.client, "open", name=bucket, budget=budget,
                                     credits_per_second=spec.credits_per_second,
                                     group=self.buckets[0] if i else None)  # fmt: skip

    def task(self, task: Task, index: int) -> Task:
        threads = max(1, sum(self.client.nthreads().values())) if self.specs else 1
        if not self.specs:
            return replace(task, workers=threads, write_behind=True)
        return replace(task, workers=threads, write_behind=True, open_node=paced_node,
                       node=self.specs[index % len(self.specs)],
                       bucket=self.buckets[index % len(self.buckets)])  # fmt: skip

    def map(self, tasks: Sequence[Task], parts: Sequence[Partition],
            contexts: Sequence[Mapping[int, object] | None]) -> Iterator[dict[str, Any] | None]:
        """One graph for all the partitions (one message to the scheduler); the answers of
        those ended together gathered in one round trip, told as each ends, not polled."""
        keys = [f"feeslab-{task.run}-{part.name}" for task, part in zip(tasks, parts, strict=True)]
        futures = self.client.map(compute, tasks, parts, contexts,
                                  [self.tune_malloc] * len(tasks), key=keys, pure=False)
        arrived: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for future in futures:
            future.add_done_callback(arrived.put)
        self.pending = set(futures)  # let go of once gathered: its worker drops the rows
        del futures
        wait = PROGRESS_SECONDS if self.buckets else None
        while self.pending:
            ready = []
            with contextlib.suppress(queue.Empty):
                ready.append(arrived.get(timeout=wait))
                while len(ready) < len(self.pending):
                    ready.append(arrived.get_nowait())
            self.pending.difference_update(ready)
            yield from self.client.gather(ready) if ready else [None]

    def spent(self) -> int:
        return sum((_governor.scheduler_call(self.client, "report", name=b) or {})
                   .get("spent", 0) for b in self.buckets)  # fmt: skip

    def settle(self, run: str) -> list[dict[str, dict[str, float]]]:
        answers = self.client.run(settle, run, on_error="return").values()
        return [a for a in answers if isinstance(a, dict)]  # a worker gone: not its files'

    def cancel(self) -> None:
        self.client.cancel(list(self.pending))

    def close(self) -> list[dict[str, Any]]:
        return [_governor.scheduler_call(self.client, "close", name=b) or {}
                for b in self.buckets]  # fmt: skip


"""What runs on a dask worker for a job (``feeslab.cluster.executor.Dask``): a partition
under the worker's own heap settings, its node paced by the cluster's bucket, and the wait for
its partition files' writes."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from feeslab.cluster import _governor
from feeslab.cluster._heap import process_heap
from feeslab.jobs import Partition, Task, run_partition, settle_writes
from feeslab.sources.rpc import RpcSource, open_node

__all__ = ["compute", "paced_node", "settle"]


def compute(task: Task, part: Partition, context: Mapping[int, object] | None,
            tune_malloc: bool) -> dict[str, Any]:
    """One partition (:func:`feeslab.jobs.run_partition`) under ``process_heap``."""
    with process_heap(tune_malloc):
        return run_partition(task, part, context)


def paced_node(task: Task) -> RpcSource:
    """A worker's node: the driver's spec opened, paced by the cluster's bucket."""
    from distributed import get_worker

    assert task.node is not None
    bucket = _governor.ClusterGovernor(get_worker(), task.bucket,
                                       task.node.credits_per_second or float("inf"),
                                       task.workers)  # fmt: skip
    return open_node(task.node, bucket=bucket)


async def settle(run: str) -> dict[str, dict[str, float]]:
    """On a worker (``client.run``): its writes of ``run``, waited for on a thread, so that
    the worker's event loop (heartbeats, other jobs' tasks) never waits on a disk."""
    return await asyncio.to_thread(settle_writes, run)

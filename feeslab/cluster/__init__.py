"""Scale out on dask.distributed: any dataset with partitions computed across a cluster.

::

    from distributed import Client
    client = Client("tcp://scheduler:8786")            # or feeslab.cluster.local_client(4)
    scan = lab.uncles(0, 15_537_394, client=client, out="/shared/uncles")
    fees = lab.fee_history(12_965_000, 15_537_394, client=client, out="/shared/fees")
    job = feeslab.cluster.run("blocks", lab.data_source, 0, 100_000, client=client)

Every dataset of ``feeslab.datasets.REGISTRY`` that declares ``partitions`` (uncles, blocks and
fee history by era1 file or by block range; storage and contract calls by block) runs here
through one spec (:class:`DatasetJob`) and one runner (:func:`run_job`): one plan for the
whole job before anything runs; one credit bucket on the scheduler that every worker's
requests are paced by (and ``budget=`` enforced across them); one Parquet file per partition,
written atomically, so a killed job resumes where it stopped. The result's ``value`` is the
single-process one, row for row. Needs ``pip install 'feeslab[dask]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from feeslab.cluster.datasets import DatasetJob, plan, run
from feeslab.cluster.jobs import (
    DEFAULT_PARTITION_BLOCKS,
    MANIFEST,
    JobPlan,
    JobReport,
    JobResult,
    JobSpec,
    Partition,
    plan_job,
    read_partitions,
    run_job,
)

if TYPE_CHECKING:
    from distributed import Client

__all__ = [
    "DEFAULT_PARTITION_BLOCKS",
    "MANIFEST",
    "QUIET_WORKERS",
    "DatasetJob",
    "JobPlan",
    "JobReport",
    "JobResult",
    "JobSpec",
    "Partition",
    "local_client",
    "plan",
    "plan_job",
    "read_partitions",
    "run",
    "run_job",
]


# what a cluster feeslab starts does without: dask's statistical profiler samples every task
# thread's stack every 10 ms on the worker's event loop, and each server's loop wakes every
# 20 ms to time itself; each wake-up takes the GIL from the task. Measured on the era1 uncle
# scan (one worker, 8 files): ~10 % less worker CPU a job, a third of its context switches
# (docs/cluster.md). The dashboard's Profile page stays empty; everything else is served
QUIET_WORKERS = {"distributed.worker.profile.enabled": False,
                 "distributed.admin.tick.interval": "1s"}  # fmt: skip


def local_client(workers: int, **options: object) -> Client:
    """A ``distributed.Client`` on a new ``LocalCluster`` of ``workers`` worker processes, one
    thread each, with ``QUIET_WORKERS``' dask settings; ``client.shutdown()`` stops both.
    ``options`` go to ``LocalCluster``."""
    import dask
    from distributed import Client, LocalCluster

    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers must be a positive int, not {workers!r}")
    options = {"n_workers": workers, "threads_per_worker": 1, "processes": True,
               "dashboard_address": ":0", **options}
    with dask.config.set(QUIET_WORKERS):  # each nanny hands its worker the config it had
        return Client(LocalCluster(**options))  # type: ignore[no-untyped-call]

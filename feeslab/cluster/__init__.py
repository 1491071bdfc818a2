"""Scale out on dask.distributed: any dataset with partitions computed across a cluster.

::

    from distributed import Client
    client = Client("tcp://scheduler:8786")            # or feeslab.cluster.local_client(4)
    scan = lab.uncles(0, 15_537_394, client=client, out="/shared/uncles")
    fees = lab.fee_history(12_965_000, 15_537_394, client=client, out="/shared/fees")
    job = feeslab.cluster.run("blocks", lab.data_source, 0, 100_000, client=client)

A job (``feeslab.jobs``: one plan for the whole job before anything runs, one Parquet file per
partition written atomically, so a killed job resumes where it stopped, in process or here) is
run by the dask executor (:class:`~feeslab.cluster.executor.Dask`): its partitions are tasks
on the workers, paced by one credit bucket per API key on the scheduler (and ``budget=``
enforced across them). The result's ``value`` is the single-process one, row for row. Needs
``pip install 'feeslab[dask]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from feeslab.errors import ConfigError
from feeslab.jobs import (
    DEFAULT_PARTITION_BLOCKS,
    MANIFEST,
    DatasetJob,
    JobPlan,
    JobReport,
    JobResult,
    Partition,
    plan,
    plan_job,
    read_partitions,
)

if TYPE_CHECKING:
    from distributed import Client

    from feeslab.datasets.registry import Dataset
    from feeslab.sources.base import Source

__all__ = [
    "DEFAULT_PARTITION_BLOCKS",
    "MANIFEST",
    "QUIET_WORKERS",
    "DatasetJob",
    "JobPlan",
    "JobReport",
    "JobResult",
    "Partition",
    "local_client",
    "plan",
    "plan_job",
    "read_partitions",
    "run",
]


def run(dataset: Dataset | str, source: Source, *args: Any, client: Any,
        planned: JobPlan | None = None, **kwargs: Any) -> JobResult:
    """Dataset ``dataset`` on ``client``'s dask cluster (``feeslab.jobs.run``'s arguments):
    ``.value`` is what one process gives, row for row, dtypes and ``attrs`` included.

    ``tune_malloc`` (default True): while a partition runs on a worker a dask nanny started
    (glibc), its allocator's thresholds are those of a process dask did not start
    (``feeslab.cluster._heap``: dask's ``MALLOC_TRIM_THRESHOLD_`` made a worker's era1 scan
    0.6x as fast per core); False leaves them as dask set them.
    """
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ConfigError("a cluster job needs dask.distributed: pip install 'feeslab[dask]'"
                          ) from None  # fmt: skip
    from feeslab import jobs
    from feeslab.cluster.executor import Dask

    tune_malloc = bool(kwargs.pop("tune_malloc", True))
    return jobs.run(dataset, source, *args, executor=Dask(client, tune_malloc=tune_malloc),
                    planned=planned, **kwargs)  # fmt: skip


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

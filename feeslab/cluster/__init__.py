"""Scale out on dask.distributed: a dataset computed in partitions across a cluster.

::

    from distributed import Client
    client = Client("tcp://scheduler:8786")            # or feeslab.cluster.local_client(4)
    scan = lab.uncles(0, 15_537_394, client=client, out="/shared/uncles")
    fees = lab.fee_history(12_965_000, 15_537_394, client=client, out="/shared/fees")

Any dataset over a range or a series of blocks: uncles, blocks, fee history (by era1 file for
archive files, by block range on a node), storage and contract calls (by block range on a
node): :func:`uncles`, :func:`blocks`, :func:`fee_history`, :func:`storage_series`,
:func:`call_series`, or ``client=`` on the Lab's. One plan for the whole job before anything
runs; one credit bucket on the scheduler that every worker's requests are paced by (and
``budget=`` enforced across them); one Parquet file per partition, written atomically, so a
killed job resumes where it stopped. The result is the single-process one, row for row.
A dataset is added by a :class:`JobSpec` run by :func:`run_job`.
Needs ``pip install 'feeslab[dask]'``.
"""

from feeslab.cluster.datasets import (
    BlocksJob,
    CallsJob,
    FeeHistoryJob,
    StorageJob,
    blocks,
    call_series,
    fee_history,
    storage_series,
)
from feeslab.cluster.jobs import (
    DEFAULT_PARTITION_BLOCKS,
    MANIFEST,
    ClusterUncleScan,
    JobPlan,
    JobReport,
    JobResult,
    JobSpec,
    Partition,
    UncleJob,
    plan_job,
    plan_uncles,
    read_partitions,
    run_job,
    uncles,
)

__all__ = [
    "DEFAULT_PARTITION_BLOCKS",
    "MANIFEST",
    "BlocksJob",
    "CallsJob",
    "ClusterUncleScan",
    "FeeHistoryJob",
    "JobPlan",
    "JobReport",
    "JobResult",
    "JobSpec",
    "Partition",
    "StorageJob",
    "UncleJob",
    "blocks",
    "call_series",
    "fee_history",
    "local_client",
    "plan_job",
    "plan_uncles",
    "read_partitions",
    "run_job",
    "storage_series",
    "uncles",
]


def local_client(workers: int, **options):
    """A ``distributed.Client`` on a new ``LocalCluster`` of ``workers`` worker processes, one
    thread each; ``client.shutdown()`` stops both. ``options`` go to ``LocalCluster``."""
    from distributed import Client, LocalCluster

    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers must be a positive int, not {workers!r}")
    options = {"n_workers": workers, "threads_per_worker": 1, "processes": True,
               "dashboard_address": ":0", **options}
    return Client(LocalCluster(**options))

"""Scale out on dask.distributed: a dataset computed in partitions across a cluster.

::

    from distributed import Client
    client = Client("tcp://scheduler:8786")            # or feeslab.cluster.local_client(4)
    scan = lab.uncles(0, 15_537_394, client=client, out="/shared/uncles")

One plan for the whole job before anything runs; one credit bucket on the scheduler that
every worker's requests are paced by (and ``budget=`` enforced across them); one Parquet file
per partition (era1 file, or block range on a node), written atomically, so a killed job
resumes where it stopped. The result is the single-process one, row for row.
Needs ``pip install 'feeslab[dask]'``.
"""

from feeslab.cluster.jobs import (
    DEFAULT_PARTITION_BLOCKS,
    MANIFEST,
    ClusterUncleScan,
    JobPlan,
    JobReport,
    Partition,
    plan_uncles,
    read_partitions,
    uncles,
)

__all__ = [
    "DEFAULT_PARTITION_BLOCKS",
    "MANIFEST",
    "ClusterUncleScan",
    "JobPlan",
    "JobReport",
    "Partition",
    "local_client",
    "plan_uncles",
    "read_partitions",
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

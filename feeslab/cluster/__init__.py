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

from typing import Any

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

__all__ = [
    "DEFAULT_PARTITION_BLOCKS",
    "MANIFEST",
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


def local_client(workers: int, **options: Any) -> Any:
    """A ``distributed.Client`` on a new ``LocalCluster`` of ``workers`` worker processes, one
    thread each; ``client.shutdown()`` stops both. ``options`` go to ``LocalCluster``."""
    from distributed import Client, LocalCluster

    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers must be a positive int, not {workers!r}")
    options = {"n_workers": workers, "threads_per_worker": 1, "processes": True,
               "dashboard_address": ":0", **options}
    return Client(LocalCluster(**options))  # type: ignore[no-untyped-call]

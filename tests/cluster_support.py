"""What the tests on a real ``LocalCluster`` share: two worker processes, and a worker killed
while a job runs."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from distributed import Client, LocalCluster

import feeslab


@contextmanager
def two_workers() -> Iterator[Client]:
    """A client of a new LocalCluster of 2 worker processes, one thread each."""
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                      dashboard_address=":0") as local, Client(local) as c:  # fmt: skip
        yield c


def kill_a_busy_worker(client: Client, out: Path, run: Callable[[], None], *,
                       timeout: float) -> None:
    """Run ``run`` (a job writing partitions to ``out``) on a thread; once its first partition
    file is written, kill a worker that is running another; wait up to ``timeout`` [s]."""
    pids = client.run(os.getpid)
    job = threading.Thread(target=run)
    job.start()
    deadline = time.monotonic() + 30
    while not list(out.glob("part-*.parquet")) and time.monotonic() < deadline:
        time.sleep(0.05)
    busy = [w for w, keys in client.processing().items() if keys]
    assert busy, "no worker was running a partition"
    os.kill(pids[busy[0]], signal.SIGKILL)  # the nanny starts another
    job.join(timeout)
    assert not job.is_alive(), f"the job did not finish within {timeout} s of the kill"


def uncached_lab(devnet) -> feeslab.Lab:
    """A Lab on ``devnet`` with no answer cache: every run pays for what it reads, so the
    credits of runs compare."""
    return feeslab.connect(url=devnet.url, api_key=devnet.api_key,
                           api_key_secret=devnet.api_key_secret, cache=False, progress=False)


def uncles_with_a_worker_killed(client: Client, devnet, out: Path, start: int, stop: int, *,
                                partition_blocks: int, timeout: float):
    """``feeslab.cluster.uncles`` of ``devnet``'s blocks ``start`` .. ``stop - 1`` into
    ``out``, a worker killed once the first partition is written: the scan, and the credits
    the whole job spent (driver and workers); what the job raised is raised here."""
    from feeslab import cluster

    result: dict = {}

    def run() -> None:
        with uncached_lab(devnet) as lab:
            try:
                result["scan"] = cluster.run(
                    "uncles", lab.data_source, start, stop, client=client, out=out,
                    progress=False, partition_blocks=partition_blocks).value
                result["spent"] = lab.credits.spent
            except BaseException as exc:  # handed to the test's thread
                result["error"] = exc

    kill_a_busy_worker(client, out, run, timeout=timeout)
    if "error" in result:
        raise result["error"]
    return result["scan"], result["spent"]

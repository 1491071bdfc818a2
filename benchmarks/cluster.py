"""The era1 uncle scan on dask.distributed: one process beside a LocalCluster of worker processes.

Devnet-exported era1 files, one partition per file, each cluster run into a fresh job
directory (so every partition is computed and written as Parquet), on a cluster warmed by a
first job (the workers have imported feeslab). The cluster is ``feeslab.cluster.local_client``'s,
as ``feeslab fetch --workers`` starts it: its workers without dask's statistical profiler and
with a 1 s health tick (``QUIET_WORKERS``: each wake-up of a worker's event loop takes the GIL
from its task). Measured, with the goals of issue 27:

- the in-process scan's wall rate and its per-core rate (work per CPU second) [MiB/s];
- a one-worker cluster's wall rate, and its ratio to one process's (goal >= 0.8);
- the worker's per-core rate: the files' MiB per CPU second inside its tasks (reading the file,
  encoding the partition, everything ``run_partition`` does) and on its writer thread (writing
  and flushing the files), and its ratio to the in-process per-core rate (goal >= 0.9);
- the same tasks (``run_partition``) one by one in this process, without dask, each file
  written before the next is read: what the job's shape costs (a file a task, its Parquet
  file), beside the worker;
- the job's fixed cost: the one-worker job's wall time beyond its tasks' [s] (planning,
  scheduling, handing the rows back, assembling; goal < 0.1);
- two workers where the machine has the cores (their scaling, for the record);
- a projection to 16 cores from the measured per-core rate only.

Each figure is the best of ``REPEAT`` runs, the in-process scan, the cluster's run and the same
tasks in this process taken in turn (a shared machine's load falls on each alike). Run on its
own with ``python benchmarks/cluster.py`` (``make bench`` runs it after the main table).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import _table  # benchmarks/_table.py: the table into docs/benchmarks.md

from feeslab import cluster, datasets
from feeslab.devnet.era1 import export_era1
from feeslab.sources.era1 import Era1Source

EPOCHS = 8  # files of 8,192 blocks: four partitions per worker at two workers
REPEAT = 5  # runs of each, in turn; the fastest counts
PROJECTED_CORES = 16
ARCHIVE_MIB = 430 * 1024  # mainnet's 1,896 pre-merge era1 files, ~430 GB [MiB]
WALL_GOAL = 0.8  # a one-worker cluster's wall rate / one process's
CORE_GOAL = 0.9  # a worker's per-core rate / the in-process scan's
FIXED_GOAL = 0.1  # a job's wall time beyond its partitions' [s]

Row = tuple[str, float, str]


def _verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def _scan_here(source: Era1Source, stop: int) -> tuple[float, float]:
    """(wall, CPU) seconds of the scan in this process."""
    wall, cpu = time.perf_counter(), time.process_time()
    datasets.get("uncles", source, 0, stop, progress=False)
    return time.perf_counter() - wall, time.process_time() - cpu


def _tasks_here(source: Era1Source, stop: int, out: Path) -> float:
    """CPU seconds of the job's own tasks (``run_partition``) run one by one in this process,
    without dask: what the job's shape costs, beside the worker's process."""
    from feeslab.jobs import DatasetJob, Task, run_partition

    spec, _ = DatasetJob.of("uncles", 0, stop)
    job = cluster.plan("uncles", source, 0, stop, out=out)
    job.out.mkdir(parents=True)
    task = Task(spec, str(job.out), "", 1, run=out.name)
    return sum(run_partition(task, p, None)["cpu_seconds"] for p in job.partitions)


def _cluster_run(client, source: Era1Source, stop: int, out: Path) -> dict[str, float]:
    """The run's wall seconds, and its tasks' wall and CPU seconds (from the manifest)."""
    began = time.perf_counter()
    cluster.run("uncles", source, 0, stop, client=client, out=out, progress=False)
    wall = time.perf_counter() - began
    parts = json.loads((out / cluster.MANIFEST).read_text())["partitions"]
    return {"wall": wall, "tasks": sum(p["seconds"] for p in parts),
            "cpu": sum(p["cpu_seconds"] for p in parts)}  # fmt: skip


def _runs(source: Era1Source, stop: int, workers: int, directory: Path) -> tuple[
        list[dict[str, float]], list[tuple[float, float]], list[float]]:  # fmt: skip
    """Cluster runs of ``workers`` workers, each beside a scan and the same tasks in this
    process (taken in turn, so a machine's changing load falls on each alike)."""
    scans, tasks, runs = [], [], []
    with cluster.local_client(workers) as client:
        # the workers import feeslab and read a file first: what a job's tasks pay once
        cluster.run("uncles", source, 0, 8_192, client=client, out=directory / f"warm-{workers}",
                    progress=False)  # fmt: skip
        for i in range(REPEAT):
            scans.append(_scan_here(source, stop))
            runs.append(_cluster_run(client, source, stop, directory / f"run-{workers}-{i}"))
            if workers == 1:
                tasks.append(_tasks_here(source, stop, directory / f"here-{i}"))
        client.shutdown()
    return runs, scans, tasks


def bench() -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="feeslab-cluster-bench-") as directory:
        paths = export_era1(directory, epochs=EPOCHS, seed=0)
        stop = EPOCHS * 8_192
        size = sum(p.stat().st_size for p in paths) / 2**20
        source = Era1Source(paths)
        datasets.get("uncles", source, 0, stop, progress=False)  # the page cache warm for every run
        one, scans, tasks = _runs(source, stop, 1, Path(directory))
        two = (_runs(source, stop, 2, Path(directory))[0] if (os.cpu_count() or 1) > 1
               else [])  # fmt: skip
    here = min(tasks)
    wall = min(w for w, _ in scans)
    cpu = min(c for _, c in scans)
    here_wall, here_core = size / wall, size / cpu
    rows.append((f"cluster: era1 uncle scan, one process ({EPOCHS} files, {size:,.1f} MiB)",
                 wall, f"{here_wall:,.1f} MiB/s wall, {here_core:,.1f} MiB/s per core "
                 f"({cpu:.3f} CPU s)"))  # fmt: skip
    fastest = min(one, key=lambda r: r["wall"])
    ratio = here_wall and (size / fastest["wall"]) / here_wall
    rows.append(("cluster: LocalCluster of 1 worker, wall rate", fastest["wall"],
                 f"{size / fastest['wall']:,.1f} MiB/s, x{ratio:.2f} of one process; "
                 f"GOAL >= {WALL_GOAL:g}x: {_verdict(ratio >= WALL_GOAL)}"))  # fmt: skip
    worker_cpu = min(r["cpu"] for r in one)
    worker_core = size / worker_cpu
    ratio = worker_core / here_core
    rows.append(("cluster: the worker's per-core rate (CPU in its tasks and writes)", worker_cpu,
                 f"{worker_core:,.1f} MiB/s per core, x{ratio:.2f} of one process's; "
                 f"GOAL >= {CORE_GOAL:g}x: {_verdict(ratio >= CORE_GOAL)}"))  # fmt: skip
    rows.append(("cluster: the same tasks in this process, no dask (run_partition)", here,
                 f"{size / here:,.1f} MiB/s per core, x{size / here / here_core:.2f} of the scan's "
                 "(the job's shape: a file a task, its Parquet file); the worker's "
                 f"x{worker_core / (size / here):.2f} of these"))  # fmt: skip
    fixed = fastest["wall"] - fastest["tasks"]
    rows.append(("cluster: a job's fixed cost beyond its partitions (1 worker)", fixed,
                 f"{fixed:.3f} s of {fastest['wall']:.3f} s ({EPOCHS} partitions: "
                 f"{fastest['tasks']:.3f} s); GOAL < {FIXED_GOAL:g} s: "
                 f"{_verdict(fixed < FIXED_GOAL)}"))  # fmt: skip
    if two:
        best = min(two, key=lambda r: r["wall"])
        rows.append(("cluster: LocalCluster of 2 workers, wall rate", best["wall"],
                     f"{size / best['wall']:,.1f} MiB/s, x{wall / best['wall']:.2f} of one "
                     f"process, x{fastest['wall'] / best['wall']:.2f} of one worker"))  # fmt: skip
    projected = worker_core * PROJECTED_CORES
    rows.append((f"cluster: projected on {PROJECTED_CORES} cores (measured per-core rate x "
                 f"{PROJECTED_CORES})", 0.0,
                 f"{projected:,.0f} MiB/s if storage keeps up: mainnet's 1,896 files (~430 GB) "
                 f"in about {ARCHIVE_MIB / projected / 60:,.0f} min"))  # fmt: skip
    return rows


def main() -> None:
    before = _table.machine_facts()  # the load before this run adds its own
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    rows = bench()
    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark':<{width}}  {'seconds':>10}  rate")
    for name, seconds, rate in rows:
        print(f"{name:<{width}}  {seconds:>10.4f}  {rate}")
    written = _table.write(rows, before, _table.machine_facts(), name="bench-cluster",
                           script="benchmarks/cluster.py")  # fmt: skip
    print(f"table written to {written}")


if __name__ == "__main__":
    main()

"""The era1 uncle scan on dask.distributed: one process, then a LocalCluster of 1 and 2 workers.

Devnet-exported era1 files, one partition per file (``feeslab.cluster.uncles``), each run into
a fresh job directory (so every partition is computed and written as Parquet). The rates are
side by side in one run; the last row scales the one-worker cluster's rate to 16 workers,
what a 16-core machine (or 16 one-core workers) would do if the files' storage keeps up.
Run on its own with ``python benchmarks/cluster.py`` (``make bench`` runs it after the
main table).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from feeslab.datasets import uncles
from feeslab.devnet.era1 import export_era1
from feeslab.sources.era1 import Era1Source

EPOCHS = 8  # files of 8,192 blocks: four partitions per worker at two workers
PROJECTED_CORES = 16


def _cluster_seconds(source: Era1Source, stop: int, workers: int, directory: Path) -> tuple[
        float, float]:  # fmt: skip
    """Wall seconds of the scan, and the CPU seconds its partitions took on the workers."""
    from feeslab import cluster

    with cluster.local_client(workers) as client:
        cluster.uncles(source, 0, 8_192, client=client, out=directory / f"warm-{workers}",
                       progress=False)  # workers import feeslab and map a file first
        began = time.perf_counter()
        cluster.uncles(source, 0, stop, client=client, out=directory / f"run-{workers}",
                       progress=False)  # fmt: skip
        seconds = time.perf_counter() - began
        client.shutdown()
    manifest = json.loads((directory / f"run-{workers}" / cluster.MANIFEST).read_text())
    return seconds, sum(p["cpu_seconds"] for p in manifest["partitions"])


def bench() -> list[tuple[str, float, str]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="feeslab-cluster-bench-") as directory:
        paths = export_era1(directory, epochs=EPOCHS, seed=0)
        stop = EPOCHS * 8_192
        size = sum(p.stat().st_size for p in paths) / 2**20
        source = Era1Source(paths)
        uncles.get(source, 0, stop, progress=False)  # the page cache warm for every run
        began = time.perf_counter()
        uncles.get(source, 0, stop, progress=False)
        one = time.perf_counter() - began
        rows.append((f"cluster: era1 uncle scan, one process ({EPOCHS} files, {size:,.0f} MiB)",
                     one, f"{stop / one:,.0f} blocks/s, {size / one:,.1f} MiB/s"))
        per_core = None
        for workers in (1, 2):
            seconds, cpu = _cluster_seconds(source, stop, workers, Path(directory))
            per_core = per_core or size / cpu
            rows.append((f"cluster: era1 uncle scan, LocalCluster of {workers} worker(s)", seconds,
                         f"{stop / seconds:,.0f} blocks/s, {size / seconds:,.1f} MiB/s wall "
                         f"(x{one / seconds:.2f} of one process), {size / cpu:,.1f} MiB/s per "
                         "core of the workers' CPU time"))  # fmt: skip
        archive = 430 * 1024 / (per_core * PROJECTED_CORES)  # the whole archive, ~430 GB
        rows.append((f"cluster: projected on {PROJECTED_CORES} cores (per-core rate x 16)", 0.0,
                     f"{per_core * PROJECTED_CORES:,.0f} MiB/s: mainnet's 1,896 files "
                     f"(~430 GB) in about {archive / 60:,.0f} min"))  # fmt: skip
    return rows


def main() -> None:
    print(f"machine: {os.cpu_count()} cores")
    rows = bench()
    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark':<{width}}  {'seconds':>10}  rate")
    for name, seconds, rate in rows:
        print(f"{name:<{width}}  {seconds:>10.4f}  {rate}")


if __name__ == "__main__":
    main()

"""era1 reading speed: extraction of headers and uncles from devnet-exported era1 files.

The goal (the issue): at least 100 MiB/s of era1 per core for the uncle scan (every header
decompressed, hashed and checked, accumulator root included; bodies only where a block has
uncles), so the whole archive (1,896 files, ~430 GB) scans in about an hour on one core. The
reader runs on one thread, so MiB/s of its CPU time is MiB/s per core (the wall-clock rate
is printed too: it is lower when other work shares the cores).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from _timing import median_seconds  # benchmarks/_timing.py

from feeslab.devnet.era1 import export_era1
from feeslab.sources.era1 import Era1Source

GOAL_MIB_S = 100.0
EPOCHS = 4
REAL = Path(__file__).parent.parent / "tests" / "data" / "era1" / "mainnet-00000-5ec1ffb8.era1"


def _cpu_seconds(run, repeat: int) -> float:
    """Median CPU seconds of this process: the per-core cost, whatever else the machine runs."""
    samples = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        samples.append(time.process_time() - start)
    return statistics.median(samples)


def _rate(name: str, paths: list[Path], run, repeat: int = 3, goal: bool = False):
    size = sum(p.stat().st_size for p in paths) / 2**20
    seconds = median_seconds(run, repeat)
    per_core = size / _cpu_seconds(run, repeat)
    passed = "PASS" if per_core >= GOAL_MIB_S else "FAIL"
    verdict = f" (goal {GOAL_MIB_S:.0f}: {passed})" if goal else ""
    return (name, seconds, f"{per_core:,.1f} MiB/s per core of CPU time{verdict}, "
                           f"{size / seconds:,.1f} MiB/s wall")  # fmt: skip


def bench() -> list[tuple[str, float, str]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="feeslab-era1-bench-") as directory:
        paths = export_era1(directory, epochs=EPOCHS, seed=0)
        stop = EPOCHS * 8192
        source = Era1Source(paths)
        source.uncle_rows(0, stop, progress=False)  # warm the page cache
        rows.append(_rate(f"era1: uncle scan, {EPOCHS} devnet files ({stop:,} blocks)", paths,
                          lambda: source.uncle_rows(0, stop, progress=False), goal=True))
        rows.append(_rate(f"era1: blocks frame, {EPOCHS} devnet files", paths,
                          lambda: source.blocks(0, stop, progress=False)))
        source.close()
    real = Era1Source(REAL)
    rows.append(_rate("era1: uncle scan, mainnet-00000 (8,192 blocks, 1,410 uncles)", [REAL],
                      lambda: real.uncle_rows(0, 8192, progress=False)))
    real.close()
    return rows


if __name__ == "__main__":
    for name, seconds, rate in bench():
        print(f"{name:<64}  {seconds:>8.4f}  {rate}")

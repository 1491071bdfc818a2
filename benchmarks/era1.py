"""Archive file reading speed: era1, and the Era and Ere readers beside it in the same run.

The goals (the issues):

* era1: at least 100 MiB/s of era1 per core for the uncle scan (every header decompressed,
  hashed and checked, accumulator root included; bodies only where a block has uncles), so the
  whole archive (1,896 files, ~430 GB) scans in about an hour on one core.
* Era and Ere (issue 38): each at least as fast per core as the era1 uncle scan of the same
  run. Ere does the same job on the same blocks (devnet epochs 0-3 exported in both formats):
  every header hashed and checked (number, parent link, total difficulty, accumulator, the
  file name's hash), bodies only where a block has uncles. Era has no headers to scan: every
  beacon block is decompressed and its execution payload decoded and checked, its header
  rebuilt (transactions and withdrawals tries built) and hashed against ``block_hash``; it runs
  on the nine real mainnet beacon blocks of ``tests/data/beacon_blocks`` (Bellatrix to Deneb,
  37 to 260 transactions), in one Era file of nine groups (an Era file may hold several eras),
  so a slot index is read per block where a real Era file reads one per ~7,000.

The readers run on one thread, so MiB/s of their CPU time is MiB/s per core (the wall-clock
rate is printed too: it is lower when other work shares the cores).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from _timing import median_seconds  # benchmarks/_timing.py

from feeslab.devnet.era1 import export_era1
from feeslab.devnet.ere import export_ere
from feeslab.protocol.e2store import EMPTY_UNCLES_HASH
from feeslab.sources.era import EraFile, era_bytes
from feeslab.sources.era1 import Era1Source
from feeslab.sources.ere import EreFile

GOAL_MIB_S = 100.0
EPOCHS = 4
TESTS = Path(__file__).parent.parent / "tests" / "data"
REAL = TESTS / "era1" / "mainnet-00000-5ec1ffb8.era1"
BEACON_BLOCKS = TESTS / "beacon_blocks"


def _cpu_seconds(run, repeat: int) -> float:
    """Median CPU seconds of this process: the per-core cost, whatever else the machine runs."""
    samples = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        samples.append(time.process_time() - start)
    return statistics.median(samples)


def _rate(
    name: str, paths: list[Path], run, repeat: int = 3, goal: float | None = None,
    goal_name: str = "",
) -> tuple[tuple[str, float, str], float]:
    """(table row, MiB/s per core) of ``run`` reading ``paths``."""
    size = sum(p.stat().st_size for p in paths) / 2**20
    seconds = median_seconds(run, repeat)
    per_core = size / _cpu_seconds(run, repeat)
    verdict = ""
    if goal is not None:
        passed = "PASS" if per_core >= goal else "FAIL"
        verdict = f" (goal {goal_name or f'{goal:.0f}'}: {passed})"
    return (name, seconds, f"{per_core:,.1f} MiB/s per core of CPU time{verdict}, "
                           f"{size / seconds:,.1f} MiB/s wall"), per_core  # fmt: skip


def _era_file(directory: Path) -> Path:
    """The real beacon blocks in one Era file, a group per era (each block signed with zeros,
    each state record the state's first 48 bytes: all the reader reads of a state)."""
    eras: dict[int, dict[int, bytes]] = {}
    for block in sorted(BEACON_BLOCKS.glob("*-block.ssz")):
        message = block.read_bytes()
        slot = int.from_bytes(message[:8], "little")
        eras.setdefault(slot // 8192 + 1, {})[slot] = (100).to_bytes(4, "little") + bytes(
            96) + message  # fmt: skip
    path = directory / f"mainnet-{min(eras):05d}-00000000.era"
    path.write_bytes(b"".join(era_bytes(era * 8192, blocks,
                                        bytes(40) + (era * 8192).to_bytes(8, "little"))
                              for era, blocks in sorted(eras.items())))  # fmt: skip
    return path


def _era_payloads(path: Path) -> int:
    with EraFile(path) as handle:
        return sum(1 for _ in handle.payloads())


def _ere_uncle_scan(paths: list[Path]) -> int:
    uncles = 0
    for path in paths:
        with EreFile(path) as handle:
            for i, uncles_hash in enumerate(handle.scan().uncles_hashes):
                if uncles_hash != EMPTY_UNCLES_HASH:
                    uncles += len(handle.uncles(handle.start + i))
    return uncles


def _ere_blocks(paths: list[Path]) -> int:
    count = 0
    for path in paths:
        with EreFile(path) as handle:
            count += sum(1 for _ in handle.blocks())
    return count


def bench() -> list[tuple[str, float, str]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="feeslab-era1-bench-") as directory:
        paths = export_era1(Path(directory) / "era1", epochs=EPOCHS, seed=0)
        ere = export_ere(Path(directory) / "ere", epochs=EPOCHS, seed=0)
        era = _era_file(Path(directory))
        stop = EPOCHS * 8192
        source = Era1Source(paths)
        source.uncle_rows(0, stop, progress=False)  # warm the page cache
        row, era1_rate = _rate(f"era1: uncle scan, {EPOCHS} devnet files ({stop:,} blocks)",
                               paths, lambda: source.uncle_rows(0, stop, progress=False),
                               goal=GOAL_MIB_S)  # fmt: skip
        rows.append(row)
        same = f"era1's {era1_rate:,.1f}"
        assert _ere_uncle_scan(ere) == len(source.uncles(0, stop, progress=False))
        rows.append(_rate(f"Ere: uncle scan, the same {EPOCHS} epochs as Ere files", ere,
                          lambda: _ere_uncle_scan(ere), goal=era1_rate, goal_name=same)[0])
        blocks = len(list(BEACON_BLOCKS.glob("*-block.ssz")))
        assert _era_payloads(era) == blocks
        rows.append(_rate(f"Era: payloads checked, {blocks} real beacon blocks (Bellatrix.."
                          "Deneb)", [era], lambda: _era_payloads(era), repeat=10,
                          goal=era1_rate, goal_name=same)[0])  # fmt: skip
        rows.append(_rate(f"era1: blocks frame, {EPOCHS} devnet files", paths,
                          lambda: source.blocks(0, stop, progress=False))[0])
        rows.append(_rate(f"Ere: every block, the same {EPOCHS} epochs (bodies, slim receipts)",
                          ere, lambda: _ere_blocks(ere))[0])
        source.close()
    real = Era1Source(REAL)
    rows.append(_rate("era1: uncle scan, mainnet-00000 (8,192 blocks, 1,410 uncles)", [REAL],
                      lambda: real.uncle_rows(0, 8192, progress=False))[0])
    real.close()
    return rows


if __name__ == "__main__":
    for name, seconds, rate in bench():
        print(f"{name:<64}  {seconds:>8.4f}  {rate}")

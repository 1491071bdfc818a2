"""IPFS storage API throughput: ``add`` and ``cat`` of 64 MiB over loopback, and CIDs computed
locally.

The devnet runs as ``feeslab serve`` in its own process (``feeslab.devnet.spawn``) with a fresh
blockstore, so server and client do not share an interpreter lock; the client is
``feeslab.IpfsClient``, the same one ``lab.ipfs`` is. ``add`` includes what makes it durable:
every block written to a temporary file, fsynced and renamed, and the shard directories fsynced,
before the answer names the CID. The issue's goal is 50 MiB/s for both.

Run alone: ``python benchmarks/ipfs.py``; ``make bench`` includes these rows.
"""

from __future__ import annotations

import hashlib
import shutil
import statistics
import sys
import tempfile
import time

import feeslab.devnet
from feeslab import unixfs
from feeslab.fetch.ipfs import IpfsClient

MIB = 1 << 20
SIZE = 64 * MIB
REPEAT = 3
GOAL = 50.0  # [MiB/s]


def _content(seed: int) -> bytes:
    return hashlib.shake_256(f"feeslab-bench-{seed}-{time.time_ns()}".encode()).digest(SIZE)


def _row(name: str, samples: list[float], goal: float | None = GOAL) -> tuple[str, float, str]:
    seconds = statistics.median(samples)
    rate = SIZE / MIB / seconds
    text = f"{rate:,.0f} MiB/s"
    if goal is not None:
        text += f"; GOAL >= {goal:g} MiB/s: {'PASS' if rate >= goal else 'FAIL'}"
    return name, seconds, text


def bench() -> list[tuple[str, float, str]]:
    rows = []
    content = _content(0)
    local = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        unixfs.cid_of(content)
        local.append(time.perf_counter() - start)
    rows.append(_row("ipfs: CID of 64 MiB computed locally (feeslab.unixfs)", local, None))

    store = tempfile.mkdtemp(prefix="feeslab-bench-ipfs-")
    dev = feeslab.devnet.spawn(ipfs_dir=store)
    try:
        with IpfsClient(base_url=dev.url, api_key=dev.api_key,
                        api_key_secret=dev.api_key_secret, timeout=300) as client:
            client.add(b"warm up")
            adds, cats = [], []
            for seed in range(REPEAT):
                content = _content(seed + 1)  # new bytes: nothing is already stored
                start = time.perf_counter()
                [entry] = client.add(content, name="bench.bin")
                adds.append(time.perf_counter() - start)
                start = time.perf_counter()
                back = client.cat(entry.cid)
                cats.append(time.perf_counter() - start)
                if back != content or str(unixfs.cid_of(back)) != entry.cid:
                    raise RuntimeError("cat did not give back what add stored")
        rows.append(_row("ipfs: add 64 MiB (loopback, durable blockstore)", adds))
        rows.append(_row("ipfs: cat 64 MiB (loopback, hashes checked on read)", cats))
    finally:
        dev.stop()
        shutil.rmtree(store, ignore_errors=True)
    return rows


def main() -> int:
    rows = bench()
    width = max(len(r[0]) for r in rows)
    for name, seconds, rate in rows:
        print(f"{name:<{width}}  {seconds:>8.3f} s  {rate}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``lab.watch``: the prefill of a 10,000-block window, reading ``watch.frame`` of 10,000 rows
(goal <= 5 ms), how long a block takes from its arrival at the client to the frame, and the
memory of a watch holding 10,000 blocks, at the fastest block time the devnet keeps up with.

The devnet runs in its own process (``feeslab serve``, ``feeslab.devnet.process``), so the
client's memory and time are the watch's alone. The watch subscribes to ``newHeads`` over
the WebSocket and fetches the headers it misses and each batch's ``eth_feeHistory`` over HTTP.

* **Prefill** [s]: ``watch(lab, blocks=10_000)`` returns with the window full: the head, then
  10,000 headers and 10 fee histories in one batched request, parsed into the ring.
* **Frame read** [s]: ``watch.frame`` of 10,000 rows, each read after the rows changed (a
  new block), so each builds the DataFrame from the ring's column arrays
  (``feeslab.frames.watch.WatchRing``); the median of ``READS`` reads. Goal: at most
  ``FRAME_GOAL``, on a chain of ``READ_BLOCK_TIME`` blocks (Lesson 11's pace; mainnet's is
  12 s). The same reads while the watch follows 200 blocks a second are reported beside it:
  there the reading thread shares the GIL with the watch's thread and the loop thread, both
  busy, so it waits for its turns. Before the ring, the frame was built from row dicts: 483 ms.
* **Lag** [s]: from when the header was read off the socket
  (``Subscription.received_ns``) to when its row, with its fee history, is in the frame
  (``Watch.latencies``): the fee history's round trip, plus any wait behind earlier blocks.
  p50 and p95 over the ``FOLLOW`` blocks followed after the prefill.
* **Memory**: the client's resident set with 10,000 blocks held (the ring's arrays are
  allocated at the start: it does not grow as blocks come).

Block time: ``BLOCK_TIME`` (5 ms, 200 blocks a second). The devnet allows any positive block
time, but it pushes heads at most every ``block_time / 4`` and a faster chain outruns the
client's one ``eth_feeHistory`` round trip per notification: then the lag measures a queue.

``bench()`` returns ``(name, seconds, note)`` rows like ``benchmarks/run.py``'s; run alone,
``python benchmarks/watch.py`` prints them.
"""

from __future__ import annotations

import gc
import statistics
import time

import numpy as np
import psutil

import feeslab
from feeslab.devnet.process import SpawnedDevnet, spawn
from feeslab.watch import Watch, watch

BLOCK_TIME = 0.005  # [s]
BLOCKS = 10_000
FOLLOW = 2_000  # blocks followed after the prefill, for the lag
READS = 31  # frame reads timed, each after a change
FRAME_GOAL = 0.005  # [s] reading watch.frame of 10,000 rows (issue 37)
READ_BLOCK_TIME = 0.25  # [s] the chain's pace while the goal's reads are timed
SEED = 7


def _rss() -> int:
    gc.collect()
    return int(psutil.Process().memory_info().rss)


def _connect(devnet: SpawnedDevnet) -> feeslab.Lab:
    return feeslab.connect(url=devnet.url, api_key=devnet.api_key,
                           api_key_secret=devnet.api_key_secret, cache=False,
                           progress=False)  # fmt: skip


def _reads(w: Watch) -> list[float]:
    """``READS`` reads of ``w.frame``, each after the rows changed: seconds each."""
    reads = []
    for _ in range(READS):
        assert w.wait_for(w.added + 1, timeout=60), w
        read = time.perf_counter()
        frame = w.frame
        reads.append(time.perf_counter() - read)
        assert len(frame) == w.blocks
    return reads


def bench_read(blocks: int = BLOCKS, block_time: float = READ_BLOCK_TIME) -> list[float]:
    """The goal's reads: a watch of ``blocks`` rows on a chain of ``block_time`` blocks."""
    with (
        spawn(seed=SEED, block_time=block_time, daily_credits=10**15,
              credits_per_second=10**12) as devnet,
        _connect(devnet) as lab,
        watch(lab, blocks=blocks) as w,
    ):  # fmt: skip
        return _reads(w)


def bench(blocks: int = BLOCKS, block_time: float = BLOCK_TIME) -> list[tuple[str, float, str]]:
    with (
        spawn(seed=SEED, block_time=block_time, daily_credits=10**15,
              credits_per_second=10**12) as devnet,
        _connect(devnet) as lab,
    ):  # fmt: skip
        started = time.perf_counter()
        w = watch(lab, blocks=blocks)
        prefill = time.perf_counter() - started
        assert w.mode == "websocket" and w.error is None, w.error
        held = len(w.frame)
        assert held == blocks, held  # the window full before any new head
        busy = _reads(w)
        follow_start, added_start = time.monotonic(), w.added
        assert w.wait_for(added_start + FOLLOW, timeout=600), w
        elapsed = time.monotonic() - follow_start
        followed = w.added - added_start
        rss = _rss()
        w.stop()
        frame = w.frame
        numbers = frame["block_number"].to_numpy()
        assert (np.diff(numbers) == 1).all(), "a gap or a repeat"
        lags = np.array(w.latencies)
        error = w.error
    assert error is None, error
    calm = bench_read(blocks)  # after the memory is read: a second watch in this process
    p50, p95 = np.percentile(lags[-min(len(lags), FOLLOW):], [50, 95])
    read = statistics.median(calm)
    verdict = "PASS" if read <= FRAME_GOAL else "FAIL"
    return [
        (f"watch: prefill of {blocks:,} blocks (watch() returns with them)", prefill,
         f"{blocks / prefill:,.0f} blocks/s: the head, then headers and fee history in one "
         "batched request"),
        (f"GOAL watch.frame of {blocks:,} rows read <= {FRAME_GOAL * 1000:g} ms", read,
         f"median of {READS} reads, each after a new block ({READ_BLOCK_TIME * 1000:g} ms "
         f"blocks; max {max(calm) * 1000:.1f} ms), {len(frame.columns)} columns: {verdict}"),
        (f"watch: watch.frame of {blocks:,} rows read while following "
         f"{1 / block_time:,.0f} blocks/s", statistics.median(busy),
         f"median of {READS} reads (max {max(busy) * 1000:.1f} ms): the GIL shared with the "
         "watch's and the loop's busy threads"),
        (f"watch: block arrival -> frame, p50 ({block_time * 1000:g} ms blocks)", float(p50),
         f"{followed / elapsed:,.0f} blocks/s followed over {followed:,} blocks"),
        (f"watch: block arrival -> frame, p95 ({block_time * 1000:g} ms blocks)", float(p95),
         "the header read off the WebSocket to its row (with eth_feeHistory) in the frame"),
        (f"watch: memory of {blocks:,} blocks held", 0.0,
         f"{rss / 2**20:,.0f} MiB client RSS (the whole client: Python, pandas, httpx)"),
    ]


if __name__ == "__main__":
    for name, seconds, note in bench():
        print(f"{name:<60} {seconds * 1000:10.2f} ms  {note}")

"""``lab.watch``: how long a block takes from its arrival at the client to the frame, and the
memory of a watch holding 10,000 blocks, at the fastest block time the devnet keeps up with.

The devnet runs in its own process (``feeslab serve``, ``feeslab.devnet.process``), so the
client's memory and time are the watch's alone. The watch subscribes to ``newHeads`` over
the WebSocket and fetches each block's ``eth_feeHistory`` over HTTP.

* **Lag** [s]: from when the header was read off the socket
  (``Subscription.received_ns``) to when its row, with its fee history, is in the frame
  (``Watch.latencies``): the fee history's round trip, plus any wait behind earlier blocks.
  p50 and p95 over the last 4,096 blocks of the run (what ``Watch.latencies`` keeps).
* **Memory**: the client's resident set growth from 1,000 to 10,000 blocks held, per block,
  and the time to build the 10,000-row frame (``watch.frame``, made when read).

Block time: ``BLOCK_TIME`` (5 ms, 200 blocks a second). The devnet allows any positive block
time, but it pushes heads at most every ``block_time / 4`` and a faster chain outruns the
client's one ``eth_feeHistory`` round trip per notification: then the lag measures a queue.

``bench()`` returns ``(name, seconds, note)`` rows like ``benchmarks/run.py``'s; run alone,
``python benchmarks/watch.py`` prints them.
"""

from __future__ import annotations

import gc
import time

import numpy as np
import psutil

import feeslab
from feeslab.devnet.process import spawn
from feeslab.watch import watch

BLOCK_TIME = 0.005  # [s]
BLOCKS = 10_000
SEED = 7


def _rss() -> int:
    gc.collect()
    return int(psutil.Process().memory_info().rss)


def bench(blocks: int = BLOCKS, block_time: float = BLOCK_TIME) -> list[tuple[str, float, str]]:
    with spawn(seed=SEED, block_time=block_time, daily_credits=10**15,
               credits_per_second=10**12) as devnet:  # fmt: skip
        lab = feeslab.connect(url=devnet.url, api_key=devnet.api_key,
                              api_key_secret=devnet.api_key_secret, cache=False,
                              progress=False)  # fmt: skip
        with lab:
            w = watch(lab, blocks=blocks)
            assert w.mode == "websocket"
            started = time.monotonic()
            w.wait_for(1_000, timeout=600)
            rss_1k, rows_1k = _rss(), len(w._rows)
            w.wait_for(blocks + 200, timeout=1_800)
            elapsed = time.monotonic() - started
            rss_full = _rss()
            w.stop()  # then every row held is complete
            frame_start = time.perf_counter()
            frame = w.frame
            frame_seconds = time.perf_counter() - frame_start
            lags = np.array(w.latencies)
            numbers = frame["block_number"].to_numpy()
            assert (np.diff(numbers) == 1).all(), "a gap or a repeat"
            assert len(frame) >= blocks - 1_000, len(frame)  # (a batch cut short by stop())
            added, error = w._added, w.error
    assert error is None, error
    per_block = (rss_full - rss_1k) / max(1, blocks - rows_1k)
    p50, p95 = np.percentile(lags[-4096:], [50, 95])
    rate = added / elapsed
    return [
        (f"watch: block arrival -> frame, p50 ({block_time * 1000:g} ms blocks)", float(p50),
         f"{rate:,.0f} blocks/s followed over {added:,} blocks"),
        (f"watch: block arrival -> frame, p95 ({block_time * 1000:g} ms blocks)", float(p95),
         "the header read off the WebSocket to its row (with eth_feeHistory) in the frame"),
        (f"watch: frame of {blocks:,} blocks built (watch.frame)", frame_seconds,
         f"{len(frame.columns)} columns"),
        (f"watch: memory of {blocks:,} blocks held", 0.0,
         f"{rss_full / 2**20:,.0f} MiB client RSS; {per_block:,.0f} bytes/block "
         f"(growth {rows_1k:,} -> {blocks:,} rows)"),
    ]


if __name__ == "__main__":
    for name, seconds, note in bench():
        print(f"{name:<60} {seconds * 1000:10.2f} ms  {note}")

"""Peak memory and warm reruns of long uncle scans: feeslab against one ``feeslab serve``.

Each scan runs in a fresh Python process (``ru_maxrss`` is a process's peak), on blocks of
chain 1 (seed 0) ending at ``STOP``: the peak RSS should be flat in the range (the scan
streams), and a warm rerun of settled blocks reads Parquet pieces back, sending nothing.

``SIZES`` are the ranges measured, on chain 1 lengthened to ``HEIGHT`` (``feeslab serve
--height``: blocks up to 210,000 are the default chain's, the rest proof-of-stake blocks of the
last fork); a range past 200,000 ends 1,000 blocks below the head and runs one round, not two.
Cold runs with and without the cache alternate (the fastest of ``ROUNDS`` each, the first run
without a cache untimed: it warms the server's own caches); the peak RSS is the highest of all
runs.
``python benchmarks/scan_memory.py`` prints the rows; ``bench()`` returns them for ``run.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

from uncle_scan import CREDITS_PER_SECOND, DAILY_CREDITS, SEED, feeslab_serve, warm

STOP = 200_000  # settled: chain 1 reaches block 210,000 at seed 0
# [blocks] each scan ends at STOP; a longer one (on a longer chain) a little below the head
SIZES = (20_000, 200_000, 1_000_000)
HEIGHT = 1_001_000  # feeslab serve --height: chain 1 lengthened so the 1,000,000-block scan fits
GOAL_SIZE = 200_000  # the scan the warm-rerun and cache-cold goals are about
BELOW_HEAD = 1_000  # [blocks] a longer scan's end below the head: settled, with room
ROUNDS = 4  # cold runs each way of a range up to STOP: the fastest of two moved by +-10 %
RSS_GOAL_MIB = 300
WARM_GOAL_S = 0.5

# one scan in a child process: cold (cache given or off), then (with a cache) a warm rerun in
# a new Lab on the same directory; prints wall times, requests and the process's peak RSS
_CHILD = r"""
import json, resource, sys, time
import feeslab
url, key, secret, start, stop, cache = sys.argv[1:7]
cache = False if cache == "off" else cache
def lab():
    return feeslab.connect(url=url, api_key=key, api_key_secret=secret, cache=cache,
                           progress=False)
out = {}
with lab() as first:
    began = time.perf_counter()
    scan = first.uncles(int(start), int(stop))
    out["cold"] = time.perf_counter() - began
    out["uncles"] = len(scan.uncles)
    out["requests"] = first.node.transport.attempts
del scan
try:  # this process's own peak: ru_maxrss on Linux keeps the forking parent's peak too
    status = open("/proc/self/status").read()
    out["rss_mib"] = int(status.split("VmHWM:")[1].split()[0]) / 1024
except (OSError, IndexError):
    out["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
if cache is not False:
    with lab() as again:
        again.data_source.prepare()  # a new Lab learns the cache's key: one request, untimed
        sent = again.node.transport.attempts
        began = time.perf_counter()
        rerun = again.uncles(int(start), int(stop))
        out["warm"] = time.perf_counter() - began
        out["warm_requests"] = again.node.transport.attempts - sent
        assert len(rerun.uncles) == out["uncles"]
print(json.dumps(out))
"""


def scan(served, start: int, stop: int, cache: str) -> dict:
    args = [sys.executable, "-c", _CHILD, served.url, served.key, served.secret, str(start),
            str(stop), cache]
    done = subprocess.run(args, capture_output=True, text=True, check=True, timeout=1_800)
    return json.loads(done.stdout.strip().splitlines()[-1])


def head(served) -> int:
    """The served chain's head [block number]."""
    import httpx

    body = {"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []}
    answer = httpx.post(served.rpc, json=body, timeout=60).raise_for_status().json()
    return int(answer["result"], 16)


def bench() -> list[tuple[str, float, str]]:
    rows = []
    serve = ("--seed", str(SEED), "--credits-per-second", str(CREDITS_PER_SECOND),
             "--daily-credits", str(DAILY_CREDITS), "--height", str(HEIGHT))
    with feeslab_serve(*serve) as served:
        warm(served)
        top = head(served)
        peaks = {}
        for size in SIZES:
            stop = STOP if size <= STOP else top + 1 - BELOW_HEAD
            if size > stop:
                print(f"skipped: a {size:,}-block scan needs a chain past block "
                      f"{size + BELOW_HEAD:,} (this one's head is {top:,})", flush=True)
                continue
            # alternated, off first and last: the server's own caches warm up on the first
            offs, ons = [scan(served, stop - size, stop, "off")], []
            for _ in range(ROUNDS if size <= STOP else 1):  # a 1,000,000-block round: minutes
                with tempfile.TemporaryDirectory(prefix="feeslab-bench-cache-") as cache_dir:
                    ons.append(scan(served, stop - size, stop, cache_dir))
                offs.append(scan(served, stop - size, stop, "off"))
            off = min(offs[1:], key=lambda r: r["cold"])
            on = min(ons, key=lambda r: r["cold"])
            off["rss_mib"] = max(r["rss_mib"] for r in offs)
            on["rss_mib"] = max(r["rss_mib"] for r in ons)
            rows.append((f"uncle scan {size:,} blocks, cache off", off["cold"],
                         f"peak RSS {off['rss_mib']:,.0f} MiB, {off['requests']} requests, "
                         f"{off['uncles']:,} uncles"))
            rows.append((f"uncle scan {size:,} blocks, cache cold", on["cold"],
                         f"peak RSS {on['rss_mib']:,.0f} MiB, {on['requests']} requests; "
                         f"{on['cold'] / off['cold']:.2f}x cache off"))
            rows.append((f"uncle scan {size:,} blocks, warm (new Lab)", on["warm"],
                         f"{on['warm_requests']} requests"))
            peaks[size] = max(off["rss_mib"], on["rss_mib"])
            if size == GOAL_SIZE:
                ok = on["warm"] <= WARM_GOAL_S and on["warm_requests"] == 0
                rows.append((f"GOAL warm {size:,}-block scan <= {WARM_GOAL_S} s, 0 requests",
                             on["warm"], "PASS" if ok else "FAIL"))
                ratio = on["cold"] / off["cold"]
                rows.append(("GOAL cold scan with the cache <= 1.15x cache off", ratio,
                             "PASS" if ratio <= 1.15 else "FAIL"))
    if peaks:  # flat in the range: every size under the goal
        rss = max(peaks.values())
        sizes = " / ".join(f"{size:,}" for size in peaks)
        spread = rss - min(peaks.values())
        rows.append((f"GOAL peak RSS of scans of {sizes} blocks <= {RSS_GOAL_MIB} MiB", rss,
                     f"{'PASS' if rss <= RSS_GOAL_MIB else 'FAIL'} (spread {spread:.0f} MiB)"))
    return rows


if __name__ == "__main__":
    for name, seconds, note in bench():
        print(f"{name:<55}  {seconds:>9.3f}  {note}")

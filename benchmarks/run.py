"""feeslab benchmarks: ``make bench`` prints one table.

Measures, on this machine:

* chain generation: how long the devnet takes to generate each chain's default
  history from a cold start (a fresh seed, so no shared history is reused);
* the devnet over loopback HTTP: batched ``eth_getBlockByNumber``,
  ``eth_getUncleByBlockNumberAndIndex`` and ``eth_feeHistory``, and the Gas
  API's ``baseFeeHistory``, in requests and calls per second;
* the frames' parsers (``benchmarks/frames.py``) and the 20,000-block uncle scan by feeslab
  against web3.py at 0 and 50 ms of latency (``benchmarks/uncle_scan.py``), with the issue's
  goals marked PASS or FAIL;
* the same scan and 200,000 blocks of fee history against AsyncWeb3 (8 concurrent batches of
  500, keep-alive) and a plain ``httpx.AsyncClient`` + orjson client at 0 and 50 ms
  (``benchmarks/peers.py``), and the peak RSS, cold and warm times of 20,000- and
  200,000-block scans (``benchmarks/scan_memory.py``);
* the IPFS storage API (``benchmarks/ipfs.py``): ``add`` and ``cat`` of 64 MiB over loopback
  against a ``feeslab serve`` process (goal 50 MiB/s each), and CIDs computed locally;
* era1 files (``benchmarks/era1.py``): the uncle scan in MiB/s per core on devnet-exported
  files (goal 100 MiB/s) and on the real first mainnet file; beside it, in the same run, the
  Ere uncle scan of the same blocks and the Era reader's checked payloads of real beacon
  blocks (goal: each at least as fast per core as the era1 scan);
* the devnet's server CPU (``benchmarks/devnet_perf.py``): headers rescanned over 20,000 and
  200,000 blocks and eth_call at 10,000 distinct blocks, before and after issue 14's changes;
* import weight (``benchmarks/import_weight.py``): ``import feeslab`` in a fresh process, its
  peak memory and wall time (goal 100 MiB and 0.5 s), beside the client stack's and pandas'.

Timings are figures to record with the machine they ran on, never assertions: a missed goal
is printed as FAIL, and the run still succeeds. Each module's rows are printed (flushed) as soon
as it finishes, so a long run shows how far it got; at the end the whole table is printed and
written into
``docs/benchmarks.md`` between its markers (``benchmarks/_table.py``), with the machine, its
load before and after, the Python and pandas versions, the commit and the date.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable

import _table  # benchmarks/_table.py: the table into docs/benchmarks.md
import backtest  # benchmarks/backtest.py: 8 fee estimators and the backtest on 1,000,000 blocks
import blobs  # benchmarks/blobs.py: the blob rule beside next_base_fee
import devnet_perf  # benchmarks/devnet_perf.py: the devnet's headers and eth_call, before/after
import era1  # benchmarks/era1.py
import frames  # benchmarks/frames.py: the script's directory is on sys.path
import httpx
import import_weight  # benchmarks/import_weight.py: import feeslab's peak memory and time
import ipfs  # benchmarks/ipfs.py
import peers  # benchmarks/peers.py: uncle scan and fee history against AsyncWeb3 and httpx
import scan_memory  # benchmarks/scan_memory.py: peak RSS and warm reruns of long scans
import uncle_scan  # benchmarks/uncle_scan.py
import watch  # benchmarks/watch.py: lab.watch's lag and memory
from _timing import median_seconds  # benchmarks/_timing.py

import feeslab.devnet
from feeslab.devnet.chain import Chain, devnet_params

BATCH = 100

# the frames' goals from the issue: row name -> most seconds allowed
FRAME_GOALS = {
    "frames: parse_base_fee_history (1,000,000 strings)": 1.0,
    "frames: parse_uncles (100,000 uncles)": 2.0,
}


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )


def bench_generation(seed: int) -> list[tuple[str, float, str]]:
    rows = []
    for params in devnet_params().values():
        chain = Chain(params, seed)
        start = time.perf_counter()
        chain.warm()
        elapsed = time.perf_counter() - start
        rate = (params.height + 1) / elapsed
        rows.append((f"generate chain {params.chain_id} ({params.height:,} blocks)",
                     elapsed, f"{rate:,.0f} blocks/s"))
    return rows


def bench_http(dev) -> list[tuple[str, float, str]]:
    rows = []
    url = f"{dev.url}/v3/{dev.api_key}"
    with httpx.Client(timeout=60) as client:

        def batch(method, params_for):
            body = [
                {"jsonrpc": "2.0", "id": i, "method": method, "params": params_for(i)}
                for i in range(BATCH)
            ]

            def run():
                answer = client.post(url, json=body)
                answer.raise_for_status()
                assert len(answer.json()) == BATCH

            return run

        cases = [
            ("eth_getBlockByNumber", lambda i: [hex(150_000 + i), False]),
            ("eth_getUncleByBlockNumberAndIndex", lambda i: [hex(10_000 + i), "0x0"]),
            ("eth_feeHistory", lambda i: [hex(1024), hex(200_000 - 1024 * i), [10, 50, 90]]),
        ]
        for method, params_for in cases:
            run = batch(method, params_for)
            run()  # warm
            seconds = median_seconds(run, 5)
            rows.append((f"{method}, batches of {BATCH}", seconds,
                         f"{BATCH / seconds:,.0f} calls/s"))

        rows.extend(bench_execution(client, url, dev))

        gas_url = f"{dev.url}/networks/1/baseFeeHistory"
        auth = (dev.api_key, dev.api_key_secret)

        def gas():
            for _ in range(20):
                client.get(gas_url, auth=auth).raise_for_status()

        gas()
        seconds = median_seconds(gas, 5) / 20
        rows.append(("Gas API baseFeeHistory", seconds, f"{1 / seconds:,.0f} requests/s"))
    return rows


def bench_execution(client: httpx.Client, url: str, dev) -> list[tuple[str, float, str]]:
    """eth_call and eth_estimateGas against the deployed token, batched, at the head."""
    listing = dev.contracts
    token = next(c["address"] for c in listing["contracts"] if c["name"] == "FeeslabToken")
    holders = listing["accounts"]["holders"]
    balance_of = "0x70a08231"  # balanceOf(address)
    transfer = "0xa9059cbb"  # transfer(address,uint256)

    def word(value: str | int) -> str:
        return (value[2:] if isinstance(value, str) else f"{value:x}").rjust(64, "0")

    calls = [
        {"jsonrpc": "2.0", "id": i, "method": "eth_call",
         "params": [{"from": holders[0], "to": token,
                     "data": balance_of + word(holders[i % len(holders)])}, "latest"]}
        for i in range(BATCH)
    ]
    estimates = [
        {"jsonrpc": "2.0", "id": i, "method": "eth_estimateGas",
         "params": [{"from": holders[i % 10], "to": token,
                     "data": transfer + word(holders[-1 - i % 50]) + word(10**18)}, "latest"]}
        for i in range(BATCH)
    ]
    rows = []
    for name, body in (("eth_call", calls), ("eth_estimateGas", estimates)):

        def run(body=body):
            answer = client.post(url, json=body)
            answer.raise_for_status()
            assert all("result" in item for item in answer.json()), answer.text[:300]

        run()  # warm: builds the state at the head
        seconds = median_seconds(run, 5)
        rows.append((f"{name} (token), batches of {BATCH}", seconds,
                     f"{BATCH / seconds:,.0f} calls/s"))
    return rows


def bench_frames() -> list[tuple[str, float, str]]:
    """``benchmarks/frames.py``'s rows, with a verdict on the ones the issue sets a goal for."""
    rows = []
    for name, seconds, rate in frames.bench():
        limit = FRAME_GOALS.get(name)
        if limit is not None:
            rate += f"; GOAL <= {limit:g} s: {'PASS' if seconds <= limit else 'FAIL'}"
        rows.append((name, seconds, rate))
    return rows


def _section(
    rows: list[tuple[str, float, str]], title: str, measure: Callable[[], list]
) -> None:
    """Run one module's benchmarks, print its rows at once (flushed) and keep them."""
    start = time.perf_counter()
    measured = measure()
    rows.extend(measured)
    took = f"{title}: {time.perf_counter() - start:,.0f} s wall"
    print(_table.text(measured, title=took) + "\n", flush=True)


def main(argv: list[str]) -> int:
    """Every section, the table written into docs/benchmarks.md; with section names (``python
    benchmarks/run.py backtest watch``) only those, printed and not written."""
    before = _table.machine_facts()  # the load before this run adds its own
    print(f"machine: {machine()}")
    print(uncle_scan.NOTE, flush=True)
    sections: list[tuple[str, str, Callable[[], list]]] = [
        ("import", "import weight (benchmarks/import_weight.py)", import_weight.bench),
        ("generation", "chain generation", lambda: bench_generation(
            seed=int(time.time()) % 100_000 + 1_000_000)),
        ("http", "devnet over HTTP", _bench_devnet),
        ("frames", "frames (benchmarks/frames.py)", bench_frames),
        ("uncle_scan", "uncle scan (benchmarks/uncle_scan.py)", uncle_scan.bench),
        ("peers", "peers (benchmarks/peers.py)", peers.bench),
        ("scan_memory", "scan memory (benchmarks/scan_memory.py)", scan_memory.bench),
        ("ipfs", "IPFS (benchmarks/ipfs.py)", ipfs.bench),
        ("blobs", "blobs (benchmarks/blobs.py)", blobs.bench),
        ("backtest", "fee suggestions (benchmarks/backtest.py)", backtest.bench),
        ("watch", "watch (benchmarks/watch.py)", watch.bench),
        ("era1", "era1 (benchmarks/era1.py)", era1.bench),
        ("devnet_perf", "devnet server CPU (benchmarks/devnet_perf.py)", devnet_perf.bench),
    ]  # fmt: skip
    unknown = set(argv) - {name for name, _, _ in sections}
    if unknown:
        print(f"unknown sections {sorted(unknown)}; known: "
              f"{', '.join(name for name, _, _ in sections)}", file=sys.stderr)  # fmt: skip
        return 2
    rows: list[tuple[str, float, str]] = []
    for name, title, measure in sections:
        if not argv or name in argv:
            _section(rows, title, measure)
    print(_table.text(rows), flush=True)
    if argv:  # a part of the run: docs/benchmarks.md keeps the last whole table
        return 0
    written = _table.write(rows, before, _table.machine_facts())
    print(f"table written to {written}")
    return 0


def _bench_devnet() -> list[tuple[str, float, str]]:
    """A devnet's start to its first answer, then its HTTP methods (``bench_http``)."""
    rows = []
    start = time.perf_counter()
    dev = feeslab.devnet.start(seed=0, daily_credits=10**12, credits_per_second=10**9)
    try:
        first = httpx.post(
            f"{dev.url}/v3/{dev.api_key}",
            json={"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []},
        )
        first.raise_for_status()
        rows.append(("devnet start to first answer", time.perf_counter() - start, ""))
        for chain in dev.chains:
            chain.warm()
        rows.extend(bench_http(dev))
    finally:
        dev.stop()
    return rows


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

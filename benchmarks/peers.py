"""feeslab against the strongest peers: the 20,000-block uncle scan and 200,000 blocks of fee
history, at 0 ms and 50 ms of added latency, ratios measured side by side in one run.

Peers, each with its best usage:

* **AsyncWeb3**: ``AsyncHTTPProvider.make_batch_request`` with batches of 500, 8 batches in
  flight (``asyncio`` with a semaphore), one provider (aiohttp's keep-alive session) for the
  whole scan; headers first, then the uncles they list.
* **plain client**: ``httpx.AsyncClient`` (keep-alive, 8 connections) sending the same
  batches as bytes made and read by orjson: the ceiling a hand-written client reaches.
* **feeslab**: ``lab.uncles`` / ``lab.fee_history`` with the defaults a user gets (a cache,
  here a new empty directory per run: a first run, which writes the cache), and with
  ``cache=False``.

feeslab's uncle scan asks ``eth_getUncleCountByBlockNumber`` (the same 80 credits as a
header, ~1/35 of the bytes), 1,000 a request (geth's limit; headers go 500 a request), where
the peers above ask for headers as the issue that set the goals defined them. So that the
method is not mistaken for the client, both peers also run **with uncle counts**: the same
calls and batches as feeslab (rows "..., uncle counts"; reported, no goal).

For fee history the peers send the same ``eth_feeHistory`` calls (1,024 blocks each, newest
first as feeslab cuts them) 8 to a request, 8 requests in flight, and read the base fees,
gas ratios and tips into a frame (the plain client with ``int(x, 16)``).

Latency is ``feeslab serve --latency-ms`` (a sleep before each HTTP request in the server),
one server per latency (``uncle_scan.feeslab_serve``). Rounds alternate the clients, each
round starting with the next one, so drift on a shared machine falls on all alike; medians are
reported. Every client must find the
same uncles (and the same base fees) before any time is reported.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pandas as pd
from uncle_scan import (
    CREDITS_PER_SECOND,
    DAILY_CREDITS,
    SEED,
    START,
    STOP,
    Served,
    feeslab_serve,
    warm,
)
from web3 import AsyncHTTPProvider

import feeslab

BATCH = 500
COUNT_BATCH = 1_000  # uncle counts a request, as feeslab sends them
CONCURRENCY = 8
LATENCIES_MS = (0, 50)
ROUNDS = {0: 6, 50: 6}  # uncle scans: a multiple of the six clients, each starts a round once
FEE_ROUNDS = {0: 8, 50: 8}  # fee history: four clients, each starts a round twice
FEE_START, FEE_STOP = 0, 200_000
FEE_PER_REQUEST = 8
PERCENTILES = [10, 50, 90]
GOALS = (("AsyncWeb3", 1.5), ("plain client", 0.95))  # uncle scan: feeslab >= x times peer
FEE_GOAL = 1.2  # fee history: feeslab within x times the plain client

Uncle = tuple[int, int, str]


# -- peers ---------------------------------------------------------------------------------------


async def _gather_limited(jobs: list[Callable[[], Any]]) -> list[Any]:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(job):
        async with gate:
            return await job()

    return await asyncio.gather(*(one(job) for job in jobs))


def _split(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


async def _web3_scan(served: Served, start: int, stop: int, counts: bool = False
                     ) -> list[Uncle]:
    provider = AsyncHTTPProvider(served.rpc, request_kwargs={"timeout": 120})
    try:
        parts = _split(list(range(start, stop)), COUNT_BATCH if counts else BATCH)

        def headers(numbers):
            if counts:
                return lambda: provider.make_batch_request(
                    [("eth_getUncleCountByBlockNumber", [hex(n)]) for n in numbers])
            return lambda: provider.make_batch_request(
                [("eth_getBlockByNumber", [hex(n), False]) for n in numbers])

        answers = await _gather_limited([headers(p) for p in parts])
        wanted = [(n, i) for part, got in zip(parts, answers, strict=True)
                  for n, a in zip(part, got, strict=True)
                  for i in range(int(a["result"], 16) if counts
                                 else len(a["result"]["uncles"]))]

        def uncles(pairs):
            return lambda: provider.make_batch_request(
                [("eth_getUncleByBlockNumberAndIndex", [hex(n), hex(i)]) for n, i in pairs])

        pieces = _split(wanted, BATCH)
        got = await _gather_limited([uncles(p) for p in pieces])
        return [(n, i, a["result"]["hash"]) for piece, answers in zip(pieces, got, strict=True)
                for (n, i), a in zip(piece, answers, strict=True)]
    finally:
        await provider.disconnect()


async def _post_all(client: httpx.AsyncClient, url: str, bodies: list[list[dict]]) -> list[list]:
    async def post(body):
        answer = await client.post(url, content=orjson.dumps(body),
                                   headers={"Content-Type": "application/json"})
        answer.raise_for_status()
        items = orjson.loads(answer.content)
        items.sort(key=lambda item: item["id"])
        return [item["result"] for item in items]

    return await _gather_limited([lambda b=b: post(b) for b in bodies])


def _bodies(method: str, params: list[list], batch: int = BATCH) -> list[list[dict]]:
    calls = [{"jsonrpc": "2.0", "id": k, "method": method, "params": p}
             for k, p in enumerate(params)]
    return _split(calls, batch)


def _client() -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    return httpx.AsyncClient(timeout=120, limits=limits)


async def _plain_scan(served: Served, start: int, stop: int, counts: bool = False
                      ) -> list[Uncle]:
    async with _client() as client:
        numbers = list(range(start, stop))
        if counts:
            parts = await _post_all(client, served.rpc, _bodies(
                "eth_getUncleCountByBlockNumber", [[hex(n)] for n in numbers], COUNT_BATCH))
            found = [int(c, 16) for part in parts for c in part]
        else:
            parts = await _post_all(client, served.rpc, _bodies(
                "eth_getBlockByNumber", [[hex(n), False] for n in numbers]))
            found = [len(h["uncles"]) for part in parts for h in part]
        wanted = [(n, i) for n, c in zip(numbers, found, strict=True) for i in range(c)]
        parts = await _post_all(client, served.rpc, _bodies(
            "eth_getUncleByBlockNumberAndIndex", [[hex(n), hex(i)] for n, i in wanted]))
        found = [u for part in parts for u in part]
        return [(n, i, u["hash"]) for (n, i), u in zip(wanted, found, strict=True)]


def _fee_params() -> list[list]:
    newest = range(FEE_STOP - 1, FEE_START - 1, -1024)
    return [[hex(min(1024, n - FEE_START + 1)), hex(n), PERCENTILES] for n in reversed(newest)]


def _fee_frame(results: list[dict]) -> pd.DataFrame:
    """What a plain client makes of the answers: ints by ``int(x, 16)``, one row a block."""
    numbers, fees, ratios, tips = [], [], [], []
    for r in results:
        oldest = int(r["oldestBlock"], 16)
        used = r["gasUsedRatio"]
        numbers.extend(range(oldest, oldest + len(used)))
        fees.extend(int(x, 16) for x in r["baseFeePerGas"][:-1])
        ratios.extend(used)
        tips.extend([int(x, 16) for x in row] for row in r["reward"])
    frame = pd.DataFrame({"block_number": numbers, "base_fee_wei": fees,
                          "gas_used_ratio": ratios})
    for j, p in enumerate(PERCENTILES):
        frame[f"reward_p{p}_wei"] = [row[j] for row in tips]
    return frame


async def _plain_fees(served: Served) -> pd.DataFrame:
    calls = [{"jsonrpc": "2.0", "id": k, "method": "eth_feeHistory", "params": p}
             for k, p in enumerate(_fee_params())]
    async with _client() as client:
        parts = await _post_all(client, served.rpc, _split(calls, FEE_PER_REQUEST))
    return _fee_frame([r for part in parts for r in part])


async def _web3_fees(served: Served) -> pd.DataFrame:
    provider = AsyncHTTPProvider(served.rpc, request_kwargs={"timeout": 120})
    try:
        def job(params):
            return lambda: provider.make_batch_request([("eth_feeHistory", p) for p in params])

        parts = await _gather_limited([job(p) for p in _split(_fee_params(), FEE_PER_REQUEST)])
    finally:
        await provider.disconnect()
    return _fee_frame([a["result"] for part in parts for a in part])


# -- feeslab -------------------------------------------------------------------------------------


def _lab(served: Served, cache: Any) -> feeslab.Lab:
    return feeslab.connect(url=served.url, api_key=served.key, api_key_secret=served.secret,
                           cache=cache, progress=False)


def _feeslab(served: Served, cache: bool, work: Callable[[feeslab.Lab], Any]) -> Any:
    with (tempfile.TemporaryDirectory(prefix="feeslab-bench-cache-") as folder,
          _lab(served, folder if cache else False) as lab):
        return work(lab)


def _uncles_of(lab: feeslab.Lab) -> list[Uncle]:
    frame = lab.uncles(START, STOP).uncles
    return list(zip(frame["block_number"].tolist(), frame["uncle_index"].tolist(),
                    frame["hash"].tolist(), strict=True))


def _fees_of(lab: feeslab.Lab) -> pd.DataFrame:
    return lab.fee_history(FEE_START, FEE_STOP, percentiles=PERCENTILES)


# -- the run -------------------------------------------------------------------------------------


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    value = fn()
    return time.perf_counter() - began, value


def _rounds(clients: dict[str, Callable[[], Any]], check: Callable[[str, Any], None],
            rounds: int) -> dict[str, float]:
    """Median seconds of each client over ``rounds`` alternated rounds (after one untimed)."""
    for name, fn in clients.items():
        check(name, fn())
    times: dict[str, list[float]] = {name: [] for name in clients}
    names = list(clients)
    for r in range(rounds):  # each round starts with another client: no one always follows one
        for name in names[r % len(names):] + names[: r % len(names)]:
            seconds, value = _timed(clients[name])
            check(name, value)
            times[name].append(seconds)
    return {name: statistics.median(t) for name, t in times.items()}


def at(latency_ms: int) -> list[tuple[str, float, str]]:
    args = ("--seed", str(SEED), "--latency-ms", str(latency_ms),
            "--credits-per-second", str(CREDITS_PER_SECOND), "--daily-credits", str(DAILY_CREDITS))
    rows = []
    with feeslab_serve(*args) as served:
        warm(served)
        expected = asyncio.run(_plain_scan(served, START, STOP))

        def same(name: str, found: list[Uncle]) -> None:
            if found != expected:
                raise AssertionError(f"{name} found {len(found):,} uncles, not the "
                                     f"{len(expected):,} expected")

        scans = {
            "AsyncWeb3": lambda: asyncio.run(_web3_scan(served, START, STOP)),
            "plain client": lambda: asyncio.run(_plain_scan(served, START, STOP)),
            "AsyncWeb3, uncle counts": lambda: asyncio.run(
                _web3_scan(served, START, STOP, counts=True)),
            "plain client, uncle counts": lambda: asyncio.run(
                _plain_scan(served, START, STOP, counts=True)),
            "feeslab": lambda: _feeslab(served, True, _uncles_of),
            "feeslab, cache off": lambda: _feeslab(served, False, _uncles_of),
        }
        median = _rounds(scans, same, ROUNDS[latency_ms])
        for name, seconds in median.items():
            rows.append((f"uncle scan {STOP - START:,} blocks, {latency_ms} ms: {name}", seconds,
                         f"{(STOP - START) / seconds:,.0f} blocks/s"))
        for peer, goal in GOALS:
            ratio = median[peer] / median["feeslab"]
            rows.append((f"GOAL {latency_ms} ms uncle scan: feeslab >= {goal:g}x {peer}",
                         median["feeslab"],
                         f"{ratio:.2f}x: {'PASS' if ratio >= goal else 'FAIL'}"))
        for peer, _ in GOALS:  # the same calls: what is left is the client
            ratio = median[f"{peer}, uncle counts"] / median["feeslab"]
            rows.append((f"{latency_ms} ms uncle scan: feeslab / {peer}, uncle counts",
                         median["feeslab"], f"{ratio:.2f}x (no goal)"))

        truth = asyncio.run(_plain_fees(served))

        def same_fees(name: str, frame: pd.DataFrame) -> None:
            if frame["base_fee_wei"].tolist() != truth["base_fee_wei"].tolist():
                raise AssertionError(f"{name}: other base fees than the plain client's")

        fees = {
            "AsyncWeb3": lambda: asyncio.run(_web3_fees(served)),
            "plain client": lambda: asyncio.run(_plain_fees(served)),
            "feeslab": lambda: _feeslab(served, True, _fees_of),
            "feeslab, cache off": lambda: _feeslab(served, False, _fees_of),
        }
        median = _rounds(fees, same_fees, FEE_ROUNDS[latency_ms])
        span = f"{FEE_STOP - FEE_START:,} blocks"
        for name, seconds in median.items():
            rows.append((f"fee history {span}, {latency_ms} ms: {name}", seconds, ""))
        ratio = median["feeslab"] / median["plain client"]
        rows.append((f"GOAL {latency_ms} ms fee history: feeslab <= {FEE_GOAL:g}x plain client",
                     median["feeslab"], f"{ratio:.2f}x: {'PASS' if ratio <= FEE_GOAL else 'FAIL'}"))
    return rows


def bench() -> list[tuple[str, float, str]]:
    return [row for latency in LATENCIES_MS for row in at(latency)]


if __name__ == "__main__":
    import sys

    chosen = [int(a) for a in sys.argv[1:]] or LATENCIES_MS
    for latency in chosen:
        for name, seconds, note in at(latency):
            print(f"{name:<60}  {seconds:>8.3f}  {note}", flush=True)

"""Benchmarks of the frames' parse functions on synthetic inputs of realistic shape.

``bench()`` returns ``(name, seconds, rate)`` rows like ``benchmarks/run.py``'s: the median of
a few runs, and items per second. Targets: 1,000,000 Gas API strings in <= 1 s, 100,000
uncle objects in <= 2 s. Figures to record with the machine they ran on, never assertions.
"""

from __future__ import annotations

import numpy as np
from _timing import median_seconds  # benchmarks/_timing.py

from feeslab.frames import parse_base_fee_history, parse_blocks, parse_uncles

REPEAT = 3


def _gwei_strings(n: int) -> list[str]:
    wei = np.random.default_rng(0).integers(10**8, 2 * 10**11, n).tolist()
    return [f"{w // 10**9}.{w % 10**9:09d}" for w in wei]


def _header(number: int, rng: np.random.Generator) -> dict:
    return {
        "number": hex(number),
        "hash": "0x" + rng.bytes(32).hex(),
        "parentHash": "0x" + rng.bytes(32).hex(),
        "miner": "0x" + rng.bytes(20).hex(),
        "difficulty": hex(int(rng.integers(2**50, 2**62))),
        "totalDifficulty": None,
        "gasLimit": hex(30_000_000),
        "gasUsed": hex(int(rng.integers(0, 30_000_000))),
        "timestamp": hex(1_600_000_000 + 13 * number),
        "baseFeePerGas": hex(int(rng.integers(10**9, 10**11))),
        "size": hex(540),
        "uncles": [],
        "transactions": [],
    }


def bench() -> list[tuple[str, float, str]]:
    rows = []
    n = 1_000_000
    strings = _gwei_strings(n)
    seconds = median_seconds(
        lambda: parse_base_fee_history(strings, newest_block=20_000_000), REPEAT
    )
    rows.append((f"frames: parse_base_fee_history ({n:,} strings)", seconds,
                 f"{n / seconds:,.0f} values/s"))

    rng = np.random.default_rng(1)
    m = 100_000
    uncles = [(12_000_000 + i, 0, _header(12_000_000 + i - 1 - i % 6, rng)) for i in range(m)]
    seconds = median_seconds(lambda: parse_uncles(uncles), REPEAT)
    rows.append((f"frames: parse_uncles ({m:,} uncles)", seconds, f"{m / seconds:,.0f} uncles/s"))

    blocks = [_header(15_000_000 + i, rng) for i in range(m)]
    seconds = median_seconds(lambda: parse_blocks(blocks), REPEAT)
    rows.append((f"frames: parse_blocks ({m:,} headers)", seconds, f"{m / seconds:,.0f} blocks/s"))
    return rows


if __name__ == "__main__":
    for name, seconds, rate in bench():
        print(f"{name:<50}  {seconds:>8.4f}  {rate}")

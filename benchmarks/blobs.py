"""The blob base fee rule, vectorised, beside EIP-1559's on the same 1,000,000 blocks.

``bench()`` returns ``(name, seconds, rate)`` rows like ``benchmarks/run.py``'s. Goal: the blob
rule at no more than 2x the time of ``next_base_fee`` on 1,000,000 blocks, both measured here
in one run. The blob history is made by EIP-4844's rule itself (Prague's schedule) from
Poisson blob counts whose demand wanders around the target, so the excess values and their
spread are those of a real chain; a second line runs the same rule on excess values that are
not whole blobs (as from Osaka's reserve rule), where no table of whole-blob values applies.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from _timing import median_seconds  # benchmarks/_timing.py

from feeslab.analysis.fees import blob_base_fee, next_base_fee, next_excess_blob_gas
from feeslab.protocol.blobs import GAS_PER_BLOB

REPEAT = 5
N = 1_000_000
TARGET, MAX, FRACTION = 6, 9, 5_007_716  # Prague (EIP-7691)


def _blob_history(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(excess, used) of ``n`` blocks, each excess from its parent by EIP-4844's rule."""
    rng = np.random.default_rng(4844)
    level = np.cumsum(rng.normal(0, 0.006, n))
    level -= np.convolve(level, np.ones(5001) / 5001, mode="same")  # wander, no trend
    uniform = rng.random(n).tolist()
    appetite = (TARGET * 1.3 * np.exp(level)).tolist()
    excess = np.zeros(n, dtype=np.int64)
    used = np.zeros(n, dtype=np.int64)
    e, target = 0, TARGET * GAS_PER_BLOB
    for i in range(n):
        # buyers cut back once the fee passes 0.001 gwei (elasticity 1/4)
        fee = math.exp(e / FRACTION)
        mean = appetite[i] * min(1.0, (1e6 / fee) ** 0.25)
        blobs, term = 0, math.exp(-mean)
        cumulative = term
        while uniform[i] > cumulative and blobs < MAX:
            blobs += 1
            term *= mean / blobs
            cumulative += term
        excess[i], used[i] = e, blobs * GAS_PER_BLOB
        e = max(0, e + used[i] - target)
    return excess, used


def bench() -> list[tuple[str, float, str]]:
    rng = np.random.default_rng(1559)
    fee = pd.Series(rng.integers(10**8, 10**11, N))
    gas_used = pd.Series(rng.integers(0, 36_000_000, N))
    gas_limit = pd.Series(np.full(N, 36_000_000))
    excess, used = _blob_history(N)
    excess_s, used_s = pd.Series(excess), pd.Series(used)
    ragged = pd.Series(excess + rng.integers(0, GAS_PER_BLOB, N))

    def eip1559():
        return next_base_fee(fee, gas_used, gas_limit)

    def eip4844(parent=excess_s):
        child = next_excess_blob_gas(parent, used_s, target_blobs=TARGET, max_blobs=MAX)
        return blob_base_fee(child, FRACTION)

    base = median_seconds(eip1559, REPEAT)
    blob = median_seconds(eip4844, REPEAT)
    odd = median_seconds(lambda: eip4844(ragged), REPEAT)
    return [
        (f"analysis: next_base_fee ({N:,} blocks)", base, f"{N / base:,.0f} blocks/s"),
        (f"analysis: next blob base fee ({N:,} blocks)", blob,
         f"{blob / base:.2f}x next_base_fee (goal <= 2x)"),
        (f"analysis: next blob base fee, non-blob excess ({N:,})", odd,
         f"{odd / base:.2f}x next_base_fee"),
    ]  # fmt: skip


if __name__ == "__main__":
    for name, seconds, rate in bench():
        print(f"{name:<56}  {seconds:>8.4f}  {rate}")

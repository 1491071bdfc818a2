"""The exercises of Lesson 0, "Getting started: frames from a node, and what they cost"
(``notebooks/00_getting_started.ipynb``).

What a fetch costs follows from the provider's credit table (``feeslab.protocol.costs``): the
expected values are computed from it and from the plans' published rates, never pasted, so
they move with the table.
"""

from __future__ import annotations

import math

from feeslab.course._exercise import Choice, Exercise, Mistake, Number
from feeslab.protocol.costs import PLANS, method_cost

__all__ = ["EXERCISES", "FEE_HISTORY_BLOCKS", "HEADER_BLOCKS", "PACED_BLOCKS"]

HEADER_BLOCKS = (15_000_000, 15_250_000)
"""Exercise 0.1's fetch: ``lab.blocks(*HEADER_BLOCKS)`` [block numbers, stop excluded]."""

FEE_HISTORY_BLOCKS = (100_000, 200_000)
"""Exercise 0.2's fetch: ``lab.fee_history(*FEE_HISTORY_BLOCKS)`` [block numbers]."""

FEE_HISTORY_PER_CALL = 1_024
"""Blocks one ``eth_feeHistory`` call may cover (geth's and the service's cap) [blocks]."""

PACED_BLOCKS = 50_000
"""Exercise 0.3's fetch: the headers of this many blocks, on the Developer plan [blocks]."""


def _header_credits() -> int:
    first, stop = HEADER_BLOCKS
    return (stop - first) * method_cost("eth_getBlockByNumber")


def _fee_history_credits() -> int:
    first, stop = FEE_HISTORY_BLOCKS
    return math.ceil((stop - first) / FEE_HISTORY_PER_CALL) * method_cost("eth_feeHistory")


def _developer_seconds() -> float:
    credits = PACED_BLOCKS * method_cost("eth_getBlockByNumber")
    return credits / PLANS["developer"].credits_per_second


EXERCISES = (
    Exercise(
        number="0.1",
        kind="compute and compare",
        question=(
            "On the real service, with an empty cache, how many credits does "
            "`lab.blocks(15_000_000, 15_250_000)` cost? Use the credit table "
            "(`feeslab.protocol.costs.method_cost`), then compare with "
            "`lab.plan_blocks(15_000_000, 15_250_000)` on the devnet, which prices by the same "
            "table."
        ),
        answer=Number(expected=_header_credits, unit="credits"),
        hint=(
            "A header is one `eth_getBlockByNumber` call, and the table says what one call "
            "costs. How many blocks does `range(start, stop)` hold?"
        ),
        explanation=(
            "250,000 headers, one `eth_getBlockByNumber` of 80 credits each: 20,000,000 "
            "credits, more than six days of the free plan's 3,000,000 a day."
        ),
        mistakes=(
            Mistake(
                250_001 * 80,
                "`stop` is excluded, as in Python's `range`: count the blocks again.",
            ),
            Mistake(
                80,
                "a batch saves requests, not credits: every call inside it is charged.",
            ),
            Mistake(
                500 * 80,
                "500 is how many header calls go in one request; the credits are per call.",
            ),
        ),
    ),
    Exercise(
        number="0.2",
        kind="predict, then run",
        question=(
            "Predict what `lab.fee_history(100_000, 200_000)` costs in credits: one "
            "`eth_feeHistory` call covers at most 1,024 blocks. Then run "
            "`lab.plan_fee_history(100_000, 200_000)` to check."
        ),
        answer=Number(expected=_fee_history_credits, unit="credits"),
        hint=(
            "Count the calls first: 100,000 blocks in pieces of at most 1,024, the last piece "
            "shorter. Each call is charged as one."
        ),
        explanation=(
            "98 calls (97 full ones and a last of 672 blocks), 80 credits each: 7,840 credits "
            "for 100,000 blocks, 1,000 times cheaper than their headers."
        ),
        mistakes=(
            Mistake(
                100_000 * 80,
                "that is one call per block: `eth_feeHistory` answers up to 1,024 blocks at once.",
            ),
            Mistake(97 * 80, "97 calls leave the last 672 blocks out: round the count up."),
        ),
    ),
    Exercise(
        number="0.3",
        kind="compute and compare",
        question=(
            "On the Developer plan (`feeslab.protocol.costs.PLANS`), how many seconds does "
            "fetching the headers of 50,000 blocks take at least [s]?"
        ),
        answer=Number(expected=_developer_seconds, rel=0.06, unit="s"),
        hint=(
            "Seconds = credits / (credits per second). First the credits, from the table; "
            "then the Developer plan's rate, not the devnet's."
        ),
        explanation=(
            "4,000,000 credits at 4,000 credits/s: 1,000 s, about 17 minutes (the client "
            "paces at 95 % of the rate, so a little more), well within the plan's 15,000,000 "
            "credits a day."
        ),
        mistakes=(
            Mistake(
                100, "40,000 credits/s is the Team plan's rate (and the devnet's), not Developer's."
            ),
            Mistake(8_000, "500 credits/s is the free Core plan's rate, not Developer's."),
            Mistake(
                12.5, "that is blocks divided by credits per second: a block costs 80 credits."
            ),
        ),
    ),
    Exercise(
        number="0.4",
        kind="predict, then run",
        question=(
            "`frame = lab.fee_history(150_000, 150_500)` on the devnet: which source line does "
            "`plots.describe_source(frame)` give? (a) `devnet (simulated), blocks "
            "150,000-150,500`; (b) `devnet (simulated), blocks 150,000-150,499`; (c) `mainnet, "
            "blocks 150,000-150,499`; (d) `devnet (simulated), blocks 150,000-150,499, "
            "2021-03-01 to 2021-03-02`. Predict, then run it."
        ),
        answer=Choice(
            options={
                "a": "devnet (simulated), blocks 150,000-150,500",
                "b": "devnet (simulated), blocks 150,000-150,499",
                "c": "mainnet, blocks 150,000-150,499",
                "d": "devnet (simulated), blocks 150,000-150,499, 2021-03-01 to 2021-03-02",
            },
            correct="b",
        ),
        hint=(
            "The line is read from the frame: its `attrs['source']` and the block numbers it "
            "holds. Which blocks does `(150_000, 150_500)` fetch, and does the simulator have "
            "real dates?"
        ),
        explanation=(
            "The frame's `attrs` say `source: devnet`, so the line says simulated, and names "
            "the blocks it holds (the stop is excluded). A simulator's dates are not real "
            "ones, so none are named; a mainnet frame's line names its first and last day."
        ),
        mistakes=(
            Mistake("a", "the stop is excluded, as in `range`: which is the last block fetched?"),
            Mistake(
                "c",
                "the devnet imitates mainnet's chain id, but its data are simulated, and the "
                "line says so (the frame's `attrs['source']`).",
            ),
            Mistake("d", "the devnet's timestamps are simulated: no date of it is named."),
        ),
    ),
)

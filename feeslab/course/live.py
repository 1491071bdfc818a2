"""The exercises of Lesson 11, "Watching the fee market live" (``notebooks/11_live.ipynb``).

The next base fee follows from EIP-1559's integer rule (``feeslab.protocol.eip1559``) and what
a watch's prefill costs from the credit table (``feeslab.protocol.costs``): both expected values
are computed here. Reading Figure 2 (the devnet's blocks 209,761 to 210,000, seed 0) is a
choice.
"""

from __future__ import annotations

import math

from feeslab.course._exercise import Choice, Exercise, Mistake, Number
from feeslab.protocol.costs import method_cost
from feeslab.protocol.eip1559 import next_base_fee

__all__ = ["EXERCISES", "PREFILL_BLOCKS", "WATCHED"]

WATCHED = {"block_number": 210_000, "base_fee_wei": 24_116_853_463, "gas_used": 24_085_626,
           "gas_limit": 60_000_000}  # fmt: skip
"""Exercise 11.1's block: the devnet's (seed 0) head block, as a watch's row shows it."""

PREFILL_BLOCKS = 2_000
"""Exercise 11.3's watch: ``watch(lab, blocks=PREFILL_BLOCKS)`` [blocks]."""

FEE_HISTORY_PER_CALL = 1_024
"""Blocks one ``eth_feeHistory`` call may cover [blocks]."""


def _next_base_fee() -> int:
    return next_base_fee(WATCHED["base_fee_wei"], WATCHED["gas_used"], WATCHED["gas_limit"])


def _prefill_credits() -> int:
    calls = {
        "eth_blockNumber": 1,
        "eth_getBlockByNumber": PREFILL_BLOCKS,
        "eth_feeHistory": math.ceil(PREFILL_BLOCKS / FEE_HISTORY_PER_CALL),
    }
    return sum(count * method_cost(method) for method, count in calls.items())


def _float_rule() -> int:
    """The rule in floating point, truncated: what a reader who skips the integers gets."""
    base, used, target = WATCHED["base_fee_wei"], WATCHED["gas_used"], WATCHED["gas_limit"] // 2
    return int(base * (1 + (used - target) / target / 8))


EXERCISES = (
    Exercise(
        number="11.1",
        kind="predict, then run",
        question=(
            "A watch's last row is the devnet's block 210,000: base fee 24,116,853,463 wei, "
            "24,085,626 gas used of a 60,000,000 gas limit. Predict block 210,001's base fee "
            "[wei] with EIP-1559's rule, then run `lab.blocks(210_001, 210_002)` on the "
            "growing devnet to see it."
        ),
        answer=Number(expected=_next_base_fee, unit="wei"),
        hint=(
            "The target is half the gas limit. Below it the fee falls by base fee x (target - "
            "gas used) // target // 8, in integers, each division rounding down."
        ),
        explanation=(
            "The block used 24,085,626 gas of a 30,000,000 target, 19.7 % below it, so the fee "
            "falls by 1/8 of that, 2.46 %: 24,116,853,463 - 594,317,046 = 23,522,536,417 wei. "
            "The next base fee is known as soon as a block arrives."
        ),
        mistakes=(
            Mistake(
                _float_rule(),
                "one wei off: the protocol computes in integers, rounding each division down "
                "(the change down), not in floating point.",
            ),
            Mistake(
                next_base_fee(
                    WATCHED["base_fee_wei"], WATCHED["gas_used"], WATCHED["gas_limit"] * 2
                ),
                "the target is half the gas limit (30,000,000 gas), not the limit itself.",
            ),
            Mistake(
                WATCHED["base_fee_wei"] - WATCHED["base_fee_wei"] // 8,
                "12.5 % is the most the fee can move, for an empty block; this one was only "
                "partly below the target.",
            ),
            Mistake(
                WATCHED["base_fee_wei"],
                "the fee moves whenever gas used differs from the target: which way here?",
            ),
        ),
    ),
    Exercise(
        number="11.2",
        kind="read a figure",
        question=(
            "Read Figure 2 (the devnet's last 240 blocks, as the watch's still shows them): "
            "about how much did the base fee change from the first block to the last? "
            "(a) it fell by about 9 gwei; (b) it rose by about 9 gwei; (c) it rose by about "
            "15 gwei; (d) it rose by about 24 gwei."
        ),
        answer=Choice(
            options={
                "a": "fell by about 9 gwei",
                "b": "rose by about 9 gwei",
                "c": "rose by about 15 gwei",
                "d": "rose by about 24 gwei",
            },
            correct="b",
        ),
        hint=(
            "Read the top panel at its left end and at its right end, and take the "
            "difference; the x axis runs from older to newer blocks."
        ),
        explanation=(
            "The base fee went from about 15.4 gwei at block 209,761 to about 24.1 gwei at "
            "block 210,000: up about 9 gwei, while gas used sat above the target more often "
            "than below it (the middle panel)."
        ),
        mistakes=(
            Mistake("a", "the x axis runs from older blocks (left) to newer (right)."),
            Mistake("c", "about 15 gwei is where the base fee started, not how much it moved."),
            Mistake("d", "about 24 gwei is where the base fee ended, not how much it moved."),
        ),
    ),
    Exercise(
        number="11.3",
        kind="compute and compare",
        question=(
            "`watch(lab, blocks=2_000)` fills its window before it returns: one "
            "`eth_blockNumber`, a header per block and the fee history (at most 1,024 blocks "
            "an `eth_feeHistory` call). What does that prefill cost [credits]?"
        ),
        answer=Number(expected=_prefill_credits, unit="credits"),
        hint=(
            "Count the calls of each method, then price each from the credit table "
            "(`feeslab.protocol.costs.method_cost`) and add them up."
        ),
        explanation=(
            "1 + 2,000 + 2 calls of 80 credits: 160,240 credits, about what a 2,000-block "
            "`lab.blocks` costs; then each new block costs its `newHeads` event and its fee "
            "history."
        ),
        mistakes=(
            Mistake(2_000 * 80, "the head is asked first, and the fee history costs calls too."),
            Mistake(
                (1 + 2_000 + 1) * 80,
                "one `eth_feeHistory` covers at most 1,024 blocks: 2,000 blocks take two.",
            ),
            Mistake(
                (1 + 2_000) * 80,
                "the fee history is asked too: `eth_feeHistory` calls cost credits.",
            ),
        ),
    ),
)

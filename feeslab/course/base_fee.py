"""Exercises of Lesson 1, "The base fee: EIP-1559's rule, block by block"
(``notebooks/01_base_fee.ipynb``).

Expected values come from real mainnet headers (:func:`feeslab.samples.post_merge_blocks`) and
EIP-1559's integer rule (:func:`feeslab.protocol.eip1559.next_base_fee`,
:func:`feeslab.analysis.fees.base_fee_bounds`), never from pasted numbers.
"""

from __future__ import annotations

from functools import cache

import pandas as pd

from feeslab import samples
from feeslab.analysis import fees
from feeslab.course._exercise import Choice, Exercise, Function, Mistake, Number
from feeslab.protocol import eip1559

__all__ = ["EXERCISES", "full_blocks_base_fee", "next_base_fee", "real_cases"]

#: the block whose base fee exercise 1.2 starts from, and the gas limit it assumes [gas]
START_BLOCK = 22_869_878
FULL_GAS_LIMIT = 36_000_000
#: how many full blocks exercise 1.2 applies
FULL_BLOCKS = 3


def next_base_fee(parent_base_fee: int, gas_used: int, gas_target: int) -> int:
    """EIP-1559's child base fee [wei] from the parent's base fee [wei], gas used and target [gas]
    (Ethereum's denominator, 8): the reference exercise 1.1 compares the reader's function with."""
    # a gas limit of twice the target has exactly this target under elasticity 2
    return eip1559.next_base_fee(int(parent_base_fee), int(gas_used), 2 * int(gas_target))


@cache
def _real_blocks() -> pd.DataFrame:
    blocks, _ = samples.post_merge_blocks()
    return blocks


def real_cases() -> list[tuple[int, int, int]]:
    """Exercise 1.1's cases: each real post-merge block's (base fee [wei], gas used, target [gas]),
    then the edges the rule treats apart (at target, empty, full, a rise under one wei)."""
    cases = [
        (int(row.base_fee_wei), int(row.gas_used), int(row.gas_limit) // 2)
        for row in _real_blocks().itertuples()
    ]
    target = 18_000_000
    cases += [
        (1_258_709_674, target, target),  # at target: unchanged
        (1_258_709_674, 0, target),  # empty: down 1/8
        (1_258_709_674, 2 * target, target),  # full: up 1/8
        (7, target + 1_000, target),  # the rise rounds to 0: at least 1 wei
        (61_563_636_217, 29_999_999, 15_000_000),  # b * excess overflows 64 bits: exact ints
    ]
    return cases


def _start_fee() -> int:
    blocks = _real_blocks().set_index("block_number")
    return int(blocks.loc[START_BLOCK, "base_fee_wei"])


def full_blocks_base_fee(base_fee: int, blocks: int, gas_limit: int = FULL_GAS_LIMIT) -> int:
    """The base fee [wei] after ``blocks`` full blocks (gas used = ``gas_limit``) from
    ``base_fee`` [wei], by the integer rule."""
    fee = int(base_fee)
    for _ in range(blocks):
        fee = eip1559.next_base_fee(fee, gas_limit, gas_limit)
    return fee


def _float_rule(parent_base_fee: int, gas_used: int, gas_target: int) -> float:
    """A likely wrong answer: the rule in floating point, without the 1-wei minimum."""
    return parent_base_fee * (1 + (gas_used - gas_target) / gas_target / 8)


def _float_path() -> float:
    return _start_fee() * 1.125**FULL_BLOCKS


def _band_ratios() -> tuple[float, float]:
    """Exercise 1.3: the top and the bottom of Figure 4's band 23 blocks on, over its start."""
    start = eip1559.next_base_fee(*_start_header())
    band = fees.base_fee_bounds(start, 23)
    return (
        int(band["highest_base_fee_wei"].iloc[-1]) / start,
        int(band["lowest_base_fee_wei"].iloc[-1]) / start,
    )


def _start_header() -> tuple[int, int, int]:
    row = _real_blocks().set_index("block_number").loc[START_BLOCK]
    return int(row["base_fee_wei"]), int(row["gas_used"]), int(row["gas_limit"])


def _band_options() -> dict[str, str]:
    up, down = _band_ratios()
    return {
        "a": f"The top is about {up:.0f} times the start and the bottom about 1/{1 / down:.0f} of "
        "it: in ratio, the fee can fall further than it can rise.",
        "b": "The same ratio both ways: the rule moves the fee by at most 1/8 up or down.",
        "c": "Far more room up than down: 23 full blocks add 23 times 12.5 %, and the fee cannot "
        "fall below half.",
        "d": "The bottom is zero: 23 empty blocks take 23 times 12.5 % away, more than the "
        "whole fee.",
    }


EXERCISES = (
    Exercise(
        number="1.1",
        kind="compute and compare",
        question=(
            "Write `next_base_fee(parent_base_fee, gas_used, gas_target)`: a block's base fee "
            "[wei] from its parent's base fee [wei], gas used and gas target [gas], by "
            "EIP-1559's rule on Ethereum (denominator 8). It is checked on the four real "
            "mainnet blocks of `feeslab.samples.post_merge_blocks()` and on the edge cases the "
            "rule treats apart. Answer with the function itself."
        ),
        answer=Function(reference=next_base_fee, cases=real_cases),
        hint=(
            "Work in integers with //, multiplying before dividing: b * (used - target) // "
            "target // 8. A rise is at least 1 wei; a fall has no minimum; at the target the "
            "fee stays."
        ),
        explanation=(
            "Your rule gives every real header's child to the wei, as the fork-boundary table "
            "showed for mainnet's own clients."
        ),
        mistakes=(
            Mistake(
                _float_rule,
                "Floating point rounds a fee of 11 digits times a gas count of 8: use integer "
                "division (//) and multiply before dividing. And a rise is at least 1 wei.",
            ),
        ),
    ),
    Exercise(
        number="1.2",
        kind="predict, then run",
        question=(
            "Mainnet block 22,869,878's base fee is in `feeslab.samples.post_merge_blocks()`. "
            "Had that block and the two after it each been full, with a gas limit of "
            "36,000,000 gas (so a gas target of 18,000,000), what would block 22,869,881's base "
            "fee have been, by the integer rule [wei]? Predict roughly first (12.5 % per full "
            "block), then compute it exactly."
        ),
        answer=Number(expected=lambda: full_blocks_base_fee(_start_fee(), FULL_BLOCKS), unit="wei"),
        hint=(
            "Apply the rule once per full block, each time to the fee the previous step gave, "
            "in integers: the three full blocks are 22,869,878, 22,869,879 and 22,869,880."
        ),
        explanation=(
            "Three full blocks multiply the fee by about 1.125³ ≈ 1.42; the integer rule rounds "
            "down at each step, so the exact value is a few wei below the float's."
        ),
        mistakes=(
            Mistake(
                _float_path(),
                "That is the floating-point path, b * 1.125**3: the protocol rounds down at every "
                "block, in integers, so the exact fee is a few wei lower.",
            ),
            Mistake(
                int(_float_path()),
                "That is b * 1.125**3 cut to an integer once, at the end: the protocol rounds down "
                "at every block, so apply the integer rule three times.",
            ),
            Mistake(
                full_blocks_base_fee(_start_fee(), FULL_BLOCKS - 1),
                "That is the fee after two full blocks: block 22,869,878's own gas sets "
                "22,869,879's fee, so three full blocks (22,869,878 to 22,869,880) set "
                "22,869,881's.",
            ),
            Mistake(
                _start_fee() + FULL_BLOCKS * (_start_fee() // 8),
                "The rises compound: each full block adds 1/8 of the fee it starts from, not of "
                "the first one.",
            ),
        ),
    ),
    Exercise(
        number="1.3",
        kind="read a figure",
        question=(
            "Figure 4 draws, on a log axis, the band the base fee must stay in for 23 blocks "
            "after 22,869,879. Compare the room above the starting fee with the room below it "
            "at the right edge. Which is true? Answer with a letter.\n\n"
            + "\n".join(f"- ({key}) {text}" for key, text in _band_options().items())
        ),
        answer=Choice(options=_band_options(), correct="a"),
        hint=(
            "On a log axis equal distances are equal ratios. Compare how far the top and the "
            "bottom edge sit from the starting fee, and remember that each block multiplies by "
            "9/8 or 7/8, so the changes compound."
        ),
        explanation=(
            "Each block multiplies the fee by at most 9/8 or at least 7/8, and ln(7/8) ≈ -0.134 is "
            "larger in size than ln(9/8) ≈ 0.118: compounded, 23 empty blocks divide the fee by "
            "about 22 while 23 full ones multiply it by about 15. It never reaches zero."
        ),
        mistakes=(
            Mistake(
                "b",
                "The steps are 1/8 either way, but they compound: compare 1.125²³ with "
                "0.875²³ (or read the distances on the log axis).",
            ),
            Mistake(
                "c",
                "Each step is 1/8 of the fee it starts from, so the changes compound in "
                "both directions: 0.875²³ is far below one half.",
            ),
            Mistake(
                "d",
                "Each empty block removes 1/8 of what is left, never a fixed amount: "
                "the fee shrinks geometrically and stays above zero.",
            ),
        ),
    ),
)

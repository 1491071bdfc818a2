"""Exercises of Lesson 8, London on 800,000 real blocks: what miners were paid.

The expected values come from the real mainnet sample (:func:`feeslab.samples.miner_revenue_2021`,
Liu et al.'s replication data) through :func:`feeslab.analysis.revenue.revenue_composition` and
:func:`feeslab.analysis.revenue.top_block_shares`, computed when first checked.
"""

from __future__ import annotations

from functools import cache

import pandas as pd

from feeslab.course._exercise import Exercise, Mistake, Number

__all__ = ["EXERCISES"]

#: Exercise 8.1's windows: the 10,000 blocks before London, the first 10,000 of Liu et al.'s
#: window after it (the 70,000 blocks right after London are left out, as in the lesson)
_BEFORE = (12_955_000, 12_964_999)
_AFTER = (13_035_000, 13_044_999)
#: Exercise 8.3's placebo block and its window on each side [blocks]
_PLACEBO, _WINDOW = 13_300_000, 70_000


@cache
def _blocks() -> pd.DataFrame:
    """The sample's blocks in ETH (loaded when first checked, not when the course is listed)."""
    from feeslab import samples
    from feeslab.analysis import revenue

    return revenue.revenue_composition(samples.miner_revenue_2021())


def _gas_fees() -> pd.Series:
    """Gas fees the miner kept [ETH per block], indexed by block number."""
    blocks = _blocks()
    return blocks.set_index("block_number")["gas_fee_eth"]


def _ratio_after_before() -> float:
    """Mean gas fees in ``_AFTER`` over those in ``_BEFORE`` [1]."""
    fees = _gas_fees()
    return float(fees.loc[_AFTER[0] : _AFTER[1]].mean() / fees.loc[_BEFORE[0] : _BEFORE[1]].mean())


def _top_percent_after_london() -> float:
    """Share of all gas fees after London earned by its top 1 % of blocks [%]."""
    from feeslab import samples
    from feeslab.analysis import revenue

    fees = _gas_fees()
    after = fees[fees.index >= samples.LONDON_BLOCK]
    return float(revenue.top_block_shares(after, fractions=(0.01,))["share"].iloc[0] * 100)


def _placebo_difference() -> float:
    """Mean gas fees in the ``_WINDOW`` blocks from ``_PLACEBO`` less those before it [ETH]."""
    fees = _gas_fees()
    after = fees.loc[_PLACEBO : _PLACEBO + _WINDOW - 1]
    before = fees.loc[_PLACEBO - _WINDOW : _PLACEBO - 1]
    return float(after.mean() - before.mean())


EXERCISES = (
    Exercise(
        "8.1",
        "compute and compare",
        "Narrow Table 1's windows to 10,000 blocks on each side: blocks 12,955,000-12,964,999 "
        "(just before London) and 13,035,000-13,044,999 (the first 10,000 of Liu et al.'s window "
        "after it). What is the ratio after/before of the mean gas fees a block paid its miner "
        "(`gas_fee_eth`)? Answer as a ratio, e.g. 0.5 for a halving.",
        Number(_ratio_after_before, rel=0.01),
        hint="Select the two ranges of `block_number` (both ends included), take the mean of "
        "`gas_fee_eth` in each, and divide after by before.",
        explanation="the mean fell to about 0.32 of its level (0.659 to 0.208 ETH per block), "
        "close to the 0.35 of Liu et al.'s 70,000-block windows (Table 1): the burn took most "
        "of what miners had kept, whichever windows you take.",
        mistakes=(
            Mistake(
                3.17,
                "that is before/after; the question asks after/before, a number "
                "below 1 when fees fell.",
            ),
            Mistake(-0.685, "that is the relative change (ratio - 1); give the ratio itself."),
            Mistake(-68.5, "that is the change in percent; give the ratio after/before."),
            Mistake(0.2105, "that is the ratio of the medians; the question asks for the means."),
        ),
    ),
    Exercise(
        "8.2",
        "read a figure",
        "Read Figure 2: what share of all the gas fees paid after London went to the top 1 % "
        "of blocks (by their gas fees)? Answer in percent, e.g. 50 for half.",
        Number(_top_percent_after_london, abs=3.0, unit="%"),
        hint="Find 1 % on the horizontal axis (a log scale: each step is ten times the "
        "one before), go up to the line after London, and read the share on the left axis, "
        "in percent.",
        explanation="about 35 %: after London 1 % of the blocks earned a third of all the fees "
        "miners kept, against about 11 % before it. Tips are a smaller total than whole fees, "
        "and a few blocks with huge tips (13,307,440 alone earned 7,677 ETH) weigh more in it.",
        mistakes=(
            Mistake(
                10.9, "that is the line before London; the question asks about the blocks after it."
            ),
            Mistake(0.354, "answer in percent (35 for 35 %), not as a fraction."),
        ),
    ),
    Exercise(
        "8.3",
        "predict, then run",
        "Nothing happened to the protocol at block 13,300,000 (one of Table 2's placebos), but "
        "block 13,307,440 of Table 4 comes just after it. First predict whether the mean gas "
        "fee per block rises or falls across 13,300,000, and by about how much; then compute "
        "the mean `gas_fee_eth` of the 70,000 blocks from 13,300,000 less that of the 70,000 "
        "blocks before it [ETH per block].",
        Number(_placebo_difference, abs=0.002, unit="ETH per block"),
        hint="Index the gas fees by `block_number`; the blocks after are 13,300,000 to "
        "13,369,999 and those before 13,230,000 to 13,299,999 (70,000 each); subtract the "
        "mean before from the mean after.",
        explanation="the mean rises by about 0.105 ETH per block, and one block explains it: "
        "13,307,440 earned 7,676.8 ETH in fees, which adds 7,676.8 / 70,000 = 0.110 ETH to the "
        "mean of its window. The median moves by only 0.01 ETH. A mean is pulled by one "
        "block of a heavy tail (Figure 2); that is why the lesson gives medians and "
        "intervals beside the means.",
        mistakes=(
            Mistake(-0.105, "that is before less after; the question asks after less before."),
            Mistake(
                0.0098, "that is the difference of the medians; the question asks for the means."
            ),
        ),
    ),
)

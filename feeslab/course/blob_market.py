"""Exercises of Lesson 3, the blob market from March 2024 to February 2026.

The expected values come from the blob base fee rule (:mod:`feeslab.protocol.blobs`) and from
the real mainnet sample (:func:`feeslab.samples.blob_market`), computed when first checked.
"""

from __future__ import annotations

import functools

from feeslab.course import _data
from feeslab.course._exercise import Choice, Exercise, Mistake, Number
from feeslab.protocol import blobs

__all__ = ["EXERCISES"]

#: Exercise 3.1's block: BPO2's parameters, a starting excess and a run at the maximum
_BPO2_FRACTION = 11_684_671  # [blob gas]
_BPO2_TARGET, _BPO2_MAX = 14, 21  # [blobs]
_START_EXCESS = 100_000_000  # [blob gas]
_FULL_BLOCKS = 10


def _fee_after_full_blocks() -> int:
    """The blob base fee after ``_FULL_BLOCKS`` blocks at the maximum [wei per blob gas]."""
    excess = _START_EXCESS
    for _ in range(_FULL_BLOCKS):
        excess = max(0, excess + _BPO2_MAX * blobs.GAS_PER_BLOB - _BPO2_TARGET * blobs.GAS_PER_BLOB)
    return blobs.blob_base_fee(excess, _BPO2_FRACTION)


@functools.cache  # checked several times, computed once
def _early_2025_floor_days() -> float:
    """Share of UTC days, 1 January to 6 May 2025, whose median blob base fee was 1 wei."""
    market = _data.blob_market()
    days = market[market["timestamp"].between("2025-01-01", "2025-05-07", inclusive="left")]
    median = days.groupby(days["timestamp"].dt.floor("D"))["blob_base_fee_wei"].median()
    return float((median == blobs.MIN_BASE_FEE_PER_BLOB_GAS).mean())


EXERCISES = (
    Exercise(
        "3.1",
        "predict, then run",
        "Under BPO2 (target 14 blobs, maximum 21, update fraction 11,684,671) a block has an "
        "`excess_blob_gas` of 100,000,000, so a blob base fee of 5,209 wei. It and the next 9 "
        "blocks all carry the maximum of 21 blobs, and the reserve price does not bind (EIP-4844's "
        "target branch). First predict by what factor the fee rises, then compute with the "
        "protocol's integer rule: what is the blob base fee of the block 10 blocks later "
        "[wei per blob gas]?",
        Number(_fee_after_full_blocks, unit="wei per blob gas"),
        hint="Each full block adds (21 - 14) x 131,072 blob gas to the excess; after 10 of them "
        "apply `feeslab.protocol.blobs.blob_base_fee(excess, update_fraction)` (the integer "
        "`fake_exponential`, not `math.exp`).",
        explanation="each full block adds 917,504 blob gas of excess, so ten add 9,175,040 and "
        "the fee is multiplied by about e^(9,175,040 / 11,684,671) = e^0.785 = 2.19: 5,209 wei "
        "becomes 11,423 wei. The rise per full block, e^0.0785 = 1.082, is the same from Prague "
        "to BPO2: each fork scaled the fraction with the target.",
        mistakes=(
            Mistake(
                11_424,
                "close: that is `round(math.exp(excess / fraction))`. The protocol "
                "computes `fake_exponential` in integers and floors the result: use "
                "`blobs.blob_base_fee`.",
            ),
            Mistake(
                10_560,
                "that is the fee after 9 full blocks: the block 10 blocks later has "
                "the excess of all 10 full blocks before it.",
            ),
            Mistake(
                2_939_084_966,
                "that uses Prague's update fraction (5,007,716); BPO2's is 11,684,671.",
            ),
        ),
    ),
    Exercise(
        "3.2",
        "compute and compare",
        "From the mainnet sample (`samples.blob_market()`): on what share of the UTC days from "
        "1 January to 6 May 2025 (all under Cancun, the days before Prague) was the day's median "
        "blob base fee at the 1-wei floor? Answer as a fraction between 0 and 1.",
        Number(_early_2025_floor_days, rel=0.01, abs=0.002),
        hint="Keep the blocks with timestamps from 2025-01-01 up to (not including) 2025-05-07, "
        "group them by day (`timestamp.dt.floor('D')`), take each day's median "
        "`blob_base_fee_wei`, and count the days whose median is 1.",
        explanation="on 6 of 126 days (4.8 %) the median block paid 1 wei: in early 2025 "
        "Cancun's blocks carried about their target of 3 blobs, so the fee was priced most of "
        "the time, unlike 2024 (Figure 1) or under Prague, whose doubled target left it at the "
        "floor (Table 1).",
        mistakes=(
            Mistake(4.76, "that is a percentage: answer as a fraction (0 to 1)."),
            Mistake(
                0.0899,
                "that is the share of blocks at the floor; the question asks for the "
                "share of days whose median block was at it.",
            ),
            Mistake(
                0.513,
                "that is Table 1's share of all Cancun blocks at the floor, March 2024 "
                "to May 2025; the question asks about 1 January to 6 May 2025, per day.",
            ),
        ),
    ),
    Exercise(
        "3.3",
        "read a figure",
        "In Figure 2 the fee stayed above 1 gwei from 27 March to 3 April 2024. How many blobs did "
        "blocks carry while it did? (a) about 1, well below the target; (b) about the target of "
        "3; (c) about the maximum of 6.",
        Choice(
            {"a": "about 1", "b": "about the target of 3", "c": "about the maximum of 6"},
            correct="b",
        ),
        hint="Read the lower panel of Figure 2 between 28 March and 3 April, against its dashed "
        "target line and dotted maximum line.",
        explanation="blocks carried the target, 3 blobs: at the target the excess, and so the "
        "fee, stays where it is. Demand above the target raised the fee within a day; it then "
        "stayed high because blocks kept the target filled, and fell once they carried less.",
        mistakes=(
            Mistake(
                "c",
                "a fee that keeps rising needs blocks above the target; one that stays "
                "high needs only blocks at it. Look at where the line sits between the "
                "dashed and dotted lines.",
            ),
        ),
    ),
)

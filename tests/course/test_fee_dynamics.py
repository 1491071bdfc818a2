"""Lesson 2's exercises (feeslab.course.fee_dynamics): each right answer, computed here with raw
pandas on the real sample or by hand arithmetic, is accepted; known wrong answers get their
hints."""

from __future__ import annotations

import math

from feeslab import samples
from feeslab.course import exercise


def test_2_1_the_median_tip_per_transaction_of_block_22869878_in_gwei():
    _, transactions = samples.post_merge_blocks()
    block = transactions[transactions["block_number"] == 22_869_878]
    tips = sorted(int(tip) for tip in block["effective_tip_wei"])
    assert len(tips) % 2 == 1  # an odd count: one middle transaction
    median = tips[len(tips) // 2] / 1e9
    assert exercise("2.1").check(median)
    in_wei = exercise("2.1").check(tips[len(tips) // 2])
    assert not in_wei and "in wei" in repr(in_wei)
    assert not exercise("2.1").check(median * 1.05)


def test_2_1_refuses_the_gas_weighted_median_with_its_hint():
    _, transactions = samples.post_merge_blocks()
    block = transactions[transactions["block_number"] == 22_869_878].sort_values(
        "effective_tip_wei", kind="stable"
    )
    cumulative = block["gas_used"].cumsum()
    weighted = int(block["effective_tip_wei"][cumulative >= cumulative.iloc[-1] / 2].iloc[0]) / 1e9
    verdict = exercise("2.1").check(weighted)
    assert not verdict and "gas-weighted" in repr(verdict)


def test_2_2_blocks_to_double_on_mainnet_and_base():
    # by hand: the smallest whole k with (1 + rise)^k >= 2 (no integer rounding bites at 1 gwei)
    mainnet = math.ceil(math.log(2) / math.log(1 + 1 / 8))
    base = math.ceil(math.log(2) / math.log(1 + 5 / 250))
    assert (mainnet, base) == (6, 36)
    assert exercise("2.2").check([mainnet, base])
    linear = exercise("2.2").check([8, 50])
    assert not linear and "compound" in repr(linear)
    short = exercise("2.2").check([5, 35])
    assert not short and "just short" in repr(short)
    assert "Expected 2 numbers" in repr(exercise("2.2").check([6]))


def test_2_3_the_denominator_damps_the_fee():
    assert exercise("2.3").check("a")
    full = exercise("2.3").check("b")
    assert not full and "fewest" in repr(full)

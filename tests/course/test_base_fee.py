"""Lesson 1's exercises (feeslab.course.base_fee): each right answer, computed here by hand from
the real sample or by a rewrite of the rule, is accepted; known wrong answers get their hints."""

from __future__ import annotations

import pandas as pd
import pytest

from feeslab import samples
from feeslab.course import exercise


def _rule(b: int, used: int, target: int) -> int:
    """EIP-1559 on Ethereum, rewritten from the EIP's pseudo-code."""
    if used == target:
        return b
    if used > target:
        return b + max(b * (used - target) // target // 8, 1)
    return b - b * (target - used) // target // 8


@pytest.fixture(scope="module")
def headers() -> pd.DataFrame:
    blocks, _ = samples.post_merge_blocks()
    return blocks.set_index("block_number")


def test_1_1_accepts_the_integer_rule_and_refuses_a_float_or_a_rule_without_the_minimum():
    check = exercise("1.1").check
    assert check(_rule)
    floated = check(lambda b, used, target: b + b * (used - target) / target / 8)
    # a float rule written by the reader behaves as the known mistake: its own hint
    assert not floated and "Hint: Floating point rounds" in repr(floated)

    def no_minimum(b: int, used: int, target: int) -> int:
        if used >= target:
            return b + b * (used - target) // target // 8
        return b - b * (target - used) // target // 8

    no_minimum = check(no_minimum)
    assert not no_minimum and "(7, 18001000, 18000000)" in repr(no_minimum)
    assert "Expected a function" in repr(check(42))


def test_1_2_three_full_blocks_from_block_22869878_by_the_integer_rule(headers):
    fee = int(headers.loc[22_869_878, "base_fee_wei"])
    assert fee == 1_258_709_674  # the sample's header, as mainnet says
    for _ in range(3):
        fee = _rule(fee, 36_000_000, 18_000_000)
    assert exercise("1.2").check(fee)
    first = int(headers.loc[22_869_878, "base_fee_wei"])
    floated = exercise("1.2").check(first * 1.125**3)
    assert not floated and "floating-point path" in repr(floated)
    two = exercise("1.2").check(_rule(_rule(first, 36_000_000, 18_000_000), 36_000_000, 18_000_000))
    assert not two and "after two full blocks" in repr(two)
    assert not exercise("1.2").check(fee + 1)


def test_1_3_the_band_falls_further_than_it_rises(headers):
    one = headers.loc[22_869_878]
    start = _rule(int(one["base_fee_wei"]), int(one["gas_used"]), int(one["gas_limit"]) // 2)
    top, bottom = start, start
    for _ in range(23):
        top, bottom = _rule(top, 2 * 18_000_000, 18_000_000), _rule(bottom, 0, 18_000_000)
    assert top / start < start / bottom  # hence (a)
    assert exercise("1.3").check(" A ")
    symmetric = exercise("1.3").check("b")
    assert not symmetric and "compound" in repr(symmetric)
    assert "Answer with one of" in repr(exercise("1.3").check("e"))

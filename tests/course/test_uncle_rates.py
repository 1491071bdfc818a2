"""Lesson 6's exercises (``feeslab.course.uncle_rates``): each right answer, computed here by hand
from the raw samples and the protocol's rule, is accepted; each known wrong answer is refused with
its hint.
"""

from __future__ import annotations

import math

import pytest

from feeslab import samples
from feeslab.course import exercise

Z = 1.959963984540054  # the normal quantile of a two-sided 95 % interval


def _wilson_upper(uncles: int, blocks: int) -> float:
    """Wilson's score interval's upper end, written out (Wilson 1927)."""
    p = uncles / blocks
    centre = p + Z**2 / (2 * blocks)
    spread = Z * math.sqrt(p * (1 - p) / blocks + Z**2 / (4 * blocks**2))
    return (centre + spread) / (1 + Z**2 / blocks)


@pytest.fixture(scope="module")
def frontier():
    return samples.frontier_blocks()


def test_6_1_the_wilson_upper_end_of_frontier_blocks_4000_to_4999_is_right(frontier):
    window = frontier[(frontier["block_number"] >= 4_000) & (frontier["block_number"] < 5_000)]
    assert len(window) == 1_000
    upper = _wilson_upper(int(window["uncle_count"].sum()), len(window))
    assert 0.18 < upper < 0.20  # 167 uncles in 1,000 blocks
    assert exercise("6.1").check(upper)
    assert exercise("6.1").check(round(upper, 4))


def test_6_1_refuses_garwood_wald_and_a_percentage_with_their_hints(frontier):
    one = exercise("6.1")
    assert "Garwood" in repr(one.check(0.1943))
    assert "Wald" in repr(one.check(0.1901))
    assert "percentage" in repr(one.check(19.14))
    lower = one.check(0.1452)  # the interval's other end: no known mistake, the general hint
    assert not lower and repr(lower).endswith(one.hint)


def test_6_2_a_depth_2_uncle_of_byzantium_earned_six_eighths_of_3_eth():
    answer = 3 * 6 / 8  # EIP-649's 3 ETH block reward, (8 - 2)/8 of it
    assert exercise("6.2").check(answer)
    assert exercise("6.2").check(2_250_000_000_000_000_000 / 10**18)
    assert "genesis" in repr(exercise("6.2").check(5 * 6 / 8))
    assert "Constantinople" in repr(exercise("6.2").check(2 * 6 / 8))
    assert "(8 - d)/8" in repr(exercise("6.2").check(3 * 2 / 8))
    assert "depth 1" in repr(exercise("6.2").check(3 * 7 / 8))


def test_6_3_seven_miners_go_stale_more_than_the_largest_beyond_both_intervals(frontier):
    uncles = samples.frontier_uncles()
    canonical = frontier["miner"].value_counts()
    stale = uncles["miner"].value_counts().reindex(canonical.index, fill_value=0)
    large = canonical[canonical >= 100].index
    bounds = {}
    for miner in large:  # Wilson's interval of stale / (canonical + stale), written out
        n = int(canonical[miner] + stale[miner])
        p = stale[miner] / n
        centre = p + Z**2 / (2 * n)
        spread = Z * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2))
        bounds[miner] = ((centre - spread) / (1 + Z**2 / n), (centre + spread) / (1 + Z**2 / n))
    largest = canonical.idxmax()
    above = [m for m in large if m != largest and bounds[m][0] > bounds[largest][1]]
    points_above = [
        m
        for m in large
        if m != largest and stale[m] / (canonical[m] + stale[m]) > bounds[largest][1]
    ]
    assert len(large) == 13
    assert exercise("6.3").check(len(above))
    refused = exercise("6.3").check(len(points_above))
    assert len(points_above) != len(above)
    assert not refused and "whole intervals" in repr(refused)
    assert "every other miner" in repr(exercise("6.3").check(len(large) - 1))
    assert "whole number" in repr(exercise("6.3").check(7.5))

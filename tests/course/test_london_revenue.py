"""Lesson 8's exercises: the right answers, computed here from the raw sample in wei, are
accepted; the likely wrong ones are refused with their hints."""

from __future__ import annotations

import pandas as pd
import pytest

from feeslab import samples
from feeslab.course import exercise

WEI_PER_ETH = 10**18


@pytest.fixture(scope="module")
def fees() -> pd.Series:
    """Gas fees each block paid its miner [ETH], by block number, from the raw wei columns."""
    paid = samples.miner_revenue_2021()
    wei = paid["flashbots_bundle_gas_fee_wei"] + paid["other_gas_fee_wei"]  # Python ints
    return pd.Series([int(x) / WEI_PER_ETH for x in wei], index=paid["block_number"])


def _hint(number: str, answer: object) -> str:
    return repr(exercise(number).check(answer))


def test_8_1_the_ratio_of_mean_gas_fees_in_the_narrow_windows(fees):
    before = fees[(fees.index >= 12_955_000) & (fees.index <= 12_964_999)]
    after = fees[(fees.index >= 13_035_000) & (fees.index <= 13_044_999)]
    assert len(before) == len(after) == 10_000
    ratio = after.sum() / before.sum()  # equal counts: the ratio of means is that of sums
    assert 0.30 < ratio < 0.33
    assert exercise("8.1").check(ratio)
    assert exercise("8.1").check(round(ratio, 3))
    assert "before/after" in _hint("8.1", 1 / ratio)
    assert "ratio - 1" in _hint("8.1", ratio - 1)
    assert "medians" in _hint("8.1", after.median() / before.median())


def test_8_2_the_top_percent_of_blocks_after_london(fees):
    after = fees[fees.index >= samples.LONDON_BLOCK].sort_values(ascending=False)
    top = -(-len(after) // 100)  # ceil(1 %)
    percent = 100 * after.iloc[:top].sum() / after.sum()
    assert 34 < percent < 37
    assert exercise("8.2").check(round(percent))
    before = fees[fees.index < samples.LONDON_BLOCK].sort_values(ascending=False)
    percent_before = 100 * before.iloc[: -(-len(before) // 100)].sum() / before.sum()
    assert "line before London" in _hint("8.2", round(percent_before, 1))
    assert "percent" in _hint("8.2", percent / 100)


def test_8_3_one_block_moves_the_mean_across_a_placebo(fees):
    after = fees[(fees.index >= 13_300_000) & (fees.index < 13_370_000)]
    before = fees[(fees.index >= 13_230_000) & (fees.index < 13_300_000)]
    difference = after.mean() - before.mean()
    assert fees[13_307_440] / 70_000 > difference > 0.1  # the one block explains it
    assert exercise("8.3").check(difference)
    assert "before less after" in _hint("8.3", -difference)
    assert "medians" in _hint("8.3", after.median() - before.median())
    assert not exercise("8.3").check(difference + 0.01)

"""Lesson 3's exercises: the right answers, computed here apart from the checker's own code (the
rule rewritten with floats checked against its integers, raw pandas on the sample), are accepted;
the wrong answers readers give are refused with their hints."""

from __future__ import annotations

import pandas as pd
import pytest

from feeslab.course import _data, exercise


def _fake_exponential(factor, numerator, denominator):
    """EIP-4844's integer Taylor series, rewritten from the EIP's text."""
    total, term, i = 0, factor * denominator, 1
    while term > 0:
        total += term
        term = term * numerator // (denominator * i)
        i += 1
    return total // denominator


def test_3_1_the_fee_after_ten_full_bpo2_blocks():
    excess = 100_000_000 + 10 * (21 - 14) * 131_072
    assert _fake_exponential(1, 100_000_000, 11_684_671) == 5_209  # as the question says
    right = _fake_exponential(1, excess, 11_684_671)
    assert right == 11_423
    assert exercise("3.1").check(right)
    assert "math.exp" in repr(exercise("3.1").check(11_424))
    assert "after 9 full blocks" in repr(exercise("3.1").check(10_560))
    assert not exercise("3.1").check(right + 1)


@pytest.fixture(scope="module")
def market():
    return _data.blob_market()  # the frame the checks read, loaded once


def test_3_2_the_share_of_early_2025_days_at_the_floor(market):
    t = market["timestamp"]
    days = market[
        (t >= pd.Timestamp("2025-01-01", tz="UTC")) & (t < pd.Timestamp("2025-05-07", tz="UTC"))
    ]
    assert set(days["fork"].astype(str)) == {"cancun"}
    medians = days.groupby(days["timestamp"].dt.date)["blob_base_fee_wei"].median()
    assert len(medians) == 126
    right = (medians == 1).sum() / len(medians)
    assert exercise("3.2").check(right)
    assert "percentage" in repr(exercise("3.2").check(100 * right))
    block_share = float((days["blob_base_fee_wei"] == 1).mean())
    assert "share of blocks" in repr(exercise("3.2").check(block_share))
    assert not exercise("3.2").check(0.5)


def test_3_3_blocks_carried_the_target_while_the_fee_stayed_priced(market):
    t = market["timestamp"]
    priced = market[
        (t >= pd.Timestamp("2024-03-28", tz="UTC")) & (t < pd.Timestamp("2024-04-03", tz="UTC"))
    ]
    assert abs(priced["blob_count"].mean() - 3) < 0.1  # what the figure shows: the target
    assert exercise("3.3").check("b")
    assert "stays high" in repr(exercise("3.3").check("c"))
    assert not exercise("3.3").check("a")

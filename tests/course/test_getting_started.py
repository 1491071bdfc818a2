"""Lesson 0's exercises (``feeslab.course.getting_started``): each right answer, worked out
here by hand from the provider's published prices (80 credits a header or a fee-history
call, 1,024 blocks a fee-history call, 4,000 credits/s on the Developer plan), is accepted,
and each likely wrong answer is refused with its hint."""

from __future__ import annotations

import pytest

from feeslab.course import exercise


def _hint(number: str, answer: object) -> str:
    said = repr(exercise(number).check(answer))
    assert said.startswith(f"Exercise {number}: not yet."), said
    return said


def test_0_1_the_headers_cost_80_credits_each_and_the_stop_is_excluded():
    assert exercise("0.1").check(250_000 * 80)
    assert "`stop` is excluded" in _hint("0.1", 250_001 * 80)
    assert "a batch saves requests, not credits" in _hint("0.1", 80)
    assert "Hint: A header is one" in _hint("0.1", 1_000_000)


def test_0_2_fee_history_is_98_calls_the_last_one_short():
    assert exercise("0.2").check(98 * 80)  # 97 calls of 1,024 blocks and one of 672
    assert 97 * 1_024 + 672 == 100_000
    assert "round the count up" in _hint("0.2", 97 * 80)
    assert "one call per block" in _hint("0.2", 8_000_000)


def test_0_3_the_developer_plan_takes_1000_seconds():
    assert exercise("0.3").check(50_000 * 80 / 4_000)
    assert exercise("0.3").check(1_000 / 0.95)  # paced at 95 % of the rate: also right
    assert "Team plan" in _hint("0.3", 100)
    assert "Core plan" in _hint("0.3", 8_000)
    assert "a block costs 80" in _hint("0.3", 12.5)


@pytest.mark.parametrize(
    ("wrong", "said"),
    [("a", "the stop is excluded"), ("c", "its data are simulated"), ("d", "no date of it")],
)
def test_0_4_the_devnet_names_its_blocks_stop_excluded_and_no_dates(wrong, said):
    assert exercise("0.4").check("b") and exercise("0.4").check(" B ")
    assert said in _hint("0.4", wrong)
    assert "Answer with one of" in _hint("0.4", "e")

"""Lesson 11's exercises (``feeslab.course.live``): each right answer, worked out here
independently of the checker (EIP-1559's rule rewritten by hand, the prefill's calls counted at
the published 80 credits, Figure 2's base fees read from the devnet's own headers), is
accepted, and each likely wrong answer is refused with its hint."""

from __future__ import annotations

import pytest

from feeslab.course import exercise

BASE, USED, LIMIT = 24_116_853_463, 24_085_626, 60_000_000  # exercise 11.1's block, as asked


def _hint(number: str, answer: object) -> str:
    said = repr(exercise(number).check(answer))
    assert said.startswith(f"Exercise {number}: not yet."), said
    return said


def test_11_1_the_watched_block_fixes_the_next_base_fee():
    target = LIMIT // 2
    by_hand = BASE - (BASE * (target - USED) // target) // 8  # below the target: it falls
    assert by_hand == 23_522_536_417
    assert exercise("11.1").check(by_hand)
    assert "one wei off" in _hint("11.1", by_hand - 1)
    assert "half the gas limit" in _hint("11.1", BASE - (BASE * (LIMIT - USED) // LIMIT) // 8)
    assert "12.5 %" in _hint("11.1", BASE - BASE // 8)
    assert "which way" in _hint("11.1", BASE)


def test_11_2_the_choices_and_their_hints():
    assert exercise("11.2").check("b")
    assert "older blocks (left)" in _hint("11.2", "a")
    assert "where the base fee started" in _hint("11.2", "c")
    assert "where the base fee ended" in _hint("11.2", "d")


def test_11_3_the_prefill_is_the_head_the_headers_and_two_fee_history_calls():
    assert exercise("11.3").check((1 + 2_000 + 2) * 80)
    assert "two" in _hint("11.3", (1 + 2_000 + 1) * 80)
    assert "the head is asked first" in _hint("11.3", 2_000 * 80)
    assert "the fee history is asked too" in _hint("11.3", (1 + 2_000) * 80)


@pytest.mark.slow
def test_the_questions_numbers_are_the_devnets():
    # 11.1's block is the devnet's head (seed 0), and Figure 2's base fee rose about 9 gwei,
    # read from the devnet's own headers without a server (the history is built: ~15 s cold)
    from feeslab.devnet.chain import build_chains

    chain = build_chains(0).by_id[1]
    head = chain.block(210_000).header
    assert (head.base_fee_per_gas, head.gas_used, head.gas_limit) == (BASE, USED, LIMIT)
    first = chain.block(209_761).header.base_fee_per_gas
    assert 8 < (head.base_fee_per_gas - first) / 1e9 < 10  # choice (b)

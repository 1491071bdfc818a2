"""Lesson 10's exercises: the right answers, computed here by hand from the protocol's rules,
are accepted; the likely wrong ones are refused with their hints."""

from __future__ import annotations

from feeslab.course import exercise
from feeslab.course.calls_and_gas import _TRANSFER_DATA


def test_10_1_the_intrinsic_gas_of_a_transfer_by_hand():
    data = bytes.fromhex(_TRANSFER_DATA[2:])
    assert len(data) == 68 and data[:4].hex() == "a9059cbb"
    zeros = sum(1 for byte in data if byte == 0)
    by_hand = 21_000 + 4 * zeros + 16 * (len(data) - zeros)
    assert by_hand == 21_416
    assert exercise("10.1").check(by_hand)
    assert "base" in repr(exercise("10.1").check(21_000))
    assert "every byte at 16" in repr(exercise("10.1").check(21_000 + 16 * 68))
    assert "whole number" in repr(exercise("10.1").check(21_416.5))


def test_10_2_an_index_past_the_end_is_panic_0x32():
    assert exercise("10.2").check("b")
    assert exercise("10.2").check(" B ")
    assert "count from 0" in repr(exercise("10.2").check("a"))
    assert "one of" in repr(exercise("10.2").check("e"))


def test_10_3_a_fresh_slot_from_the_difference_of_two_burns():
    burn_1, burn_10 = 48_973, 250_222  # the lesson's gas needed, devnet EVM at block 209,000
    per_slot = (burn_10 - burn_1) / 9
    assert exercise("10.3").check(per_slot)
    assert exercise("10.3").check(20_000 + 2_100)
    assert "subtract burn(1)" in repr(exercise("10.3").check(burn_10 / 10))
    assert not exercise("10.3").check(20_000 * 1.5)

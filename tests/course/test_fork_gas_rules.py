"""Lesson 5's exercises: the right answers, computed here by hand from the EIPs' constants (apart
from feeslab.protocol.gas, which the checker uses), are accepted; the wrong answers readers give
are refused with their hints."""

from __future__ import annotations

from feeslab.course import exercise


def test_5_1_prague_charges_the_floor_for_a_kilobyte_of_calldata():
    intrinsic = 21_000 + 16 * 1_000  # EIP-2028
    floor = 21_000 + 10 * 4 * 1_000  # EIP-7623
    right = max(intrinsic, floor)
    assert right == 61_000
    assert exercise("5.1").check(right)
    assert "EIP-7623" in repr(exercise("5.1").check(intrinsic))
    assert "Amsterdam" in repr(exercise("5.1").check(15_000 + 64 * 1_000))
    assert not exercise("5.1").check(61_001)


def test_5_2_the_most_calldata_under_amsterdams_floor_and_the_cap():
    base = 12_000 + 3_000  # EIP-2780: the sender, the recipient's cold access; no value
    right = (2**24 - base) // (16 * 4)  # EIP-7976: 4 tokens of 16 gas a byte
    assert base + 64 * right <= 2**24 < base + 64 * (right + 1)
    assert exercise("5.2").check(right)
    assert "EIP-2780" in repr(exercise("5.2").check((2**24 - 21_000) // 64))
    assert "Prague's floor" in repr(exercise("5.2").check((2**24 - 21_000) // 40))
    assert not exercise("5.2").check(right + 1)


def test_5_3_the_floor_binds_from_prague():
    assert exercise("5.3").check("c")
    assert "already charged" in repr(exercise("5.3").check("d"))
    assert not exercise("5.3").check("a")

"""Lesson 4's exercises: the right answers, computed here apart from the checker's own code (viem's
rule by hand, raw pandas on the blob sample), are accepted; the wrong answers readers give are
refused with their hints."""

from __future__ import annotations

from feeslab.course import _data, exercise


def test_4_1_metamask_high_overpays_most():
    assert exercise("4.1").check("D")
    assert "not its max fee" in repr(exercise("4.1").check("c"))
    assert not exercise("4.1").check("b")


def test_4_2_viem_floors_a_fifth_more_than_the_base_fee_and_adds_the_tip():
    base, tip = 23_456_789_123, 1_500_000_000
    right = base * 12 // 10 + tip
    assert right == 29_648_146_947
    assert exercise("4.2").check(right)
    assert "ethers' rule" in repr(exercise("4.2").check(2 * base + tip))
    assert "floors" in repr(exercise("4.2").check(right + 1))
    assert "add the tip" in repr(exercise("4.2").check(base * 12 // 10))


def test_4_3_the_share_of_bpo2_blocks_a_5_percent_margin_gets_into_the_next_block():
    market = _data.blob_market()  # the frame the checks read, loaded once
    fees = market.loc[market["fork"] == "bpo2", "blob_base_fee_wei"].to_numpy()
    assert (market["fork"].iloc[-len(fees) :] == "bpo2").all()  # BPO2 closes the sample
    covered = fees[1:] * 100 <= fees[:-1] * 105  # next fee <= 1.05 x this one, in integers
    right = covered.mean()
    assert exercise("4.3").check(right)
    assert "percentage" in repr(exercise("4.3").check(100 * right))
    assert "within 3 blocks" in repr(exercise("4.3").check(0.9734))
    assert not exercise("4.3").check(0.99)

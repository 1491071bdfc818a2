"""Lesson 9's exercises: the right answers, computed here by hand from Solidity's storage rules,
are accepted; the likely wrong ones are refused with their hints."""

from __future__ import annotations

from eth_hash.auto import keccak

from feeslab.course import exercise


def test_9_1_a_bool_after_decimals_packs_into_slot_5():
    used = 20 + 1  # owner's 20 bytes, then decimals' 1 (Figure 1)
    assert used + 1 <= 32
    assert exercise("9.1").check([5, used])
    assert exercise("9.1").check((5, 21))
    assert "share one" in repr(exercise("9.1").check([6, 0]))
    assert "already sits" in repr(exercise("9.1").check([5, 20]))


def _by_hand(holder: str) -> int:
    return int.from_bytes(keccak(bytes(12) + bytes.fromhex(holder[2:]) + bytes(32)), "big")


def test_9_2_a_mapping_entry_is_the_hash_of_key_then_slot():
    assert exercise("9.2").check(_by_hand)
    assert exercise("9.2").check(lambda holder: hex(_by_hand(holder)))  # 0x hex is accepted
    swapped = exercise("9.2").check(
        lambda holder: int.from_bytes(
            keccak(bytes(32) + bytes(12) + bytes.fromhex(holder[2:])), "big"
        )
    )
    # the reader's own slot-first function behaves as the known mistake: its own hint
    assert not swapped and "order matters" in repr(swapped)
    unpadded = exercise("9.2").check(
        lambda holder: int.from_bytes(keccak(bytes.fromhex(holder[2:]) + bytes(32)), "big")
    )
    assert not unpadded
    from feeslab.course.storage_layout import EXERCISES

    known = EXERCISES[1].mistakes[0]
    assert "order matters" in repr(exercise("9.2").check(known.answer))


def test_9_3_the_dense_read_costs_the_sampling_step():
    samples_at = range(200_000, 210_001, 1_000)
    upgrade = 205_000
    last_old = max(block for block in samples_at if block < upgrade)
    first_new = min(block for block in samples_at if block >= upgrade)
    reads = len(range(last_old + 1, first_new + 1))
    assert reads == 1_000
    assert exercise("9.3").check(reads)
    assert "both ends" in repr(exercise("9.3").check(999))
    assert "binary search" in repr(exercise("9.3").check(10))

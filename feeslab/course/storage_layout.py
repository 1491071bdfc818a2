"""Exercises of Lesson 9, storage layout: where a contract keeps its state.

The expected answers follow from Solidity's storage rules: a mapping entry's slot from
:func:`feeslab.slots.mapping_slot`, packing from the rule that a value type goes into the current
slot when it fits and into the next one when it does not, and the proxy search from the lesson's
method (read every block between two samples).
"""

from __future__ import annotations

from typing import Any

from feeslab import slots
from feeslab.course._exercise import Exercise, Function, Mistake, Number, Numbers

__all__ = ["EXERCISES"]

#: Exercise 9.2's holders: mixed case, leading zeros, the zero address and a high one
_HOLDERS = (
    "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2",
    "0x000000000000000000000000000000000000dEaD",
    "0x0000000000000000000000000000000000000000",
    "0xffffffffffffffffffffffffffffffffffffffff",
    "0x631728e51d3cecdc070b7086a5bd14777b9d6d9f",
)
#: the token's `_balances` is declared first: slot 0 (the lesson's layout table)
_BALANCES_SLOT = 0


def _balance_slot(holder: str) -> int:
    """The slot of ``_balances[holder]`` for a mapping at slot 0."""
    return slots.mapping_slot(holder, _BALANCES_SLOT)


def _same_slot(got: Any, want: int) -> bool:
    """A slot given as an int, 0x hex or 32 bytes equals ``want``."""
    if isinstance(got, bool):
        return False
    if isinstance(got, int):
        return got == want
    if isinstance(got, str):
        try:
            return int(got, 16) == want
        except ValueError:
            return False
    if isinstance(got, (bytes, bytearray)) and len(got) == 32:
        return int.from_bytes(got, "big") == want
    return False


def _slot_first(holder: str) -> int:
    """A known wrong answer: the slot hashed before the key (the order reversed)."""
    from eth_hash.auto import keccak

    data = (_BALANCES_SLOT).to_bytes(32, "big") + int(holder, 16).to_bytes(32, "big")
    return int.from_bytes(keccak(data), "big")


EXERCISES = (
    Exercise(
        "9.1",
        "read a figure",
        "Figure 1 shows `owner` (20 bytes) and `decimals` (1 byte) sharing slot 5. Suppose the "
        "token declared one more variable right after `decimals`: `bool paused` (1 byte). "
        "Where would solc put it? Answer `[slot, offset]`, the offset in bytes from the slot's "
        "low-order end as in Figure 1.",
        Numbers([5, 21]),
        hint="A value type goes into the current slot when the bytes left there can hold it, "
        "right after the last variable; read in Figure 1 where `decimals` ends and how many of "
        "the slot's 32 bytes are still free.",
        explanation="`decimals` takes byte 20, so 11 bytes (21 to 31) are still free in slot 5 "
        "and a 1-byte bool fits at offset 21. The next slot would be used only by a variable "
        "too wide for what is left (a `uint128` here would start slot 6).",
        mistakes=(
            Mistake(
                [6, 0],
                "every variable does not start its own slot: small value types "
                "share one while they fit (Figure 1's slot 5).",
            ),
            Mistake(
                [5, 20],
                "offset 20 is where `decimals` already sits; the next variable "
                "starts after its byte.",
            ),
            Mistake(
                [5, 0],
                "the offset counts from the low-order end, where `owner` already "
                "takes bytes 0 to 19.",
            ),
        ),
    ),
    Exercise(
        "9.2",
        "compute and compare",
        "Write `balance_slot(holder)`: the slot of `_balances[holder]` for the token's mapping "
        "at slot 0, computed by hand as `keccak256(pad32(holder) ++ pad32(0))` with "
        "`eth_hash.auto.keccak` (not `feeslab.slots`). Return it as an int (or 0x hex). "
        "Compare it with `slots.mapping_slot(holder, 0)` before checking.",
        Function(_balance_slot, [(holder,) for holder in _HOLDERS], compare=_same_slot),
        hint="An address is 20 bytes: `int(holder, 16).to_bytes(32, 'big')` pads it to 32 on the "
        "left; append the slot as 32 bytes (`(0).to_bytes(32, 'big')`), hash the 64 bytes with "
        "`keccak`, and read the hash as a big-endian int (`int.from_bytes(h, 'big')`). Key "
        "first, slot second.",
        explanation="the key comes first, left-padded to 32 bytes, then the mapping's own slot; "
        "the hash of those 64 bytes is the slot. Nothing about it lists the keys: to read a "
        "balance you must know the holder.",
        mistakes=(
            Mistake(
                _slot_first, "the order matters: the key comes first and the mapping's slot second."
            ),
        ),
    ),
    Exercise(
        "9.3",
        "predict, then run",
        "The lesson found the proxy's upgrade by sampling the EIP-1967 slot every 100 blocks, "
        "then reading every block between the last sample of the old implementation and the "
        "first of the new. Predict how many single-block reads that second step needs if the "
        "slot is sampled every 1,000 blocks instead (from the same first block); then set "
        "`PROXY_BLOCKS = range(START, HEAD + 1, 1_000)`, rerun the two proxy cells and count.",
        Number(1_000, unit="reads"),
        hint="The upgrade lies after the last sample of the old implementation and at or "
        "before the first sample of the new; the lesson reads every block of that interval, "
        "the first sample's block included. How long is it when samples are 1,000 blocks "
        "apart?",
        explanation="the two samples are 1,000 blocks apart and the upgrade is one of the 1,000 "
        "blocks after the first, so the dense read costs as many reads as the sampling step: "
        "coarser sampling saves reads in the first step and spends them in the second (a "
        "binary search would need only about 10, log2 of 1,000).",
        mistakes=(
            Mistake(
                999,
                "the interval runs from the block after the old sample up to and "
                "including the new sample's block: count both ends of that range.",
            ),
            Mistake(
                100,
                "that is the interval of the lesson's 100-block sampling; with samples "
                "1,000 blocks apart the interval is longer.",
            ),
            Mistake(
                10,
                "a binary search would need about 10, but the lesson reads every "
                "block of the interval.",
            ),
        ),
    ),
)

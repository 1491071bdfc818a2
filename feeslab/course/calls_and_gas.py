"""Exercises of Lesson 10, calls and gas: what a transaction would do, need and cost.

The expected answers follow from the protocol's rules: the intrinsic gas from
:func:`feeslab.protocol.gas.intrinsic_gas`, Solidity's checked array access (``Panic(0x32)``),
and the gas of writing a fresh storage slot (EIP-2200's 20,000 plus EIP-2929's cold access,
2,100).
"""

from __future__ import annotations

from feeslab.course._exercise import Choice, Exercise, Mistake, Number
from feeslab.protocol import gas

__all__ = ["EXERCISES"]

#: Exercise 10.1's calldata: ``transfer(0x...dEaD, 10**18)``, selector and two 32-byte words
_TRANSFER_DATA = (
    "0xa9059cbb"
    "000000000000000000000000000000000000000000000000000000000000dead"
    "0000000000000000000000000000000000000000000000000de0b6b3a7640000"
)
#: writing a zero slot to non-zero (EIP-2200's SSTORE_SET) after a cold access (EIP-2929) [gas]
_FRESH_SLOT_GAS = 20_000 + 2_100


EXERCISES = (
    Exercise(
        "10.1",
        "compute and compare",
        "A token transfer of 1 token (10**18 units) to "
        "`0x000000000000000000000000000000000000dEaD` sends the 68 bytes of calldata "
        f"`{_TRANSFER_DATA}`. Count its zero and non-zero bytes "
        "and compute its intrinsic gas by hand (21,000, plus 4 per zero byte and 16 per "
        "non-zero byte), then compare with `gas.intrinsic_gas(data)` [gas].",
        Number(lambda: gas.intrinsic_gas(_TRANSFER_DATA), unit="gas"),
        hint="Strip the 0x and read the hex two digits at a time: 68 bytes, of which the "
        "selector's 4, the address's 2 (de, ad) and the amount's 6 (0d e0 b6 b3 a7 64) are "
        "non-zero. 21,000 + 16 x non-zero + 4 x zero.",
        explanation="12 non-zero bytes at 16 and 56 zero bytes at 4 add 416 gas to the 21,000: "
        "21,416. ABI encoding pads every argument to 32 bytes with zeros, and zeros are cheap "
        "(EIP-2028), which is why calldata is mostly zeros and costs little.",
        mistakes=(
            Mistake(
                21_000,
                "21,000 is the base; calldata adds 4 gas per zero byte and 16 per "
                "non-zero byte on top of it.",
            ),
            Mistake(22_088, "that prices every byte at 16; a zero byte costs 4."),
            Mistake(21_272, "that prices every byte at 4; a non-zero byte costs 16."),
            Mistake(
                22_040,
                "that is Prague's calldata floor (EIP-7623: 21,000 + 10 per "
                "token), which applies only when it exceeds the gas used; the intrinsic "
                "gas is 21,000 + 4 per zero byte + 16 per non-zero byte.",
            ),
        ),
    ),
    Exercise(
        "10.2",
        "predict, then run",
        "The devnet's `Reverter.outOfBounds(i)` returns `items[i]` of a fixed array "
        "`uint256[3] items = [10, 20, 30]`. Predict what `outOfBounds(3)` does, then run it "
        "with `lab.call` as in the table of decoded reverts. Answer 'a' (returns 30), "
        "'b' (reverts with Panic(0x32), an out-of-bounds access), 'c' (reverts with "
        "Panic(0x11), an overflow) or 'd' (returns 0).",
        Choice(
            {"a": "returns 30", "b": "Panic(0x32)", "c": "Panic(0x11)", "d": "returns 0"},
            correct="b",
        ),
        hint="Solidity arrays count from 0 and every index is checked: which indices does an "
        "array of three items have?",
        explanation="the three items are `items[0]`, `items[1]` and `items[2]`; index 3 is past "
        "the end, and the compiler's bounds check reverts with Panic(0x32) instead of reading "
        "whatever lies beyond. A call is never sent and spends no ether, which is why a wallet "
        "runs `eth_call` before it asks you to sign.",
        mistakes=(
            Mistake("a", "indices count from 0: `items[3]` is not the third item, `items[2]` is."),
            Mistake(
                "d",
                "Solidity (0.8 and later) checks every index; it never reads past the "
                "end of an array.",
            ),
            Mistake(
                "c", "0x11 is arithmetic overflow; an index past the end has its own panic code."
            ),
        ),
    ),
    Exercise(
        "10.3",
        "read a figure",
        "Figure 2 splits the gas `burn(1)` and `burn(10)` need into intrinsic gas and "
        "execution. `burn(n)` writes `n` fresh storage slots. From the two bars, estimate the "
        "gas one more fresh slot costs [gas].",
        Number(_FRESH_SLOT_GAS, rel=0.03, unit="gas"),
        hint="The two transactions differ only by 9 more slots written: subtract burn(1)'s gas "
        "from burn(10)'s and divide by 9, so the fixed part (the intrinsic gas and the call's "
        "own overhead) cancels.",
        explanation="about 22,400 gas per slot, nearly all of it the protocol's price of "
        "writing a zero slot to non-zero: 20,000 (EIP-2200) plus 2,100 for touching a slot "
        "not yet accessed (EIP-2929), 22,100; the rest is the loop and the hash of each "
        "mapping key. Storage is the dearest thing a transaction can do.",
        mistakes=(
            Mistake(
                25_022,
                "that divides burn(10)'s whole gas by 10, so the intrinsic gas and "
                "the call's fixed cost count as slots: subtract burn(1)'s gas first.",
            ),
            Mistake(
                22_902,
                "close, but the execution of burn(10) still carries the fixed cost "
                "of one call: take the difference between the two bars and divide by 9.",
            ),
        ),
    ),
)

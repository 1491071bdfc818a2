"""Exercises of Lesson 5, each fork's gas rules: what a transaction costs.

The expected values come from the forks' gas rules (:mod:`feeslab.protocol.gas`).
"""

from __future__ import annotations

from feeslab.course._exercise import Choice, Exercise, Mistake, Number
from feeslab.protocol import gas

__all__ = ["EXERCISES"]

#: Exercise 5.1's calldata: 1,000 non-zero bytes
_KILOBYTE = bytes([7]) * 1_000
#: EIP-7825's cap on a transaction's gas [gas]
_CAP = 2**24


def _prague_least_gas() -> int:
    """The least gas limit of 1,000 non-zero calldata bytes under Prague [gas]."""
    return gas.least_gas_limit(_KILOBYTE, fork="prague")


def _amsterdam_most_bytes() -> int:
    """The most non-zero calldata bytes whose Amsterdam floor stays within the cap [bytes]."""
    base = gas.calldata_floor(b"", fork="amsterdam")
    per_byte = gas.calldata_floor(b"\x01", fork="amsterdam")
    assert base is not None and per_byte is not None  # Amsterdam has a floor
    return (_CAP - base) // (per_byte - base)


EXERCISES = (
    Exercise(
        "5.1",
        "predict, then run",
        "A transaction sends 1,000 non-zero bytes of calldata, and no value, to an account "
        "without code. Predict, then compute with `feeslab.protocol.gas`: what is the least gas "
        "limit a node accepts for it under Prague [gas]?",
        Number(_prague_least_gas, unit="gas"),
        hint="The least gas limit is the larger of the intrinsic gas (21,000 + 16 per non-zero "
        "byte) and, from Prague, the calldata floor (21,000 + 10 per token, 4 tokens per "
        "non-zero byte): `gas.least_gas_limit(data, fork='prague')`.",
        explanation="the intrinsic gas is 21,000 + 16 x 1,000 = 37,000, but Prague's floor is "
        "21,000 + 10 x 4,000 = 61,000, and the larger is charged: from Prague a transaction that "
        "mostly carries data pays 40 gas a byte, not 16.",
        mistakes=(
            Mistake(
                37_000,
                "that is the intrinsic gas, London's rule; from Prague a transaction "
                "pays at least its calldata floor (EIP-7623).",
            ),
            Mistake(
                79_000,
                "that is Amsterdam's floor (EIP-7976: 64 gas a byte); the question "
                "asks about Prague.",
            ),
        ),
    ),
    Exercise(
        "5.2",
        "compute and compare",
        "Under Amsterdam, with no value and to an existing account without code, how many "
        "non-zero calldata bytes at most can a transaction carry before its calldata floor "
        "exceeds EIP-7825's cap of 2**24 gas, which would make it unsendable [bytes]?",
        Number(_amsterdam_most_bytes, unit="bytes"),
        hint="Amsterdam's floor is its base cost plus 64 gas per byte; find the base with "
        "`gas.calldata_floor(b'', fork='amsterdam')` and solve base + 64 x n <= 2**24 for the "
        "largest whole n.",
        explanation="the floor is 15,000 + 64 x n (EIP-2780's base for a call without value: "
        "12,000 for the sender and 3,000 for the recipient), so n = (16,777,216 - 15,000) // 64 "
        "= 261,909 bytes, about 256 KiB, where Osaka's floor of 40 gas a byte allowed 418,905 "
        "bytes under the same cap.",
        mistakes=(
            Mistake(
                261_815,
                "that anchors the floor at 21,000; Amsterdam's floor starts from "
                "EIP-2780's base cost, 15,000 for a call without value.",
            ),
            Mistake(
                418_905, "that uses Prague's floor of 40 gas a byte; Amsterdam's is 64 (EIP-7976)."
            ),
            Mistake(262_144, "that is 2**24 / 64: the floor has a base cost too."),
        ),
    ),
    Exercise(
        "5.3",
        "read a figure",
        "Read Figure 2: from which fork on is the 100 KB calldata post charged its calldata floor "
        "rather than its intrinsic gas? (a) Shanghai; (b) Cancun; (c) Prague; (d) Amsterdam.",
        Choice({"a": "shanghai", "b": "cancun", "c": "prague", "d": "amsterdam"}, correct="c"),
        hint="In Figure 2 the charge is the taller of the two bars; find the first fork where "
        "the floor bar is the taller.",
        explanation="from Prague (EIP-7623) the floor, 4,021,000 gas, exceeds the intrinsic "
        "1,621,000; Amsterdam raised the floor again (6,415,000) but did not start it.",
        mistakes=(
            Mistake(
                "d",
                "Amsterdam raised the floor, but it was already charged before: look for "
                "the first fork with a floor bar at all.",
            ),
        ),
    ),
)

"""Solidity's revert payloads, as data shared by the client and the devnet.

The client decodes reverts (``feeslab.errors``) and the devnet words them as
geth does (``feeslab.devnet.evm``); one table keeps the two in step.

References
----------
.. [1] Solidity documentation, "Error handling: Assert, Require, Revert and Exceptions"
   (``Error(string)`` and ``Panic(uint256)`` and their codes).
.. [2] go-ethereum, accounts/abi/abi.go (the wording of each panic code).
"""

from __future__ import annotations

ERROR_SELECTOR = bytes.fromhex("08c379a0")  # Error(string)
PANIC_SELECTOR = bytes.fromhex("4e487b71")  # Panic(uint256)
PANIC_REASONS = {
    # geth's texts, which REFERENCE.md's list paraphrases
    0x00: "generic panic",
    0x01: "assert(false)",
    0x11: "arithmetic underflow or overflow",
    0x12: "division or modulo by zero",
    0x21: "enum overflow",
    0x22: "invalid encoded storage byte array accessed",
    0x31: "out-of-bounds array access; popping on an empty array",
    0x32: "out-of-bounds access of an array or bytesN",
    0x41: "out of memory",
    0x51: "uninitialized function",
}


def panic_reason(code: int) -> str:
    """The text for a Solidity ``Panic(uint256)`` code."""
    return PANIC_REASONS.get(code, f"unknown panic code: {code:#x}")

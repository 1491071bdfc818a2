"""The devnet EVM's data types, shared by ``evm.py`` and its backends (no import cycle).

``feeslab.devnet.evm`` re-exports every name here; import them from there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

# intrinsic gas (yellow paper, EIP-2028, EIP-3860) [gas]
TX_GAS = 21_000
TX_GAS_CREATE = 53_000
TX_DATA_ZERO_GAS = 4
TX_DATA_NONZERO_GAS = 16
INITCODE_WORD_GAS = 2

_REVERT_TEXT = re.compile(r"^Revert \{ gas_used: (\d+), output: 0x([0-9a-fA-F]*) \}$")
_HALT_TEXT = re.compile(r"^Halt \{ reason: (.+), gas_used: (\d+) \}$")


@dataclass(frozen=True)
class Account:
    """One account of a world state (balance [wei], storage slot -> word)."""

    code: bytes = b""
    balance: int = 0
    nonce: int = 0
    storage: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class BlockContext:
    """The block a call executes in: its header's fields as the EVM sees them.

    ``base_fee`` [wei] is None before London; ``gas_limit`` [gas]; ``prevrandao`` 32 bytes.
    """

    number: int
    timestamp: int
    gas_limit: int
    base_fee: int | None
    coinbase: bytes
    prevrandao: bytes
    difficulty: int
    chain_id: int


@dataclass(frozen=True)
class CallRequest:
    """A decoded transaction call object (geth's TransactionArgs, the fields the devnet uses).

    ``sender`` is the zero address when the request names none; ``to`` None creates a
    contract; amounts in [wei] and [wei/gas], ``gas`` in [gas].
    """

    sender: bytes
    to: bytes | None
    data: bytes
    value: int = 0
    gas: int | None = None
    gas_price: int | None = None
    max_fee_per_gas: int | None = None
    max_priority_fee_per_gas: int | None = None


@dataclass(frozen=True)
class Outcome:
    """What one execution did: output (return or revert data), gas used after refunds [gas].

    ``refund`` [gas] is the refund already taken off ``gas_used``; ``halt`` is revm's halt
    reason (e.g. ``"OutOfGas(Basic)"``) for an exceptional halt, None otherwise.
    """

    success: bool
    output: bytes
    gas_used: int
    reverted: bool
    halt: str | None
    refund: int = 0

    @property
    def max_used(self) -> int:
        """Gas used before the refund (geth's ``MaxUsedGas``) [gas]."""
        return self.gas_used + self.refund

    @property
    def out_of_gas(self) -> bool:
        return self.halt is not None and self.halt.startswith("OutOfGas")


class Machine(Protocol):
    """One block's world state in an EVM backend (``_evm_pyrevm.Machine``,
    ``_evm_pyevm.Machine``): what ``evm.Executor`` runs messages on."""

    def run(
        self, sender: bytes, to: bytes | None, data: bytes, value: int, gas: int, gas_price: int
    ) -> Outcome:
        """Execute one message ([wei], [gas], [wei/gas]); the state is the same afterwards."""
        ...


class InvalidTransaction(Exception):
    """The EVM backend refused to run a message (a validation error, not an EVM failure)."""


# -- pyrevm error text ------------------------------------------------------------------------


def parse_failure(text: str) -> Outcome | None:
    """The Outcome a pyrevm RuntimeError text reports, or None for a validation error.

    pyrevm reports ``Revert { gas_used: N, output: 0x.. }`` and
    ``Halt { reason: OutOfGas(Basic), gas_used: N }`` for EVM failures; anything else
    (``Transaction(LackOfFundForMaxFee { .. })``, ``Initial gas spend is ..``) means the
    message was refused before execution.
    """
    text = text.strip()
    match = _REVERT_TEXT.match(text)
    if match:
        output = bytes.fromhex(match.group(2))
        return Outcome(False, output, int(match.group(1)), reverted=True, halt=None)
    match = _HALT_TEXT.match(text)
    if match:
        return Outcome(False, b"", int(match.group(2)), reverted=False, halt=match.group(1))
    return None


def intrinsic_gas(request: CallRequest) -> int:
    """Gas charged before execution (Shanghai rules, no access list) [gas]."""
    data = request.data
    zeros = data.count(0)
    gas = TX_GAS if request.to is not None else TX_GAS_CREATE
    gas += zeros * TX_DATA_ZERO_GAS + (len(data) - zeros) * TX_DATA_NONZERO_GAS
    if request.to is None:
        gas += INITCODE_WORD_GAS * ((len(data) + 31) // 32)
    return gas

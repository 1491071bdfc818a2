"""The py-evm backend of the devnet's EVM: pure Python, so it installs from wheels everywhere.

The same two classes as ``feeslab.devnet._evm_pyrevm`` (``Machine``, ``Frontier``), on py-evm's
Shanghai state. It is chosen where pyrevm cannot be imported (CPython 3.13 and later) or when
``FEESLAB_EVM=py-evm``.

Results are the same as pyrevm's, quirks included, so that a devnet answers alike on every
Python: BASEFEE reads 0, GASLIMIT reads the executor's gas ceiling and BLOCKHASH(n) is
keccak256 of n's decimal digits (revm's in-memory placeholder). py-evm could do better on all
three (it takes the block's base fee, gas limit and ancestor hashes); the devnet does not, so
that the two backends stay interchangeable.

Slower: py-evm interprets in Python. Measured side by side on the reference machine (docs/devnet.md,
"EVM backends"): a simple ``eth_call`` ~40x slower (about 2,300/s against 88,000/s), gas-heavy
code ~300x slower (6 Mgas/s: a call burning a 300M-gas cap takes about a minute), and building
chain 1's 10,000 blocks of contract state 85 s instead of 2 s, which is why built states are
kept on disk (``state.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from eth.constants import BLANK_ROOT_HASH, CREATE_CONTRACT_ADDRESS
from eth.db.account import AccountDB
from eth.db.atomic import AtomicDB
from eth.exceptions import (
    ContractCreationCollision,
    FullStack,
    InsufficientFunds,
    InsufficientStack,
    InvalidInstruction,
    InvalidJumpDestination,
    OutOfBoundsRead,
    OutOfGas,
    ReservedBytesInCode,
    Revert,
    StackDepthLimit,
    WriteProtection,
)
from eth.vm.execution_context import ExecutionContext
from eth.vm.forks.shanghai.state import ShanghaiState, ShanghaiTransactionExecutor
from eth_hash.auto import keccak

from feeslab.devnet._evm_types import (
    INITCODE_WORD_GAS,
    Account,
    BlockContext,
    CallRequest,
    InvalidTransaction,
    Outcome,
    intrinsic_gas,
)

NAME = "py-evm"
DEFAULT_GAS = 30_000_000  # a view's gas in the state builder (pyrevm's message_call default)
_BLOCK_GAS_LIMIT = 2**63 - 1  # the builder's blocks: pyrevm checks no block gas limit there


@dataclass(frozen=True)
class _Tx:
    """The fields of a transaction py-evm's executor reads (signature checks are geth's, above)."""

    sender: bytes
    to: bytes
    value: int
    data: bytes
    gas: int
    gas_price: int
    intrinsic_gas: int
    access_list: tuple = ()

    @property
    def max_fee_per_gas(self) -> int:
        return self.gas_price

    @property
    def max_priority_fee_per_gas(self) -> int:
        return self.gas_price

    def copy(self, **changes: object) -> _Tx:  # pragma: no cover - py-evm's eth_call helpers only
        return _Tx(**{**self.__dict__, **changes})


class _Executor(ShanghaiTransactionExecutor):
    def validate_transaction(self, transaction: object) -> None:
        """Skipped: evm.py applies geth's pre-checks (funds, fees, intrinsic gas) itself."""


class _RecordingAccountDB(AccountDB):
    """An AccountDB that remembers which slots were written (the builder's archive)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.written: set[tuple[bytes, int]] = set()

    def set_storage(self, address: bytes, slot: int, value: int) -> None:
        self.written.add((bytes(address), slot))
        super().set_storage(address, slot, value)


class _State(ShanghaiState):
    account_db_class = _RecordingAccountDB
    transaction_executor_class = _Executor


def _placeholder_hashes(number: int) -> list[bytes]:
    """BLOCKHASH answers for the 256 ancestors of ``number``, newest first (revm's placeholder)."""
    return [keccak(str(n).encode()) for n in range(number - 1, max(-1, number - 257), -1)]


def _context(
    number: int,
    timestamp: int,
    gas_limit: int,
    *,
    coinbase: bytes = bytes(20),
    difficulty: int = 0,
    mix_hash: bytes = bytes(32),
    chain_id: int = 1,
) -> ExecutionContext:
    return ExecutionContext(
        coinbase=coinbase,
        timestamp=timestamp,
        block_number=number,
        difficulty=difficulty,
        mix_hash=mix_hash,
        gas_limit=gas_limit,
        prev_hashes=_placeholder_hashes(number),
        chain_id=chain_id,
        base_fee_per_gas=0,  # BASEFEE reads 0, as on pyrevm
    )


def _halt_reason(error: Exception) -> str:
    """revm's name for a py-evm VM error (evm.HALT_MESSAGES maps it to geth's text)."""
    if isinstance(error, OutOfGas):
        return "OutOfGas(Basic)"
    if isinstance(error, InvalidJumpDestination):
        return "InvalidJump"
    if isinstance(error, InvalidInstruction):
        text = str(error)
        if "Jump" in text:
            return "InvalidJump"
        return "InvalidFEOpcode" if text.startswith("Invalid opcode 0xfe ") else "OpcodeNotFound"
    for kind, name in (
        (InsufficientStack, "StackUnderflow"),
        (FullStack, "StackOverflow"),
        (OutOfBoundsRead, "OutOfOffset"),
        (WriteProtection, "StateChangeDuringStaticCall"),
        (ContractCreationCollision, "CreateCollision"),
        (InsufficientFunds, "OutOfFunds"),
        (StackDepthLimit, "CallTooDeep"),
        (ReservedBytesInCode, "CreateContractStartingWithEF"),
    ):
        if isinstance(error, kind):
            return name
    return type(error).__name__


def _apply(state: _State, sender: bytes, to: bytes | None, data: bytes, value: int, gas: int,
           price: int) -> tuple[Outcome, bytes | None]:  # fmt: skip
    """Run one transaction on ``state`` (changes kept): its Outcome and the created address."""
    tx = _Tx(
        sender=sender,
        to=CREATE_CONTRACT_ADDRESS if to is None else to,
        value=value,
        data=data,
        gas=gas,
        gas_price=price,
        intrinsic_gas=intrinsic_gas_of(to, data),
    )
    computation = state.apply_transaction(tx)
    remaining = computation.get_gas_remaining()
    used = gas - remaining
    if computation.is_error:
        error = computation.error
        if isinstance(error, Revert):
            return Outcome(False, bytes(computation.output), used, reverted=True, halt=None), None
        return Outcome(False, b"", used, reverted=False, halt=_halt_reason(error)), None
    refund = min(computation.get_gas_refund(), used // 5)  # EIP-3529's cap
    created = None
    output = bytes(computation.output)
    if to is None:
        created = bytes(computation.msg.storage_address)
        output = bytes(state.get_code(created))
    return Outcome(True, output, used - refund, reverted=False, halt=None, refund=refund), created


def intrinsic_gas_of(to: bytes | None, data: bytes) -> int:
    """Intrinsic gas as py-evm's executor takes it: without EIP-3860's initcode word cost,
    which py-evm charges inside the creating computation instead [gas]."""
    gas = intrinsic_gas(CallRequest(sender=bytes(20), to=to, data=data))
    if to is None:
        gas -= INITCODE_WORD_GAS * ((len(data) + 31) // 32)
    return gas


def _new_state(context: ExecutionContext) -> _State:
    return _State(AtomicDB(), context, BLANK_ROOT_HASH)


class Machine:
    """One block's world state in a py-evm state; every run is reverted."""

    def __init__(
        self,
        accounts: Mapping[bytes, Account],
        block: BlockContext,
        *,
        gas_ceiling: int,
        spec_id: str,
    ) -> None:
        if spec_id != "SHANGHAI":
            raise ValueError(f"the py-evm backend runs SHANGHAI only, not {spec_id!r}")
        self.gas_ceiling = gas_ceiling
        context = _context(
            block.number, block.timestamp, gas_ceiling,  # GASLIMIT reads the ceiling, as on pyrevm
            coinbase=block.coinbase, difficulty=block.difficulty, mix_hash=block.prevrandao,
            chain_id=block.chain_id,
        )  # fmt: skip
        self._state = _new_state(context)
        for address, account in accounts.items():
            if account.code:
                self._state.set_code(address, account.code)
            if account.balance:
                self._state.set_balance(address, account.balance)
            if account.nonce:
                self._state.set_nonce(address, account.nonce)
            for slot, word in account.storage.items():
                self._state.set_storage(address, slot, word)
        self._state.lock_changes()  # loading is not part of any call: nothing starts warm

    def run(
        self, sender: bytes, to: bytes | None, data: bytes, value: int, gas: int, gas_price: int
    ) -> Outcome:
        """Execute one message; the state is the same afterwards (the caller serialises)."""
        if gas > self.gas_ceiling:
            # pyrevm's refusal, in its words: a call's gas may not exceed the block's
            raise InvalidTransaction("Transaction(CallerGasLimitMoreThanBlock)")
        snapshot = self._state.snapshot()
        try:
            outcome, _ = _apply(self._state, sender, to, data, value, gas, gas_price)
            return outcome
        finally:
            self._state.revert(snapshot)


class Frontier:
    """The state builder's py-evm state: code and storage in, transactions block by block.

    Written slots are recorded by the account database; after each block the value of every
    slot written during it is read back (``writes``).
    """

    def __init__(self, code: Mapping[bytes, bytes], storage: Mapping[tuple[bytes, int], int]):
        self._state = _new_state(_context(0, 0, _BLOCK_GAS_LIMIT))
        for address, body in code.items():
            self._state.set_code(address, body)
        for (address, slot), word in storage.items():
            self._state.set_storage(address, slot, word)
        self._state.lock_changes()
        self._db: _RecordingAccountDB = self._state._account_db  # type: ignore[assignment]
        self._db.written.clear()
        self._writes: dict[tuple[bytes, int], list[tuple[int, int]]] = {}

    def begin_block(self, number: int, timestamp: int, gas_limit: int) -> None:
        # the builder checks no block gas limit, as pyrevm's set_block_env does not
        self._state.execution_context = _context(number, timestamp, _BLOCK_GAS_LIMIT)
        del gas_limit

    def end_block(self, number: int) -> None:
        for address, slot in self._db.written:
            value = self._state.get_storage(address, slot)
            self._writes.setdefault((address, slot), []).append((number, value))
        self._db.written.clear()
        self._state.lock_changes()  # the next block's transactions start cold

    def deploy(self, sender: bytes, initcode: bytes, gas: int) -> bytes:
        outcome, created = _apply(self._state, sender, None, initcode, 0, gas, 0)
        if not outcome.success or created is None:
            raise RuntimeError(f"deployment failed: {outcome}")
        return created

    def send(self, sender: bytes, to: bytes, data: bytes, gas: int) -> bytes:
        """A committed transaction's output; b"" when it fails (and changes nothing)."""
        outcome, _ = _apply(self._state, sender, to, data, 0, gas, 0)
        return outcome.output if outcome.success else b""

    def view(self, sender: bytes, to: bytes, data: bytes) -> bytes:
        snapshot = self._state.snapshot()
        written = set(self._db.written)
        try:
            outcome, _ = _apply(self._state, sender, to, data, 0, DEFAULT_GAS, 0)
            return outcome.output if outcome.success else b""
        finally:
            self._state.revert(snapshot)
            self._db.written = written

    def storage(self, address: bytes, slot: int) -> int:
        return self._state.get_storage(address, slot)

    def writes(self) -> dict[tuple[bytes, int], list[tuple[int, int]]]:
        """(address, slot) -> [(block, value after that block)] for every written slot."""
        return self._writes

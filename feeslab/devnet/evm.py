"""EVM execution for the devnet's eth_call and eth_estimateGas, on pyrevm or py-evm.

An ``Executor`` holds one block's world state in an EVM backend. Every execution runs between a
snapshot and a revert, so the state (and which accounts are warm, EIP-2929) is the same
before and after each call. ``call`` and ``estimate_gas`` add go-ethereum's semantics on top:
its fee rules, balance and intrinsic gas checks (core/state_transition.go), its gas estimator
(eth/gasestimator) and its error codes and wording (internal/ethapi).

Backends (``backend()``): pyrevm 0.3.7 (``_evm_pyrevm``, fast, wheels up to CPython 3.12) where
it imports, else py-evm (``_evm_pyevm``, pure Python, every CPython); ``FEESLAB_EVM=py-evm`` or
``=pyrevm`` forces one. Each is a ``Machine`` (``run`` one message, state unchanged after) and a
``Frontier`` (the state builder's EVM); everything geth-specific here is backend-independent.
Both give the same outputs, gas and storage; py-evm is much slower (docs/devnet.md, "EVM backends").

Known differences from geth, all from pyrevm 0.3.7 (which fixes part of the environment itself;
the py-evm backend reproduces them so that both backends answer alike):

- BASEFEE reads 0 inside the EVM. geth does the same for calls without a fee (gas price 0), but
  reads the block's base fee when a fee is given.
- GASLIMIT reads the executor's gas ceiling (``gas_ceiling``, 10x the block gas limit by default,
  interface §8) instead of the block's gas limit: pyrevm uses one value both as the block gas
  limit a call's gas is checked against and as the GASLIMIT opcode's answer.
- BLOCKHASH answers pyrevm's in-memory placeholder, not the chain's hashes.
- Access lists, blob and EIP-7702 fields of a call are not supported.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from functools import cache
from types import ModuleType

from eth_utils import to_checksum_address

from feeslab._solidity import ERROR_SELECTOR, PANIC_SELECTOR, panic_reason
from feeslab.devnet._evm_types import (  # the types, re-exported: import them from here
    INITCODE_WORD_GAS as INITCODE_WORD_GAS,
)
from feeslab.devnet._evm_types import (
    TX_DATA_NONZERO_GAS as TX_DATA_NONZERO_GAS,
)
from feeslab.devnet._evm_types import (
    TX_DATA_ZERO_GAS as TX_DATA_ZERO_GAS,
)
from feeslab.devnet._evm_types import (
    TX_GAS,
    Account,
    BlockContext,
    CallRequest,
    InvalidTransaction,
    Machine,
    Outcome,
    intrinsic_gas,
)
from feeslab.devnet._evm_types import (
    TX_GAS_CREATE as TX_GAS_CREATE,
)
from feeslab.devnet._evm_types import (
    parse_failure as parse_failure,
)
from feeslab.devnet.errors import EXECUTION_REVERTED, SERVER_ERROR, RpcError

ZERO_ADDRESS = bytes(20)
DEFAULT_SPEC = "SHANGHAI"
GAS_CAP_FACTOR = 10  # interface §8: the gas parameter is capped at 10x the block gas limit

MAX_INITCODE_SIZE = 49_152  # EIP-3860 [bytes]
CALL_STIPEND = 2_300  # params.CallStipend [gas]
ESTIMATE_ERROR_RATIO = 0.015  # geth's estimateGasErrorRatio

# geth's error texts (core/error.go, core/vm/errors.go)
ERR_INSUFFICIENT_FUNDS = "insufficient funds for gas * price + value"
ERR_INSUFFICIENT_TRANSFER = "insufficient funds for transfer"
ERR_INTRINSIC_GAS = "intrinsic gas too low"
ERR_TIP_ABOVE_FEE_CAP = "max priority fee per gas higher than max fee per gas"
ERR_FEE_CAP_TOO_LOW = "max fee per gas less than block base fee"
ERR_MAX_INITCODE = "max initcode size exceeded"
ERR_BOTH_FEE_KINDS = "both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified"
ERR_REVERTED = "execution reverted"


# revm halt reasons -> geth's VM error text; reasons not listed keep revm's name
HALT_MESSAGES = {
    "InvalidFEOpcode": "invalid opcode: INVALID",
    "OpcodeNotFound": "invalid opcode",
    "NotActivated": "invalid opcode",
    "InvalidJump": "invalid jump destination",
    "StackUnderflow": "stack underflow",
    "StackOverflow": "stack limit reached",
    "OutOfOffset": "return data out of bounds",
    "CreateCollision": "contract address collision",
    "NonceOverflow": "nonce uint64 overflow",
    "CreateContractSizeLimit": "max code size exceeded",
    "CreateContractStartingWithEF": "invalid code: must not begin with 0xef",
    "CreateInitCodeSizeLimit": "max initcode size exceeded",
    "OverflowPayment": "gas uint64 overflow",
    "StateChangeDuringStaticCall": "write protection",
    "CallNotAllowedInsideStatic": "write protection",
    "OutOfFunds": "insufficient balance for transfer",
    "CallTooDeep": "max call depth exceeded",
}


class _TxError(Exception):
    """A geth pre-execution error (core.ErrXxx wrapped with its details)."""

    def __init__(self, message: str, *, intrinsic: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.intrinsic = intrinsic  # geth's estimator treats this one as "needs more gas"


# -- halt reasons -----------------------------------------------------------------------------


def halt_message(reason: str) -> str:
    """geth's VM error text for a revm halt reason (``out of gas`` for every OutOfGas)."""
    if reason.startswith("OutOfGas"):
        return "out of gas"
    return HALT_MESSAGES.get(reason, reason)


# -- the executor -----------------------------------------------------------------------------


def gas_ceiling(block: BlockContext) -> int:
    """The most gas a call may be given in ``block``: 10x its gas limit (interface §8) [gas]."""
    return GAS_CAP_FACTOR * block.gas_limit


BACKENDS = ("pyrevm", "py-evm")


@cache
def backend() -> ModuleType:
    """The EVM backend module: pyrevm where it imports, else py-evm (``FEESLAB_EVM`` forces one).

    Raises
    ------
    ValueError
        When ``FEESLAB_EVM`` names no backend.
    ImportError
        When the forced backend is not installed.
    """
    forced = os.environ.get("FEESLAB_EVM", "")
    if forced not in ("", *BACKENDS):
        raise ValueError(f"FEESLAB_EVM must be one of {', '.join(BACKENDS)}, not {forced!r}")
    if forced != "py-evm":
        try:
            from feeslab.devnet import _evm_pyrevm

            return _evm_pyrevm
        except ImportError:
            if forced == "pyrevm":
                raise
    from feeslab.devnet import _evm_pyevm

    return _evm_pyevm


class Executor:
    """One block's world state in an EVM backend; executions never change it.

    Parameters
    ----------
    accounts : mapping of 20-byte address -> Account
        The state after the parent block (or after the block itself, for eth_call at it).
    block : BlockContext
        The block context calls run in.
    spec_id : str, optional
        revm's hard fork name.
    gas_ceiling : int, optional
        The most gas one execution may get [gas]; 10x ``block.gas_limit`` by default.
    """

    def __init__(
        self,
        accounts: Mapping[bytes, Account],
        block: BlockContext,
        *,
        spec_id: str = DEFAULT_SPEC,
        gas_ceiling: int | None = None,
        host: MachineHost | None = None,
    ) -> None:
        self.block = block
        self.accounts = dict(accounts)
        ceiling = GAS_CAP_FACTOR * block.gas_limit if gas_ceiling is None else gas_ceiling
        self.gas_ceiling = ceiling
        if host is None:
            machine = backend().Machine(self.accounts, block, gas_ceiling=ceiling, spec_id=spec_id)
            host = MachineHost(machine, block.number)
        self._host = host

    # -- reading the state (from the mapping: reads never touch the EVM's warm set) -----------

    def account(self, address: bytes) -> Account:
        """The account at ``address`` (an empty one when there is none)."""
        return self.accounts.get(address) or Account()

    def storage(self, address: bytes, slot: int) -> int:
        """The word in ``slot`` of ``address`` (0 for unknown accounts and slots)."""
        return self.account(address).storage.get(slot, 0)

    # -- executing --------------------------------------------------------------------------

    def execute(self, request: CallRequest, gas: int) -> Outcome:
        """Run ``request`` with ``gas`` [gas] at its effective gas price; state unchanged after.

        Raises
        ------
        InvalidTransaction
            When the backend refuses the message (funds, intrinsic gas, gas above the ceiling).
        """
        price = effective_gas_price(request, self.block.base_fee)
        # one EVM, many server threads: a snapshot/revert pair must not interleave
        with self._host.lock:
            machine = self._host.enter(self.block)
            return machine.run(request.sender, request.to, request.data, request.value, gas, price)


class MachineHost:
    """A backend machine and its lock, shared by the executors of blocks it can move between.

    Parameters
    ----------
    machine : backend Machine
        Holding the state after block ``number``.
    number : int
        The block the machine is at.
    move : callable, optional
        ``move(machine, from_number, to_block)`` brings the machine to ``to_block``'s state and
        context; without it the machine serves block ``number`` only.
    ceiling : int, optional
        The machine's gas ceiling [gas], for sharers to match.
    """

    def __init__(
        self,
        machine: Machine,
        number: int,
        move: Callable[[Machine, int, BlockContext], None] | None = None,
        *,
        ceiling: int | None = None,
    ) -> None:
        self.machine = machine
        self.ceiling = ceiling
        self.number = number
        self.lock = threading.Lock()
        self._move = move

    def enter(self, block: BlockContext) -> Machine:
        """The machine at ``block``'s state; call with ``lock`` held."""
        if block.number != self.number:
            if self._move is None:
                raise RuntimeError(f"machine at block {self.number} cannot serve {block.number}")
            self._move(self.machine, self.number, block)
            self.number = block.number
        return self.machine


# -- geth's message rules ---------------------------------------------------------------------


def _fee_caps(request: CallRequest, base_fee: int | None) -> tuple[int, int]:
    """(fee cap, tip cap) [wei/gas] as geth's ToMessage sets them."""
    if request.gas_price is not None or base_fee is None:
        price = request.gas_price or 0
        return price, price
    return request.max_fee_per_gas or 0, request.max_priority_fee_per_gas or 0


def effective_gas_price(request: CallRequest, base_fee: int | None) -> int:
    """The gas price the call pays [wei/gas]: 0 when no fee is given (geth's ToMessage)."""
    fee_cap, tip_cap = _fee_caps(request, base_fee)
    if base_fee is None or request.gas_price is not None:
        return fee_cap
    if fee_cap == 0 and tip_cap == 0:
        return 0
    return min(tip_cap + base_fee, fee_cap)


def _check_fees(request: CallRequest, block: BlockContext) -> None:
    """geth's preCheck fee rules; skipped for calls that give no fee (vm.Config.NoBaseFee)."""
    if request.gas_price is not None and (
        request.max_fee_per_gas is not None or request.max_priority_fee_per_gas is not None
    ):
        raise RpcError(SERVER_ERROR, ERR_BOTH_FEE_KINDS)
    if block.base_fee is None:
        return
    fee_cap, tip_cap = _fee_caps(request, block.base_fee)
    if fee_cap == 0 and tip_cap == 0:
        return
    sender = to_checksum_address(request.sender)
    if fee_cap < tip_cap:
        raise _TxError(
            f"{ERR_TIP_ABOVE_FEE_CAP}: address {sender}, maxPriorityFeePerGas: {tip_cap}, "
            f"maxFeePerGas: {fee_cap}"
        )
    # geth lowers the block's base fee to 0 when the effective price is 0
    base_fee = block.base_fee if effective_gas_price(request, block.base_fee) else 0
    if fee_cap < base_fee:
        raise _TxError(
            f"{ERR_FEE_CAP_TOO_LOW}: address {sender}, maxFeePerGas: {fee_cap}, baseFee: {base_fee}"
        )


def _precheck(executor: Executor, request: CallRequest, gas: int) -> None:
    """geth's checks before execution, in its order: fees, funds, intrinsic gas, init code."""
    _check_fees(request, executor.block)
    fee_cap, _ = _fee_caps(request, executor.block.base_fee)
    balance = executor.account(request.sender).balance
    want = gas * fee_cap + request.value
    if balance < want:
        raise _TxError(
            f"{ERR_INSUFFICIENT_FUNDS}: address {to_checksum_address(request.sender)} "
            f"have {balance} want {want}"
        )
    needed = intrinsic_gas(request)
    if gas < needed:
        raise _TxError(f"{ERR_INTRINSIC_GAS}: have {gas}, want {needed}", intrinsic=True)
    if request.to is None and len(request.data) > MAX_INITCODE_SIZE:
        raise _TxError(
            f"{ERR_MAX_INITCODE}: code size {len(request.data)} limit {MAX_INITCODE_SIZE}"
        )


def _apply(executor: Executor, request: CallRequest, gas: int) -> Outcome:
    """geth's ApplyMessage: the pre-checks, then the execution."""
    _precheck(executor, request, gas)
    try:
        return executor.execute(request, gas)
    except InvalidTransaction as exc:
        raise _TxError(str(exc)) from None


# -- revert errors ----------------------------------------------------------------------------


def _go_string(raw: bytes) -> str:
    """Bytes as Go's JSON encoder prints a string: each invalid UTF-8 byte becomes U+FFFD."""
    out, i = [], 0
    while i < len(raw):
        for size in (1, 2, 3, 4):
            try:
                out.append(raw[i : i + size].decode("utf-8"))
            except UnicodeDecodeError:
                continue
            i += size
            break
        else:
            out.append("\ufffd")
            i += 1
    return "".join(out)


def _abi_string(payload: bytes) -> str | None:
    """An ABI-encoded ``string`` argument, with geth's bounds checks; None when malformed."""
    if len(payload) < 32:
        return None
    offset = int.from_bytes(payload[:32], "big")
    if offset + 32 > len(payload):
        return None
    length = int.from_bytes(payload[offset : offset + 32], "big")
    start = offset + 32
    if start + length > len(payload):
        return None
    return _go_string(payload[start : start + length])


def unpack_revert(output: bytes) -> str | None:
    """geth's abi.UnpackRevert: the reason in Error(string) or Panic(uint256) revert data."""
    selector, payload = output[:4], output[4:]
    if len(output) < 4:
        return None
    if selector == ERROR_SELECTOR:
        return _abi_string(payload)
    if selector == PANIC_SELECTOR:
        if len(payload) < 32:
            return None
        code = int.from_bytes(payload[:32], "big")
        return panic_reason(code)
    return None


def revert_error(output: bytes) -> RpcError:
    """The JSON-RPC error for a REVERT: code 3, decoded reason, raw data (interface §7.1)."""
    reason = unpack_revert(output)
    message = ERR_REVERTED if reason is None else f"{ERR_REVERTED}: {reason}"
    return RpcError(EXECUTION_REVERTED, message, "0x" + output.hex())


def _failure_error(outcome: Outcome) -> RpcError:
    """A failed execution as geth's eth_call reports it."""
    if outcome.reverted:
        return revert_error(outcome.output)
    return RpcError(SERVER_ERROR, halt_message(outcome.halt or ""))


# -- eth_call ---------------------------------------------------------------------------------


def call_gas(request: CallRequest, gas_cap: int) -> int:
    """The gas an eth_call runs with: the request's, capped, or the cap itself [gas]."""
    return gas_cap if request.gas is None else min(request.gas, gas_cap)


def call(executor: Executor, request: CallRequest, *, gas_cap: int) -> bytes:
    """eth_call: run ``request`` on ``executor``'s state and return its output.

    Raises
    ------
    RpcError
        3 on a revert (revert_error); -32000 with geth's text for a pre-execution error
        (``err: <reason> (supplied gas N)``) and for other failures (``out of gas``, ...).
    """
    gas = call_gas(request, gas_cap)
    try:
        outcome = _apply(executor, request, gas)
    except _TxError as exc:
        raise RpcError(SERVER_ERROR, f"err: {exc.message} (supplied gas {gas})") from None
    if not outcome.success:
        raise _failure_error(outcome)
    return outcome.output


# -- eth_estimateGas --------------------------------------------------------------------------


def _upper_bound(executor: Executor, request: CallRequest, gas_cap: int) -> int:
    """geth's starting ``hi``: the gas given (if at least 21000) or the block gas limit,
    capped by what the sender can pay for and by ``gas_cap`` [gas]."""
    hi = executor.block.gas_limit
    if request.gas is not None and min(request.gas, gas_cap) >= TX_GAS:
        hi = min(request.gas, gas_cap)
    fee_cap, _ = _fee_caps(request, executor.block.base_fee)
    if fee_cap:
        available = executor.account(request.sender).balance
        if request.value:
            if request.value >= available:
                raise RpcError(SERVER_ERROR, ERR_INSUFFICIENT_TRANSFER)
            available -= request.value
        hi = min(hi, available // fee_cap)
    if gas_cap:
        hi = min(hi, gas_cap)
    return hi


def _probe(executor: Executor, request: CallRequest, gas: int) -> tuple[bool, Outcome | None]:
    """geth's estimator ``execute``: (failed, outcome); an intrinsic-gas error only fails.

    Raises
    ------
    RpcError
        -32000 ``failed with N gas: <reason>`` for other pre-execution errors.
    """
    try:
        outcome = _apply(executor, request, gas)
    except _TxError as exc:
        if exc.intrinsic:
            return True, None
        raise RpcError(SERVER_ERROR, f"failed with {gas} gas: {exc.message}") from None
    return not outcome.success, outcome


def _estimate_failure(outcome: Outcome | None, hi: int) -> RpcError:
    """Why the call fails even at ``hi``: its revert or VM error, or not enough gas."""
    if outcome is not None and not outcome.out_of_gas:
        if outcome.reverted:  # code 3 with data, "0x" too, as eth_call answers (§7.1)
            return revert_error(outcome.output)
        return RpcError(SERVER_ERROR, halt_message(outcome.halt or ""))
    return RpcError(SERVER_ERROR, f"gas required exceeds allowance ({hi})")


def _is_plain_transfer(executor: Executor, request: CallRequest) -> bool:
    return not request.data and request.to is not None and not executor.account(request.to).code


def estimate_gas(executor: Executor, request: CallRequest, *, gas_cap: int) -> int:
    """eth_estimateGas with geth's estimator (eth/gasestimator): the lowest gas that succeeds,
    overestimated by less than 1.5 % and never under [gas].

    Raises
    ------
    RpcError
        3 on a revert (data ``0x`` when empty); -32000 ``gas required exceeds allowance
        (N)`` when even the upper bound fails for want of gas, geth's funds and VM errors
        otherwise.
    """
    hi = _upper_bound(executor, request, gas_cap)
    if _is_plain_transfer(executor, request):
        failed, _ = _probe_quietly(executor, request, TX_GAS)
        if not failed:
            return TX_GAS
    failed, outcome = _probe(executor, request, hi)
    if failed:
        raise _estimate_failure(outcome, hi)
    assert outcome is not None
    lo = outcome.gas_used - 1
    optimistic = (outcome.max_used + CALL_STIPEND) * 64 // 63
    if optimistic < hi:
        failed, _ = _probe(executor, request, optimistic)
        lo, hi = (optimistic, hi) if failed else (lo, optimistic)
    return _bisect(executor, request, lo, hi)


def _probe_quietly(executor: Executor, request: CallRequest, gas: int) -> tuple[bool, None]:
    """A probe whose errors only mean "failed" (geth's plain-transfer shortcut)."""
    try:
        failed, _ = _probe(executor, request, gas)
    except RpcError:
        return True, None
    return failed, None


def _bisect(executor: Executor, request: CallRequest, lo: int, hi: int) -> int:
    """geth's binary search between a failing ``lo`` and a succeeding ``hi`` [gas]."""
    while lo + 1 < hi:
        if (hi - lo) / hi < ESTIMATE_ERROR_RATIO:
            break  # close enough: wallets add a margin anyway (geth's reasoning)
        mid = min(lo + (hi - lo) // 2, lo * 2)  # skew low: most calls need little gas
        failed, _ = _probe(executor, request, mid)
        if failed:
            lo = mid
        else:
            hi = mid
    return hi

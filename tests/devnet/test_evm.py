"""feeslab.devnet.evm and the execution methods of rpc.py, on real pyrevm execution.

Contracts are hand-assembled; each is spelled out opcode by opcode. Expected values come
from geth's sources (messages) or are recomputed here (true minimum gas by bisection).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import rlp
from eth_hash.auto import keccak
from eth_utils import to_checksum_address

from feeslab.devnet.errors import RpcError
from feeslab.devnet.evm import (
    Account,
    BlockContext,
    CallRequest,
    Executor,
    call,
    estimate_gas,
    parse_failure,
    revert_error,
)
from feeslab.devnet.jsonrpc import CallContext
from feeslab.devnet.rpc import dispatch

GAS_LIMIT = 30_000_000
BASE_FEE = 7
CAP = 10 * GAS_LIMIT
RICH = bytes.fromhex("11" * 20)
POOR = bytes.fromhex("22" * 20)
NOBODY = bytes.fromhex("99" * 20)

# PUSH1 0x2a PUSH0 MSTORE PUSH1 0x20 PUSH0 RETURN: returns the word 42
RETURN_42 = bytes.fromhex("602a5f5260205ff3")
# PUSH1 1 PUSH0 SSTORE (slot 0 := 1), PUSH0 PUSH0 SSTORE (slot 0 := 0, refund), STOP
STORE_AND_CLEAR = bytes.fromhex("60015f555f5f5500")
# GAS PUSH3 100000 SWAP1 LT PUSH1 0x0b JUMPI STOP JUMPDEST PUSH0 PUSH0 REVERT:
# reverts unless more than 100000 gas is left when it starts
NEEDS_100K = bytes.fromhex("5a620186a0901060" + "0b" + "57005b5f5ffd")
# JUMPDEST PUSH0 JUMP: loops until out of gas
LOOP = bytes.fromhex("5b5f56")
# PUSH0 SLOAD PUSH0 MSTORE PUSH1 0x20 PUSH0 RETURN: returns slot 0
READ_SLOT0 = bytes.fromhex("5f545f5260205ff3")
# PUSH1 7 PUSH0 SSTORE STOP: slot 0 := 7
WRITE_SLOT0 = bytes.fromhex("60075f5500")
# CALLDATASIZE PUSH0 PUSH0 CALLDATACOPY CALLDATASIZE PUSH0 REVERT: reverts with its calldata
REVERT_CALLDATA = bytes.fromhex("365f5f37365ffd")
# INVALID
INVALID = bytes.fromhex("fe")

ADDR = {name: bytes([0xC0 + i]) * 20 for i, name in enumerate(
    ["ret42", "refund", "needs", "loop", "read", "write", "revert", "invalid"]
)}
CODES = {
    "ret42": RETURN_42, "refund": STORE_AND_CLEAR, "needs": NEEDS_100K, "loop": LOOP,
    "read": READ_SLOT0, "write": WRITE_SLOT0, "revert": REVERT_CALLDATA, "invalid": INVALID,
}


def block(base_fee: int | None = BASE_FEE) -> BlockContext:
    return BlockContext(
        number=100, timestamp=1_700_000_000, gas_limit=GAS_LIMIT, base_fee=base_fee,
        coinbase=bytes(20), prevrandao=bytes(32), difficulty=0, chain_id=1337,
    )


def accounts() -> dict[bytes, Account]:
    state = {ADDR[name]: Account(code=code) for name, code in CODES.items()}
    state[ADDR["read"]] = Account(code=READ_SLOT0, storage={0: 5})
    state[RICH] = Account(balance=10**24)
    state[POOR] = Account(balance=1000)
    return state


@pytest.fixture(scope="module")
def executor() -> Executor:
    return Executor(accounts(), block())


def req(to: str | bytes | None, data: bytes = b"", **kw: Any) -> CallRequest:
    target = ADDR[to] if isinstance(to, str) else to
    return CallRequest(sender=kw.pop("sender", RICH), to=target, data=data, **kw)


def abi_error(message: bytes) -> bytes:
    padded = message + bytes(-len(message) % 32)
    return (
        bytes.fromhex("08c379a0")
        + (32).to_bytes(32, "big")
        + len(message).to_bytes(32, "big")
        + padded
    )


def abi_panic(code: int) -> bytes:
    return bytes.fromhex("4e487b71") + code.to_bytes(32, "big")


# -- revert decoding (geth's abi.UnpackRevert and revertError) -----------------------------------


def test_error_string_revert() -> None:
    error = revert_error(abi_error(b"user error"))
    assert (error.code, error.message) == (3, "execution reverted: user error")
    assert error.data == "0x" + abi_error(b"user error").hex()


# geth's wording of each Panic code (accounts/abi/abi.go), written out here
GETH_PANICS = {
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


@pytest.mark.parametrize("code", sorted(GETH_PANICS))
def test_every_panic_code(code: int) -> None:
    error = revert_error(abi_panic(code))
    assert error.message == f"execution reverted: {GETH_PANICS[code]}"
    assert error.data == "0x" + abi_panic(code).hex()


def test_unknown_panic_code() -> None:
    assert revert_error(abi_panic(0x99)).message == "execution reverted: unknown panic code: 0x99"


@pytest.mark.parametrize(
    "output",
    [
        b"",  # revert(0, 0)
        bytes.fromhex("deadbeef") + bytes(32),  # a custom error
        bytes.fromhex("08c379"),  # shorter than a selector
        bytes.fromhex("08c379a0") + bytes(31),  # Error(string) without a full offset
        bytes.fromhex("08c379a0") + (0x40).to_bytes(32, "big"),  # offset past the end
        bytes.fromhex("4e487b71") + bytes(16),  # Panic without its code
    ],
    ids=["empty", "custom", "short", "no-offset", "bad-offset", "short-panic"],
)
def test_undecodable_revert_is_plain(output: bytes) -> None:
    error = revert_error(output)
    assert (error.code, error.message, error.data) == (3, "execution reverted", "0x" + output.hex())


def test_invalid_utf8_reason_as_go_prints_it() -> None:
    assert revert_error(abi_error(b"ab\xffc")).message == "execution reverted: ab\ufffdc"


# -- pyrevm's error texts -------------------------------------------------------------------------


def test_parse_revert_text() -> None:
    outcome = parse_failure("Revert { gas_used: 21018, output: 0x2a00 }")
    assert outcome is not None
    assert (outcome.reverted, outcome.output, outcome.gas_used, outcome.halt) == (
        True, b"\x2a\x00", 21018, None,
    )


def test_parse_empty_revert_text() -> None:
    outcome = parse_failure("Revert { gas_used: 53064, output: 0x }")
    assert outcome is not None and outcome.output == b"" and outcome.reverted


@pytest.mark.parametrize("reason", ["OutOfGas(Basic)", "InvalidFEOpcode", "OutOfGas(MemoryLimit)"])
def test_parse_halt_text(reason: str) -> None:
    outcome = parse_failure(f"Halt {{ reason: {reason}, gas_used: 100000 }}")
    assert outcome is not None
    assert (outcome.halt, outcome.gas_used, outcome.success, outcome.reverted) == (
        reason, 100000, False, False,
    )


@pytest.mark.parametrize(
    "text",
    [
        "Transaction(LackOfFundForMaxFee { fee: 5, balance: 0 })",
        "Initial gas spend is 21000 but gas limit is 20000. "
        "Error: Transaction(CallGasCostMoreThanGasLimit)",
        "Transaction(CallerGasLimitMoreThanBlock)",
    ],
)
def test_validation_texts_are_not_outcomes(text: str) -> None:
    assert parse_failure(text) is None


def test_parser_reads_real_pyrevm_failures(executor: Executor) -> None:
    reverted = executor.execute(req("revert", b"\x01\x02"), 100_000)
    assert reverted.reverted and reverted.output == b"\x01\x02" and reverted.gas_used > 21_000
    halted = executor.execute(req("loop"), 50_000)
    assert halted.halt == "OutOfGas(Basic)" and halted.gas_used == 50_000
    invalid = executor.execute(req("invalid"), 50_000)
    assert invalid.halt == "InvalidFEOpcode"


# -- eth_call semantics ---------------------------------------------------------------------------


def test_call_returns_output(executor: Executor) -> None:
    assert call(executor, req("ret42"), gas_cap=CAP) == (42).to_bytes(32, "big")


def test_call_reverts_with_data(executor: Executor) -> None:
    with pytest.raises(RpcError) as info:
        call(executor, req("revert", abi_error(b"nope")), gas_cap=CAP)
    assert info.value.to_json() == {
        "code": 3, "message": "execution reverted: nope", "data": "0x" + abi_error(b"nope").hex(),
    }


def test_call_vm_errors_are_gethic(executor: Executor) -> None:
    with pytest.raises(RpcError) as info:
        call(executor, req("loop", gas=60_000), gas_cap=CAP)
    assert info.value.to_json() == {"code": -32000, "message": "out of gas"}
    with pytest.raises(RpcError) as info:
        call(executor, req("invalid"), gas_cap=CAP)
    assert info.value.message == "invalid opcode: INVALID"


def test_calls_leave_state_unchanged(executor: Executor) -> None:
    before = executor.execute(req("ret42"), 100_000).gas_used
    assert call(executor, req("write"), gas_cap=CAP) == b""
    # the write is gone, and so is the warmth of what the call touched (EIP-2929)
    read = CallRequest(sender=RICH, to=ADDR["read"], data=b"")
    assert call(executor, read, gas_cap=CAP) == (5).to_bytes(32, "big")
    assert executor.execute(req("ret42"), 100_000).gas_used == before
    write_gas = [executor.execute(req("write"), 100_000).gas_used for _ in range(2)]
    assert write_gas[0] == write_gas[1]
    assert executor.storage(ADDR["read"], 0) == 5 and executor.storage(NOBODY, 0) == 0


def test_storage_is_cold_at_first_read(executor: Executor) -> None:
    # PUSH0 SLOAD ... : 21000 + 2 + 2100 (cold slot) + 2 + 3 + mem 3 + 3 + 2 = 23115
    assert executor.execute(req("read"), 100_000).gas_used == 23_115


def test_many_slots_load_cold() -> None:
    # PUSH1 2 SLOAD PUSH0 MSTORE PUSH1 3 SLOAD PUSH1 32 MSTORE PUSH1 64 PUSH0 RETURN
    reader = bytes.fromhex("6002545f526003546020526040" + "5ff3")
    state = {NOBODY: Account(code=reader, storage={3: 1, 2: 5, 9: 9})}
    outcome = Executor(state, block()).execute(req(NOBODY), 100_000)
    assert outcome.output == (5).to_bytes(32, "big") + (1).to_bytes(32, "big")
    # 21000 + 2 cold SLOADs (2 x 2100) + 2 PUSH1 x 4 + PUSH0 x 2 + MSTORE x 2 (3 + 3 memory)
    assert outcome.gas_used == 25_228


def test_no_fee_call_works_on_any_base_fee() -> None:
    expensive = Executor(accounts(), block(base_fee=10**12))
    assert call(expensive, req("ret42", sender=NOBODY), gas_cap=CAP)[-1] == 42


def test_default_gas_is_the_cap(executor: Executor) -> None:
    # 1 wei per gas: the cap's worth (3e8 wei) is more than POOR's 1000 wei
    with pytest.raises(RpcError) as info:
        call(executor, req("ret42", sender=POOR, gas_price=BASE_FEE), gas_cap=CAP)
    want = CAP * BASE_FEE
    assert info.value.message == (
        f"err: insufficient funds for gas * price + value: address {to_checksum_address(POOR)} "
        f"have 1000 want {want} (supplied gas {CAP})"
    )


def test_gas_above_the_cap_is_capped(executor: Executor) -> None:
    assert call(executor, req("ret42", gas=CAP * 5), gas_cap=CAP)[-1] == 42


def test_insufficient_funds_for_value(executor: Executor) -> None:
    with pytest.raises(RpcError) as info:
        call(executor, req(NOBODY, sender=POOR, value=5000, gas=30_000), gas_cap=CAP)
    assert info.value.to_json() == {
        "code": -32000,
        "message": "err: insufficient funds for gas * price + value: address "
        f"{to_checksum_address(POOR)} have 1000 want 5000 (supplied gas 30000)",
    }


def test_intrinsic_gas_too_low(executor: Executor) -> None:
    with pytest.raises(RpcError) as info:
        call(executor, req("ret42", b"\x00\x01", gas=21_000), gas_cap=CAP)
    assert (
        info.value.message
        == "err: intrinsic gas too low: have 21000, want 21020 (supplied gas 21000)"
    )


def test_fee_below_base_fee(executor: Executor) -> None:
    with pytest.raises(RpcError) as info:
        call(executor, req("ret42", gas=50_000, gas_price=3), gas_cap=CAP)
    assert info.value.message == (
        f"err: max fee per gas less than block base fee: address {to_checksum_address(RICH)}, "
        "maxFeePerGas: 3, baseFee: 7 (supplied gas 50000)"
    )


def test_tip_above_fee_cap(executor: Executor) -> None:
    request = req("ret42", gas=50_000, max_fee_per_gas=10, max_priority_fee_per_gas=11)
    with pytest.raises(RpcError) as info:
        call(executor, request, gas_cap=CAP)
    assert info.value.message == (
        "err: max priority fee per gas higher than max fee per gas: address "
        f"{to_checksum_address(RICH)}, maxPriorityFeePerGas: 11, maxFeePerGas: 10 "
        "(supplied gas 50000)"
    )


def test_both_fee_kinds(executor: Executor) -> None:
    with pytest.raises(RpcError) as info:
        call(executor, req("ret42", gas_price=10, max_fee_per_gas=10), gas_cap=CAP)
    assert info.value.to_json() == {
        "code": -32000,
        "message": "both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified",
    }


def test_create_returns_runtime_code(executor: Executor) -> None:
    # init: PUSH1 8 (size) PUSH1 12 (offset) PUSH0 CODECOPY PUSH1 8 PUSH0 RETURN, then runtime
    init = bytes.fromhex("6008600b5f3960085ff3") + bytes.fromhex("00") + RETURN_42
    assert init[11:] == RETURN_42
    assert call(executor, req(None, init), gas_cap=CAP) == RETURN_42
    # runtime code ending in zero bytes keeps them (revm pads analysed code with zeros)
    tail = RETURN_42 + bytes(3)
    init = bytes.fromhex("600b600b5f39600b5ff3") + bytes.fromhex("00") + tail
    assert call(executor, req(None, init), gas_cap=CAP) == tail


def test_create_address_follows_the_nonce() -> None:
    sender_nonce = 3
    state = accounts() | {RICH: Account(balance=10**24, nonce=sender_nonce)}
    expected = keccak(rlp.encode([RICH, sender_nonce]))[12:]
    # init code returning its own ADDRESS as the "runtime code":
    # ADDRESS PUSH0 MSTORE PUSH1 32 PUSH0 RETURN
    init = bytes.fromhex("305f5260205ff3")
    created = Executor(state, block())
    assert call(created, req(None, init), gas_cap=CAP) == bytes(12) + expected
    assert call(created, req(expected), gas_cap=CAP) == b""  # and it is gone again


# -- eth_estimateGas ----------------------------------------------------------------------------


def true_minimum(executor: Executor, request: CallRequest, hi: int = GAS_LIMIT) -> int:
    """The smallest gas at which ``request`` succeeds, by plain bisection over execute()."""
    lo = 21_000 - 1
    assert executor.execute(request, hi).success
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if executor.execute(request, mid).success:
            hi = mid
        else:
            lo = mid
    return hi


@pytest.mark.parametrize("name", ["ret42", "refund", "needs", "write"])
def test_estimate_is_within_gethbound_of_the_true_minimum(executor: Executor, name: str) -> None:
    request = req(name)
    estimate = estimate_gas(executor, request, gas_cap=CAP)
    minimum = true_minimum(executor, request)
    assert minimum <= estimate < minimum / (1 - 0.015)
    assert executor.execute(request, estimate).success


def test_refund_makes_the_minimum_exceed_gas_used(executor: Executor) -> None:
    used = executor.execute(req("refund"), 100_000).gas_used
    assert estimate_gas(executor, req("refund"), gas_cap=CAP) > used


def test_plain_transfer_is_21000(executor: Executor) -> None:
    assert estimate_gas(executor, req(NOBODY, value=1), gas_cap=CAP) == 21_000


def test_estimate_revert(executor: Executor) -> None:
    with pytest.raises(RpcError) as info:
        estimate_gas(executor, req("revert", abi_panic(0x11)), gas_cap=CAP)
    assert info.value.to_json() == {
        "code": 3,
        "message": "execution reverted: arithmetic underflow or overflow",
        "data": "0x" + abi_panic(0x11).hex(),
    }


def test_estimate_empty_revert_answers_like_call(executor: Executor) -> None:
    # interface §7.1: code 3 for eth_call and eth_estimateGas alike, with data "0x"
    with pytest.raises(RpcError) as info:
        estimate_gas(executor, req("revert"), gas_cap=CAP)
    assert info.value.to_json() == {"code": 3, "message": "execution reverted", "data": "0x"}


def test_estimate_without_gas_searches_up_to_the_block_gas_limit(executor: Executor) -> None:
    with pytest.raises(RpcError) as info:
        estimate_gas(executor, req("loop"), gas_cap=CAP)
    assert info.value.to_json() == {
        "code": -32000, "message": f"gas required exceeds allowance ({GAS_LIMIT})",
    }


def test_estimate_with_gas_uses_it_capped(executor: Executor) -> None:
    # a 200,000-gas block: the loop burns its whole cap, which takes py-evm a minute at 300M
    small = Executor(accounts(), dataclasses.replace(block(), gas_limit=200_000))
    cap = 10 * 200_000
    with pytest.raises(RpcError) as info:
        estimate_gas(small, req("loop", gas=cap * 2), gas_cap=cap)
    assert info.value.message == f"gas required exceeds allowance ({cap})"
    with pytest.raises(RpcError) as info:  # below 100000 it reverts: not a lack of gas
        estimate_gas(executor, req("needs", gas=50_000), gas_cap=CAP)
    assert info.value.to_json() == {"code": 3, "message": "execution reverted", "data": "0x"}


def test_estimate_capped_by_balance(executor: Executor) -> None:
    # POOR pays 7 wei/gas with 1000 wei: 142 gas, below any intrinsic cost
    with pytest.raises(RpcError) as info:
        estimate_gas(executor, req("ret42", sender=POOR, gas_price=BASE_FEE), gas_cap=CAP)
    assert info.value.message == "gas required exceeds allowance (142)"
    with pytest.raises(RpcError) as info:
        estimate_gas(executor, req(NOBODY, sender=POOR, value=1000, gas_price=7), gas_cap=CAP)
    assert info.value.to_json() == {"code": -32000, "message": "insufficient funds for transfer"}


def test_estimate_value_without_funds(executor: Executor) -> None:
    with pytest.raises(RpcError) as info:
        estimate_gas(executor, req(NOBODY, sender=POOR, value=5000), gas_cap=CAP)
    assert info.value.message == (
        f"failed with {GAS_LIMIT} gas: insufficient funds for gas * price + value: "
        f"address {to_checksum_address(POOR)} have 1000 want 5000"
    )


# -- the JSON-RPC methods -----------------------------------------------------------------------


class FakeState:
    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self.numbers: list[int] = []

    def executor_at(self, number: int) -> Executor:
        self.numbers.append(number)
        return self.executor

    def storage_at(self, address: bytes, slot: int, number: int) -> int:
        self.numbers.append(number)
        return self.executor.storage(address, slot)


class FakeChain:
    chain_id = 1337

    def __init__(self, executor: Executor) -> None:
        self.state = FakeState(executor)

    def head(self) -> int:
        return 100

    def number_of(self, block_hash: bytes) -> int | None:
        return 42 if block_hash == b"\x42" * 32 else None

    def safe(self) -> int | None:
        return None

    def finalized(self) -> int | None:
        return None


@pytest.fixture
def ctx(executor: Executor) -> CallContext:
    return CallContext(chain=FakeChain(executor), chains=None, transport="http")


def rpc(ctx: CallContext, method: str, params: Any) -> Any:
    try:
        return dispatch(ctx, method, params)
    except RpcError as exc:
        return exc.to_json()


def hex_addr(name: str) -> str:
    return "0x" + ADDR[name].hex()


RICH_HEX = "0x" + RICH.hex()


def test_rpc_call_and_estimate(ctx: CallContext) -> None:
    obj = {"from": RICH_HEX, "to": hex_addr("ret42")}
    assert rpc(ctx, "eth_call", [obj, "latest"]) == "0x" + (42).to_bytes(32, "big").hex()
    assert int(rpc(ctx, "eth_estimateGas", [obj]), 16) >= 21_000
    assert ctx.chain.state.numbers == [100, 101]  # latest; pending by default for estimates


def test_rpc_call_without_from_runs_from_the_zero_address(ctx: CallContext) -> None:
    # geth (and so the service's nodes) reads a missing "from" as the zero address; every
    # client's default read omits it
    expected = "0x" + (42).to_bytes(32, "big").hex()
    assert rpc(ctx, "eth_call", [{"to": hex_addr("ret42")}, "latest"]) == expected
    assert rpc(ctx, "eth_call", [{"to": hex_addr("ret42"), "from": None}, "latest"]) == expected
    assert rpc(ctx, "eth_call", [{"from": RICH_HEX}]) == {
        "code": -32602, "message": "missing value for required argument 1",
    }


def test_rpc_data_and_input(ctx: CallContext) -> None:
    obj = {"from": RICH_HEX, "to": hex_addr("revert"), "data": "0x01", "input": "0x01"}
    assert rpc(ctx, "eth_call", [obj, "latest"])["data"] == "0x01"
    obj["data"] = "0x02"
    assert rpc(ctx, "eth_call", [obj, "latest"]) == {
        "code": -32602,
        "message": 'both "data" and "input" are set and not equal. '
        'Please use "input" to pass transaction call data',
    }


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("gas", 5, "non-string into Go struct field TransactionArgs.gas of type hexutil.Uint64"),
        ("gas", "0x01", "hex number with leading zero digits into Go struct field "
         "TransactionArgs.gas of type hexutil.Uint64"),
        ("value", "12", "hex string without 0x prefix into Go struct field "
         "TransactionArgs.value of type *hexutil.Big"),
        ("data", "0x123", "hex string of odd length into Go struct field "
         "TransactionArgs.data of type hexutil.Bytes"),
        ("to", "0xzz" + "00" * 19, "invalid hex string into Go struct field "
         "TransactionArgs.to of type common.Address"),
    ],
)
def test_rpc_bad_call_fields(ctx: CallContext, field: str, value: Any, message: str) -> None:
    obj = {"from": RICH_HEX, "to": hex_addr("ret42"), field: value}
    assert rpc(ctx, "eth_estimateGas", [obj]) == {
        "code": -32602, "message": f"invalid argument 0: json: cannot unmarshal {message}",
    }


def test_rpc_short_address_and_bad_object(ctx: CallContext) -> None:
    assert rpc(ctx, "eth_estimateGas", [{"to": "0x1234"}])["message"] == (
        "invalid argument 0: hex string has length 4, want 40 for common.Address"
    )
    assert rpc(ctx, "eth_estimateGas", ["0x00"])["message"] == (
        "invalid argument 0: json: cannot unmarshal string into Go value of type "
        "ethapi.TransactionArgs"
    )


def test_rpc_keys_match_case_insensitively_and_unknown_are_ignored(ctx: CallContext) -> None:
    obj = {"FROM": RICH_HEX, "To": hex_addr("ret42"), "accessList": [], "whatever": 1}
    assert rpc(ctx, "eth_call", [obj, "latest"]).endswith("2a")


def test_rpc_blocks(ctx: CallContext) -> None:
    obj = {"from": RICH_HEX, "to": hex_addr("ret42")}
    assert rpc(ctx, "eth_call", [obj, "0x65"]) == {"code": -32000, "message": "header not found"}
    assert rpc(ctx, "eth_call", [obj, "0x" + "42" * 32]).endswith("2a")
    assert rpc(ctx, "eth_call", [obj, "0x" + "43" * 32]) == {
        "code": -32000, "message": "header for hash not found",
    }
    assert rpc(ctx, "eth_call", [obj, "safe"]) == {
        "code": -32000, "message": "safe block not found",
    }
    assert rpc(ctx, "eth_call", [obj, {"blockNumber": "0x5"}]).endswith("2a")


def test_rpc_chain_id(ctx: CallContext) -> None:
    obj = {"from": RICH_HEX, "to": hex_addr("ret42"), "chainId": "0x1"}
    assert rpc(ctx, "eth_call", [obj, "latest"]) == {
        "code": -32000, "message": "chainId does not match node's (have=1, want=1337)",
    }


def test_rpc_get_storage_at(ctx: CallContext) -> None:
    read = hex_addr("read")
    assert rpc(ctx, "eth_getStorageAt", [read, "0x0", "latest"]) == "0x" + "00" * 31 + "05"
    assert rpc(ctx, "eth_getStorageAt", [read, "0"]) == "0x" + "00" * 31 + "05"  # no prefix
    assert rpc(ctx, "eth_getStorageAt", [read, "0x" + "0" * 64]).endswith("05")
    assert rpc(ctx, "eth_getStorageAt", [read, "0x1", "latest"]) == "0x" + "00" * 32
    assert rpc(ctx, "eth_getStorageAt", [read, "0xg"]) == {
        "code": -32602, "message": 'invalid hex in storage key: "0xg"',
    }
    assert rpc(ctx, "eth_getStorageAt", [read, "0x1" + "0" * 64]) == {
        "code": -32602,
        "message": f'storage key too long (want at most 32 bytes): "0x1{"0" * 64}"',
    }
    assert rpc(ctx, "eth_getStorageAt", [read, "0x0", "0x65"]) == {
        "code": -32000, "message": "header not found",
    }
    assert rpc(ctx, "eth_getStorageAt", ["0x12", "0x0"])["message"] == (
        "invalid argument 0: hex string has length 2, want 40 for common.Address"
    )


# -- the world state's shared EVMs: moved from block to block, answering as fresh ones ----------


def _fresh_answers(state: Any, number: int, calls: list[tuple[bytes, bytes]]) -> list[Any]:
    """Every call's outcome on an EVM built for ``number`` alone (no sharing)."""
    fresh = Executor(state.accounts_at(number), state.block_context(number))
    return [fresh.execute(CallRequest(sender=state.deployer, to=to, data=data), 1_000_000)
            for to, data in calls]


def test_shared_evms_answer_as_fresh_ones_in_any_block_order() -> None:
    from feeslab.devnet.chain import build_chains

    chain = build_chains(7).by_id[1]
    state = chain.state
    state.ensure(chain.head())
    views = [(d.address, keccak(f"{f['name']}()".encode())[:4])
             for d in state.deployments.values() for f in d.artifact.abi
             if f.get("type") == "function" and f.get("stateMutability") == "view"
             and not f["inputs"]]
    balance = keccak(b"balanceOf(address)")[:4] + state.holders[3].rjust(32, b"\0")
    token = state.deployments["FeeslabToken"].address
    calls = [*views, (token, balance)]
    head, start = chain.head(), state.contracts_block
    # forward, backward, far jumps (new EVMs) and short hops (moves), both sides of the upgrade
    blocks = [head - 40, head - 39, head - 45, head - 3000, head - 2990, state.upgrade_block,
              state.upgrade_block - 1, start + 1, start + 700, head, head - 600, head - 1]
    answers = {}
    for number in blocks:
        shared = state.executor_at(number)
        got = [shared.execute(CallRequest(sender=state.deployer, to=to, data=data), 1_000_000)
               for to, data in calls]
        assert got == _fresh_answers(state, number, calls), number
        answers[number] = got
    assert len({repr(a) for a in answers.values()}) > len(blocks) // 2  # the state does move
    # an executor handed out earlier still answers for its own block after the EVM moved away
    assert [state.executor_at(blocks[0]).execute(
        CallRequest(sender=state.deployer, to=to, data=data), 1_000_000) for to, data in calls
    ] == answers[blocks[0]]


def test_accounts_at_matches_the_slot_histories() -> None:
    from feeslab.devnet.chain import build_chains

    chain = build_chains(7).by_id[1]
    state = chain.state
    state.ensure(chain.head())
    for number in [state.contracts_block - 1, state.contracts_block, state.contracts_block + 257,
                   state.upgrade_block, chain.head() - 1000, chain.head() - 1, chain.head()]:
        truth: dict[bytes, dict[int, int]] = {}
        for (address, slot), history in state._slots.items():
            if history.at(number):
                truth.setdefault(address, {})[slot] = history.at(number)
        got = {a: dict(acc.storage) for a, acc in state.accounts_at(number).items()
               if acc.storage}
        assert got == truth, number


def test_executors_on_shared_evms_read_storage_as_accounts_at() -> None:
    from feeslab.devnet.chain import build_chains

    chain = build_chains(7).by_id[1]
    state = chain.state
    state.ensure(chain.head())
    token = state.deployments["FeeslabToken"].address
    for number in [chain.head() - 3, state.upgrade_block, chain.head() - 2000]:
        executor = state.executor_at(number)
        truth = state.accounts_at(number)
        assert set(executor.accounts) == set(truth)
        for address, account in truth.items():
            assert dict(executor.account(address).storage) == dict(account.storage), number
            for slot in list(account.storage)[:50]:
                assert executor.storage(address, slot) == account.storage[slot]
        assert executor.storage(token, 2**255) == 0  # a slot never written
        assert dict(executor.account(token).storage)  # the token does hold storage


def test_shared_evms_follow_calls_in_random_block_order(monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    from feeslab.devnet import state as state_module
    from feeslab.devnet.chain import build_chains

    chain = build_chains(7).by_id[1]
    state = chain.state
    state.ensure(chain.head())
    # three EVMs for 3,000 blocks: most calls move one, far, forwards or backwards
    monkeypatch.setattr(state_module, "SHARED_MACHINES", 3)
    monkeypatch.setattr(state, "_hosts", [])
    monkeypatch.setattr(state, "_executors", type(state._executors)())
    moves: list[int] = []
    move = state._move

    def counted(machine: Any, start: int, block: Any) -> None:
        moves.append(block.number - start)
        move(machine, start, block)

    monkeypatch.setattr(state, "_move", counted)
    token = state.deployments["FeeslabToken"].address
    calls = [(token, keccak(b"balanceOf(address)")[:4] + h.rjust(32, b"\0"))
             for h in state.holders[:8]]
    calls.append((state.deployments["PriceOracle"].address, keccak(b"latest()")[:4]))
    blocks = random.Random(3).sample(range(chain.head() - 3000, chain.head() + 1), 60)
    for number in blocks + blocks[::-1]:  # far and near, forwards and backwards
        got = [state.executor_at(number).execute(
            CallRequest(sender=state.deployer, to=to, data=data), 1_000_000) for to, data in calls]
        assert got == _fresh_answers(state, number, calls), number
    from feeslab.devnet.evm import backend

    if backend().__name__.endswith("_evm_pyrevm"):  # shared EVMs moved far, both ways
        assert sum(m > 100 for m in moves) > 10 and sum(m < -100 for m in moves) > 10
    else:  # py-evm (CPython 3.13+): an executor per block, nothing to move
        assert moves == []

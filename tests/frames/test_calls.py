"""feeslab.frames.calls: ABI specs, encoding, decoding, revert texts and costs (pure)."""

from __future__ import annotations

import pandas as pd
import pytest
from eth_abi import encode
from eth_hash.auto import keccak

from feeslab.errors import RevertError, RpcError
from feeslab.frames import (
    COST_DTYPES,
    call_object,
    decode_output,
    encode_call,
    error_text,
    function_spec,
    parse_call_series,
    parse_cost_estimates,
    transaction_cost,
)

HOLDER = "0x" + "ab" * 20
BALANCE_OF = {
    "type": "function",
    "name": "balanceOf",
    "stateMutability": "view",
    "inputs": [{"name": "account", "type": "address"}],
    "outputs": [{"name": "", "type": "uint256"}],
}
ROUND = {
    "type": "function",
    "name": "latest",
    "inputs": [],
    "outputs": [
        {"name": "roundId", "type": "uint80"},
        {"name": "answer", "type": "int128"},
        {"name": "updatedAt", "type": "uint40"},
    ],
}
UNAUTHORIZED = {
    "type": "error",
    "name": "Unauthorized",
    "inputs": [{"name": "caller", "type": "address"}, {"name": "code", "type": "uint256"}],
}
ABI = [BALANCE_OF, ROUND, UNAUTHORIZED]


def revert_object(data: bytes, message: str = "execution reverted") -> dict:
    return {"code": 3, "message": message, "data": "0x" + data.hex()}


def selector(signature: str) -> bytes:
    return keccak(signature.encode())[:4]


# -- specs and encoding ------------------------------------------------------------------------


def test_function_spec_from_an_entry_a_signature_and_a_name():
    from_entry = function_spec(BALANCE_OF)
    assert from_entry.signature == "balanceOf(address)"
    assert from_entry.outputs == ("uint256",)
    assert from_entry.output_names == ("output",)
    assert function_spec("balanceOf", abi=ABI) == from_entry
    assert function_spec("balanceOf(address)", abi=ABI) == from_entry
    assert function_spec("balanceOf(address)", returns=["uint256"]).outputs == ("uint256",)
    assert function_spec("balanceOf(address)(uint256)").outputs == ("uint256",)
    # uint is uint256 in the canonical signature, inside tuples too
    spec = function_spec("f(uint,(int,bool)[])", returns=["uint", "address"])
    assert spec.signature == "f(uint256,(int256,bool)[])"
    assert spec.outputs == ("uint256", "address")
    assert spec.output_names == ("output_0", "output_1")
    assert function_spec(ROUND).output_names == ("roundId", "answer", "updatedAt")


def test_function_spec_refuses_what_it_cannot_read():
    with pytest.raises(ValueError, match="no function 'nope'"):
        function_spec("nope", abi=ABI)
    with pytest.raises(ValueError, match="overloaded"):
        function_spec("f", abi=[{**BALANCE_OF, "name": "f"}, {**ROUND, "name": "f"}])
    with pytest.raises(ValueError, match="unbalanced"):
        function_spec("f(uint256")
    with pytest.raises(ValueError, match="not a function signature"):
        function_spec("1f()")
    with pytest.raises(ValueError, match="not a function ABI entry"):
        function_spec(UNAUTHORIZED)
    with pytest.raises(TypeError, match="list of types"):
        function_spec("f()", returns="uint256")



def test_signatures_drop_names_and_locations_and_canonicalise_types():
    spec = function_spec("f((uint a, bool b)[] xs, bytes memory d, int8 [ 2 ] e)(uint)")
    assert spec.inputs == ("(uint256,bool)[]", "bytes", "int8[2]")
    assert spec.outputs == ("uint256",)
    assert spec.selector == keccak(b"f((uint256,bool)[],bytes,int8[2])")[:4]
    assert function_spec("g()", returns=["uint", "(int,bool)[]"]).outputs == (
        "uint256",
        "(int256,bool)[]",
    )
    with pytest.raises(ValueError, match=r"malformed types in 'f\(uint,,bool\)'"):
        function_spec("f(uint,,bool)")
    with pytest.raises(ValueError, match="malformed types in returns"):
        function_spec("g()", returns=["uint256", ""])

def test_encode_call_is_the_selector_and_the_abi_encoded_arguments():
    spec = function_spec("transfer(address,uint256)", returns=["bool"])
    data = encode_call(spec, [HOLDER, 5])
    assert data[:10] == "0xa9059cbb"  # the ERC-20 transfer selector
    assert bytes.fromhex(data[10:]) == encode(["address", "uint256"], [HOLDER, 5])
    assert encode_call(function_spec("totalSupply()"), []) == "0x18160ddd"
    with pytest.raises(ValueError, match="takes 2 argument"):
        encode_call(spec, [HOLDER])
    with pytest.raises(ValueError, match="cannot encode"):
        encode_call(spec, [HOLDER, -1])


def test_decode_output_is_exact_and_explains_an_empty_answer():
    spec = function_spec(ROUND)
    big = 2**127 - 1
    result = "0x" + encode(["uint80", "int128", "uint40"], [7, -big, 1_700_000_000]).hex()
    assert decode_output(spec, result) == (7, -big, 1_700_000_000)
    assert decode_output(function_spec("f()"), "0x") == ()
    with pytest.raises(ValueError, match="no contract code"):
        decode_output(spec, "0x")
    with pytest.raises(ValueError, match="cannot decode 3 bytes"):
        decode_output(spec, "0x010203")


# -- revert texts ------------------------------------------------------------------------------


def test_error_text_decodes_every_kind_of_revert():
    reason = selector("Error(string)") + encode(["string"], ["feeslab: not allowed"])
    assert error_text(revert_object(reason)) == "feeslab: not allowed"
    panic = selector("Panic(uint256)") + encode(["uint256"], [0x12])
    assert error_text(revert_object(panic)) == "Panic(0x12): division or modulo by zero"
    custom = selector("Unauthorized(address,uint256)") + encode(["address", "uint256"], [HOLDER, 7])
    assert error_text(revert_object(custom), ABI) == f"Unauthorized({HOLDER}, 7)"
    assert error_text(revert_object(custom)).startswith(
        f"custom error 0x{selector('Unauthorized(address,uint256)').hex()}"
    )
    assert error_text(revert_object(b"")) == "execution reverted"
    # an RpcError built by the transport decodes the same way, ABI included
    assert error_text(RevertError.from_rpc(revert_object(custom)), ABI) == (
        f"Unauthorized({HOLDER}, 7)"
    )
    # ganache's form: the reason only in the message
    ganache = {"code": -32000, "message": "VM Exception while processing transaction: revert no"}
    assert error_text(ganache) == "no"
    # not a revert: code and message
    assert error_text({"code": -32000, "message": "header not found"}) == "-32000: header not found"
    assert error_text(RpcError(-32000, "insufficient funds")) == "-32000: insufficient funds"


# -- call series -------------------------------------------------------------------------------


def test_parse_call_series_keeps_ints_exact_and_reverts_as_data():
    spec = function_spec(BALANCE_OF)
    huge = 2**255 + 12345  # beyond int64 and float precision
    answers = {
        12: "0x" + encode(["uint256"], [huge]).hex(),
        "0xa": "0x" + encode(["uint256"], [5]).hex(),  # block 10, as hex
        11: revert_object(selector("Error(string)") + encode(["string"], ["paused"])),
        13: "0x",
    }
    frame = parse_call_series(spec, answers)
    assert list(frame.columns) == ["block_number", "output", "error"]
    assert frame["block_number"].dtype == "int64"
    assert frame["block_number"].tolist() == [10, 11, 12, 13]
    assert frame["output"].dtype == object
    assert frame["output"].tolist() == [5, None, huge, None]
    assert type(frame["output"][2]) is int
    errors = frame["error"]
    assert errors.isna().tolist() == [True, False, True, False]
    assert errors[1] == "paused"
    assert "empty answer" in errors[3]


def test_parse_call_series_dtypes_per_output_type():
    spec = function_spec(
        "f()", returns=["uint8", "int64", "uint64", "bool", "address", "bytes4", "string"]
    )
    values = [255, -(2**63), 2**64 - 1, True, HOLDER, b"\x01\x02\x03\x04", "hi"]
    result = "0x" + encode(list(spec.outputs), values).hex()
    frame = parse_call_series(spec, {1: result, 2: {"code": 3, "message": "execution reverted"}})
    dtypes = [str(frame[c].dtype) for c in frame.columns[1:-1]]
    assert dtypes == ["Int64", "Int64", "object", "boolean", "str", "str", "str"]
    first = frame.iloc[0, 1:-1].tolist()
    assert first == [255, -(2**63), 2**64 - 1, True, HOLDER, "0x01020304", "hi"]
    assert frame.iloc[1, 1:-1].isna().all()
    assert frame["error"].tolist()[1] == "execution reverted"


def test_parse_call_series_empty_and_bad_input():
    spec = function_spec(ROUND)
    empty = parse_call_series(spec, {})
    assert list(empty.columns) == ["block_number", "roundId", "answer", "updatedAt", "error"]
    assert empty.empty and empty["block_number"].dtype == "int64"
    with pytest.raises(ValueError, match="same block twice"):
        parse_call_series(spec, {1: "0x", "0x1": "0x"})
    with pytest.raises(TypeError, match="dict"):
        parse_call_series(spec, ["0x"])


# -- costs -------------------------------------------------------------------------------------


def test_transaction_cost_is_exact_integer_arithmetic():
    assert transaction_cost(21_000, 30 * 10**9) == 630_000 * 10**9
    assert transaction_cost(21_000, 30 * 10**9, 2 * 10**9) == 21_000 * 32 * 10**9
    big = 2**200
    assert transaction_cost(3, big, 1) == 3 * big + 3
    with pytest.raises(ValueError, match="gas"):
        transaction_cost(-1, 1)
    with pytest.raises(ValueError, match="base_fee_wei"):
        transaction_cost(1, 1.5)


def test_parse_cost_estimates_columns_and_reverts():
    base = 9_983_926_701
    custom = selector("Unauthorized(address,uint256)") + encode(["address", "uint256"], [HOLDER, 1])
    frame = parse_cost_estimates(
        ["0x87a1", revert_object(custom), RpcError(-32000, "insufficient funds")],
        block_number=205_000,
        base_fee_wei=base,
        priority_fee_wei=10**9,
        abi=ABI,
    )
    assert {c: str(t) for c, t in frame.dtypes.items()} == COST_DTYPES
    assert frame["block_number"].tolist() == [205_000] * 3
    assert frame["gas_estimate"].tolist()[0] == 0x87A1
    assert frame["gas_estimate"].isna().tolist() == [False, True, True]
    cost = 0x87A1 * (base + 10**9)
    assert frame["cost_wei"].tolist() == [cost, None, None]
    assert frame["cost_gwei"][0] == cost / 10**9
    assert frame["cost_eth"][0] == cost / 10**18
    assert frame["cost_eth"][1:].isna().all()
    assert frame["error"].tolist()[1:] == [
        f"Unauthorized({HOLDER}, 1)",
        "-32000: insufficient funds",
    ]
    # before London there is no base fee, hence no cost
    old = parse_cost_estimates(["0x5208"], block_number=1, base_fee_wei=None)
    assert old["gas_estimate"].tolist() == [21_000]
    assert old["cost_wei"].tolist() == [None] and pd.isna(old["cost_gwei"][0])
    empty = parse_cost_estimates([], block_number=1, base_fee_wei=1)
    assert {c: str(t) for c, t in empty.dtypes.items()} == COST_DTYPES


def test_call_object_writes_quantities_and_bytes_as_hex():
    tx = {
        "from": HOLDER,
        "to": HOLDER,
        "data": b"\x01\x02",
        "value": 10**18,
        "gas": "0x5208",
        "accessList": [],
    }
    assert call_object(tx) == {
        "from": HOLDER,
        "to": HOLDER,
        "data": "0x0102",
        "value": hex(10**18),
        "gas": "0x5208",
        "accessList": [],
    }
    assert call_object({"to": HOLDER, "value": None}) == {"to": HOLDER}
    with pytest.raises(ValueError, match="'to'"):
        call_object({"to": "0x12"})
    with pytest.raises(TypeError, match="dict"):
        call_object(["to"])

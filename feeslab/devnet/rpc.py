"""The devnet's node JSON-RPC methods, answering as go-ethereum does.

``dispatch(ctx, method, params)`` runs one call against ``ctx.chain`` and returns its result
(a JSON-ready value) or raises ``RpcError``.

Parameters are decoded the way geth's ``rpc`` package decodes them, positionally and left to
right, with geth's messages (code -32602):

- a missing required argument: ``missing value for required argument N``;
- an extra one: ``too many arguments, want at most N``;
- a bad one: ``invalid argument N: <what Go's decoder says>``, for example
  ``hex string without 0x prefix`` (block numbers),
  ``json: cannot unmarshal string into Go value of type bool`` (the fullTx flag),
  ``hex string has length 62, want 64 for common.Hash`` (block hashes) or
  ``json: cannot unmarshal hex number with leading zero digits into Go value of type
  hexutil.Uint`` (uncle indexes).

A JSON ``null`` in a required position is decoded, not treated as missing, as in Go: it reads as
``false`` for a bool and is rejected for numbers and hashes.

Blocks are printed with geth's field set for a header of their era (``baseFeePerGas`` from
London on), keys sorted as Go prints a map; ``transactions`` lists the block's transaction
hashes, or with ``fullTx`` the transactions as geth's ``RPCTransaction`` prints them, and
``eth_getBlockReceipts`` their receipts (:mod:`feeslab.devnet.transactions` draws them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from feeslab.devnet import gasprice
from feeslab.devnet._encoded import CHUNK, ChunkedCache, Encoded, EncodedCache, encode
from feeslab.devnet.errors import INVALID_PARAMS, METHOD_NOT_FOUND, SERVER_ERROR, RpcError
from feeslab.devnet.evm import ZERO_ADDRESS, CallRequest, Executor, estimate_gas
from feeslab.devnet.evm import call as evm_call
from feeslab.devnet.transactions import BlockBody, block_body, fee_history_rewards

CLIENT_VERSION = "feeslab-devnet/0.1.0"
MAX_FEE_HISTORY = 1024  # geth's default --rpc.feehistory limits (header and block history)
MAX_REWARD_PERCENTILES = 100  # geth's maxQueryLimit
TAGS = frozenset({"latest", "earliest", "pending", "safe", "finalized"})
MAX_INT64 = 2**63 - 1
MAX_UINT64 = 2**64 - 1


class _ArgError(Exception):
    """A parameter that Go's decoder would reject; the message is Go's."""


# -- formatting -------------------------------------------------------------------------------


def quantity(value: int) -> str:
    """A hex quantity: ``0x`` and no leading zeros (``0x0`` for zero)."""
    return hex(value)


def data(value: bytes) -> str:
    """Hex data: ``0x`` and two lowercase digits per byte."""
    return "0x" + value.hex()


def _go_ratio(used: int, limit: int) -> float | int:
    """``used / limit`` as Go's JSON prints it: integral values without a fraction."""
    ratio = used / limit if limit else 0.0
    return int(ratio) if ratio.is_integer() else ratio


def format_header(header: Any) -> dict[str, Any]:
    """The header fields geth prints for a header (RPCMarshalHeader), plus its hash."""
    fields = {
        "difficulty": quantity(header.difficulty),
        "extraData": data(header.extra_data),
        "gasLimit": quantity(header.gas_limit),
        "gasUsed": quantity(header.gas_used),
        "hash": data(header.hash),
        "logsBloom": data(header.logs_bloom),
        "miner": data(header.coinbase),
        "mixHash": data(header.mix_hash),
        "nonce": data(header.nonce),
        "number": quantity(header.number),
        "parentHash": data(header.parent_hash),
        "receiptsRoot": data(header.receipts_root),
        "sha3Uncles": data(header.uncles_hash),
        "stateRoot": data(header.state_root),
        "timestamp": quantity(header.timestamp),
        "transactionsRoot": data(header.transactions_root),
    }
    if header.base_fee_per_gas is not None:
        fields["baseFeePerGas"] = quantity(header.base_fee_per_gas)
    _post_merge_fields(header, fields)
    return dict(sorted(fields.items()))


def _post_merge_fields(header: Any, fields: dict[str, Any]) -> None:
    """Shanghai's, Cancun's, Prague's and Amsterdam's header fields, as geth's
    RPCMarshalHeader adds them."""
    if getattr(header, "withdrawals_root", None) is not None:
        fields["withdrawalsRoot"] = data(header.withdrawals_root)
    if getattr(header, "blob_gas_used", None) is not None:
        fields["blobGasUsed"] = quantity(header.blob_gas_used)
        fields["excessBlobGas"] = quantity(header.excess_blob_gas)
    if getattr(header, "parent_beacon_block_root", None) is not None:
        fields["parentBeaconBlockRoot"] = data(header.parent_beacon_block_root)
    if getattr(header, "requests_hash", None) is not None:
        fields["requestsHash"] = data(header.requests_hash)
    # Amsterdam (EIP-7928, EIP-7843): geth's RPCMarshalHeader, a hash and a hexutil.Uint64
    if getattr(header, "block_access_list_hash", None) is not None:
        fields["blockAccessListHash"] = data(header.block_access_list_hash)
    if getattr(header, "slot_number", None) is not None:
        fields["slotNumber"] = quantity(header.slot_number)


def format_new_head(block: Any) -> dict[str, Any]:
    """A WebSocket ``newHeads`` payload: geth's header fields and hash, nothing else.

    Accepts a ``Block`` or a bare ``Header``.
    """
    return format_header(getattr(block, "header", block))


def format_block(
    block: Any, *, pending: bool = False, body: BlockBody | None = None, full_tx: bool = False
) -> dict[str, Any]:
    """A canonical (or pending) block as ``eth_getBlockBy*`` returns it.

    ``body`` holds its transactions: ``transactions`` lists their hashes, or with ``full_tx``
    the transactions themselves (:func:`format_transaction`), and ``size`` counts them, as
    geth's ``RPCMarshalBlock`` does; without a body the block is printed with none.

    The pending block answers as geth does today (internal/ethapi ``GetBlockByNumber``): its
    number is the head's + 1 and its bloom is filled; ``hash``, ``nonce`` and ``miner`` are
    null. (The interface's table, §2.4, also lists ``number`` and ``logsBloom`` as null, from
    older geth; clients such as ethers' ``getBlock('pending')`` need the number.) Its total
    difficulty is not known yet, so it is null too.
    """
    fields = format_header(block.header)
    fields["hash"] = data(block.hash)
    fields["size"] = quantity(block.size if body is None else body.size(block))
    fields["totalDifficulty"] = quantity(block.total_difficulty)
    if body is None:
        fields["transactions"] = []
    elif full_tx:
        fields["transactions"] = [format_transaction(tx, block, i)
                                  for i, tx in enumerate(body.transactions)]  # fmt: skip
    else:
        fields["transactions"] = [data(h) for h in body.hashes]  # no Transaction built
    fields["uncles"] = [data(u.hash) for u in block.uncles]
    if getattr(block.header, "withdrawals_root", None) is not None:
        fields["withdrawals"] = [  # as geth's RPCMarshalBlock: EIP-4895's four fields
            {"index": quantity(w.index), "validatorIndex": quantity(w.validator_index),
             "address": data(w.address), "amount": quantity(w.amount_gwei)}
            for w in getattr(block, "withdrawals", ())
        ]  # fmt: skip
    if pending:
        for key in ("hash", "nonce", "miner", "totalDifficulty"):
            fields[key] = None
    return dict(sorted(fields.items()))


def format_transaction(tx: Any, block: Any, index: int) -> dict[str, Any]:
    """An included transaction as geth prints it (``RPCTransaction``, ``newRPCTransaction``):
    its struct's fields in their order, ``gasPrice`` the effective price for typed ones,
    ``chainId`` for EIP-155 legacy ones, ``accessList`` and ``yParity`` for typed ones, the
    blob fields for type 3.

    References
    ----------
    .. [1] go-ethereum ``internal/ethapi/api.go`` at 02b73d4ea7181464175e0a6cbecc0a3a2655a562.
    """
    typed = tx.type != 0
    out: dict[str, Any] = {
        "blockHash": data(block.hash),
        "blockNumber": quantity(block.header.number),
        "blockTimestamp": quantity(block.header.timestamp),
        "from": data(tx.sender),
        "gas": quantity(tx.gas),
        "gasPrice": quantity(tx.gas_price),
    }
    if typed:
        out["maxFeePerGas"] = quantity(tx.max_fee_per_gas)
        out["maxPriorityFeePerGas"] = quantity(tx.max_priority_fee_per_gas)
    if tx.type == 3:
        out["maxFeePerBlobGas"] = quantity(tx.max_fee_per_blob_gas)
    out.update({
        "hash": data(tx.hash), "input": data(tx.input), "nonce": quantity(tx.nonce),
        "to": data(tx.to), "transactionIndex": quantity(index), "value": quantity(tx.value),
        "type": quantity(tx.type),
    })  # fmt: skip
    if typed:
        out["accessList"] = []
    if tx.chain_id is not None:
        out["chainId"] = quantity(tx.chain_id)
    if tx.type == 3:
        out["blobVersionedHashes"] = [data(h) for h in tx.blob_versioned_hashes]
    out.update({"v": quantity(tx.v), "r": quantity(tx.r), "s": quantity(tx.s)})
    if typed:
        out["yParity"] = quantity(tx.v)
    return out


def format_receipts(block: Any, body: BlockBody) -> list[dict[str, Any]]:
    """The block's receipts as geth's ``eth_getBlockReceipts`` prints them (``MarshalReceipt``:
    a map, so keys sorted; ``root`` instead of ``status`` before Byzantium; ``blobGasUsed`` and
    ``blobGasPrice`` for blob transactions; ``contractAddress`` null, ``logs`` empty)."""
    out = []
    block_hash, number = data(block.hash), quantity(block.header.number)
    receipts = body.receipts(block.header.logs_bloom)
    for i, (tx, receipt) in enumerate(zip(body.transactions, receipts, strict=True)):
        fields: dict[str, Any] = {
            "blockHash": block_hash, "blockNumber": number, "contractAddress": None,
            "cumulativeGasUsed": quantity(receipt.cumulative_gas_used),
            "effectiveGasPrice": quantity(receipt.effective_gas_price),
            "from": data(tx.sender), "gasUsed": quantity(receipt.gas_used), "logs": [],
            "logsBloom": data(receipt.logs_bloom), "to": data(tx.to),
            "transactionHash": data(tx.hash), "transactionIndex": quantity(i),
            "type": quantity(tx.type),
        }  # fmt: skip
        if receipt.post_state is not None:
            fields["root"] = data(receipt.post_state)
        else:
            fields["status"] = quantity(receipt.status)
        if tx.type == 3:
            fields["blobGasUsed"] = quantity(receipt.blob_gas_used)
            fields["blobGasPrice"] = quantity(receipt.blob_gas_price)
        out.append(dict(sorted(fields.items())))
    return out


def _rlp_list_length(payload_length: int) -> int:
    """Length of an RLP list whose items take ``payload_length`` bytes."""
    if payload_length < 56:
        return 1 + payload_length
    return 1 + (payload_length.bit_length() + 7) // 8 + payload_length


def uncle_size(header: Any) -> int:
    """Size geth reports for an uncle: ``len(rlp([header, [], []]))`` [bytes].

    That is the header's RLP length plus 5 for every real header (two empty lists and a
    three-byte list prefix), which is what the real uncle answers show.
    """
    return _rlp_list_length(len(header.encode()) + 2)


def format_uncle(header: Any) -> dict[str, Any]:
    """An uncle as geth returns it: the header, its size, no transactions, null TD."""
    fields = format_header(header)
    fields["size"] = quantity(uncle_size(header))
    fields["totalDifficulty"] = None
    fields["uncles"] = []
    return dict(sorted(fields.items()))


# -- Go-compatible parameter decoding ---------------------------------------------------------


def _json_kind(value: Any) -> str:
    """The JSON type name Go's decoder uses in its messages."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _raw_text(value: Any) -> str:
    """The JSON text of a non-string value, as a Go UnmarshalJSON method would see it."""
    return json.dumps(value, separators=(",", ":"))


def _has_hex_prefix(text: str) -> bool:
    return len(text) >= 2 and text[0] == "0" and text[1] in "xX"


def _is_hex_digits(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)


_PLAIN_UINT64 = re.compile(r"0x(?:0|[1-9a-fA-F][0-9a-fA-F]{0,15})")


def _decode_uint64(text: str) -> int:
    """hexutil.DecodeUint64: a strict hex quantity, with its plain error messages."""
    if _PLAIN_UINT64.fullmatch(text):  # the usual case, checked at C speed
        return int(text, 16)
    if not text:
        raise _ArgError("empty hex string")
    if not _has_hex_prefix(text):
        raise _ArgError("hex string without 0x prefix")
    raw = text[2:]
    if not raw:
        raise _ArgError('hex string "0x"')
    if len(raw) > 1 and raw[0] == "0":
        raise _ArgError("hex number with leading zero digits")
    value = 0
    for digit in raw:  # strconv.ParseUint reports the first problem it meets
        if not _is_hex_digits(digit):
            raise _ArgError("invalid hex string")
        value = value * 16 + int(digit, 16)
        if value > MAX_UINT64:
            raise _ArgError("hex number > 64 bits")
    return value


def block_number_param(value: Any) -> int | str:
    """rpc.BlockNumber: a tag or a hex quantity up to int64."""
    if isinstance(value, str) and value in TAGS:
        return value
    # Go strips the quotes and parses the rest, so a bare number fails the prefix check
    number = _decode_uint64(value if isinstance(value, str) else _raw_text(value))
    if number > MAX_INT64:
        raise _ArgError("block number larger than int64")
    return number


def bool_param(value: Any) -> bool:
    """A Go bool: JSON true/false; null leaves it false."""
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _ArgError(f"json: cannot unmarshal {_json_kind(value)} into Go value of type bool")
    return value


def _type_error(message: str, type_name: str) -> _ArgError:
    # hexutil wraps its decode errors in a json.UnmarshalTypeError
    return _ArgError(f"json: cannot unmarshal {message} into Go value of type {type_name}")


def hash_param(value: Any) -> bytes:
    """common.Hash: a 0x-prefixed string of exactly 64 hex digits."""
    type_name = "common.Hash"
    if not isinstance(value, str):
        raise _type_error("non-string", type_name)
    raw = value
    if raw:
        if not _has_hex_prefix(raw):
            raise _type_error("hex string without 0x prefix", type_name)
        raw = raw[2:]
        if len(raw) % 2:
            raise _type_error("hex string of odd length", type_name)
    if len(raw) != 64:
        raise _ArgError(f"hex string has length {len(raw)}, want 64 for {type_name}")
    if not _is_hex_digits(raw):
        raise _type_error("invalid hex string", type_name)
    return bytes.fromhex(raw)


def uint_param(value: Any) -> int:
    """hexutil.Uint: a hex quantity string of at most 64 bits ("" reads as 0, as in Go)."""
    type_name = "hexutil.Uint"
    if not isinstance(value, str):
        raise _type_error("non-string", type_name)
    if not value:
        return 0
    if not _has_hex_prefix(value):
        raise _type_error("hex string without 0x prefix", type_name)
    raw = value[2:]
    if not raw:
        raise _type_error('hex string "0x"', type_name)
    if len(raw) > 1 and raw[0] == "0":
        raise _type_error("hex number with leading zero digits", type_name)
    if len(raw) > 16:
        raise _type_error("hex number > 64 bits", type_name)
    if not _is_hex_digits(raw):
        raise _type_error("invalid hex string", type_name)
    return int(raw, 16)


def hex_or_decimal64_param(value: Any) -> int:
    """math.HexOrDecimal64 (eth_feeHistory's blockCount): JSON number, decimal or 0x string."""
    text = value if isinstance(value, str) else _raw_text(value)
    if text == "":
        return 0
    if _has_hex_prefix(text):
        digits, base, ok = text[2:], 16, _is_hex_digits(text[2:])
    else:
        digits, base, ok = text, 10, text.isascii() and text.isdigit()
    if ok and digits and int(digits, base) <= MAX_UINT64:
        return int(digits, base)
    raise _ArgError(f"invalid hex or decimal integer {json.dumps(text)}")


def percentiles_param(value: Any) -> list[float]:
    """[]float64: a JSON array of numbers (null reads as an empty list, null items as 0)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _ArgError(
            f"json: cannot unmarshal {_json_kind(value)} into Go value of type []float64"
        )
    out = []
    for item in value:
        if item is None:
            out.append(0.0)
        elif isinstance(item, bool) or not isinstance(item, int | float):
            raise _ArgError(
                f"json: cannot unmarshal {_json_kind(item)} into Go value of type float64"
            )
        else:
            out.append(float(item))
    return out


def decode_params(params: Any, decoders: Sequence[Callable[[Any], Any]], required: int) -> list:
    """Decode positional ``params`` as geth's rpc package does.

    Parameters
    ----------
    params : list or None
        The call's params (None or missing means none).
    decoders : sequence of callables
        One per accepted argument.
    required : int
        How many leading arguments must be present; the others default to None.

    Raises
    ------
    RpcError
        -32602 naming the first bad argument, an extra one or a missing one.
    """
    if params is None:
        params = []
    if not isinstance(params, list):
        raise RpcError(INVALID_PARAMS, "non-array args")
    args = []
    for index, value in enumerate(params):
        if index >= len(decoders):
            raise RpcError(INVALID_PARAMS, f"too many arguments, want at most {len(decoders)}")
        try:
            args.append(decoders[index](value))
        except _ArgError as exc:
            raise RpcError(INVALID_PARAMS, f"invalid argument {index}: {exc}") from None
    if len(args) < required:
        raise RpcError(INVALID_PARAMS, f"missing value for required argument {len(args)}")
    return args + [None] * (len(decoders) - len(args))


# -- transaction call objects and block-or-hash parameters (eth_call, eth_estimateGas) --------

_ARGS_STRUCT = "TransactionArgs"
_ARGS_TYPE = "ethapi.TransactionArgs"


def _value_error(message: str, type_name: str, field: str | None) -> _ArgError:
    """Go's json.UnmarshalTypeError text, with the struct field when inside the call object."""
    if field is None:
        return _type_error(message, type_name)
    return _ArgError(
        f"json: cannot unmarshal {message} into Go struct field {_ARGS_STRUCT}.{field} "
        f"of type {type_name}"
    )


def _check_text(text: str, type_name: str, field: str | None) -> str:
    """hexutil's checkText: optional empty string, required 0x prefix, even length."""
    if not text:
        return ""
    if not _has_hex_prefix(text):
        raise _value_error("hex string without 0x prefix", type_name, field)
    raw = text[2:]
    if len(raw) % 2:
        raise _value_error("hex string of odd length", type_name, field)
    return raw


def fixed_bytes_param(value: Any, size: int, type_name: str, field: str | None = None) -> bytes:
    """A fixed-size hex value (common.Address, common.Hash) as hexutil decodes it."""
    if not isinstance(value, str):
        raise _value_error("non-string", type_name, field)
    raw = _check_text(value, type_name, field)
    if len(raw) != 2 * size:
        # a plain error in Go, so it carries no type or field
        raise _ArgError(f"hex string has length {len(raw)}, want {2 * size} for {type_name}")
    if not _is_hex_digits(raw):
        raise _value_error("invalid hex string", type_name, field)
    return bytes.fromhex(raw)


def address_param(value: Any, field: str | None = None) -> bytes:
    """common.Address: a 0x-prefixed string of exactly 40 hex digits."""
    return fixed_bytes_param(value, 20, "common.Address", field)


def _hex_number(value: Any, bits: int, type_name: str, field: str | None) -> int:
    """hexutil.Uint64 / hexutil.Big: a strict hex quantity string ("" reads as 0)."""
    if not isinstance(value, str):
        raise _value_error("non-string", type_name, field)
    if not value:
        return 0
    if not _has_hex_prefix(value):
        raise _value_error("hex string without 0x prefix", type_name, field)
    raw = value[2:]
    if not raw:
        raise _value_error('hex string "0x"', type_name, field)
    if len(raw) > 1 and raw[0] == "0":
        raise _value_error("hex number with leading zero digits", type_name, field)
    if len(raw) > bits // 4:
        raise _value_error(f"hex number > {bits} bits", type_name, field)
    if not _is_hex_digits(raw):
        raise _value_error("invalid hex string", type_name, field)
    return int(raw, 16)


def _hex_bytes(value: Any, field: str) -> bytes:
    """hexutil.Bytes: 0x-prefixed hex of even length ("" reads as empty)."""
    type_name = "hexutil.Bytes"
    if not isinstance(value, str):
        raise _value_error("non-string", type_name, field)
    raw = _check_text(value, type_name, field)
    if not _is_hex_digits(raw):
        raise _value_error("invalid hex string", type_name, field)
    return bytes.fromhex(raw)


@dataclass(frozen=True)
class CallArgs:
    """A decoded transaction call object: geth's TransactionArgs fields the devnet uses.

    Every field is None when absent (or JSON null), as Go's pointer fields are.
    """

    sender: bytes | None = None
    to: bytes | None = None
    gas: int | None = None
    gas_price: int | None = None
    max_fee_per_gas: int | None = None
    max_priority_fee_per_gas: int | None = None
    value: int | None = None
    nonce: int | None = None
    data: bytes | None = None
    input: bytes | None = None
    chain_id: int | None = None


# JSON key -> (CallArgs attribute, decoder); other keys of geth's TransactionArgs (accessList,
# blob and authorization fields) are accepted and ignored
_CALL_FIELDS: dict[str, tuple[str, Callable[[Any, str], Any]]] = {
    "from": ("sender", address_param),
    "to": ("to", address_param),
    "gas": ("gas", lambda v, f: _hex_number(v, 64, "hexutil.Uint64", f)),
    "gasPrice": ("gas_price", lambda v, f: _hex_number(v, 256, "*hexutil.Big", f)),
    "maxFeePerGas": ("max_fee_per_gas", lambda v, f: _hex_number(v, 256, "*hexutil.Big", f)),
    "maxPriorityFeePerGas": (
        "max_priority_fee_per_gas",
        lambda v, f: _hex_number(v, 256, "*hexutil.Big", f),
    ),
    "value": ("value", lambda v, f: _hex_number(v, 256, "*hexutil.Big", f)),
    "nonce": ("nonce", lambda v, f: _hex_number(v, 64, "hexutil.Uint64", f)),
    "data": ("data", _hex_bytes),
    "input": ("input", _hex_bytes),
    "chainId": ("chain_id", lambda v, f: _hex_number(v, 256, "*hexutil.Big", f)),
}
_FOLDED_FIELDS = {key.lower(): key for key in _CALL_FIELDS}


def call_args_param(value: Any) -> CallArgs:
    """TransactionArgs as Go's encoding/json decodes it.

    Keys match exactly or, failing that, case-insensitively (Go's rule); unknown keys are
    ignored; null leaves a field unset; the first bad field, in document order, is reported.
    """
    if value is None:
        return CallArgs()
    if not isinstance(value, dict):
        raise _ArgError(
            f"json: cannot unmarshal {_json_kind(value)} into Go value of type {_ARGS_TYPE}"
        )
    fields: dict[str, Any] = {}
    for key, item in value.items():
        name = key if key in _CALL_FIELDS else _FOLDED_FIELDS.get(key.lower())
        if name is None:
            continue
        attribute, decode = _CALL_FIELDS[name]
        fields[attribute] = None if item is None else decode(item, name)
    return CallArgs(**fields)


class _NoBlock:
    """A block-or-hash parameter that names neither (JSON null or an empty object)."""


NO_BLOCK = _NoBlock()


def block_or_hash_param(value: Any) -> int | str | bytes | _NoBlock:
    """rpc.BlockNumberOrHash: a tag, a hex number, a 32-byte hash or ``{"blockNumber"|
    "blockHash": ..}``; a hash comes back as bytes."""
    if value is None:
        return NO_BLOCK
    if isinstance(value, dict):
        return _block_or_hash_object(value)
    if not isinstance(value, str):
        raise _ArgError(f"json: cannot unmarshal {_json_kind(value)} into Go value of type string")
    if value in TAGS:
        return value
    if len(value) == 66:
        if not _has_hex_prefix(value):
            raise _ArgError("hex string without 0x prefix")
        if not _is_hex_digits(value[2:]):
            raise _ArgError("invalid hex string")
        return bytes.fromhex(value[2:])
    number = _decode_uint64(value)
    if number > MAX_INT64:
        raise _ArgError("blocknumber too high")
    return number


def _block_or_hash_object(value: dict[str, Any]) -> int | str | bytes | _NoBlock:
    number = value.get("blockNumber")
    block_hash = value.get("blockHash")
    if number is not None and block_hash is not None:
        raise _ArgError("cannot specify both BlockHash and BlockNumber, choose one or the other")
    if number is not None:
        return block_number_param(number)
    if block_hash is not None:
        return hash_param(block_hash)
    return NO_BLOCK


def string_param(value: Any) -> str:
    """A Go string argument."""
    if not isinstance(value, str):
        raise _ArgError(f"json: cannot unmarshal {_json_kind(value)} into Go value of type string")
    return value


def storage_key(text: str) -> int:
    """A storage slot as geth's eth_getStorageAt reads it: hex with an optional 0x prefix,
    odd lengths padded, at most 32 bytes.

    Raises
    ------
    RpcError
        -32602 with geth's own wording (no argument prefix), the key quoted as Go's %q.
    """
    raw = text[2:] if _has_hex_prefix(text) else text
    if len(raw) % 2:
        raw = "0" + raw
    if not _is_hex_digits(raw):
        raise RpcError(INVALID_PARAMS, f"invalid hex in storage key: {_go_quote(text)}")
    if len(raw) > 64:
        raise RpcError(
            INVALID_PARAMS, f"storage key too long (want at most 32 bytes): {_go_quote(text)}"
        )
    return int(raw, 16) if raw else 0


def _go_quote(text: str) -> str:
    """Go's %q for a string: double quotes, backslash escapes for quotes and controls."""
    escapes = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    out = []
    for ch in text:
        if ch in escapes:
            out.append(escapes[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


# -- resolving blocks -------------------------------------------------------------------------


def resolve_tag(chain: Any, tag: int | str) -> int:
    """The block number a tag or number stands for (pending = head + 1).

    Raises
    ------
    RpcError
        -32000 ``safe block not found`` / ``finalized block not found`` when the chain has
        no such block (geth's answer before the merge).
    """
    if isinstance(tag, int):
        return tag
    if tag == "earliest":
        return 0
    if tag == "pending":
        return chain.head() + 1
    if tag in ("safe", "finalized"):
        number = chain.safe() if tag == "safe" else chain.finalized()
        if number is None:
            raise RpcError(SERVER_ERROR, f"{tag} block not found")
        return number
    return chain.head()


def _block_at(chain: Any, tag: int | str) -> tuple[Any, bool]:
    """(block or None, is pending) for a block parameter."""
    if tag == "pending":
        return chain.pending(), True
    return chain.block(resolve_tag(chain, tag)), False


def _block_by_hash(chain: Any, block_hash: bytes) -> Any:
    number = chain.number_of(block_hash)
    return None if number is None else chain.block(number)


def _uncle_at(block: Any, index: int) -> dict[str, Any] | None:
    if block is None or index >= len(block.uncles):
        return None
    return format_uncle(block.uncles[index])


# -- methods ----------------------------------------------------------------------------------


def eth_chain_id(ctx: Any) -> str:
    return quantity(ctx.chain.chain_id)


def eth_block_number(ctx: Any) -> str:
    return quantity(ctx.chain.head())


def net_version(ctx: Any) -> str:
    return str(ctx.chain.chain_id)


def web3_client_version(ctx: Any) -> str:
    return CLIENT_VERSION


def eth_get_block_by_number(ctx: Any, tag: int | str, full_tx: bool) -> dict[str, Any] | None:
    block, pending = _block_at(ctx.chain, tag)
    if block is None:
        return None
    body = block_body(ctx.chain.history, block.number)
    return format_block(block, pending=pending, body=body, full_tx=full_tx)


def eth_get_block_by_hash(ctx: Any, block_hash: bytes, full_tx: bool) -> dict[str, Any] | None:
    block = _block_by_hash(ctx.chain, block_hash)
    if block is None:
        return None
    return format_block(block, body=block_body(ctx.chain.history, block.number), full_tx=full_tx)


def eth_get_header_by_number(ctx: Any, tag: int | str) -> dict[str, Any] | None:
    """geth's eth_getHeaderByNumber: the header's fields and hash (``RPCMarshalHeader``: no
    transactions, uncles, withdrawals, size or total difficulty); null beyond the head. The
    pending header has null ``hash``, ``nonce`` and ``miner``, as geth nulls them. Headers
    are served on a pruned node too (:func:`pruning`: ``earliest`` is its cutoff block).
    """
    block, pending = _block_at(ctx.chain, tag)
    if block is None:
        return None
    fields = format_header(block.header)
    if pending:
        for key in ("hash", "nonce", "miner"):
            fields[key] = None
    return fields


def eth_get_header_by_hash(ctx: Any, block_hash: bytes) -> dict[str, Any] | None:
    """geth's eth_getHeaderByHash: the header of the canonical block with this hash, or null."""
    block = _block_by_hash(ctx.chain, block_hash)
    return None if block is None else format_header(block.header)


def eth_get_block_receipts(ctx: Any, tag: int | str | bytes | _NoBlock) -> list | None:
    """geth's eth_getBlockReceipts: the receipts of a block by number, tag or hash (null for
    an unknown one; the pending block's from its transactions, as geth's miner has them)."""
    chain = ctx.chain
    if isinstance(tag, _NoBlock):
        raise RpcError(SERVER_ERROR, "invalid arguments; neither block nor hash specified")
    if isinstance(tag, bytes):
        block = _block_by_hash(chain, tag)
    else:
        block, _ = _block_at(chain, tag)
    if block is None:
        return None
    return format_receipts(block, block_body(chain.history, block.number))


def eth_get_uncle_by_block_number_and_index(
    ctx: Any, tag: int | str, index: int
) -> dict[str, Any] | None:
    block, _ = _block_at(ctx.chain, tag)
    return _uncle_at(block, index)


def eth_get_uncle_by_block_hash_and_index(
    ctx: Any, block_hash: bytes, index: int
) -> dict[str, Any] | None:
    return _uncle_at(_block_by_hash(ctx.chain, block_hash), index)


def eth_get_uncle_count_by_block_number(ctx: Any, tag: int | str) -> str | None:
    chain = ctx.chain
    if tag != "pending":  # a count without building the block: an uncle scan asks every one
        try:
            number = tag if type(tag) is int else resolve_tag(chain, tag)
        except RpcError:
            return None  # geth drops the lookup error here and answers null
        count = chain.uncle_count(number)
        return None if count is None else hex(count)
    return quantity(len(chain.pending().uncles))


def eth_get_uncle_count_by_block_hash(ctx: Any, block_hash: bytes) -> str | None:
    block = _block_by_hash(ctx.chain, block_hash)
    return None if block is None else quantity(len(block.uncles))


@dataclass(frozen=True)
class _FeeRange:
    """The blocks an eth_feeHistory call covers: ``oldest..newest``, maybe ending pending."""

    oldest: int
    newest: int
    head: int

    @property
    def canonical_stop(self) -> int:
        return min(self.newest, self.head) + 1

    @property
    def has_pending(self) -> bool:
        return self.newest > self.head


def _check_percentiles(percentiles: list[float]) -> None:
    """geth's reward percentile rules: at most 100, each in 0..100, strictly increasing.

    geth returns these as plain errors, so they carry code -32000, not -32602.
    """
    if len(percentiles) > MAX_REWARD_PERCENTILES:
        raise RpcError(
            SERVER_ERROR,
            f"invalid reward percentile: over the query limit {MAX_REWARD_PERCENTILES}",
        )
    for i, p in enumerate(percentiles):
        if not 0 <= p <= 100:
            raise RpcError(SERVER_ERROR, f"invalid reward percentile: {p:f}")
        if i > 0 and p <= percentiles[i - 1]:
            raise RpcError(
                SERVER_ERROR,
                f"invalid reward percentile: #{i - 1}:{percentiles[i - 1]:f} >= #{i}:{p:f}",
            )


def _fee_range(chain: Any, count: int, tag: int | str) -> _FeeRange:
    head = chain.head()
    if isinstance(tag, int) and tag > head:
        raise RpcError(SERVER_ERROR, f"request beyond head block: requested {tag}, head {head}")
    newest = resolve_tag(chain, tag)
    count = min(count, MAX_FEE_HISTORY, newest + 1)  # never before genesis
    return _FeeRange(oldest=newest + 1 - count, newest=newest, head=head)


def _fee_columns(chain: Any, span: _FeeRange) -> tuple[list[int], list[int], list[int], int]:
    """(base fees, gas used, gas limits, next base fee) for the blocks of ``span``."""
    stop = span.canonical_stop
    fees = [fee or 0 for fee in chain.base_fees(span.oldest, stop)]  # 0 before London (geth)
    used = chain.gas_used_range(span.oldest, stop)
    limits = chain.gas_limit_range(span.oldest, stop)
    if span.has_pending:
        header = chain.pending().header
        fees.append(header.base_fee_per_gas or 0)
        used.append(header.gas_used)
        limits.append(header.gas_limit)
    return fees, used, limits, chain.next_base_fee(span.newest)


def eth_fee_history(
    ctx: Any, block_count: int, tag: int | str, percentiles: list[float] | None
) -> dict[str, Any]:
    """geth's eth_feeHistory over ``block_count`` blocks ending at ``tag``.

    ``blockCount`` above 1024 is cut to 1024 and a range reaching before genesis is cut at
    genesis, silently, as geth does; ``blockCount`` 0 gets geth's empty answer. Reward rows
    are geth's gas-weighted percentiles of the effective tips of the blocks' transactions
    (:func:`feeslab.devnet.transactions.fee_history_rewards`). ``baseFeePerBlobGas`` holds
    each block's blob base fee and the next block's (0 before Cancun, as geth),
    ``blobGasUsedRatio`` blob gas used over the block's fork's max blob gas (0 before
    Cancun).
    """
    chain = ctx.chain
    percentiles = percentiles or []
    if block_count < 1:
        return {"oldestBlock": "0x0", "gasUsedRatio": None}
    _check_percentiles(percentiles)
    span = _fee_range(chain, block_count, tag)
    fees, used, limits, next_fee = _fee_columns(chain, span)
    result: dict[str, Any] = {"oldestBlock": quantity(span.oldest)}
    if percentiles:
        table = fee_history_rewards(chain.history, span.oldest, span.newest + 1, percentiles)
        result["reward"] = [[quantity(tip) for tip in row] for row in table]
    result["baseFeePerGas"] = [quantity(fee) for fee in [*fees, next_fee]]
    result["gasUsedRatio"] = [_go_ratio(u, lim) for u, lim in zip(used, limits, strict=True)]
    blob_fees, blob_ratios = _blob_columns(chain, span)
    result["baseFeePerBlobGas"] = [quantity(fee) for fee in blob_fees]
    result["blobGasUsedRatio"] = blob_ratios
    return result


def _blob_columns(chain: Any, span: _FeeRange) -> tuple[list[int], list[float | int]]:
    """(blob base fees of the blocks and of the next one, blob gas used ratios) of ``span``."""
    history = chain.history
    params = chain.params
    last = span.newest
    numbers = range(span.oldest, last + 1)
    used = history.blob_gas_used_range(span.oldest, last + 1)
    fees: list[int] = []
    ratios: list[float | int] = []
    for number, blob_used in zip(numbers, used, strict=True):
        rule = params.blob_rule(number)
        if rule is None or blob_used < 0:
            fees.append(0)
            ratios.append(0)
            continue
        fees.append(history.blob_base_fee(number) or 0)
        ratios.append(_go_ratio(blob_used, rule.max_blob_gas))
    fees.append(history.next_blob_base_fee(last) or 0)
    return fees, ratios


def eth_blob_base_fee(ctx: Any) -> str | None:
    """geth's eth_blobBaseFee: the head block's blob base fee; null before Cancun."""
    chain = ctx.chain
    fee = chain.history.blob_base_fee(chain.head())
    return None if fee is None else quantity(fee)


def eth_max_priority_fee_per_gas(ctx: Any) -> str:
    """geth's gas price oracle over the chain's last blocks (:mod:`feeslab.devnet.gasprice`)."""
    return quantity(gasprice.suggest_tip_cap(ctx.chain))


def eth_gas_price(ctx: Any) -> str:
    """The oracle's tip plus the head block's base fee (geth adds the head's, not the next)."""
    return quantity(gasprice.gas_price(ctx.chain))


# -- execution: eth_getStorageAt, eth_call, eth_estimateGas ------------------------------------


def _state_number(chain: Any, tag: int | str | bytes | _NoBlock) -> int:
    """The block whose state a call reads (pending = head + 1: the head state).

    Raises
    ------
    RpcError
        -32000 with geth's texts: ``header not found`` beyond the head, ``header for hash not
        found`` for an unknown hash, ``invalid arguments; neither block nor hash specified``.
    """
    if isinstance(tag, _NoBlock):
        raise RpcError(SERVER_ERROR, "invalid arguments; neither block nor hash specified")
    if isinstance(tag, bytes):
        number = chain.number_of(tag)
        if number is None:
            raise RpcError(SERVER_ERROR, "header for hash not found")
        return number
    number = resolve_tag(chain, tag)
    if tag != "pending" and number > chain.head():
        raise RpcError(SERVER_ERROR, "header not found")
    return number


def _call_request(args: CallArgs) -> CallRequest:
    """The execution request for decoded call args (``input`` wins over ``data``, as in geth).

    Raises
    ------
    RpcError
        -32602 when ``data`` and ``input`` are both given and differ.
    """
    if args.data is not None and args.input is not None and args.data != args.input:
        raise RpcError(
            INVALID_PARAMS,
            'both "data" and "input" are set and not equal. '
            'Please use "input" to pass transaction call data',
        )
    data = args.input if args.input is not None else args.data
    return CallRequest(
        sender=args.sender or ZERO_ADDRESS,
        to=args.to,
        data=data or b"",
        value=args.value or 0,
        gas=args.gas,
        gas_price=args.gas_price,
        max_fee_per_gas=args.max_fee_per_gas,
        max_priority_fee_per_gas=args.max_priority_fee_per_gas,
    )


def _check_chain_id(args: CallArgs, chain_id: int) -> None:
    """geth's CallDefaults: a given chainId must be the node's (-32000)."""
    if args.gas_price is not None and (
        args.max_fee_per_gas is not None or args.max_priority_fee_per_gas is not None
    ):
        return  # the fee-kind error comes first; evm reports it
    if args.chain_id is not None and args.chain_id != chain_id:
        raise RpcError(
            SERVER_ERROR,
            f"chainId does not match node's (have={args.chain_id}, want={chain_id})",
        )


def _prepare(ctx: Any, args: CallArgs, tag: Any) -> tuple[Executor, CallRequest]:
    request = _call_request(args)
    executor = ctx.chain.state.executor_at(_state_number(ctx.chain, tag))
    _check_chain_id(args, executor.block.chain_id)
    return executor, request


def eth_get_storage_at(ctx: Any, address: bytes, key: str, tag: Any) -> str:
    """The 32-byte word at ``key`` of ``address`` after block ``tag`` (latest when omitted);
    0 for unknown accounts and slots."""
    number = _state_number(ctx.chain, "latest" if tag is None else tag)
    slot = storage_key(key)
    return "0x" + ctx.chain.state.storage_at(address, slot, number).to_bytes(32, "big").hex()


def eth_call(ctx: Any, args: CallArgs, tag: Any) -> str:
    """Execute a message call on the state after block ``tag``; nothing is kept.

    A call without ``from`` runs from the zero address, as on geth (the service's nodes):
    the interface's table marks it required, but every client's default read omits it. The
    gas is the request's, capped at
    10x the block gas limit (interface §8), or that cap when none is given.
    """
    executor, request = _prepare(ctx, args, tag)
    return data(evm_call(executor, request, gas_cap=executor.gas_ceiling))


def eth_estimate_gas(ctx: Any, args: CallArgs, tag: Any) -> str:
    """geth's gas estimate for the call at block ``tag``.

    Without a block the pending block is used, whose gas limit bounds the search when the
    call gives no gas (interface §4.2 rule 2); a given gas is capped at 10x the block gas
    limit (interface §8).
    """
    executor, request = _prepare(ctx, args, "pending" if tag is None else tag)
    return quantity(estimate_gas(executor, request, gas_cap=executor.gas_ceiling))


# -- dispatch ---------------------------------------------------------------------------------

_B, _H, _U = block_number_param, hash_param, uint_param
_BH = block_or_hash_param

# name -> (handler, decoders, required count)
METHODS: dict[str, tuple[Callable[..., Any], tuple[Callable[[Any], Any], ...], int]] = {
    "eth_chainId": (eth_chain_id, (), 0),
    "eth_blockNumber": (eth_block_number, (), 0),
    "net_version": (net_version, (), 0),
    "web3_clientVersion": (web3_client_version, (), 0),
    "eth_getBlockByNumber": (eth_get_block_by_number, (_B, bool_param), 2),
    "eth_getBlockByHash": (eth_get_block_by_hash, (_H, bool_param), 2),
    "eth_getHeaderByNumber": (eth_get_header_by_number, (_B,), 1),
    "eth_getHeaderByHash": (eth_get_header_by_hash, (_H,), 1),
    "eth_getUncleByBlockNumberAndIndex": (eth_get_uncle_by_block_number_and_index, (_B, _U), 2),
    "eth_getUncleByBlockHashAndIndex": (eth_get_uncle_by_block_hash_and_index, (_H, _U), 2),
    "eth_getUncleCountByBlockNumber": (eth_get_uncle_count_by_block_number, (_B,), 1),
    "eth_getUncleCountByBlockHash": (eth_get_uncle_count_by_block_hash, (_H,), 1),
    "eth_getBlockReceipts": (eth_get_block_receipts, (_BH,), 1),
    # rewardPercentiles is optional here (geth requires it; Infura and most clients do not)
    "eth_feeHistory": (eth_fee_history, (hex_or_decimal64_param, _B, percentiles_param), 2),
    "eth_gasPrice": (eth_gas_price, (), 0),
    "eth_maxPriorityFeePerGas": (eth_max_priority_fee_per_gas, (), 0),
    "eth_blobBaseFee": (eth_blob_base_fee, (), 0),
    "eth_getStorageAt": (eth_get_storage_at, (address_param, string_param, _BH), 2),
    "eth_call": (eth_call, (call_args_param, _BH), 2),
    "eth_estimateGas": (eth_estimate_gas, (call_args_param, _BH), 1),
}


def dispatch(ctx: Any, method: str, params: Any) -> Any:
    """Run node method ``method`` with ``params`` against ``ctx.chain``.

    Parameters
    ----------
    ctx : CallContext
        ``.chain`` (the request's chain), ``.chains``, ``.transport``.
    method : str
        JSON-RPC method name.
    params : list or None
        Positional parameters; None means none.

    Returns
    -------
    Any
        The JSON-ready result.

    Raises
    ------
    RpcError
        -32601 for an unknown method, -32602 for bad parameters, -32000 for geth's
        execution errors (missing safe/finalized block, feeHistory beyond head).
    """
    entry = METHODS.get(method)
    if entry is None:
        raise RpcError(METHOD_NOT_FOUND, f"the method {method} does not exist/is not available")
    handler, decoders, required = entry
    args = decode_params(params, decoders, required)
    return handler(ctx, *args)


# -- the HTTP/WebSocket fast path ------------------------------------------------------------

# encoded JSON of canonical blocks and uncles, keyed by (history, kind, number[, index]): a
# block at or below the head never changes, and histories are shared process-wide by seed
ENCODED = EncodedCache()
# the same for blocks, compressed a chunk at a time: ~3x the headers in the memory (_encoded)
HEADERS = ChunkedCache()


def _encoded_block(ctx: Any, tag: int | str, full_tx: bool) -> Any:
    if tag == "pending" or full_tx:  # full blocks are big and rarely asked twice: not kept
        return eth_get_block_by_number(ctx, tag, full_tx)
    chain = ctx.chain
    number = tag if type(tag) is int else resolve_tag(chain, tag)  # a scan's numbers: no call
    head = chain.head()
    if not 0 <= number <= head:
        return None
    if number - number % CHUNK + CHUNK - 1 <= head:  # a whole settled chunk
        return HEADERS.get(
            chain.history,
            number,
            lambda start, stop: [
                eth_get_block_by_number(ctx, n, full_tx) for n in range(start, stop)
            ],
        )
    return ENCODED.get(
        (chain.history, "block", number), lambda: eth_get_block_by_number(ctx, number, full_tx)
    )


def _encoded_uncle(ctx: Any, tag: int | str, index: int) -> Any:
    chain = ctx.chain
    number = resolve_tag(chain, tag)
    if not 0 <= number <= chain.head():  # pending (head + 1) included: its block may change
        return eth_get_uncle_by_block_number_and_index(ctx, tag, index)
    return ENCODED.get(
        (chain.history, "uncle", number, index),
        lambda: eth_get_uncle_by_block_number_and_index(ctx, number, index),
    )


# an uncle count's possible answers, encoded once: an uncle scan asks for every block's
_COUNT_ANSWERS = tuple(Encoded(encode(hex(n))) for n in range(8))


def _encoded_uncle_count(ctx: Any, number: int) -> Any:
    count = ctx.chain.uncle_count(number)
    if count is None:
        return None
    return _COUNT_ANSWERS[count] if count < len(_COUNT_ANSWERS) else Encoded(encode(hex(count)))


_ENCODED_HANDLERS: dict[str, Callable[..., Any]] = {
    "eth_getBlockByNumber": _encoded_block,
    "eth_getUncleByBlockNumberAndIndex": _encoded_uncle,
}


def _plain_number(text: Any) -> int | None:
    """A block number's quantity decoded as ``decode_params`` would, in one step; None for
    anything else (tags, errors), which takes the general path."""
    if type(text) is str and _PLAIN_UINT64.fullmatch(text):
        number = int(text, 16)
        if number <= MAX_INT64:
            return number
    return None


def _plain_block_params(params: Any) -> tuple[int, bool] | None:
    """``[quantity, bool]`` as :func:`_plain_number` decodes it; None for any other shape."""
    if type(params) is list and len(params) == 2 and type(params[1]) is bool:
        number = _plain_number(params[0])
        if number is not None:
            return number, params[1]
    return None


def _plain_number_param(params: Any) -> int | None:
    """``[quantity]`` as :func:`_plain_number` decodes it; None for any other shape."""
    if type(params) is list and len(params) == 1:
        return _plain_number(params[0])
    return None


def dispatch_encoded(ctx: Any, method: str, params: Any) -> Any:
    """:func:`dispatch` for the servers: canonical blocks and uncles come as cached
    :class:`~feeslab.devnet._encoded.Encoded` JSON, which ``jsonrpc.execute`` splices in.

    Same answers, same errors as :func:`dispatch`; in-process callers that want plain values
    use :func:`dispatch`.
    """
    if method == "eth_getBlockByNumber":  # a scan's one call: its usual params decoded inline
        plain = _plain_block_params(params)
        if plain is not None:
            return _encoded_block(ctx, *plain)
    elif method == "eth_getUncleCountByBlockNumber":  # an uncle scan's: the same
        number = _plain_number_param(params)
        if number is not None:
            return _encoded_uncle_count(ctx, number)
    fast = _ENCODED_HANDLERS.get(method)
    if fast is None:
        return dispatch(ctx, method, params)
    _, decoders, required = METHODS[method]
    return fast(ctx, *decode_params(params, decoders, required))


# -- history expiry (EIP-4444) ---------------------------------------------------------------

# geth's --history.chain modes the devnet offers (core/history/historymode.go; geth's third,
# postprague, has no devnet chain to cut at)
HISTORY_MODES = ("all", "postmerge")
PRUNED_HISTORY = 4444
PRUNED_MESSAGE = "pruned history unavailable"
# geth's prune points (core/history/historymode.go staticPrunePoints, ethereum/go-ethereum at
# 02b73d4ea7181464175e0a6cbecc0a3a2655a562) against each chain's first proof-of-stake block:
# mainnet's 15,537,393 is its terminal proof-of-work block (Paris: 15,537,394), Sepolia's
# 1,450,409 its first proof-of-stake block; the devnet cuts its chains the same way
_CUT_FROM_MERGE = {1: -1, 11155111: 0}


def history_cutoff(chain: Any, mode: str) -> int:
    """The first block whose body, uncles, receipts and logs a devnet chain serves under
    ``mode`` (geth's ``--history.chain``): 0 for ``"all"``, and for ``"postmerge"`` geth's
    prune point placed as geth places it on the real chain (mainnet's terminal proof-of-work
    block, Sepolia's first proof-of-stake block). A chain without a merge keeps all its
    history: geth refuses to prune a network it has no prune point for.

    References
    ----------
    .. [1] EIP-4444, "Bound Historical Data in Execution Clients".
    .. [2] ethereum/go-ethereum core/history/historymode.go (``KeepPostMerge``,
       ``staticPrunePoints``) at 02b73d4ea7181464175e0a6cbecc0a3a2655a562.
    """
    if mode not in HISTORY_MODES:
        raise ValueError(f'unknown history mode {mode!r}, want "all" or "postmerge"')
    merge = chain.params.merge_block
    if mode == "all" or merge is None or chain.chain_id not in _CUT_FROM_MERGE:
        return 0
    return merge + _CUT_FROM_MERGE[chain.chain_id]


def _pruned() -> RpcError:
    # geth's PrunedHistoryError: no data member (it implements no ErrorData)
    return RpcError(PRUNED_HISTORY, PRUNED_MESSAGE)


def _by_number(ctx: Any, cutoff: int, params: Any, decoders: Sequence[Callable[[Any], Any]],
               required: int) -> Any:  # fmt: skip
    """geth's ``BlockByNumber`` before the block is read: ``earliest`` is the cutoff, a
    number below it the error; the params to dispatch (``earliest`` replaced)."""
    try:
        args = decode_params(params, decoders, required)
    except RpcError:
        return params  # the method's own decoding error, as geth's comes first
    tag = args[0]
    if tag == "earliest":
        return [quantity(cutoff), *params[1:]]
    if isinstance(tag, int) and tag < cutoff:
        raise _pruned()
    return params


def _earliest_is_cutoff(ctx: Any, cutoff: int, params: Any,
                        decoders: Sequence[Callable[[Any], Any]],
                        required: int) -> Any:  # fmt: skip
    """geth's ``HeaderByNumber``: ``earliest`` is the cutoff; every header stays served."""
    try:
        args = decode_params(params, decoders, required)
    except RpcError:
        return params
    return [quantity(cutoff), *params[1:]] if args[0] == "earliest" else params


def _by_hash(ctx: Any, cutoff: int, params: Any, decoders: Sequence[Callable[[Any], Any]],
             required: int) -> Any:  # fmt: skip
    """geth's ``BlockByHash``: a known block below the cutoff is the error."""
    try:
        args = decode_params(params, decoders, required)
    except RpcError:
        return params
    target = args[0]
    if isinstance(target, bytes):
        number = ctx.chain.number_of(target)
        if number is not None and number < cutoff:
            raise _pruned()
        return params
    if isinstance(target, _NoBlock):
        return params
    return _by_number(ctx, cutoff, params, decoders, required)  # a block number or tag


def _fee_rewards(ctx: Any, cutoff: int, params: Any, decoders: Sequence[Callable[[Any], Any]],
                 required: int) -> Any:  # fmt: skip
    """geth's eth_feeHistory reads blocks and receipts only for reward percentiles: those
    over a block below the cutoff are the error (base fees come from headers)."""
    try:
        count, tag, percentiles = (*decode_params(params, decoders, required), None)[:3]
        if not percentiles:
            return params
        if tag == "earliest":
            tag = cutoff  # geth: HeaderByNumber(earliest) is the cutoff
        span = _fee_range(ctx.chain, count, tag)
    except RpcError:
        return params
    if span.oldest < cutoff:
        raise _pruned()
    return params


# the methods whose answers need a block's body, uncles, receipts or logs: geth answers them
# from BlockByNumber/BlockByHash/BlockByNumberOrHash or its receipts (eth/api_backend.go,
# internal/ethapi/api.go); headers, state and the head stay served. The devnet has no
# eth_getLogs nor transaction lookups (geth refuses eth_getLogs from below the cutoff too).
# eth_getHeaderByNumber is here for its ``earliest`` alone (HeaderByNumber: the cutoff).
_NEEDS_BODIES: dict[str, Callable[..., Any]] = {
    "eth_getBlockByNumber": _by_number,
    "eth_getBlockByHash": _by_hash,
    "eth_getUncleByBlockNumberAndIndex": _by_number,
    "eth_getUncleByBlockHashAndIndex": _by_hash,
    "eth_getUncleCountByBlockNumber": _by_number,
    "eth_getUncleCountByBlockHash": _by_hash,
    "eth_getBlockReceipts": _by_hash,
    "eth_feeHistory": _fee_rewards,
    "eth_getHeaderByNumber": _earliest_is_cutoff,  # headers stay: only earliest moves
}


def pruning(dispatch: Callable[[Any, str, Any], Any], mode: str) -> Callable[[Any, str, Any], Any]:
    """``dispatch`` answering as geth run with ``--history.chain mode`` does: a call that
    needs the body, uncles or receipts of a block below its chain's cutoff
    (:func:`history_cutoff`) is refused with 4444 ``pruned history unavailable``, and
    ``earliest`` is the cutoff block; every other call goes to ``dispatch`` unchanged.
    ``"all"`` gives ``dispatch`` back.

    References
    ----------
    .. [1] ethereum/go-ethereum eth/api_backend.go (``BlockByNumber``, ``BlockByHash``,
       ``BlockByNumberOrHash``, ``GetBody``), internal/ethapi/api.go, eth/gasprice/
       feehistory.go and eth/filters/api.go at 02b73d4ea7181464175e0a6cbecc0a3a2655a562.
    """
    if mode not in HISTORY_MODES:
        raise ValueError(f'unknown history mode {mode!r}, want "all" or "postmerge"')
    if mode == "all":
        return dispatch
    cutoffs: dict[int, int] = {}

    def cutoff_of(chain: Any) -> int:
        cutoff = cutoffs.get(chain.chain_id)
        if cutoff is None:
            cutoff = cutoffs[chain.chain_id] = history_cutoff(chain, mode)
        return cutoff

    def pruned_dispatch(ctx: Any, method: str, params: Any) -> Any:
        check = _NEEDS_BODIES.get(method)
        if check is not None:
            cutoff = cutoff_of(ctx.chain)
            if cutoff:
                _, decoders, required = METHODS[method]
                params = check(ctx, cutoff, params, decoders, required)
        elif method == "web3_clientVersion" and params in (None, []):
            # a feeslab client learns the cutoff from what its set-up asks anyway
            # (feeslab.sources.rpc); geth's version says nothing of it
            return f"{CLIENT_VERSION}/history-{mode}-{cutoff_of(ctx.chain)}"
        return dispatch(ctx, method, params)

    pruned_dispatch.__wrapped__ = dispatch  # type: ignore[attr-defined]
    return pruned_dispatch

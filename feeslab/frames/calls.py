"""Contract calls and gas estimates: ABI encoding, decoding, reverts and costs, as frames.

Pure functions. The fetch layer sends ``eth_call`` / ``eth_estimateGas`` and hands the
answers here: a 0x hex result, or the JSON-RPC error (an ``RpcError`` or its JSON object).
A revert is data, not an exception: it becomes the row's ``error`` text, decoded from
``Error(string)``, ``Panic(uint256)`` or, given the contract's ABI, a custom error.

Integers wider than int64 (``uint64`` and up, ``int72`` and up, every amount in wei) are kept
exact as Python ints in ``object`` columns: a uint256 balance is beyond int64 and float
precision.

References
----------
.. [1] Solidity documentation, "Contract ABI Specification",
   https://docs.soliditylang.org/en/latest/abi-spec.html
.. [2] Ethereum execution APIs, ``eth_call`` and ``eth_estimateGas``,
   https://github.com/ethereum/execution-apis
.. [3] EIP-1559: Fee market change for ETH 1.0 chain, https://eips.ethereum.org/EIPS/eip-1559
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from feeslab._hexbytes import check_address, is_address
from feeslab.errors import RevertError, RpcError
from feeslab.frames.blocks import _empty, _int64, _object_series, _quantity

__all__ = [
    "CALL_SERIES_BASE_DTYPES",
    "COST_DTYPES",
    "ZERO_ADDRESS",
    "FunctionSpec",
    "GasInputs",
    "call_gas_inputs",
    "call_object",
    "decode_output",
    "encode_call",
    "error_text",
    "function_spec",
    "parse_call_series",
    "parse_cost_estimates",
    "transaction_cost",
]

ZERO_ADDRESS = "0x" + "00" * 20
WEI_PER_GWEI = 10**9
WEI_PER_ETH = 10**18

#: The columns every :func:`parse_call_series` frame has, besides one per output.
CALL_SERIES_BASE_DTYPES: dict[str, str] = {"block_number": "int64", "error": "str"}

#: Columns and dtypes of :func:`parse_cost_estimates`' frame, in order.
COST_DTYPES: dict[str, str] = {
    "block_number": "int64",
    "gas_estimate": "Int64",
    "base_fee_wei": "object",
    "priority_fee_wei": "object",
    "cost_wei": "object",
    "cost_gwei": "float64",
    "cost_eth": "float64",
    "error": "str",
}

_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_INT_TYPE = re.compile(r"(u?int)(\d*)")
_SPACES = re.compile(r"\s+(?=[,)\[\]])|(?<=[(,\[])\s+")  # around delimiters; not before a name
_AFTER_TYPE = re.compile(r"\s[^,()]*")  # an argument's name (and location) after its type
_QUANTITY_FIELDS = ("gas", "gasPrice", "maxFeePerGas", "maxPriorityFeePerGas", "value", "nonce")
_BYTES_FIELDS = ("data", "input")


# -- function specs ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FunctionSpec:
    """One contract function: what encoding a call and decoding its answer need.

    Attributes
    ----------
    name : str
    inputs : tuple of str
        Canonical ABI types of the arguments, e.g. ``("address", "uint256")``.
    outputs : tuple of str
        Canonical ABI types of the return values.
    output_names : tuple of str
        Column names for the outputs: the ABI's names, else ``output`` (a single unnamed
        output) or ``output_<i>``.
    """

    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    output_names: tuple[str, ...]

    @property
    def signature(self) -> str:
        """The canonical signature, e.g. ``"balanceOf(address)"``."""
        return f"{self.name}({','.join(self.inputs)})"

    @property
    def selector(self) -> bytes:
        """The 4-byte function selector: the first bytes of keccak256 of the signature."""
        from eth_utils.abi import function_signature_to_4byte_selector  # eth-utils: 0.4 s, on use

        return function_signature_to_4byte_selector(self.signature)


def _split_types(text: str, what: str) -> list[str]:
    """Canonical types of ``"uint a, (int8,bool)[] b"``: names dropped, ``uint`` -> ``uint256``."""
    if text.count("(") != text.count(")"):
        raise ValueError(f"unbalanced parentheses in {what}")
    # eth-abi's grammar reads bare types: drop spaces around delimiters, then argument names
    bare = _AFTER_TYPE.sub("", _SPACES.sub("", text.strip()))
    if not bare:
        return []
    from eth_abi.exceptions import ParseError  # eth-abi and its grammar: loaded for calls only
    from eth_abi.grammar import normalize, parse

    try:
        parsed = parse(normalize(f"({bare})"))
    except ParseError as exc:
        raise ValueError(f"malformed types in {what}: {exc}") from None
    return [component.to_type_str() for component in parsed.components]


def _entry_spec(entry: Mapping[str, Any]) -> FunctionSpec:
    if entry.get("type", "function") != "function" or "name" not in entry:
        raise ValueError(f"not a function ABI entry: {dict(entry)!r}"[:200])
    from eth_utils.abi import collapse_if_tuple

    inputs = tuple(collapse_if_tuple(p) for p in entry.get("inputs", []))
    outputs = tuple(collapse_if_tuple(p) for p in entry.get("outputs", []))
    names = [str(p.get("name") or "") for p in entry.get("outputs", [])]
    return FunctionSpec(entry["name"], inputs, outputs, _column_names(names))


def _column_names(names: Sequence[str]) -> tuple[str, ...]:
    reserved = set(CALL_SERIES_BASE_DTYPES)
    if len(names) == 1 and not names[0]:
        return ("output",)
    out = []
    for i, name in enumerate(names):
        unique = name and names.count(name) == 1 and name not in reserved
        out.append(name if unique else f"output_{i}")
    return tuple(out)


def function_spec(
    function: str | Mapping[str, Any],
    *,
    returns: Sequence[str] | None = None,
    abi: Sequence[Mapping[str, Any]] | None = None,
) -> FunctionSpec:
    """The function to call, from an ABI entry, a signature, or a name in ``abi``.

    Parameters
    ----------
    function : dict or str
        A function's ABI entry (JSON, as solc emits it); or a signature ``"name(types)"``,
        optionally followed by its return types, ``"name(types)(types)"``; or a bare name
        looked up in ``abi``.
    returns : list of str, optional
        The return types, e.g. ``["uint256"]``; needed for a signature unless ``abi`` has the
        function. Overrides the ABI's outputs when given.
    abi : list of dict, optional
        The contract's ABI.

    Returns
    -------
    FunctionSpec

    Raises
    ------
    ValueError
        For a malformed signature, a name that ``abi`` lacks or overloads, or an ABI entry
        that is not a function.
    """
    if isinstance(function, Mapping):
        spec = _entry_spec(function)
    elif isinstance(function, str):
        spec = _signature_spec(function.strip(), abi)
    else:
        raise TypeError(f"function must be an ABI entry or a signature, not "
                        f"{type(function).__name__}")
    if returns is not None:
        if isinstance(returns, str):
            raise TypeError('returns must be a list of types, e.g. ["uint256"], not a str')
        outputs = tuple(_split_types(",".join(map(str, returns)), "returns"))
        spec = FunctionSpec(spec.name, spec.inputs, outputs, _column_names([""] * len(outputs)))
    return spec


def _signature_spec(text: str, abi: Sequence[Mapping[str, Any]] | None) -> FunctionSpec:
    functions = [e for e in (abi or ()) if e.get("type") == "function"]
    if _NAME.fullmatch(text):
        found = [e for e in functions if e.get("name") == text]
        if not found:
            where = "the given abi" if abi else "no abi (pass abi= or a signature)"
            raise ValueError(f"no function {text!r} in {where}")
        if len(found) > 1:
            raise ValueError(f"{text!r} is overloaded in the abi; give its signature")
        return _entry_spec(found[0])
    match = re.fullmatch(r"([A-Za-z_$][A-Za-z0-9_$]*)\((.*)", text, re.DOTALL)
    if match is None:
        raise ValueError(f'not a function signature: {text!r} (expected "name(types)")')
    name, rest = match.groups()
    depth, end = 1, None
    for i, char in enumerate(rest):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            end = i
            break
    if end is None:
        raise ValueError(f"unbalanced parentheses in {text!r}")
    inputs = tuple(_split_types(rest[:end], repr(text)))
    tail = rest[end + 1 :].strip()
    for entry in functions:
        spec = _entry_spec(entry)
        if spec.name == name and spec.inputs == inputs and not tail:
            return spec
    outputs: tuple[str, ...] = ()
    if tail:
        if not (tail.startswith("(") and tail.endswith(")")):
            raise ValueError(f"unexpected text after the arguments of {text!r}: {tail!r}")
        outputs = tuple(_split_types(tail[1:-1], repr(text)))
    return FunctionSpec(name, inputs, outputs, _column_names([""] * len(outputs)))


# -- encoding and decoding ---------------------------------------------------------------------


def encode_call(spec: FunctionSpec, args: Sequence[object] = ()) -> str:
    """Calldata for calling ``spec`` with ``args``: selector + ABI-encoded arguments.

    Parameters
    ----------
    spec : FunctionSpec
    args : sequence
        One Python value per input (ints, 0x address strings, bytes, tuples, lists).

    Returns
    -------
    str
        0x hex calldata.
    """
    from eth_abi.abi import encode

    if isinstance(args, str | bytes | Mapping):
        raise TypeError(f"args must be a list of arguments, not a {type(args).__name__}")
    args = list(args)
    if len(args) != len(spec.inputs):
        raise ValueError(f"{spec.signature} takes {len(spec.inputs)} argument(s), "
                         f"got {len(args)}")
    try:
        encoded = encode(list(spec.inputs), args)
    except Exception as exc:  # eth_abi's EncodingError and friends
        raise ValueError(f"cannot encode arguments for {spec.signature}: {exc}") from None
    return "0x" + (spec.selector + encoded).hex()


def decode_output(spec: FunctionSpec, result: str) -> tuple[object, ...]:
    """The return values of ``spec`` from an ``eth_call`` result.

    Parameters
    ----------
    spec : FunctionSpec
    result : str
        The 0x hex ``eth_call`` result.

    Returns
    -------
    tuple
        One Python value per output: ints exact, addresses as lower-case 0x hex, ``bytes``
        for ``bytesN``/``bytes``, tuples for structs and lists for arrays.

    Raises
    ------
    ValueError
        When the result is not valid hex or does not decode as the outputs (an empty ``0x``
        usually means no contract code at that address at that block).
    """
    from eth_abi.abi import decode

    if not isinstance(result, str) or not result.startswith("0x"):
        raise ValueError(f"an eth_call result must be 0x hex, not {result!r}"[:200])
    try:
        data = bytes.fromhex(result[2:])
    except ValueError:
        raise ValueError(f"an eth_call result is not hex: {result[:80]!r}") from None
    if not spec.outputs:
        return ()
    if not data:
        raise ValueError(
            "empty answer (0x) where outputs "
            f"({','.join(spec.outputs)}) were expected: no contract code there at that block?"
        )
    try:
        return tuple(decode(list(spec.outputs), data))
    except Exception as exc:
        raise ValueError(
            f"cannot decode {len(data)} bytes as ({','.join(spec.outputs)}): {exc}"
        ) from None


def _format_value(value: object) -> str:
    if isinstance(value, bytes):
        return "0x" + value.hex()
    if isinstance(value, tuple | list):
        inner = ", ".join(_format_value(v) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, str) and not is_address(value):
        return repr(value)
    return str(value)


def error_text(
    error: RpcError | Mapping[str, object], abi: Sequence[Mapping[str, Any]] | None = None
) -> str:
    """A one-line reading of a JSON-RPC error; reverts decoded.

    Parameters
    ----------
    error : RpcError or dict
        The error (or the ``error`` member of an answer).
    abi : list of dict, optional
        The contract's ABI, whose ``error`` entries decode custom errors.

    Returns
    -------
    str
        For a revert: the ``Error(string)`` reason (``"feeslab: not allowed"``); a panic as
        ``"Panic(0x12): division or modulo by zero"``; a custom error as
        ``"Unauthorized(0x5b38..., 7)"``; undecoded data as ``"custom error 0x<selector>
        (data 0x...)"``; no data as ``"execution reverted"``. Any other error as
        ``"<code>: <message>"``.
    """
    raw = error.raw if isinstance(error, RpcError) else error
    if not isinstance(raw, Mapping):
        return str(raw)
    if not (isinstance(error, RevertError) or RevertError.recognises(raw)):
        code, message = raw.get("code"), raw.get("message", "")
        return f"{code}: {message}" if code is not None else str(message)
    revert = RevertError.from_rpc(raw, abi=abi)
    if revert.error_name is not None:
        args = ", ".join(_format_value(a) for a in revert.error_args or ())
        return f"{revert.error_name}({args})"
    if revert.panic_code is not None:
        return f"Panic(0x{revert.panic_code:02x}): {revert.reason}"
    if revert.reason is not None:
        return revert.reason
    if len(revert.data) >= 4:
        shown = revert.data.hex()
        shown = shown if len(shown) <= 136 else shown[:136] + "..."
        return f"custom error 0x{revert.data[:4].hex()} (data 0x{shown}; pass abi= to decode)"
    if revert.data:
        return f"execution reverted (data 0x{revert.data.hex()})"
    return "execution reverted"


# -- call series -------------------------------------------------------------------------------


def _output_dtype(kind: str) -> str:
    match = _INT_TYPE.fullmatch(kind)
    if match:
        bits = int(match.group(2) or 256)
        signed = match.group(1) == "int"
        return "Int64" if (signed and bits <= 64) or (not signed and bits <= 56) else "object"
    if kind == "bool":
        return "boolean"
    if kind in ("address", "string") or (kind.startswith("bytes") and "[" not in kind):
        return "str"
    return "object"


def _output_value(kind: str, value: object) -> object:
    if isinstance(value, bytes) and _output_dtype(kind) == "str":
        return "0x" + value.hex()
    return value


def _output_series(kind: str, values: list[object]) -> pd.Series:
    dtype = _output_dtype(kind)
    if dtype == "object":
        return _object_series(values)
    return pd.Series(values, dtype=dtype)


def parse_call_series(
    spec: FunctionSpec,
    answers: Mapping[Any, str | RpcError | Mapping[str, object]],
    *,
    abi: Sequence[Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """One function's ``eth_call`` answers at several blocks, decoded.

    Parameters
    ----------
    spec : FunctionSpec
        The function called (see :func:`function_spec`).
    answers : dict
        ``{block_number: answer}``: block numbers as ints (or 0x quantities); each answer the
        0x hex result, or the error (an ``RpcError`` or a JSON-RPC error object).
    abi : list of dict, optional
        The contract's ABI, to decode custom errors.

    Returns
    -------
    pandas.DataFrame
        One row per block, sorted by block number, RangeIndex, columns (dtype):

        ``block_number`` (int64)
        one column per output, named by ``spec.output_names``
            ``uint8`` .. ``uint56`` and ``int8`` .. ``int64``: ``Int64`` (nullable);
            wider ints (``uint256``, ``int256``, ``uint64``, ...): ``object``, exact Python
            ints; ``bool``: ``boolean``; ``address`` (lower-case), ``string``, ``bytes`` and
            ``bytesN`` (0x hex): ``str``; arrays and tuples: ``object``. Missing (``<NA>``
            / None) in rows with an error.
        ``error`` (str)
            Missing when the call succeeded; else the decoded revert (see
            :func:`error_text`) or why the answer did not decode.

        No answers give an empty frame with these columns.
    """
    if not isinstance(answers, Mapping):
        raise TypeError(f"answers must be a dict {{block_number: answer}}, not "
                        f"{type(answers).__name__}")
    rows = sorted(
        ((_quantity(block, f"answers key {block!r}"), answer) for block, answer in answers.items()),
        key=lambda row: row[0],
    )
    numbers = [b for b, _ in rows]
    if len(set(numbers)) != len(numbers):
        raise ValueError("answers has the same block twice (as an int and as hex)")
    values: list[list[object]] = [[] for _ in spec.outputs]
    errors: list[str | None] = []
    for block, answer in rows:
        decoded: tuple[object, ...] | None = None
        if isinstance(answer, str):
            try:
                decoded = decode_output(spec, answer)
            except ValueError as exc:
                errors.append(str(exc))
            else:
                errors.append(None)
        elif isinstance(answer, RpcError | Mapping):
            errors.append(error_text(answer, abi))
        else:
            raise TypeError(f"answers[{block}] must be a 0x hex result or an error, not "
                            f"{type(answer).__name__}")
        for i, kind in enumerate(spec.outputs):
            values[i].append(None if decoded is None else _output_value(kind, decoded[i]))
    columns: dict[str, object] = {"block_number": _int64(numbers, "block_number", "answers")}
    for name, kind, column in zip(spec.output_names, spec.outputs, values, strict=True):
        columns[name] = _output_series(kind, column)
    columns["error"] = pd.Series(errors, dtype="str")
    if not rows:
        return _empty({"block_number": "int64",
                       **{n: _output_dtype(k) for n, k in zip(spec.output_names, spec.outputs,
                                                              strict=True)},
                       "error": "str"})
    return pd.DataFrame(columns)


# -- gas estimates and their cost --------------------------------------------------------------


def call_object(transaction: Mapping[str, object]) -> dict[str, object]:
    """A transaction dict as a JSON-RPC call object (``eth_call``/``eth_estimateGas``).

    Parameters
    ----------
    transaction : dict
        ``from``, ``to`` (0x addresses), ``data`` or ``input`` (0x hex or bytes), ``value``,
        ``gas``, ``gasPrice``, ``maxFeePerGas``, ``maxPriorityFeePerGas``, ``nonce`` (ints
        or 0x quantities) [wei for fees and value]. Other keys are passed on unchanged.

    Returns
    -------
    dict
        The same keys with ints as 0x quantities and bytes as 0x hex.
    """
    if not isinstance(transaction, Mapping):
        raise TypeError(f"a transaction must be a dict, not {type(transaction).__name__}")
    out: dict[str, object] = {}
    for key, value in transaction.items():
        if value is None:
            continue
        if key in ("from", "to"):
            check_address(value, repr(key))
        elif key in _QUANTITY_FIELDS and not isinstance(value, str):
            value = hex(_quantity(value, f"transaction {key!r}"))
        elif key in _BYTES_FIELDS and isinstance(value, bytes | bytearray):
            value = "0x" + bytes(value).hex()
        out[key] = value
    return out


class GasInputs(TypedDict):
    """What a transaction's intrinsic gas depends on (:func:`call_gas_inputs`): the keyword
    arguments of ``feeslab.analysis.gas.intrinsic_gas`` and ``least_gas_limit``."""

    data: bytes
    create: bool
    access_list: list[object]  # JSON-RPC's {"address", "storageKeys"} entries
    authorizations: int  # EIP-7702 authorizations [count]
    value: int  # [wei]
    to_self: bool


def call_gas_inputs(call: Mapping[str, object]) -> GasInputs:
    """What a call object's intrinsic gas depends on, as ``feeslab.analysis.gas``'s
    ``intrinsic_gas`` takes it.

    Parameters
    ----------
    call : dict
        A transaction or :func:`call_object`'s answer: ``to`` (absent or None for a
        creation), ``from``, ``data`` or ``input``, ``value``, ``accessList`` and
        ``authorizationList`` (EIP-7702).

    Returns
    -------
    dict
        ``data`` (bytes), ``create``, ``access_list`` (JSON-RPC's entries), ``authorizations``
        (a count), ``value`` [wei] and ``to_self`` (``from`` equals ``to``).
    """
    obj = call_object(call)
    raw = obj.get("data", obj.get("input", "0x"))
    if not isinstance(raw, str) or raw[:2] not in ("0x", "0X") or len(raw) % 2:
        raise ValueError(f"transaction data must be 0x hex with whole bytes, not {raw!r}")
    value = obj.get("value", "0x0")
    to, sender = obj.get("to"), obj.get("from")  # checked addresses (call_object)
    return {
        "data": bytes.fromhex(raw[2:]),
        "create": to is None,
        "access_list": _entries(obj.get("accessList"), "accessList"),
        "authorizations": len(_entries(obj.get("authorizationList"), "authorizationList")),
        "value": int(value, 16) if isinstance(value, str) else _quantity(value, "value"),
        "to_self": isinstance(to, str) and isinstance(sender, str)
                   and to.lower() == sender.lower(),
    }  # fmt: skip


def _entries(value: object, key: str) -> list[object]:
    """A list field of a call object (``accessList``, ``authorizationList``); [] when absent."""
    if not value:
        return []
    if not isinstance(value, Iterable):
        raise TypeError(f"transaction {key!r} must be a list, not {type(value).__name__}")
    return list(value)


def transaction_cost(gas: int, base_fee_wei: int, priority_fee_wei: int = 0) -> int:
    """What ``gas`` units cost at a base fee plus a priority fee.

    Parameters
    ----------
    gas : int
        Gas used [gas].
    base_fee_wei : int
        The block's base fee per gas [wei/gas].
    priority_fee_wei : int
        The tip per gas paid on top [wei/gas].

    Returns
    -------
    int
        ``gas * (base_fee_wei + priority_fee_wei)``, exact [wei].
    """
    for name, value in (("gas", gas), ("base_fee_wei", base_fee_wei),
                        ("priority_fee_wei", priority_fee_wei)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ValueError(f"{name} must be a non-negative int, not {value!r}")
    return int(gas) * (int(base_fee_wei) + int(priority_fee_wei))


def parse_cost_estimates(
    answers: Sequence[str | RpcError | Mapping[str, object]],
    *,
    block_number: int,
    base_fee_wei: int | None,
    priority_fee_wei: int = 0,
    abi: Sequence[Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """``eth_estimateGas`` answers for a list of transactions, with their cost.

    Parameters
    ----------
    answers : list
        One per transaction, in order: the 0x quantity ``eth_estimateGas`` answered, or its
        error (an ``RpcError`` or a JSON-RPC error object).
    block_number : int
        The block whose state the estimates ran on.
    base_fee_wei : int or None
        That block's base fee per gas [wei/gas]; None before London (costs are then missing).
    priority_fee_wei : int
        Tip per gas added to the base fee [wei/gas].
    abi : list of dict, optional
        The contract's ABI, to decode custom errors.

    Returns
    -------
    pandas.DataFrame
        One row per transaction, in order, RangeIndex, columns (dtype):

        ``block_number`` (int64)
        ``gas_estimate`` (Int64, nullable) [gas]
            Missing when the estimate failed.
        ``base_fee_wei``, ``priority_fee_wei`` (object: Python int) [wei/gas]
        ``cost_wei`` (object: Python int) [wei]
            ``gas_estimate * (base_fee_wei + priority_fee_wei)``, exact; None when missing.
        ``cost_gwei``, ``cost_eth`` (float64) [gwei], [ETH]
            The same, correctly rounded to the nearest float; NaN when missing.
        ``error`` (str)
            Missing when the estimate succeeded; else the decoded revert or the node's error
            (see :func:`error_text`).
    """
    if isinstance(answers, Mapping | str):
        raise TypeError("answers must be a list, one answer per transaction")
    block = _quantity(block_number, "block_number")
    if base_fee_wei is not None:
        base_fee_wei = _quantity(base_fee_wei, "base_fee_wei")
    tip = _quantity(priority_fee_wei, "priority_fee_wei")
    gas: list[int | None] = []
    costs: list[int | None] = []
    errors: list[str | None] = []
    for i, answer in enumerate(answers):
        if isinstance(answer, str):
            estimate = _quantity(answer, f"answers[{i}]")
            gas.append(estimate)
            errors.append(None)
            costs.append(None if base_fee_wei is None
                         else transaction_cost(estimate, base_fee_wei, tip))
        elif isinstance(answer, RpcError | Mapping):
            gas.append(None)
            costs.append(None)
            errors.append(error_text(answer, abi))
        else:
            raise TypeError(f"answers[{i}] must be a 0x quantity or an error, not "
                            f"{type(answer).__name__}")
    n = len(gas)
    if not n:
        return _empty(COST_DTYPES)
    return pd.DataFrame(
        {
            "block_number": np.full(n, block, dtype=np.int64),
            "gas_estimate": pd.Series(gas, dtype="Int64"),
            "base_fee_wei": _object_series([base_fee_wei] * n),
            "priority_fee_wei": _object_series([tip] * n),
            "cost_wei": _object_series(costs),
            "cost_gwei": np.array(
                [np.nan if c is None else c / WEI_PER_GWEI for c in costs], dtype=np.float64
            ),
            "cost_eth": np.array(
                [np.nan if c is None else c / WEI_PER_ETH for c in costs], dtype=np.float64
            ),
            "error": pd.Series(errors, dtype="str"),
        }
    )

"""Block headers (``eth_getBlockByNumber`` / ``eth_getBlockByHash`` results) as a frame.

Pure functions: the input is the decoded JSON a node returns, the output a DataFrame.

References
----------
.. [1] Ethereum execution APIs, ``eth_getBlockByNumber`` and the ``Block`` schema,
   https://github.com/ethereum/execution-apis
.. [2] EIP-1559: Fee market change for ETH 1.0 chain (``baseFeePerGas``),
   https://eips.ethereum.org/EIPS/eip-1559
.. [3] EIP-4844: Shard Blob Transactions (``blobGasUsed``, ``excessBlobGas``),
   https://eips.ethereum.org/EIPS/eip-4844
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["BLOCK_DTYPES", "parse_blocks", "slim_block"]

INT64_MAX = np.iinfo(np.int64).max

#: Columns and dtypes of :func:`parse_blocks`' frame, in order.
BLOCK_DTYPES: dict[str, str] = {
    "block_number": "int64",
    "hash": "str",
    "parent_hash": "str",
    "timestamp": "datetime64[ns, UTC]",
    "miner": "str",
    "difficulty": "object",
    "total_difficulty": "object",
    "gas_limit": "int64",
    "gas_used": "int64",
    "gas_used_ratio": "float64",
    "base_fee_wei": "Int64",
    "size_bytes": "int64",
    "transaction_count": "int64",
    "uncle_count": "int64",
    "uncle_hashes": "object",
    "blob_gas_used": "Int64",
    "excess_blob_gas": "Int64",
}


# -- helpers shared by the frames modules ------------------------------------------------------


def _quantity(value: Any, what: str) -> int:
    """A JSON-RPC quantity (``"0x1b"``) or a plain non-negative int, as an int."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be a 0x hex quantity or an int, not bool")
    if isinstance(value, int | np.integer):
        number = int(value)
    elif isinstance(value, str) and value[:2] in ("0x", "0X") and len(value) > 2:
        try:
            number = int(value, 16)
        except ValueError:
            raise ValueError(f"{what} is not a hex quantity: {value!r}") from None
    else:
        raise ValueError(f"{what} is not a hex quantity: {value!r}")
    if number < 0:
        raise ValueError(f"{what} must be >= 0, got {number}")
    return number


def _field(items: Sequence[Mapping[str, Any]], key: str, what: str) -> list[Any]:
    """``[item[key] for item in items]``, naming the first item that lacks ``key``."""
    try:
        return [item[key] for item in items]
    except KeyError:
        pass
    except TypeError:
        for i, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise TypeError(
                    f"{what}[{i}] must be a JSON object (dict), not {type(item).__name__}"
                ) from None
        raise
    index = next(i for i, item in enumerate(items) if key not in item)
    raise ValueError(f"{what}[{index}] has no {key!r} field")


def _hex_ints(values: list[Any], key: str, what: str) -> list[int]:
    """Hex quantities as Python ints (exact), naming the first bad value."""
    try:
        out = [int(v, 16) for v in values]
    except (TypeError, ValueError):
        out = None
    if out is None or any(v < 0 for v in out):
        for i, v in enumerate(values):
            _quantity(v, f"{what}[{i}].{key}")
    return out  # type: ignore[return-value]


def _int64(values: list[int], key: str, what: str) -> np.ndarray:
    """Python ints as an int64 array; a value beyond int64 raises ValueError naming it."""
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        i = next(i for i, v in enumerate(values) if v > INT64_MAX)
        raise ValueError(f"{what}[{i}].{key} = {values[i]} does not fit int64") from None


def _hex_int64(items: Sequence[Mapping[str, Any]], key: str, what: str) -> np.ndarray:
    return _int64(_hex_ints(_field(items, key, what), key, what), key, what)


def _hex_exact(items: Sequence[Mapping[str, Any]], key: str, what: str) -> pd.Series:
    """Exact Python ints in an object Series."""
    values = _hex_ints(_field(items, key, what), key, what)
    return _object_series(values)


def _object_series(values: list[Any]) -> pd.Series:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return pd.Series(array, dtype=object)


def _optional(
    items: Sequence[Mapping[str, Any]], key: str, what: str
) -> tuple[list[int | None], np.ndarray]:
    """Hex quantities that may be missing or null: (ints or None, mask of present values)."""
    raw = [item.get(key) for item in items]
    present = np.fromiter((v is not None for v in raw), dtype=bool, count=len(raw))
    values: list[int | None] = [None] * len(raw)
    if present.any():
        idx = np.flatnonzero(present)
        parsed = _hex_ints([raw[i] for i in idx], key, what)
        for i, v in zip(idx, parsed, strict=True):
            values[i] = v
    return values, present


def _nullable_int64(items: Sequence[Mapping[str, Any]], key: str, what: str) -> pd.Series:
    """A hex quantity that may be missing or null, as nullable ``Int64`` (``<NA>`` if absent)."""
    values, present = _optional(items, key, what)
    data = _int64([v if v is not None else 0 for v in values], key, what)
    return pd.Series(pd.arrays.IntegerArray(data, ~present))


def _strings(items: Sequence[Mapping[str, Any]], key: str, what: str) -> pd.Series:
    values = _field(items, key, what)
    if not all(isinstance(v, str) for v in values):
        i = next(i for i, v in enumerate(values) if not isinstance(v, str))
        raise TypeError(f"{what}[{i}].{key} must be a string, not {type(values[i]).__name__}")
    return pd.Series(values, dtype="str")


def _utc_seconds(seconds: np.ndarray) -> pd.Series:
    """Unix seconds as ``datetime64[ns, UTC]``."""
    return pd.Series(pd.to_datetime(seconds, unit="s", utc=True).as_unit("ns"))


def _ratio(used: np.ndarray, limit: np.ndarray) -> np.ndarray:
    out = np.full(len(used), np.nan)
    np.divide(used, limit, out=out, where=limit != 0)
    return out


def _empty(dtypes: Mapping[str, str]) -> pd.DataFrame:
    return pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in dtypes.items()})


def _as_list(items: Iterable[Any], what: str) -> list[Any]:
    if isinstance(items, Mapping | str | bytes):
        raise TypeError(f"{what} must be a list, not a single {type(items).__name__}")
    return list(items)


def _check_not_null(items: list[Any], what: str, hint: Callable[[int], str]) -> None:
    if any(item is None for item in items):
        i = items.index(None)
        raise ValueError(f"{what}[{i}] is null: {hint(i)}")


# -- blocks ----------------------------------------------------------------------------------

# the fields of a header parse_blocks reads
_READ = ("number", "hash", "parentHash", "timestamp", "miner", "difficulty", "totalDifficulty",
         "gasLimit", "gasUsed", "baseFeePerGas", "size", "uncles", "blobGasUsed",
         "excessBlobGas")


def slim_block(block: Any) -> Any:
    """What :func:`parse_blocks` reads of a header: its fields, the transactions by their count
    only (a ``range`` of it). A streaming fetch keeps this of each header as it arrives: a
    decoded header after Shanghai (16 withdrawals, a bloom) is ~11 KB, this ~1.5 KB.

    ``parse_blocks`` gives the same frame from the slim headers as from the whole ones
    (anything that is not a JSON object is returned as it is, for it to refuse alike).
    """
    if not isinstance(block, Mapping):
        return block
    slim = {key: block[key] for key in _READ if key in block}
    if "transactions" in block:
        transactions = block["transactions"]
        slim["transactions"] = (range(len(transactions)) if isinstance(transactions, list)
                                else transactions)
    return slim



def parse_blocks(blocks: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Block headers as one row per block, in the order given.

    Parameters
    ----------
    blocks : iterable of dict
        ``eth_getBlockByNumber`` / ``eth_getBlockByHash`` results (with transaction hashes or
        full transaction objects; only their count is kept). A ``null`` result (unknown
        block) raises ``ValueError``.

    Returns
    -------
    pandas.DataFrame
        One row per block, RangeIndex, columns (dtype):

        ``block_number`` (int64)
            Block number.
        ``hash``, ``parent_hash`` (str)
            0x hex, as the node sent them.
        ``timestamp`` (datetime64[ns, UTC])
            Block time [s resolution].
        ``miner`` (str)
            Fee recipient (coinbase), 0x hex.
        ``difficulty`` (object: Python int)
            Exact; can exceed 2**63 on proof-of-work chains, 0 after the merge.
        ``total_difficulty`` (object: Python int or None)
            Exact; None where the node omits it or sends null (geth dropped it after the
            merge).
        ``gas_limit``, ``gas_used`` (int64) [gas]
        ``gas_used_ratio`` (float64)
            ``gas_used / gas_limit`` (NaN when the limit is 0).
        ``base_fee_wei`` (Int64, nullable) [wei]
            ``baseFeePerGas``; ``<NA>`` before London (EIP-1559). Exact: base fees fit int64
            (a larger one raises ``ValueError``).
        ``size_bytes`` (int64) [bytes]
            RLP size of the block.
        ``transaction_count`` (int64)
            Length of ``transactions``.
        ``uncle_count`` (int64), ``uncle_hashes`` (object: tuple of str)
            The block's ommers.
        ``blob_gas_used``, ``excess_blob_gas`` (Int64, nullable) [gas]
            ``blobGasUsed`` and ``excessBlobGas`` (EIP-4844); ``<NA>`` before Cancun. Exact
            (multiples of 2**17 far below 2**63). ``feeslab.analysis.fees.blob_base_fees``
            turns the excess into each block's blob base fee.

        An empty input gives an empty frame with these dtypes (``BLOCK_DTYPES``).

    References
    ----------
    .. [1] Ethereum execution APIs, ``eth_getBlockByNumber``.
    .. [2] EIP-1559 (``baseFeePerGas``); EIP-3675 (difficulty 0 after the merge); EIP-4844
       (``blobGasUsed``, ``excessBlobGas``).
    """
    items = _as_list(blocks, "blocks")
    if not items:
        return _empty(BLOCK_DTYPES)
    _check_not_null(items, "blocks", lambda i: "the node knows no such block")
    what = "blocks"
    number = _hex_int64(items, "number", what)
    gas_limit = _hex_int64(items, "gasLimit", what)
    gas_used = _hex_int64(items, "gasUsed", what)
    seconds = _hex_int64(items, "timestamp", what)
    total, _ = _optional(items, "totalDifficulty", what)
    uncles = _field(items, "uncles", what)
    transactions = [item.get("transactions") or () for item in items]
    frame = pd.DataFrame(
        {
            "block_number": number,
            "hash": _strings(items, "hash", what),
            "parent_hash": _strings(items, "parentHash", what),
            "timestamp": _utc_seconds(seconds),
            "miner": _strings(items, "miner", what),
            "difficulty": _hex_exact(items, "difficulty", what),
            "total_difficulty": _object_series(total),
            "gas_limit": gas_limit,
            "gas_used": gas_used,
            "gas_used_ratio": _ratio(gas_used, gas_limit),
            "base_fee_wei": _nullable_int64(items, "baseFeePerGas", what),
            "size_bytes": _hex_int64(items, "size", what),
            "transaction_count": np.array([len(t) for t in transactions], dtype=np.int64),
            "uncle_count": np.array([len(u) for u in uncles], dtype=np.int64),
            "uncle_hashes": _object_series([tuple(u) for u in uncles]),
            "blob_gas_used": _nullable_int64(items, "blobGasUsed", what),
            "excess_blob_gas": _nullable_int64(items, "excessBlobGas", what),
        }
    )
    return frame

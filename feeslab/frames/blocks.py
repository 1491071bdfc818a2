"""Block headers as a frame: :func:`blocks_frame` builds it from columns, whatever the source.

Pure functions. :func:`parse_blocks` turns the decoded JSON a node returns
(``eth_getBlockByNumber`` / ``eth_getBlockByHash`` results) into columns and hands them to
:func:`blocks_frame`, as the era1 reader (:mod:`feeslab.sources.era1`) does with the fields
of the headers it decodes: the frame's dtypes are made in one place.

References
----------
.. [1] Ethereum execution APIs, ``eth_getBlockByNumber`` and the ``Block`` schema,
   https://github.com/ethereum/execution-apis
.. [2] EIP-1559: Fee market change for ETH 1.0 chain (``baseFeePerGas``),
   https://eips.ethereum.org/EIPS/eip-1559
.. [3] EIP-4844: Shard Blob Transactions (``blobGasUsed``, ``excessBlobGas``),
   https://eips.ethereum.org/EIPS/eip-4844
.. [4] go-ethereum ``core/types/block.go`` ``Header`` at 02b73d4 (every field through
   Amsterdam: EIP-7928 ``blockAccessListHash``, EIP-7843 ``slotNumber``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import pandas as pd

from feeslab.protocol.headers import HEADER_FIELDS, header_hash, unknown_header_fields

__all__ = [
    "BLOCK_DTYPES",
    "HEADER_FIELD_DTYPES",
    "blocks_frame",
    "blocks_frame_from_rows",
    "gas_used_ratio",
    "parse_blocks",
    "parse_header_fields",
    "slim_block",
]

INT64_MAX = np.iinfo(np.int64).max
_T = TypeVar("_T")

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


#: Columns and dtypes of :func:`parse_header_fields`' frame, in order: every header field of
#: every fork through Amsterdam, in RLP order, snake_case; a fork's fields are missing
#: (None / ``<NA>``) in blocks before it.
HEADER_FIELD_DTYPES: dict[str, str] = {
    "block_number": "int64",
    "hash": "str",
    "parent_hash": "str",
    "sha3_uncles": "str",
    "miner": "str",
    "state_root": "str",
    "transactions_root": "str",
    "receipts_root": "str",
    "logs_bloom": "str",
    "difficulty": "object",
    "gas_limit": "int64",
    "gas_used": "int64",
    "timestamp": "datetime64[ns, UTC]",
    "extra_data": "str",
    "mix_hash": "str",
    "nonce": "str",
    "base_fee_wei": "Int64",  # London
    "withdrawals_root": "object",  # Shanghai
    "blob_gas_used": "Int64",  # Cancun
    "excess_blob_gas": "Int64",
    "parent_beacon_block_root": "object",
    "requests_hash": "object",  # Prague
    "block_access_list_hash": "object",  # Amsterdam
    "slot_number": "Int64",
    "hash_verified": "bool",
}
_HEADER_KEYS = dict(zip(
    ("parentHash", "sha3Uncles", "miner", "stateRoot", "transactionsRoot", "receiptsRoot",
     "logsBloom", "extraData", "mixHash", "nonce"),
    ("parent_hash", "sha3_uncles", "miner", "state_root", "transactions_root", "receipts_root",
     "logs_bloom", "extra_data", "mix_hash", "nonce"), strict=True))  # fmt: skip
_OPTIONAL_DATA = {"withdrawalsRoot": "withdrawals_root",
                  "parentBeaconBlockRoot": "parent_beacon_block_root",
                  "requestsHash": "requests_hash", "blockAccessListHash": "block_access_list_hash"}
_OPTIONAL_QUANTITIES = {"baseFeePerGas": "base_fee_wei", "blobGasUsed": "blob_gas_used",
                        "excessBlobGas": "excess_blob_gas", "slotNumber": "slot_number"}


# -- helpers shared by the frames modules ------------------------------------------------------


def _quantity(value: object, what: str) -> int:
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


def _field(items: Sequence[Mapping[str, object]], key: str, what: str) -> list[object]:
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


def _hex_ints(values: Sequence[object], key: str, what: str) -> list[int]:
    """Hex quantities as Python ints (exact), naming the first bad value."""
    try:  # the fast path: every value a hex string
        out = [int(v, 16) for v in values if isinstance(v, str)]
    except ValueError:
        out = []
    if len(out) != len(values) or any(v < 0 for v in out):  # ints, or one to name
        return [_quantity(v, f"{what}[{i}].{key}") for i, v in enumerate(values)]
    return out


def _int64(values: list[int], key: str, what: str) -> np.ndarray:
    """Python ints as an int64 array; a value beyond int64 raises ValueError naming it."""
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        i = next(i for i, v in enumerate(values) if v > INT64_MAX)
        raise ValueError(f"{what}[{i}].{key} = {values[i]} does not fit int64") from None


def _hex_int64(items: Sequence[Mapping[str, object]], key: str, what: str) -> np.ndarray:
    return _int64(_hex_ints(_field(items, key, what), key, what), key, what)


def _hex_exact(items: Sequence[Mapping[str, object]], key: str, what: str) -> list[int]:
    """Exact Python ints (for an ``object`` column)."""
    return _hex_ints(_field(items, key, what), key, what)


def _object_series(values: Sequence[object] | np.ndarray) -> pd.Series:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return pd.Series(array, dtype=object)


def _optional(
    items: Sequence[Mapping[str, object]], key: str, what: str
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


def _nullable_int64(
    items: Sequence[Mapping[str, object]], key: str, what: str
) -> pd.arrays.IntegerArray:
    """A hex quantity that may be missing or null, as nullable ``Int64`` (``<NA>`` if absent)."""
    values, present = _optional(items, key, what)
    data = _int64([v if v is not None else 0 for v in values], key, what)
    return pd.arrays.IntegerArray(data, ~present)


def _strings(items: Sequence[Mapping[str, object]], key: str, what: str) -> list[str]:
    values = _field(items, key, what)
    strings = [v for v in values if isinstance(v, str)]
    if len(strings) != len(values):
        i = next(i for i, v in enumerate(values) if not isinstance(v, str))
        raise TypeError(f"{what}[{i}].{key} must be a string, not {type(values[i]).__name__}")
    return strings


def _utc_seconds(seconds: np.ndarray) -> pd.Series:
    """Unix seconds as ``datetime64[ns, UTC]``."""
    return pd.Series(pd.to_datetime(seconds, unit="s", utc=True).as_unit("ns"))


def gas_used_ratio(gas_used: npt.ArrayLike, gas_limit: npt.ArrayLike) -> np.ndarray:
    """``gas_used / gas_limit`` per block, NaN where the limit is 0.

    Parameters
    ----------
    gas_used, gas_limit : array-like of int
        One value per block [gas].

    Returns
    -------
    numpy.ndarray
        float64, as ``eth_feeHistory``'s ``gasUsedRatio`` and the blocks frame's
        ``gas_used_ratio``.
    """
    used = np.asarray(gas_used, dtype=np.int64)
    limit = np.asarray(gas_limit, dtype=np.int64)
    out = np.full(len(used), np.nan)
    np.divide(used, limit, out=out, where=limit != 0)
    return out


def _column(values: object, dtype: str) -> object:
    """``values`` as a column of ``dtype`` (a name the ``*_DTYPES`` dicts use).

    ``object`` columns hold exact Python ints (numpy integers become ints) or whatever else
    the values are (tuples, None); ``datetime64[ns, UTC]`` ones take Unix seconds or
    datetimes; ``Int64`` ones anything ``pandas.array`` takes (None or ``<NA>`` when absent).
    """
    if isinstance(values, pd.Series):
        values = values.array  # its values, not its index
    if dtype == "str":
        return pd.Series(values, dtype="str")
    if dtype == "object":
        if isinstance(values, list):
            return _object_series(values)
        array = np.asarray(values)
        # numpy integers as exact Python ints
        return _object_series(array if array.dtype == object else array.tolist())
    if dtype == "Int64":
        return pd.array(values, dtype="Int64")
    if dtype == "datetime64[ns, UTC]":
        if getattr(getattr(values, "dtype", None), "kind", None) == "M":
            return pd.Series(pd.to_datetime(values, utc=True).as_unit("ns"))
        return _utc_seconds(np.asarray(values, dtype=np.int64))
    return np.asarray(values, dtype=dtype)


def _given(
    dtypes: Mapping[str, str],
    columns: Mapping[str, Any] | pd.DataFrame,
    computed: Sequence[str],
    what: str,
) -> dict[str, Any]:
    """The columns a frame builder is given: every one of ``dtypes`` but ``computed`` (which
    the builder derives), all of one length.

    Raises
    ------
    ValueError
        A column is missing or is not one the builder takes, or the lengths differ.
    """
    names = [name for name in dtypes if name not in computed]
    missing = [name for name in names if name not in columns]
    extra = [name for name in columns if name not in names]
    if missing or extra:
        wrong = [f"missing {missing}"] if missing else []
        if extra:
            wrong.append(f"not its columns {extra} ({list(computed)} it computes)")
        raise ValueError(f"{what} takes the columns {names}: {'; '.join(wrong)}")
    given = {name: columns[name] for name in names}
    lengths = {name: len(values) for name, values in given.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{what}: the columns differ in length: {lengths}")
    return given


def _typed_frame(dtypes: Mapping[str, str], columns: Mapping[str, object]) -> pd.DataFrame:
    """The frame of ``dtypes``, in their order, each column made that dtype (:func:`_column`)."""
    return pd.DataFrame({name: _column(columns[name], dtype) for name, dtype in dtypes.items()})


def _empty(dtypes: Mapping[str, str]) -> pd.DataFrame:
    return pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in dtypes.items()})


def _as_list(items: Iterable[_T], what: str) -> list[_T]:
    if isinstance(items, Mapping | str | bytes):
        raise TypeError(f"{what} must be a list, not a single {type(items).__name__}")
    return list(items)


def _count(values: object, index: int, what: str) -> int:
    """How many ``values`` (a list, or a slim header's ``range``) hold; 0 for none (null)."""
    if not values:
        return 0
    if not isinstance(values, Sized):
        raise TypeError(f"{what}[{index}].transactions must be a list, "
                        f"not {type(values).__name__}")  # fmt: skip
    return len(values)


def _check_not_null(items: Sequence[object], what: str, hint: Callable[[int], str]) -> None:
    if any(item is None for item in items):
        i = items.index(None)
        raise ValueError(f"{what}[{i}] is null: {hint(i)}")


# -- blocks ----------------------------------------------------------------------------------

# the fields of a header parse_blocks reads
_READ = ("number", "hash", "parentHash", "timestamp", "miner", "difficulty", "totalDifficulty",
         "gasLimit", "gasUsed", "baseFeePerGas", "size", "uncles", "blobGasUsed",
         "excessBlobGas")


# what a block may carry besides an unknown (newer) header field
_KNOWN_KEYS = frozenset(HEADER_FIELDS) | {"hash", "size", "totalDifficulty", "transactions",
                                          "uncles", "withdrawals", "sealFields", "author",
                                          "blockAccessList", "requests", "executionWitness"}


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def _extra_columns(items: Sequence[Mapping[str, object]], frame: pd.DataFrame) -> pd.DataFrame:
    """Header fields feeslab does not know, kept as ``str`` columns (snake_case, as served;
    None where a block lacks one) and named in ``attrs["extra_header_fields"]``, with a
    warning once per field (``feeslab.protocol.headers.UnknownHeaderFieldWarning``)."""
    names: dict[str, None] = {}
    for item in items:
        if not _KNOWN_KEYS.issuperset(item):
            names.update(dict.fromkeys(unknown_header_fields(item)))
    if not names:
        return frame
    for name in names:
        column = _snake(name)
        if column in frame.columns:
            column = f"extra_{column}"
        frame[column] = _object_series([item.get(name) for item in items])
    frame.attrs["extra_header_fields"] = tuple(names)
    return frame


def slim_block(block: _T) -> _T | dict[str, object]:
    """What :func:`parse_blocks` reads of a header: its fields, the transactions by their count
    only (a ``range`` of it). A streaming fetch keeps this of each header as it arrives: a
    decoded header after Shanghai (16 withdrawals, a bloom) is ~11 KB, this ~1.5 KB.

    ``parse_blocks`` gives the same frame from the slim headers as from the whole ones
    (anything that is not a JSON object is returned as it is, for it to refuse alike).
    """
    if not isinstance(block, Mapping):
        return block
    slim = {key: block[key] for key in _READ if key in block}
    if len(block) > len(slim) + 1 and not _KNOWN_KEYS.issuperset(block):  # a new fork's field
        slim.update((key, block[key]) for key in block if key not in _KNOWN_KEYS)
    if "transactions" in block:
        transactions = block["transactions"]
        slim["transactions"] = (range(len(transactions)) if isinstance(transactions, list)
                                else transactions)
    return slim


def blocks_frame(columns: Mapping[str, Any] | pd.DataFrame) -> pd.DataFrame:
    """The blocks frame (:func:`parse_blocks`' columns and dtypes) from its columns.

    The one place the frame is made, whatever the source: :func:`parse_blocks` gives it a
    node's answers as columns, ``feeslab.sources.era1`` the fields of the headers and bodies
    it decodes, ``feeslab.samples`` a shipped file's columns.

    Parameters
    ----------
    columns : mapping of str to array-like, or DataFrame
        One array or list per column of :data:`BLOCK_DTYPES` but ``gas_used_ratio`` and
        ``uncle_count``, which are computed (``gas_used / gas_limit``, NaN when the limit is
        0; the number of ``uncle_hashes``); all of one length. ``timestamp`` as Unix seconds
        (or datetimes); ``difficulty`` and ``total_difficulty`` as integers (None where
        unknown), kept exact; ``uncle_hashes`` as sequences of str; ``base_fee_wei``,
        ``blob_gas_used`` and ``excess_blob_gas`` as integers with None (or ``<NA>``) where
        absent.

    Returns
    -------
    pandas.DataFrame
        One row per block, in the order given, RangeIndex, with the columns and dtypes of
        :data:`BLOCK_DTYPES` (see :func:`parse_blocks`); ``attrs`` empty.

    Raises
    ------
    ValueError
        A column is missing or not one it takes (naming them), or the lengths differ.
    """
    given = _given(BLOCK_DTYPES, columns, ("gas_used_ratio", "uncle_count"), "blocks_frame")
    uncles = [tuple(u) for u in given["uncle_hashes"]]
    given["uncle_hashes"] = uncles
    given["uncle_count"] = np.fromiter(map(len, uncles), dtype=np.int64, count=len(uncles))
    given["gas_used_ratio"] = gas_used_ratio(given["gas_used"], given["gas_limit"])
    return _typed_frame(BLOCK_DTYPES, given)


def blocks_frame_from_rows(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """The blocks frame from one mapping per block (a reader that decodes block by block).

    Parameters
    ----------
    rows : iterable of mapping of str to object
        Each block's values under the column names :func:`blocks_frame` takes, as it takes
        them.

    Returns
    -------
    pandas.DataFrame
        :func:`blocks_frame` of the rows' columns, in the order given.

    Raises
    ------
    ValueError
        A row lacks one of the columns (naming it and the row).
    """
    names = [name for name in BLOCK_DTYPES if name not in ("gas_used_ratio", "uncle_count")]
    columns: dict[str, list[Any]] = {name: [] for name in names}
    for position, row in enumerate(rows):
        for name in names:
            if name not in row:
                raise ValueError(f"blocks_frame_from_rows: row {position} has no {name!r}")
            columns[name].append(row[name])
    return blocks_frame(columns)


def _header_columns(items: Sequence[Mapping[str, object]], what: str) -> dict[str, object]:
    """The columns of the header fields the blocks and the uncles frames share, from a
    node's JSON headers."""
    return {
        "hash": _strings(items, "hash", what),
        "miner": _strings(items, "miner", what),
        "difficulty": _hex_exact(items, "difficulty", what),
        "gas_limit": _hex_int64(items, "gasLimit", what),
        "gas_used": _hex_int64(items, "gasUsed", what),
        "timestamp": _hex_int64(items, "timestamp", what),
        "base_fee_wei": _nullable_int64(items, "baseFeePerGas", what),
    }


def parse_blocks(blocks: Iterable[Mapping[str, object]]) -> pd.DataFrame:
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
    _check_not_null(items, "blocks", lambda i: "the node knows no such block")
    what = "blocks"
    # block_number first: it names a block that is not a JSON object
    return _extra_columns(items, blocks_frame({
        "block_number": _hex_int64(items, "number", what),
        **_header_columns(items, what),
        "parent_hash": _strings(items, "parentHash", what),
        "total_difficulty": _optional(items, "totalDifficulty", what)[0],
        "size_bytes": _hex_int64(items, "size", what),
        "transaction_count": [_count(item.get("transactions"), i, what)
                              for i, item in enumerate(items)],
        "uncle_hashes": _field(items, "uncles", what),
        "blob_gas_used": _nullable_int64(items, "blobGasUsed", what),
        "excess_blob_gas": _nullable_int64(items, "excessBlobGas", what),
    }))  # fmt: skip


def parse_header_fields(blocks: Iterable[Mapping[str, object]]) -> pd.DataFrame:
    """Every header field of every block, through Amsterdam, and whether its hash checks.

    :func:`parse_blocks` keeps what the fee analysis reads; this keeps the whole header: the
    yellow paper's fields, London's base fee, Shanghai's withdrawals root, Cancun's blob
    fields and beacon root, Prague's requests hash, Amsterdam's block access list hash
    (EIP-7928) and slot number (EIP-7843), and any field feeslab does not know.

    Parameters
    ----------
    blocks : iterable of dict
        ``eth_getBlockByNumber`` / ``eth_getBlockByHash`` (or ``eth_getUncleBy*``) results.

    Returns
    -------
    pandas.DataFrame
        One row per block, RangeIndex, the columns of :data:`HEADER_FIELD_DTYPES`: 0x hex
        ``str`` for byte fields as served (``object``, None before the fork, for the
        optional ones), ``int64``/``Int64`` [gas] or [wei] for quantities, ``difficulty``
        exact (object), ``timestamp`` UTC, and ``hash_verified`` (bool):
        ``keccak256(rlp(header)) == hash`` with the fields as served
        (:func:`feeslab.protocol.headers.header_hash`). A field feeslab does not know becomes one
        more column (its snake_case name, ``str`` as served), named in
        ``attrs["extra_header_fields"]``, with a warning once per field.

    Raises
    ------
    ValueError
        A null block, a missing required field, or one that is not hex.
    """
    items = _as_list(blocks, "blocks")
    _check_not_null(items, "blocks", lambda i: "the node knows no such block")
    what = "blocks"
    columns: dict[str, object] = {
        "block_number": _hex_int64(items, "number", what),
        "hash": _strings(items, "hash", what),
        **{column: _strings(items, key, what) for key, column in _HEADER_KEYS.items()},
        "difficulty": _hex_exact(items, "difficulty", what),
        "gas_limit": _hex_int64(items, "gasLimit", what),
        "gas_used": _hex_int64(items, "gasUsed", what),
        "timestamp": _hex_int64(items, "timestamp", what),
        **{column: _nullable_int64(items, key, what)
           for key, column in _OPTIONAL_QUANTITIES.items()},
        **{column: [item.get(key) for item in items] for key, column in _OPTIONAL_DATA.items()},
    }  # fmt: skip
    columns["hash_verified"] = np.fromiter(
        (header_hash(item) == item["hash"] for item in items), dtype=bool, count=len(items))
    return _extra_columns(items, _typed_frame(HEADER_FIELD_DTYPES, columns))

"""The watch's frame: the last N blocks of a chain, held column-wise in a ring.

A watch (``feeslab.watch``) keeps one row per block: the header's fields (base fee, gas, blob
gas), the block's blob base fee and tips from ``eth_feeHistory``, whether the row replaced
another block of its number (a reorg) and when the client had the header. Its columns and
dtypes are :data:`WATCH_DTYPES` (then the tips and the two last columns, :func:`watch_dtypes`),
those of ``lab.blocks`` and ``lab.fee_history`` where they share a name.

Pure functions and one container:

* :func:`parse_heads` turns a batch of headers (``newHeads`` notifications or
  ``eth_getBlockByNumber`` results) and the ``eth_feeHistory`` answers covering them into
  columns, one row per header;
* :class:`WatchRing` holds the last ``capacity`` rows in preallocated numpy arrays, one per
  column (exact integers stay int64, with a mask where a value may be absent), appended to at
  the newest end and cut back from a block number (a reorg replaces the rows from there on).
  :meth:`WatchRing.frame` builds the DataFrame from copies of the arrays' slices: reading a
  frame of 10,000 rows costs about 2 ms, where building it from row dicts cost 480 ms
  (``benchmarks/watch.py`` measures it).

Why by hand: a ring of typed numpy columns with a masked integer dtype is a few lines over
numpy, and no maintained library offers one that builds pandas' extension dtypes (``Int64``,
``datetime64[ns, UTC]``, ``str``) from its slices without a round trip through rows.

References
----------
.. [1] Ethereum execution APIs, ``eth_subscribe`` ``newHeads``, ``eth_feeHistory``,
   https://github.com/ethereum/execution-apis
.. [2] EIP-1559 (base fee, gas target = gas limit / elasticity multiplier),
   https://eips.ethereum.org/EIPS/eip-1559
.. [3] EIP-4844 (blob gas, ``GAS_PER_BLOB`` = 2**17), https://eips.ethereum.org/EIPS/eip-4844
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, SupportsInt

import numpy as np
import numpy.typing as npt
import pandas as pd

from feeslab.frames.base_fees import GWEI, parse_fee_history, reward_column
from feeslab.frames.blocks import gas_used_ratio
from feeslab.protocol.blobs import GAS_PER_BLOB

if TYPE_CHECKING:
    from feeslab.protocol.chainspec import ChainSpec

__all__ = ["ELASTICITY_MULTIPLIER", "HASH_CHARS", "TAIL_DTYPES", "WATCH_DTYPES", "WatchRing",
           "parse_heads", "watch_dtypes"]  # fmt: skip

HASH_CHARS = 66
"""Characters of a 32-byte hash as ``0x`` hex: the width a ring holds its ``str`` columns in."""

ELASTICITY_MULTIPLIER = 2
"""EIP-1559's ``ELASTICITY_MULTIPLIER``: the gas target is the gas limit over it [2], for a
chain whose spec feeslab does not know (a known chain's own rule is used: Polygon's percent)."""

#: Columns and dtypes of a watch's frame, in order, before the ``reward_p<pct>_wei`` columns
#: (``Int64`` [wei], ``eth_feeHistory``'s tips at each percentile) and :data:`TAIL_DTYPES`.
#: Names and dtypes are those of ``lab.blocks`` (``BLOCK_DTYPES``) and ``lab.fee_history``
#: (``FEE_HISTORY_DTYPES``) where they share a column.
WATCH_DTYPES: dict[str, str] = {
    "block_number": "int64",
    "hash": "str",
    "parent_hash": "str",
    "timestamp": "datetime64[ns, UTC]",
    "gas_limit": "int64",
    "gas_used": "int64",
    "gas_used_ratio": "float64",
    "gas_target": "int64",
    "gas_target_ratio": "float64",
    "base_fee_wei": "Int64",
    "base_fee_gwei": "float64",
    "base_fee_per_blob_gas_wei": "Int64",
    "blob_gas_used": "Int64",
    "excess_blob_gas": "Int64",
    "blob_count": "Int64",
}

#: The last two columns: ``reorged`` (the row replaced a block of its number that the watch
#: had held) and ``received_at`` (when the client had the header).
TAIL_DTYPES: dict[str, str] = {"reorged": "bool", "received_at": "datetime64[ns, UTC]"}

_Column = npt.NDArray[np.generic]


def watch_dtypes(percentiles: Sequence[float]) -> dict[str, str]:
    """Every column of a watch's frame and its dtype, in order: :data:`WATCH_DTYPES`, a
    ``reward_p<pct>_wei`` (``Int64``) per percentile [%], then :data:`TAIL_DTYPES`."""
    return WATCH_DTYPES | dict.fromkeys(map(reward_column, percentiles), "Int64") | TAIL_DTYPES


def _quantity(value: object) -> int | None:
    """A JSON-RPC quantity as an int; None when absent (a field before its fork)."""
    if value is None:
        return None
    if isinstance(value, str):
        return int(value, 16)
    if isinstance(value, SupportsInt):
        return int(value)
    raise TypeError(f"a quantity must be 0x hex or a number, not {type(value).__name__}")


def _field(headers: Sequence[Mapping[str, object]], name: str) -> list[int | None]:
    return [_quantity(header.get(name)) for header in headers]


def _ints(values: Sequence[int | None]) -> npt.NDArray[np.int64]:
    return np.array([v or 0 for v in values], dtype=np.int64)


def _exact(values: Sequence[int | None]) -> _Column:
    """Exact integers as an object array, None where absent (an ``Int64`` column's values)."""
    column = np.empty(len(values), dtype=object)
    column[:] = values
    return column


def parse_heads(
    headers: Sequence[Mapping[str, object]],
    fee_histories: Sequence[Mapping[str, object]] = (),
    *,
    percentiles: Sequence[float] = (),
    spec: ChainSpec | None = None,
    reorged: Sequence[bool] | None = None,
    received_at_ns: int = 0,
) -> dict[str, _Column]:
    """A batch of headers as the watch's columns, one row per header, in their order.

    Parameters
    ----------
    headers : sequence of dict
        Decoded headers: ``newHeads`` notifications or ``eth_getBlockByNumber`` results
        (``number``, ``hash``, ``parentHash``, ``timestamp``, ``gasLimit``, ``gasUsed``, and
        ``baseFeePerGas``, ``blobGasUsed``, ``excessBlobGas`` from their forks on).
    fee_histories : sequence of dict
        ``eth_feeHistory`` results covering some or all of the blocks: their blob base fee
        [wei] and tips [wei] at ``percentiles``; a block none covers has them absent.
    percentiles : sequence of float
        The tip percentiles of the ``eth_feeHistory`` requests [%].
    spec : ChainSpec, optional
        The chain's rules: the gas target by its EIP-1559 rule at each block; without one
        ``gas_limit // ELASTICITY_MULTIPLIER``.
    reorged : sequence of bool, optional
        Per header, whether it replaced a block the watch held (default none did).
    received_at_ns : int
        When the client had the headers (Unix time) [ns].

    Returns
    -------
    dict of str to numpy.ndarray
        One array per column of :func:`watch_dtypes` ``(percentiles)``: int64, float64 and
        bool columns as such, timestamps as Unix nanoseconds (int64), hashes as ``object``
        arrays of str, ``Int64`` columns as ``object`` arrays of exact ints with None where
        absent (what :meth:`WatchRing.append` takes).
    """
    count = len(headers)
    numbers = np.array(_field(headers, "number"), dtype=np.int64)
    limits = _ints(_field(headers, "gasLimit"))
    used = _ints(_field(headers, "gasUsed"))
    targets = np.array([_gas_target(spec, int(n), int(g)) for n, g in zip(numbers, limits,
                                                                          strict=True)],
                       dtype=np.int64)  # fmt: skip
    base_fees = _field(headers, "baseFeePerGas")
    blob_gas = _field(headers, "blobGasUsed")
    with np.errstate(divide="ignore", invalid="ignore"):
        target_ratio = np.where(targets > 0, used / np.where(targets > 0, targets, 1), np.nan)
    columns: dict[str, _Column] = {
        "block_number": numbers,
        "hash": np.array([str(h["hash"]) for h in headers], dtype=object),
        "parent_hash": np.array([str(h["parentHash"]) for h in headers], dtype=object),
        "timestamp": _ints(_field(headers, "timestamp")) * 10**9,  # [s] -> [ns]
        "gas_limit": limits,
        "gas_used": used,
        "gas_used_ratio": gas_used_ratio(used, limits),
        "gas_target": targets,
        "gas_target_ratio": target_ratio.astype(np.float64),
        "base_fee_wei": _exact(base_fees),
        "base_fee_gwei": np.array([np.nan if v is None else v / GWEI for v in base_fees]),
        "base_fee_per_blob_gas_wei": _exact([None] * count),
        "blob_gas_used": _exact(blob_gas),
        "excess_blob_gas": _exact(_field(headers, "excessBlobGas")),
        "blob_count": _exact([None if v is None else v // GAS_PER_BLOB for v in blob_gas]),
    }
    rewards = [reward_column(p) for p in percentiles]
    for name in rewards:
        columns[name] = _exact([None] * count)
    _add_fees(columns, fee_histories, percentiles, rewards)
    columns["reorged"] = np.zeros(count, dtype=bool) if reorged is None else np.array(
        reorged, dtype=bool)  # fmt: skip
    columns["received_at"] = np.full(count, received_at_ns, dtype=np.int64)
    return columns


def _gas_target(spec: ChainSpec | None, number: int, gas_limit: int) -> int:
    rule = None if spec is None else spec.eip1559_rule_at(number)
    return gas_limit // ELASTICITY_MULTIPLIER if rule is None else rule.gas_target(gas_limit)


def _add_fees(columns: dict[str, _Column], fee_histories: Sequence[Mapping[str, object]],
              percentiles: Sequence[float], rewards: Sequence[str]) -> None:  # fmt: skip
    """The blob base fee and the tips of the blocks ``fee_histories`` cover, in place."""
    where = {int(n): i for i, n in enumerate(columns["block_number"])}
    for result in fee_histories:
        history = parse_fee_history(result, percentiles=percentiles).iloc[:-1]  # the next block
        rows = [where.get(int(n), -1) for n in history["block_number"]]
        held = [i for i, row in enumerate(rows) if row >= 0]
        if not held:
            continue
        targets = [rows[i] for i in held]
        for name in ("base_fee_per_blob_gas_wei", *rewards):
            if name in history:
                values = history[name].to_numpy(dtype=object, na_value=None)
                columns[name][targets] = values[held]


class WatchRing:
    """The last ``capacity`` rows of a watch, one preallocated numpy array per column.

    Rows are appended at the newest end in block order; beyond ``capacity`` the oldest are
    overwritten. :meth:`cut_from` drops the rows from a block number on (the blocks a reorg
    replaced), so that the new branch's rows follow. Not thread-safe: the watch holds a lock
    around every call.

    Parameters
    ----------
    capacity : int
        Rows held at most [blocks].
    dtypes : mapping of str to str
        Every column and its dtype (:func:`watch_dtypes`): ``int64``, ``float64``, ``bool``,
        ``Int64`` (int64 values and a mask of the absent ones), ``datetime64[ns, UTC]`` (Unix
        nanoseconds) or ``str``: a 32-byte hash as ``0x`` hex (held as its
        :data:`HASH_CHARS` ASCII bytes, fixed width, so that the frame is built by one Arrow
        cast rather than from a Python object per row). ``block_number`` must be one,
        ascending.
    """

    def __init__(self, capacity: int, dtypes: Mapping[str, str]) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1 row, not {capacity!r}")
        self.capacity = capacity
        self.dtypes = dict(dtypes)
        self._values: dict[str, _Column] = {}
        self._masks: dict[str, npt.NDArray[np.bool_]] = {}
        for name, dtype in self.dtypes.items():
            self._values[name] = np.empty(capacity, dtype=_STORAGE[dtype])
            if dtype == "Int64":
                self._masks[name] = np.ones(capacity, dtype=bool)
        self._start = 0  # where the oldest row is
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def _order(self, first: int = 0) -> npt.NDArray[np.intp]:
        """The positions of rows ``first`` .. the newest, oldest first."""
        return (self._start + np.arange(first, self._size)) % self.capacity

    def _slice(self, array: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
        """A copy of ``array``'s rows, oldest first (one or two slices: the ring may wrap)."""
        end = self._start + self._size
        if end <= self.capacity:
            return array[self._start:end].copy()
        return np.concatenate((array[self._start:], array[:end - self.capacity]))

    @property
    def block_numbers(self) -> npt.NDArray[np.int64]:
        """The rows' block numbers, oldest first (a copy)."""
        return self._slice(self._values["block_number"]).astype(np.int64, copy=False)

    def append(self, columns: Mapping[str, Sequence[object] | npt.NDArray[np.generic]]) -> None:
        """Add rows at the newest end: one array (or list) per column of ``dtypes``, all of
        one length, in :func:`parse_heads`' form (``Int64`` values None where absent)."""
        count = len(columns["block_number"])
        if count == 0:
            return
        skip = max(0, count - self.capacity)  # more than the ring holds: the newest
        kept = count - skip
        given = {name: np.asarray(columns[name])[skip:] for name in self.dtypes}
        absent: dict[str, npt.NDArray[np.bool_]] = {}
        for name, dtype in self.dtypes.items():  # every value checked before any is written
            if len(given[name]) != kept:
                raise ValueError(f"column {name} has {len(given[name]) + skip} values, "
                                 f"block_number {count}")  # fmt: skip
            if dtype == "str":
                given[name] = _hashes(given[name], name)
            elif dtype == "Int64":
                objects = given[name].astype(object, copy=False)
                absent[name] = np.array([v is None or v is pd.NA for v in objects], dtype=bool)
                given[name] = np.where(absent[name], 0, objects).astype(np.int64)
        positions = (self._start + self._size + np.arange(kept)) % self.capacity
        for name, values in given.items():
            self._values[name][positions] = values
            if name in absent:
                self._masks[name][positions] = absent[name]
        overflow = max(0, self._size + kept - self.capacity)
        self._start = (self._start + overflow) % self.capacity
        self._size = min(self.capacity, self._size + kept)

    def cut_from(self, block_number: int) -> int:
        """Drop the rows of ``block_number`` and after (a reorg replaces them); how many."""
        numbers = self.block_numbers
        keep = int(np.searchsorted(numbers, block_number, side="left"))
        dropped = self._size - keep
        self._size = keep
        if keep == 0:
            self._start = 0
        return dropped

    def frame(self) -> pd.DataFrame:
        """The rows held, oldest first, as a DataFrame of ``dtypes`` (built from copies of the
        arrays: later rows do not change it); ``attrs`` empty."""
        import pyarrow as pa  # loaded by pandas' str dtype anyway; not at import

        columns: dict[str, object] = {}
        for name, dtype in self.dtypes.items():
            values = self._slice(self._values[name])
            if dtype == "Int64":
                columns[name] = pd.arrays.IntegerArray(values.astype(np.int64, copy=False),
                                                       self._slice(self._masks[name]))  # fmt: skip
            elif dtype == "datetime64[ns, UTC]":
                columns[name] = pd.DatetimeIndex(values.view("M8[ns]")).tz_localize("UTC")
            elif dtype == "str":  # one Arrow cast of the fixed-width bytes: 0.2 ms for 10,000
                # (pandas' own check of 10,000 str objects read over time took 1 to 6 ms)
                text = pa.array(values, type=pa.binary(HASH_CHARS)).cast(pa.large_string())
                columns[name] = pd.array(text, dtype="str")
            else:
                columns[name] = values
        return pd.DataFrame(columns, copy=False)


# how each dtype is held in the ring
_STORAGE: dict[str, npt.DTypeLike] = {
    "int64": np.int64,
    "float64": np.float64,
    "bool": np.bool_,
    "Int64": np.int64,
    "datetime64[ns, UTC]": np.int64,
    "str": f"S{HASH_CHARS}",
}


def _hashes(values: npt.NDArray[np.generic], name: str) -> npt.NDArray[np.bytes_]:
    """``0x`` hex hashes as fixed-width ASCII bytes; ValueError for another value (numpy
    would cut a longer one silently)."""
    encoded = [str(v).encode("ascii") for v in values]
    if any(len(v) != HASH_CHARS for v in encoded):
        wrong = next(v for v in encoded if len(v) != HASH_CHARS)
        raise ValueError(f"{name} must hold 32-byte hashes as 0x hex ({HASH_CHARS} "
                         f"characters), not {wrong.decode(errors='replace')!r}")  # fmt: skip
    return np.array(encoded, dtype=f"S{HASH_CHARS}")

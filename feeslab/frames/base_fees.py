"""Base fees as frames: the Gas API's ``baseFeeHistory``, ``eth_feeHistory``, and stitching.

Pure functions on decoded JSON. Wei amounts are exact: base fees, blob base fees and
priority-fee rewards are held as int64 (exact up to 2**63 - 1 wei, about 9.2 billion gwei;
a larger value raises ``ValueError`` rather than losing digits), and gwei as float64 for
plotting.

References
----------
.. [1] EIP-1559: Fee market change for ETH 1.0 chain, https://eips.ethereum.org/EIPS/eip-1559
.. [2] Ethereum execution APIs, ``eth_feeHistory``, https://github.com/ethereum/execution-apis
.. [3] MetaMask/Infura Gas API, ``GET /networks/{chainId}/baseFeeHistory``: base fees of the
   last 500 blocks, oldest first, as decimal gwei strings.
.. [4] EIP-4844: Shard Blob Transactions (``baseFeePerBlobGas``, ``blobGasUsedRatio``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from feeslab.frames.blocks import INT64_MAX, _empty, _given, _int64, _quantity, _typed_frame

__all__ = [
    "BASE_FEE_DTYPES",
    "FEE_HISTORY_DTYPES",
    "fee_history_frame",
    "parse_base_fee_history",
    "parse_fee_history",
    "reward_column",
    "stitch_base_fee_snapshots",
]

GWEI = 10**9
_GWEI_DECIMALS = 9

#: Columns and dtypes of :func:`parse_base_fee_history` with ``newest_block`` given, in order
#: (without it, ``block_number`` is left out).
BASE_FEE_DTYPES: dict[str, str] = {
    "block_number": "int64",
    "base_fee_wei": "int64",
    "base_fee_gwei": "float64",
}

#: Columns and dtypes of :func:`parse_fee_history`, before the ``reward_p<pct>_wei`` columns.
FEE_HISTORY_DTYPES: dict[str, str] = {
    "block_number": "int64",
    "base_fee_wei": "int64",
    "base_fee_gwei": "float64",
    "gas_used_ratio": "float64",
    "base_fee_per_blob_gas_wei": "Int64",
    "blob_gas_used_ratio": "float64",
}

_MAX_VECTOR_INT_DIGITS = 10  # 10 integer digits + 9 decimals < 10**19 < 2**64: no uint64 overflow


def _gwei_strings_to_wei(values: list[Any]) -> np.ndarray:
    """Decimal gwei strings (``"14.585610312"``) to exact int64 wei, vectorised.

    The strings become a fixed-width byte matrix (one row per string, NUL-padded). Each
    row's digits, dot skipped, are read as one integer by Horner's rule column by column in
    uint64 (the value times ``10**decimals``), then scaled by ``10**(9 - decimals)``. No float
    is involved. Rows with more than 10 integer digits (leading zeros, or beyond int64 wei)
    are read with Python ints instead.
    """
    n = len(values)
    if not all(type(v) is str for v in values):
        i = next((i for i, v in enumerate(values) if not isinstance(v, str)), None)
        if i is not None:
            raise TypeError(f"values[{i}] must be a str, not {type(values[i]).__name__}")
    try:
        packed = np.array(values, dtype=np.bytes_)
    except UnicodeEncodeError:
        i = next(i for i, v in enumerate(values) if not v.isascii())
        raise ValueError(f"values[{i}] = {values[i]!r} is not a decimal gwei string") from None

    def bad(i: int, why: str) -> ValueError:
        return ValueError(f"values[{i}] = {values[i]!r} is not a decimal gwei string: {why}")

    width = packed.dtype.itemsize
    if width == 0:  # every string is empty
        raise bad(0, "it is empty")
    matrix = packed.view(np.uint8).reshape(n, width)
    digit = matrix - np.uint8(ord("0"))  # wraps for non-digits: then >= 10
    is_digit = digit < 10
    is_dot = matrix == ord(".")
    is_pad = matrix == 0
    invalid = ~(is_digit | is_dot | is_pad).all(axis=1)
    invalid |= (is_pad[:, :-1] & ~is_pad[:, 1:]).any(axis=1)  # NUL inside a string
    if invalid.any():
        raise bad(int(np.flatnonzero(invalid)[0]), "only digits and one dot are allowed")
    length = width - is_pad.sum(axis=1)
    if (length == 0).any():
        raise bad(int(np.flatnonzero(length == 0)[0]), "it is empty")
    dots = is_dot.sum(axis=1)
    if (dots > 1).any():
        raise bad(int(np.flatnonzero(dots > 1)[0]), "more than one dot")
    point = np.where(dots == 1, is_dot.argmax(axis=1), length)
    edge = (point == 0) | (point == length - 1)
    if edge.any():
        raise bad(int(np.flatnonzero(edge)[0]), "a dot needs digits on both sides")
    decimals = np.where(dots == 1, length - point - 1, 0)
    if (decimals > 9).any():
        raise bad(int(np.flatnonzero(decimals > 9)[0]), "finer than 1 wei (over 9 decimals)")

    wide = point > _MAX_VECTOR_INT_DIGITS
    acc = np.zeros(n, dtype=np.uint64)
    ten = np.uint64(10)
    for column in range(width):
        take = is_digit[:, column]
        acc = np.where(take, acc * ten + digit[:, column], acc)
    wei = acc * (10 ** (9 - decimals)).astype(np.uint64)  # < 10**19: no wrap
    too_large = (wei > INT64_MAX) & ~wide
    if too_large.any():
        raise bad(int(np.flatnonzero(too_large)[0]), "too large for int64 wei")
    result = wei.astype(np.int64)
    for row in np.flatnonzero(wide).tolist():  # rare: exact Python ints
        whole, _, frac = values[row].partition(".")
        exact = int(whole) * 10**9 + int(frac.ljust(9, "0") or "0")
        if exact > INT64_MAX:
            raise bad(row, "too large for int64 wei")
        result[row] = exact
    return result


def parse_base_fee_history(
    values: Sequence[str], *, newest_block: int | None = None
) -> pd.DataFrame:
    """The Gas API's ``baseFeeHistory``: decimal gwei strings to exact wei.

    Each string (``"14.585610312"``) is split at its dot and read as integers, never through
    a float: ``"14.585610312"`` -> 14,585,610,312 wei. Vectorised with numpy (about 0.3 s
    for a million strings; see ``benchmarks/frames.py``).

    Parameters
    ----------
    values : sequence of str
        Base fees, oldest first [gwei], as decimal strings with at most 9 decimals
        (``"14"``, ``"14.5"`` and ``"14.585610312"`` are all accepted).
    newest_block : int, optional
        Number of the block the last value belongs to. The values are taken to be
        consecutive blocks ending there (the Gas API leaves pre-London blocks out, so this
        holds only for a window wholly after London).

    Returns
    -------
    pandas.DataFrame
        One row per value, oldest first, columns (dtype):

        ``block_number`` (int64)
            Only when ``newest_block`` is given: ``newest_block - len(values) + 1`` up to
            ``newest_block``. Without it the RangeIndex (0 = oldest) is the only position.
        ``base_fee_wei`` (int64) [wei]
            Exact.
        ``base_fee_gwei`` (float64) [gwei]
            ``base_fee_wei / 1e9``, for plotting.

    Raises
    ------
    TypeError
        A value is not a str.
    ValueError
        A value is not a plain decimal (sign, exponent, spaces, more than 9 decimals, or
        beyond int64 wei), naming the first such value; or ``newest_block`` is too small for
        the number of values.

    References
    ----------
    .. [1] MetaMask/Infura Gas API, ``baseFeeHistory``.
    .. [2] EIP-1559.
    """
    if isinstance(values, str | bytes | Mapping):
        raise TypeError("values must be a list of decimal gwei strings")
    items = values.tolist() if isinstance(values, pd.Series | np.ndarray) else list(values)
    wei = _gwei_strings_to_wei(items) if items else np.empty(0, dtype=np.int64)
    columns: dict[str, object] = {}
    if newest_block is not None:
        newest = _quantity(newest_block, "newest_block")
        if newest + 1 < len(items):
            raise ValueError(
                f"newest_block {newest} is too small for {len(items)} values (would reach "
                "before genesis)"
            )
        columns["block_number"] = np.arange(newest - len(items) + 1, newest + 1, dtype=np.int64)
    columns["base_fee_wei"] = wei
    columns["base_fee_gwei"] = wei / GWEI
    return pd.DataFrame(columns)


def reward_column(percentile: float) -> str:
    """Column name of a reward percentile: 10 -> ``"reward_p10_wei"``, 2.5 -> ``"reward_p2_5_wei"``.

    Parameters
    ----------
    percentile : float
        A percentile in 0..100, as requested from ``eth_feeHistory``.

    Returns
    -------
    str
    """
    value = float(percentile)
    if not 0 <= value <= 100:
        raise ValueError(f"percentile must be in 0..100, got {percentile!r}")
    text = repr(value) if value != int(value) else str(int(value))
    return f"reward_p{text.replace('.', '_')}_wei"


def _reward_names(percentiles: Sequence[float]) -> list[str]:
    """The reward columns of ``percentiles``, in their order; they must be distinct."""
    names = [reward_column(p) for p in percentiles]
    if len(set(names)) != len(names):
        raise ValueError(f"percentiles must be distinct, got {list(percentiles)}")
    return names


def fee_history_frame(
    columns: Mapping[str, object] | pd.DataFrame, percentiles: Sequence[float] = ()
) -> pd.DataFrame:
    """The fee-history frame (:func:`parse_fee_history`' columns and dtypes) from its columns.

    The one place the frame is made, whatever the source: :func:`parse_fee_history` gives it
    a node's ``eth_feeHistory`` answer as columns, ``feeslab.sources.era1`` what it reads of
    headers, bodies and receipts.

    Parameters
    ----------
    columns : mapping of str to array-like, or DataFrame
        One array or list per column of :data:`FEE_HISTORY_DTYPES` but ``base_fee_gwei``,
        which is computed (``base_fee_wei / 1e9``), and one per percentile named by
        :func:`reward_column`; all of one length. ``base_fee_per_blob_gas_wei`` and the
        rewards as integers with None (or ``<NA>``) where absent.
    percentiles : sequence of float, optional
        The reward percentiles, in the order of their columns (none by default).

    Returns
    -------
    pandas.DataFrame
        One row per block, in the order given, RangeIndex, with the columns and dtypes of
        :data:`FEE_HISTORY_DTYPES` and then ``reward_p<pct>_wei`` (Int64) per percentile (see
        :func:`parse_fee_history`); ``attrs`` empty.

    Raises
    ------
    ValueError
        A column is missing or not one it takes (naming them), the lengths differ, or two
        percentiles name one column.
    """
    dtypes = FEE_HISTORY_DTYPES | dict.fromkeys(_reward_names(percentiles), "Int64")
    given = _given(dtypes, columns, ("base_fee_gwei",), "fee_history_frame")
    wei = np.asarray(given["base_fee_wei"], dtype=np.int64)
    given["base_fee_wei"] = wei
    given["base_fee_gwei"] = wei / GWEI
    return _typed_frame(dtypes, given)


def _hex_list(values: object, key: str) -> list[int]:
    if not isinstance(values, list):
        raise ValueError(f"result[{key!r}] must be a list, got {type(values).__name__}")
    return [_quantity(v, f"result[{key!r}][{i}]") for i, v in enumerate(values)]


# hex digit values by byte; 255: not a hex digit
_HEX_DIGIT = np.full(256, 255, dtype=np.uint8)
_HEX_DIGIT[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10)
_HEX_DIGIT[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16)
_HEX_DIGIT[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16)
_INT64_HEX_WIDTH = 18  # "0x" and 16 digits


def _hex_int64_vector(values: list[object]) -> np.ndarray | None:
    """``"0x..."`` quantities to int64, vectorised (a byte matrix read column by column);
    None when any value is not a plain 0x quantity within int64, for the checked path."""
    if not values:
        return np.zeros(0, dtype=np.int64)
    try:
        packed = np.array(values, dtype=np.bytes_)
    except (UnicodeEncodeError, TypeError, ValueError):
        return None
    width = packed.dtype.itemsize
    if packed.ndim != 1 or not 3 <= width <= _INT64_HEX_WIDTH:
        return None
    matrix = packed.view(np.uint8).reshape(len(values), width)
    digits = _HEX_DIGIT[matrix[:, 2:]]
    pad = matrix[:, 2:] == 0
    good = (matrix[:, 0] == ord("0")) & ((matrix[:, 1] == ord("x")) | (matrix[:, 1] == ord("X")))
    good &= ~pad[:, 0] & ((digits < 16) | pad).all(axis=1)
    good &= ~(pad[:, :-1] & ~pad[:, 1:]).any(axis=1)  # padding only at the end
    if not good.all():
        return None
    acc = np.zeros(len(values), dtype=np.uint64)
    for column in range(width - 2):
        acc = np.where(pad[:, column], acc, (acc << np.uint64(4)) | digits[:, column])
    if (acc > INT64_MAX).any():
        return None
    return acc.astype(np.int64)


def _hex_int64_list(values: object, key: str) -> np.ndarray:
    """``result[key]``'s quantities as int64: vectorised, else checked one by one (naming
    the first bad value)."""
    fast = _hex_int64_vector(values) if isinstance(values, list) else None
    if fast is not None:
        return fast
    return _int64(_hex_list(values, key), key, "result")


def _ratios(values: object, key: str) -> np.ndarray:
    if not isinstance(values, list) or not set(map(type, values)) <= {int, float}:
        raise ValueError(f"result[{key!r}] must be a list of numbers")
    return np.array(values, dtype=np.float64)


def parse_fee_history(
    result: Mapping[str, object], *, percentiles: Sequence[float] | None = None
) -> pd.DataFrame:
    """``eth_feeHistory``'s result as one row per block.

    Parameters
    ----------
    result : dict
        The decoded result: ``oldestBlock``, ``baseFeePerGas`` (n + 1 values: the n blocks
        and the block after the newest), ``gasUsedRatio`` (n), optionally ``reward`` (n rows
        of one tip per requested percentile), ``baseFeePerBlobGas`` (n + 1) and
        ``blobGasUsedRatio`` (n).
    percentiles : sequence of float, optional
        The reward percentiles of the request, which the result does not repeat; needed to
        name the reward columns when ``reward`` is present.

    Returns
    -------
    pandas.DataFrame
        n + 1 rows, oldest first, RangeIndex, columns (dtype):

        ``block_number`` (int64)
            ``oldestBlock`` .. ``oldestBlock + n``. The last row is the block after the
            newest one: its base fee is the protocol's next base fee, and it has no gas
            ratio or rewards yet.
        ``base_fee_wei`` (int64) [wei]
            Exact (nodes answer 0 for blocks before London).
        ``base_fee_gwei`` (float64) [gwei]
        ``gas_used_ratio`` (float64)
            ``gasUsed / gasLimit``; NaN in the last row.
        ``base_fee_per_blob_gas_wei`` (Int64, nullable) [wei]
            ``<NA>`` when the node sends none (before Cancun or an older node).
        ``blob_gas_used_ratio`` (float64)
            NaN where absent and in the last row.
        ``reward_p<pct>_wei`` (Int64, nullable) [wei]
            One per percentile (see :func:`reward_column`): the effective priority fee at
            that percentile of the block's gas; ``<NA>`` in the last row.

        The empty answer (``blockCount`` 0: no ``baseFeePerGas``) gives an empty frame with
        these dtypes.

    References
    ----------
    .. [1] Ethereum execution APIs, ``eth_feeHistory``.
    .. [2] EIP-1559; EIP-4844 (blob fields).
    """
    if not isinstance(result, Mapping):
        raise TypeError(f"result must be eth_feeHistory's result (a dict), not "
                        f"{type(result).__name__}")
    names = _reward_names(percentiles or ())
    fees = result.get("baseFeePerGas")
    if not fees:  # blockCount 0: {"oldestBlock": "0x0", "gasUsedRatio": null}
        no_rows: dict[str, list[object]] = {
            name: [] for name in [*FEE_HISTORY_DTYPES, *names] if name != "base_fee_gwei"}
        return fee_history_frame(no_rows, percentiles or ())
    oldest = _quantity(result.get("oldestBlock"), "result['oldestBlock']")
    base = _hex_int64_list(fees, "baseFeePerGas")
    count = len(base) - 1
    ratio = _ratios(result.get("gasUsedRatio"), "gasUsedRatio")
    if len(ratio) != count:
        raise ValueError(
            f"result has {len(base)} baseFeePerGas values but {len(ratio)} gasUsedRatio "
            f"values; expected {len(base)} = {len(ratio)} + 1"
        )
    columns: dict[str, object] = {
        "block_number": np.arange(oldest, oldest + count + 1, dtype=np.int64),
        "base_fee_wei": base,
        "gas_used_ratio": np.append(ratio, np.nan),
    }
    blob_fees = result.get("baseFeePerBlobGas")
    if blob_fees is None:
        columns["base_fee_per_blob_gas_wei"] = [None] * (count + 1)
    else:
        blob = _hex_int64_list(blob_fees, "baseFeePerBlobGas")
        if len(blob) != count + 1:
            raise ValueError(f"result has {len(blob)} baseFeePerBlobGas values, expected "
                             f"{count + 1}")
        columns["base_fee_per_blob_gas_wei"] = blob
    blob_ratio = result.get("blobGasUsedRatio")
    if blob_ratio is None:
        columns["blob_gas_used_ratio"] = np.full(count + 1, np.nan)
    else:
        values = _ratios(blob_ratio, "blobGasUsedRatio")
        if len(values) != count:
            raise ValueError(f"result has {len(values)} blobGasUsedRatio values, expected {count}")
        columns["blob_gas_used_ratio"] = np.append(values, np.nan)
    rewards = result.get("reward")
    if rewards is None:
        if names:
            raise ValueError(f"percentiles {list(percentiles or [])} given but result has no "
                             "'reward'")
        return fee_history_frame(columns)
    if percentiles is None:
        raise ValueError("result has 'reward': pass the request's percentiles to name them")
    if not isinstance(rewards, list) or len(rewards) != count:
        raise ValueError(f"result['reward'] must hold {count} rows, one per block")
    for i, row in enumerate(rewards):
        if type(row) is not list or len(row) != len(names):
            raise ValueError(
                f"result['reward'][{i}] must hold {len(names)} values, one per percentile"
            )
    table = _hex_int64_vector(list(itertools.chain.from_iterable(rewards)))
    mask = np.zeros(count + 1, dtype=bool)
    mask[-1] = True  # the block after the newest has no rewards yet
    for j, name in enumerate(names):
        if table is not None:
            column = table[j :: len(names)]
        else:
            column = _int64([_quantity(row[j], f"result['reward'][{i}][{j}]")
                             for i, row in enumerate(rewards)], f"reward[..][{j}]", "result")
        columns[name] = pd.arrays.IntegerArray(np.append(column, 0), mask)
    return fee_history_frame(columns, percentiles)


def stitch_base_fee_snapshots(frames: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """Merge overlapping base-fee frames into one row per block, checking that they agree.

    Parameters
    ----------
    frames : iterable of DataFrame
        Frames with ``block_number`` and ``base_fee_wei`` columns, e.g. successive
        :func:`parse_base_fee_history` snapshots (with ``newest_block``) or
        :func:`parse_fee_history` frames, in the order they were taken.

    Returns
    -------
    pandas.DataFrame
        One row per block number, sorted, RangeIndex, with the union of the frames' columns
        (dtypes kept where every frame has the same). Where several frames have a block,
        each column takes the last non-null value in frame order (so a later snapshot fills
        the gas ratio an earlier ``eth_feeHistory`` left NaN for its next block). Gaps
        between snapshots are not filled. No frames give an empty frame with
        ``block_number`` (int64), ``base_fee_wei`` (int64) and ``base_fee_gwei`` (float64).

    Raises
    ------
    ValueError
        When two frames give different ``base_fee_wei`` for a block (naming the first such
        block and both values), or a frame lacks ``block_number`` (parse with
        ``newest_block``) or repeats a block.

    References
    ----------
    .. [1] EIP-1559: a block's base fee is fixed by its parent, so every snapshot must agree.
    """
    items = list(frames)
    if not items:
        return _empty(BASE_FEE_DTYPES)
    for k, frame in enumerate(items):
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"frames[{k}] must be a DataFrame, not {type(frame).__name__}")
        missing = {"block_number", "base_fee_wei"} - set(frame.columns)
        if missing:
            hint = (
                " (parse_base_fee_history needs newest_block)" if "block_number" in missing else ""
            )
            raise ValueError(f"frames[{k}] lacks {sorted(missing)}{hint}")
        if frame["block_number"].duplicated().any():
            block = frame["block_number"][frame["block_number"].duplicated()].iloc[0]
            raise ValueError(f"frames[{k}] has block {block} more than once")
    said = {
        (f.attrs.get("chain_id"), f.attrs.get("chain_spec")): f.attrs for f in items if f.attrs
    }
    if len(said) > 1:  # snapshots of two chains (or two specs of one) would stitch into nonsense
        from feeslab.errors import ChainSpecConflict

        raise ChainSpecConflict(f"the snapshots are of different chains: {sorted(said, key=str)}")
    combined = pd.concat(
        [f.assign(_snapshot=k) for k, f in enumerate(items)], ignore_index=True, sort=False
    )
    fees = combined.groupby("block_number", sort=True)["base_fee_wei"]
    low, high = fees.min(), fees.max()
    conflicts = low.index[(low != high).to_numpy()]
    if len(conflicts):
        block = conflicts[0]
        rows = combined[combined["block_number"] == block]
        seen = ", ".join(
            f"frames[{s}]: {fee}"
            for s, fee in zip(rows["_snapshot"], rows["base_fee_wei"], strict=True)
        )
        raise ValueError(f"snapshots disagree on the base fee of block {block} [wei]: {seen}")
    stitched = (
        combined.sort_values(["block_number", "_snapshot"], kind="stable")
        .groupby("block_number", sort=True, as_index=False)
        .last()
        .drop(columns="_snapshot")
    )
    stitched = stitched.reset_index(drop=True)
    stitched.attrs = dict(next(iter(said.values()), {}))  # the chain they all say
    return stitched

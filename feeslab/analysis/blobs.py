"""Blob fees (EIP-4844): the blob base fee rule, usage from fees alone, regimes, burn.

Pure functions on frames shaped like :mod:`feeslab.frames` returns them: ``Lab.blocks``
(``blob_gas_used``, ``excess_blob_gas`` [gas], ``base_fee_wei``, ``gas_used``, ``timestamp``)
and ``Lab.fee_history`` (``base_fee_per_blob_gas_wei``, ``blob_gas_used_ratio``). Wei stays
exact: int64 where it provably fits, Python ints otherwise; no float touches a fee.

The rules, with each block's own fork's parameters (the chain spec's
:attr:`~feeslab.protocol.chainspec.ChainSpec.blob_schedule`, from ``data/chains.json``; each fork
starts at a timestamp, or at a block number on chains whose spec counts blocks)::

    blob_base_fee  = fake_exponential(1, excess_blob_gas, update_fraction)
    child excess   = max(0, excess + used - target * 2**17)          (EIP-4844)
    from Osaka, if 2**13 * base_fee > 2**17 * blob_base_fee(excess):  (EIP-7918)
        child excess = excess + used * (max - target) // max

A block's blob base fee uses its own fork's update fraction; its excess is computed from the
parent with the *child's* fork's target and max (go-ethereum ``CalcExcessBlobGas``), so at
Prague the first block's fee fell by the factor ``e ** (excess / 3,338,477 - excess /
5,007,716)``.

References
----------
.. [1] EIP-4844: Shard Blob Transactions, https://eips.ethereum.org/EIPS/eip-4844
.. [2] EIP-7691: Blob throughput increase; EIP-7892: Blob Parameter Only Hardforks.
.. [3] EIP-7918: Blob base fee bounded by execution cost.
.. [4] ethereum/go-ethereum ``consensus/misc/eip4844/eip4844.go``.
.. [5] EIP-1559 (the execution base fee burn); EIP-3675 (no block reward after the merge).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

import numpy as np
import pandas as pd

from feeslab.analysis._exact import Ints, exact_ints, exact_series, scalar_ints
from feeslab.analysis._spec import takes_spec
from feeslab.protocol import blobs as blob_rules
from feeslab.protocol.blobs import (
    BLOB_BASE_COST,
    GAS_PER_BLOB,
    MIN_BASE_FEE_PER_BLOB_GAS,
    BlobRule,
    blob_base_fee_array,
)
from feeslab.protocol.chainspec import ChainSpec

__all__ = [
    "BLOB_REGIMES",
    "BLOB_STATES",
    "EXCESS_BRANCHES",
    "blob_base_fee",
    "blob_base_fees",
    "blob_fee_regimes",
    "blob_fork_summary",
    "blob_forks",
    "blob_market_by_period",
    "blob_parameters",
    "blob_states",
    "branch_shares_by_period",
    "burn_by_day",
    "excess_branches",
    "fee_burn",
    "infer_blob_usage",
    "next_blob_base_fees",
    "next_excess_blob_gas",
    "reserve_price",
]

#: Categories of :func:`blob_states`, in order.
BLOB_STATES: tuple[str, ...] = ("empty", "below_target", "above_target", "full", "unclear")
#: Categories of :func:`blob_fee_regimes`, in order.
BLOB_REGIMES: tuple[str, ...] = ("floor", "calm", "volatile", "rising", "falling")
_SLOT_S = 12  # a child's timestamp when the frame has no next row (one slot later)
_INT64_SAFE = 2**61  # products below this stay exact in int64 with a 4x margin
# fake_exponential truncates each Taylor term, so it lies below e**x by up to 1 wei plus a
# relative 1.6e-9 (measured over excess up to 4,000 blobs for the four mainnet fractions):
# the true e**x is in [fee, (fee + 1) * _TAYLOR]
_TAYLOR = 1 + 1e-8


# -- input handling ------------------------------------------------------------------------------


def _ints(values: Ints, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Exact non-negative integers as (int64 or object array, missing mask)."""
    array, missing = exact_ints(values, name)
    if array.dtype == object:
        negative = np.array([int(v) < 0 for v in array], dtype=bool)
    else:
        negative = array < 0
    if (negative & ~missing).any():
        i = int(np.flatnonzero(negative & ~missing)[0])
        raise ValueError(f"{name}[{i}] is negative")
    return array, missing


def _series_result(
    values: np.ndarray, missing: np.ndarray, index: pd.Index, name: str
) -> pd.Series:
    return exact_series(values, missing, index, name)


# -- the rules, scalar or vectorised ---------------------------------------------------------------


@overload
def blob_base_fee(excess_blob_gas: int, update_fraction: int) -> int: ...


@overload
def blob_base_fee(excess_blob_gas: Ints, update_fraction: Ints) -> pd.Series: ...


def blob_base_fee(excess_blob_gas: Ints, update_fraction: Ints) -> int | pd.Series:
    """The blob base fee of a block with ``excess_blob_gas`` [wei per blob gas].

    Parameters
    ----------
    excess_blob_gas : int or array-like of int
        The block's ``excessBlobGas`` [gas].
    update_fraction : int or array-like of int
        The block's own fork's ``BLOB_BASE_FEE_UPDATE_FRACTION`` (3,338,477 Cancun; 5,007,716
        Prague and Osaka; 8,346,193 BPO1; 11,684,671 BPO2).

    Returns
    -------
    int or pandas.Series
        ``fake_exponential(1, excess, fraction)``: an int for scalars, else a Series
        ``blob_base_fee_wei`` (int64, Int64 with gaps, Python ints beyond int64).

    References
    ----------
    .. [1] EIP-4844, Specification: ``get_base_fee_per_blob_gas``, ``fake_exponential``.

    Examples
    --------
    >>> blob_base_fee(0, 3_338_477)
    1
    >>> blob_base_fee(50_462_720, 5_007_716)  # mainnet block 22,431,084, Prague's first
    23789
    """
    scalars = scalar_ints(excess_blob_gas, update_fraction)
    if scalars is not None:
        if isinstance(excess_blob_gas, bool) or scalars[0] < 0:
            raise ValueError(f"excess_blob_gas must be a non-negative int, got {excess_blob_gas!r}")
        if scalars[1] < 1:
            raise ValueError(f"update_fraction must be positive, got {update_fraction!r}")
        return blob_rules.blob_base_fee(*scalars)
    length = None
    for value in (excess_blob_gas, update_fraction):
        if not isinstance(value, int | np.integer):
            length = len(value)
            break
    index = next(
        (v.index for v in (excess_blob_gas, update_fraction) if isinstance(v, pd.Series)),
        pd.RangeIndex(length),
    )
    excess, e_missing = _ints(_broadcast(excess_blob_gas, length), "excess_blob_gas")
    fraction, f_missing = _ints(_broadcast(update_fraction, length), "update_fraction")
    missing = e_missing | f_missing
    if ((fraction < 1) & ~missing).any():
        raise ValueError("update_fraction must be positive")
    if excess.dtype == object:
        raise ValueError("excess_blob_gas beyond int64 is not a real header value")
    values = blob_base_fee_array(np.where(missing, 0, excess), np.where(missing, 1, fraction))
    return _series_result(values, missing, index, "blob_base_fee_wei")


def _broadcast(value: Ints, length: int | None) -> Ints:
    if isinstance(value, int | np.integer) and length is not None:
        return np.full(length, int(value), dtype=np.int64)
    return value


@overload
def next_excess_blob_gas(
    parent_excess_blob_gas: int,
    parent_blob_gas_used: int,
    *,
    target_blobs: int,
    max_blobs: int,
    update_fraction: int | None = None,
    reserve_price: bool = False,
    parent_base_fee: int | None = None,
) -> int: ...


@overload
def next_excess_blob_gas(
    parent_excess_blob_gas: Ints,
    parent_blob_gas_used: Ints,
    *,
    target_blobs: Ints,
    max_blobs: Ints,
    update_fraction: Ints | None = None,
    reserve_price: bool | Sequence[bool] | np.ndarray | pd.Series = False,
    parent_base_fee: Ints | None = None,
) -> pd.Series: ...


def next_excess_blob_gas(
    parent_excess_blob_gas: Ints,
    parent_blob_gas_used: Ints,
    *,
    target_blobs: Ints,
    max_blobs: Ints,
    update_fraction: Ints | None = None,
    reserve_price: bool | Sequence[bool] | np.ndarray | pd.Series = False,
    parent_base_fee: Ints | None = None,
) -> int | pd.Series:
    """The excess blob gas a child block must have [gas].

    Parameters
    ----------
    parent_excess_blob_gas, parent_blob_gas_used : int or array-like of int
        The parent's header fields [gas] (0 and 0 for a parent before Cancun).
    target_blobs, max_blobs : int or array-like of int
        The *child's* fork's target and max blobs per block.
    update_fraction : int or array-like of int, optional
        The child's fork's update fraction; needed with ``reserve_price``.
    reserve_price : bool or array-like of bool
        EIP-7918 applies to the child (Osaka on).
    parent_base_fee : int or array-like of int, optional
        The parent's base fee [wei]; needed with ``reserve_price``.

    Returns
    -------
    int or pandas.Series
        ``next_excess_blob_gas`` (int64).

    References
    ----------
    .. [1] EIP-4844 ``calc_excess_blob_gas``; EIP-7918 (``BLOB_BASE_COST``).

    Examples
    --------
    >>> next_excess_blob_gas(50_593_792, 655_360, target_blobs=6, max_blobs=9)
    50462720
    """
    args = (parent_excess_blob_gas, parent_blob_gas_used, target_blobs, max_blobs)
    extra = (update_fraction, parent_base_fee)
    # a scalar call: every argument an int (update_fraction and parent_base_fee may be None)
    scalars = scalar_ints(*args, *(0 if v is None else v for v in extra))
    if scalars is not None and isinstance(reserve_price, bool):
        if reserve_price and (update_fraction is None or parent_base_fee is None):
            raise ValueError("reserve_price needs update_fraction and parent_base_fee")
        if min(scalars[:4]) < 0:
            raise ValueError("next_excess_blob_gas takes non-negative integers")
        return blob_rules.next_excess_blob_gas(
            scalars[0], scalars[1], scalars[2], scalars[3], scalars[4] or 1,
            reserve_price=reserve_price,
            parent_base_fee=None if parent_base_fee is None else scalars[5],
        )  # fmt: skip
    given = (*args, *extra, reserve_price)
    vectors = [a for a in given if not isinstance(a, int | np.integer | None)]
    length = len(vectors[0])
    index = next((v.index for v in vectors if isinstance(v, pd.Series)), pd.RangeIndex(length))
    excess, m1 = _ints(_broadcast(parent_excess_blob_gas, length), "parent_excess_blob_gas")
    used, m2 = _ints(_broadcast(parent_blob_gas_used, length), "parent_blob_gas_used")
    target, m3 = _ints(_broadcast(target_blobs, length), "target_blobs")
    top, m4 = _ints(_broadcast(max_blobs, length), "max_blobs")
    reserve = np.broadcast_to(np.asarray(reserve_price, dtype=bool), (length,))
    missing = m1 | m2 | m3 | m4
    fraction: np.ndarray | None
    base: np.ndarray | None
    if reserve.any():
        if update_fraction is None or parent_base_fee is None:
            raise ValueError("reserve_price needs update_fraction and parent_base_fee")
        fraction, m5 = _ints(_broadcast(update_fraction, length), "update_fraction")
        base, m6 = _ints(_broadcast(parent_base_fee, length), "parent_base_fee")
        missing = missing | ((m5 | m6) & reserve)
    else:
        fraction = base = None  # EIP-7918 applies to no row
    values = _next_excess(excess, used, target, top, reserve & ~missing, fraction, base, missing)
    return _series_result(values, missing, index, "next_excess_blob_gas")


def _next_excess(
    excess: np.ndarray,
    used: np.ndarray,
    target: np.ndarray,
    top: np.ndarray,
    reserve: np.ndarray,
    fraction: np.ndarray | None,
    base: np.ndarray | None,
    missing: np.ndarray,
) -> np.ndarray:
    """EIP-4844's excess update on int64 arrays, with EIP-7918 where ``reserve``."""
    e = np.where(missing, 0, excess).astype(np.int64)
    u = np.where(missing, 0, used).astype(np.int64)
    t = np.where(missing, 0, target).astype(np.int64) * GAS_PER_BLOB
    mx = np.where(missing, 1, top).astype(np.int64)
    total = e + u
    out = np.where(total < t, 0, total - t)
    if reserve.any():
        rows = np.flatnonzero(reserve & (total >= t))
        fees = blob_base_fee_array(e[rows], np.asarray(fraction)[rows].astype(np.int64))
        price = np.asarray(fees, dtype=object) * GAS_PER_BLOB
        reserve_wei = np.asarray(base, dtype=object)[rows] * BLOB_BASE_COST
        binds = np.array([int(a) > int(b) for a, b in zip(reserve_wei, price, strict=True)], bool)
        tb = t[rows] // GAS_PER_BLOB
        scaled = e[rows] + u[rows] * (mx[rows] - tb) // mx[rows]
        out[rows] = np.where(binds, scaled, out[rows])
    return out


# -- per-block parameters and fees ---------------------------------------------------------------


def _positions(blocks: pd.DataFrame, spec: ChainSpec, offset: int, what: str) -> np.ndarray:
    """What the schedule counts for each row (or its child): block numbers or timestamps."""
    if any(rule.key == "block" for rule in spec.blob_schedule):
        if "block_number" not in blocks.columns:
            raise ValueError(
                f"{what}: {spec.label!r} switches blob forks by block number; blocks needs "
                "'block_number'"
            )
        return np.asarray(blocks["block_number"].to_numpy(dtype=np.int64) + offset)
    if "timestamp" not in blocks.columns:
        raise ValueError(
            f"{what}: {spec.label!r} switches blob forks by time; blocks needs 'timestamp'"
        )
    stamps = blocks["timestamp"]
    if isinstance(stamps.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(stamps):
        utc = pd.to_datetime(stamps, utc=True)
        seconds = ((utc - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(seconds=1)).to_numpy(
            dtype=np.int64
        )
    else:
        seconds = stamps.to_numpy(dtype=np.int64)
    if offset == 0:
        return np.asarray(seconds)
    # the child's time: the next row's when it is the next block, else one slot later
    child = seconds + _SLOT_S
    if "block_number" in blocks.columns and len(blocks) > 1:
        numbers = blocks["block_number"].to_numpy(dtype=np.int64)
        follows = np.diff(numbers) == 1
        child[:-1] = np.where(follows, seconds[1:], child[:-1])
    return np.asarray(child)


@takes_spec()
def blob_parameters(blocks: pd.DataFrame, *, spec: ChainSpec, offset: int = 0) -> pd.DataFrame:
    """Each row's blob schedule (or its child's with ``offset=1``), from the chain spec.

    Parameters
    ----------
    blocks : pandas.DataFrame
        With ``timestamp`` (the real chains switch blob forks by time) or ``block_number``
        (where the spec's blob forks start at block numbers).
    spec : ChainSpec or str, optional
        The chain's rules (:class:`feeslab.protocol.chainspec.ChainSpec` or its label), with a blob
        schedule (chains 1 and 11155111); default the frame's ``attrs["chain_spec"]``.
    chain_id : int, optional
        Instead of ``spec``: the real chain's (or the frame's, when its attrs say it is of
        this chain).
    offset : {0, 1}
        0: the row's own fork; 1: its child's.

    Returns
    -------
    pandas.DataFrame
        ``fork`` (str or None), ``target_blobs``, ``max_blobs``, ``update_fraction`` (Int64,
        ``<NA>`` before Cancun), ``reserve_price`` (bool, EIP-7918).
    """
    rules = spec.blob_schedule
    n = len(blocks)
    at = _positions(blocks, spec, offset, "blob_parameters") if n else np.zeros(0, np.int64)
    starts = np.array([r.start for r in rules], dtype=np.int64)
    which = np.searchsorted(starts, at, side="right") - 1 if len(rules) else np.full(n, -1)
    known = which >= 0
    pick = np.where(known, which, 0)

    def column(values: list[int]) -> pd.arrays.IntegerArray:
        data = np.array(values or [0], dtype=np.int64)[pick]
        return pd.arrays.IntegerArray(data, ~known)

    names: list[str | None] = [r.fork for r in rules] or [None]
    forks = np.array(names, dtype=object)[pick]
    return pd.DataFrame(
        {
            "fork": np.where(known, forks, np.asarray(None)),
            "target_blobs": column([r.target_blobs for r in rules]),
            "max_blobs": column([r.max_blobs for r in rules]),
            "update_fraction": column([r.update_fraction for r in rules]),
            "reserve_price": np.array([r.reserve_price for r in rules] or [False])[pick] & known,
        },
        index=blocks.index,
    )


def blob_forks(chain: ChainSpec | str | int) -> pd.DataFrame:
    """The chain's blob schedule from ``data/chains.json``, one row per fork.

    Parameters
    ----------
    chain : ChainSpec, str or int
        A chain spec (or its label), or a chain id for the real chain's.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``fork``: ``start`` (int64: a Unix timestamp [s] on the real chains, a block
        number where the spec counts blocks), ``key`` (``"timestamp"`` or ``"block"``),
        ``target_blobs``, ``max_blobs``, ``update_fraction`` (int64), ``reserve_price`` (bool,
        EIP-7918) and ``max_rise`` (float64: the fee's largest factor per block,
        ``e ** ((max - target) * 2**17 / fraction)``).
    """
    rules: tuple[BlobRule, ...] = ChainSpec.of(chain).blob_schedule
    frame = pd.DataFrame(
        {
            "start": [r.start for r in rules],
            "key": [r.key for r in rules],
            "target_blobs": [r.target_blobs for r in rules],
            "max_blobs": [r.max_blobs for r in rules],
            "update_fraction": [r.update_fraction for r in rules],
            "reserve_price": [r.reserve_price for r in rules],
        },
        index=pd.Index([r.fork for r in rules], name="fork"),
    ).astype({"start": np.int64, "target_blobs": np.int64, "max_blobs": np.int64,
              "update_fraction": np.int64, "reserve_price": bool})  # fmt: skip
    frame["max_rise"] = np.exp(
        (frame["max_blobs"] - frame["target_blobs"]) * GAS_PER_BLOB / frame["update_fraction"]
    )
    return frame


def _blob_columns(blocks: pd.DataFrame, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    absent = [c for c in ("blob_gas_used", "excess_blob_gas") if c not in blocks.columns]
    if absent:
        raise ValueError(f"{what}: blocks lacks {absent}: pass headers from Lab.blocks")
    used, m1 = _ints(blocks["blob_gas_used"], "blob_gas_used")
    excess, m2 = _ints(blocks["excess_blob_gas"], "excess_blob_gas")
    return used, excess, m1 | m2


@takes_spec()
def blob_base_fees(blocks: pd.DataFrame, *, spec: ChainSpec) -> pd.Series:
    """Each block's own blob base fee, from its ``excess_blob_gas`` and fork [wei].

    Returns
    -------
    pandas.Series
        ``blob_base_fee_wei`` (int64, or Int64 with ``<NA>`` before Cancun).
    """
    _, excess, missing = _blob_columns(blocks, "blob_base_fees")
    params = blob_parameters(blocks, spec=spec)
    fraction = params["update_fraction"]
    missing = missing | fraction.isna().to_numpy()
    values = blob_base_fee_array(
        np.where(missing, 0, excess).astype(np.int64),
        fraction.fillna(1).to_numpy(dtype=np.int64),
    )
    return _series_result(values, missing, blocks.index, "blob_base_fee_wei")


@takes_spec()
def next_blob_base_fees(blocks: pd.DataFrame, *, spec: ChainSpec) -> pd.Series:
    """The blob base fee of each block's child, with the child's fork's parameters [wei].

    Parameters
    ----------
    blocks : pandas.DataFrame
        ``Lab.blocks``: ``block_number``, ``timestamp``, ``blob_gas_used``,
        ``excess_blob_gas`` [gas] and ``base_fee_wei`` [wei] (for EIP-7918 from Osaka).
    spec, chain_id
        As for :func:`blob_parameters`.

    Returns
    -------
    pandas.Series
        ``next_blob_base_fee_wei`` (int64, Int64 with ``<NA>`` where the child has no blobs):
        compare with the next row's :func:`blob_base_fees` to check every header. A parent
        before Cancun counts as excess 0 and used 0 (the fork block's excess is 0).

    References
    ----------
    .. [1] EIP-4844 ``calc_excess_blob_gas``; EIP-7918; go-ethereum ``CalcExcessBlobGas``.
    """
    if not isinstance(blocks, pd.DataFrame):
        raise TypeError("blocks must be a DataFrame like Lab.blocks returns")
    used, excess, missing = _blob_columns(blocks, "next_blob_base_fees")
    child = blob_parameters(blocks, spec=spec, offset=1)
    no_child = child["update_fraction"].isna().to_numpy()
    reserve = child["reserve_price"].to_numpy()
    base = None
    base_missing = np.zeros(len(blocks), dtype=bool)
    if reserve.any():
        if "base_fee_wei" not in blocks.columns:
            raise ValueError("next_blob_base_fees: from Osaka (EIP-7918) blocks need base_fee_wei")
        base, base_missing = _ints(blocks["base_fee_wei"], "base_fee_wei")
    fraction = child["update_fraction"].fillna(1).to_numpy(dtype=np.int64)
    # a parent without blob fields (the fork block's parent) counts as 0 and 0
    e = np.where(missing, 0, excess).astype(np.int64)
    u = np.where(missing, 0, used).astype(np.int64)
    nxt = _next_excess(
        e, u, child["target_blobs"].fillna(0).to_numpy(dtype=np.int64),
        child["max_blobs"].fillna(1).to_numpy(dtype=np.int64), reserve & ~base_missing,
        fraction, base, no_child,
    )  # fmt: skip
    gone = no_child | (reserve & base_missing)
    values = blob_base_fee_array(np.where(gone, 0, nxt), fraction)
    return _series_result(values, gone, blocks.index, "next_blob_base_fee_wei")


# -- usage from fees alone -----------------------------------------------------------------------


@takes_spec()
def infer_blob_usage(fees: pd.DataFrame, *, spec: ChainSpec) -> pd.DataFrame:
    """Each block's blob count, bracketed from consecutive blob base fees alone.

    Before Osaka ``excess[n+1] - excess[n] = used[n] - target`` whenever the excess stays
    above 0, and the fee is ``e ** (excess / fraction)`` floored to wei, so
    ``ln(fee[n+1] / fee[n])`` gives ``used[n]`` up to the flooring: with ``f`` the fee, the
    exact ratio lies in ``[f1 / (f0 + 1), (f1 + 1) / f0]``. At low fees (a few wei) the bracket
    is wide; at the 1-wei floor nothing is identified. The Taylor series of
    ``fake_exponential`` lies below ``e ** x`` by up to a relative 1e-8, which widens the
    bracket by as much.

    Parameters
    ----------
    fees : pandas.DataFrame
        ``block_number``, ``timestamp`` and each block's blob base fee in
        ``base_fee_per_blob_gas_wei`` (``Lab.fee_history``) or ``blob_base_fee_wei``.
    spec, chain_id
        As for :func:`blob_parameters`.

    Returns
    -------
    pandas.DataFrame
        ``blobs_low``, ``blobs_high`` (float64): the blob counts consistent with the two fees
        (clipped to 0..max; NaN for the last row, after a gap, at a fork with a new fraction,
        from Osaka where the reserve rule may bind, or where either fee is missing),
        ``max_blobs``, ``target_blobs`` (Int64).

    References
    ----------
    .. [1] EIP-4844 ``get_base_fee_per_blob_gas``, ``calc_excess_blob_gas``.
    """
    column = next(
        (c for c in ("base_fee_per_blob_gas_wei", "blob_base_fee_wei") if c in fees.columns), None
    )
    if column is None:
        raise ValueError("fees needs base_fee_per_blob_gas_wei or blob_base_fee_wei [wei]")
    if "block_number" not in fees.columns:
        raise ValueError("fees needs block_number")
    fee, missing = _ints(fees[column], column)
    f = np.where(missing | (fee <= 0), np.nan, fee.astype(np.float64))
    own = blob_parameters(fees, spec=spec)
    n = len(fees)
    low = np.full(n, np.nan)
    high = np.full(n, np.nan)
    if n > 1:
        numbers = fees["block_number"].to_numpy(dtype=np.int64)
        fraction = own["update_fraction"].to_numpy(dtype=np.float64, na_value=np.nan)
        target = own["target_blobs"].to_numpy(dtype=np.float64, na_value=np.nan)
        top = own["max_blobs"].to_numpy(dtype=np.float64, na_value=np.nan)
        same = (
            (np.diff(numbers) == 1) & (fraction[1:] == fraction[:-1]) & (target[1:] == target[:-1])
        )
        same &= ~own["reserve_price"].to_numpy()[1:]
        f0, f1 = f[:-1], f[1:]
        with np.errstate(divide="ignore", invalid="ignore"):
            lo = np.log(f1 / ((f0 + 1) * _TAYLOR)) * fraction[:-1] / GAS_PER_BLOB + target[:-1]
            hi = np.log((f1 + 1) * _TAYLOR / f0) * fraction[:-1] / GAS_PER_BLOB + target[:-1]
        # at the 1-wei floor the excess may sit at 0 (clipped): the used blobs only bound above
        floor = (f0 <= MIN_BASE_FEE_PER_BLOB_GAS) | (f1 <= MIN_BASE_FEE_PER_BLOB_GAS)
        lo = np.where(floor, 0.0, lo)
        low[:-1] = np.where(same, np.clip(np.ceil(lo - 1e-9), 0, top[:-1]), np.nan)
        high[:-1] = np.where(same, np.clip(np.floor(hi + 1e-9), 0, top[:-1]), np.nan)
    return pd.DataFrame(
        {
            "block_number": fees["block_number"].to_numpy(dtype=np.int64),
            "blobs_low": low,
            "blobs_high": high,
            "target_blobs": own["target_blobs"].to_numpy(),
            "max_blobs": own["max_blobs"].to_numpy(),
        },
        index=fees.index,
    )


def blob_states(usage: pd.DataFrame) -> pd.Series:
    """Full, empty, above or below target, or unclear, from :func:`infer_blob_usage`.

    Returns
    -------
    pandas.Series
        Categorical ``blob_state`` over :data:`BLOB_STATES`: ``full`` when even the lower
        bound is the max, ``empty`` when the upper bound is 0, ``above_target`` /
        ``below_target`` when the whole bracket is on one side of the target (inclusive),
        else ``unclear``.
    """
    low, high = usage["blobs_low"].to_numpy(), usage["blobs_high"].to_numpy()
    target = usage["target_blobs"].to_numpy(dtype=np.float64, na_value=np.nan)
    top = usage["max_blobs"].to_numpy(dtype=np.float64, na_value=np.nan)
    state = np.full(len(usage), "unclear", dtype=object)
    state[low > target] = "above_target"
    state[high < target] = "below_target"
    state[low >= top] = "full"
    state[high <= 0] = "empty"
    return pd.Series(
        pd.Categorical(state, categories=BLOB_STATES), index=usage.index, name="blob_state"
    )


# -- volatility and regimes ----------------------------------------------------------------------


def blob_fee_regimes(
    fees: pd.DataFrame, *, window: int = 32, drift_threshold: float = 0.02,
    spread_threshold: float = 0.05,
) -> pd.DataFrame:  # fmt: skip
    """Label each block's blob fee regime: floor, rising, falling, volatile or calm.

    ``floor``: the fee is at its 1-wei minimum (demand below target: the rule cannot go
    lower). Elsewhere, over a centred window of log returns: ``rising`` / ``falling`` when the
    mean is beyond ``+-drift_threshold`` per block (a full Cancun block moves it by +0.118), else
    ``volatile`` when the standard deviation passes ``spread_threshold``, else ``calm``.

    Returns
    -------
    pandas.DataFrame
        ``log_return``, ``drift``, ``spread`` (float64) and ``regime`` (categorical over
        :data:`BLOB_REGIMES`).
    """
    if window < 2:
        raise ValueError(f"window must be at least 2 blocks, got {window!r}")
    column = next(
        (c for c in ("base_fee_per_blob_gas_wei", "blob_base_fee_wei") if c in fees.columns), None
    )
    if column is None:
        raise ValueError("fees needs base_fee_per_blob_gas_wei or blob_base_fee_wei [wei]")
    fee, missing = _ints(fees[column], column)
    f = np.where(missing | (fee <= 0), np.nan, fee.astype(np.float64))
    ret = np.full(len(f), np.nan)
    if len(f) > 1:
        with np.errstate(divide="ignore", invalid="ignore"):
            ret[1:] = np.log(f[1:] / f[:-1])
        if "block_number" in fees.columns:
            gaps = np.diff(fees["block_number"].to_numpy(dtype=np.int64)) != 1
            ret[1:][gaps] = np.nan
    returns = pd.Series(ret, index=fees.index)
    drift = returns.rolling(window, min_periods=window // 2, center=True).mean()
    spread = returns.rolling(window, min_periods=window // 2, center=True).std()
    regime = np.full(len(f), "calm", dtype=object)
    regime[spread.to_numpy() >= spread_threshold] = "volatile"
    regime[drift.to_numpy() >= drift_threshold] = "rising"
    regime[drift.to_numpy() <= -drift_threshold] = "falling"
    regime[f <= MIN_BASE_FEE_PER_BLOB_GAS] = "floor"
    return pd.DataFrame(
        {
            "log_return": ret,
            "drift": drift.to_numpy(),
            "spread": spread.to_numpy(),
            "regime": pd.Categorical(regime, categories=BLOB_REGIMES),
        },
        index=fees.index,
    )


# -- burn and issuance ---------------------------------------------------------------------------


def _products(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact elementwise products: int64 where provably safe, Python ints elsewhere."""
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    if a.dtype != object and b.dtype != object and (fa * fb < _INT64_SAFE).all():
        return a.astype(np.int64) * b.astype(np.int64)
    return np.array([int(x) * int(y) for x, y in zip(a, b, strict=True)], dtype=object)


@takes_spec()
def fee_burn(blocks: pd.DataFrame, *, spec: ChainSpec) -> pd.DataFrame:
    """What each block burns and issues, exact in wei.

    Parameters
    ----------
    blocks : pandas.DataFrame
        ``Lab.blocks``: ``block_number``, ``timestamp``, ``base_fee_wei``, ``gas_used``,
        ``blob_gas_used``, ``excess_blob_gas`` and ``uncle_count``; a ``tips_wei`` column
        (the priority fees paid to the proposer, from receipts) is carried when present — the
        headers alone do not hold tips.
    spec, chain_id
        As for :func:`blob_parameters`; the spec also gives the static block reward.

    Returns
    -------
    pandas.DataFrame
        ``block_number``, ``timestamp``, ``base_fee_burn_wei`` (``base_fee * gas_used``, 0
        before London), ``blob_fee_burn_wei`` (``blob_base_fee * blob_gas_used``, 0 before
        Cancun), ``burn_wei`` (their sum), ``issuance_wei`` (the execution layer's block
        reward and its 1/32 per included uncle, 0 after the merge: the consensus layer's
        issuance is not in execution headers), ``tips_wei`` if given, and ``blob_share``
        (float64: blob burn over total burn, NaN when nothing burns). Wei columns are int64
        or Python ints (``object``) where a product passes int64.

    References
    ----------
    .. [1] EIP-1559 (the base fee is burned); EIP-4844 (the blob fee is burned,
       ``get_total_blob_gas * get_base_fee_per_blob_gas``); EIP-649, EIP-1234, EIP-3675.
    """
    needed = ["block_number", "base_fee_wei", "gas_used", "blob_gas_used", "excess_blob_gas"]
    absent = [c for c in needed if c not in blocks.columns]
    if absent:
        raise ValueError(f"fee_burn: blocks lacks {absent}: pass headers from Lab.blocks")
    base, base_missing = _ints(blocks["base_fee_wei"], "base_fee_wei")
    gas, _ = _ints(blocks["gas_used"], "gas_used")
    base = np.where(base_missing, 0, base)
    base_burn = _products(base, gas)
    blob_fee = blob_base_fees(blocks, spec=spec)
    blob_used, used_missing = _ints(blocks["blob_gas_used"], "blob_gas_used")
    fee_values, fee_missing = _ints(blob_fee, "blob_base_fee_wei")
    blob_burn = _products(
        np.where(fee_missing, 0, fee_values), np.where(used_missing, 0, blob_used)
    )
    burn = _sum_exact(base_burn, blob_burn)
    numbers = blocks["block_number"].to_numpy(dtype=np.int64)
    rewards = _static_rewards(spec, numbers)
    if "uncle_count" in blocks.columns:
        uncles = blocks["uncle_count"].to_numpy(dtype=np.int64)
        rewards = _sum_exact(rewards, _products(rewards // 32, uncles))
    frame = pd.DataFrame(
        {
            "block_number": numbers,
            "base_fee_burn_wei": base_burn,
            "blob_fee_burn_wei": blob_burn,
            "burn_wei": burn,
            "issuance_wei": rewards,
        },
        index=blocks.index,
    )
    if "timestamp" in blocks.columns:
        frame.insert(1, "timestamp", blocks["timestamp"].to_numpy())
    if "tips_wei" in blocks.columns:
        frame["tips_wei"] = blocks["tips_wei"].to_numpy()
    total = burn.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        frame["blob_share"] = np.where(total > 0, blob_burn.astype(np.float64) / total, np.nan)
    return frame


def _sum_exact(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype != object and b.dtype != object:
        fa, fb = a.astype(np.float64), b.astype(np.float64)
        if (fa + fb < _INT64_SAFE).all():
            return a.astype(np.int64) + b.astype(np.int64)
    return np.array([int(x) + int(y) for x, y in zip(a, b, strict=True)], dtype=object)


def _static_rewards(spec: ChainSpec, numbers: np.ndarray) -> np.ndarray:
    """The static block reward of each block [wei] (int64: at most 5 ETH)."""
    starts = np.array([start for start, _ in spec.block_rewards_wei], dtype=np.int64)
    values = np.array([value for _, value in spec.block_rewards_wei], dtype=np.int64)
    which = np.searchsorted(starts, numbers, side="right") - 1
    return np.where(which >= 0, values[np.maximum(which, 0)], 0)


def burn_by_day(burn: pd.DataFrame, *, freq: str = "D") -> pd.DataFrame:
    """:func:`fee_burn` summed per UTC day, exact (Python ints where a sum passes int64).

    Parameters
    ----------
    burn : pandas.DataFrame
        :func:`fee_burn`'s frame.
    freq : str
        The period, as a pandas frequency: ``"D"`` (UTC days), ``"h"`` for hours.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``day`` (the period's UTC start): ``blocks``, ``base_fee_burn_wei``,
        ``blob_fee_burn_wei``, ``burn_wei``, ``issuance_wei`` (and ``tips_wei``), ``net_wei``
        (issuance minus burn: negative when supply shrank), ``blob_share`` (float64) and the
        same in ETH as float64 for plotting (``*_eth``). ``attrs["freq"]`` keeps ``freq``.
    """
    if "timestamp" not in burn.columns:
        raise ValueError("burn_by_day needs fee_burn's timestamp column")
    day = pd.to_datetime(burn["timestamp"], utc=True).dt.floor(freq)
    columns = [c for c in ("base_fee_burn_wei", "blob_fee_burn_wei", "burn_wei", "issuance_wei",
                           "tips_wei") if c in burn.columns]  # fmt: skip
    groups = {}
    keys = day.to_numpy()
    order = pd.unique(keys)
    for name in columns:
        values = burn[name].to_numpy()
        sums = {k: 0 for k in order}
        for k, v in zip(keys, values.tolist(), strict=True):
            sums[k] += int(v)
        groups[name] = np.array([sums[k] for k in order], dtype=object)
    frame = pd.DataFrame(groups, index=pd.DatetimeIndex(order, name="day"))
    frame.insert(0, "blocks", day.value_counts().reindex(order).to_numpy(dtype=np.int64))
    frame["net_wei"] = np.array(
        [int(i) - int(b) for i, b in zip(frame["issuance_wei"], frame["burn_wei"], strict=True)],
        dtype=object,
    )
    burned = frame["burn_wei"].astype(float)
    frame["blob_share"] = np.where(burned > 0, frame["blob_fee_burn_wei"].astype(float) / burned,
                                   np.nan)  # fmt: skip
    for name in [*columns, "net_wei"]:
        frame[name.replace("_wei", "_eth")] = [int(v) / 1e18 for v in frame[name]]
    for name in [*columns, "net_wei"]:
        if all(-(2**63) < int(v) < 2**63 for v in frame[name]):
            frame[name] = frame[name].astype(np.int64)
    frame.attrs["freq"] = freq  # what one row spans (plots label their axis with it)
    return frame


# -- the real market: which branch of the rule, per period, per fork ------------------------------

#: Categories of :func:`excess_branches`, in order.
EXCESS_BRANCHES: tuple[str, ...] = ("below_target", "target", "reserve", "either", "off_rule")


@takes_spec()
def excess_branches(blocks: pd.DataFrame, *, spec: ChainSpec) -> pd.Series:
    """Which branch of the excess rule each block's ``excess_blob_gas`` followed from its parent.

    Read from the headers alone, without the base fee: the rule gives a child's excess either as
    ``excess + used - target`` (EIP-4844) or, from Osaka when EIP-7918's reserve price binds,
    as ``excess + used * (max - target) // max``; both give 0 when ``excess + used`` is below
    the target. Where the child's excess equals the reserve branch and not the other, the
    reserve price bound at the parent (``2**13 * base_fee > 2**17 * blob_base_fee``), and the
    other way round.

    Parameters
    ----------
    blocks : pandas.DataFrame
        Consecutive headers (``Lab.blocks``, :func:`feeslab.samples.blob_market`):
        ``block_number``, ``blob_gas_used``, ``excess_blob_gas`` [gas], and ``timestamp``
        where the spec's forks switch by time.
    spec : ChainSpec or str, optional
        The chain's rules; default the frame's ``attrs["chain_spec"]``.
    chain_id : int, optional
        Instead of ``spec``: the real chain's.

    Returns
    -------
    pandas.Series
        ``excess_branch`` (category :data:`EXCESS_BRANCHES`) per row, judged with the row's own
        fork's target and max: ``below_target`` (excess reset to 0: no branch can be told),
        ``target`` (EIP-4844's), ``reserve`` (EIP-7918's: the reserve price bound), ``either``
        (both branches give the same excess: a full parent block), ``off_rule`` (neither: a
        header the rule does not give), ``<NA>`` where the previous row is not its parent
        (first row, gaps) or a blob field is missing.

    References
    ----------
    .. [1] EIP-7918: Blob base fee bounded by execution cost (``calc_excess_blob_gas``).
    .. [2] EIP-4844 ``calc_excess_blob_gas``.
    """
    used, excess, missing = _blob_columns(blocks, "excess_branches")
    params = blob_parameters(blocks, spec=spec)
    known = ~(missing | params["target_blobs"].isna().to_numpy())
    target_blobs = params["target_blobs"].fillna(0).to_numpy(dtype=np.int64)
    top = params["max_blobs"].fillna(1).to_numpy(dtype=np.int64)
    numbers = blocks["block_number"].to_numpy(dtype=np.int64)
    e = np.where(missing, 0, excess).astype(np.int64)
    u = np.where(missing, 0, used).astype(np.int64)
    parent_e, parent_u = np.r_[0, e[:-1]], np.r_[0, u[:-1]]
    has_parent = np.r_[False, (np.diff(numbers) == 1) & known[:-1]] & known
    total = parent_e + parent_u
    below = total < target_blobs * GAS_PER_BLOB
    by_target = e == total - target_blobs * GAS_PER_BLOB
    # EIP-7918's branch exists only in forks with the reserve price (Osaka on)
    reserve = params["reserve_price"].to_numpy(dtype=bool)
    by_reserve = reserve & (e == parent_e + parent_u * (top - target_blobs) // top)
    codes = np.select(  # positions in EXCESS_BRANCHES; -1 is <NA>
        [~has_parent, below & (e == 0), by_target & by_reserve, by_target, by_reserve],
        [-1, 0, 3, 1, 2],
        default=4,
    ).astype(np.int8)
    labels = pd.Categorical.from_codes(codes, categories=list(EXCESS_BRANCHES))
    return pd.Series(labels, index=blocks.index, name="excess_branch")


def blob_market_by_period(blocks: pd.DataFrame, *, freq: str = "D") -> pd.DataFrame:
    """The blob market per UTC period: fee range, blobs per block, floor share, fork.

    Parameters
    ----------
    blocks : pandas.DataFrame
        Per block: ``timestamp`` (UTC), ``blob_base_fee_wei`` [wei per blob gas],
        ``blob_gas_used`` [gas] (or ``blob_count``) and optionally ``fork``
        (:func:`feeslab.samples.blob_market`).
    freq : str, default "D"
        A pandas offset alias: ``"D"`` per UTC day, ``"h"`` per hour, ``"W"``...

    Returns
    -------
    pandas.DataFrame
        Indexed by the period's start (``period``, datetime64[ns, UTC]); periods without
        blocks left out. ``first_block``, ``last_block``, ``blocks`` (int64);
        ``min_blob_base_fee_wei``, ``median_blob_base_fee_wei``, ``max_blob_base_fee_wei``
        (int64 [wei per blob gas]; the median is the lower middle value, so a fee that was
        charged); ``mean_blobs`` (float64 [blobs/block]); ``at_floor_share`` (float64, blocks at
        the 1 wei floor); ``fork`` (the fork of the period's last block, when given).

    Raises
    ------
    ValueError
        When ``blocks`` lacks a needed column.
    """
    wanted = ["timestamp", "blob_base_fee_wei"]
    absent = [c for c in wanted if c not in blocks.columns]
    if absent or not {"blob_gas_used", "blob_count"} & set(blocks.columns):
        raise ValueError(
            f"blob_market_by_period: blocks lacks {absent or ['blob_gas_used or blob_count']}"
        )
    if "blob_count" in blocks.columns:
        blobs = blocks["blob_count"].to_numpy(dtype=np.int64)
    else:
        blobs = blocks["blob_gas_used"].to_numpy(dtype=np.int64) // GAS_PER_BLOB
    fee = blocks["blob_base_fee_wei"].to_numpy(dtype=np.int64)
    numbers = blocks["block_number"].to_numpy(dtype=np.int64)
    # int64 nanoseconds: a tz-aware column's to_numpy() would be objects (seconds per million)
    stamps = pd.DatetimeIndex(pd.to_datetime(blocks["timestamp"], utc=True))
    period = stamps.floor(freq).as_unit("ns").asi8
    order = np.argsort(period, kind="stable")  # blocks come in time order: usually a no-op
    period, fee, blobs, numbers = period[order], fee[order], blobs[order], numbers[order]
    # one slice per period (reduceat over the boundaries): millions of blocks in a second
    starts = np.flatnonzero(np.r_[True, period[1:] != period[:-1]])
    sizes = np.diff(np.r_[starts, len(fee)])
    medians = np.array([np.partition(fee[a : a + n], (n - 1) // 2)[(n - 1) // 2]
                        for a, n in zip(starts, sizes, strict=True)], dtype=np.int64)  # fmt: skip
    floor = (fee <= MIN_BASE_FEE_PER_BLOB_GAS).astype(np.int64)
    out = pd.DataFrame(
        {
            "first_block": np.minimum.reduceat(numbers, starts),
            "last_block": np.maximum.reduceat(numbers, starts),
            "blocks": sizes.astype(np.int64),
            "min_blob_base_fee_wei": np.minimum.reduceat(fee, starts),
            "median_blob_base_fee_wei": medians,
            "max_blob_base_fee_wei": np.maximum.reduceat(fee, starts),
            "mean_blobs": np.add.reduceat(blobs, starts) / sizes,
            "at_floor_share": np.add.reduceat(floor, starts) / sizes,
        },
        index=pd.to_datetime(period[starts], utc=True),
    )
    if "fork" in blocks.columns:
        last = order[np.r_[starts[1:], len(fee)] - 1]
        out["fork"] = blocks["fork"].iloc[last].to_numpy()
    out.index = pd.DatetimeIndex(out.index, name="period").tz_convert("UTC")
    out.attrs.update(blocks.attrs)
    return out


@takes_spec()
def blob_fork_summary(blocks: pd.DataFrame, *, spec: ChainSpec) -> pd.DataFrame:
    """One row per blob fork of the blocks given: dates, blobs against target, fee quantiles.

    Parameters
    ----------
    blocks : pandas.DataFrame
        Per block: ``block_number``, ``timestamp``, ``blob_gas_used`` [gas],
        ``blob_base_fee_wei`` [wei per blob gas] (:func:`feeslab.samples.blob_market`).
    spec : ChainSpec or str, optional
        The chain's rules; default the frame's ``attrs["chain_spec"]``.
    chain_id : int, optional
        Instead of ``spec``: the real chain's.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``fork`` (activation order, forks without blocks left out): ``first_block``,
        ``last_block``, ``blocks`` (int64), ``first_day``, ``last_day`` (datetime64, UTC),
        ``target_blobs``, ``max_blobs`` (int64), ``mean_blobs`` [blobs/block],
        ``mean_over_target`` (mean blobs / target), ``full_share`` (blocks at the max),
        ``at_floor_share`` (blocks at the 1 wei floor) (float64), ``median_blob_base_fee_wei``,
        ``p99_blob_base_fee_wei``, ``max_blob_base_fee_wei`` (int64 [wei per blob gas], lower
        quantiles: fees that were charged).
    """
    for column in ("block_number", "timestamp", "blob_gas_used", "blob_base_fee_wei"):
        if column not in blocks.columns:
            raise ValueError(f"blob_fork_summary: blocks lacks {column!r}")
    params = blob_parameters(blocks, spec=spec)
    fork = params["fork"]
    blobs = blocks["blob_gas_used"].to_numpy(dtype=np.int64) // GAS_PER_BLOB
    fee = blocks["blob_base_fee_wei"]
    rows = []
    for name in [r.fork for r in spec.blob_schedule]:
        mask = (fork == name).to_numpy()
        if not mask.any():
            continue
        target = int(params["target_blobs"][mask].iloc[0])
        top = int(params["max_blobs"][mask].iloc[0])
        fees = fee[mask].to_numpy(dtype=np.int64)
        counts = blobs[mask]
        stamps = blocks["timestamp"][mask]
        rows.append({
            "fork": name,
            "first_block": int(blocks["block_number"][mask].min()),
            "last_block": int(blocks["block_number"][mask].max()),
            "blocks": int(mask.sum()),
            "first_day": stamps.min().floor("D"),
            "last_day": stamps.max().floor("D"),
            "target_blobs": target,
            "max_blobs": top,
            "mean_blobs": float(counts.mean()),
            "mean_over_target": float(counts.mean() / target),
            "full_share": float((counts == top).mean()),
            "at_floor_share": float((fees <= MIN_BASE_FEE_PER_BLOB_GAS).mean()),
            "median_blob_base_fee_wei": int(np.quantile(fees, 0.5, method="lower")),
            "p99_blob_base_fee_wei": int(np.quantile(fees, 0.99, method="lower")),
            "max_blob_base_fee_wei": int(fees.max()),
        })  # fmt: skip
    out = pd.DataFrame(rows).set_index("fork")
    out.attrs.update(blocks.attrs)
    return out


def reserve_price(blocks: pd.DataFrame) -> pd.Series:
    """EIP-7918's reserve price per blob gas: ``base_fee * 2**13 // 2**17`` (1/16) [wei].

    From Osaka, while a block's blob base fee is below this, the next block's excess grows by
    the reserve branch (:func:`excess_branches`): the blob fee cannot stay below it.

    Parameters
    ----------
    blocks : pandas.DataFrame
        With ``base_fee_wei`` [wei per gas] (``Lab.blocks``).

    Returns
    -------
    pandas.Series
        ``reserve_price_wei`` (Int64) [wei per blob gas]: the comparison's threshold, rounded
        down (the rule compares ``2**13 * base_fee`` with ``2**17 * blob_base_fee`` exactly).

    References
    ----------
    .. [1] EIP-7918 (``BLOB_BASE_COST = 2**13``); EIP-4844 (``GAS_PER_BLOB = 2**17``).
    """
    if "base_fee_wei" not in blocks.columns:
        raise ValueError("reserve_price: blocks lacks 'base_fee_wei': pass Lab.blocks headers")
    base = blocks["base_fee_wei"].astype("Int64")
    return (base * BLOB_BASE_COST // GAS_PER_BLOB).rename("reserve_price_wei")


def branch_shares_by_period(
    blocks: pd.DataFrame, branches: pd.Series, *, freq: str = "D"
) -> pd.DataFrame:
    """The share of blocks per UTC period whose excess followed each branch of the rule.

    Parameters
    ----------
    blocks : pandas.DataFrame
        With ``timestamp`` (UTC), aligned with ``branches``.
    branches : pandas.Series
        :func:`excess_branches` of ``blocks``; rows without a branch (``<NA>``) are not counted.
    freq : str, default "D"
        A pandas offset alias (``"D"``, ``"h"``, ``"W"``...).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``period`` (datetime64[ns, UTC]), one float64 column per category of
        :data:`EXCESS_BRANCHES` (shares summing to 1) and ``blocks`` (int64, the blocks
        counted); periods without a counted block left out.
    """
    if len(branches) != len(blocks):
        raise ValueError(f"branches has {len(branches)} rows for {len(blocks)} blocks")
    stamps = pd.DatetimeIndex(pd.to_datetime(blocks["timestamp"], utc=True))
    codes = pd.Categorical(branches, categories=list(EXCESS_BRANCHES)).codes
    known = codes >= 0
    period = stamps.floor(freq).as_unit("ns").asi8[known]
    counts = pd.crosstab(period, codes[known]).reindex(
        columns=range(len(EXCESS_BRANCHES)), fill_value=0
    )
    total = counts.sum(axis=1)
    out = counts.div(total, axis=0)
    out.columns = list(EXCESS_BRANCHES)
    out["blocks"] = total.astype(np.int64)
    out.index = pd.DatetimeIndex(pd.to_datetime(out.index, utc=True), name="period")
    out.attrs.update(blocks.attrs)
    return out

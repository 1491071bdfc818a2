"""Fees: EIP-1559 arithmetic, utilisation from base fees alone, volatility, forecast bounds.

Pure functions on Series and DataFrames shaped like :mod:`feeslab.frames` returns them
(``Lab.fee_history``, ``Lab.base_fee_history``, ``Lab.blocks``): a ``base_fee_wei`` column
of exact integers, with ``block_number`` where the rows are placed at blocks. Wei amounts
stay exact integers (int64, or Python ints in ``object`` columns beyond int64); gwei columns
are float64 for plotting. Statistics are computed here; :mod:`feeslab.plots` only draws them.

Per-chain parameters
    Functions that apply the base-fee rule read each block's parameters from a chain
    specification (:class:`feeslab.protocol.chainspec.ChainSpec`, from ``data/chains.json``): the
    one in the frame's ``attrs`` (every ``Lab`` frame carries it), or ``spec=``, or
    ``chain_id=`` (the real chain's fork blocks, unless the frame's attrs give that chain
    another spec). Or they take ``elasticity_multiplier`` and
    ``max_change_denominator`` (ints, or arrays aligned with the rows) explicitly. With
    neither, they raise :class:`~feeslab.MissingChainSpec`. A fork's parameters apply from
    the block whose base fee they compute: on Polygon, whose client keys forks by the
    parent's number, that is the block after the fork block. From Base's Holocene upgrade
    the parameters are in each header's ``extraData`` and may change at any block: pass
    them explicitly.

The base-fee rule in one line (EIP-1559 [1]_), with ``target = gas_limit // elasticity``::

    child = parent + max(1, parent * (used - target) // target // denominator)   if used > target
    child = parent - parent * (target - used) // target // denominator           otherwise

References
----------
.. [1] V. Buterin, E. Conner, R. Dudley, M. Slipper, I. Norden, A. Bakhta, "EIP-1559: Fee
   market change for ETH 1.0 chain", 2019, Specification, https://eips.ethereum.org/EIPS/eip-1559
.. [2] T. Roughgarden, "Transaction Fee Mechanism Design for the Ethereum Blockchain: An
   Economic Analysis of EIP-1559", 2020, arXiv:2012.00854.
.. [3] Y. Liu, Y. Lu, K. Nayak, F. Zhang, L. Zhang, Y. Zhao, "Empirical Analysis of EIP-1559:
   Transaction Fees, Waiting Time, and Consensus Security", ACM CCS 2022, arXiv:2201.05574.
.. [4] MetaMask/Infura Gas API: ``baseFeeHistory``, ``baseFeePercentile`` (median of the last
   500 base fees), ``busyThreshold`` (their 90th percentile).
.. [5] 0xPolygon/bor ``consensus/misc/eip1559/eip1559.go`` (``CalcBaseFee``);
   ethereum-optimism/superchain-registry ``superchain/configs/mainnet/base.toml``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import TypeVar, overload

import numpy as np
import pandas as pd

from feeslab.analysis import blobs as _blobs
from feeslab.analysis._exact import INT64_MAX, Ints, exact_ints, exact_series, scalar_ints
from feeslab.analysis._spec import takes_spec
from feeslab.analysis.blobs import *  # noqa: F403 - the blob market (EIP-4844), re-exported
from feeslab.errors import ChainSpecError
from feeslab.protocol import eip1559
from feeslab.protocol.chainspec import ChainSpec
from feeslab.protocol.eip1559 import nearest_rank_index

# the blob market's names are re-exported: feeslab.analysis.fees is the one place for fees
__all__ = sorted([
    *_blobs.__all__,
    "BLOCK_STATES", "REGIMES", "base_fee_bounds", "base_fee_percentile", "base_fee_range",
    "block_states", "busy_threshold", "eip1559_parameters", "fee_regimes", "fee_summary",
    "gas_api_percentiles", "gas_used_target_ratio", "includable_blocks", "infer_utilisation",
    "log_returns", "max_fee_per_gas", "next_base_fee", "next_base_fees", "regime_spans",
    "rolling_volatility", "tip_cdf", "tip_percentiles",
])  # fmt: skip

GWEI = 10**9
_Frame = TypeVar("_Frame", pd.DataFrame, pd.Series)  # what _carry gives attrs to, and returns
_FLOAT_EXACT = 2**53  # integers below this convert to float64 without rounding
#: Categories of :func:`block_states`, in order.
BLOCK_STATES: tuple[str, ...] = ("empty", "partial", "full", "unclear")
#: Categories of :func:`fee_regimes`, in order.
REGIMES: tuple[str, ...] = ("calm", "volatile", "rising", "falling")
GAS_API_WINDOW = 500  # blocks in the Gas API's history window [4]
_DEFAULT_ELASTICITY = 2
_DEFAULT_DENOMINATOR = 8
# the parameters that may replace a chain spec
_BOTH = ("elasticity_multiplier", "max_change_denominator")
_ALTERNATIVES = "elasticity_multiplier= and max_change_denominator="
_BOUNDS_TARGET = 10**7  # any gas target gives the same full/empty steps when limit = e * target


# -- input handling ----------------------------------------------------------------------------


def _base_fee_frame(data: pd.DataFrame | pd.Series, what: str) -> pd.DataFrame:
    """``data`` as a frame with ``base_fee_wei`` (and ``block_number`` if it had one)."""
    if isinstance(data, pd.DataFrame):
        if "base_fee_wei" not in data.columns:
            raise ValueError(
                f"{what} needs a 'base_fee_wei' column [wei]; it has {list(data.columns)}"
            )
        columns = [c for c in ("block_number", "base_fee_wei") if c in data.columns]
        return _carry(data[columns], data)
    if isinstance(data, pd.Series):
        return _carry(pd.DataFrame({"base_fee_wei": data}), data)
    raise TypeError(
        f"{what} must be a DataFrame with 'base_fee_wei' or a Series of base fees [wei]"
    )


def _carry(out: _Frame, given: pd.DataFrame | pd.Series, spec: ChainSpec | None = None) -> _Frame:
    """``out`` with ``given``'s attrs (the chain it is of), and ``spec`` if one was used."""
    out.attrs = dict(given.attrs)
    if spec is not None:
        out.attrs.update(chain_id=spec.chain_id, chain_spec=spec.label)
    return out


def _block_numbers(frame: pd.DataFrame, what: str, *, required: bool) -> np.ndarray | None:
    if "block_number" not in frame.columns:
        if required:
            raise ValueError(
                f"{what}: a chain spec needs a 'block_number' column to pick each block's "
                "parameters (or pass elasticity_multiplier= and max_change_denominator=)"
            )
        return None
    numbers = frame["block_number"]
    if not pd.api.types.is_integer_dtype(numbers.dtype) or numbers.isna().any():
        raise TypeError(f"{what}: 'block_number' must hold integers")
    return np.asarray(numbers.to_numpy(dtype=np.int64))


def _consecutive(numbers: np.ndarray | None, n: int) -> np.ndarray:
    """Whether row i + 1 is the block after row i (rows without numbers are taken as such)."""
    if n < 2:
        return np.zeros(0, dtype=bool)
    if numbers is None:
        return np.ones(n - 1, dtype=bool)
    return np.asarray(np.diff(numbers) == 1)


# -- parameters --------------------------------------------------------------------------------


def eip1559_parameters(chain: ChainSpec | str | int, block_number: Ints) -> pd.DataFrame:
    """EIP-1559 parameters that compute each block's base fee, from a chain spec.

    Parameters
    ----------
    chain : ChainSpec, str or int
        A chain spec (or its label), or a chain id of ``data/chains.json`` (1, 11155111, 137,
        8453) for the real chain's fork blocks.
    block_number : int or array-like of int
        Blocks whose base fee the parameters compute (the child of the transition).

    Returns
    -------
    pandas.DataFrame
        One row per block (index of ``block_number`` if it is a Series), columns (dtype):

        ``block_number`` (int64)
        ``elasticity_multiplier`` (Int64)
            ``<NA>`` before London, and where ``gas_target_percent`` sets the target.
        ``max_change_denominator`` (Int64)
            ``<NA>`` before London.
        ``gas_target_percent`` (Int64)
            Gas target as a percentage of the gas limit (Polygon from Dandeli), else ``<NA>``.
        ``full_ratio`` (float64)
            Gas limit / gas target: gas used over target of a full block (2 on Ethereum, 6 on
            Base, 100/65 on Polygon from Dandeli); NaN before London.
        ``london_block`` (bool)
            The fork block itself, whose base fee is the chain's initial base fee rather than
            the rule applied to a parent.

    Raises
    ------
    ConfigError
        The chain is not in ``data/chains.json``.

    References
    ----------
    .. [1] EIP-1559, Specification (``INITIAL_FORK_BLOCK_NUMBER``).
    .. [2] 0xPolygon/bor ``params/protocol_params.go``; PIP-6; superchain-registry
       ``base.toml`` (see ``data/chains.json`` for each value's source).
    """
    rules = ChainSpec.of(chain).eip1559
    index = block_number.index if isinstance(block_number, pd.Series) else None
    numbers, missing = exact_ints(block_number, "block_number")
    if missing.any() or numbers.dtype == object:
        raise ValueError("block_number must be int64 block numbers, none missing")
    starts = np.array([r.from_block for r in rules], dtype=np.int64)
    which = np.searchsorted(starts, numbers, side="right") - 1
    known = which >= 0
    pick = np.where(known, which, 0)

    def column(values: list[int | None]) -> pd.arrays.IntegerArray:
        data = np.array([0 if v is None else v for v in values], dtype=np.int64)[pick]
        absent = np.array([v is None for v in values])[pick] | ~known
        return pd.arrays.IntegerArray(data, absent)

    full = np.array([r.full_ratio for r in rules])[pick]
    frame = pd.DataFrame(
        {
            "block_number": numbers,
            "elasticity_multiplier": column([r.elasticity_multiplier for r in rules]),
            "max_change_denominator": column([r.max_change_denominator for r in rules]),
            "gas_target_percent": column([r.gas_target_percent for r in rules]),
            "full_ratio": np.where(known, full, np.nan),
            "london_block": numbers == starts[0],
        }
    )
    if index is not None:
        frame.index = index
    return frame


def _parameters(
    frame: pd.DataFrame,
    what: str,
    *,
    offset: int,
    spec: ChainSpec | None,
    elasticity_multiplier: Ints | None,
    max_change_denominator: Ints | None,
) -> pd.DataFrame:
    """Per-row parameters: from the spec for ``block_number + offset``, or as given."""
    n = len(frame)
    if spec is not None:
        numbers = _block_numbers(frame, what, required=len(_distinct(spec)) > 1)
        if numbers is None:  # one set of parameters for the whole chain: no numbers needed
            numbers = np.full(n, spec.eip1559[-1].from_block + 1, dtype=np.int64) - offset
        else:
            _check_london(frame, numbers, spec, what)
        params = eip1559_parameters(spec, numbers + offset)
        params.index = frame.index
        return params
    e = _DEFAULT_ELASTICITY if elasticity_multiplier is None else elasticity_multiplier
    d = _DEFAULT_DENOMINATOR if max_change_denominator is None else max_change_denominator
    e_values, e_missing = exact_ints(e, "elasticity_multiplier", n)
    d_values, d_missing = exact_ints(d, "max_change_denominator", n)
    if (e_values[~e_missing] < 1).any() or (d_values[~d_missing] < 1).any():
        raise ValueError(f"{what}: elasticity_multiplier and max_change_denominator must be >= 1")
    return pd.DataFrame(
        {
            "elasticity_multiplier": pd.arrays.IntegerArray(e_values.astype(np.int64), e_missing),
            "max_change_denominator": pd.arrays.IntegerArray(d_values.astype(np.int64), d_missing),
            "gas_target_percent": pd.array([pd.NA] * n, dtype="Int64"),
            "full_ratio": np.where(e_missing, np.nan, e_values.astype(np.float64)),
            "london_block": np.zeros(n, dtype=bool),
        },
        index=frame.index,
    )


def _distinct(spec: ChainSpec) -> set[tuple[int | None, int, int | None]]:
    """The spec's distinct EIP-1559 parameter sets."""
    return {(r.elasticity_multiplier, r.max_change_denominator, r.gas_target_percent)
            for r in spec.eip1559}  # fmt: skip


def _check_london(frame: pd.DataFrame, numbers: np.ndarray, spec: ChainSpec, what: str) -> None:
    """Refuse base fees at blocks the spec puts before London: the spec is not this chain's."""
    if "base_fee_wei" not in frame.columns or not len(numbers):
        return
    london = spec.eip1559[0].from_block if spec.eip1559 else None
    early = frame["base_fee_wei"].notna().to_numpy()
    if london is not None:
        early = early & (numbers < london)
    if early.any():
        first = int(numbers[np.flatnonzero(early)[0]])
        where = f"before its London block {london:,}" if london is not None else "without EIP-1559"
        raise ChainSpecError(
            f"{what}: block {first:,} has a base fee, but the spec {spec.label!r} puts it "
            f"{where}: the frame follows another spec's fork blocks (pass the spec its source "
            "supplies, e.g. Lab.chain_spec, or let the frame's attrs say)"
        )


# -- the rule ----------------------------------------------------------------------------------


def _fits_int64(values: np.ndarray) -> np.ndarray:
    if values.dtype != object:
        return np.ones(len(values), dtype=bool)
    return np.array([-INT64_MAX <= int(v) <= INT64_MAX for v in values], dtype=bool)


def _rule_vectorised(
    fee: np.ndarray,
    used: np.ndarray,
    limit: np.ndarray,
    elasticity: np.ndarray,
    denominator: np.ndarray,
    percent: np.ndarray,
) -> np.ndarray:
    """EIP-1559 on arrays: int64 for rows provably free of overflow, Python ints for the rest.

    ``fee * delta`` alone can pass int64 (a 1,000 gwei base fee times 15 M gas is 1.5e19),
    so the product's floor division by the target is split: with ``fee = q * target + r``,
    ``fee * delta // target == q * delta + r * delta // target`` exactly, and each term is
    checked (in floats, with a factor-2 margin) to stay within int64.
    """
    n = len(fee)
    small = _fits_int64(fee) & _fits_int64(used) & _fits_int64(limit)
    f = np.where(small, fee, 0).astype(np.int64)
    u = np.where(small, used, 0).astype(np.int64)
    lim = np.where(small, limit, 1).astype(np.int64)
    target = np.where(percent > 0, lim * percent // 100, lim // np.maximum(elasticity, 1))
    target = np.maximum(target, 1)  # rows with no valid target are not small-safe below
    delta = np.abs(u - target)
    q, r = np.divmod(f, target)
    bound = 2.0**62
    fast = (
        small
        & ((q + 1.0) * delta < bound)
        & (target * 1.0 * delta < bound)
        & (f + (q + 1.0) * delta / denominator < bound)
    )
    change = np.where(fast, (q * delta + r * delta // target) // denominator, 0)
    up = f + np.maximum(1, change)
    down = f - change
    quick = np.where(u > target, up, np.where(u < target, down, f))
    if fast.all():
        return quick
    result = quick.astype(object)
    for i in np.flatnonzero(~fast):
        result[i] = eip1559.next_base_fee(
            int(fee[i]),
            int(used[i]),
            int(limit[i]),
            int(elasticity[i]),
            int(denominator[i]),
            gas_target_percent=int(percent[i]) if percent[i] > 0 else None,
        )
    assert len(result) == n
    return result


@overload
def next_base_fee(
    parent_base_fee: int,
    parent_gas_used: int,
    parent_gas_limit: int,
    *,
    elasticity_multiplier: int = 2,
    max_change_denominator: int = 8,
    gas_target_percent: int | None = None,
) -> int: ...


@overload
def next_base_fee(
    parent_base_fee: Ints,
    parent_gas_used: Ints,
    parent_gas_limit: Ints,
    *,
    elasticity_multiplier: Ints = 2,
    max_change_denominator: Ints = 8,
    gas_target_percent: Ints | None = None,
) -> pd.Series: ...


def next_base_fee(
    parent_base_fee: Ints,
    parent_gas_used: Ints,
    parent_gas_limit: Ints,
    *,
    elasticity_multiplier: Ints = 2,
    max_change_denominator: Ints = 8,
    gas_target_percent: Ints | None = None,
) -> int | pd.Series:
    """The base fee a child block must have, by EIP-1559's rule, in exact integers [wei].

    Parameters
    ----------
    parent_base_fee : int or array-like of int
        The parent block's base fee [wei].
    parent_gas_used : int or array-like of int
        Gas the parent used [gas].
    parent_gas_limit : int or array-like of int
        The parent's gas limit [gas]; the gas target is ``limit // elasticity_multiplier``.
    elasticity_multiplier : int or array-like of int
        2 on Ethereum (EIP-1559's ``ELASTICITY_MULTIPLIER``), 6 on Base.
    max_change_denominator : int or array-like of int
        8 on Ethereum (``BASE_FEE_MAX_CHANGE_DENOMINATOR``), 16 then 64 on Polygon, 50 then
        250 on Base.
    gas_target_percent : int or array-like of int, optional
        Gas target as a percentage of the limit instead of ``limit // elasticity_multiplier``
        (Polygon from Dandeli: 65); 0 or missing entries fall back to the multiplier.

    Returns
    -------
    int or pandas.Series
        An int when every argument is a scalar; otherwise a Series (the first Series
        argument's index) of int64, Int64 (``<NA>`` where an input is missing), or Python ints
        in ``object`` where a value passes int64. No float is involved anywhere.

    Raises
    ------
    TypeError
        An argument holds floats, bools or non-numbers.
    ValueError
        Lengths differ, or a value is out of range (negative fees or gas, gas used above the
        limit, a gas target of 0), naming the first such row.

    See Also
    --------
    next_base_fees : the same rule over a blocks frame, with each chain's parameters.

    References
    ----------
    .. [1] EIP-1559, Specification: ``validate_block`` (``parent_gas_target``,
       ``base_fee_per_gas_delta``).
    .. [2] 0xPolygon/bor ``CalcBaseFee`` (``gasTargetForLimit``) for ``gas_target_percent``.

    Examples
    --------
    >>> next_base_fee(10**9, 30_000_000, 30_000_000)
    1125000000
    >>> next_base_fee(10**9, 0, 30_000_000, max_change_denominator=16)
    937500000
    """
    arguments = {
        "parent_base_fee": parent_base_fee,
        "parent_gas_used": parent_gas_used,
        "parent_gas_limit": parent_gas_limit,
        "elasticity_multiplier": elasticity_multiplier,
        "max_change_denominator": max_change_denominator,
        "gas_target_percent": 0 if gas_target_percent is None else gas_target_percent,
    }
    vectors = {k: v for k, v in arguments.items() if not isinstance(v, int | np.integer)}
    scalars = scalar_ints(*arguments.values())
    if scalars is not None:
        checked = {k: exact_ints(v, k)[0] for k, v in arguments.items()}
        _check_rule_inputs(checked, np.zeros(1, dtype=bool))
        fee, used, limit, elasticity, denominator, percent = scalars
        return eip1559.next_base_fee(
            fee, used, limit, elasticity, denominator,
            gas_target_percent=percent if percent > 0 else None,
        )  # fmt: skip
    first = next(iter(vectors.values()))
    length = len(first)
    index = next(
        (v.index for v in vectors.values() if isinstance(v, pd.Series)), pd.RangeIndex(length)
    )
    arrays: dict[str, np.ndarray] = {}
    missing = np.zeros(length, dtype=bool)
    for name, value in arguments.items():
        values, absent = exact_ints(value, name, length)
        if name == "gas_target_percent":  # a missing percentage means: use the multiplier
            values, absent = np.where(absent, 0, values), np.zeros_like(absent)
        arrays[name], missing = values, missing | absent
    _check_rule_inputs(arrays, missing)
    # rows with a missing input get a harmless stand-in (0 wei, target 1) and come out <NA>
    stand_in = {
        "parent_base_fee": 0,
        "parent_gas_used": 0,
        "parent_gas_limit": 1,
        "elasticity_multiplier": 1,
        "max_change_denominator": 1,
        "gas_target_percent": 0,
    }
    filled = {k: np.where(missing, stand_in[k], v) for k, v in arrays.items()}
    for small in ("elasticity_multiplier", "max_change_denominator", "gas_target_percent"):
        if filled[small].dtype == object:
            raise ValueError(f"{small} is out of range")
        filled[small] = filled[small].astype(np.int64)
    result = _rule_vectorised(
        filled["parent_base_fee"],
        filled["parent_gas_used"],
        filled["parent_gas_limit"],
        filled["elasticity_multiplier"],
        filled["max_change_denominator"],
        filled["gas_target_percent"],
    )
    return exact_series(result, missing, index, "next_base_fee_wei")


def _check_rule_inputs(arrays: dict[str, np.ndarray], missing: np.ndarray) -> None:
    def first_bad(condition: np.ndarray, message: str) -> None:
        bad = condition & ~missing
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(message.format(i=i))

    def values(name: str) -> np.ndarray:
        v = arrays[name]
        return v if v.dtype != object else np.array([int(x) for x in v], dtype=object)

    fee, used, limit = (
        values("parent_base_fee"),
        values("parent_gas_used"),
        values("parent_gas_limit"),
    )
    e, d = values("elasticity_multiplier"), values("max_change_denominator")
    percent = values("gas_target_percent")
    first_bad(fee < 0, "parent_base_fee[{i}] is negative")
    first_bad(used < 0, "parent_gas_used[{i}] is negative")
    first_bad(limit < 0, "parent_gas_limit[{i}] is negative")
    first_bad(used > limit, "parent_gas_used[{i}] is above parent_gas_limit[{i}]")
    first_bad(d < 1, "max_change_denominator[{i}] must be at least 1")
    first_bad((percent < 0) | (percent > 100), "gas_target_percent[{i}] must be in 0..100")
    first_bad((percent == 0) & (e < 1), "elasticity_multiplier[{i}] must be at least 1")
    safe_e = np.where(e < 1, 1, e)
    target = np.where(percent > 0, limit * percent // 100, limit // safe_e)
    first_bad(target <= 0, "row {i}: the gas target (gas limit / elasticity) is 0")


@takes_spec(explicit=_BOTH, alternatives=_ALTERNATIVES)
def next_base_fees(
    blocks: pd.DataFrame,
    *,
    spec: ChainSpec | None = None,
    elasticity_multiplier: Ints | None = None,
    max_change_denominator: Ints | None = None,
) -> pd.Series:
    """The base fee each block's child must have, with the parameters in force for the child.

    Parameters
    ----------
    blocks : pandas.DataFrame
        Block headers with ``block_number``, ``base_fee_wei`` [wei], ``gas_used`` and
        ``gas_limit`` [gas] (``Lab.blocks``).
    spec : ChainSpec or str, optional
        The chain's rules (:class:`feeslab.protocol.chainspec.ChainSpec` or its label); default the
        frame's ``attrs["chain_spec"]``. Each child's parameters come from it; a child that
        is the London block gets the chain's initial base fee.
    chain_id : int, optional
        Instead of ``spec``: the real chain's spec (or the frame's, when its attrs say it is
        of this chain).
    elasticity_multiplier, max_change_denominator : int or array-like, optional
        Instead of a spec, as for :func:`next_base_fee` (one given, the other defaults to 2
        or 8).

    Returns
    -------
    pandas.Series
        ``next_base_fee_wei`` (int64, or Int64 with ``<NA>`` where the parent has no base fee
        and the child is not the London block), aligned with ``blocks``. Comparing it with the
        next row's ``base_fee_wei`` checks every header against EIP-1559.

    Raises
    ------
    MissingChainSpec
        Neither a spec (argument or attrs) nor the parameters.
    ChainSpecConflict
        ``spec``/``chain_id`` contradict the frame's attrs.
    ChainSpecError
        Blocks with a base fee that the spec puts before London (another spec's fork blocks).

    References
    ----------
    .. [1] EIP-1559, Specification (``INITIAL_BASE_FEE`` at ``INITIAL_FORK_BLOCK_NUMBER``).
    """
    if not isinstance(blocks, pd.DataFrame):
        raise TypeError("blocks must be a DataFrame like Lab.blocks returns")
    needed = ["base_fee_wei", "gas_used", "gas_limit"]
    absent = [c for c in needed if c not in blocks.columns]
    if absent:
        raise ValueError(f"blocks lacks {absent}: pass headers from Lab.blocks")
    params = _parameters(
        blocks,
        "next_base_fees",
        offset=1,
        spec=spec,
        elasticity_multiplier=elasticity_multiplier,
        max_change_denominator=max_change_denominator,
    )
    no_rule = params["max_change_denominator"].isna().to_numpy()
    percent = params["gas_target_percent"].fillna(0).astype(np.int64)
    fees = blocks["base_fee_wei"]
    if no_rule.any():  # before London: no rule, no child base fee (but see the fork below)
        fees = fees.astype(object).where(~no_rule, None)
    result = next_base_fee(
        fees,
        blocks["gas_used"],
        blocks["gas_limit"],
        elasticity_multiplier=params["elasticity_multiplier"].fillna(1),
        max_change_denominator=params["max_change_denominator"].fillna(1),
        gas_target_percent=percent,
    )
    london = params["london_block"].to_numpy()
    if london.any():
        assert spec is not None
        values, missing = exact_ints(result.astype(object), "next_base_fee_wei")
        values = np.where(london, spec.initial_base_fee_wei, values)
        result = exact_series(values, missing & ~london, blocks.index, "next_base_fee_wei")
    return _carry(result.rename("next_base_fee_wei"), blocks, spec)


@takes_spec(explicit=("elasticity_multiplier",), alternatives=_ALTERNATIVES)
def gas_used_target_ratio(
    blocks: pd.DataFrame,
    *,
    spec: ChainSpec | None = None,
    elasticity_multiplier: Ints | None = None,
) -> pd.Series:
    """Gas used over gas target of each block, from its header: the truth to compare with.

    Parameters
    ----------
    blocks : pandas.DataFrame
        ``gas_used`` and ``gas_limit`` [gas] (``Lab.blocks``), with ``block_number`` when
        a spec is used.
    spec, chain_id, elasticity_multiplier
        As for :func:`next_base_fees`: the target is the one the child's base fee uses.

    Returns
    -------
    pandas.Series
        ``gas_used_target_ratio`` (float64) [1]: 1 at target, ``elasticity_multiplier`` for a
        full block, 0 for an empty one; NaN where no EIP-1559 rule applies.
    """
    params = _parameters(
        blocks,
        "gas_used_target_ratio",
        offset=1,
        spec=spec,
        elasticity_multiplier=elasticity_multiplier,
        max_change_denominator=None,
    )
    limit = blocks["gas_limit"].to_numpy(dtype=np.int64)
    used = blocks["gas_used"].to_numpy(dtype=np.int64)
    percent = params["gas_target_percent"].fillna(0).to_numpy(dtype=np.int64)
    elasticity = params["elasticity_multiplier"].fillna(0).to_numpy(dtype=np.int64)
    known = (percent > 0) | (elasticity > 0)
    target = np.where(percent > 0, limit * percent // 100, limit // np.maximum(elasticity, 1))
    ratio = np.full(len(blocks), np.nan)
    np.divide(used, target, out=ratio, where=known & (target > 0))
    return _carry(pd.Series(ratio, index=blocks.index, name="gas_used_target_ratio"), blocks,
                  spec)  # fmt: skip


# -- utilisation from base fees alone ------------------------------------------------------------


def _enclosing_ratio(numerator: np.ndarray, denominator: np.ndarray, toward: float) -> np.ndarray:
    """``numerator / denominator`` as floats, nudged one ulp ``toward`` so they enclose it."""
    num = numerator.astype(np.float64)
    den = denominator.astype(np.float64)
    ratio = np.full(len(num), np.nan)
    np.divide(num, den, out=ratio, where=den > 0)
    wide = (np.abs(numerator) >= _FLOAT_EXACT) | (denominator >= _FLOAT_EXACT)
    for i in np.flatnonzero(wide & (denominator > 0)):  # correctly rounded, exactly
        ratio[i] = float(Fraction(int(numerator[i]), int(denominator[i])))
    return np.asarray(np.nextafter(ratio, toward))


@takes_spec(explicit=_BOTH, alternatives=_ALTERNATIVES)
def infer_utilisation(
    base_fees: pd.DataFrame | pd.Series,
    *,
    spec: ChainSpec | None = None,
    elasticity_multiplier: Ints | None = None,
    max_change_denominator: Ints | None = None,
) -> pd.DataFrame:
    """Each block's gas used / gas target, inferred from consecutive base fees alone.

    EIP-1559 moves the base fee by ``floor(b * (used - target) / target / d)`` (at least 1
    wei up), so the change ``Δ = b' - b`` to the next block pins ``u = used / target`` to an
    interval of width ``d / b``, set by integer rounding:

    ============  ==========================================
    ``Δ >= 2``    ``1 + Δ d / b  <=  u  <  1 + (Δ + 1) d / b``
    ``Δ == 1``    ``1  <  u  <  1 + 2 d / b``
    ``Δ <= 0``    ``1 + (Δ - 1) d / b  <  u  <=  1 + Δ d / b``
    ============  ==========================================

    At a 10 gwei base fee and ``d = 8`` that is 8e-10 of the target: with the gas limit
    known, under one gas. Neither the gas limit nor the elasticity enters, only ``d``.

    Parameters
    ----------
    base_fees : DataFrame or Series
        Consecutive base fees [wei], oldest first: a frame with ``base_fee_wei`` (and
        ``block_number``: a gap between rows leaves the row before it without inference), or
        a Series (e.g. the Gas API's ``baseFeeHistory``, taken as consecutive blocks).
    spec, chain_id
        As for :func:`next_base_fees`: ``max_change_denominator`` (and the elasticity for the
        consistency check) of each block from the chain spec (default: the frame's attrs);
        ``block_number`` is needed where the spec's parameters change.
    elasticity_multiplier, max_change_denominator : int or array-like, optional
        Instead of a spec; the denominator defaults to 8. The elasticity only caps ``u`` for
        the consistency check (a rise above what a full block gives); without it (or a spec)
        no cap is checked.

    Returns
    -------
    pandas.DataFrame
        One row per input row, same index, columns (dtype):

        ``block_number`` (int64)
            When the input had it.
        ``base_fee_wei`` (int64) [wei]
        ``next_base_fee_wei`` (Int64) [wei]
            The following block's base fee; ``<NA>`` in the last row or before a gap.
        ``gas_used_target_ratio`` (float64) [1]
            The middle of the interval: the point estimate.
        ``gas_used_target_ratio_low``, ``gas_used_target_ratio_high`` (float64) [1]
            The interval's ends, clipped at 0 and widened by one float ulp so that the exact
            ratio always lies within them. NaN where nothing can be inferred (last row, a gap,
            a zero base fee before London, the London block) or where inconsistent.
        ``consistent`` (boolean)
            False where the change is impossible under the parameters (a fall below what an
            empty block gives, a rise above a full block's): the parameters are wrong for
            these blocks. ``<NA>`` where nothing was inferred.

    See Also
    --------
    gas_used_target_ratio : the same ratio from headers, to check against.
    block_states : full and empty blocks from these intervals.

    References
    ----------
    .. [1] EIP-1559, Specification (``base_fee_per_gas_delta``).
    """
    frame = _base_fee_frame(base_fees, "base_fees")
    numbers = _block_numbers(frame, "infer_utilisation", required=False)
    fee, missing = exact_ints(frame["base_fee_wei"], "base_fee_wei")
    if fee.dtype == object:
        raise ValueError("base fees beyond int64 wei are not supported here")
    n = len(frame)
    params = _parameters(
        frame,
        "infer_utilisation",
        offset=1,
        spec=spec,
        elasticity_multiplier=elasticity_multiplier,
        max_change_denominator=max_change_denominator,
    )
    m = max(n - 1, 0)  # pairs of a block and the next
    parent, child = fee[:m], fee[1 : m + 1]
    d = params["max_change_denominator"].fillna(1).to_numpy(dtype=np.int64)[:m]
    full = params["full_ratio"].to_numpy()[:m]
    if spec is None and elasticity_multiplier is None:
        full = np.full(m, np.inf)  # no elasticity given: no ceiling to check against
    valid = (
        _consecutive(numbers, n)
        & ~missing[:m]
        & ~missing[1 : m + 1]
        & (parent > 0)
        & params["max_change_denominator"].notna().to_numpy()[:m]
        & ~params["london_block"].to_numpy()[:m]  # the next block starts EIP-1559 afresh
    )
    change = child - parent
    low_steps = np.where(change >= 2, change, np.where(change == 1, 0, change - 1))
    high_steps = np.where(change >= 1, change + 1, change)
    low = np.maximum(_enclosing_ratio(parent + low_steps * d, parent, -np.inf), 0.0)
    high = _enclosing_ratio(parent + high_steps * d, parent, np.inf)
    # a full block's ratio is limit / (limit // e): above e by less than e / target
    consistent = (high >= 0) & ~(low > full * (1 + 1e-3))
    keep = valid & consistent
    low, high = np.where(keep, low, np.nan), np.where(keep, high, np.nan)

    def pad(values: np.ndarray, fill: float) -> np.ndarray:
        return np.append(values, np.array([fill] * (n - len(values)), dtype=values.dtype))

    next_fee = pd.arrays.IntegerArray(pad(np.where(valid, child, 0), 0), pad(~valid, True))
    flags = pd.array(pad(consistent, False), dtype="boolean")
    flags[~pad(valid, False)] = pd.NA
    out = _carry(pd.DataFrame(index=frame.index), frame, spec)
    if numbers is not None:
        out["block_number"] = numbers
    out["base_fee_wei"] = frame["base_fee_wei"]
    out["next_base_fee_wei"] = next_fee
    out["gas_used_target_ratio"] = pad((low + high) / 2, np.nan)
    out["gas_used_target_ratio_low"] = pad(low, np.nan)
    out["gas_used_target_ratio_high"] = pad(high, np.nan)
    out["consistent"] = flags
    return out


@takes_spec(explicit=("elasticity_multiplier",), alternatives=_ALTERNATIVES)
def block_states(
    utilisation: pd.DataFrame,
    *,
    spec: ChainSpec | None = None,
    elasticity_multiplier: Ints | None = None,
    tolerance: float = 1e-3,
) -> pd.Series:
    """Full, empty and partly filled blocks, from :func:`infer_utilisation`'s intervals.

    A block is *full* when its gas used is at least ``1 - tolerance`` of the gas limit, i.e.
    ``u >= (1 - tolerance) * full_ratio`` with ``full_ratio = limit / target``
    (``elasticity_multiplier``); *empty* when it is at most ``tolerance`` of the limit. The
    decision is made on the whole interval: where rounding leaves it straddling a threshold
    (very low base fees), the state is *unclear* rather than guessed.

    Parameters
    ----------
    utilisation : pandas.DataFrame
        :func:`infer_utilisation`'s result (``gas_used_target_ratio_low`` / ``_high``).
    spec, chain_id, elasticity_multiplier
        The full ratio per block, as for :func:`infer_utilisation` (the spec of
        ``utilisation``'s attrs, which :func:`infer_utilisation` passes on).
    tolerance : float
        Fraction of the gas limit [1]; 0.001 is 30,000 gas of a 30 M limit, about one
        transfer (21,000 gas).

    Returns
    -------
    pandas.Series
        ``state`` (category: ``empty``, ``partial``, ``full``, ``unclear``; NaN where nothing
        was inferred), aligned with ``utilisation``.

    References
    ----------
    .. [1] EIP-1559, Specification (``ELASTICITY_MULTIPLIER``).
    .. [2] Liu et al. 2022 (full blocks and the fee's response to them).
    """
    if not 0 <= tolerance < 0.5:
        raise ValueError(f"tolerance must be in [0, 0.5), got {tolerance!r}")
    for column in ("gas_used_target_ratio_low", "gas_used_target_ratio_high"):
        if column not in utilisation.columns:
            raise ValueError(f"utilisation lacks {column!r}: pass infer_utilisation's result")
    params = _parameters(
        utilisation,
        "block_states",
        offset=1,
        spec=spec,
        elasticity_multiplier=elasticity_multiplier,
        max_change_denominator=None,
    )
    full = params["full_ratio"].to_numpy()
    low = utilisation["gas_used_target_ratio_low"].to_numpy()
    high = utilisation["gas_used_target_ratio_high"].to_numpy()
    full_above, empty_below = (1 - tolerance) * full, tolerance * full
    known = ~np.isnan(low) & ~np.isnan(full)
    state = np.select(
        [
            ~known,
            low >= full_above,
            high <= empty_below,
            (low > empty_below) & (high < full_above),
        ],
        [np.asarray(None), "full", "empty", "partial"],
        default="unclear",
    )
    states = pd.Series(pd.Categorical(state, categories=BLOCK_STATES),
                       index=utilisation.index, name="state")  # fmt: skip
    return _carry(states, utilisation, spec)


# -- volatility and regimes ----------------------------------------------------------------------


def log_returns(base_fees: pd.DataFrame | pd.Series) -> pd.Series:
    """Per-block log change of the base fee, ``ln(b[n] / b[n-1])`` [1].

    Parameters
    ----------
    base_fees : DataFrame or Series
        Base fees [wei] oldest first (``base_fee_wei``; with ``block_number``, a row after a
        gap gets NaN).

    Returns
    -------
    pandas.Series
        ``log_return`` (float64), NaN in the first row, after a gap and next to a zero base
        fee. EIP-1559 bounds it by ``ln(1 + (e - 1) / d)`` above and ``ln(1 - 1 / d)`` below
        (+0.118 and -0.134 on Ethereum).

    References
    ----------
    .. [1] Liu et al. 2022, section 5 (base fee volatility).
    """
    frame = _base_fee_frame(base_fees, "base_fees")
    numbers = _block_numbers(frame, "log_returns", required=False)
    fee, missing = exact_ints(frame["base_fee_wei"], "base_fee_wei")
    values = np.where(missing | (fee <= 0), np.nan, fee.astype(np.float64))
    out = np.full(len(frame), np.nan)
    if len(frame) > 1:
        with np.errstate(invalid="ignore", divide="ignore"):
            step = np.log(values[1:] / values[:-1])
        out[1:] = np.where(_consecutive(numbers, len(frame)), step, np.nan)
    return pd.Series(out, index=frame.index, name="log_return")


def rolling_volatility(
    base_fees: pd.DataFrame | pd.Series,
    *,
    window: int = 100,
    min_periods: int | None = None,
    center: bool = False,
    blocks_per_period: float = 1.0,
) -> pd.Series:
    """Rolling standard deviation of the base fee's log returns.

    Parameters
    ----------
    base_fees : DataFrame or Series
        As for :func:`log_returns`.
    window : int
        Blocks per window [blocks].
    min_periods : int, optional
        Returns needed in a window (default: ``window``).
    center : bool
        Centre the window on each block (describing history) instead of ending it there
        (what was knowable at the block).
    blocks_per_period : float
        Scale to a longer period by ``sqrt(blocks_per_period)`` (e.g. 300 blocks per hour at
        12 s), which assumes returns uncorrelated across blocks; 1 gives per-block volatility.

    Returns
    -------
    pandas.Series
        ``volatility`` (float64) [1 / sqrt(block), or per period]: sample standard deviation
        (ddof 1) of log returns.

    References
    ----------
    .. [1] Liu et al. 2022 (volatility of the base fee under EIP-1559).
    """
    if window < 2:
        raise ValueError(f"window must be at least 2 blocks, got {window!r}")
    if not blocks_per_period > 0:
        raise ValueError(f"blocks_per_period must be positive, got {blocks_per_period!r}")
    returns = log_returns(base_fees)
    rolled = returns.rolling(window, min_periods=min_periods or window, center=center).std()
    return (rolled * math.sqrt(blocks_per_period)).rename("volatility")


@takes_spec(explicit=("max_change_denominator",), alternatives=_ALTERNATIVES)
def fee_regimes(
    base_fees: pd.DataFrame | pd.Series,
    *,
    window: int = 64,
    center: bool = True,
    spec: ChainSpec | None = None,
    max_change_denominator: Ints | None = None,
    drift_threshold: float = 0.25,
    spread_threshold: float = 0.4,
) -> pd.DataFrame:
    """Label each block's fee regime: rising, falling, volatile or calm.

    EIP-1559 moves the base fee by about ``(u - 1) / d`` per block, ``u`` being gas used
    over gas target, so a log return times ``d`` reads as the block's excess utilisation
    ``u - 1``, in the same units on every chain whatever its denominator. Over a window of
    ``window`` blocks its mean is the *drift* and its standard deviation the *spread*:

    - *rising*: drift >= ``drift_threshold`` (blocks sustained above target);
    - *falling*: drift <= -``drift_threshold`` (sustained below target);
    - *volatile*: no drift but spread >= ``spread_threshold`` (blocks swinging between full
      and empty around an equilibrium);
    - *calm*: neither (blocks near target).

    Parameters
    ----------
    base_fees : DataFrame or Series
        As for :func:`log_returns`; ``block_number`` is needed with ``chain_id``.
    window : int
        Blocks per window [blocks].
    center : bool
        Centre the window on each block (default: the regime describes the block's
        neighbourhood) or end it there (causal: what was knowable at the block).
    spec, chain_id, max_change_denominator
        The denominator of each block, as for :func:`infer_utilisation`.
    drift_threshold, spread_threshold : float
        In units of the gas target [1]: 0.25 is a quarter of the target.

    Returns
    -------
    pandas.DataFrame
        Same index, columns: ``block_number`` (when given), ``log_return`` (float64),
        ``drift`` and ``spread`` (float64) [1], and ``regime`` (category of :data:`REGIMES`;
        NaN where the window is incomplete).

    See Also
    --------
    regime_spans : the runs of one regime, for shading.

    References
    ----------
    .. [1] Roughgarden 2020, section 5 (the base fee as a controller of block size).
    .. [2] Liu et al. 2022 (periods of rising and falling base fees).
    """
    if window < 2:
        raise ValueError(f"window must be at least 2 blocks, got {window!r}")
    frame = _base_fee_frame(base_fees, "base_fees")
    params = _parameters(
        frame,
        "fee_regimes",
        offset=0,  # the return into block n is set by the rule computing n's base fee
        spec=spec,
        elasticity_multiplier=None,
        max_change_denominator=max_change_denominator,
    )
    returns = log_returns(frame)
    excess = returns * params["max_change_denominator"].astype("float64")
    rolling = excess.rolling(window, min_periods=window, center=center)
    drift, spread = rolling.mean().to_numpy(), rolling.std().to_numpy()
    regime = np.select(
        [
            np.isnan(drift) | np.isnan(spread),
            drift >= drift_threshold,
            drift <= -drift_threshold,
            spread >= spread_threshold,
        ],
        [np.asarray(None), "rising", "falling", "volatile"],
        default="calm",
    )
    out = _carry(pd.DataFrame(index=frame.index), frame, spec)
    if "block_number" in frame.columns:
        out["block_number"] = frame["block_number"]
    out["log_return"] = returns
    out["drift"] = drift
    out["spread"] = spread
    out["regime"] = pd.Categorical(regime, categories=REGIMES)
    return out


def regime_spans(regimes: pd.DataFrame) -> pd.DataFrame:
    """Runs of consecutive blocks in one regime, from :func:`fee_regimes`.

    Parameters
    ----------
    regimes : pandas.DataFrame
        :func:`fee_regimes`'s result, with ``block_number`` and ``regime``.

    Returns
    -------
    pandas.DataFrame
        One row per run, oldest first: ``regime`` (category), ``first_block``,
        ``last_block`` and ``blocks`` (int64). Blocks without a regime end a run; a gap in
        block numbers does too.
    """
    if "block_number" not in regimes.columns or "regime" not in regimes.columns:
        raise ValueError("regimes needs 'block_number' and 'regime' columns (fee_regimes)")
    numbers = regimes["block_number"].to_numpy(dtype=np.int64)
    labels = regimes["regime"].astype(object).to_numpy()
    known = pd.notna(labels)
    starts = np.ones(len(labels), dtype=bool)
    if len(labels) > 1:
        same = (labels[1:] == labels[:-1]) & known[1:] & known[:-1] & (np.diff(numbers) == 1)
        starts[1:] = ~same
    run = np.cumsum(starts) - 1
    rows = pd.DataFrame({"run": run, "block_number": numbers, "regime": labels})[known]
    spans = rows.groupby("run", sort=True).agg(
        regime=("regime", "first"),
        first_block=("block_number", "min"),
        last_block=("block_number", "max"),
        blocks=("block_number", "size"),
    )
    spans = spans.reset_index(drop=True)
    spans["regime"] = pd.Categorical(spans["regime"], categories=REGIMES)
    return spans.astype({"first_block": "int64", "last_block": "int64", "blocks": "int64"})


# -- Gas API percentiles -----------------------------------------------------------------------


def base_fee_percentile(base_fees: pd.DataFrame | pd.Series, percentile: float = 50) -> int:
    """Nearest-rank percentile of base fees, as the Gas API ranks them [wei].

    The ``p``-th percentile of ``N`` values is the ``ceil(p * N / 100)``-th smallest: an
    observed base fee, exact. Over the last 500 base fees (``Lab.base_fee_history``) the
    50th is the Gas API's ``baseFeePercentile`` and the 90th its ``busyThreshold``.

    Parameters
    ----------
    base_fees : DataFrame or Series
        Base fees [wei] (``base_fee_wei``), without gaps.
    percentile : float
        0..100.

    Returns
    -------
    int
        [wei]

    References
    ----------
    .. [1] MetaMask/Infura Gas API, ``baseFeePercentile`` and ``busyThreshold``.
    """
    frame = _base_fee_frame(base_fees, "base_fees")
    fee, missing = exact_ints(frame["base_fee_wei"], "base_fee_wei")
    if missing.any():
        raise ValueError("base_fees has missing values: drop pre-London rows first")
    if len(fee) == 0:
        raise ValueError("base_fees is empty")
    k = nearest_rank_index(len(fee), percentile)
    return int(np.partition(fee, k)[k])


def busy_threshold(base_fees: pd.DataFrame | pd.Series) -> int:
    """The Gas API's ``busyThreshold``: nearest-rank 90th percentile of base fees [wei]."""
    return base_fee_percentile(base_fees, 90)


def _rolling_rank(
    values: np.ndarray, window: int, min_periods: int, percentile: float
) -> np.ndarray:
    """Nearest-rank percentile of each trailing window; -1 where it has too few values."""
    n = len(values)
    out = np.full(n, -1, dtype=np.int64)
    for i in range(min(n, window - 1)):
        if i + 1 >= min_periods:
            k = nearest_rank_index(i + 1, percentile)
            out[i] = np.partition(values[: i + 1], k)[k]
    if n >= window:
        k = nearest_rank_index(window, percentile)
        views = np.lib.stride_tricks.sliding_window_view(values, window)
        chunk = max(1, 4_000_000 // window)  # about 32 MB of int64 per partition
        for start in range(0, len(views), chunk):
            part = np.partition(views[start : start + chunk], k, axis=1)
            out[window - 1 + start : window - 1 + start + len(part)] = part[:, k]
    return out


def gas_api_percentiles(
    base_fees: pd.DataFrame | pd.Series,
    *,
    window: int = GAS_API_WINDOW,
    min_periods: int | None = None,
) -> pd.DataFrame:
    """What the Gas API's ``baseFeePercentile`` and ``busyThreshold`` said at each block.

    Each row ranks the base fees of the ``window`` blocks ending at it (the Gas API's history
    window when that block is the head), by nearest rank, exactly.

    Parameters
    ----------
    base_fees : DataFrame or Series
        Consecutive post-London base fees [wei], oldest first.
    window : int
        Blocks per window (the Gas API's 500).
    min_periods : int, optional
        Fewest blocks a window may hold (default ``window``: earlier rows are ``<NA>``).

    Returns
    -------
    pandas.DataFrame
        Same index, columns: ``block_number`` (when given), ``base_fee_wei``,
        ``base_fee_percentile_wei`` and ``busy_threshold_wei`` (Int64) [wei], their
        ``_gwei`` twins (float64) [gwei], and ``busy`` (boolean: the base fee is at or above
        the busy threshold).

    References
    ----------
    .. [1] MetaMask/Infura Gas API, ``baseFeePercentile``, ``busyThreshold``.
    """
    if window < 1:
        raise ValueError(f"window must be at least 1 block, got {window!r}")
    min_periods = window if min_periods is None else min_periods
    if not 1 <= min_periods <= window:
        raise ValueError(f"min_periods must be in 1..window, got {min_periods!r}")
    frame = _base_fee_frame(base_fees, "base_fees")
    numbers = _block_numbers(frame, "gas_api_percentiles", required=False)
    fee, missing = exact_ints(frame["base_fee_wei"], "base_fee_wei")
    if missing.any() or fee.dtype == object:
        raise ValueError("base_fees must be complete int64 wei: drop pre-London rows first")
    if not _consecutive(numbers, len(fee)).all():
        raise ValueError("base_fees must be consecutive blocks (block_number has gaps)")
    out = _carry(pd.DataFrame(index=frame.index), frame)
    if numbers is not None:
        out["block_number"] = numbers
    out["base_fee_wei"] = fee
    for name, pct in (("base_fee_percentile", 50), ("busy_threshold", 90)):
        ranked = _rolling_rank(fee, window, min_periods, pct)
        out[f"{name}_wei"] = pd.arrays.IntegerArray(np.maximum(ranked, 0), ranked < 0)
    for name in ("base_fee_percentile", "busy_threshold"):
        out[f"{name}_gwei"] = out[f"{name}_wei"].astype("float64") / GWEI
    out["busy"] = (out["base_fee_wei"] >= out["busy_threshold_wei"]).astype("boolean")
    return out


# -- forecast bounds ---------------------------------------------------------------------------


def _extreme_steps(
    fee: np.ndarray,
    steps: int,
    *,
    elasticity: int,
    denominator: int,
    gas_limit: int | None,
    gas_target_percent: int | None,
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """Base fees after ``steps`` empty blocks and ``steps`` full ones, with every step."""
    if gas_limit is None:
        if gas_target_percent is not None:
            raise ValueError("gas_target_percent needs gas_limit= (the target depends on it)")
        gas_limit = elasticity * _BOUNDS_TARGET
    n = len(fee)

    def step(values: np.ndarray, used: int) -> np.ndarray:
        result = next_base_fee(
            pd.Series(values, dtype=object if values.dtype == object else np.int64),
            used,
            gas_limit,
            elasticity_multiplier=elasticity,
            max_change_denominator=denominator,
            gas_target_percent=gas_target_percent,
        )
        return np.asarray(result.to_numpy(dtype=object if result.dtype == object else np.int64))

    low, high = fee.copy(), fee.copy()
    lows, highs = [low], [high]
    for _ in range(steps):
        low, high = step(low, 0), step(high, gas_limit)
        lows.append(low)
        highs.append(high)
    assert all(len(x) == n for x in lows)
    return low, high, lows, highs


def _check_params(
    elasticity_multiplier: int, max_change_denominator: int, gas_limit: int | None
) -> None:
    for name, value in (
        ("elasticity_multiplier", elasticity_multiplier),
        ("max_change_denominator", max_change_denominator),
    ):
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, not {value!r}")
    if gas_limit is not None and (not isinstance(gas_limit, int | np.integer) or gas_limit < 1):
        raise ValueError(f"gas_limit must be a positive int [gas], not {gas_limit!r}")


def base_fee_bounds(
    base_fee: int,
    horizon: int,
    *,
    elasticity_multiplier: int = 2,
    max_change_denominator: int = 8,
    gas_limit: int | None = None,
    gas_target_percent: int | None = None,
) -> pd.DataFrame:
    """Lowest and highest base fee reachable 0 .. ``horizon`` blocks after a known one.

    The lowest follows empty blocks (``b - b // d`` each), the highest full ones (``b +
    max(1, b * (e - 1) // d)`` when the gas limit is a multiple of ``e``), in exact integers:
    no base fee ``k`` blocks later can lie outside, whatever the blocks hold.

    Parameters
    ----------
    base_fee : int
        A block's base fee [wei], e.g. the next block's (``eth_feeHistory``'s last value, or
        :func:`next_base_fee` of the head), which is block 0.
    horizon : int
        Blocks ahead [blocks].
    elasticity_multiplier, max_change_denominator : int
        The chain's parameters (2 and 8 on Ethereum).
    gas_limit : int, optional
        The gas limit [gas], for a limit that is not a multiple of ``elasticity_multiplier``
        (the highest rise is then a few wei larger) or with ``gas_target_percent``.
    gas_target_percent : int, optional
        As for :func:`next_base_fee` (needs ``gas_limit``).

    Returns
    -------
    pandas.DataFrame
        ``horizon + 1`` rows: ``blocks_ahead`` (int64), ``lowest_base_fee_wei`` and
        ``highest_base_fee_wei`` (int64, or Python ints past int64) [wei], and their
        ``_gwei`` twins (float64) [gwei].

    See Also
    --------
    max_fee_per_gas : the maxFeePerGas that stays includable for k blocks.
    base_fee_range : the same bounds for every row of a series.

    References
    ----------
    .. [1] EIP-1559, Specification; Rationale ("the base fee can increase by at most 12.5%
       per block").
    """
    _check_params(elasticity_multiplier, max_change_denominator, gas_limit)
    if not isinstance(horizon, int | np.integer) or isinstance(horizon, bool) or horizon < 0:
        raise ValueError(f"horizon must be a non-negative number of blocks, not {horizon!r}")
    fee, _ = exact_ints(base_fee, "base_fee")
    if fee[0] < 0:
        raise ValueError(f"base_fee must be non-negative, got {base_fee!r}")
    _, _, lows, highs = _extreme_steps(
        fee,
        int(horizon),
        elasticity=int(elasticity_multiplier),
        denominator=int(max_change_denominator),
        gas_limit=gas_limit,
        gas_target_percent=gas_target_percent,
    )
    low = np.concatenate([x.astype(object) for x in lows])
    high = np.concatenate([x.astype(object) for x in highs])
    none = np.zeros(len(low), dtype=bool)
    index = pd.RangeIndex(len(low))
    frame = pd.DataFrame({"blocks_ahead": np.arange(len(low), dtype=np.int64)})
    frame["lowest_base_fee_wei"] = exact_series(low, none, index, "lowest")
    frame["highest_base_fee_wei"] = exact_series(high, none, index, "highest")
    frame["lowest_base_fee_gwei"] = frame["lowest_base_fee_wei"].astype("float64") / GWEI
    frame["highest_base_fee_gwei"] = frame["highest_base_fee_wei"].astype("float64") / GWEI
    return frame


def base_fee_range(
    base_fees: pd.DataFrame | pd.Series,
    blocks_ahead: int,
    *,
    elasticity_multiplier: int = 2,
    max_change_denominator: int = 8,
    gas_limit: int | None = None,
    gas_target_percent: int | None = None,
) -> pd.DataFrame:
    """For each row, the lowest and highest base fee ``blocks_ahead`` blocks later [wei].

    :func:`base_fee_bounds` at one horizon, vectorised over a series: a hard envelope that
    the realised base fee ``blocks_ahead`` rows later must respect (a back-test of it checks
    the parameters).

    Parameters
    ----------
    base_fees : DataFrame or Series
        Base fees [wei] (``base_fee_wei``).
    blocks_ahead : int
        [blocks]
    elasticity_multiplier, max_change_denominator, gas_limit, gas_target_percent
        As for :func:`base_fee_bounds`.

    Returns
    -------
    pandas.DataFrame
        Same index: ``block_number`` (when given), ``lowest_base_fee_wei``,
        ``highest_base_fee_wei`` (int64, Int64 where the input is missing, or Python ints
        past int64) [wei].
    """
    _check_params(elasticity_multiplier, max_change_denominator, gas_limit)
    if not isinstance(blocks_ahead, int | np.integer) or blocks_ahead < 0:
        raise ValueError(f"blocks_ahead must be a non-negative int, not {blocks_ahead!r}")
    frame = _base_fee_frame(base_fees, "base_fees")
    fee, missing = exact_ints(frame["base_fee_wei"], "base_fee_wei")
    if (fee[~missing] < 0).any():
        raise ValueError("base fees must be non-negative")
    low, high, _, _ = _extreme_steps(
        np.where(missing, 0, fee),
        int(blocks_ahead),
        elasticity=int(elasticity_multiplier),
        denominator=int(max_change_denominator),
        gas_limit=gas_limit,
        gas_target_percent=gas_target_percent,
    )
    out = _carry(pd.DataFrame(index=frame.index), frame)
    if "block_number" in frame.columns:
        out["block_number"] = frame["block_number"]
    out["lowest_base_fee_wei"] = exact_series(low, missing, frame.index, "lowest")
    out["highest_base_fee_wei"] = exact_series(high, missing, frame.index, "highest")
    return out


def max_fee_per_gas(
    base_fee: int,
    blocks: int,
    *,
    priority_fee_wei: int = 0,
    elasticity_multiplier: int = 2,
    max_change_denominator: int = 8,
    gas_limit: int | None = None,
    gas_target_percent: int | None = None,
) -> int:
    """The smallest maxFeePerGas that stays includable for ``blocks`` blocks, tip included.

    A transaction is includable while its maxFeePerGas covers the block's base fee, and pays
    its full tip while it covers base fee plus ``priority_fee_wei``. Over blocks ``0 ..
    blocks - 1`` (block 0 has ``base_fee``) the base fee can reach at most
    :func:`base_fee_bounds`' highest at ``blocks - 1``, so that plus the tip is enough
    whatever the blocks hold.

    Parameters
    ----------
    base_fee : int
        Base fee of the first block the transaction could enter (the next block) [wei].
    blocks : int
        Blocks it must stay includable for, >= 1 [blocks].
    priority_fee_wei : int
        maxPriorityFeePerGas [wei/gas].
    elasticity_multiplier, max_change_denominator, gas_limit, gas_target_percent
        As for :func:`base_fee_bounds`.

    Returns
    -------
    int
        [wei/gas]

    References
    ----------
    .. [1] EIP-1559, Specification (``assert transaction.max_fee_per_gas >=
       block.base_fee_per_gas``); the common ``2 * base fee + tip`` rule of thumb covers
       about six full blocks at ``d = 8``.
    """
    if not isinstance(blocks, int | np.integer) or isinstance(blocks, bool) or blocks < 1:
        raise ValueError(f"blocks must be an int >= 1, not {blocks!r}")
    if not isinstance(priority_fee_wei, int | np.integer) or priority_fee_wei < 0:
        raise ValueError(f"priority_fee_wei must be a non-negative int, not {priority_fee_wei!r}")
    bounds = base_fee_bounds(
        base_fee,
        int(blocks) - 1,
        elasticity_multiplier=elasticity_multiplier,
        max_change_denominator=max_change_denominator,
        gas_limit=gas_limit,
        gas_target_percent=gas_target_percent,
    )
    return int(bounds["highest_base_fee_wei"].iloc[-1]) + int(priority_fee_wei)


def includable_blocks(
    max_fee_per_gas: Ints,
    base_fee: int,
    *,
    elasticity_multiplier: int = 2,
    max_change_denominator: int = 8,
    gas_limit: int | None = None,
    gas_target_percent: int | None = None,
    cap: int = 100_000,
) -> int | pd.Series:
    """For how many blocks a maxFeePerGas is sure to stay includable (the inverse).

    Parameters
    ----------
    max_fee_per_gas : int or array-like of int
        maxFeePerGas [wei/gas].
    base_fee : int
        Base fee of the first block the transaction could enter [wei].
    elasticity_multiplier, max_change_denominator, gas_limit, gas_target_percent
        As for :func:`base_fee_bounds`.
    cap : int
        Stop counting here [blocks].

    Returns
    -------
    int or pandas.Series
        The number ``k`` of blocks ``0 .. k - 1`` whose base fee it covers even if every
        block is full: 0 when it is below ``base_fee``; int64 per row for array input.
    """
    _check_params(elasticity_multiplier, max_change_denominator, gas_limit)
    scalar = isinstance(max_fee_per_gas, int | np.integer)
    index = max_fee_per_gas.index if isinstance(max_fee_per_gas, pd.Series) else None
    fees, missing = exact_ints(max_fee_per_gas, "max_fee_per_gas")
    if missing.any():
        raise ValueError("max_fee_per_gas has missing values")
    fees = fees.astype(object)
    start, _ = exact_ints(base_fee, "base_fee")
    if start[0] < 0:
        raise ValueError(f"base_fee must be non-negative, got {base_fee!r}")
    if gas_limit is None and gas_target_percent is not None:
        raise ValueError("gas_target_percent needs gas_limit= (the target depends on it)")
    limit = int(elasticity_multiplier) * _BOUNDS_TARGET if gas_limit is None else int(gas_limit)
    caps = [int(f) for f in fees]
    level = int(start[0])  # the base fee if every block from here on is full
    counts = np.zeros(len(caps), dtype=np.int64)
    open_ = np.array([level <= c for c in caps], dtype=bool)
    while open_.any() and np.max(counts) < cap:
        counts[open_] += 1
        level = eip1559.next_base_fee(
            level,
            limit,
            limit,
            int(elasticity_multiplier),
            int(max_change_denominator),
            gas_target_percent=gas_target_percent,
        )
        open_ &= np.array([level <= c for c in caps], dtype=bool)
    if scalar:
        return int(counts[0])
    return pd.Series(counts, index=index, name="includable_blocks")


# -- chains compared ---------------------------------------------------------------------------


@takes_spec(explicit=_BOTH, alternatives=_ALTERNATIVES)
def fee_summary(
    base_fees: pd.DataFrame,
    *,
    spec: ChainSpec | None = None,
    elasticity_multiplier: int | None = None,
    max_change_denominator: int | None = None,
    tolerance: float = 1e-3,
    name: str | None = None,
) -> pd.Series:
    """One chain's fee market in a few numbers, comparable across chains.

    Parameters
    ----------
    base_fees : pandas.DataFrame
        Consecutive post-London base fees (``base_fee_wei``, with ``block_number`` where
        the spec's parameters change).
    spec, chain_id, elasticity_multiplier, max_change_denominator
        As for :func:`infer_utilisation`: the frame's attrs' spec by default, or explicit
        parameters; ``max_rise`` and ``max_fall`` use the last block's parameters.
    tolerance : float
        As for :func:`block_states`.
    name : str, optional
        The Series' name (e.g. the network).

    Returns
    -------
    pandas.Series
        float64 values:

        ``blocks`` [blocks]
        ``median_base_fee_gwei``, ``busy_threshold_gwei`` [gwei]
            Nearest-rank 50th and 90th percentiles, as the Gas API ranks them.
        ``max_rise``, ``max_fall`` [1]
            Relative change after a full block, ``(e - 1) / d``, and an empty one, ``1 / d``.
        ``volatility`` [1 / sqrt(block)]
            Standard deviation of per-block log returns.
        ``scaled_volatility`` [1]
            The same with each return times its ``d``: about the standard deviation of gas
            used / target, comparable across denominators (see :func:`fee_regimes`).
        ``mean_gas_used_target_ratio`` [1]
            Mean inferred gas used / target (:func:`infer_utilisation`).
        ``full_share``, ``empty_share`` [1]
            Of the blocks whose state :func:`block_states` decides.

    References
    ----------
    .. [1] Liu et al. 2022; the chains' parameters are in ``data/chains.json``.
    """
    frame = _base_fee_frame(base_fees, "base_fees")
    params = _parameters(
        frame,
        "fee_summary",
        offset=0,
        spec=spec,
        elasticity_multiplier=elasticity_multiplier,
        max_change_denominator=max_change_denominator,
    )
    if params["max_change_denominator"].isna().any():
        raise ChainSpecError(
            "fee_summary: some rows come before London, where no base-fee rule applies: "
            "pass post-London base fees only"
        )
    if len(frame) == 0:
        raise ValueError("fee_summary: base_fees is empty")
    if spec is not None:
        inferred = infer_utilisation(frame, spec=spec)
        states = block_states(inferred, tolerance=tolerance, spec=spec)
    else:
        inferred = infer_utilisation(frame, elasticity_multiplier=elasticity_multiplier,
                                     max_change_denominator=max_change_denominator)  # fmt: skip
        states = block_states(inferred, tolerance=tolerance,
                              elasticity_multiplier=elasticity_multiplier or _DEFAULT_ELASTICITY)
    returns = log_returns(frame)
    d = float(params["max_change_denominator"].iloc[-1])
    full = float(params["full_ratio"].iloc[-1])
    decided = states[states.isin(["empty", "partial", "full"])]
    return pd.Series(
        {
            "blocks": float(len(inferred)),
            "median_base_fee_gwei": base_fee_percentile(base_fees, 50) / GWEI,
            "busy_threshold_gwei": busy_threshold(base_fees) / GWEI,
            "max_rise": (full - 1) / d,
            "max_fall": 1 / d,
            "volatility": float(returns.std()),
            "scaled_volatility": float(
                (returns * params["max_change_denominator"].astype("float64")).std()
            ),
            "mean_gas_used_target_ratio": float(inferred["gas_used_target_ratio"].mean()),
            "full_share": float((decided == "full").mean()) if len(decided) else math.nan,
            "empty_share": float((decided == "empty").mean()) if len(decided) else math.nan,
        },
        name=name,
    )


# -- tips inside whole blocks ----------------------------------------------------------------


def _tip_rows(
    transactions: pd.DataFrame, tip: str, weight: str | None, by: str
) -> tuple[pd.DataFrame, str]:
    needed = [by, tip] + ([weight] if weight else [])
    absent = [c for c in needed if c not in transactions.columns]
    if absent:
        raise ValueError(f"transactions lacks {absent}: pass a transactions frame with receipts")
    rows = transactions[needed].dropna()
    if weight is None:
        rows = rows.assign(_weight=1)
        weight = "_weight"
    return rows, weight


def tip_percentiles(
    transactions: pd.DataFrame,
    percentiles: Sequence[float] = (10, 50, 90),
    *,
    tip: str = "effective_tip_wei",
    weight: str | None = "gas_used",
    by: str = "block_number",
) -> pd.DataFrame:
    """Percentiles of the tips transactions paid, per block, weighted by gas as geth does.

    geth's ``eth_feeHistory`` reward percentile p is the tip of the transaction at which the
    cumulative gas used, in order of tip, first reaches p % of the block's gas used; this
    computes the same from the transactions themselves (each transaction's tip from its
    receipt: effective gas price minus the base fee).

    Parameters
    ----------
    transactions : pandas.DataFrame
        One row per transaction with ``by``, ``tip`` [wei per gas] and ``weight`` [gas].
    percentiles : sequence of float
        In [0, 100].
    tip : str, default "effective_tip_wei"
        The tip column [wei per gas].
    weight : str or None, default "gas_used"
        The weight column [gas]; None counts transactions equally.
    by : str, default "block_number"
        The grouping column.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``by``: ``transactions`` (int64) and one ``tip_p<p>_wei`` (int64) column per
        percentile [wei per gas]: a tip that was paid, never an interpolation.

    Raises
    ------
    ValueError
        For a missing column or a percentile outside [0, 100].

    References
    ----------
    .. [1] go-ethereum ``eth/gasprice/feehistory.go`` (``processBlock``: rewards by cumulative
       gas used).
    """
    for p in percentiles:
        if not 0 <= p <= 100:
            raise ValueError(f"percentiles must lie in [0, 100], got {p}")
    rows, weight = _tip_rows(transactions, tip, weight, by)
    out: dict[object, dict[str, int]] = {}
    for key, group in rows.groupby(by, sort=True):
        ordered = group.sort_values(tip, kind="stable")
        tips = ordered[tip].to_numpy(dtype=np.int64)
        cumulative = np.cumsum(ordered[weight].to_numpy(dtype=np.float64))
        total = cumulative[-1]
        row = {"transactions": len(tips)}
        for p in percentiles:
            # the first transaction whose cumulative gas reaches p % of the block's (geth)
            at = min(int(np.searchsorted(cumulative, total * p / 100, side="left")), len(tips) - 1)
            row[f"tip_p{p:g}_wei"] = int(tips[at])
        out[key] = row
    frame = pd.DataFrame.from_dict(out, orient="index")
    frame.index.name = by
    return frame.astype(np.int64)


def tip_cdf(
    transactions: pd.DataFrame,
    *,
    tip: str = "effective_tip_wei",
    weight: str | None = "gas_used",
    by: str = "block_number",
) -> pd.DataFrame:
    """The distribution of tips inside each block: share of gas (or transactions) at or below a tip.

    Parameters
    ----------
    transactions : pandas.DataFrame
        As for :func:`tip_percentiles`.
    tip, weight, by : str
        As for :func:`tip_percentiles`.

    Returns
    -------
    pandas.DataFrame
        One row per distinct tip per group, ascending: ``by``, ``tip_wei`` (int64) [wei per
        gas], ``share`` (float64, in (0, 1]: the part of the group's gas, or transactions,
        paying at most this tip). The last row of each group has share 1.
    """
    rows, weight = _tip_rows(transactions, tip, weight, by)
    summed = rows.groupby([by, tip], sort=True)[weight].sum().astype(np.float64)
    share = summed.groupby(level=0).cumsum() / summed.groupby(level=0).transform("sum")
    out = share.rename("share").reset_index().rename(columns={tip: "tip_wei"})
    return out.astype({"tip_wei": np.int64})

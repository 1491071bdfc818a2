"""What blocks paid their miners (or proposers): composition, windows, heavy tails, forks.

Pure functions on a *revenue frame*: one row per block, exact integer wei columns (int64,
``Int64`` or Python ints), of any span and any chain:

``block_number`` (int)
    Required.
``static_reward_wei``, ``uncle_inclusion_reward_wei`` [wei]
    The protocol's block reward and its 1/32 per included uncle (0 after the merge).
``gas_fee_wei`` [wei]
    What the block's transactions paid in gas to the miner: the whole fee before EIP-1559,
    the tips (priority fees) after it. Or, instead, ``flashbots_bundle_gas_fee_wei`` and
    ``other_gas_fee_wei``, whose sum it is.
``flashbots_bundle_gas_fee_wei``, ``flashbots_coinbase_transfer_wei`` [wei], optional
    The gas fees of transactions in Flashbots bundles (part of the gas fees) and what
    bundles paid the miner directly (coinbase transfers, on top of them).
``burn_wei`` [wei], optional
    The base fee burned (EIP-1559): not the miner's, carried for comparison.

:func:`feeslab.samples.miner_revenue_2021` (Liu et al.'s 800,000 blocks) is such a frame;
:func:`revenue_from_transactions` builds one for any range from ``Lab.blocks`` and
``Lab.transactions`` (no bundle columns: a node does not say which transactions came in
bundles). What is here::

    composition   revenue_composition (per block, ETH and shares), revenue_by_window
    sources       revenue_from_transactions (burn and tips from blocks and transactions)
    heavy tails   top_block_shares, largest_blocks
    forks         uncle_rate_by_revenue (do blocks with bundles, or high fees, fork more?)

The before/after comparison of any column is :func:`feeslab.analysis.events.event_study`.

References
----------
.. [1] Y. Liu, Y. Lu, K. Nayak, F. Zhang, L. Zhang, Y. Zhao, "Empirical Analysis of
   EIP-1559: Transaction Fees, Waiting Time, and Consensus Security", ACM CCS 2022,
   arXiv:2201.05574 (section 6, miner revenue and MEV).
.. [2] EIP-1559: Fee market change for ETH 1.0 chain (the base fee is burned, the tip paid).
.. [3] P. Daian et al., "Flash Boys 2.0: Frontrunning in decentralized exchanges, miner
   extractable value, and consensus instability", IEEE S&P 2020.
.. [4] EIP-1234 (the 2 ETH block reward and 1/32 per uncle); EIP-3675 (none after the merge).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from feeslab.analysis._exact import exact_ints
from feeslab.analysis._spec import takes_spec
from feeslab.analysis.blobs import fee_burn
from feeslab.analysis.uncles import block_reward, uncle_rate
from feeslab.protocol.chainspec import ChainSpec

__all__ = [
    "COMPONENTS",
    "largest_blocks",
    "revenue_by_window",
    "revenue_composition",
    "revenue_from_transactions",
    "top_block_shares",
    "uncle_rate_by_revenue",
]

_WEI_PER_ETH = 10**18
#: The parts of a block's revenue, in the order the frames list them; the total is their sum
#: (the bundle gas fees are inside the gas fees, so not a part of their own).
COMPONENTS = ("static_reward", "uncle_inclusion_reward", "gas_fee", "flashbots_coinbase_transfer")


# -- inputs ----------------------------------------------------------------------------------


def _column(frame: pd.DataFrame, name: str, what: str) -> np.ndarray:
    """An exact non-negative integer column [wei] as int64 or Python ints (``object``)."""
    series = frame[name]
    if series.dtype == object:
        items = series.tolist()
        # the common case, a column of Python ints, checked at C speed; anything else
        # (None, floats, numpy ints) goes through the full checker and its messages
        if set(map(type, items)) <= {int} and (not items or min(items) >= 0):
            return np.asarray(series.to_numpy(), dtype=object)
    values, missing = exact_ints(series, f"{what}: {name}")
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise ValueError(f"{what}: {name!r} is missing at block "
                         f"{int(frame['block_number'].iloc[row])}")  # fmt: skip
    if (values < 0).any():
        row = int(np.flatnonzero(values < 0)[0])
        raise ValueError(f"{what}: {name!r} is negative at block "
                         f"{int(frame['block_number'].iloc[row])}")  # fmt: skip
    return values


def _exact_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise sum as Python ints (no int64 wrap-around)."""
    return np.asarray(a.astype(object) + b.astype(object), dtype=object)


def _wei_parts(revenue: object, what: str) -> dict[str, np.ndarray]:
    """The revenue frame's parts [wei] by name (gas fees summed from their two parts when
    the frame splits them), every one exact."""
    if not isinstance(revenue, pd.DataFrame):
        raise TypeError(f"{what}: revenue must be a pandas DataFrame, not "
                        f"{type(revenue).__name__}")  # fmt: skip
    if "block_number" not in revenue.columns:
        raise ValueError(f"{what}: revenue has no 'block_number' column")
    numbers = revenue["block_number"]
    if not pd.api.types.is_integer_dtype(numbers.dtype) or numbers.duplicated().any():
        raise ValueError(f"{what}: revenue's block_number must be integers, each block once")
    parts: dict[str, np.ndarray] = {}
    for name in (*COMPONENTS, "flashbots_bundle_gas_fee", "other_gas_fee", "burn"):
        if f"{name}_wei" in revenue.columns:
            parts[name] = _column(revenue, f"{name}_wei", what)
    if "gas_fee" not in parts and {"flashbots_bundle_gas_fee", "other_gas_fee"} <= set(parts):
        parts["gas_fee"] = _exact_add(parts["flashbots_bundle_gas_fee"], parts["other_gas_fee"])
    if not any(name in parts for name in COMPONENTS):
        raise ValueError(
            f"{what}: revenue has none of the columns "
            f"{', '.join(f'{c}_wei' for c in COMPONENTS)} (nor flashbots_bundle_gas_fee_wei "
            f"with other_gas_fee_wei); it has {list(revenue.columns)}"
        )
    parts.pop("other_gas_fee", None)
    return parts


def _eth(values: np.ndarray) -> np.ndarray:
    """Wei to ETH as float64: the wei rounded to the nearest double, then divided by 1e18
    (a double exactly), so within one unit in the last place of the exact quotient."""
    return np.asarray(values, dtype=np.float64) / float(_WEI_PER_ETH)


def _shares(out: pd.DataFrame, parts: Sequence[str]) -> None:
    """``<part>_share`` of ``total_eth`` for each part, NaN where the total is 0."""
    total = out["total_eth"].to_numpy()
    safe = np.where(total > 0, total, 1.0)
    for name in parts:
        out[f"{name}_share"] = np.where(total > 0, out[f"{name}_eth"].to_numpy() / safe, np.nan)


# -- composition -----------------------------------------------------------------------------


def revenue_composition(revenue: pd.DataFrame) -> pd.DataFrame:
    """Each block's revenue by part, in ETH and as shares of its total.

    Parameters
    ----------
    revenue : pandas.DataFrame
        A revenue frame (see the module's docstring): ``block_number`` and any of its wei
        columns, e.g. :func:`feeslab.samples.miner_revenue_2021` or
        :func:`revenue_from_transactions`.

    Returns
    -------
    pandas.DataFrame
        One row per block, in the frame's order: ``block_number`` (int64); ``<part>_eth``
        (float64) [ETH] for each part present among :data:`COMPONENTS` (``static_reward``,
        ``uncle_inclusion_reward``, ``gas_fee``, ``flashbots_coinbase_transfer``);
        ``total_eth`` [ETH], their sum; ``<part>_share`` (float64, of ``total_eth``; NaN
        where it is 0). With bundle columns also ``flashbots_bundle_gas_fee_eth`` [ETH],
        ``bundle_eth`` [ETH] (bundles' gas fees and coinbase transfers), their shares
        ``flashbots_bundle_gas_fee_share`` and ``bundle_share`` (of ``total_eth``) and
        ``has_bundle`` (bool: the block paid its miner through a bundle). With
        ``burn_wei``, ``burn_eth`` [ETH] (not in the total). ``attrs``: the frame's.

    Raises
    ------
    TypeError, ValueError
        A wei column holds floats (they lose wei) or missing or negative values, no part is
        present, or a block is listed twice.

    References
    ----------
    .. [1] Liu et al., CCS 2022 (arXiv:2201.05574), section 6.
    """
    parts = _wei_parts(revenue, "revenue_composition")
    out = pd.DataFrame({"block_number": revenue["block_number"].to_numpy(dtype=np.int64)})
    present = [name for name in COMPONENTS if name in parts]
    for name in present:
        out[f"{name}_eth"] = _eth(parts[name])
    # the total summed exactly in wei, then converted
    exact = parts[present[0]].astype(object)
    for name in present[1:]:
        exact = exact + parts[name].astype(object)
    out["total_eth"] = _eth(np.asarray(exact, dtype=object))
    _shares(out, present)
    if "flashbots_bundle_gas_fee" in parts:
        bundle = parts["flashbots_bundle_gas_fee"]
        out["flashbots_bundle_gas_fee_eth"] = _eth(bundle)
        transfers = parts.get("flashbots_coinbase_transfer", np.zeros(len(out), dtype=np.int64))
        out["bundle_eth"] = _eth(_exact_add(bundle, transfers))
        _shares(out, ["flashbots_bundle_gas_fee", "bundle"])
        paid = bundle.astype(object) + transfers.astype(object)
        out["has_bundle"] = np.asarray(paid > 0, dtype=bool)
    if "burn" in parts:
        out["burn_eth"] = _eth(parts["burn"])
    out.index = revenue.index
    out.attrs.update(revenue.attrs)
    return out


def revenue_by_window(revenue: pd.DataFrame, window: int = 10_000) -> pd.DataFrame:
    """Revenue summed over aligned windows of blocks, ``[k * window, (k + 1) * window)``:
    totals in ETH, means per block and each part's share of the window's revenue.

    Parameters
    ----------
    revenue : pandas.DataFrame
        A revenue frame (see :func:`revenue_composition`).
    window : int
        Blocks per window [blocks].

    Returns
    -------
    pandas.DataFrame
        One row per window holding blocks, indexed by ``window_start`` (int64, the first
        block number of the window): ``blocks`` (int64, blocks of the frame in it),
        ``<part>_eth`` (float64) [ETH] summed exactly in wei, then converted, ``total_eth``
        [ETH], ``mean_total_eth`` [ETH per block], ``<part>_share`` (of ``total_eth``), and
        with bundle columns ``flashbots_bundle_gas_fee_eth``, ``bundle_eth`` [ETH], their
        shares ``flashbots_bundle_gas_fee_share``, ``bundle_share`` and
        ``blocks_with_bundle`` (int64); with ``burn_wei``,
        ``burn_eth`` [ETH].

    Raises
    ------
    ValueError
        ``window`` is not a positive integer, or as :func:`revenue_composition`.
    """
    if isinstance(window, bool) or not isinstance(window, int | np.integer) or window < 1:
        raise ValueError(f"window must be a positive integer [blocks], got {window!r}")
    parts = _wei_parts(revenue, "revenue_by_window")
    numbers = revenue["block_number"].to_numpy(dtype=np.int64)
    order = np.argsort(numbers, kind="stable")
    starts_of = numbers[order] // window * window
    edges = np.flatnonzero(np.r_[True, starts_of[1:] != starts_of[:-1]])
    out = pd.DataFrame(index=pd.Index(starts_of[edges], name="window_start"))
    out["blocks"] = np.diff(np.r_[edges, len(order)]).astype(np.int64)

    def summed(values: np.ndarray) -> np.ndarray:  # exact: Python ints added
        return np.asarray(np.add.reduceat(values[order].astype(object), edges), dtype=object)

    present = [name for name in COMPONENTS if name in parts]
    sums = {name: summed(parts[name]) for name in parts}
    for name in present:
        out[f"{name}_eth"] = _eth(sums[name])
    total = sums[present[0]]
    for name in present[1:]:
        total = total + sums[name]
    out["total_eth"] = _eth(np.asarray(total, dtype=object))
    out["mean_total_eth"] = out["total_eth"] / out["blocks"]
    _shares(out, present)
    if "flashbots_bundle_gas_fee" in sums:
        bundle = sums["flashbots_bundle_gas_fee"]
        transfers = sums.get("flashbots_coinbase_transfer", np.zeros(len(out), dtype=object))
        out["flashbots_bundle_gas_fee_eth"] = _eth(bundle)
        out["bundle_eth"] = _eth(np.asarray(bundle + transfers, dtype=object))
        _shares(out, ["flashbots_bundle_gas_fee", "bundle"])
        paid = parts["flashbots_bundle_gas_fee"].astype(object)
        if "flashbots_coinbase_transfer" in parts:
            paid = paid + parts["flashbots_coinbase_transfer"].astype(object)
        with_bundle = (paid > 0).astype(np.int64)[order]
        out["blocks_with_bundle"] = np.add.reduceat(with_bundle, edges).astype(np.int64)
    if "burn" in sums:
        out["burn_eth"] = _eth(sums["burn"])
    out.attrs.update(revenue.attrs)
    out.attrs["window"] = int(window)
    return out


# -- from blocks and transactions ------------------------------------------------------------


@takes_spec()
def revenue_from_transactions(
    blocks: pd.DataFrame, transactions: pd.DataFrame, *, spec: ChainSpec
) -> pd.DataFrame:
    """The revenue frame of any range of blocks, from their headers and transactions.

    Parameters
    ----------
    blocks : pandas.DataFrame
        ``Lab.blocks`` (:func:`feeslab.frames.parse_blocks`): ``block_number``,
        ``base_fee_wei``, ``gas_used``, ``blob_gas_used``, ``excess_blob_gas`` and
        ``uncle_count``; one row per block of the range.
    transactions : pandas.DataFrame
        Every transaction of those blocks, ``Lab.transactions``
        (:func:`feeslab.frames.transactions.parse_transactions`) or any source with
        ``block_number``, ``gas_used`` [gas] and ``effective_tip_wei`` [wei per gas] (the
        price paid above the base fee; the whole price before London).
    spec, chain_id
        The chain's rules (block rewards, blob schedule); default the frames' ``attrs``.

    Returns
    -------
    pandas.DataFrame
        One row per block, in ``blocks``' order: ``block_number`` (int64),
        ``static_reward_wei`` and ``uncle_inclusion_reward_wei`` (the spec's block reward
        and 1/32 of it per included uncle; 0 after the merge), ``gas_fee_wei`` (the sum of
        ``effective_tip * gas_used`` over the block's transactions: the tips, or the whole
        fees before London), ``burn_wei`` (``base_fee * gas_used``, 0 before London),
        ``blob_fee_burn_wei`` (``blob_base_fee * blob_gas_used``, 0 before Cancun; not in
        ``burn_wei``) and ``transaction_count`` (int64). Wei columns are int64, or Python
        ints (``object``) where a value passes int64. ``attrs``: ``blocks``'.

    Raises
    ------
    ValueError
        A transaction of a block not in ``blocks``, a block listed twice, a transaction
        without its tip or gas, or a block whose transactions' gas does not add up to its
        ``gas_used`` (a range fetched incompletely).
    TypeError
        A wei or gas column of floats.

    References
    ----------
    .. [1] EIP-1559 (the base fee burned, the priority fee paid); EIP-4844 (the blob fee
       burned); go-ethereum ``core/state_transition.go`` (the tip is ``min(max priority
       fee, max fee - base fee)`` times the gas used).
    """
    what = "revenue_from_transactions"
    for frame, name, needed in (
        (blocks, "blocks", ("block_number", "gas_used", "uncle_count")),
        (transactions, "transactions", ("block_number", "gas_used", "effective_tip_wei")),
    ):
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"{what}: {name} must be a pandas DataFrame")
        absent = [c for c in needed if c not in frame.columns]
        if absent:
            raise ValueError(f"{what}: {name} lacks {absent} (it has {list(frame.columns)})")
    numbers = blocks["block_number"].to_numpy(dtype=np.int64)
    if len(np.unique(numbers)) != len(numbers):
        raise ValueError(f"{what}: blocks lists a block twice")
    tx_blocks = transactions["block_number"].to_numpy(dtype=np.int64)
    unknown = ~np.isin(tx_blocks, numbers)
    if unknown.any():
        raise ValueError(f"{what}: a transaction of block {int(tx_blocks[unknown][0])}, "
                         "which blocks does not hold")  # fmt: skip
    tips, tip_missing = exact_ints(transactions["effective_tip_wei"], "effective_tip_wei")
    gas, gas_missing = exact_ints(transactions["gas_used"], "gas_used")
    if (tip_missing | gas_missing).any():
        row = int(np.flatnonzero(tip_missing | gas_missing)[0])
        raise ValueError(f"{what}: transaction {row} (block {int(tx_blocks[row])}) has no "
                         "effective tip or gas used")  # fmt: skip
    position = pd.Index(numbers).get_indexer(tx_blocks)
    paid = np.zeros(len(numbers), dtype=object)
    paid[:] = 0
    # tip x gas per transaction, added per block, all in Python ints: exact whatever the size
    np.add.at(paid, position, tips.astype(object) * gas.astype(object))
    block_gas = np.zeros(len(numbers), dtype=np.int64)
    np.add.at(block_gas, position, gas.astype(np.int64))
    header_gas = blocks["gas_used"].to_numpy(dtype=np.int64)
    short = block_gas != header_gas
    if short.any():
        i = int(np.flatnonzero(short)[0])
        raise ValueError(f"{what}: block {numbers[i]}'s transactions use {block_gas[i]} gas, "
                         f"its header says {header_gas[i]}: are all its transactions "
                         "there?")  # fmt: skip
    burn = fee_burn(blocks, spec=spec)
    rewards = block_reward(numbers, spec=spec).to_numpy().astype(np.int64)  # at most 5 ETH
    uncles = blocks["uncle_count"].to_numpy(dtype=np.int64)
    out = pd.DataFrame({
        "block_number": numbers,
        "static_reward_wei": rewards,
        "uncle_inclusion_reward_wei": rewards // 32 * uncles,  # geth's accumulateRewards
        "gas_fee_wei": _narrow(paid),
        "burn_wei": burn["base_fee_burn_wei"].to_numpy(),
        "blob_fee_burn_wei": burn["blob_fee_burn_wei"].to_numpy(),
        "transaction_count": np.bincount(position, minlength=len(numbers)).astype(np.int64),
    }, index=blocks.index)  # fmt: skip
    out.attrs.update(blocks.attrs)
    return out


def _narrow(values: np.ndarray) -> np.ndarray:
    """int64 when every value fits, else Python ints (``object``)."""
    if all(v <= 2**63 - 1 for v in values.tolist()):
        return values.astype(np.int64)
    return values


# -- heavy tails -----------------------------------------------------------------------------


def top_block_shares(
    values: pd.Series, fractions: Sequence[float] = (0.001, 0.01, 0.1)
) -> pd.DataFrame:
    """The share of a total earned by the top blocks: how heavy the tail is.

    Parameters
    ----------
    values : pandas.Series
        One non-negative amount per block (e.g. ``total_eth`` or ``gas_fee_eth`` of
        :func:`revenue_composition`) [ETH].
    fractions : sequence of float
        The top fractions of blocks, each in (0, 1]: 0.001 is the top 0.1 %.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``fraction``: ``blocks`` (int64, ``ceil(fraction * n)``), ``share``
        (float64, their part of the sum) and ``threshold`` (the smallest of them, in the
        unit of ``values``). ``attrs``: ``blocks`` (n) and ``total``.

    Notes
    -----
    Under equal shares the top 1 % would earn 1 %; a Pareto tail with index ``a`` gives the
    top fraction ``p`` a share ``p ** (1 - 1 / a)``.
    """
    if not isinstance(values, pd.Series):
        raise TypeError(f"values must be a pandas Series, not {type(values).__name__}")
    x = values.to_numpy(dtype=np.float64)
    if np.isnan(x).any() or (x < 0).any():
        raise ValueError("values must be non-negative amounts, none missing")
    n = len(x)
    if n == 0:
        raise ValueError("values is empty")
    bad = [f for f in fractions if not 0.0 < float(f) <= 1.0]
    if bad:
        raise ValueError(f"fractions must be in (0, 1], got {bad}")
    ordered = np.sort(x)[::-1]
    cumulative = np.cumsum(ordered)
    total = float(cumulative[-1])
    counts = [max(1, int(np.ceil(float(f) * n - 1e-9))) for f in fractions]
    out = pd.DataFrame({
        "blocks": np.array(counts, dtype=np.int64),
        "share": [float(cumulative[k - 1]) / total if total > 0 else np.nan for k in counts],
        "threshold": [float(ordered[k - 1]) for k in counts],
    }, index=pd.Index([float(f) for f in fractions], name="fraction"))  # fmt: skip
    out.attrs.update({"blocks": n, "total": total})
    return out


def largest_blocks(composition: pd.DataFrame, column: str = "total_eth", n: int = 10
                   ) -> pd.DataFrame:  # fmt: skip
    """The ``n`` blocks with the most of ``column``, named, with their whole composition.

    Parameters
    ----------
    composition : pandas.DataFrame
        :func:`revenue_composition`'s frame (or any frame with ``block_number``).
    column : str
        The amount to rank by [ETH].
    n : int
        How many blocks.

    Returns
    -------
    pandas.DataFrame
        ``composition``'s rows of those blocks, largest first, indexed by ``block_number``,
        with ``share_of_total`` (float64: the block's part of the column's sum) and
        ``times_median`` (float64: the block's amount over the column's median).
    """
    if column not in composition.columns:
        raise ValueError(f"largest_blocks: no {column!r} column (has {list(composition.columns)})")
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    amounts = composition[column].astype(np.float64)
    top = composition.loc[amounts.nlargest(int(n)).index].copy()
    total, median = float(amounts.sum()), float(amounts.median())
    top["share_of_total"] = top[column].astype(np.float64) / total if total else np.nan
    top["times_median"] = top[column].astype(np.float64) / median if median else np.nan
    return top.set_index("block_number")


# -- forks -----------------------------------------------------------------------------------


def uncle_rate_by_revenue(
    composition: pd.DataFrame,
    uncle_counts: pd.DataFrame,
    *,
    column: str = "gas_fee_eth",
    quantiles: Sequence[float] = (0.5, 0.9, 0.99),
    lag: int = 1,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Do blocks with bundles, or with high fee income, fork more? Uncle rates by group.

    A fork at height ``h`` leaves a stale block that a later block includes as an uncle,
    most often block ``h + 1`` (depth 1). So the forks at each block's height are read as
    the uncles included ``lag`` blocks later, and their rate compared between groups of
    blocks: with and without a Flashbots bundle, and by bands of ``column`` cut at its
    ``quantiles``.

    Parameters
    ----------
    composition : pandas.DataFrame
        :func:`revenue_composition`'s frame (``block_number``, ``column`` and, for the
        bundle groups, ``has_bundle``).
    uncle_counts : pandas.DataFrame
        ``block_number`` and ``uncle_count`` (uncles each block includes), e.g.
        :func:`feeslab.samples.uncle_counts_2021` or ``Lab.blocks``.
    column : str
        The amount whose bands are compared [ETH].
    quantiles : sequence of float
        Where the bands are cut, each in (0, 1): (0.5, 0.9, 0.99) gives four bands.
    lag : int
        Blocks between a block and the one whose included uncles count its height's forks
        (1: the next block; 0: the block's own).
    confidence : float
        Two-sided coverage of the intervals, in (0, 1).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``group`` (``"all"``, ``"bundle"``, ``"no bundle"``, then the bands as
        ``"<column> in [lo, hi)"``), columns ``blocks``, ``uncles`` (int64), ``rate``
        [uncles/block] with ``lower``, ``upper`` (Garwood's exact Poisson interval, from
        :func:`feeslab.analysis.uncles.uncle_rate`) and ``ratio`` (the group's rate over
        all blocks'). Blocks whose ``lag``-th successor is not in ``uncle_counts`` are left
        out.

    References
    ----------
    .. [1] Liu et al., CCS 2022, section 5 (consensus security: uncle rates and MEV).
    .. [2] F. Garwood, Biometrika 28 (1936) 437-442.
    """
    for frame, name, needed in ((composition, "composition", ("block_number", column)),
                                (uncle_counts, "uncle_counts", ("block_number", "uncle_count"))):
        absent = [c for c in needed if c not in frame.columns]
        if absent:
            raise ValueError(f"uncle_rate_by_revenue: {name} lacks {absent}")
    if isinstance(lag, bool) or not isinstance(lag, int | np.integer) or lag < 0:
        raise ValueError(f"lag must be a non-negative integer [blocks], got {lag!r}")
    bad = [q for q in quantiles if not 0.0 < float(q) < 1.0]
    if bad:
        raise ValueError(f"quantiles must be in (0, 1), got {bad}")
    later = uncle_counts.set_index("block_number")["uncle_count"]
    numbers = composition["block_number"].to_numpy(dtype=np.int64)
    forks = later.reindex(numbers + int(lag)).to_numpy()
    kept = ~pd.isna(forks)
    frame = pd.DataFrame({
        "block_number": numbers[kept],
        "uncle_count": forks[kept].astype(np.int64),
    })  # fmt: skip
    amounts = composition[column].to_numpy(dtype=np.float64)[kept]
    tables = [uncle_rate(frame, method="garwood", confidence=confidence)]
    if "has_bundle" in composition.columns:
        bundle = composition["has_bundle"].to_numpy(dtype=bool)[kept]
        labels = np.where(bundle, "bundle", "no bundle")
        table = uncle_rate(frame, by=labels, method="garwood", confidence=confidence)
        tables.append(table.reindex(["bundle", "no bundle"]).dropna(how="all"))
    cuts = np.quantile(amounts, sorted(float(q) for q in quantiles))
    edges = np.r_[-np.inf, cuts, np.inf]
    band = np.searchsorted(cuts, amounts, side="right")
    names = [f"{column} in [{max(lo, 0.0):.4g}, {hi:.4g})"
             for lo, hi in itertools.pairwise(edges)]
    labels = np.array(names, dtype=object)[band]
    table = uncle_rate(frame, by=labels, method="garwood", confidence=confidence)
    tables.append(table.reindex([n for n in names if n in set(labels)]))
    out = pd.concat(tables)
    out.index.name = "group"
    out["ratio"] = out["rate"] / float(out.loc["all", "rate"])
    out.attrs.update({"column": column, "lag": int(lag), "confidence": confidence})
    return out

"""Backtests of fee suggestions: which gets in, how soon, and what it overpays.

A suggestion made after block ``n`` (a row of a suggestions frame of
:mod:`feeslab.analysis.estimators`: ``max_fee_per_gas_wei`` M, ``max_priority_fee_per_gas_wei``
T) is *included* at the first block ``n + j``, ``1 <= j <= horizon``, whose base fee ``B``
its max fee covers and whose lowest included effective tip ``L`` its own effective tip
``min(T, M - B)`` reaches. With ``L >= 0`` that is ``M >= B + L`` and ``T >= L``. It then
pays ``min(M, B + T)`` per gas (EIP-1559's effective gas price). The cheapest fee that got
in with the same delay is block ``n + j``'s cheapest included price, ``B + L``; the
overpayment is the difference, in gwei and in percent of ``B + L``.

The lowest included tip ``L`` comes from one of two places, and :func:`market_frame` says
which in ``attrs["lowest_tip_source"]``:

- fee history's 0th reward percentile (``reward_p0_wei``): geth's tip of the cheapest
  transaction (the first of the block's transactions sorted by effective tip), 0 for an empty
  block;
- a transactions frame (``Lab.transactions``): the least ``effective_tip_wei`` of the block's
  transactions, 0 for a block without any.

An empty block takes any suggestion whose max fee covers its base fee: nothing was turned
away. Inclusion here is the fee test only: block space, nonces and a builder's private
order flow are not modelled.

References
----------
.. [1] EIP-1559: Fee market change for ETH 1.0 chain (the effective gas price,
   ``min(max_fee, base_fee + max_priority_fee)``), https://eips.ethereum.org/EIPS/eip-1559
.. [2] go-ethereum ``eth/gasprice/feehistory.go`` (``processBlock``: the 0th percentile is
   the cheapest transaction's tip), commit 02b73d4ea7181464175e0a6cbecc0a3a2655a562.
.. [3] EIP-4844: Shard Blob Transactions (``max_fee_per_blob_gas`` must cover the block's
   blob base fee), https://eips.ethereum.org/EIPS/eip-4844
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from feeslab.analysis._exact import wei_column
from feeslab.analysis.blobs import blob_parameters
from feeslab.protocol.chainspec import ChainSpec

__all__ = [
    "BACKTEST_WITHIN",
    "backtest",
    "blob_multiples",
    "blob_multiples_by_fork",
    "inclusion",
    "market_frame",
]

GWEI = 10**9
#: The delays :func:`backtest` reports the share included within [blocks].
BACKTEST_WITHIN: tuple[int, ...] = (1, 3, 10)
_SAFE = 2**62  # base fee + tip and max fees stay exact and comparable in int64 below this


def _ints(frame: pd.DataFrame, name: str, what: str) -> np.ndarray:
    return wei_column(frame, name, what, _SAFE - 1)


def market_frame(
    fee_history: pd.DataFrame, *, transactions: pd.DataFrame | None = None
) -> pd.DataFrame:
    """What got in, per block: the base fee and the lowest included effective tip.

    Parameters
    ----------
    fee_history : pandas.DataFrame
        ``Lab.fee_history``'s frame (consecutive blocks, ``block_number``, ``base_fee_wei``),
        with ``reward_p0_wei`` unless ``transactions`` is given. Its row after the newest
        block (no gas ratio), if any, is left out.
    transactions : pandas.DataFrame, optional
        ``Lab.transactions``' frame of the same blocks: the lowest tips are taken from it
        (blocks without a row: 0) instead of from the 0th reward percentile.

    Returns
    -------
    pandas.DataFrame
        ``block_number`` (int64), ``base_fee_wei``, ``lowest_tip_wei`` and
        ``cheapest_price_wei`` (``base_fee_wei + lowest_tip_wei``) (int64) [wei]; ``attrs``
        the fee history's with ``lowest_tip_source`` (``"fee_history reward_p0"`` or
        ``"transactions"``).

    References
    ----------
    .. [1] go-ethereum ``eth/gasprice/feehistory.go`` (``processBlock``).
    """
    what = "market_frame"
    frame = fee_history
    ratio = frame["gas_used_ratio"] if "gas_used_ratio" in frame.columns else None
    if ratio is not None and len(frame) and pd.isna(ratio.iloc[-1]):
        frame = frame.iloc[:-1]
    numbers = frame["block_number"].to_numpy(dtype=np.int64)
    if len(numbers) > 1 and not (np.diff(numbers) == 1).all():
        raise ValueError(f"{what}: block_number must be consecutive and ascending")
    base = _ints(frame, "base_fee_wei", what)
    if transactions is None:
        low = _ints(frame, "reward_p0_wei", what)
        said = "fee_history reward_p0"
    else:
        tips = transactions[["block_number", "effective_tip_wei"]].dropna()
        least = tips.groupby("block_number")["effective_tip_wei"].min()
        low = least.reindex(numbers).fillna(0).to_numpy(dtype=np.int64)
        said = "transactions"
    out = pd.DataFrame({"block_number": numbers, "base_fee_wei": base, "lowest_tip_wei": low,
                        "cheapest_price_wei": base + low})  # fmt: skip
    out.attrs = dict(fee_history.attrs) | {"lowest_tip_source": said}
    return out


def _included(
    suggestions: pd.DataFrame, market: pd.DataFrame, horizon: int
) -> tuple[np.ndarray, ...]:
    """(heads kept, their market rows, included, delay, paid, cheapest) as arrays."""
    what = "inclusion"
    if horizon < 1:
        raise ValueError(f"horizon must be at least 1 block, got {horizon!r}")
    blocks = market["block_number"].to_numpy(dtype=np.int64)
    floor = market["cheapest_price_wei"].to_numpy(dtype=np.int64)
    low = market["lowest_tip_wei"].to_numpy(dtype=np.int64)
    base = market["base_fee_wei"].to_numpy(dtype=np.int64)
    heads = suggestions["block_number"].to_numpy(dtype=np.int64)
    first = int(blocks[0]) if len(blocks) else 0
    row = heads - first
    keep = (row >= 0) & (row + horizon < len(blocks))
    row = row[keep]
    max_fee = _ints(suggestions, "max_fee_per_gas_wei", what)[keep]
    tip = _ints(suggestions, "max_priority_fee_per_gas_wei", what)[keep]
    n = len(row)
    # one block offset at a time: a slice for the first where the heads are consecutive (the
    # usual case), then only the suggestions still waiting
    run = n > 0 and int(row[-1] - row[0]) == n - 1 and bool((np.diff(row) == 1).all())
    delay = np.zeros(n, dtype=np.int64)  # 0: not (yet) included
    waiting = np.ones(n, dtype=bool)
    left = np.arange(n)  # the suggestions still waiting, after the first block: a shrinking set
    for j in range(1, horizon + 1):
        if j == 1 and run:
            at = slice(int(row[0]) + 1, int(row[0]) + 1 + n)
            ok = (max_fee >= floor[at]) & (tip >= low[at])
            delay[ok] = 1
            waiting = ~ok
            left = np.flatnonzero(waiting)
        else:
            ahead = row[left] + j
            ok = (max_fee[left] >= floor[ahead]) & (tip[left] >= low[ahead])
            delay[left[ok]] = j
            waiting[left[ok]] = False
            left = left[~ok]
        if not len(left):
            break
    got = ~waiting
    at_block = np.where(got, row + delay, 0)
    paid = np.minimum(max_fee, base[at_block] + tip)
    cheapest = floor[at_block]
    return heads[keep], row, got, delay, paid, cheapest


def inclusion(
    suggestions: pd.DataFrame, market: pd.DataFrame, *, horizon: int = 10
) -> pd.DataFrame:
    """Each suggestion's delay, price paid and overpayment (see the module).

    Parameters
    ----------
    suggestions : pandas.DataFrame
        A suggestions frame (``block_number``, ``max_fee_per_gas_wei``,
        ``max_priority_fee_per_gas_wei``).
    market : pandas.DataFrame
        :func:`market_frame`'s frame. Suggestions whose ``horizon`` next blocks it does not
        all hold are left out.
    horizon : int
        The blocks a suggestion may wait [blocks].

    Returns
    -------
    pandas.DataFrame
        One row per suggestion kept: ``block_number`` (int64), ``delay`` (Int64 [blocks],
        ``<NA>`` when not included within the horizon), ``paid_wei``, ``cheapest_wei`` and
        ``overpay_wei`` (Int64) [wei], ``overpay_gwei`` and ``overpay_pct`` (float64; NaN when
        not included).
    """
    heads, _, got, delay, paid, cheapest = _included(suggestions, market, horizon)
    over = paid - cheapest
    mask = ~got
    out = pd.DataFrame({
        "block_number": heads,
        "delay": pd.arrays.IntegerArray(delay, mask),
        "paid_wei": pd.arrays.IntegerArray(paid, mask.copy()),
        "cheapest_wei": pd.arrays.IntegerArray(cheapest, mask.copy()),
        "overpay_wei": pd.arrays.IntegerArray(over, mask.copy()),
        "overpay_gwei": np.where(got, over / GWEI, np.nan),
        "overpay_pct": np.where(got, 100 * over / np.maximum(cheapest, 1), np.nan),
    })
    out.attrs = dict(suggestions.attrs) | {"lowest_tip_source":
                                           market.attrs.get("lowest_tip_source")}  # fmt: skip
    return out


def _summary(delay: np.ndarray, got: np.ndarray, over: np.ndarray, pct: np.ndarray,
             horizon: int) -> dict[str, Any]:  # fmt: skip
    n = len(delay)
    row: dict[str, Any] = {"suggestions": n}
    # delays are whole blocks 1..horizon (or never): their percentiles from counts
    counts = np.bincount(np.where(got, delay, horizon + 1), minlength=horizon + 2)
    cumulative = np.cumsum(counts)
    for k in BACKTEST_WITHIN:
        row[f"within_{k}"] = float(cumulative[k] / n) if n and k <= horizon else np.nan
    for name, q in (("median_delay", 0.5), ("p90_delay", 0.9)):
        if not n:
            row[name] = np.nan
            continue
        rank = int(np.searchsorted(cumulative, q * n, side="left"))  # inverted CDF
        row[name] = float(rank) if rank <= horizon else np.inf
    if got.any():
        paid_over = over[got] if not got.all() else over
        row["overpay_gwei_median"] = float(np.median(paid_over)) / GWEI
        row["overpay_gwei_mean"] = float(paid_over.mean()) / GWEI
        row["overpay_pct_median"] = float(np.median(pct[got] if not got.all() else pct))
    else:
        row["overpay_gwei_median"] = row["overpay_gwei_mean"] = np.nan
        row["overpay_pct_median"] = np.nan
    return row


def backtest(
    suggestions: Mapping[str, pd.DataFrame],
    market: pd.DataFrame,
    *,
    horizon: int = 10,
    regimes: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Score estimators: share included within 1, 3 and 10 blocks, delays, overpayment.

    Parameters
    ----------
    suggestions : mapping of str to DataFrame
        Estimator name -> its suggestions frame (:mod:`feeslab.analysis.estimators`).
    market : pandas.DataFrame
        :func:`market_frame`'s frame.
    horizon : int
        The blocks a suggestion may wait [blocks] (10: the last share reported).
    regimes : pandas.DataFrame, optional
        ``block_number`` and ``regime`` (e.g. :func:`feeslab.analysis.fees.fee_regimes`'
        frame): each suggestion is counted under its head block's regime as well as under
        ``"all"``; suggestions whose head has no regime (an incomplete window) only under
        ``"all"``.

    Returns
    -------
    pandas.DataFrame
        One row per estimator and regime (``"all"`` first, then the regimes in their
        categories' order): ``estimator``, ``regime``, ``suggestions`` (int),
        ``within_1``, ``within_3``, ``within_10`` (float64: shares of all suggestions, 0..1),
        ``median_delay`` and ``p90_delay`` (float64 [blocks]; ``inf`` when that share was
        not included within the horizon), ``overpay_gwei_median``, ``overpay_gwei_mean``
        [gwei] and ``overpay_pct_median`` [%] (over the included suggestions). ``attrs``:
        the market's, with ``horizon`` and ``lowest_tip_source``.

    References
    ----------
    .. [1] EIP-1559 (the effective gas price).
    """
    order: list[str] = ["all"]
    codes: np.ndarray | None = None  # each market row's regime, -1 where it has none
    if regimes is not None:
        labels = regimes["regime"]
        cats = getattr(labels.dtype, "categories", None)
        names = [str(c) for c in (cats if cats is not None else pd.unique(labels.dropna()))]
        order += names
        by_block = pd.Series(pd.Categorical(labels.astype(object), categories=names).codes,
                             index=regimes["block_number"].to_numpy())  # fmt: skip
        codes = by_block.reindex(market["block_number"].to_numpy()).fillna(-1).to_numpy(
            dtype=np.int64)
    rows = []
    for name, frame in suggestions.items():
        _, at, got, delay, paid, cheapest = _included(frame, market, horizon)
        over = paid - cheapest
        pct = 100 * over / np.maximum(cheapest, 1)
        rows.append({"estimator": name, "regime": "all"}
                    | _summary(delay, got, over, pct, horizon))  # fmt: skip
        if codes is not None:
            regime = codes[at]
            for code, label in enumerate(order[1:]):
                pick = regime == code
                rows.append({"estimator": name, "regime": label}
                            | _summary(delay[pick], got[pick], over[pick], pct[pick],
                                       horizon))  # fmt: skip
    out = pd.DataFrame(rows)
    out.attrs = dict(market.attrs) | {"horizon": horizon}
    return out


# -- blobs -------------------------------------------------------------------------------------


def blob_multiples(blob_fees: pd.DataFrame, *, within: int = 3) -> pd.DataFrame:
    """The multiple k of block ``n``'s blob base fee a blob transaction sent after ``n``
    needed to be included within ``within`` blocks: ``max(b[n+1..n+within]) / b[n]``.

    A blob transaction is includable at ``n + j`` when its ``max_fee_per_blob_gas`` covers
    ``b[n + j]``; with ``k x b[n]`` it is included within ``within`` blocks as soon as one of
    them it covers, so the multiple needed is the *least* of those blocks' fees over
    ``b[n]``: ``min(b[n+1..n+within]) / b[n]``. (Block space is not modelled: a block with room
    is assumed.)

    Parameters
    ----------
    blob_fees : pandas.DataFrame
        ``block_number`` (consecutive) and the blob base fee [wei]: ``blob_base_fee_wei``
        (:func:`feeslab.samples.blob_market`) or ``base_fee_per_blob_gas_wei``
        (``Lab.fee_history``; Int64, ``<NA>`` before Cancun); and ``fork`` (or ``timestamp``,
        for :func:`blob_multiples_by_fork`) to be split by fork.
    within : int
        The blocks the transaction may wait [blocks].

    Returns
    -------
    pandas.DataFrame
        One row per block ``n`` with a blob base fee and ``within`` such blocks after it:
        ``block_number`` (int64), ``blob_base_fee_wei`` (int64) [wei], ``k_needed``
        (float64 [1]: the ratio of two exact integers, rounded once), and ``fork`` when given.

    References
    ----------
    .. [1] EIP-4844 (``max_fee_per_blob_gas``).
    """
    if within < 1:
        raise ValueError(f"within must be at least 1 block, got {within!r}")
    numbers = blob_fees["block_number"].to_numpy(dtype=np.int64)
    if len(numbers) > 1 and not (np.diff(numbers) == 1).all():
        raise ValueError("blob_multiples: block_number must be consecutive and ascending")
    names = [c for c in ("blob_base_fee_wei", "base_fee_per_blob_gas_wei") if c in blob_fees]
    if not names:
        raise ValueError("blob_multiples: the frame needs 'blob_base_fee_wei' (blocks, "
                         "samples.blob_market) or 'base_fee_per_blob_gas_wei' (fee history)")
    column = blob_fees[names[0]]
    have = column.notna().to_numpy()
    fees = column.fillna(0).to_numpy(dtype=np.int64)
    n = len(fees)
    if n <= within:
        return pd.DataFrame({"block_number": np.zeros(0, np.int64),
                             "blob_base_fee_wei": np.zeros(0, np.int64),
                             "k_needed": np.zeros(0)})  # fmt: skip
    m = n - within
    # the least fee and whether all are known over the next `within` blocks: shifted slices
    least = np.stack([fees[1 + i : 1 + i + m] for i in range(within)]).min(axis=0)
    known = np.stack([have[1 + i : 1 + i + m] for i in range(within)]).all(axis=0)
    keep = have[:m] & known & (fees[:m] > 0)
    now = fees[:m][keep]
    out = pd.DataFrame({"block_number": numbers[:m][keep], "blob_base_fee_wei": now,
                        "k_needed": least[keep] / now})  # fmt: skip
    if "fork" in blob_fees.columns:
        forks = blob_fees["fork"]
        if isinstance(forks.dtype, pd.CategoricalDtype):  # by its codes: no strings per row
            codes = forks.cat.codes.to_numpy()[:m][keep]
            out["fork"] = pd.Categorical.from_codes(codes, dtype=forks.dtype)
        else:
            out["fork"] = forks.to_numpy()[:m][keep]
    out.attrs = dict(blob_fees.attrs) | {"within": within}
    return out


def blob_multiples_by_fork(
    blob_fees: pd.DataFrame,
    *,
    within: int = 3,
    share: float = 0.99,
    spec: ChainSpec | str | None = None,
) -> pd.DataFrame:
    """Per fork, the least k for which ``share`` of blob transactions priced at k x the
    current blob base fee were included within ``within`` blocks.

    Parameters
    ----------
    blob_fees : pandas.DataFrame
        As :func:`blob_multiples` takes it, with a ``fork`` column, or ``timestamp`` (or
        ``block_number``) and a chain spec to find each block's fork by
        :func:`feeslab.analysis.blobs.blob_parameters`.
    within : int
        [blocks]
    share : float
        The share of transactions to be included (0.99).
    spec : ChainSpec or str, optional
        The chain's spec; default the frame's ``attrs["chain_spec"]`` (or chain 1's by
        ``attrs["chain_id"]``). Only needed without a ``fork`` column.

    Returns
    -------
    pandas.DataFrame
        One row per fork in order of its first block: ``fork``, ``first_block``,
        ``last_block`` (int64), ``blocks`` (int64: suggestions scored), ``k`` (float64 [1]: the
        ``share`` quantile of :func:`blob_multiples`' ``k_needed``, the smallest observed
        value that at least ``share`` of them are at or below), ``share_at_1`` (the share
        included within ``within`` blocks at k = 1), ``k_max`` (the largest needed),
        ``median_blob_base_fee_wei`` (int64 [wei]: near the 1 wei floor a fee moves in whole
        wei, so one step is a large ratio);
        ``attrs`` the frame's with ``within`` and ``share``.

    References
    ----------
    .. [1] EIP-4844; EIP-7691 (Prague's blob schedule); EIP-7892 (blob parameter only forks).
    """
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share!r}")
    frame = blob_fees
    if "fork" not in frame.columns:
        chosen = spec or frame.attrs.get("chain_spec") or frame.attrs.get("chain_id")
        if chosen is None:
            raise ValueError("blob_multiples_by_fork: give a 'fork' column or a spec")
        frame = frame.assign(fork=blob_parameters(frame, spec=ChainSpec.of(chosen))["fork"])
    needed = blob_multiples(frame, within=within)
    rows = []
    forks = needed["fork"]
    if isinstance(forks.dtype, pd.CategoricalDtype):
        all_codes = forks.cat.codes.to_numpy()
        present, first = np.unique(all_codes, return_index=True)
        ordered = present[np.argsort(first)]  # in order of first appearance
        uniques = [forks.cat.categories[c] for c in ordered]
        codes = np.full(len(all_codes), -1)
        for i, c in enumerate(ordered):
            codes[all_codes == c] = i
    else:
        codes, uniques = pd.factorize(forks, sort=False)  # in order of first appearance
    ratios = needed["k_needed"].to_numpy()
    numbers = needed["block_number"].to_numpy()
    fees = needed["blob_base_fee_wei"].to_numpy()
    for code, fork in enumerate(uniques):
        pick = codes == code
        k = ratios[pick]
        at = numbers[pick]
        rows.append({
            "fork": str(fork),
            "first_block": int(at[0]),
            "last_block": int(at[-1]),
            "blocks": len(k),
            "k": float(np.quantile(k, share, method="inverted_cdf")),
            "share_at_1": float(np.mean(k <= 1)),
            "k_max": float(k.max()),
            "median_blob_base_fee_wei": int(np.median(fees[pick])),
        })
    out = pd.DataFrame(rows, columns=["fork", "first_block", "last_block", "blocks", "k",
                                      "share_at_1", "k_max",
                                      "median_blob_base_fee_wei"])  # fmt: skip
    out.attrs = dict(blob_fees.attrs) | {"within": within, "share": share}
    return out

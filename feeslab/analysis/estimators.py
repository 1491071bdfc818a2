"""Wallet fee estimators as pure, vectorised functions over frames.

Each function reproduces one wallet's or library's EIP-1559 fee suggestion from the same
blocks it reads, for every head block of a frame at once, so a backtest
(:mod:`feeslab.analysis.backtest`) can score the suggestions against what got in afterwards.
Every function returns a *suggestions frame*, one row per head block ``n`` (the suggestion
is made after block ``n``, for block ``n + 1`` onwards), columns (dtype):

``block_number`` (int64)
    The head block ``n`` the suggestion is computed at.
``max_fee_per_gas_wei`` (int64) [wei]
    The suggested ``maxFeePerGas`` (for a legacy suggestion its ``gasPrice``).
``max_priority_fee_per_gas_wei`` (int64) [wei]
    The suggested ``maxPriorityFeePerGas`` (for a legacy suggestion also its ``gasPrice``:
    a legacy transaction's tip is all it pays above the base fee, as geth's
    ``EffectiveGasTip`` takes it).

and ``attrs`` saying the estimator (``estimator``), the rule it reproduces (``reproduces``),
the data source (``source``) and the chain, carried over from the input frame.

Wei is exact: the arithmetic is int64 where it provably fits (each function checks its
inputs' bound first and raises ``ValueError`` beyond it: base fees up to about 2 x 10**16
wei, 20 million gwei, are accepted), floor division as the sources' bigint (``BN.divn``,
JavaScript ``bigint /``) does.

The estimators and what they read
---------------------------------
========================  =====================================================================
function                  inputs per head block ``n``
========================  =====================================================================
:func:`geth_oracle`       the 3 cheapest effective tips (at least 2 wei) of each of blocks
                          ``n - 19 .. n`` from a transactions frame; the 60th percentile of
                          the pool, capped at 500 gwei (``eth_maxPriorityFeePerGas``);
                          :func:`geth_gas_price` adds block ``n``'s base fee (``eth_gasPrice``)
:func:`metamask_fee_history`  fee history rewards at the 10th, 20th, 30th percentiles of blocks
                          ``n - 4 .. n`` and block ``n``'s base fee; three levels
:func:`ethers_fee_data`   block ``n``'s base fee and the node's ``eth_maxPriorityFeePerGas``
                          (1 gwei without one): ``2 x base fee + tip``
:func:`viem_fees`         block ``n``'s base fee and the node's ``eth_maxPriorityFeePerGas``:
                          ``base fee x 1.2 + tip``
:func:`web3py_fallback`   fee history rewards at the 5th percentile of blocks ``n - 9 .. n``
                          (their non-zero mean, clamped to 1-1.5 gwei) and block ``n``'s base
                          fee: ``2 x base fee + tip``
:func:`gas_api_fees`      the Gas API's ``suggestedGasFees`` rule (the devnet's
                          :mod:`feeslab.devnet.gasapi`): MetaMask's levels on block
                          ``n + 1``'s base fee; :func:`suggested_gas_fees_frame` reads the
                          service's own answers recorded block by block instead
:func:`blob_fee_cap`      ``maxFeePerBlobGas = k x`` block ``n``'s blob base fee
========================  =====================================================================

References
----------
.. [1] go-ethereum ``eth/gasprice/gasprice.go`` (``SuggestTipCap``, ``getBlockValues``) and
   ``eth/ethconfig/config.go`` (``FullNodeGPO``), ``internal/ethapi/api.go`` (``GasPrice``,
   ``MaxPriorityFeePerGas``), github.com/ethereum/go-ethereum at commit
   02b73d4ea7181464175e0a6cbecc0a3a2655a562.
.. [2] MetaMask ``packages/gas-fee-controller/src/fetchGasEstimatesViaEthFeeHistory.ts`` and
   ``fetchGasEstimatesViaEthFeeHistory/calculateGasFeeEstimatesForPriorityLevels.ts``,
   ``medianOf.ts``, github.com/MetaMask/core at commit
   40acc6c81bfcf2b3995a9c5e94cce069f41f95f6 (the last before "Remove fee history fallback
   (#4210)", 9349754a9eb0dc2873cc0730859069e2c390d6b7).
.. [3] ethers v6 ``src.ts/providers/abstract-provider.ts`` (``getFeeData``),
   github.com/ethers-io/ethers.js at commit 98c49d091eb84a9146dfba8476f18e4c3e3d1d31.
.. [4] viem ``src/actions/public/estimateFeesPerGas.ts`` and
   ``src/actions/public/estimateMaxPriorityFeePerGas.ts``, github.com/wevm/viem at commit
   0912a29d5c7abbea5238d6f7c3d750f07d479ace.
.. [5] web3.py ``web3/_utils/fee_utils.py`` (``fee_history_priority_fee``),
   ``web3/eth/eth.py`` (``max_priority_fee``), ``web3/_utils/transactions.py``
   (``TRANSACTION_DEFAULTS["maxFeePerGas"]``), github.com/ethereum/web3.py at commit
   2f907b87003f026506097d0941b91c3cc71433fe.
.. [6] MetaMask/Infura Gas API, ``GET /networks/{chainId}/suggestedGasFees``.
.. [7] EIP-1559 (fee market), EIP-4844 (``maxFeePerBlobGas``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from feeslab.analysis._exact import wei_column
from feeslab.frames.base_fees import reward_column

__all__ = [
    "GAS_API_LEVELS",
    "GETH_BLOCKS",
    "GETH_IGNORE_PRICE",
    "GETH_MAX_PRICE",
    "GETH_PERCENTILE",
    "GETH_SAMPLE_NUMBER",
    "METAMASK_LEVELS",
    "SUGGESTION_DTYPES",
    "blob_fee_cap",
    "ethers_fee_data",
    "gas_api_fees",
    "geth_gas_price",
    "geth_oracle",
    "geth_tip_samples",
    "metamask_fee_history",
    "suggested_gas_fees_frame",
    "viem_fees",
    "web3py_fallback",
]

GWEI = 10**9
#: Columns and dtypes of every suggestions frame, in order.
SUGGESTION_DTYPES: dict[str, str] = {
    "block_number": "int64",
    "max_fee_per_gas_wei": "int64",
    "max_priority_fee_per_gas_wei": "int64",
}

# go-ethereum eth/ethconfig/config.go FullNodeGPO and eth/gasprice/gasprice.go
GETH_BLOCKS = 20  # Blocks
GETH_PERCENTILE = 60  # Percentile
GETH_SAMPLE_NUMBER = 3  # sampleNumber: the cheapest transactions sampled per block
GETH_MAX_PRICE = 500 * GWEI  # DefaultMaxPrice
GETH_IGNORE_PRICE = 2  # DefaultIgnorePrice [wei]: tips below it are not sampled

# MetaMask calculateGasFeeEstimatesForPriorityLevels.ts, SETTINGS_BY_PRIORITY_LEVEL
METAMASK_BLOCKS = 5  # fetchGasEstimatesViaEthFeeHistory: numberOfBlocks
METAMASK_LEVELS: dict[str, dict[str, int]] = {
    "low": {"percentile": 10, "base_fee_pct": 110, "tip_pct": 94, "min_tip": 1_000_000_000},
    "medium": {"percentile": 20, "base_fee_pct": 120, "tip_pct": 97, "min_tip": 1_500_000_000},
    "high": {"percentile": 30, "base_fee_pct": 125, "tip_pct": 98, "min_tip": 2_000_000_000},
}
#: The Gas API's levels: MetaMask's settings (the devnet's ``feeslab.devnet.gasapi.LEVELS``).
GAS_API_LEVELS = METAMASK_LEVELS

ETHERS_DEFAULT_TIP = 1_000_000_000  # getFeeData: BigInt("1000000000") without a node tip
VIEM_BASE_FEE_MULTIPLIER = 1.2  # estimateFeesPerGas: chain.fees.baseFeeMultiplier ?? 1.2

# web3.py fee_utils.py
WEB3PY_BLOCKS = 10  # PRIORITY_FEE_HISTORY_PARAMS = (10, "pending", [5.0])
WEB3PY_PERCENTILE = 5.0
WEB3PY_TIP_MIN = 1_000_000_000  # PRIORITY_FEE_MIN
WEB3PY_TIP_MAX = 1_500_000_000  # PRIORITY_FEE_MAX

# base fees (and tips) up to this stay exact in int64 through "2 x fee + tip" and "fee x 125"
_SAFE_WEI = 2**63 // 512  # 1.8e16 wei: 18 million gwei


# -- inputs and results ------------------------------------------------------------------------


def _column(frame: pd.DataFrame, name: str, what: str) -> np.ndarray:
    """``frame[name]`` as int64 with no missing value within the safe bound."""
    return wei_column(frame, name, what, _SAFE_WEI)


def _blocks(frame: pd.DataFrame, what: str) -> np.ndarray:
    """The frame's block numbers, which must be consecutive and ascending."""
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{what}: expected a DataFrame, not {type(frame).__name__}")
    if "block_number" not in frame.columns:
        raise ValueError(f"{what}: the frame lacks 'block_number'")
    numbers: np.ndarray = frame["block_number"].to_numpy(dtype=np.int64)
    if len(numbers) > 1 and not (np.diff(numbers) == 1).all():
        raise ValueError(f"{what}: block_number must be consecutive and ascending (one row per "
                         "block, as Lab.fee_history gives it)")  # fmt: skip
    return numbers


def _rewards(frame: pd.DataFrame, percentile: float, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The reward column at ``percentile`` as (int64 with 0 where missing, missing mask)."""
    name = reward_column(percentile)
    if name not in frame.columns:
        raise ValueError(f"{what}: the frame lacks {name!r}; fetch fee history with "
                         f"percentiles including {percentile:g}")  # fmt: skip
    series = frame[name]
    missing = series.isna().to_numpy()
    values = series.fillna(0).to_numpy(dtype=np.int64)
    if len(values) and values.max() > _SAFE_WEI:
        raise ValueError(f"{what}: {name!r} passes {_SAFE_WEI} wei")
    return values, missing


def _attrs(frame: pd.DataFrame, estimator: str, reproduces: str) -> dict[str, Any]:
    attrs = {k: v for k, v in frame.attrs.items() if k in ("chain_id", "chain_spec", "source",
                                                            "network", "chain")}  # fmt: skip
    attrs.setdefault("source", "unknown")
    attrs.update(estimator=estimator, reproduces=reproduces)
    return attrs


def _result(
    numbers: np.ndarray, max_fee: np.ndarray, tip: np.ndarray, attrs: dict[str, Any]
) -> pd.DataFrame:
    out = pd.DataFrame({
        "block_number": np.asarray(numbers, dtype=np.int64),
        "max_fee_per_gas_wei": np.asarray(max_fee, dtype=np.int64),
        "max_priority_fee_per_gas_wei": np.asarray(tip, dtype=np.int64),
    })
    out.attrs = attrs
    return out


def _windows(values: np.ndarray, count: int) -> np.ndarray:
    """Rows ``i - count + 1 .. i`` for each ``i >= count - 1``: shape (n - count + 1, count)."""
    return np.lib.stride_tricks.sliding_window_view(values, count, axis=0)


# Knuth's 9-comparator sorting network for 5 values (TAOCP vol. 3, 5.3.4)
_NETWORK_5 = ((0, 1), (3, 4), (2, 4), (2, 3), (0, 3), (0, 2), (1, 4), (1, 3), (1, 2))


def _median_of_5(values: np.ndarray) -> np.ndarray:
    """MetaMask's medianOf over each 5 consecutive values (the 3rd smallest), by a sorting
    network on 5 shifted columns: no 2-D sort of strided windows."""
    n = len(values) - 4
    lanes = [values[i : i + n].copy() for i in range(5)]
    for a, b in _NETWORK_5:
        low, high = np.minimum(lanes[a], lanes[b]), np.maximum(lanes[a], lanes[b])
        lanes[a], lanes[b] = low, high
    return lanes[2]


def _head_rows(frame: pd.DataFrame, what: str) -> pd.DataFrame:
    """The rows of blocks that are heads: the fee history's extra row (the block after the
    newest: a base fee and no gas ratio) is left out."""
    ratio = frame["gas_used_ratio"] if "gas_used_ratio" in frame.columns else None
    if ratio is not None and len(frame) and pd.isna(ratio.iloc[-1]):
        return frame.iloc[:-1]
    return frame


# -- geth --------------------------------------------------------------------------------------


def geth_tip_samples(
    transactions: pd.DataFrame,
    *,
    sample_number: int = GETH_SAMPLE_NUMBER,
    ignore_price: int = GETH_IGNORE_PRICE,
) -> pd.DataFrame:
    """The tips geth's oracle samples from each block: its cheapest effective tips.

    go-ethereum ``getBlockValues``: the block's transactions sorted by effective tip,
    ascending; tips below ``ignore_price`` skipped; the first ``sample_number`` kept. (geth
    also skips transactions sent by the block's coinbase; the transactions frame has no
    sender, so none is skipped here.)

    Parameters
    ----------
    transactions : pandas.DataFrame
        ``Lab.transactions``' frame: ``block_number``, ``effective_tip_wei`` [wei].
    sample_number : int
        Tips kept per block (geth's ``sampleNumber``, 3).
    ignore_price : int
        Tips below this are not sampled [wei] (geth's ``DefaultIgnorePrice``, 2).

    Returns
    -------
    pandas.DataFrame
        One row per block that has a sample: ``block_number`` (int64) and ``tip_1`` ..
        ``tip_<sample_number>`` (Int64) [wei], cheapest first, ``<NA>`` where the block has
        fewer.

    References
    ----------
    .. [1] go-ethereum ``eth/gasprice/gasprice.go`` lines 241-287 (``getBlockValues``), commit
       02b73d4ea7181464175e0a6cbecc0a3a2655a562.
    """
    for name in ("block_number", "effective_tip_wei"):
        if name not in transactions.columns:
            raise ValueError(f"geth_tip_samples: the transactions frame lacks {name!r}")
    tips = transactions["effective_tip_wei"]
    keep = tips.notna().to_numpy() & (tips.fillna(0).to_numpy(dtype=object) >= ignore_price)
    blocks = transactions["block_number"].to_numpy(dtype=np.int64)[keep]
    values = np.array([min(int(v), _SAFE_WEI + 1) for v in tips[keep]], dtype=np.int64) \
        if tips.dtype == object else tips[keep].to_numpy(dtype=np.int64)
    order = np.lexsort((values, blocks))
    blocks, values = blocks[order], values[order]
    starts = np.r_[0, np.flatnonzero(np.diff(blocks)) + 1] if len(blocks) else np.zeros(0, int)
    rank = np.arange(len(blocks)) - np.repeat(starts, np.diff(np.r_[starts, len(blocks)]))
    first = rank < sample_number
    unique = blocks[starts]
    row = np.searchsorted(unique, blocks[first])
    table = np.zeros((len(unique), sample_number), dtype=np.int64)
    mask = np.ones((len(unique), sample_number), dtype=bool)
    table[row, rank[first]] = values[first]
    mask[row, rank[first]] = False
    out = pd.DataFrame({"block_number": unique})
    for k in range(sample_number):
        out[f"tip_{k + 1}"] = pd.arrays.IntegerArray(table[:, k].copy(), mask[:, k].copy())
    out.attrs = dict(transactions.attrs)
    return out


def geth_oracle(
    transactions: pd.DataFrame,
    *,
    start: int,
    stop: int,
    blocks: int = GETH_BLOCKS,
    percentile: int = GETH_PERCENTILE,
    max_price: int = GETH_MAX_PRICE,
    ignore_price: int = GETH_IGNORE_PRICE,
    start_price: int = 0,
) -> pd.DataFrame:
    """geth's gas price oracle (``eth_maxPriorityFeePerGas``) at each head block.

    At head ``n`` geth samples blocks ``n, n - 1, ..., n - blocks + 1`` (never block 0): each
    gives its ``3`` cheapest effective tips of at least ``ignore_price`` wei
    (:func:`geth_tip_samples`), or, when it gives none, geth's last answer (here the answer
    at head ``n - 1``; ``start_price`` before the first head). The pool is sorted and its
    element ``(len - 1) * percentile // 100`` answered, capped at ``max_price``.

    One difference, documented: geth fetches up to ``blocks`` more blocks while a block
    gives a single value, in an order that depends on its goroutines' timing; this function
    does not. Rows where geth would have (a block in the window gives one value or none) are
    flagged ``extended`` (bool); elsewhere the answer is geth's exactly.

    Parameters
    ----------
    transactions : pandas.DataFrame
        ``Lab.transactions``' frame of blocks ``start .. stop - 1`` (``block_number``,
        ``effective_tip_wei``); a block without rows is empty.
    start, stop : int
        The blocks the frame covers (half-open) [blocks]. Heads start at ``start + blocks -
        1`` (a full window), or at ``start`` when ``start`` is 1 or 0.
    blocks, percentile, max_price, ignore_price : int
        geth's ``FullNodeGPO``: 20 blocks, 60th percentile, 500 gwei cap [wei], 2 wei.
    start_price : int
        The oracle's last price before the first head [wei] (geth starts from its
        ``--gpo`` start price, 0 when none).

    Returns
    -------
    pandas.DataFrame
        A suggestions frame (see the module): ``max_fee_per_gas_wei`` and
        ``max_priority_fee_per_gas_wei`` both the oracle's tip (what ``eth_maxPriorityFeePerGas``
        answers; wallets add a base fee to it), and ``extended`` (bool).

    References
    ----------
    .. [1] go-ethereum ``eth/gasprice/gasprice.go`` lines 161-234 (``SuggestTipCap``) and
       ``eth/ethconfig/config.go`` lines 42-50 (``FullNodeGPO``), commit
       02b73d4ea7181464175e0a6cbecc0a3a2655a562.
    """
    if stop <= start or start < 0:
        raise ValueError(f"geth_oracle: need 0 <= start < stop, got {start}, {stop}")
    if blocks < 1 or not 0 <= percentile <= 100:
        raise ValueError("geth_oracle: blocks >= 1 and percentile in 0..100")
    samples = geth_tip_samples(transactions, ignore_price=ignore_price)
    inside = (samples["block_number"] >= start) & (samples["block_number"] < stop)
    samples = samples[inside]
    count = stop - start
    width = GETH_SAMPLE_NUMBER
    sentinel = np.iinfo(np.int64).max
    table = np.full((count, width), sentinel, dtype=np.int64)
    at = samples["block_number"].to_numpy(dtype=np.int64) - start
    for k in range(width):
        column = samples[f"tip_{k + 1}"]
        table[at, k] = column.fillna(sentinel).to_numpy(dtype=np.int64)
    given = (table != sentinel).sum(axis=1)
    if start == 0:
        given[0] = -1  # geth never samples block 0 (`number > 0`): treat it as not in a window
    first_head = start if start <= 1 else start + blocks - 1
    heads = np.arange(max(first_head, start), stop, dtype=np.int64)
    out_tip = np.zeros(len(heads), dtype=np.int64)
    extended = np.zeros(len(heads), dtype=bool)
    if len(heads) == 0:
        return _result(heads, out_tip, out_tip, _attrs(transactions, "geth", "geth SuggestTipCap")
                       ).assign(extended=extended)  # fmt: skip
    # window rows of each head: blocks max(1, n - blocks + 1) .. n
    full = heads - start >= blocks - 1
    pool = np.full((len(heads), blocks * width), sentinel, dtype=np.int64)
    counts = np.zeros(len(heads), dtype=np.int64)
    empty_in = np.zeros(len(heads), dtype=bool)
    if full.any():
        rows = heads[full] - start
        win = _windows(table, blocks)[rows - blocks + 1]  # (h, width, blocks) view
        pool[full] = np.swapaxes(win, 1, 2).reshape(int(full.sum()), blocks * width)
        g = _windows(given, blocks)[rows - blocks + 1]
        counts[full] = np.clip(g, 0, None).sum(axis=1)
        empty_in[full] = (g == 0).any(axis=1)
        extended[full] = (g <= 1).any(axis=1) & ~(g < 0).all(axis=1)
    for i in np.flatnonzero(~full).tolist():  # the first heads of a chain: short windows
        rows = np.arange(max(0, heads[i] - start - blocks + 1), heads[i] - start + 1)
        rows = rows[given[rows] >= 0]
        values = table[rows].ravel()
        values = values[values != sentinel]
        pool[i, : len(values)] = values
        counts[i] = len(values)
        empty_in[i] = (given[rows] == 0).any()
        extended[i] = (given[rows] <= 1).any()
    pool.sort(axis=1)
    pick = np.maximum(counts - 1, 0) * percentile // 100
    out_tip = pool[np.arange(len(heads)), pick]
    # blocks without a sample contribute geth's last answer: sequential where they occur
    if empty_in.any() or (counts == 0).any():
        last = start_price
        for i in range(len(heads)):
            if empty_in[i]:
                lo = max(0, heads[i] - start - blocks + 1)
                g = given[lo : heads[i] - start + 1]
                g = g[g >= 0]
                values = np.concatenate(
                    [pool[i, : counts[i]], np.full(int((g == 0).sum()), last)])
                values.sort()
                out_tip[i] = int(values[(len(values) - 1) * percentile // 100])
            elif counts[i] == 0:
                out_tip[i] = last
            out_tip[i] = min(int(out_tip[i]), max_price)
            last = int(out_tip[i])
    else:
        np.minimum(out_tip, max_price, out=out_tip)
    out = _result(heads, out_tip, out_tip, _attrs(transactions, "geth", "geth SuggestTipCap"))
    out["extended"] = extended
    return out


def geth_gas_price(oracle: pd.DataFrame, fee_history: pd.DataFrame) -> pd.DataFrame:
    """geth's ``eth_gasPrice``: the oracle's tip plus the head block's base fee.

    Parameters
    ----------
    oracle : pandas.DataFrame
        :func:`geth_oracle`'s frame.
    fee_history : pandas.DataFrame
        ``Lab.fee_history``'s frame over the oracle's heads (``block_number``,
        ``base_fee_wei``).

    Returns
    -------
    pandas.DataFrame
        A suggestions frame of a legacy transaction: ``max_fee_per_gas_wei`` =
        ``max_priority_fee_per_gas_wei`` = tip + base fee [wei], for the heads both frames
        have.

    References
    ----------
    .. [1] go-ethereum ``internal/ethapi/api.go`` lines 77-87 (``GasPrice``: the tip plus
       ``CurrentHeader().BaseFee``), commit 02b73d4ea7181464175e0a6cbecc0a3a2655a562.
    """
    _blocks(fee_history, "geth_gas_price")
    joined = oracle[["block_number", "max_priority_fee_per_gas_wei"]].merge(
        fee_history[["block_number", "base_fee_wei"]], on="block_number", how="inner")
    base = _column(joined, "base_fee_wei", "geth_gas_price")
    price = joined["max_priority_fee_per_gas_wei"].to_numpy(dtype=np.int64) + base
    return _result(joined["block_number"].to_numpy(), price, price,
                   _attrs(fee_history, "geth_gas_price", "geth eth_gasPrice"))  # fmt: skip


# -- MetaMask and the Gas API ------------------------------------------------------------------


def _levels(
    fee_history: pd.DataFrame,
    level: str,
    *,
    next_base_fee: bool,
    what: str,
) -> pd.DataFrame:
    """One MetaMask level over every head with 5 blocks of rewards before it."""
    if level not in METAMASK_LEVELS:
        raise ValueError(f"{what}: level must be one of {list(METAMASK_LEVELS)}, got {level!r}")
    settings = METAMASK_LEVELS[level]
    numbers = _blocks(fee_history, what)
    base_all = _column(fee_history, "base_fee_wei", what)
    heads_frame = _head_rows(fee_history, what)
    rewards, missing = _rewards(heads_frame, settings["percentile"], what)
    n = len(heads_frame)
    if n < METAMASK_BLOCKS or (next_base_fee and len(fee_history) < n + 1 and n < 1):
        empty = np.zeros(0, dtype=np.int64)
        return _result(empty, empty, empty, {})
    if missing.any():
        at = int(np.flatnonzero(missing)[0])
        raise ValueError(f"{what}: reward p{settings['percentile']} is missing at block "
                         f"{int(numbers[at])}")  # fmt: skip
    # medianOf: sort, take index floor((len - 1) / 2): the lower middle, the 3rd of 5
    median = _median_of_5(rewards)
    tip = np.maximum(median * settings["tip_pct"] // 100, settings["min_tip"])
    head_rows = np.arange(METAMASK_BLOCKS - 1, n)
    if next_base_fee:  # the block after the head: the next row, which must exist
        has_next = head_rows + 1 < len(fee_history)
        head_rows, tip = head_rows[has_next], tip[has_next]
        base = base_all[head_rows + 1]
    else:
        base = base_all[head_rows]
    max_fee = base * settings["base_fee_pct"] // 100 + tip
    return _result(numbers[head_rows], max_fee, tip, {})


def metamask_fee_history(fee_history: pd.DataFrame, level: str = "medium") -> pd.DataFrame:
    """MetaMask's fee-history fallback (``fetchGasEstimatesViaEthFeeHistory``), one level.

    At head ``n``: ``eth_feeHistory`` of blocks ``n - 4 .. n`` at the 10th, 20th and 30th
    reward percentiles; for the level's percentile the lower median of the 5 rewards
    (``medianOf``: sorted, index ``floor((5 - 1) / 2)``), times 94, 97 or 98 and divided by 100
    (floored, as ``BN.divn``), at least 1, 1.5 or 2 gwei, is the tip; the max fee is block
    ``n``'s base fee times 110, 120 or 125, divided by 100 (floored), plus the tip. (The base
    fee is the head's: the fallback asks for no next block.)

    Parameters
    ----------
    fee_history : pandas.DataFrame
        ``Lab.fee_history``'s frame, consecutive blocks, with ``base_fee_wei`` and the
        level's reward column (``reward_p10_wei``, ``reward_p20_wei`` or ``reward_p30_wei``).
    level : {"low", "medium", "high"}

    Returns
    -------
    pandas.DataFrame
        A suggestions frame for each head with 5 blocks of rewards (from the 5th row on).

    References
    ----------
    .. [1] MetaMask/core ``packages/gas-fee-controller/src/fetchGasEstimatesViaEthFeeHistory/
       calculateGasFeeEstimatesForPriorityLevels.ts`` lines 14-45 (the settings) and 56-92
       (the arithmetic), ``medianOf.ts``, ``fetchGasEstimatesViaEthFeeHistory.ts``
       (``numberOfBlocks: 5``, ``percentiles: [10, 20, 30]``, the latest block's base fee),
       commit 40acc6c81bfcf2b3995a9c5e94cce069f41f95f6.
    """
    out = _levels(fee_history, level, next_base_fee=False, what="metamask_fee_history")
    out.attrs = _attrs(fee_history, f"metamask_{level}",
                       "MetaMask gas-fee-controller fee-history fallback")  # fmt: skip
    return out


def gas_api_fees(fee_history: pd.DataFrame, level: str = "medium") -> pd.DataFrame:
    """The Gas API's ``suggestedGasFees`` level, by the rule the devnet's service answers.

    MetaMask's levels (:func:`metamask_fee_history`: the lower median of the last 5 blocks'
    tips at the 10th, 20th or 30th percentile, times 94, 97 or 98 %, at least 1, 1.5 or
    2 gwei) on the *next* block's base fee (``estimatedBaseFee``: block ``n + 1``'s, by
    EIP-1559 from the head) times 110, 120 or 125 %. The devnet's service
    (``feeslab.devnet.gasapi.level_estimate``) takes its tips from its tip model; given the
    same tips this function gives its answer exactly. The real service's internals are not
    published: for it, record its answers block by block and read them with
    :func:`suggested_gas_fees_frame`.

    Parameters
    ----------
    fee_history : pandas.DataFrame
        As for :func:`metamask_fee_history`, ending with the row after the newest block (as
        ``eth_feeHistory`` gives it) so that the last head has a next base fee.
    level : {"low", "medium", "high"}

    Returns
    -------
    pandas.DataFrame
        A suggestions frame for each head with 5 blocks of rewards and a next base fee.

    References
    ----------
    .. [1] MetaMask/Infura Gas API, ``suggestedGasFees``; ``feeslab/devnet/gasapi.py``.
    .. [2] MetaMask/core ``calculateGasFeeEstimatesForPriorityLevels.ts`` (as
       :func:`metamask_fee_history`).
    """
    out = _levels(fee_history, level, next_base_fee=True, what="gas_api_fees")
    out.attrs = _attrs(fee_history, f"gas_api_{level}", "Gas API suggestedGasFees")
    return out


def _gwei_to_wei(text: str) -> int:
    whole, _, frac = str(text).partition(".")
    if len(frac) > 9 or not whole.isdigit() or (frac and not frac.isdigit()):
        raise ValueError(f"{text!r} is not a decimal gwei string with at most 9 decimals")
    return int(whole) * GWEI + int(frac.ljust(9, "0") or "0")


def suggested_gas_fees_frame(
    records: Mapping[int, Mapping[str, Any]] | Sequence[tuple[int, Mapping[str, Any]]],
    level: str = "medium",
) -> pd.DataFrame:
    """The Gas API's ``suggestedGasFees`` answers, recorded block by block, as suggestions.

    Parameters
    ----------
    records : mapping or sequence of (int, dict)
        Head block number -> the decoded ``suggestedGasFees`` answer asked while that block
        was the head (``lab.gas.get(chain_id, "suggestedGasFees")``).
    level : {"low", "medium", "high"}

    Returns
    -------
    pandas.DataFrame
        A suggestions frame, sorted by block, its decimal gwei strings read exactly into wei
        (never through a float).

    Raises
    ------
    ValueError
        A record lacks the level or holds a value that is not a decimal gwei string.

    References
    ----------
    .. [1] MetaMask/Infura Gas API reference, ``suggestedGasFees``.
    """
    if level not in METAMASK_LEVELS:
        raise ValueError(f"level must be one of {list(METAMASK_LEVELS)}, got {level!r}")
    items = sorted(records.items() if isinstance(records, Mapping) else records)
    numbers, fees, tips = [], [], []
    for number, answer in items:
        try:
            part = answer[level]
            fees.append(_gwei_to_wei(part["suggestedMaxFeePerGas"]))
            tips.append(_gwei_to_wei(part["suggestedMaxPriorityFeePerGas"]))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"the record of block {number} lacks {level}'s fees: {exc}") from None
        numbers.append(int(number))
    return _result(np.array(numbers, dtype=np.int64), np.array(fees, dtype=np.int64),
                   np.array(tips, dtype=np.int64),
                   {"estimator": f"gas_api_{level}", "reproduces": "Gas API suggestedGasFees",
                    "source": "Gas API answers, recorded block by block"})  # fmt: skip


# -- ethers, viem, web3.py ---------------------------------------------------------------------


def _node_tip(
    heads: np.ndarray, priority_fee: pd.DataFrame | None, default: int | None, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """The node's ``eth_maxPriorityFeePerGas`` at each head (a suggestions frame such as
    :func:`geth_oracle`'s), as (tips, which heads have one)."""
    if priority_fee is None:
        if default is None:
            raise ValueError(f"{what}: pass priority_fee (the node's eth_maxPriorityFeePerGas "
                             "per head, e.g. geth_oracle's frame)")  # fmt: skip
        return np.full(len(heads), default, dtype=np.int64), np.ones(len(heads), dtype=bool)
    tips = priority_fee.set_index("block_number")["max_priority_fee_per_gas_wei"]
    found = tips.reindex(heads)
    have = found.notna().to_numpy()
    return found.fillna(0).to_numpy(dtype=np.int64), have


def ethers_fee_data(
    fee_history: pd.DataFrame, *, priority_fee: pd.DataFrame | None = None
) -> pd.DataFrame:
    """ethers v6 ``provider.getFeeData()``: ``maxFeePerGas = 2 x base fee + tip``.

    The tip is the node's ``eth_maxPriorityFeePerGas`` (``getPriorityFee``), or 1 gwei when
    the node has none; the base fee is the latest block's (``getBlock("latest")``).

    Parameters
    ----------
    fee_history : pandas.DataFrame
        ``block_number`` and ``base_fee_wei`` of the heads (consecutive blocks).
    priority_fee : pandas.DataFrame, optional
        The node's answer per head, as a suggestions frame (:func:`geth_oracle`'s for a geth
        node); None: a node without the method (the 1 gwei default).

    Returns
    -------
    pandas.DataFrame
        A suggestions frame for the heads that have a tip.

    References
    ----------
    .. [1] ethers.js ``src.ts/providers/abstract-provider.ts`` lines 920-964 (``getFeeData``:
       ``maxPriorityFeePerGas = priorityFee ?? 1000000000n``, ``maxFeePerGas = baseFeePerGas
       * 2n + maxPriorityFeePerGas``), commit 98c49d091eb84a9146dfba8476f18e4c3e3d1d31.
    """
    frame = _head_rows(fee_history, "ethers_fee_data")
    numbers = _blocks(frame, "ethers_fee_data")
    base = _column(frame, "base_fee_wei", "ethers_fee_data")
    tip, have = _node_tip(numbers, priority_fee, ETHERS_DEFAULT_TIP, "ethers_fee_data")
    return _result(numbers[have], (2 * base + tip)[have], tip[have],
                   _attrs(fee_history, "ethers", "ethers v6 getFeeData"))  # fmt: skip


def _viem_multiply(multiplier: float) -> tuple[int, int]:
    """viem's ``multiply``: ``base * round(m * 10**d) / 10**d``, ``d`` the decimals of ``m``
    as JavaScript prints it (Python's repr agrees for such short decimals)."""
    if not multiplier >= 1:
        raise ValueError(f"base_fee_multiplier must be at least 1 (viem's BaseFeeScalarError), "
                         f"got {multiplier!r}")  # fmt: skip
    text = repr(float(multiplier))
    decimals = len(text.split(".")[1]) if "." in text and not text.endswith(".0") else 0
    denominator = 10**decimals
    numerator = math.floor(multiplier * denominator + 0.5)  # Math.round: halves up
    return numerator, denominator


def viem_fees(
    fee_history: pd.DataFrame,
    *,
    priority_fee: pd.DataFrame,
    base_fee_multiplier: float = VIEM_BASE_FEE_MULTIPLIER,
) -> pd.DataFrame:
    """viem ``estimateFeesPerGas``: ``maxFeePerGas = base fee x 1.2 + tip``.

    The base fee is the latest block's, multiplied as viem does (``base * 12n / 10n``, floored);
    the tip is the node's ``eth_maxPriorityFeePerGas`` (``estimateMaxPriorityFeePerGas``).

    Parameters
    ----------
    fee_history : pandas.DataFrame
        ``block_number`` and ``base_fee_wei`` of the heads (consecutive blocks).
    priority_fee : pandas.DataFrame
        The node's answer per head, as a suggestions frame (:func:`geth_oracle`'s).
    base_fee_multiplier : float
        The chain's ``fees.baseFeeMultiplier`` (1.2 by default).

    Returns
    -------
    pandas.DataFrame
        A suggestions frame for the heads that have a tip.

    References
    ----------
    .. [1] viem ``src/actions/public/estimateFeesPerGas.ts`` (``baseFeeMultiplier ?? 1.2``,
       ``multiply``, ``maxFeePerGas = baseFeePerGas + maxPriorityFeePerGas``) and
       ``estimateMaxPriorityFeePerGas.ts`` (``eth_maxPriorityFeePerGas``), commit
       0912a29d5c7abbea5238d6f7c3d750f07d479ace.
    """
    numerator, denominator = _viem_multiply(base_fee_multiplier)
    frame = _head_rows(fee_history, "viem_fees")
    numbers = _blocks(frame, "viem_fees")
    base = _column(frame, "base_fee_wei", "viem_fees")
    tip, have = _node_tip(numbers, priority_fee, None, "viem_fees")
    max_fee = base * numerator // denominator + tip
    return _result(numbers[have], max_fee[have], tip[have],
                   _attrs(fee_history, "viem", "viem estimateFeesPerGas"))  # fmt: skip


def web3py_fallback(fee_history: pd.DataFrame, *, pending: bool = False) -> pd.DataFrame:
    """web3.py's fee-history fallback for ``max_priority_fee`` and its ``maxFeePerGas``.

    When the node lacks ``eth_maxPriorityFeePerGas``, web3.py asks
    ``eth_feeHistory(10, "pending", [5.0])`` and takes the mean of the non-zero 5th-percentile
    rewards (``round(sum / count)``: a float division rounded half to even; 0 when all are
    zero), clamped to 1..1.5 gwei. ``maxFeePerGas`` is that tip plus twice the latest block's
    base fee. The window ends at ``"pending"``: blocks ``n - 9 .. n`` on a node that answers
    it from the latest block, ``n - 8 .. n + 1`` on one with a pending block (geth with a
    miner, the devnet), whose contents a backtest does not know at ``n``.

    Parameters
    ----------
    fee_history : pandas.DataFrame
        ``Lab.fee_history``'s frame with ``reward_p5_wei``, consecutive blocks.
    pending : bool
        The node has a pending block: the window takes block ``n + 1``'s rewards as the
        pending block's (the frame's next row; the last row is then no head). Default False,
        which uses nothing a wallet could not see at ``n``.

    Returns
    -------
    pandas.DataFrame
        A suggestions frame for each head with 10 blocks of rewards.

    References
    ----------
    .. [1] web3.py ``web3/_utils/fee_utils.py`` (``PRIORITY_FEE_HISTORY_PARAMS``,
       ``_fee_history_priority_fee_estimate``), ``web3/eth/eth.py`` (``max_priority_fee``),
       ``web3/_utils/transactions.py`` (``maxFeePerGas``: the tip plus ``2 *
       get_block("latest")["baseFeePerGas"]``), commit
       2f907b87003f026506097d0941b91c3cc71433fe.
    """
    frame = _head_rows(fee_history, "web3py_fallback")
    numbers = _blocks(frame, "web3py_fallback")
    base = _column(frame, "base_fee_wei", "web3py_fallback")
    rewards, missing = _rewards(frame, WEB3PY_PERCENTILE, "web3py_fallback")
    if len(frame) < WEB3PY_BLOCKS:
        empty = np.zeros(0, dtype=np.int64)
        return _result(empty, empty, empty, _attrs(fee_history, "web3py", "web3.py fallback"))
    if missing.any():
        raise ValueError("web3py_fallback: reward p5 is missing at block "
                         f"{int(numbers[np.flatnonzero(missing)[0]])}")  # fmt: skip
    window = _windows(rewards, WEB3PY_BLOCKS)
    total = window.sum(axis=1)  # < 10 x 1.8e16: exact in int64
    nonzero = (window != 0).sum(axis=1)
    # Python: round(int / int), the quotient a correctly rounded double (sum < 2**53 here,
    # so numpy's float division of the same two exact doubles is that double), then half-even
    if total.max(initial=0) >= 2**53:
        raise ValueError("web3py_fallback: reward sums pass 2**53 wei, beyond exact doubles")
    mean = np.round(total.astype(np.float64) / np.maximum(nonzero, 1)).astype(np.int64)
    tip = np.clip(mean, WEB3PY_TIP_MIN, WEB3PY_TIP_MAX)
    rows = np.arange(WEB3PY_BLOCKS - 1, len(frame)) - int(pending)  # the head of each window
    return _result(numbers[rows], tip + 2 * base[rows], tip,
                   _attrs(fee_history, "web3py", "web3.py fee-history fallback"))  # fmt: skip


# -- blobs -------------------------------------------------------------------------------------


def blob_fee_cap(fee_history: pd.DataFrame, k: int | float = 2) -> pd.DataFrame:
    """``maxFeePerBlobGas = k x`` the head block's blob base fee, at each head.

    Parameters
    ----------
    fee_history : pandas.DataFrame
        ``block_number`` and ``base_fee_per_blob_gas_wei`` (Int64; ``<NA>`` before Cancun,
        those rows left out).
    k : int or float
        The multiple [1]; a float is applied as the fraction ``k`` exactly is
        (``Fraction(k)``), floored.

    Returns
    -------
    pandas.DataFrame
        ``block_number`` (int64), ``blob_base_fee_wei`` and ``max_fee_per_blob_gas_wei``
        (object: exact Python ints) [wei]; ``attrs`` as the suggestions frames'.

    References
    ----------
    .. [1] EIP-4844: a blob transaction pays the block's blob base fee if its
       ``max_fee_per_blob_gas`` covers it.
    """
    from fractions import Fraction

    if not k > 0:
        raise ValueError(f"k must be positive, got {k!r}")
    ratio = Fraction(k)
    numbers = _blocks(fee_history, "blob_fee_cap")
    fees = fee_history["base_fee_per_blob_gas_wei"]
    keep = fees.notna().to_numpy()
    values = [int(v) for v in fees[keep]]
    caps = [v * ratio.numerator // ratio.denominator for v in values]
    out = pd.DataFrame({
        "block_number": numbers[keep],
        "blob_base_fee_wei": pd.Series(values, dtype=object),
        "max_fee_per_blob_gas_wei": pd.Series(caps, dtype=object),
    })
    out.attrs = _attrs(fee_history, f"blob_k{k:g}", "maxFeePerBlobGas = k x blob base fee")
    return out

"""Real Ethereum mainnet samples shipped with feeslab: no network, no credits.

Each loader returns a typed frame with ``attrs`` saying ``chain_id`` (1), ``source`` and
``reference``; ``data/SOURCES.md`` gives each file's repository, path, commit, licence and the
checks run when it was copied.

========================  =========================================================================
``uncle_counts_2021()``   uncles per block, blocks 12,710,000 .. 13,509,999 (around London)
``attack_gas_2016()``     the 2016 denial-of-service attack's blocks: gas, attack gas, uncles
``frontier_blocks()``     mainnet blocks 0 .. 8,191 (July 2015), from the first era1 file
``frontier_uncles()``     the 1,410 uncles those blocks include
``blob_market()``         every block's blob fields, Cancun (19,426,587) .. 24,465,653 (Feb 2026)
``post_merge_blocks()``   four whole post-merge blocks: headers, transactions, receipts
``miner_revenue_2021()``  what each block paid its miner, blocks 12,710,000 .. 13,509,999 [wei]
========================  =========================================================================

References
----------
.. [1] Y. Liu, Y. Lu, K. Nayak, F. Zhang, L. Zhang, Y. Zhao, "Empirical Analysis of EIP-1559:
   Transaction Fees, Waiting Time, and Consensus Security", ACM CCS 2022, arXiv:2201.05574.
.. [2] V. Buterin, ethereum/research, ``uncle_regressions/`` (2016).
.. [3] The era1 history archive, ``mainnet-00000-5ec1ffb8.era1`` (via paradigmxyz/reth).
.. [4] ChainsCore Labs, Chainscore/score-da, ``protocol/Ethereum/data/blocks/`` (CC BY 4.0).
.. [5] EIP-4844: Shard Blob Transactions; EIP-7691: Blob throughput increase; EIP-7892: Blob
   Parameter Only Hardforks; EIP-7918: Blob base fee bounded by execution cost.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import rlp
from eth_hash.auto import keccak

from feeslab.frames import blocks_frame, parse_blocks, uncles_frame
from feeslab.frames.transactions import parse_transactions
from feeslab.protocol.blobs import GAS_PER_BLOB, BlobRule, blob_base_fee_array
from feeslab.protocol.chainspec import ChainSpec
from feeslab.protocol.headers import HEADER_FIELDS

__all__ = [
    "BLOB_MARKET_ATTRIBUTION",
    "LONDON_BLOCK",
    "MINER_REVENUE_ATTRIBUTION",
    "PostMergeBlocks",
    "attack_gas_2016",
    "blob_market",
    "fork_headers",
    "frontier_blocks",
    "frontier_uncles",
    "miner_revenue_2021",
    "post_merge_blocks",
    "uncle_counts_2021",
]

LONDON_BLOCK = 12_965_000  # EIP-1559's activation on mainnet

#: The credit CC BY 4.0 asks for, with the changes feeslab made (also ``attrs["attribution"]``).
BLOB_MARKET_ATTRIBUTION = (
    "Block data: ChainsCore Labs, Chainscore/score-da "
    "(https://github.com/Chainscore/score-da, commit cea6c6373ffe06692032bf67d13312aff1100596, "
    "protocol/Ethereum/data/blocks/), Copyright 2025 ChainsCore Labs, licensed under CC BY 4.0 "
    "(https://creativecommons.org/licenses/by/4.0/). Changed by feeslab: 705 daily CSV files "
    "joined and stored as Parquet, timestamps in seconds, blob_gas_used derived from blob_count, "
    "blob base fee and fork computed from feeslab's mainnet blob schedule."
)

#: The credit the MIT licence of the miner-revenue data asks for (also ``attrs["attribution"]``).
MINER_REVENUE_ATTRIBUTION = (
    "Miner revenue data: Y. Liu, Y. Lu, K. Nayak, F. Zhang, L. Zhang, Y. Zhao, \"Empirical "
    "Analysis of EIP-1559: Transaction Fees, Waiting Time, and Consensus Security\", ACM CCS "
    "2022 (arXiv:2201.05574), replication data SciEcon/EIP1559 "
    "(https://github.com/SciEcon/EIP1559, commit 4721751835163565f1a4ac6e50c53656a97441f3, "
    "Data/MEVdata/), Copyright (c) 2022 the authors, MIT licence. Changed by feeslab: 200 "
    "per-series files joined into one Parquet file, the fee columns split at 1 ETH."
)


def _read(name: str) -> pd.DataFrame:
    resource = resources.files("feeslab._data").joinpath("samples").joinpath(name)
    with resources.as_file(resource) as path:
        return pd.read_parquet(path)


def _attrs(frame: pd.DataFrame, source: str, reference: str) -> pd.DataFrame:
    frame.attrs.update({"chain_id": 1, "source": source, "reference": reference})
    return frame


def uncle_counts_2021() -> pd.DataFrame:
    """Uncles included by each of 800,000 mainnet blocks around London (June-October 2021).

    Returns
    -------
    pandas.DataFrame
        ``block_number`` (int64), 12,710,000 .. 13,509,999 (London: 12,965,000), and
        ``uncle_count`` (int64), 0..2. ``attrs``: ``source`` ``"SciEcon/EIP1559"``.

    References
    ----------
    .. [1] Liu et al., CCS 2022 (arXiv:2201.05574), replication data ``Data/MEVdata``.
    """
    frame = _read("uncle_counts_2021.parquet").astype({"uncle_count": "int64"})
    return _attrs(frame, "SciEcon/EIP1559", "Liu et al. 2022, arXiv:2201.05574")


_ETH = 10**18
# the columns past int64 (9.22 ETH): stored as whole ether and the wei below one ether
_SPLIT_AT_ONE_ETH = ("flashbots_bundle_gas_fee_wei", "other_gas_fee_wei",
                     "flashbots_coinbase_transfer_wei")  # fmt: skip


def miner_revenue_2021() -> pd.DataFrame:
    """What each of 800,000 mainnet blocks around London paid its miner, exact to the wei.

    Blocks 12,710,000 .. 13,509,999 (June-October 2021; London, EIP-1559, at 12,965,000), the
    data behind Liu et al.'s miner-revenue figures [1]_. Loads in 1-2 s (12 MB of
    Parquet).

    Returns
    -------
    pandas.DataFrame
        One row per block, in block order, RangeIndex:

        ``block_number`` (int64)
            Every block, none missing.
        ``static_reward_wei`` (int64) [wei]
            The block reward, 2 ETH in every block (EIP-1234).
        ``uncle_inclusion_reward_wei`` (int64) [wei]
            1/32 of the block reward per uncle included (0, 1 or 2 uncles:
            :func:`uncle_counts_2021` block for block).
        ``flashbots_bundle_gas_fee_wei`` (object: Python int) [wei]
            What the miner earned in gas from the transactions of Flashbots bundles:
            ``(gas price - base fee) x gas used`` (EIP-1559 transactions: ``min(max priority
            fee, max fee - base fee) x gas used``), the base fee 0 before London. Before
            London the whole fee, after it the tips (the burn is not the miner's).
        ``other_gas_fee_wei`` (object: Python int) [wei]
            The same, from every other transaction.
        ``flashbots_coinbase_transfer_wei`` (object: Python int) [wei]
            What Flashbots bundles paid the miner directly (coinbase transfers).

        The three last columns hold Python ints because values pass int64's 2**63 - 1 wei
        (9.22 ETH): 1,149 blocks' other fees do, up to 7,676.8 ETH in one block; floats
        would lose wei above 2**53 (0.009 ETH). The two first fit int64 (at most 2 ETH).
        ``attrs``: ``chain_id`` 1, ``chain_spec`` ``"mainnet"``, ``source``
        ``"SciEcon/EIP1559"``, ``reference``, ``licence`` ``"MIT"`` and ``attribution``
        (:data:`MINER_REVENUE_ATTRIBUTION`: credit it where the data is shown).

    Notes
    -----
    The file stores each column past int64 as two exact integer columns, whole ether (int16)
    and the wei below one ether (int64, below 10**18), which Parquet keeps losslessly and
    compactly (a decimal type would cost 10-16 bytes a value); the loader adds them back
    exactly. ``tests/test_samples_revenue.py`` checks every column's sum, to the wei, against
    the source CSV's, and the whole frame against the CSV's checksum.

    References
    ----------
    .. [1] Y. Liu, Y. Lu, K. Nayak, F. Zhang, L. Zhang, Y. Zhao, "Empirical Analysis of
       EIP-1559: Transaction Fees, Waiting Time, and Consensus Security", ACM CCS 2022,
       arXiv:2201.05574; replication data SciEcon/EIP1559 @ 47217518, ``Data/MEVdata/``
       (computed in its ``Data/mev.py``), MIT.
    .. [2] EIP-1559: Fee market change for ETH 1.0 chain; EIP-1234: Constantinople
       difficulty bomb delay and block reward adjustment.
    """
    stored = _read("miner_revenue_2021.parquet")
    frame = pd.DataFrame({
        "block_number": stored["block_number"].to_numpy(dtype=np.int64),
        "static_reward_wei": stored["static_reward_wei"].to_numpy(dtype=np.int64),
        "uncle_inclusion_reward_wei": stored["uncle_inclusion_reward_wei"].to_numpy(
            dtype=np.int64),
    })  # fmt: skip
    for name in _SPLIT_AT_ONE_ETH:
        stem = name.removesuffix("_wei")
        ether = stored[f"{stem}_eth_part"].to_numpy().astype(object)  # Python ints: exact
        below = stored[f"{stem}_wei_part"].to_numpy().astype(object)
        frame[name] = pd.Series(ether * _ETH + below, dtype=object)
    frame.attrs.update({
        "chain_id": 1, "chain_spec": "mainnet", "source": "SciEcon/EIP1559",
        "reference": "Liu et al. 2022, arXiv:2201.05574; SciEcon/EIP1559 @ 47217518, "
                     "Data/MEVdata/",
        "licence": "MIT", "attribution": MINER_REVENUE_ATTRIBUTION,
    })  # fmt: skip
    return frame


def attack_gas_2016() -> pd.DataFrame:
    """The blocks of the September-October 2016 attacks, with their gas and uncles.

    Returns
    -------
    pandas.DataFrame
        The 23,153 blocks the source lists between 2,271,721 and 2,419,325 (its regression
        counts the blocks it does not list as empty): ``block_number`` (int64), ``gas_used``
        (int64) [gas], ``attack_gas`` (int64) [gas] (the gas the source attributes to the
        attack's transactions) and ``uncle_count`` (int64): the source's ``uncles`` column,
        the regression's response. ``attrs``: ``source`` ``"ethereum/research"``.

    References
    ----------
    .. [1] ethereum/research, ``uncle_regressions/attack_gas.csv`` and
       ``attack_gas_regression.py``.
    """
    frame = _read("attack_gas_2016.parquet").astype({"uncle_count": "int64"})
    return _attrs(frame, "ethereum/research", "uncle_regressions/attack_gas.csv")


def frontier_blocks() -> pd.DataFrame:
    """Mainnet blocks 0 .. 8,191, as ``Lab.blocks`` returns them, read from era1.

    Returns
    -------
    pandas.DataFrame
        The columns of ``feeslab.frames.parse_blocks`` (``difficulty`` and
        ``total_difficulty`` exact Python ints, ``uncle_hashes`` tuples). ``attrs``:
        ``source`` ``"era1"``.
    """
    stored = _read("frontier_blocks.parquet").drop(columns=["gas_used_ratio", "uncle_count"])
    stored["blob_gas_used"] = stored["excess_blob_gas"] = None  # no blobs before Cancun
    frame = blocks_frame(stored)
    frame.attrs = dict(stored.attrs)  # what the file says of itself (its network)
    return _attrs(frame, "era1", "mainnet-00000-5ec1ffb8.era1")


def frontier_uncles() -> pd.DataFrame:
    """The uncles included by mainnet blocks 0 .. 8,191, as ``Lab.uncles(...).uncles``.

    Returns
    -------
    pandas.DataFrame
        The columns of ``feeslab.frames.parse_uncles``; ``attrs``: ``source`` ``"era1"``.
    """
    stored = _read("frontier_uncles.parquet").drop(columns="depth")
    frame = uncles_frame(stored)
    frame.attrs = dict(stored.attrs)  # what the file says of itself (its network)
    return _attrs(frame, "era1", "mainnet-00000-5ec1ffb8.era1")


def _reserve_branch(
    rules: Sequence[BlobRule], fork: np.ndarray, used: np.ndarray, excess: np.ndarray
) -> pd.arrays.BooleanArray:
    """Whether each block's excess took EIP-7918's branch, read off the excess alone.

    From its parent's excess ``e`` and use ``u`` (the previous row: the rows are consecutive;
    Cancun's first block's parent had none), the child's fork's target ``t`` and max ``m``
    [blobs]: EIP-4844 gives ``e + u - t * 2**17``, the reserve price ``e + u * (m - t) // m``
    (0 for both when ``e + u`` is below target). ``<NA>`` where the two agree (after a full
    parent) or the excess follows neither; False before Osaka.
    """
    n = len(excess)
    reserve = [i for i, rule in enumerate(rules) if rule.reserve_price]
    # the rows from Osaka on (a tail: time only grows); before them the answer is False
    start = int(np.searchsorted(fork, reserve[0])) if reserve else n
    bound, unknown = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    if start == n:
        return pd.arrays.BooleanArray(bound, unknown)
    child = fork[start:]
    target = np.array([r.target_blob_gas for r in rules], dtype=np.int64)[child]
    target_blobs = np.array([r.target_blobs for r in rules], dtype=np.int64)[child]
    most = np.array([r.max_blobs for r in rules], dtype=np.int64)[child]
    applies = np.array([r.reserve_price for r in rules], dtype=bool)[child]
    parent_excess = np.concatenate([[0], excess])[start : n]  # row -1: Cancun's parent, 0 and 0
    parent_used = np.concatenate([[0], used])[start : n]
    total = parent_excess + parent_used
    below = total < target
    eip4844 = np.where(below, 0, total - target)
    eip7918 = np.where(below, 0, parent_excess + parent_used * (most - target_blobs) // most)
    here = excess[start:]
    bound[start:] = applies & (here == eip7918) & (eip7918 != eip4844)
    unknown[start:] = applies & ((eip7918 == eip4844) | ((here != eip4844) & (here != eip7918)))
    return pd.arrays.BooleanArray(bound, unknown)


def blob_market() -> pd.DataFrame:
    """The blob fields of every mainnet block from Cancun's first to 15 February 2026.

    5,039,067 consecutive blocks, 19,426,587 .. 24,465,653 (2024-03-13 .. 2026-02-15 UTC),
    across five blob forks: Cancun, Prague, Osaka, BPO1 and BPO2. Loads in about 2 s
    (4.5 MB of Parquet; the frame takes ~270 MB).

    Returns
    -------
    pandas.DataFrame
        One row per block, in block order, RangeIndex. The columns ``Lab.blocks`` also has
        keep its names and dtypes (:data:`feeslab.frames.BLOCK_DTYPES`):

        ``block_number`` (int64)
            Every block, none missing.
        ``timestamp`` (datetime64[ns, UTC])
            Block time [s resolution].
        ``blob_count`` (int64)
            Blobs the block carries (0 .. the fork's maximum: 6, 9, 9, 15, 21).
        ``blob_gas_used`` (Int64) [gas]
            ``blobGasUsed``: ``2**17 * blob_count`` (EIP-4844 ``GAS_PER_BLOB``).
        ``excess_blob_gas`` (Int64) [gas]
            ``excessBlobGas``, as the source gives it.
        ``blob_base_fee_wei`` (int64) [wei per blob gas]
            The block's blob base fee, ``fake_exponential(1, excess_blob_gas,
            update_fraction)`` with its own fork's fraction, computed by feeslab
            (:func:`feeslab.protocol.blobs.blob_base_fee`): the source has no fee.
        ``fork`` (category, in activation order)
            The blob fork in force at the block's timestamp: ``cancun``, ``prague``,
            ``osaka``, ``bpo1``, ``bpo2`` (forks switch by time, EIP-7892).
        ``reserve_price_bound`` (boolean, nullable)
            Whether the block's excess blob gas took EIP-7918's reserve-price branch
            (``parent excess + parent used * (max - target) // max``) rather than
            EIP-4844's (``parent excess + parent used - target``), read off the data (the
            source has no base fee to recompute the condition). False before Osaka;
            ``<NA>`` where both branches give the same excess (after a full parent block).

        ``attrs``: ``chain_id`` 1, ``chain_spec`` ``"mainnet"`` (so the analysis functions
        take the mainnet blob schedule from the frame), ``source`` ``"Chainscore/score-da"``,
        ``reference``, ``licence`` ``"CC BY 4.0"`` and ``attribution``
        (:data:`BLOB_MARKET_ATTRIBUTION`: credit it where the data is shown).

    Notes
    -----
    The source has no execution base fee, so EIP-7918's reserve-price condition (from Osaka)
    cannot be recomputed; each block's excess follows from its parent's by one of the rule's
    two branches (``reserve_price_bound`` says which), which ``tests/test_samples_blobs.py``
    checks for every block.

    References
    ----------
    .. [1] Chainscore/score-da @ cea6c637, ``protocol/Ethereum/data/blocks/<date>.csv``
       (rows from the public BigQuery table ``crypto_ethereum.blocks``), CC BY 4.0.
    .. [2] EIP-4844 (``fake_exponential``, ``GAS_PER_BLOB``); EIP-7691, EIP-7892, EIP-7918.
    """
    stored = _read("blob_market.parquet")
    spec = ChainSpec.from_chain(1)
    seconds = stored["timestamp"].to_numpy(dtype=np.int64)
    # the forks the span reaches (a fork scheduled after its end is no category of it)
    rules = tuple(rule for rule in spec.blob_schedule if rule.start <= seconds[-1])
    # forks switch by time (EIP-7892); every block here is at or after Cancun's start
    fork = np.searchsorted([rule.start for rule in rules], seconds, side="right") - 1
    count = stored["blob_count"].to_numpy(dtype=np.int64)
    excess = stored["excess_blob_gas"].to_numpy(dtype=np.int64)
    fee = np.empty(len(excess), dtype=np.int64)
    # fake_exponential fork by fork (contiguous rows: time only grows), exact in int64 (the
    # largest fee here is ~8.4e12 wei)
    edges = np.searchsorted(fork, np.arange(len(rules) + 1))
    for rule, start, stop in zip(rules, edges[:-1], edges[1:], strict=True):
        if stop > start:
            fraction = np.full(stop - start, rule.update_fraction, dtype=np.int64)
            fee[start:stop] = blob_base_fee_array(excess[start:stop], fraction)
    present = np.zeros(len(count), dtype=bool)  # no row lacks a value: the mask of IntegerArray
    frame = pd.DataFrame({
        "block_number": stored["block_number"].to_numpy(dtype=np.int64),
        "timestamp": pd.to_datetime((seconds * 10**9).view("datetime64[ns]"), utc=True),
        "blob_count": count,
        "blob_gas_used": pd.arrays.IntegerArray(count * GAS_PER_BLOB, present),
        "excess_blob_gas": pd.arrays.IntegerArray(excess, present),
        "blob_base_fee_wei": fee,
        "fork": pd.Categorical.from_codes(fork, categories=[rule.fork for rule in rules]),
        "reserve_price_bound": _reserve_branch(rules, fork, count * GAS_PER_BLOB, excess),
    }, copy=False)  # fmt: skip
    frame.attrs.update({
        "chain_id": 1, "chain_spec": spec.label, "source": "Chainscore/score-da",
        "reference": "Chainscore/score-da @ cea6c637, protocol/Ethereum/data/blocks/",
        "licence": "CC BY 4.0", "attribution": BLOB_MARKET_ATTRIBUTION,
    })  # fmt: skip
    return frame


# -- whole blocks: consensus RLP turned into the JSON a node answers ------------------------------

_HEADER_QUANTITIES = frozenset({"difficulty", "number", "gasLimit", "gasUsed", "timestamp",
                                "baseFeePerGas", "blobGasUsed", "excessBlobGas"})  # fmt: skip
# each typed transaction's RLP fields in order (EIP-2718 payloads), after the type byte; the
# fields as a node's JSON names them
_TX_LAYOUTS: dict[int, tuple[str, ...]] = {
    0: ("nonce", "gasPrice", "gas", "to", "value", "input", "v", "r", "s"),
    1: ("chainId", "nonce", "gasPrice", "gas", "to", "value", "input", "accessList", "yParity",
        "r", "s"),  # EIP-2930
    2: ("chainId", "nonce", "maxPriorityFeePerGas", "maxFeePerGas", "gas", "to", "value",
        "input", "accessList", "yParity", "r", "s"),  # EIP-1559
    3: ("chainId", "nonce", "maxPriorityFeePerGas", "maxFeePerGas", "gas", "to", "value",
        "input", "accessList", "maxFeePerBlobGas", "blobVersionedHashes", "yParity", "r",
        "s"),  # EIP-4844
    4: ("chainId", "nonce", "maxPriorityFeePerGas", "maxFeePerGas", "gas", "to", "value",
        "input", "accessList", "authorizationList", "yParity", "r", "s"),  # EIP-7702
}  # fmt: skip
_TX_QUANTITIES = frozenset({"nonce", "gasPrice", "gas", "value", "v", "r", "s", "chainId",
                            "yParity", "maxPriorityFeePerGas", "maxFeePerGas",
                            "maxFeePerBlobGas"})  # fmt: skip


def _hex(value: bytes) -> str:
    return "0x" + value.hex()


def _quantity(value: bytes) -> str:
    return hex(int.from_bytes(value, "big"))


def _header_json(header: bytes) -> dict[str, Any]:
    """A header's RLP as ``eth_getBlockByNumber`` names its fields (hex), with its hash."""
    fields = rlp.decode(header)
    block: dict[str, Any] = {
        name: (_quantity(value) if name in _HEADER_QUANTITIES else _hex(value))
        for name, value in zip(HEADER_FIELDS, fields, strict=False)
    }
    block["hash"] = _hex(keccak(header))
    return block


def _transaction_json(raw: Any, index: int, number: int, base_fee: int) -> dict[str, Any]:
    """One body transaction (a legacy RLP list or EIP-2718 ``type || payload`` bytes) as a
    node's full-block JSON: fee fields, ``hash`` (keccak of its encoding) and the
    ``gasPrice`` a node reports (the effective price for typed fee-market transactions)."""
    if isinstance(raw, list):
        kind, fields, encoded = 0, raw, rlp.encode(raw)
    else:
        kind, fields, encoded = raw[0], rlp.decode(raw[1:]), bytes(raw)
    layout = _TX_LAYOUTS[kind]
    tx: dict[str, Any] = {"type": hex(kind), "hash": _hex(keccak(encoded)),
                          "blockNumber": hex(number), "transactionIndex": hex(index)}  # fmt: skip
    for name, value in zip(layout, fields, strict=True):
        if name in _TX_QUANTITIES:
            tx[name] = _quantity(value)
        elif name == "blobVersionedHashes":
            tx[name] = [_hex(h) for h in value]
        elif name in ("accessList", "authorizationList"):
            tx[name] = value  # kept as decoded: nothing here reads them
        else:  # to (empty: contract creation), input
            tx[name] = None if name == "to" and not value else _hex(value)
    if "maxFeePerGas" in tx:  # geth reports the price paid: min(max fee, base fee + tip)
        tip = int(tx["maxPriorityFeePerGas"], 16)
        tx["gasPrice"] = hex(min(int(tx["maxFeePerGas"], 16), base_fee + tip))
    return tx


def _receipts_json(receipts: bytes, transactions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The receipts as ``eth_getBlockReceipts`` answers them, from their RLP.

    The shipped receipts are eth/69's ``[type, status, cumulative gas, logs]`` (no bloom,
    EIP-7642); each ``gasUsed`` is the step in the cumulative gas and ``effectiveGasPrice``
    the transaction's price paid, as geth derives them (``DeriveFields``).
    """
    decoded = rlp.decode(receipts)
    if len(decoded) != len(transactions):
        raise ValueError(f"{len(decoded)} receipts for {len(transactions)} transactions")
    out, before = [], 0
    for tx, fields in zip(transactions, decoded, strict=True):
        kind, status, cumulative = (int.from_bytes(v, "big") for v in fields[:3])
        if hex(kind) != tx["type"]:
            raise ValueError(f"receipt of type {kind} for transaction {tx['hash']} "
                             f"of type {tx['type']}")  # fmt: skip
        out.append({
            "transactionHash": tx["hash"], "transactionIndex": tx["transactionIndex"],
            "blockNumber": tx["blockNumber"], "type": tx["type"], "status": hex(status),
            "cumulativeGasUsed": hex(cumulative), "gasUsed": hex(cumulative - before),
            "effectiveGasPrice": tx["gasPrice"],
        })  # fmt: skip
        before = cumulative
    return out


def _whole_block_json(
    header: bytes, body: bytes, receipts: bytes
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(eth_getBlockByNumber(n, true), eth_getBlockReceipts(n))`` of one block's RLP."""
    block = _header_json(header)
    transactions, uncles, *rest = rlp.decode(body)
    number, base_fee = int(block["number"], 16), int(block.get("baseFeePerGas", "0x0"), 16)
    block["transactions"] = [_transaction_json(raw, i, number, base_fee)
                             for i, raw in enumerate(transactions)]  # fmt: skip
    block["uncles"] = [_hex(keccak(rlp.encode(u))) for u in uncles]
    if rest:  # Shanghai's withdrawals (index, validator, address, amount [gwei])
        block["withdrawals"] = [
            {"index": _quantity(w[0]), "validatorIndex": _quantity(w[1]),
             "address": _hex(w[2]), "amount": _quantity(w[3])} for w in rest[0]
        ]  # fmt: skip
    # a node's size: the RLP of the whole block, [header, transactions, uncles, withdrawals]
    block["size"] = hex(len(rlp.encode([rlp.decode(header), transactions, uncles, *rest])))
    return block, _receipts_json(receipts, block["transactions"])


class PostMergeBlocks(NamedTuple):
    """What :func:`post_merge_blocks` returns: ``blocks, transactions = post_merge_blocks()``."""

    blocks: pd.DataFrame
    """One row per block, the columns of ``Lab.blocks`` (:func:`feeslab.frames.parse_blocks`)."""
    transactions: pd.DataFrame
    """One row per transaction (:func:`feeslab.frames.transactions.parse_transactions`)."""


def fork_headers() -> pd.DataFrame:
    """Real mainnet headers at the forks since the merge: parent and child at each boundary.

    Shanghai (17,034,869-17,034,870), Cancun (19,426,586-19,426,587) and Prague
    (22,431,083-22,431,084), the pair 19,999,999-20,000,000 and the single headers 22,162,263 and
    22,869,878: their RLP unchanged, decoded here into the fields a node answers, with the
    same names as a node's answers, so a child's base fee can be checked against its parent's by
    the rule.

    Returns
    -------
    pandas.DataFrame
        One row per header, by block number: ``block_number`` (int64), ``hash`` and
        ``parent_hash`` (str), ``timestamp`` (UTC), ``gas_limit`` and ``gas_used`` (int64)
        [gas], ``base_fee_wei`` (Int64) [wei per gas], ``blob_gas_used`` and
        ``excess_blob_gas`` (Int64, from Cancun) [blob gas], with the dtypes of
        :func:`feeslab.frames.parse_blocks`. ``attrs``: ``chain_id`` 1, ``chain_spec``
        ``"mainnet"``, ``source`` ``"ethereum/portal-spec-tests"``, ``reference``,
        ``licence`` ``"MIT"``.

    References
    ----------
    .. [1] ethereum/portal-spec-tests @ 938744a8, ``tests/mainnet/history/block_data/`` and
       ``tests/mainnet/history/ephemeral_headers/20000000-findcontent.yaml`` (MIT, Copyright
       (c) 2025 Portal Network Contributors).
    """
    resource = (
        resources.files("feeslab._data").joinpath("samples").joinpath("mainnet_fork_headers.json")
    )
    stored = json.loads(resource.read_text(encoding="utf-8"))
    headers = [bytes.fromhex(item["header_rlp"][2:]) for item in stored["headers"]]
    rows = []
    for header in headers:  # headers alone: no size, transactions or uncles to parse
        block = _header_json(header)

        def quantity(name: str, block: dict[str, Any] = block) -> int | None:
            return int(block[name], 16) if name in block else None

        rows.append({
            "block_number": quantity("number"), "hash": block["hash"],
            "parent_hash": block["parentHash"],
            "timestamp": pd.Timestamp(quantity("timestamp"), unit="s", tz="UTC"),
            "gas_limit": quantity("gasLimit"), "gas_used": quantity("gasUsed"),
            "base_fee_wei": quantity("baseFeePerGas"),
            "blob_gas_used": quantity("blobGasUsed"),
            "excess_blob_gas": quantity("excessBlobGas"),
        })  # fmt: skip
    frame = pd.DataFrame(rows).sort_values("block_number", ignore_index=True)
    frame = frame.astype({"block_number": "int64", "gas_limit": "int64", "gas_used": "int64",
                          "base_fee_wei": "Int64", "blob_gas_used": "Int64",
                          "excess_blob_gas": "Int64",
                          "timestamp": "datetime64[ns, UTC]"})  # fmt: skip
    frame.attrs.update({
        "chain_id": 1, "chain_spec": "mainnet", "source": "ethereum/portal-spec-tests",
        "reference": f"{stored['repository']} @ {stored['commit'][:8]}", "licence": "MIT",
    })  # fmt: skip
    return frame


def post_merge_blocks() -> PostMergeBlocks:
    """Four whole mainnet blocks after the merge: each header, transaction and receipt.

    Shanghai's first block (17,034,870), Cancun's (19,426,587), Prague's (22,431,084) and
    22,869,878 (July 2025, with EIP-7702 set-code and blob transactions): 617 transactions.
    The shipped consensus RLP is decoded into the JSON a node answers
    (``eth_getBlockByNumber(n, true)`` and ``eth_getBlockReceipts(n)``, with the fields geth
    derives: the hashes, each receipt's ``gasUsed`` and ``effectiveGasPrice``) and parsed by
    the same frame code as a node's answers.

    Returns
    -------
    PostMergeBlocks
        ``blocks``: the columns and dtypes of :func:`feeslab.frames.parse_blocks`
        (``total_difficulty`` None: nodes drop it after the merge; ``hash`` is keccak256 of
        the header's RLP). ``transactions``: one row per transaction, the columns of
        :func:`~feeslab.frames.transactions.parse_transactions`: ``block_number``,
        ``transaction_index`` (int64), ``hash`` (str), ``type`` (int64: 0 legacy, 1 access
        list, 2 EIP-1559, 3 blob, 4 set code), ``gas_limit``, ``gas_used`` (int64) [gas],
        ``effective_gas_price_wei``, ``max_fee_per_gas_wei``,
        ``max_priority_fee_per_gas_wei``, ``effective_tip_wei`` (Int64) [wei per gas],
        ``blob_count`` (int64) and ``max_fee_per_blob_gas_wei`` (Int64) [wei per blob gas].
        Both frames' ``attrs``: ``chain_id`` 1, ``chain_spec`` ``"mainnet"``, ``source``
        ``"ethereum/portal-spec-tests"``, ``reference``, ``licence`` ``"MIT"``.

    References
    ----------
    .. [1] ethereum/portal-spec-tests @ 938744a8, ``tests/mainnet/history/block_data/``
       (MIT, Copyright (c) 2025 Portal Network Contributors).
    .. [2] EIP-2718 (typed transactions and receipts), EIP-2930, EIP-1559, EIP-4844,
       EIP-7702 (the transaction layouts); go-ethereum ``core/types/receipt.go``
       (``DeriveFields``: gas used, effective gas price).
    """
    stored = _read("post_merge_blocks.parquet")
    answers = [_whole_block_json(h, b, r) for h, b, r in zip(
        stored["header_rlp"], stored["body_rlp"], stored["receipts_rlp"], strict=True)]  # fmt: skip
    blocks = parse_blocks([block for block, _ in answers])
    transactions = parse_transactions([block for block, _ in answers],
                                      [receipts for _, receipts in answers])  # fmt: skip
    for frame in (blocks, transactions):
        frame.attrs.update({
            "chain_id": 1, "chain_spec": "mainnet", "source": "ethereum/portal-spec-tests",
            "reference": "ethereum/portal-spec-tests @ 938744a8, "
                         "tests/mainnet/history/block_data/block-data-<N>.yaml",
            "licence": "MIT",
        })  # fmt: skip
    return PostMergeBlocks(blocks, transactions)

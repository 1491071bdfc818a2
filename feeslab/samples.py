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

from importlib import resources

import numpy as np
import pandas as pd

from feeslab._eip4844 import GAS_PER_BLOB
from feeslab.analysis.blobs import blob_base_fee
from feeslab.chainspec import ChainSpec
from feeslab.frames import blocks_frame, uncles_frame

__all__ = [
    "BLOB_MARKET_ATTRIBUTION",
    "LONDON_BLOCK",
    "attack_gas_2016",
    "blob_market",
    "frontier_blocks",
    "frontier_uncles",
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


def blob_market() -> pd.DataFrame:
    """The blob fields of every mainnet block from Cancun's first to 15 February 2026.

    5,039,067 consecutive blocks, 19,426,587 .. 24,465,653 (2024-03-13 .. 2026-02-15 UTC),
    across five blob forks: Cancun, Prague, Osaka, BPO1 and BPO2. Loads in about a second.

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
            (:func:`feeslab.analysis.blobs.blob_base_fee`): the source has no fee.
        ``fork`` (category, in activation order)
            The blob fork in force at the block's timestamp: ``cancun``, ``prague``,
            ``osaka``, ``bpo1``, ``bpo2`` (forks switch by time, EIP-7892).

        ``attrs``: ``chain_id`` 1, ``chain_spec`` ``"mainnet"`` (so the analysis functions
        take the mainnet blob schedule from the frame), ``source`` ``"Chainscore/score-da"``,
        ``reference``, ``licence`` ``"CC BY 4.0"`` and ``attribution``
        (:data:`BLOB_MARKET_ATTRIBUTION`: credit it where the data is shown).

    Notes
    -----
    The source has no execution base fee, so EIP-7918's reserve price (from Osaka) cannot be
    recomputed; each block's excess follows from its parent's by one of the rule's two
    branches, which ``tests/test_samples_blobs.py`` checks for every block.

    References
    ----------
    .. [1] Chainscore/score-da @ cea6c637, ``protocol/Ethereum/data/blocks/<date>.csv``
       (rows from the public BigQuery table ``crypto_ethereum.blocks``), CC BY 4.0.
    .. [2] EIP-4844 (``fake_exponential``, ``GAS_PER_BLOB``); EIP-7691, EIP-7892, EIP-7918.
    """
    stored = _read("blob_market.parquet")
    spec = ChainSpec.from_chain(1)
    rules = spec.blob_schedule
    seconds = stored["timestamp"].to_numpy(dtype=np.int64)
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
            fee[start:stop] = blob_base_fee(excess[start:stop], rule.update_fraction)
    present = np.zeros(len(count), dtype=bool)  # no row lacks a value: the mask of IntegerArray
    frame = pd.DataFrame({
        "block_number": stored["block_number"].to_numpy(dtype=np.int64),
        "timestamp": pd.to_datetime(seconds, unit="s", utc=True).as_unit("ns"),
        "blob_count": count,
        "blob_gas_used": pd.arrays.IntegerArray(count * GAS_PER_BLOB, present),
        "excess_blob_gas": pd.arrays.IntegerArray(excess, present),
        "blob_base_fee_wei": fee,
        "fork": pd.Categorical.from_codes(fork, categories=[rule.fork for rule in rules]),
    }, copy=False)  # fmt: skip
    frame.attrs.update({
        "chain_id": 1, "chain_spec": spec.label, "source": "Chainscore/score-da",
        "reference": "Chainscore/score-da @ cea6c637, protocol/Ethereum/data/blocks/",
        "licence": "CC BY 4.0", "attribution": BLOB_MARKET_ATTRIBUTION,
    })  # fmt: skip
    return frame

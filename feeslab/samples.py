"""Real Ethereum mainnet samples shipped with feeslab: no network, no credits.

Each loader returns a typed frame with ``attrs`` saying ``chain_id`` (1), ``source`` and
``reference``; ``data/SOURCES.md`` gives each file's repository, path, commit, licence and the
checks run when it was copied.

========================  =========================================================================
``uncle_counts_2021()``   uncles per block, blocks 12,710,000 .. 13,509,999 (around London)
``attack_gas_2016()``     the 2016 denial-of-service attack's blocks: gas, attack gas, uncles
``frontier_blocks()``     mainnet blocks 0 .. 8,191 (July 2015), from the first era1 file
``frontier_uncles()``     the 1,410 uncles those blocks include
========================  =========================================================================

References
----------
.. [1] Y. Liu, Y. Lu, K. Nayak, F. Zhang, L. Zhang, Y. Zhao, "Empirical Analysis of EIP-1559:
   Transaction Fees, Waiting Time, and Consensus Security", ACM CCS 2022, arXiv:2201.05574.
.. [2] V. Buterin, ethereum/research, ``uncle_regressions/`` (2016).
.. [3] The era1 history archive, ``mainnet-00000-5ec1ffb8.era1`` (via paradigmxyz/reth).
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

from feeslab.frames import blocks_frame, uncles_frame

__all__ = [
    "LONDON_BLOCK",
    "attack_gas_2016",
    "frontier_blocks",
    "frontier_uncles",
    "uncle_counts_2021",
]

LONDON_BLOCK = 12_965_000  # EIP-1559's activation on mainnet


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

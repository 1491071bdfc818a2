"""Uncles (ommers) as frames, and per-block uncle counts for uncle rates.

Pure functions. :func:`uncles_frame` builds the uncles frame from columns, whatever the
source: :func:`parse_uncles` turns what ``eth_getUncleByBlockNumberAndIndex`` /
``eth_getUncleByBlockHashAndIndex`` return, paired with the including block's number, into
columns, and the era1 reader (:mod:`feeslab.sources.era1`) the uncle headers it decodes.

References
----------
.. [1] Ethereum execution APIs, ``eth_getUncleByBlockNumberAndIndex``,
   https://github.com/ethereum/execution-apis
.. [2] Ethereum Yellow Paper, section 11.1 "Ommer Validation": an ommer's parent is an
   ancestor at most 7 generations back, so its number is 1..6 below the including block's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from feeslab.frames.blocks import (
    _as_list,
    _given,
    _header_columns,
    _hex_int64,
    _int64,
    _quantity,
    _typed_frame,
)

__all__ = [
    "UNCLE_DTYPES",
    "UNCLE_SCAN_DTYPES",
    "parse_uncles",
    "uncle_scan_frame",
    "uncles_frame",
]

#: Columns and dtypes of :func:`parse_uncles`' frame, in order.
UNCLE_DTYPES: dict[str, str] = {
    "block_number": "int64",
    "uncle_index": "int64",
    "uncle_number": "int64",
    "depth": "int64",
    "hash": "str",
    "miner": "str",
    "difficulty": "object",
    "gas_limit": "int64",
    "gas_used": "int64",
    "timestamp": "datetime64[ns, UTC]",
    "base_fee_wei": "Int64",
}

#: Columns and dtypes of :func:`uncle_scan_frame`'s frame, in order.
UNCLE_SCAN_DTYPES: dict[str, str] = {"block_number": "int64", "uncle_count": "int64"}


def uncles_frame(columns: Mapping[str, object] | pd.DataFrame) -> pd.DataFrame:
    """The uncles frame (:func:`parse_uncles`' columns and dtypes) from its columns.

    The one place the frame is made, whatever the source: :func:`parse_uncles` gives it a
    node's answers as columns, ``feeslab.sources.era1`` the fields of the uncle headers it
    decodes, ``feeslab.samples`` a shipped file's columns.

    Parameters
    ----------
    columns : mapping of str to array-like, or DataFrame
        One array or list per column of :data:`UNCLE_DTYPES` but ``depth``, which is
        computed (``block_number - uncle_number``); all of one length. ``timestamp`` as Unix
        seconds (or datetimes); ``difficulty`` as integers, kept exact; ``base_fee_wei`` as
        integers with None (or ``<NA>``) where absent.

    Returns
    -------
    pandas.DataFrame
        :func:`parse_uncles`' frame (:data:`UNCLE_DTYPES`): a row per uncle in the order
        given, no ``attrs``.

    Raises
    ------
    ValueError
        As :func:`~feeslab.frames.blocks_frame` does (a missing or foreign column, unequal
        lengths).
    """
    given = _given(UNCLE_DTYPES, columns, ("depth",), "uncles_frame")
    given["depth"] = np.asarray(given["block_number"], dtype=np.int64) - np.asarray(
        given["uncle_number"], dtype=np.int64)  # fmt: skip
    return _typed_frame(UNCLE_DTYPES, given)


def parse_uncles(rows: Iterable[tuple[object, object, Mapping[str, object]]]) -> pd.DataFrame:
    """Uncle headers, one row per uncle, with the block that included them.

    Parameters
    ----------
    rows : iterable of (block_number, index, uncle)
        ``block_number``: the *including* block's number (int or 0x quantity, as in the
        request); ``index``: the uncle's index in that block (int or 0x quantity);
        ``uncle``: the decoded result of ``eth_getUncleByBlock*AndIndex``. A null uncle
        (no uncle at that index) raises ``ValueError``.

    Returns
    -------
    pandas.DataFrame
        One row per uncle, in the order given, RangeIndex, columns (dtype):

        ``block_number`` (int64)
            The including block.
        ``uncle_index`` (int64)
            Position in the including block's ``uncles`` list.
        ``uncle_number`` (int64)
            The uncle's own block number.
        ``depth`` (int64) [blocks]
            ``block_number - uncle_number``; 1..6 on Ethereum mainnet. A depth below 1
            raises ``ValueError`` (the row names the wrong including block).
        ``hash``, ``miner`` (str)
            0x hex, as the node sent them.
        ``difficulty`` (object: Python int)
            Exact.
        ``gas_limit``, ``gas_used`` (int64) [gas]
        ``timestamp`` (datetime64[ns, UTC])
        ``base_fee_wei`` (Int64, nullable) [wei]
            The uncle's ``baseFeePerGas``; ``<NA>`` before London.

        ``totalDifficulty`` is left out: geth sends null for uncles, Alchemy omits it, Besu
        sends a value. An empty input gives an empty frame with these dtypes
        (``UNCLE_DTYPES``).

    References
    ----------
    .. [1] Ethereum execution APIs, ``eth_getUncleByBlockNumberAndIndex``.
    .. [2] Ethereum Yellow Paper, section 11.1 "Ommer Validation".
    """
    triples = _as_list(rows, "rows")
    try:
        including, indexes, uncles = zip(*triples, strict=True) if triples else ((), (), ())
    except (TypeError, ValueError):
        bad = next(
            (i for i, r in enumerate(triples) if not isinstance(r, tuple | list) or len(r) != 3),
            0,
        )
        raise ValueError(
            f"rows[{bad}] must be a (block_number, index, uncle) triple, got {triples[bad]!r:.80}"
        ) from None
    if any(u is None for u in uncles):
        i = uncles.index(None)
        raise ValueError(
            f"rows[{i}]: block {including[i]} has no uncle at index {indexes[i]} (null result)"
        )
    what = "uncles"
    block_number = _int64(
        [_quantity(b, f"rows[{i}] block_number") for i, b in enumerate(including)],
        "block_number",
        "rows",
    )
    uncle_index = _int64(
        [_quantity(x, f"rows[{i}] index") for i, x in enumerate(indexes)], "index", "rows"
    )
    uncle_number = _hex_int64(uncles, "number", what)
    depth = block_number - uncle_number
    if (depth < 1).any():
        i = int(np.flatnonzero(depth < 1)[0])
        raise ValueError(
            f"rows[{i}]: uncle number {uncle_number[i]} is not below the including block "
            f"{block_number[i]}; pass the including block's number"
        )
    return uncles_frame({
        "block_number": block_number,
        "uncle_index": uncle_index,
        "uncle_number": uncle_number,
        **_header_columns(uncles, what),
    })  # fmt: skip


def uncle_scan_frame(
    scanned_blocks: Iterable[int] | pd.DataFrame, uncles_frame: pd.DataFrame
) -> pd.DataFrame:
    """Uncles per scanned block, zeros included, so that rates count blocks without uncles.

    Parameters
    ----------
    scanned_blocks : array-like of int, or DataFrame with a ``block_number`` column
        Every block whose uncles were looked for (e.g. :func:`parse_blocks`' frame, or a
        ``range``). Duplicates count once.
    uncles_frame : pandas.DataFrame
        :func:`parse_uncles`' frame for those blocks (``block_number`` and ``uncle_index``
        columns are used).

    Returns
    -------
    pandas.DataFrame
        One row per scanned block, sorted by ``block_number`` (int64), with ``uncle_count``
        (int64): the uncles included in that block (0 when none). The uncle rate of the scan
        is ``uncle_count.mean()`` [uncles per block].

    Raises
    ------
    ValueError
        When an uncle's including block was not scanned (its rate would have no denominator),
        or the same (block_number, uncle_index) appears twice (overlapping fetches would be
        counted twice).

    References
    ----------
    .. [1] Ethereum Yellow Paper, section 11.1 "Ommer Validation" (at most 2 ommers per block).
    """
    if isinstance(scanned_blocks, pd.DataFrame):
        if "block_number" not in scanned_blocks:
            raise ValueError("scanned_blocks: a DataFrame must have a block_number column")
        scanned_blocks = scanned_blocks["block_number"]
    if isinstance(scanned_blocks, pd.Series | pd.Index | np.ndarray):
        scanned = np.asarray(scanned_blocks)
    else:
        try:
            scanned = np.array(list(scanned_blocks))
        except TypeError:
            raise TypeError(
                "scanned_blocks must be block numbers or a frame with block_number"
            ) from None
    if scanned.size and not np.issubdtype(scanned.dtype, np.integer):
        raise TypeError(f"scanned_blocks must be integers, got dtype {scanned.dtype}")
    blocks = scanned.astype(np.int64)
    if blocks.size > 1 and not (blocks[1:] > blocks[:-1]).all():  # a range needs no sorting
        blocks = np.unique(blocks)
    if not isinstance(uncles_frame, pd.DataFrame) or not {"block_number", "uncle_index"} <= set(
        uncles_frame.columns
    ):
        raise TypeError("uncles_frame must be parse_uncles' frame (block_number, uncle_index)")
    including = uncles_frame["block_number"].to_numpy(dtype=np.int64)
    duplicated = uncles_frame.duplicated(["block_number", "uncle_index"])
    if duplicated.any():
        i = int(np.flatnonzero(duplicated.to_numpy())[0])
        raise ValueError(
            f"uncles_frame lists block {including[i]} uncle index "
            f"{uncles_frame['uncle_index'].iloc[i]} twice"
        )
    unscanned = ~np.isin(including, blocks)
    if unscanned.any():
        first = int(np.sort(including[unscanned])[0])
        raise ValueError(f"uncles_frame has uncles of block {first}, not in scanned_blocks")
    position = np.searchsorted(blocks, including)
    counts = np.bincount(position, minlength=len(blocks)).astype(np.int64)
    return pd.DataFrame({"block_number": blocks, "uncle_count": counts})

"""Frames: pure parse functions from decoded node / Gas API JSON to pandas DataFrames.

The fetch layer (:mod:`feeslab.fetch`) does the I/O and hands its decoded JSON here. Each
frame a source other than a node also gives is made by one builder from its columns
(:func:`blocks_frame`, :func:`uncles_frame`, :func:`fee_history_frame`): the parse functions
turn JSON into columns and call it, as the era1 reader (:mod:`feeslab.sources.era1`) does with
the fields it decodes, so the frames agree column for column whatever their source.
Conventions, shared by every frame:

* ``block_number`` is int64; timestamps are ``datetime64[ns, UTC]``;
* snake_case columns, with the unit as a suffix where it is ambiguous (``base_fee_wei``,
  ``base_fee_gwei``, ``gas_used_ratio``);
* amounts are exact: base fees and tips as int64 (a value beyond 2**63 - 1 wei raises), and
  values that may exceed int64 (difficulty, total difficulty, storage words) as Python ints
  in ``object`` columns;
* an empty input gives an empty frame with the documented dtypes (the ``*_DTYPES`` dicts);
* ``attrs`` say what a frame came from: ``chain_id``, ``chain_spec`` (the label of a
  :class:`feeslab.protocol.chainspec.ChainSpec`) and ``source``. The parse functions here are pure
  and leave them empty; whoever fetched the answers sets them
  (:func:`feeslab.protocol.chainspec.with_chain`, as every ``Lab`` method does).

References
----------
.. [1] Ethereum execution APIs, https://github.com/ethereum/execution-apis
.. [2] EIP-1559: Fee market change for ETH 1.0 chain, https://eips.ethereum.org/EIPS/eip-1559
"""

from feeslab.frames.base_fees import (
    BASE_FEE_DTYPES,
    FEE_HISTORY_DTYPES,
    fee_history_frame,
    parse_base_fee_history,
    parse_fee_history,
    reward_column,
    stitch_base_fee_snapshots,
)
from feeslab.frames.blocks import (
    BLOCK_DTYPES,
    blocks_frame,
    blocks_frame_from_rows,
    gas_used_ratio,
    parse_blocks,
    slim_block,
)
from feeslab.frames.calls import (
    CALL_SERIES_BASE_DTYPES,
    COST_DTYPES,
    FunctionSpec,
    call_object,
    decode_output,
    encode_call,
    error_text,
    function_spec,
    parse_call_series,
    parse_cost_estimates,
    transaction_cost,
)
from feeslab.frames.storage import STORAGE_DTYPES, decode_series, parse_storage_series
from feeslab.frames.uncles import (
    UNCLE_DTYPES,
    UNCLE_SCAN_DTYPES,
    parse_uncles,
    uncle_scan_frame,
    uncles_frame,
)
from feeslab.frames.watch import WATCH_DTYPES, WatchRing, parse_heads, watch_dtypes

__all__ = [
    "BASE_FEE_DTYPES",
    "BLOCK_DTYPES",
    "CALL_SERIES_BASE_DTYPES",
    "COST_DTYPES",
    "FEE_HISTORY_DTYPES",
    "STORAGE_DTYPES",
    "UNCLE_DTYPES",
    "UNCLE_SCAN_DTYPES",
    "WATCH_DTYPES",
    "FunctionSpec",
    "WatchRing",
    "blocks_frame",
    "blocks_frame_from_rows",
    "call_object",
    "decode_output",
    "decode_series",
    "encode_call",
    "error_text",
    "fee_history_frame",
    "function_spec",
    "gas_used_ratio",
    "parse_base_fee_history",
    "parse_blocks",
    "parse_call_series",
    "parse_cost_estimates",
    "parse_fee_history",
    "parse_heads",
    "parse_storage_series",
    "parse_uncles",
    "reward_column",
    "slim_block",
    "stitch_base_fee_snapshots",
    "transaction_cost",
    "uncle_scan_frame",
    "uncles_frame",
    "watch_dtypes",
]

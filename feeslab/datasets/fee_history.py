"""Fee history: base fees, gas used ratios and tip percentiles per block (``eth_feeHistory``).

One call answers up to 1,024 blocks for 80 credits, so months of fee history cost little.
The engine (``feeslab.engine``) cuts the range into chunks of :data:`GROUP` calls counted from
its stop down (each call ends at its newest block, so a range's calls are the same however it
is cut), :data:`AHEAD` chunks in flight; each settled chunk's frame is kept as Parquet, per
set of percentiles, so a rerun reads frames back without decoding an answer.
See ``feeslab.frames.parse_fee_history`` for the columns (blob columns included).

References
----------
.. [1] Ethereum execution APIs, ``eth_feeHistory``, https://github.com/ethereum/execution-apis
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from feeslab.datasets.registry import START, STOP, Dataset, Option, Partitioning, percentiles_arg
from feeslab.engine import Chunk, Chunked, check_range, fetcher, planner
from feeslab.engine.chunks import Params
from feeslab.fetch.node import quantity
from feeslab.fetch.transport import RpcCall, RpcResult
from feeslab.frames import parse_fee_history

__all__ = ["CHUNKS", "DATASETS", "MAX_BLOCKS", "calls", "get", "plan"]

MAX_BLOCKS = 1024  # blocks per eth_feeHistory call (geth's and Infura's limit)
PERCENTILES = (10, 50, 90)
GROUP = 8  # calls a chunk: 8,192 blocks
AHEAD = 16  # chunks in flight: a long fee history's calls all go out at once, as they did


def calls(start: int, stop: int, percentiles: Sequence[float] = PERCENTILES) -> list[RpcCall]:
    """The calls covering ``start`` .. ``stop - 1``, oldest first, each ending at its newest
    block and reaching back at most :data:`MAX_BLOCKS`."""
    newest = range(stop - 1, start - 1, -MAX_BLOCKS)
    return [
        RpcCall("eth_feeHistory",
                [quantity(min(MAX_BLOCKS, n - start + 1)), quantity(n), list(percentiles)])
        for n in reversed(newest)
    ]


def _extract(chunk: Chunk, params: Params) -> list[RpcCall]:
    return calls(chunk.start, chunk.stop, params["percentiles"])


def _transform(answers: list[RpcResult], chunk: Chunk, params: Params) -> pd.DataFrame:
    # each answer ends with the base fee of the block after its newest: dropped
    parts = [parse_fee_history(a.unwrap(), percentiles=params["percentiles"]).iloc[:-1]
             for a in answers]  # fmt: skip
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


def _store(params: Params) -> str:
    """The cache's name for the rows of one set of percentiles."""
    return "fee_history/v2/" + ",".join(f"{q:g}" for q in params["percentiles"])


CHUNKS = Chunked("fee_history", _extract, _transform,
                 lambda params: parse_fee_history(
                     {"oldestBlock": "0x0", "baseFeePerGas": [], "gasUsedRatio": []},
                     percentiles=params["percentiles"]),
                 size=GROUP * MAX_BLOCKS, ahead=AHEAD, store=_store, from_stop=True,
                 bar_from=1_000_000)  # a call answers 1,024 blocks: shorter ones take seconds


def fee_history(start: int, stop: int, *, percentiles: Sequence[float] = PERCENTILES) -> None:
    """Base fees, gas used ratios and tip percentiles of blocks ``start`` .. ``stop - 1``.

    Parameters
    ----------
    start, stop : int
        The blocks, as ``range(start, stop)``.
    percentiles : sequence of float
        Tip percentiles, rising, each a ``reward_p<q>_wei`` column.

    Returns
    -------
    pandas.DataFrame
        See ``feeslab.frames.parse_fee_history``.
    """
    check_range(start, stop)


get = fetcher(fee_history, CHUNKS)
plan = planner(fee_history, CHUNKS)


DATASETS = (
    Dataset("fee_history", get, plan=plan, cli="fee-history", options=(
        START, STOP,
        Option(("--percentiles",), "percentiles", "tip percentiles (default 10,50,90)",
               type=percentiles_arg, default=PERCENTILES),
    ), summary="base fees, gas used and tip percentiles of --start .. --stop - 1 "
               "(eth_feeHistory, 1,024 blocks a call)",
            # whole calls: the partitions send the very calls one process sends
            partitions=Partitioning("range", align=MAX_BLOCKS),
            # reward percentiles read each block's receipts, which history expiry drops
            bodies=lambda params: bool(params.get("percentiles", PERCENTILES))),
)

"""Transactions: every transaction of a range of blocks, with what its receipt says it paid.

Two calls a block, ``eth_getBlockByNumber(n, true)`` (the transactions) and
``eth_getBlockReceipts(n)`` (gas used, effective gas price), 80 credits each. Whole blocks are
large (a mainnet block's transactions and receipts run to hundreds of KB), so the range is
fetched :data:`GROUP` blocks a chunk, :data:`AHEAD` chunks in flight, each answer slimmed to
the fee fields as it arrives and each chunk turned into rows at once (the engine,
``feeslab.engine``, runs the chunks, keeps settled ones' rows and reads them back).
See ``feeslab.frames.parse_transactions`` for the columns.

References
----------
.. [1] Ethereum execution APIs, ``eth_getBlockReceipts``, https://github.com/ethereum/execution-apis
"""

from __future__ import annotations

import pandas as pd

from feeslab.datasets.registry import BY_RANGE, START, STOP, Dataset
from feeslab.engine import Chunked, MissingBlock, check_range, fetcher, planner
from feeslab.engine.chunks import Chunk, Params
from feeslab.fetch.node import quantity
from feeslab.fetch.transport import RpcCall, RpcResult
from feeslab.frames.transactions import parse_transactions, slim_full_block, slim_receipts

__all__ = ["AHEAD", "CHUNKS", "DATASETS", "GROUP", "calls", "get", "plan"]

BLOCK_METHOD = "eth_getBlockByNumber"
RECEIPTS_METHOD = "eth_getBlockReceipts"
GROUP = 16  # blocks a request (32 calls): a few MB of answers at mainnet's sizes
AHEAD = 8  # requests in flight (the transport's connections kept busy)


def calls(start: int, stop: int) -> list[RpcCall]:
    """Each block's full block and receipts, block by block."""
    return [call for n in range(start, stop)
            for call in (RpcCall(BLOCK_METHOD, [quantity(n), True]),
                         RpcCall(RECEIPTS_METHOD, [quantity(n)]))]  # fmt: skip


def _slim(answer: RpcResult) -> RpcResult:
    """An answer reduced to the fee fields as it arrives."""
    if answer.error is not None or answer.result is None:
        return answer
    slim = slim_full_block if answer.call.method == BLOCK_METHOD else slim_receipts
    return RpcResult(answer.call, result=slim(answer.result))


def _extract(chunk: Chunk, params: Params) -> list[RpcCall]:
    return calls(chunk.start, chunk.stop)


def _transform(answers: list[RpcResult], chunk: Chunk, params: Params) -> pd.DataFrame:
    blocks, receipts = [], []
    for block, block_receipts in zip(answers[::2], answers[1::2], strict=True):
        found = block.unwrap()
        if found is None:
            raise MissingBlock(int(block.call.params[0], 16))
        blocks.append(found)
        receipts.append(block_receipts.unwrap() or [])
    return parse_transactions(blocks, receipts)


CHUNKS = Chunked("transactions", _extract, _transform, lambda params: parse_transactions([], []),
                 size=GROUP, ahead=AHEAD, store="transactions/v1", reduce=_slim)


def transactions(start: int, stop: int) -> None:
    """Every transaction of blocks ``start`` .. ``stop - 1``, one row each.

    Parameters
    ----------
    start, stop : int
        The blocks, as ``range(start, stop)``.

    Returns
    -------
    pandas.DataFrame
        See ``feeslab.frames.parse_transactions``; ``attrs`` say its chain.
    """
    check_range(start, stop)


get = fetcher(transactions, CHUNKS)
plan = planner(transactions, CHUNKS)


DATASETS = (
    Dataset("transactions", get, plan=plan, cli="transactions", options=(START, STOP),
            summary="every transaction of blocks --start .. --stop - 1, with its receipt's "
                    "gas used and effective gas price", partitions=BY_RANGE, bodies=True),
)

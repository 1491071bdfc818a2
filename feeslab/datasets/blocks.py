"""Block headers: ``eth_getBlockByNumber`` without transactions, one row per block.

See ``feeslab.frames.parse_blocks`` for the columns (blob columns included).

:func:`get` streams (``feeslab.engine``): the range is fetched a chunk of
:data:`~feeslab.fetch.node.DEFAULT_CHUNK` blocks at a time, each header slimmed to what the
frame reads as its batch arrives (``feeslab.frames.slim_block``, after the answer cache has it
whole) and each chunk turned into frame columns at once, so the decoded JSON of a long range
is never held together; the chunks' frames are joined at the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from feeslab.datasets.registry import BY_RANGE, START, STOP, Dataset
from feeslab.engine import Chunked, check_range, fetcher, planner
from feeslab.engine.chunks import Chunk, Params
from feeslab.fetch.node import DEFAULT_CHUNK, quantity
from feeslab.fetch.transport import RpcCall, RpcResult
from feeslab.frames import parse_blocks, slim_block

if TYPE_CHECKING:
    from feeslab.sources.rpc import RpcSource

__all__ = ["CHUNKS", "DATASETS", "calls", "get", "headers", "plan"]

METHOD = "eth_getBlockByNumber"


def calls(numbers: Sequence[int]) -> list[RpcCall]:
    """The calls for the headers of ``numbers``, in order."""
    return [RpcCall(METHOD, [quantity(n), False]) for n in numbers]


def headers(source: RpcSource, numbers: Sequence[int], **options: object) -> list[Any]:
    """The decoded headers of ``numbers`` from a node, in order (None where it has none).

    ``options`` go to ``NodeClient.run`` (``progress``, ``on_chunk``).
    """
    found: list[Any] = source.results(calls(numbers), description="blocks", **options)
    return found


def _slim(answer: RpcResult) -> RpcResult:
    """A header's answer reduced to what the frame reads, as it arrives."""
    if answer.error is not None or answer.result is None:
        return answer
    return RpcResult(answer.call, result=slim_block(answer.result))


def _extract(chunk: Chunk, params: Params) -> list[RpcCall]:
    return calls(chunk.blocks)


def _transform(answers: list[RpcResult], chunk: Chunk, params: Params) -> pd.DataFrame:
    found = [answer.unwrap() for answer in answers]  # blocks the node lacks left out
    return parse_blocks([header for header in found if header is not None])


# each header through the answer cache, kept whole; a chunk's frame made as its headers land
CHUNKS = Chunked("blocks", _extract, _transform, lambda params: parse_blocks([]),
                 size=DEFAULT_CHUNK, ahead=1, reduce=_slim, cached_answers=True,
                 unit="call", bar_from=DEFAULT_CHUNK // 2)


def blocks(start: int, stop: int) -> None:
    """Block headers of ``start`` .. ``stop - 1``.

    Parameters
    ----------
    start, stop : int
        The blocks, as ``range(start, stop)``.

    Returns
    -------
    pandas.DataFrame
        See ``feeslab.frames.parse_blocks``.
    """
    check_range(start, stop)


get = fetcher(blocks, CHUNKS)
plan = planner(blocks, CHUNKS)


DATASETS = (
    Dataset("blocks", get, plan=plan, summary="block headers of --start .. --stop - 1",
            cli="blocks", options=(START, STOP), partitions=BY_RANGE, bodies=True),
)

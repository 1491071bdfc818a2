"""A storage slot of a contract over blocks (``eth_getStorageAt``).

See ``feeslab.frames.parse_storage_series`` for the columns; decode with
``feeslab.frames.decode_series`` and compute slots with ``feeslab.slots``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from feeslab.datasets._checks import rpc
from feeslab.datasets.registry import (
    BY_SERIES,
    Dataset,
    Option,
    address_arg,
    block_arg,
    blocks_arg,
)
from feeslab.fetch.credits import Plan
from feeslab.fetch.node import quantity
from feeslab.fetch.transport import RpcCall, RpcResult
from feeslab.frames import parse_storage_series
from feeslab.slots import storage_word
from feeslab.sources.rpc import RpcSource

__all__ = ["DATASETS", "calls", "get", "plan", "word"]


def calls(address: str, slot: int, blocks: Sequence[int]) -> list[RpcCall]:
    """The calls for the word at ``slot`` of ``address`` after each of ``blocks``."""
    return [RpcCall("eth_getStorageAt", [address, quantity(slot), quantity(b)]) for b in blocks]


def _words(answers: Sequence[RpcResult]) -> list[int]:
    # storage_word accepts "0x" and short words (ganache)
    return [storage_word(r.unwrap(), f"eth_getStorageAt's answer at {r.call.params[2]}")
            for r in answers]


def plan(
    source: RpcSource, address: str, slot: int, blocks: Sequence[int], *, less_cached: bool = True
) -> Plan:
    """What :func:`get` costs, less the answers already in the cache (unless
    ``less_cached=False``: the cost from scratch, the same on every run, e.g. for a
    notebook's printed output) [credits]."""
    node = rpc(source, "a storage slot")
    batch = calls(address, slot, blocks)
    return node.plan(batch, f"storage slot over {len(batch):,} blocks", less_cached=less_cached)


def word(source: RpcSource, address: str, slot: int, block: int) -> int:
    """The 32-byte word at ``slot`` of ``address`` after ``block``, as an int."""
    node = rpc(source, "a storage slot")
    return _words(node.run(calls(address, slot, [block]), progress=False))[0]


def get(
    source: RpcSource,
    address: str,
    slot: int,
    blocks: Sequence[int],
    *,
    budget: int | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """The word at ``slot`` of ``address`` after each of ``blocks``.

    Parameters
    ----------
    source : RpcSource
        A node (archive files hold no state).
    address : str
        The contract [address].
    slot : int
        The slot (see ``feeslab.slots``).
    blocks : sequence of int
        The blocks after which to read it.
    budget : int, optional
        Refuse (``BudgetExceeded``) before sending if spending so far plus the calls the
        cache cannot answer would pass it [credits].

    Returns
    -------
    pandas.DataFrame
        See ``feeslab.frames.parse_storage_series``.
    """
    node = rpc(source, "a storage slot")
    blocks = list(blocks)
    with node.budgeted(plan(node, address, slot, blocks) if budget is not None else None,
                       budget):
        words = _words(node.run(calls(address, slot, blocks), description="storage",
                                progress=progress))
    answers = {b: "0x" + w.to_bytes(32, "big").hex() for b, w in zip(blocks, words, strict=True)}
    return node.tag(parse_storage_series(address, slot, answers))


DATASETS = (
    Dataset("storage", word, summary="the word at a slot of a contract after one block"),
    Dataset("storage_series", get, plan=plan, cli="storage", options=(
        Option(("--address",), "address", "the contract, 0x + 40 hex digits", required=True,
               type=address_arg),
        Option(("--slot",), "slot", "the slot, decimal or 0x hex (see feeslab.slots)",
               type=block_arg, required=True),
        Option(("--blocks",), "blocks", "blocks A .. B - 1 every STEP, as in range()",
               type=blocks_arg, required=True, metavar="A:B[:STEP]"),
    ), summary="one storage slot of a contract at a range of blocks", partitions=BY_SERIES),
)

"""Argument checks the datasets share (no I/O; a block range: ``feeslab.engine.check_range``)."""

from __future__ import annotations

import operator
from typing import SupportsIndex, cast

from feeslab._hexbytes import check_address
from feeslab.fetch.node import quantity
from feeslab.sources.base import JSON_RPC, Source, require
from feeslab.sources.rpc import RpcSource

BLOCK_TAGS = ("latest", "pending", "safe", "finalized", "earliest")


def address(value: object, name: str) -> str:
    """``value`` if it is 0x and 40 hex digits, else a ValueError naming ``name``."""
    return check_address(value, name)


def block_number(value: object) -> int:
    """A block number as an int (numpy ints accepted); bools, floats and negatives refused."""
    number = None
    if isinstance(value, SupportsIndex):
        try:
            number = operator.index(value)
        except TypeError:  # an __index__ that does not answer an int
            number = None
    if isinstance(value, bool) or number is None or number < 0:
        raise ValueError(f"a block must be a non-negative block number, not {value!r}")
    return number


def block_param(block: int | str) -> str:
    """A block number as a 0x quantity, or a tag as it is."""
    if isinstance(block, str):
        if block not in BLOCK_TAGS:
            raise ValueError(f"block must be a number or one of {BLOCK_TAGS}, not {block!r}")
        return block
    return quantity(block_number(block))


def rpc(source: Source, what: str) -> RpcSource:
    """``source`` if it offers a node's JSON-RPC, else ``SourceMismatch`` naming what it
    offers (era1 files hold no state, no Gas API and no EVM)."""
    require(source, [JSON_RPC], what)
    return cast(RpcSource, source)  # only the node service offers JSON_RPC

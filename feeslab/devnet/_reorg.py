"""Reorgs of the live head, one or two blocks deep now and then, as a real node shows them.

:class:`ReorgingChain` wraps a live :class:`~feeslab.devnet.chain.Chain` (one that grows,
``block_time``) and stands in for it everywhere (``start(reorgs=...)``): it answers ``block``,
``number_of`` and ``head`` with the canonical chain after the reorgs so far, and delegates
everything else to the chain it wraps. The chain itself (``chain.py``) is not changed.

When the head reaches block ``m`` and ``m`` is drawn to reorganise with depth ``d`` (1 or 2),
blocks ``m - d .. m - 1`` are replaced by other versions, and ``m`` and every later block
build on them: their ``parentHash`` names the new blocks, so their hashes change too, as on a
real chain. A replaced block is the same block re-sealed: its ``mixHash`` (``prevRandao``
after the merge: another proposer's) differs, its transactions, gas and fees are the
original's. The fee columns of ``eth_feeHistory`` are therefore the same on either branch;
what tells the branches apart is the hash, as for a client it is.

:attr:`ReorgingChain.events` lists the reorgs in order, ``(m, d)``; the ``newHeads``
subscriptions (``subscriptions.HeadSubscriptions``) read it and announce the new chain's
blocks from ``m - d`` on again, as geth and Infura do ("in case of a chain reorganization the
subscription emits all new headers of the new chain"; several headers may come for one
height).

Only blocks grown live (above the chain's starting height) are ever replaced: the history up
to the height is the seeded one, byte for byte.

References
----------
.. [1] go-ethereum, ``eth/filters``: the ``newHeads`` subscription and chain reorganisations,
   https://geth.ethereum.org/docs/interacting-with-geth/rpc/pubsub
.. [2] Infura, ``eth_subscribe`` ``newHeads``,
   https://docs.metamask.io/services/reference/ethereum/json-rpc-methods/subscription-methods/eth_subscribe/
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import replace
from typing import Any

from eth_hash.auto import keccak

__all__ = ["ReorgingChain", "reorg_depth"]

FIRST_REORG_OFFSET = 3
"""Blocks grown live before the first reorg may happen [blocks]: a watch started as the devnet
starts sees a few plain blocks first."""


def reorg_depth(seed: int, chain_id: int, number: int, rate: float) -> int:
    """How deep the chain reorganises when its head reaches ``number``: 0 (no reorg), 1 or 2.

    A pure function of its arguments (blake2b of them), so the same seed gives the same reorgs.
    ``rate`` is the chance of a reorg at each block [0, 1]; a reorg is two blocks deep one
    time in three.
    """
    digest = hashlib.blake2b(f"reorg:{seed}:{chain_id}:{number}".encode(), digest_size=8)
    draw = int.from_bytes(digest.digest(), "big") / 2**64  # uniform in [0, 1)
    if draw >= rate:
        return 0
    return 2 if draw < rate / 3 else 1


class ReorgingChain:
    """A live chain whose head reorganises now and then (see the module's notes).

    Parameters
    ----------
    chain : Chain
        A live chain (``block_time`` set).
    seed : int
        Draws the reorgs (:func:`reorg_depth`).
    rate : float
        The chance of a reorg as each block becomes the head, in (0, 1].
    """

    def __init__(self, chain: Any, seed: int, rate: float) -> None:
        if chain.block_time is None:
            raise ValueError("reorgs need a chain that grows: pass block_time too")
        if not 0 < rate <= 1:
            raise ValueError(f"reorgs must be a chance per block in (0, 1], not {rate!r}")
        self._chain = chain
        self._seed = seed
        self.rate = rate
        self._base = chain.height  # blocks up to here are never replaced
        self._checked = self._base  # heads whose reorgs are applied
        self._version: dict[int, int] = {}  # number -> times replaced
        self._blocks: dict[int, Any] = {}  # live blocks as they are now canonical
        self._numbers: dict[bytes, int] = {}  # their hashes -> number
        self._lock = threading.RLock()
        self.events: list[tuple[int, int]] = []  # (head reached, depth), in order

    def __getattr__(self, name: str) -> Any:
        return getattr(self._chain, name)  # every other column and method: the chain's

    def __repr__(self) -> str:
        return f"<ReorgingChain {self._chain!r} rate={self.rate:g}, {len(self.events)} reorgs>"

    def head(self) -> int:
        """Number of the current head block (reorgs due by now applied)."""
        head: int = self._chain.head()
        if head > self._checked:
            with self._lock:
                self._advance(head)
        return head

    def _advance(self, head: int) -> None:
        for m in range(self._checked + 1, head + 1):
            depth = 0
            if m > self._base + FIRST_REORG_OFFSET:
                depth = reorg_depth(self._seed, self._chain.chain_id, m, self.rate)
            if depth:
                for k in range(m - depth, m):
                    self._version[k] = self._version.get(k, 0) + 1
                stale = [k for k in self._blocks if k >= m - depth]
                for k in stale:  # the old branch is no longer canonical
                    self._numbers.pop(self._blocks.pop(k).hash, None)
                self.events.append((m, depth))
        self._checked = head

    def block(self, number: int) -> Any:
        """Canonical block ``number`` after the reorgs so far, or None outside ``0..head``."""
        head = self.head()
        if number < 0 or number > head:
            return None
        if number <= self._base:
            return self._chain.block(number)
        with self._lock:
            start = number
            while start - 1 > self._base and start - 1 not in self._blocks:
                start -= 1  # build upwards from the newest block already built
            for k in range(start, number + 1):
                if k not in self._blocks:
                    self._blocks[k] = made = self._make(k)
                    self._numbers[made.hash] = k
            return self._blocks[number]

    def _make(self, number: int) -> Any:
        original = self._chain.block(number)
        parent = self._blocks[number - 1].hash if number - 1 > self._base else None
        version = self._version.get(number, 0)
        header = original.header
        if version == 0 and (parent is None or parent == header.parent_hash):
            return original
        changes: dict[str, Any] = {}
        if parent is not None:
            changes["parent_hash"] = parent
        if version:  # re-sealed: another prevRandao, so another hash
            changes["mix_hash"] = keccak(header.mix_hash + b"reorg" + version.to_bytes(4, "big"))
        new_header = replace(header, **changes)
        return replace(original, header=new_header, hash=new_header.hash)

    def number_of(self, block_hash: bytes) -> int | None:
        """Number of the canonical block with this hash (an orphaned block's: None)."""
        head = self.head()
        with self._lock:
            number = self._numbers.get(block_hash)
        if number is not None:
            return number if number <= head else None
        number = self._chain.number_of(block_hash)
        if number is None or number <= self._base:
            return number
        block = self.block(number)  # a live block: canonical only if not replaced since
        return number if block is not None and block.hash == block_hash else None

    def pending(self) -> Any:
        """The block that will follow the current head (on the current branch)."""
        head = self.head()
        pending = self._chain.history.block(head + 1)
        parent = self.block(head)
        header = replace(pending.header, parent_hash=parent.hash)
        return replace(pending, header=header, hash=header.hash)

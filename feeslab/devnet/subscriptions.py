"""``eth_subscribe("newHeads")`` on one chain for one connection: its ids and the heads due.

Shared by the node WebSocket (``app._WsSession``) and the wallet (``wallet.WalletConnection``),
which wrap the same events differently (``eth_subscription``, or ``wallet_notify`` around it).

A subscription announces every block after the head it was created at, in order, once: a
follower calls :meth:`HeadSubscriptions.due` every :func:`poll_interval` seconds and sends what
it returns. A subscription only becomes due once :meth:`~HeadSubscriptions.activate` is called,
after its ``eth_subscribe`` answer went out, so no event can overtake that answer.

On a chain that reorganises (``feeslab.devnet._reorg.ReorgingChain``, whose ``events`` list
the reorgs) a subscription announces the new chain's blocks again from the first replaced one,
as geth and Infura do: one height may then be announced more than once, each time with the
hash of the block canonical when it was sent.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from feeslab.devnet.errors import INVALID_PARAMS, RpcError


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


MAX_SUBSCRIPTIONS_PER_CONNECTION = 1_000
"""Subscriptions one connection may hold at once (node WebSocket, or a wallet connection over
all its chains). geth sets no such cap (its handler keeps every subscription until the
connection ends); other nodes do (pathfinder 1,024, monad-bft 100): without one, a single
connection grows the server's work and memory without bound."""

LIMIT_EXCEEDED = -32005  # EIP-1474 "Limit exceeded"


def check_room(held: int) -> None:
    """Raise -32005 when a connection holding ``held`` subscriptions asks for another."""
    if held >= MAX_SUBSCRIPTIONS_PER_CONNECTION:
        raise RpcError(
            LIMIT_EXCEEDED,
            "too many subscriptions on this connection "
            f"(limit {MAX_SUBSCRIPTIONS_PER_CONNECTION}); unsubscribe some first",
        )


def poll_interval(block_time: float | None) -> float:
    """Seconds between two looks at the head [s]: a quarter block, at most 0.25 s.

    A chain that does not grow (``block_time`` None) is looked at once a second.
    """
    return 1.0 if not block_time else min(block_time / 4, 0.25)


def _reorgs(chain: Any) -> list[tuple[int, int]]:
    """The reorgs of ``chain`` so far, ``(head reached, depth)`` (none for a plain chain)."""
    return list(getattr(chain, "events", ()))


@dataclass
class _Subscription:
    id: str
    last: int  # last head announced (or the head when subscribing)
    active: bool = False  # set once the eth_subscribe answer went out, so events come after it
    reorgs: int = 0  # the chain's reorgs already taken into account


class HeadSubscriptions:
    """The ``newHeads`` subscriptions of one connection on one chain.

    Parameters
    ----------
    chain : Chain
        ``head()`` and ``block(number)``.
    format_head : callable
        ``format_head(block) -> dict``, the event's ``result``.
    prefix : str
        Makes the subscription ids of this connection (and scope) unique in the process.
    elsewhere : callable, optional
        How many subscriptions the same connection holds on other chains: the cap
        (:data:`MAX_SUBSCRIPTIONS_PER_CONNECTION`) counts them all.
    """

    def __init__(
        self,
        chain: Any,
        format_head: Callable[[Any], dict],
        prefix: str,
        elsewhere: Callable[[], int] = lambda: 0,
    ) -> None:
        self.elsewhere = elsewhere  # the connection's subscriptions on other chains
        self.chain = chain
        self.format_head = format_head
        self.prefix = prefix
        self._counter = itertools.count(1)
        self._subs: dict[str, _Subscription] = {}
        self._lock = threading.Lock()  # calls run on worker threads

    def __len__(self) -> int:
        return len(self._subs)

    def subscribe(self, params: Any) -> str:
        """``eth_subscribe`` params -> a new subscription id (geth's errors for the rest)."""
        if not isinstance(params, list) or not params or not isinstance(params[0], str):
            raise RpcError(INVALID_PARAMS, "missing subscription kind")
        kind = params[0]
        if kind != "newHeads":
            raise RpcError(INVALID_PARAMS, f"unsupported subscription kind {_clip(kind)!r}")
        check_room(len(self._subs) + self.elsewhere())
        n = next(self._counter)
        digest = hashlib.blake2b(f"{self.prefix}:{n}".encode(), digest_size=16).hexdigest()
        head = self.chain.head()
        sub = _Subscription(id="0x" + digest, last=head, reorgs=len(_reorgs(self.chain)))
        with self._lock:
            self._subs[sub.id] = sub
        return sub.id

    def unsubscribe(self, params: Any) -> bool:
        """``eth_unsubscribe`` params -> whether that subscription existed."""
        if not isinstance(params, list) or not params or not isinstance(params[0], str):
            raise RpcError(INVALID_PARAMS, "missing subscription id")
        with self._lock:
            return self._subs.pop(params[0], None) is not None

    def clear(self) -> None:
        """End every subscription."""
        with self._lock:
            self._subs.clear()

    def activate(self) -> None:
        """Make every subscription due: call once their ``eth_subscribe`` answers went out."""
        with self._lock:
            for sub in self._subs.values():
                sub.active = True

    @property
    def active(self) -> bool:
        """Whether some subscription may have events due."""
        with self._lock:
            return any(sub.active for sub in self._subs.values())

    def due(self, charge: Callable[[], bool]) -> tuple[list[tuple[str, dict]], bool]:
        """The events due now, oldest block first per subscription; marks them announced.

        Parameters
        ----------
        charge : callable
            Called once per event before it is counted; False means the balance cannot pay:
            no further event is produced.

        Returns
        -------
        events : list of (subscription id, header)
        exhausted : bool
            True when ``charge`` refused an event.
        """
        head = self.chain.head()
        reorgs = _reorgs(self.chain)
        with self._lock:
            for sub in self._subs.values():  # announce a reorged branch again from its fork
                for reached, depth in reorgs[sub.reorgs:]:  # blocks reached-depth.. replaced
                    sub.last = min(sub.last, reached - depth - 1)
                sub.reorgs = len(reorgs)
            subs = [s for s in self._subs.values() if s.active and s.last < head]
        headers: dict[int, dict | None] = {}
        events: list[tuple[str, dict]] = []
        for sub in subs:
            for number in range(sub.last + 1, head + 1):
                if number not in headers:
                    block = self.chain.block(number)
                    headers[number] = None if block is None else self.format_head(block)
                header = headers[number]
                if header is not None and not charge():
                    return events, True
                sub.last = number
                if header is not None:
                    events.append((sub.id, header))
        return events, False

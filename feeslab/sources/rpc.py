"""The JSON-RPC service (or any node) as a source of frames.

:class:`RpcSource` binds the node client (``feeslab.fetch.node.NodeClient``: cache, ledger,
chunks), the Gas API client when there is one, and what every frame's ``attrs`` say: the
chain, its :class:`~feeslab.chainspec.ChainSpec` and the source's label. The datasets
(``feeslab.datasets``) build the calls and parse the answers; this module knows nothing about
any one dataset.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import pandas as pd

from feeslab.chainspec import ChainSpec, with_chain
from feeslab.errors import ConfigError
from feeslab.fetch.cache import MISSING
from feeslab.fetch.credits import Budget, CreditLedger, Plan
from feeslab.fetch.node import NodeClient
from feeslab.fetch.transport import RpcCall, RpcResult
from feeslab.frames.io import frame_from_bytes, frame_to_bytes
from feeslab.sources.base import GAS_API, JSON_RPC

__all__ = ["DEVNET_CLIENT", "RpcSource"]

DEVNET_CLIENT = "feeslab-devnet/"  # how a devnet's web3_clientVersion begins


class RpcSource:
    """A node reached over JSON-RPC, with the Gas API of its service when it has one.

    Parameters
    ----------
    node : NodeClient
        The node client (its ledger counts every credit).
    gas : GasClient, optional
        The Gas API client (the service and devnets; not ``connect(rpc_url=)``).
    devnet : bool
        True for the embedded devnet (known without asking); otherwise a node that says it
        is a feeslab devnet (``web3_clientVersion``, asked once) is labelled one too.
    any_node : bool
        True for ``connect(rpc_url=)``: another node, not the service.
    """

    def __init__(
        self, node: NodeClient, *, gas: Any = None, devnet: bool = False, any_node: bool = False
    ) -> None:
        self.node = node
        self.gas = gas
        self.any_node = any_node
        self._devnet: bool | None = True if devnet else None  # asked once, then kept
        self._chain_id: int | None = None
        self._spec: tuple[ChainSpec | None] | None = None

    def __repr__(self) -> str:
        return f"<RpcSource {self.node!r}>"

    def offers(self) -> frozenset[str]:
        """JSON-RPC, and the Gas API where the service has one (``feeslab.sources.base``)."""
        return frozenset({JSON_RPC, GAS_API} if self.gas is not None else {JSON_RPC})

    @property
    def credits(self) -> CreditLedger:
        """The ledger of every credit spent (and every call answered from the cache)."""
        return self.node.ledger

    # -- what the frames' attrs say -----------------------------------------------------------

    @property
    def is_devnet(self) -> bool:
        """Whether the node is a feeslab devnet (its client version says so; asked once)."""
        if self._devnet is None:
            version = str(self.node.request("web3_clientVersion", []))
            self._devnet = version.startswith(DEVNET_CLIENT)
        return self._devnet

    @property
    def label(self) -> str:
        """``"devnet"``, ``"node"`` (``connect(rpc_url=)``) or ``"service"``."""
        if self.is_devnet:
            return "devnet"
        return "node" if self.any_node else "service"

    def chain_id(self) -> int:
        """The node's chain id: from the cache's identity when known, else ``eth_chainId``
        alone (without the cache the genesis block the identity needs is not asked for)."""
        if self.node._identity is not None:
            return self.node.chain_id
        if self._chain_id is None:
            self._chain_id = int(self.node.request("eth_chainId", []), 16)
        return self._chain_id

    def spec_of(self, chain_id: int) -> ChainSpec | None:
        """The spec of ``chain_id`` at this source's heights (None for an unknown chain)."""
        if chain_id not in ChainSpec.known():
            return None
        return ChainSpec.from_chain(chain_id, heights="devnet" if self.is_devnet else "protocol")

    @property
    def chain_spec(self) -> ChainSpec | None:
        """The spec of the node's chain (asked once, then kept)."""
        if self._spec is None:
            self._spec = (self.spec_of(self.chain_id()),)
        return self._spec[0]

    def tag(self, frame: pd.DataFrame, chain_id: int | None = None) -> pd.DataFrame:
        """``frame`` with ``attrs`` saying its chain (default the node's), spec and source."""
        own = self.chain_id()
        spec = self.chain_spec if chain_id in (None, own) else self.spec_of(chain_id)
        return with_chain(frame, chain_id=chain_id or own, spec=spec, source=self.label)

    # -- calls, heads and plans ---------------------------------------------------------------

    def prepare(self) -> None:
        """Ask, in one round trip, what a fetch needs first and is not known yet: the head,
        the cache's identity, whether the node is a devnet and (without a cache) the chain id.
        """
        extra: list[RpcCall] = []
        ask_version = self._devnet is None
        if ask_version:
            extra.append(RpcCall("web3_clientVersion", []))
        node = self.node
        ask_chain = not node.caching and self._chain_id is None and node._identity is None
        if ask_chain:
            extra.append(RpcCall("eth_chainId", []))
        answers = node.prepare(extra)
        if ask_version:
            self._devnet = str(answers.pop(0).unwrap()).startswith(DEVNET_CLIENT)
        if ask_chain:
            self._chain_id = int(answers.pop(0).unwrap(), 16)

    def cached_frames(self, dataset: str, keys: Sequence[str]) -> list[pd.DataFrame | None]:
        """The frames kept for ``dataset``'s ``keys`` (``keep_frames``), None where none is."""
        if not keys or not self.node.caching:
            return [None] * len(keys)
        found = self.node.cache.get_chunks(dataset, keys)  # type: ignore[union-attr]
        return [None if data is MISSING else frame_from_bytes(data) for data in found]

    def keep_frames(self, dataset: str, items: Sequence[tuple[str, pd.DataFrame, int]]) -> None:
        """Keep ``(key, frame, newest block)`` chunks of ``dataset`` whose blocks are settled,
        as Parquet (``Cache.put_chunks``); nothing without a cache."""
        cache = self.node.cache if self.node.caching else None
        if cache is None:
            return
        settled = self.node.settled_below()
        kept = [(key, frame_to_bytes(frame), block) for key, frame, block in items
                if block < settled]
        if kept:
            cache.put_chunks(dataset, kept, settled_below=settled)

    def run(self, calls: Sequence[RpcCall], **options: Any) -> list[RpcResult]:
        """Answer ``calls`` in order, through the cache (``NodeClient.run``)."""
        return self.node.run(calls, **options)

    def results(self, calls: Sequence[RpcCall], **options: Any) -> list[Any]:
        """The results of ``calls`` in order; the first error raised."""
        return [answer.unwrap() for answer in self.node.run(calls, **options)]

    def head(self, *, refresh: bool = False) -> int:
        """The latest block number (asked once, then remembered unless ``refresh``)."""
        return self.node.head(refresh=refresh)

    def check_head(self, stop: int) -> None:
        """Refuse a range past the head before any block of it is fetched."""
        head = self.node.head()
        if stop - 1 > head:  # the head may have grown since it was last asked
            head = self.node.head(refresh=True)
        if stop - 1 > head:
            raise ValueError(
                f"stop ({stop:,}) is past the chain's head ({head:,}): the last block that "
                f"exists is {head:,}, so stop can be at most {head + 1:,}"
            )

    def missing(self, number: int) -> ConfigError:
        """The error for a block the node does not have."""
        return ConfigError(f"the node has no block {number:,} (head {self.head(refresh=True):,})")

    def plan(self, calls: Sequence[RpcCall], title: str, *, less_cached: bool = True) -> Plan:
        """A plan for ``calls``, less those the cache already answers (if ``less_cached``)."""
        counts: dict[str, int] = {}
        for call in calls:
            counts[call.method] = counts.get(call.method, 0) + 1
        plan = Plan(list(counts.items()), title=title)
        cache = self.node.cache if calls and less_cached else None
        if cache is None:
            return plan
        return plan.minus_cached(cache.count_cached((c.method, c.params) for c in calls))

    @contextlib.contextmanager
    def budgeted(self, plan: Plan | Budget | None, budget: int | None = None) -> Iterator[None]:
        """Refuse ``plan`` (``BudgetExceeded``) if spending so far plus it passes ``budget``;
        then, inside, charge every request sent against the budget before it goes, so a
        fetch whose plan was an estimate still stops before passing it. ``plan`` may be a
        ``Budget`` already checked (``budget`` then unused). Nothing happens without one."""
        if isinstance(plan, Budget):
            cap: Budget | None = plan
        elif budget is None:
            cap = None
        else:
            cap = Budget(budget)
            cap.check(plan, self.credits)
        with self.node.charging(cap):
            yield

    def close(self) -> None:
        """Close the cache, the transport and the Gas API client."""
        self.node.close()
        self.node.transport.close()
        if self.gas is not None:
            self.gas.close()

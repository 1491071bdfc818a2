"""How to reach one node: :class:`NodeSpec`, frozen and picklable (``connect()`` makes one from
its options, ``feeslab.sources.rpc.open_node`` opens it, a cluster's driver hands one to its
workers: ``RpcSource.worker_spec``)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from feeslab.fetch.transport import DEFAULT_MAX_BATCH, DEFAULT_MAX_CONCURRENCY

__all__ = ["NodeSpec"]


@dataclass(frozen=True, repr=False)
class NodeSpec:
    """Everything :func:`open_node` needs to reach one node: frozen and picklable (a cluster's
    driver sends it to its workers). The URL and the credentials hold the key: its repr shows
    neither.

    Parameters
    ----------
    url : str
        The node's endpoint (``http(s)://``, or ``ws(s)://`` for one WebSocket).
    max_batch, max_concurrency : int
        Calls per request, and requests in flight (default the transport's).
    credits_per_second : float, optional
        The pace [credits/s], already resolved (``feeslab.fetch.credits.pacing_rate``); None:
        unpaced.
    devnet_root : str, optional
        A devnet's root whose plan's rate is asked (with the key and secret) while the first
        requests go, and then followed (``CreditGovernor.follow``).
    api_key, api_key_secret : str, optional
        The Gas API's credentials (and the devnet's, to ask its rate).
    gas_url : str, optional
        The Gas API's root; None: no Gas API client.
    cache : bool or path
        The node client's answer cache (``NodeClient``'s ``cache``).
    progress : bool
        Progress bars on long fetches.
    priced : bool
        Whether the node charges credits (False for ``connect(rpc_url=)``: calls counted only).
    devnet : bool, optional
        Whether the node is a feeslab devnet, when known; None: asked once.
    any_node : bool
        Another node (``connect(rpc_url=)``), not the service.
    identity_suffix : str, optional
        Appended to the cache's identity (the embedded devnet's simulation digest).
    chain_id, head : int, optional
        What the caller knows already (a cluster's driver): answered without asking.
    history_cutoff : int, optional
        The first block whose body the node serves, when known (``RpcSource``).
    genesis_hash : str, optional
        The chain's genesis hash (``0x`` hex), when known: the answer cache's identity is
        then not asked of the node, which a node with expired history (EIP-4444) refuses
        (it answers the genesis block's body with 4444).
    """

    url: str
    max_batch: int = DEFAULT_MAX_BATCH
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    credits_per_second: float | None = None
    devnet_root: str | None = None
    api_key: str | None = None
    api_key_secret: str | None = None
    gas_url: str | None = None
    cache: bool | str | os.PathLike[str] = False
    progress: bool = False
    priced: bool = True
    devnet: bool | None = None
    any_node: bool = False
    identity_suffix: str | None = None
    chain_id: int | None = None
    head: int | None = None
    history_cutoff: int | None = None
    genesis_hash: str | None = None

    def __repr__(self) -> str:
        scheme, _, rest = self.url.partition("//")
        host = rest.partition("/")[0].partition("?")[0].rpartition("@")[2]  # no user:password
        chain = "" if self.chain_id is None else f" chain {self.chain_id}"
        return f"<NodeSpec {scheme}//{host}{chain}>"

    @property
    def websocket(self) -> bool:
        """Whether the node is reached over one WebSocket."""
        return self.url.startswith(("ws://", "wss://"))

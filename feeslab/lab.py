"""``Lab``: the one object a notebook holds: the datasets bound to one connection.

``feeslab.connect()`` (:mod:`feeslab.connection`) makes it. Each frame method delegates to its
dataset (``feeslab.datasets``: a plan, a fetch and a parse per dataset) with this Lab's
source: the service, a devnet or any node over JSON-RPC (``feeslab.sources.rpc``), or era1
archive files (``feeslab.sources.era1``). A Lab also gives the node client (``lab.node``),
the Gas API client (``lab.gas``), the credits ledger (``lab.credits``), the storage (IPFS)
client (``lab.ipfs``, with ``publish_frame``/``load_frame`` to share frames by CID) and the
multichain wallet client (``lab.wallet``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from feeslab.chainspec import ChainSpec
from feeslab.datasets import base_fees, blocks, calls, fee_history, gas, storage, uncles
from feeslab.datasets._checks import is_archive
from feeslab.datasets.uncles import SAMPLE as UNCLE_SAMPLE
from feeslab.datasets.uncles import UncleScan
from feeslab.errors import ConfigError, redact
from feeslab.fetch.credits import CreditLedger, Plan
from feeslab.frames.calls import ZERO_ADDRESS
from feeslab.frames.io import frame_from_bytes, frame_to_bytes

if TYPE_CHECKING:
    from feeslab.fetch.ipfs import IpfsClient
    from feeslab.fetch.wallet import WalletClient
    from feeslab.fetch.ws import Subscription

__all__ = ["Lab", "UncleScan"]

Abi = Sequence[Mapping[str, Any]]


class Lab:
    """A connection to one chain of the service (real or devnet), any node, or era1 files,
    with frames on top. Use :func:`feeslab.connect` to make one.

    Attributes
    ----------
    data_source : RpcSource or Era1Source
        Where the frames come from (what the ``feeslab.datasets`` functions take).
    credits : CreditLedger
        Every credit spent, and every call the cache answered.
    network : str
        The service's network name (``"mainnet"``, ``"sepolia"``, ...).
    """

    def __init__(self, source: Any, *, credits: CreditLedger, ipfs: IpfsClient | None = None,
                 wallet_url: str | None = None, devnet: Any = None, owns_devnet: bool = False,
                 network: str = "mainnet", rpc_url: str | None = None,
                 reconnect: Callable[[str], Lab] | None = None) -> None:
        self.data_source = source
        self.credits = credits
        self.ipfs = ipfs
        self.wallet_url = wallet_url
        self.devnet = devnet  # the devnet this Lab is on, when it knows one
        self._owns_devnet = owns_devnet  # started by this Lab: stopped when it closes
        self.network = network
        self.rpc_url = rpc_url  # any node's URL (connect(rpc_url=)); None on the service
        self._reconnect = reconnect  # connect() again on another network (on_network)
        self._wallet: Any = None

    @property
    def era1(self) -> Any:
        """The era1 files this Lab reads (``feeslab.sources.era1.Era1Source``), or None."""
        return self.data_source if is_archive(self.data_source) else None

    @property
    def node(self) -> Any:
        """The node client (``feeslab.fetch.node.NodeClient``); era1 files have none."""
        if self.era1 is not None:
            from feeslab.sources.era1 import NoNode

            return NoNode(self.era1)
        return self.data_source.node

    @property
    def gas(self) -> Any:
        """The Gas API client, or None (era1 files, ``connect(rpc_url=)``)."""
        return None if self.era1 is not None else self.data_source.gas

    def __repr__(self) -> str:
        if self.era1 is not None:
            return f"<Lab on era1 files ({len(self.era1.files)}), no node>"
        if self.rpc_url is not None:  # any node: no network name, no credits
            known = self.node._identity  # shown only when already asked: a repr sends nothing
            chain = f"chain {known.split('-', 1)[0]}" if known else "a node"
            return f"<Lab {chain} at {redact(self.rpc_url)}, {self.credits.calls:,} calls>"
        where = "devnet" if self.devnet is not None else "service"
        return f"<Lab {self.network} on the {where}, {self.credits.spent:,} credits spent>"

    def close(self) -> None:
        """Close connections and the cache; stop the embedded devnet if this Lab started it."""
        self.data_source.close()
        for client in (self.ipfs, self._wallet):
            if client is not None:
                client.close()
        if self._owns_devnet:
            self.devnet.stop()

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def on_network(self, name: str) -> Lab:
        """A Lab on network ``name`` of the same service: same key, plan and options (on a
        devnet, another of its chains, e.g. ``"sepolia"``). Close it when done; closing it
        leaves this Lab's devnet running."""
        if self._reconnect is None:
            raise ConfigError("on_network() needs the service or a devnet: era1 files and "
                              "connect(rpc_url=) reach one chain")
        return self._reconnect(name)

    @property
    def wallet(self) -> WalletClient:
        """The multichain wallet client (CAIP-25 sessions; ``feeslab.fetch.wallet``), connected
        on first use: on a devnet its emulated wallet (``WS /wallet``); the real service has
        none (the API is MetaMask's extension), so a Lab there needs ``connect(wallet_url=)``.
        """
        if self._wallet is None:
            if self.wallet_url is None:
                raise ConfigError(
                    "this Lab has no wallet: the multichain wallet API (CAIP-25) is served by "
                    "MetaMask's desktop extension, not by the node service. Use the devnet "
                    "(feeslab.connect() without a key, or url= of a running devnet), or pass "
                    "connect(wallet_url='ws://.../wallet') for a wallet you can reach"
                )
            from feeslab.fetch.wallet import WalletClient

            self._wallet = WalletClient(url=self.wallet_url)
        return self._wallet

    def subscribe(self, kind: str = "newHeads", *params: Any) -> Subscription:
        """``eth_subscribe(kind, *params)`` on this Lab's WebSocket (``connect(websocket=True)``):
        iterate the result for the notifications; close it when done. On the embedded devnet
        new heads come when it grows, ``connect(block_time=...)``."""
        from feeslab.fetch.ws import WebSocketTransport

        if not isinstance(getattr(self.node, "transport", None), WebSocketTransport):
            raise ConfigError("subscriptions need a WebSocket: connect(..., websocket=True)")
        return self.node.transport.subscribe(kind, *params)

    # -- what the frames' attrs say ------------------------------------------------------------

    @property
    def chain_spec(self) -> ChainSpec | None:
        """The rules this Lab's chain follows (``feeslab.chainspec.ChainSpec``), which every
        frame it returns carries in ``attrs``: the devnet's compressed heights on a feeslab
        devnet, the real chain's elsewhere; None for a chain ``data/chains.json`` does not
        describe (e.g. a local node's chain 1337)."""
        return self.data_source.chain_spec

    @property
    def source(self) -> str:
        """Where this Lab's frames come from, in every frame's ``attrs``: ``"devnet"``,
        ``"node"`` (``connect(rpc_url=)``), ``"service"`` or ``"era1"``."""
        return self.data_source.label

    # -- shared frames (IPFS) ------------------------------------------------------------------

    def _storage(self) -> IpfsClient:
        if self.ipfs is None:
            raise ConfigError(
                "this Lab has no storage (IPFS) API: it needs the service or a devnet with the "
                "API key and its secret (connect(rpc_url=) has none)"
            )
        return self.ipfs

    def publish_frame(self, frame: pd.DataFrame, format: str = "parquet", **options: Any) -> str:
        """Share a frame as a Parquet (or CSV) file, pinned (``feeslab.frames.io``); returns
        its CID, which anyone can load the same frame by. ``options``: ``name``, ``pin``,
        ``cid_version`` (``feeslab.fetch.ipfs.IpfsClient.publish``)."""
        options.setdefault("name", f"frame.{format}")
        return self._storage().publish(frame_to_bytes(frame, format), **options)

    def load_frame(self, cid: str) -> pd.DataFrame:
        """The frame published under ``cid``; ``CidMismatchError`` unless its bytes give ``cid``."""
        return frame_from_bytes(self._storage().load(cid))

    # -- datasets (each documented in its module of feeslab.datasets) ----------------------------

    def base_fee_history(self, chain_id: int | None = None) -> pd.DataFrame:
        """The Gas API's last 500 base fees, exact, placed at block numbers
        (:func:`feeslab.datasets.base_fees.get`)."""
        return base_fees.get(self.data_source, chain_id)

    def plan_base_fee_history(self) -> Plan:
        """What :meth:`base_fee_history` costs: the Gas API call, the head and two headers."""
        return base_fees.plan(self.data_source)

    def fee_history(self, start: int, stop: int, *, percentiles: Sequence[float] = (10, 50, 90),
                    budget: int | None = None, progress: bool | None = None, client: Any = None,
                    out: Any = None, keys: Sequence[Lab] = ()) -> pd.DataFrame:
        """Base fees, gas used ratios and tip percentiles of blocks ``start`` .. ``stop - 1``
        (:func:`feeslab.datasets.fee_history.get`: ``eth_feeHistory``, 1,024 blocks a call).
        With ``client``, ``out`` and ``keys``: in partitions on a dask cluster, as
        :meth:`uncles` (:func:`feeslab.cluster.fee_history`: the same frame)."""
        if client is not None:
            from feeslab import cluster  # dask only when asked for

            return cluster.fee_history(self.data_source, start, stop, client=client,
                                       percentiles=percentiles, out=out, budget=budget,
                                       progress=progress, keys=keys).frame  # fmt: skip
        return fee_history.get(self.data_source, start, stop, percentiles=percentiles,
                               budget=budget, progress=progress)

    def plan_fee_history(self, start: int, stop: int) -> Plan:
        """What :meth:`fee_history` of ``start`` .. ``stop - 1`` costs (a call per 1,024 blocks)."""
        return fee_history.plan(self.data_source, start, stop)

    def blocks(self, start: int, stop: int, *, budget: int | None = None,
               progress: bool | None = None, client: Any = None, out: Any = None,
               keys: Sequence[Lab] = ()) -> pd.DataFrame:
        """Block headers of ``start`` .. ``stop - 1`` (:func:`feeslab.datasets.blocks.get`).
        With ``client``, ``out`` and ``keys``: in partitions on a dask cluster, as
        :meth:`uncles` (:func:`feeslab.cluster.blocks`: the same frame)."""
        if client is not None:
            from feeslab import cluster  # dask only when asked for

            return cluster.blocks(self.data_source, start, stop, client=client, out=out,
                                  budget=budget, progress=progress, keys=keys).frame
        return blocks.get(self.data_source, start, stop, budget=budget, progress=progress)

    def plan_blocks(self, start: int, stop: int) -> Plan:
        """What :meth:`blocks` costs: a header per block."""
        return blocks.plan(self.data_source, start, stop)

    def uncles(self, start: int, stop: int, *, budget: int | None = None,
               progress: bool | None = None, client: Any = None, out: Any = None,
               keys: Sequence[Lab] = ()) -> UncleScan:
        """Every uncle included by blocks ``start`` .. ``stop - 1``
        (:func:`feeslab.datasets.uncles.get`): ``.uncles``, ``.blocks`` and ``.plan``.
        With ``client`` (a ``distributed.Client``) in partitions on its cluster, written to
        ``out``, paced with ``keys`` (Labs with other API keys) too
        (:func:`feeslab.cluster.uncles`: the same frames, and ``.report``)."""
        if client is not None:
            from feeslab.cluster import uncles as on_cluster  # dask only when asked for

            return on_cluster(self.data_source, start, stop, client=client, out=out,
                              budget=budget, progress=progress, keys=keys)
        return uncles.get(self.data_source, start, stop, budget=budget, progress=progress)

    def plan_uncles(self, start: int, stop: int, *, sample: int = UNCLE_SAMPLE,
                    budget: int | None = None, less_cached: bool = True) -> Plan:
        """What :meth:`uncles` will cost, estimated from ``sample`` uncle counts (cached for the
        scan; ``less_cached=False``: from scratch; :func:`feeslab.datasets.uncles.plan`)."""
        return uncles.plan(self.data_source, start, stop, sample=sample, budget=budget,
                           less_cached=less_cached)

    def storage(self, address: str, slot: int, block: int) -> int:
        """The 32-byte word at ``slot`` of ``address`` after ``block``, as an int."""
        return storage.word(self.data_source, address, slot, block)

    def storage_series(self, address: str, slot: int, blocks: Sequence[int], *,
                       budget: int | None = None, progress: bool | None = None,
                       client: Any = None, out: Any = None,
                       keys: Sequence[Lab] = ()) -> pd.DataFrame:
        """The word at ``slot`` of ``address`` after each of ``blocks``
        (:func:`feeslab.datasets.storage.get`). With ``client``, ``out`` and ``keys``: in
        partitions on a dask cluster, as :meth:`uncles` (:func:`feeslab.cluster.storage_series`:
        the same frame; its workers read no answer cache)."""
        if client is not None:
            from feeslab import cluster  # dask only when asked for

            return cluster.storage_series(self.data_source, address, slot, blocks,
                                          client=client, out=out, budget=budget,
                                          progress=progress, keys=keys).frame  # fmt: skip
        return storage.get(self.data_source, address, slot, blocks, budget=budget,
                           progress=progress)

    def plan_storage_series(self, address: str, slot: int, blocks: Sequence[int], *,
                            less_cached: bool = True) -> Plan:
        """What :meth:`storage_series` costs, less the answers already cached (unless
        ``less_cached=False``: the cost from scratch, the same on every run)."""
        return storage.plan(self.data_source, address, slot, blocks, less_cached=less_cached)

    def call(self, to: str, function: str | Mapping[str, Any], args: Sequence[Any] = (), *,
             block: int | str = "latest", sender: str = ZERO_ADDRESS,
             returns: Sequence[str] | None = None, abi: Abi | None = None) -> Any:
        """``eth_call`` of one function at one block, decoded
        (:func:`feeslab.datasets.calls.call`); a revert raises ``RevertError``."""
        return calls.call(self.data_source, to, function, args, block=block, sender=sender,
                          returns=returns, abi=abi)

    def call_series(self, to: str, function: str | Mapping[str, Any], args: Sequence[Any],
                    blocks: Sequence[int], *, sender: str = ZERO_ADDRESS,
                    returns: Sequence[str] | None = None, abi: Abi | None = None,
                    budget: int | None = None, progress: bool | None = None,
                    client: Any = None, out: Any = None,
                    keys: Sequence[Lab] = ()) -> pd.DataFrame:
        """``eth_call`` of one function at each of ``blocks``, decoded, a revert in its row's
        ``error`` (:func:`feeslab.datasets.calls.get`). With ``client``, ``out`` and
        ``keys``: in partitions on a dask cluster, as :meth:`uncles`
        (:func:`feeslab.cluster.call_series`: the same frame; its workers read no answer
        cache)."""
        if client is not None:
            from feeslab import cluster  # dask only when asked for

            return cluster.call_series(self.data_source, to, function, args, blocks,
                                       client=client, sender=sender, returns=returns, abi=abi,
                                       out=out, budget=budget, progress=progress,
                                       keys=keys).frame  # fmt: skip
        return calls.get(self.data_source, to, function, args, blocks, sender=sender,
                         returns=returns, abi=abi, budget=budget, progress=progress)

    def estimate_costs(self, transactions: Sequence[Mapping[str, Any]], *,
                       block: int | str = "latest", priority_fee_wei: int = 0,
                       abi: Abi | None = None, budget: int | None = None,
                       progress: bool | None = None) -> pd.DataFrame:
        """``eth_estimateGas`` of each transaction and its cost at the block's base fee
        (:func:`feeslab.datasets.gas.get`)."""
        return gas.get(self.data_source, transactions, block=block, abi=abi, budget=budget,
                       priority_fee_wei=priority_fee_wei, progress=progress)

    def gas_needed(self, transactions: Sequence[Mapping[str, Any]], *,
                   block: int | str = "latest", abi: Abi | None = None,
                   budget: int | None = None, progress: bool | None = None) -> pd.DataFrame:
        """The least gas each transaction succeeds with, found exactly, beside its estimate
        (:func:`feeslab.datasets.gas.needed`)."""
        return gas.needed(self.data_source, transactions, block=block, abi=abi, budget=budget,
                          progress=progress)

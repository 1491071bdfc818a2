"""``Lab``: the one object a notebook holds: the datasets bound to one connection.

``feeslab.connect()`` (:mod:`feeslab.connection`) makes it. It has a method per dataset of
``feeslab.datasets.REGISTRY`` (``lab.blocks(start, stop)``, ...) and ``plan_<name>`` for
those that cost credits, made from the dataset's declaration (its Lab-facing signature and
docstring), run on this Lab's source (the service, a devnet or any node over JSON-RPC,
``feeslab.sources.rpc``, or era1 archive files, ``feeslab.sources.era1``), in one process or,
with ``client=``, in partitions on a dask cluster (``feeslab.cluster``). The methods are
written out by ``python -m feeslab._gen_lab`` into ``feeslab._lab_datasets``, which ``Lab``
inherits, so that type checkers and editors know them; a dataset registered at run time is
reached as ``lab.fetch(name, ...)`` or, untyped, ``lab.<name>(...)``. A Lab also gives
``lab.node``, ``lab.gas`` (the Gas API), ``lab.credits``, ``lab.ipfs`` (``publish_frame``,
``load_frame``: frames shared by CID), ``lab.wallet`` and ``lab.watch`` (the head live).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Unpack

import pandas as pd

from feeslab._lab_datasets import LabDatasets
from feeslab.datasets import REGISTRY, registry
from feeslab.datasets.uncles import UncleScan
from feeslab.errors import ConfigError, redact
from feeslab.fetch.credits import CreditLedger, Plan
from feeslab.frames.io import frame_from_bytes, frame_to_bytes
from feeslab.protocol.chainspec import ChainSpec
from feeslab.sources.base import JSON_RPC, Source

if TYPE_CHECKING:
    from feeslab.devnet.server import DevnetHandle
    from feeslab.fetch.gas import GasClient
    from feeslab.fetch.ipfs import IpfsClient
    from feeslab.fetch.node import NodeClient
    from feeslab.fetch.wallet import WalletClient
    from feeslab.fetch.ws import Subscription
    from feeslab.watch import Watch, WatchOptions

__all__ = ["Lab", "UncleScan"]


class Lab(LabDatasets):
    """One chain of the service (real or devnet), any node, or era1 files, with frames on
    top: :func:`feeslab.connect` makes one.

    Attributes
    ----------
    data_source : RpcSource or Era1Source
        Where the frames come from (what the ``feeslab.datasets`` functions take).
    credits : CreditLedger
        Every credit spent, and every call the cache answered.
    network : str
        The service's network name (``"mainnet"``, ``"sepolia"``, ...).
    """

    def __init__(self, source: Source, *, credits: CreditLedger, ipfs: IpfsClient | None = None,
                 wallet_url: str | None = None, devnet: DevnetHandle | None = None,
                 owns_devnet: bool = False, network: str = "mainnet", rpc_url: str | None = None,
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
        self._wallet: WalletClient | None = None

    @property
    def has_node(self) -> bool:
        """Whether this Lab reaches a node's JSON-RPC (era1 files do not)."""
        return JSON_RPC in self.data_source.offers()

    @property
    def node(self) -> NodeClient:
        """The node client (``NodeClient``); ``ConfigError`` without one (era1 files)."""
        if not self.has_node:
            raise ConfigError(f"this Lab reads {self.data_source!r}, which has no node: "
                              "connect() without era1= for one")  # fmt: skip
        node: NodeClient = self.data_source.node  # type: ignore[attr-defined]
        return node

    @property
    def gas(self) -> GasClient | None:
        """The Gas API client, or None (era1 files, ``connect(rpc_url=)``)."""
        return self.data_source.gas

    def __repr__(self) -> str:
        if not self.has_node:
            return f"<Lab on {self.data_source!r}, no node>"
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
        if self._owns_devnet and self.devnet is not None:
            self.devnet.stop()

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def on_network(self, name: str) -> Lab:
        """A Lab on network ``name`` of the same service (or devnet): same key, plan and
        options. Close it when done; that leaves this Lab's devnet running."""
        if self._reconnect is None:
            raise ConfigError("on_network() needs the service or a devnet: era1 files and "
                              "connect(rpc_url=) reach one chain")
        return self._reconnect(name)

    @property
    def wallet(self) -> WalletClient:
        """The multichain wallet client (CAIP-25 sessions; ``feeslab.fetch.wallet``), connected
        on first use: on a devnet its emulated wallet (``WS /wallet``); the real service has
        none (the API is MetaMask's extension), so a Lab there needs ``connect(wallet_url=)``."""
        if self._wallet is None:
            if self.wallet_url is None:
                raise ConfigError("this Lab has no wallet: the multichain wallet API (CAIP-25) is "
                                  "served by MetaMask's desktop extension, not the node service. "
                                  "Use the devnet (feeslab.connect() without a key, or url= of a "
                                  "running devnet), or pass connect(wallet_url='ws://.../wallet')")
            from feeslab.fetch.wallet import WalletClient

            self._wallet = WalletClient(url=self.wallet_url)
        return self._wallet

    def subscribe(self, kind: str = "newHeads", *params: object) -> Subscription:
        """``eth_subscribe(kind, *params)`` on this Lab's WebSocket (``connect(websocket=True)``):
        iterate it for the notifications; close it when done."""
        from feeslab.fetch.ws import WebSocketTransport

        transport = self.node.transport
        if not isinstance(transport, WebSocketTransport):
            raise ConfigError("subscriptions need a WebSocket: connect(..., websocket=True)")
        return transport.subscribe(kind, *params)

    def watch(self, **options: Unpack[WatchOptions]) -> Watch:
        """The chain's head live (:func:`feeslab.watch.watch`, whose options it takes): a
        rolling frame of the last blocks and, in JupyterLab, a figure redrawn every block."""
        from feeslab.watch import watch

        return watch(self, **options)

    # -- what the frames' attrs say ------------------------------------------------------------

    @property
    def chain_spec(self) -> ChainSpec | None:
        """The rules this Lab's chain follows (``ChainSpec``, in every frame's ``attrs``): the
        devnet's compressed heights on a devnet; None for a chain chains.json lacks."""
        return self.data_source.chain_spec

    @property
    def source(self) -> str:
        """Where the frames come from (``attrs``): devnet, node, service or era1."""
        return str(self.data_source.label)

    # -- shared frames (IPFS) ------------------------------------------------------------------

    def _storage(self) -> IpfsClient:
        if self.ipfs is None:
            raise ConfigError("this Lab has no storage (IPFS) API: it needs the service or a "
                              "devnet with the API key and its secret (connect(rpc_url=) has none)")
        return self.ipfs

    def publish_frame(self, frame: pd.DataFrame, format: str = "parquet", *,
                      name: str | None = None, pin: bool = True, cid_version: int = 0) -> str:
        """Share a frame as a Parquet (or CSV) file, pinned (``feeslab.frames.io``): its CID,
        which anyone can load the same frame by (``IpfsClient.publish``'s options)."""
        return self._storage().publish(frame_to_bytes(frame, format), pin=pin,
                                       name=name or f"frame.{format}", cid_version=cid_version)

    def load_frame(self, cid: str) -> pd.DataFrame:
        """The frame published under ``cid``; ``CidMismatchError`` unless its bytes give ``cid``."""
        return frame_from_bytes(self._storage().load(cid))

    # -- datasets: a method each, generated from REGISTRY (LabDatasets) ---------------------

    def fetch(self, name: str, *args: object, client: object = None,
              out: str | os.PathLike[str] | None = None, keys: Sequence[Lab] = (),
              **kwargs: object) -> object:
        """Dataset ``name`` (``feeslab.datasets.REGISTRY``) with its arguments: what
        ``lab.<name>(...)`` does. With ``client`` (a ``distributed.Client``): in partitions on
        its cluster, written to ``out``, paced with ``keys`` (Labs with other API keys) too
        (:func:`feeslab.cluster.run`: the same result)."""
        dataset = REGISTRY[name]
        params = dataset.bind(*args, **kwargs)
        if client is None and out is None and not keys:
            return registry.get(dataset, self.data_source, params)
        if dataset.partitions is None or client is None:
            raise ConfigError(f"{name} runs in one process: client=, out= and keys= are for "
                              "datasets with partitions on a dask cluster")  # fmt: skip
        from feeslab import cluster  # dask only when asked for

        return cluster.run(dataset, self.data_source, client=client, out=out, keys=keys,
                           planned=None, **params).value  # fmt: skip

    def plan(self, name: str, *args: object, **kwargs: object) -> Plan:
        """What dataset ``name`` with these arguments costs, before anything is sent: what
        ``lab.plan_<name>(...)`` does."""
        dataset = REGISTRY[name]
        signature = dataset.plan_signature()
        if signature is None:
            raise ConfigError(f"{name} has no plan")
        params = dict(signature.bind(*args, **kwargs).arguments)
        return registry.plan(dataset, self.data_source, params)

    if not TYPE_CHECKING:  # hidden from type checkers, which would then take any attribute

        def __getattr__(self, name: str) -> Callable[..., object]:
            """``lab.<name>`` and ``lab.plan_<name>`` of a dataset registered after this
            module was generated (``feeslab._gen_lab``): untyped, as ``lab.fetch(name, ...)``."""
            if name in REGISTRY:
                return functools.partial(self.fetch, name)
            planned = name.removeprefix("plan_")
            if planned != name and planned in REGISTRY and REGISTRY[planned].plan is not None:
                return functools.partial(self.plan, planned)
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

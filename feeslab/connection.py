"""``connect()``: where each surface lives, with which key, at which pace -> a :class:`Lab`.

::

    lab = feeslab.connect()                       # no key: the embedded devnet
    lab = feeslab.connect(api_key=..., api_key_secret=..., network="mainnet")  # the real service
    lab = feeslab.connect(url=dev.url, api_key=..., api_key_secret=...)        # a running devnet
    lab = feeslab.connect(rpc_url="http://127.0.0.1:8545")                     # any JSON-RPC node
    lab = feeslab.connect(era1="~/era1/")                                      # archive files

The endpoint layout is the service's: the node at ``https://{network}.infura.io/v3/KEY``
(WebSocket ``wss://{network}.infura.io/ws/v3/KEY``), the Gas API and the storage (IPFS) API on
their own hosts. A devnet serves every surface under one root, mainnet at the root and other
networks under ``/{network}``. Only this module starts a devnet, and only when there is
neither a key nor a URL.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

from feeslab.errors import ConfigError
from feeslab.fetch.credits import CreditLedger, ask_devnet_credits_per_second, pacing_rate
from feeslab.fetch.gas import GasClient
from feeslab.fetch.ipfs import IpfsClient
from feeslab.fetch.node import NodeClient
from feeslab.fetch.transport import HTTPTransport
from feeslab.fetch.ws import WebSocketTransport
from feeslab.lab import Lab
from feeslab.sources.rpc import RpcSource

__all__ = ["Endpoints", "Settings", "connect", "endpoints"]

INFURA_NODE = "https://{network}.infura.io/v3/{key}"
INFURA_GAS = "https://gas.api.infura.io"
INFURA_IPFS = "https://ipfs.infura.io:5001"
DEVNET_ROOT_NETWORK = "mainnet"  # served at a devnet's root; other networks under /{network}


@dataclass(frozen=True)
class Settings:
    """``connect()``'s keywords (era1 aside), kept to reach another network (``Lab.on_network``).

    The key and secret never appear in its repr.
    """

    api_key: str | None = field(default=None, repr=False)
    api_key_secret: str | None = field(default=None, repr=False)
    network: str = "mainnet"
    url: str | None = None
    rpc_url: str | None = field(default=None, repr=False)  # may hold a key in its path
    seed: int = 0
    cache: Any = True
    progress: bool = True
    credits_per_second: float | str | None = None
    max_batch: int = 1_000
    max_concurrency: int = 8
    wallet_url: str | None = None
    block_time: float | None = None
    websocket: bool = False


@dataclass(frozen=True)
class Endpoints:
    """Where each surface of one connection lives (None: this connection has none)."""

    node: str
    gas: str | None = None
    ipfs: str | None = None
    wallet: str | None = None
    devnet: str | None = None  # a devnet's root, which can say its plan's pace

    def __repr__(self) -> str:
        return "<Endpoints (URLs hold the key; not shown)>"


def connect(
    *,
    api_key: str | None = None,
    api_key_secret: str | None = None,
    network: str = "mainnet",
    url: str | None = None,
    rpc_url: str | None = None,
    seed: int = 0,
    cache: Any = True,
    progress: bool = True,
    credits_per_second: float | str | None = None,
    max_batch: int = 1_000,
    max_concurrency: int = 8,
    wallet_url: str | None = None,
    block_time: float | None = None,
    websocket: bool = False,
    era1: Any = None,
) -> Lab:
    """A :class:`Lab` on the real service, a running devnet, any node, or the embedded devnet.

    Parameters
    ----------
    api_key, api_key_secret : str, optional
        Credentials; default ``INFURA_API_KEY`` / ``INFURA_API_KEY_SECRET``. With neither an
        argument nor the variable, and no ``url``/``rpc_url``, the embedded devnet is started
        (``feeslab.devnet.start(seed=seed)``) and used.
    network : str
        The service's network name (``mainnet``, ``sepolia``, ``polygon-mainnet``, ...).
    url : str, optional
        The root of a running devnet (every surface under one root, as ``feeslab serve``
        lays them out); needs ``api_key`` (and ``api_key_secret`` for the Gas API and
        ``lab.ipfs``, the storage API at ``{url}/api/v0``).
    rpc_url : str, optional
        Any standard JSON-RPC node; no Gas API and no storage API then.
    seed : int
        The embedded devnet's seed.
    cache : bool or path
        The on-disk answer cache: on (user cache directory), a directory, or off.
    progress : bool
        Progress bars on long fetches.
    credits_per_second : float or str, optional
        Keep the fetch under this throughput [credits/s], or a plan's (``"core"``,
        ``"developer"``, ``"team"``); ``math.inf`` does not pace. Default: the plan's rate,
        as a devnet reports it (``GET /devnet/info``; without ``api_key_secret`` a devnet's
        default, Team's 40,000), else on the service the free Core plan's 500 credits/s (pass
        your plan's), else (``rpc_url``) none. The client paces with a token bucket at 95 %
        of it, cuts batches to fit it, and halves its pace on a 429 (see
        ``feeslab.fetch.transport.CreditGovernor``).
    max_batch, max_concurrency : int
        JSON-RPC calls per HTTP request (1,000: fewer round trips on a slow link, and geth's
        limit a batch; calls with block-sized answers, such as headers, go at most 500 to a
        request: ``feeslab.fetch.jsonrpc.MOST_LARGE_ANSWERS``), and requests in flight.
    wallet_url : str, optional
        The multichain wallet's WebSocket for ``lab.wallet``; default on a devnet its
        ``/wallet`` (the real service has none: the wallet API is MetaMask's extension).
    block_time : float, optional
        The embedded devnet's chains grow one block every ``block_time`` [s] (live mode:
        ``newHeads`` subscriptions and wallet notifications fire); default fixed heads.
    websocket : bool
        Send node calls over one WebSocket (``wss://{network}.infura.io/ws/v3/KEY``, or the
        devnet's ``/ws/v3/KEY``) instead of HTTPS; needed for :meth:`Lab.subscribe`. An
        ``rpc_url`` starting with ``ws://``/``wss://`` implies it.
    era1 : str, Path or sequence of them, optional
        Read blocks, uncles and fee history from era1 files (mainnet's pre-merge archive):
        a file, a directory of ``*.era1`` or a glob; no node, no credits
        (``feeslab.sources.era1.Era1Source``).
    """
    if era1 is not None:
        from feeslab.sources.era1 import Era1Source

        return Lab(Era1Source(era1), credits=CreditLedger())
    settings = Settings(
        api_key=api_key or os.environ.get("INFURA_API_KEY") or None,
        api_key_secret=api_key_secret or os.environ.get("INFURA_API_KEY_SECRET") or None,
        network=network, url=url, rpc_url=rpc_url, seed=seed, cache=cache, progress=progress,
        credits_per_second=credits_per_second, max_batch=max_batch,
        max_concurrency=max_concurrency, wallet_url=wallet_url, block_time=block_time,
        websocket=websocket,
    )
    return open_lab(settings)


def open_lab(settings: Settings, devnet: Any = None) -> Lab:
    """A Lab for ``settings``: on ``devnet`` when given (a running embedded devnet, which the
    Lab then does not own), else as :func:`connect` says."""
    _check(settings)
    owns = devnet is None and not (settings.url or settings.rpc_url or settings.api_key)
    if owns:
        devnet = _start_devnet(settings)
    if devnet is not None:  # the devnet's own key; every surface under its root
        settings = replace(settings, url=devnet.url, api_key=devnet.api_key,
                           api_key_secret=devnet.api_key_secret, block_time=None,
                           wallet_url=settings.wallet_url or f"{devnet.ws_url}/wallet")
    where = endpoints(settings)
    ledger = CreditLedger(priced=settings.rpc_url is None)  # another node charges no credits
    transport = _transport(where, settings, ledger)
    node = NodeClient(
        transport,
        ledger=ledger,
        cache=settings.cache,
        progress=settings.progress,
        identity_suffix=None if devnet is None else f"devnet{devnet.simulation}",
    )
    key, secret = settings.api_key, settings.api_key_secret
    gas = None
    if where.gas is not None and key:
        gas = GasClient(base_url=where.gas, api_key=key, api_key_secret=secret, ledger=ledger)
    ipfs = None
    if where.ipfs is not None and key and secret:  # the storage API needs both
        ipfs = IpfsClient(base_url=where.ipfs, api_key=key, api_key_secret=secret)
    source = RpcSource(node, gas=gas, devnet=devnet is not None,
                       any_node=settings.rpc_url is not None)
    reconnect = None  # another node serves one chain
    if settings.rpc_url is None:
        def reconnect(name: str) -> Lab:
            return open_lab(replace(settings, network=name), devnet=devnet)

    return Lab(source, credits=ledger, ipfs=ipfs, wallet_url=where.wallet, devnet=devnet,
               owns_devnet=owns, network=settings.network, rpc_url=settings.rpc_url,
               reconnect=reconnect)


def _check(settings: Settings) -> None:
    """The options' mistakes that need no network."""
    if settings.url is not None and settings.rpc_url is not None:
        raise ConfigError("give url= (a devnet or service root) or rpc_url= (a node), not both")
    if settings.url is not None and not settings.api_key:
        raise ConfigError("url= needs api_key= (the devnet prints it; or INFURA_API_KEY)")
    started = not (settings.url or settings.rpc_url or settings.api_key)
    if settings.block_time is not None and not started:
        raise ConfigError("block_time= sets the embedded devnet's pace; this Lab starts none")


def _start_devnet(settings: Settings) -> Any:
    import feeslab.devnet  # only here: a client with a key never loads the devnet

    feeslab.devnet.require("no INFURA_API_KEY and the devnet is not installed")
    return feeslab.devnet.start(seed=settings.seed, block_time=settings.block_time)


def endpoints(settings: Settings) -> Endpoints:
    """Where each surface lives for ``settings`` (a devnet's root given as ``url``)."""
    key, network = settings.api_key, settings.network
    if settings.rpc_url is not None:
        where = Endpoints(node=settings.rpc_url, wallet=settings.wallet_url)
    elif settings.url is not None:
        root = settings.url.rstrip("/")
        prefix = "" if network == DEVNET_ROOT_NETWORK else f"/{network}"
        where = Endpoints(node=f"{root}{prefix}/v3/{key}", gas=settings.url,
                          ipfs=settings.url, devnet=settings.url,
                          wallet=settings.wallet_url or _ws_root(settings.url) + "/wallet")
    else:
        where = Endpoints(node=INFURA_NODE.format(network=network, key=key), gas=INFURA_GAS,
                          ipfs=INFURA_IPFS, wallet=settings.wallet_url)
    if settings.websocket and not where.node.startswith(("ws://", "wss://")):
        where = replace(where, node=_ws_node_url(where.node))
    return where


def _transport(where: Endpoints, settings: Settings, ledger: CreditLedger) -> Any:
    """The node's transport (WebSocket for a ``ws(s)://`` URL), paced at the plan's rate."""
    told = None  # a devnet's own limit, asked while the first requests go
    url, root = where.node, where.devnet
    auth = (settings.api_key, settings.api_key_secret)
    if settings.credits_per_second is None and root is not None and all(auth):
        told = ask_devnet_credits_per_second(root, auth)  # type: ignore[arg-type]
    host = url.partition("//")[2].partition("/")[0]
    service = (settings.rpc_url is None and bool(settings.api_key)) or host.endswith(".infura.io")
    rate = pacing_rate(settings.credits_per_second, devnet_root=root, service=service)
    options = dict(url=url, max_batch=settings.max_batch, max_concurrency=settings.max_concurrency,
                   credits_per_second=rate, ledger=ledger)  # the one count of credits
    websocket = url.startswith(("ws://", "wss://"))
    transport = WebSocketTransport(**options) if websocket else HTTPTransport(**options)
    if told is not None and getattr(transport, "governor", None) is not None:
        transport.governor.follow(told)
    return transport


def _ws_node_url(url: str) -> str:
    """The WebSocket twin of a node URL: ``https://h/v3/K`` -> ``wss://h/ws/v3/K`` (the
    service's and the devnet's layout); another node's URL just changes scheme."""
    if not url.startswith(("http://", "https://")):
        scheme = url.partition(":")[0]
        raise ConfigError(f"websocket=True needs an http(s) or ws(s) node URL, not {scheme!r}")
    root, sep, rest = url.partition("/v3/")
    return _ws_root(root) + "/ws/v3/" + rest if sep else _ws_root(url)


def _ws_root(url: str) -> str:
    """The WebSocket root of an HTTP(S) root: ``http://h:p/`` -> ``ws://h:p``."""
    root = url.rstrip("/")
    for http, ws in (("https://", "wss://"), ("http://", "ws://")):
        if root.startswith(http):
            return ws + root[len(http) :]
    return root

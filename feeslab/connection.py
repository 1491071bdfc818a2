"""``connect()``: where each surface lives, with which key, at which pace -> a :class:`Lab`.

::

    lab = feeslab.connect()                       # no key: the embedded devnet
    lab = feeslab.connect(api_key=..., api_key_secret=..., network="mainnet")  # the real service
    lab = feeslab.connect(url=dev.url, api_key=..., api_key_secret=...)        # a running devnet
    lab = feeslab.connect(rpc_url="http://127.0.0.1:8545")                     # any JSON-RPC node
    lab = feeslab.connect(era1="~/era1/")                                      # archive files
    lab = feeslab.connect(url=dev.url, api_key=..., era1="~/era1/")  # files below their end

The options are declared once, as the fields of :class:`Settings` (default, type and
documentation each); ``connect()``'s signature (what Jupyter completes, what type checkers
check) and its docstring are made from them. Each option says on which connections it has an
effect; one given where it has none raises ``ConfigError`` naming it and the option that chose
the connection, rather than being dropped.

Settings are resolved once, where they are built: :meth:`Connection.of` takes the options
and the environment's defaults (:class:`Environment`, the one place ``INFURA_API_KEY`` and
``INFURA_API_KEY_SECRET`` are read) and says which connection they make, with which key.
``connect()`` and the ``feeslab`` command both build one (:func:`connect_with`); the node's
client stack is built from it (its :class:`~feeslab.sources.rpc.NodeSpec`, which the source
keeps: a cluster's workers open the very spec the Lab was opened from).

The endpoint layout is the service's: the node at ``https://{network}.infura.io/v3/KEY``
(WebSocket ``wss://{network}.infura.io/ws/v3/KEY``), the Gas API and the storage (IPFS) API on
their own hosts. A devnet serves every surface under one root, mainnet at the root and other
networks under ``/{network}``. Only this module starts a devnet, and only when there is
neither a key nor a URL. The node's client stack itself is built by
``feeslab.sources.rpc.open_node``, as a cluster's workers build theirs.
"""

from __future__ import annotations

import difflib
import inspect
import os
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from feeslab.errors import ConfigError
from feeslab.fetch.credits import CreditLedger, pacing_rate
from feeslab.fetch.ipfs import IpfsClient
from feeslab.lab import Lab
from feeslab.sources.rpc import NodeSpec, open_node, websocket_root, websocket_url

if TYPE_CHECKING:
    from feeslab.devnet.server import DevnetHandle
    from feeslab.sources.combined import CombinedSource
    from feeslab.sources.rpc import RpcSource

__all__ = ["Connection", "Endpoints", "Environment", "Settings", "connect", "connect_with",
           "endpoints"]

INFURA_NODE = "https://{network}.infura.io/v3/{key}"
INFURA_GAS = "https://gas.api.infura.io"
INFURA_IPFS = "https://ipfs.infura.io:5001"
KEY_VARIABLE = "INFURA_API_KEY"
SECRET_VARIABLE = "INFURA_API_KEY_SECRET"
KEYS_VARIABLE = "INFURA_API_KEYS"  # feeslab fetch's several keys (feeslab.cli)
DEVNET_ROOT_NETWORK = "mainnet"  # served at a devnet's root; other networks under /{network}
HISTORY_MODES = ("all", "postmerge")  # the devnet's --history.chain (feeslab.devnet.rpc)

# the connections connect() makes, each chosen by one option (see _route)
ERA1, NODE, ROOT, SERVICE, EMBEDDED = "era1", "node", "root", "service", "embedded"
NODES = frozenset({NODE, ROOT, SERVICE, EMBEDDED})  # every connection to a node
EVERYWHERE = NODES | {ERA1}
_WHAT = {
    ERA1: "{chooser} reads archive files: no node, no service",
    NODE: "rpc_url= reaches the one chain of any JSON-RPC node, without a key",
    ROOT: "url= is a running devnet's root, with its own chains",
    SERVICE: "{chooser} reaches the real service, not the embedded devnet",
}


_T = TypeVar("_T")


def _option(default: _T, doc: str, *, on: frozenset[str] = NODES, secret: bool = False) -> _T:
    """One of ``connect()``'s options: its ``default``, its documentation, the connections
    it has an effect ``on``, and whether its value is kept out of reprs and messages."""
    return field(default=default, repr=not secret, metadata={"doc": doc, "on": on})


@dataclass(frozen=True, kw_only=True)
class Settings:
    """``connect()``'s options, kept to reach another network (``Lab.on_network``).

    The key, the secret and a node URL (which may hold a key) never appear in its repr.
    """

    api_key: str | None = _option(
        None, "The service's (or a running devnet's) API key; default ``INFURA_API_KEY``. "
        "With neither this nor the variable, and no ``url``/``rpc_url``/``era1``, the "
        "embedded devnet is started (``feeslab.devnet.start(seed=seed)``) and used.",
        on=frozenset({ROOT, SERVICE}), secret=True)
    api_key_secret: str | None = _option(
        None, "The key's secret, for the Gas API and the storage API (``lab.ipfs``); default "
        "``INFURA_API_KEY_SECRET``.", on=frozenset({ROOT, SERVICE}), secret=True)
    network: str = _option(
        "mainnet", "The service's network name (``mainnet``, ``sepolia``, "
        "``polygon-mainnet``, ...); on a devnet, one of its chains.",
        on=frozenset({ROOT, SERVICE, EMBEDDED}))
    url: str | None = _option(
        None, "The root of a running devnet (every surface under one root, as ``feeslab "
        "serve`` lays them out); needs ``api_key`` (and ``api_key_secret`` for the Gas API and "
        "``lab.ipfs``, the storage API at ``{url}/api/v0``).", on=frozenset({ROOT}))
    rpc_url: str | None = _option(
        None, "Any standard JSON-RPC node (``http(s)://`` or ``ws(s)://``); no Gas API and no "
        "storage API then, and its calls are counted but not priced.",
        on=frozenset({NODE}), secret=True)
    seed: int = _option(0, "The embedded devnet's seed.", on=frozenset({EMBEDDED}))
    # RUF009: _option makes a field, as dataclasses.field does
    cache: bool | str | os.PathLike[str] = _option(  # noqa: RUF009
        True, "The on-disk answer cache: on (the user cache directory), a directory, or off "
        "(``False``). Allowed with ``era1`` (a script passes it whatever the source), which "
        "reads files and caches nothing.", on=EVERYWHERE)
    progress: bool = _option(
        True, "Progress bars on long fetches. Allowed with ``era1``, whose reads show a bar "
        "over several files.", on=EVERYWHERE)
    credits_per_second: float | str | None = _option(
        None, "Keep the fetch under this throughput [credits/s], or a plan's (``\"core\"``, "
        "``\"developer\"``, ``\"team\"``); ``math.inf`` does not pace. Default: the plan's "
        "rate, as a devnet reports it (``GET /devnet/info``; without ``api_key_secret`` a "
        "devnet's default, Team's 40,000), else on the service the free Core plan's 500 "
        "credits/s (pass your plan's), else (``rpc_url``) none. The client paces with a token "
        "bucket at 95 % of it, cuts batches to fit it, and halves its pace on a 429 (see "
        "``feeslab.fetch.transport.CreditGovernor``).")
    max_batch: int = _option(
        1_000, "JSON-RPC calls per HTTP request (1,000: fewer round trips on a slow link, and "
        "geth's limit a batch; calls with block-sized answers, such as headers, go at most 500 "
        "to a request: ``feeslab.fetch.jsonrpc.MOST_LARGE_ANSWERS``).")
    max_concurrency: int = _option(8, "Requests in flight at once.")
    wallet_url: str | None = _option(
        None, "The multichain wallet's WebSocket for ``lab.wallet``; default on a devnet its "
        "``/wallet`` (the real service has none: the wallet API is MetaMask's extension).")
    block_time: float | None = _option(
        None, "The embedded devnet's chains grow one block every ``block_time`` [s] (live "
        "mode: ``newHeads`` subscriptions and wallet notifications fire); default fixed heads.",
        on=frozenset({EMBEDDED}))
    websocket: bool = _option(
        False, "Send node calls over one WebSocket (``wss://{network}.infura.io/ws/v3/KEY``, "
        "or the devnet's ``/ws/v3/KEY``) instead of HTTPS; needed for :meth:`Lab.subscribe`. "
        "An ``rpc_url`` starting with ``ws://``/``wss://`` implies it.")
    era1: str | Path | Sequence[str | Path] | None = _option(  # noqa: RUF009
        None, "Read blocks, uncles and fee history from era1 files (mainnet's pre-merge "
        "archive): a file, a directory of ``*.era1``, a glob, or a sequence of them; no node, "
        "no credits (``feeslab.sources.era1.Era1Source``). Alone, the files are the source; "
        "beside a node (``url``, ``rpc_url`` or ``api_key``), the blocks the files hold come "
        "from them and the rest from the node, in one frame whose ``attrs[\"sources\"]`` say "
        "which blocks each gave (``feeslab.sources.combined``): what a node with expired "
        "history (EIP-4444) needs.", on=frozenset({ERA1, NODE, ROOT, SERVICE}))
    ere: str | Path | Sequence[str | Path] | None = _option(  # noqa: RUF009
        None, "Read blocks and fee history from Ere files (execution history on both sides "
        "of the merge, with receipts: ``feeslab.sources.ere.EreSource``), named as ``era1`` "
        "is; with ``era1``, the era1 files give the blocks they hold and the Ere files the "
        "rest (after the merge); alone or beside a node as ``era1``.",
        on=frozenset({ERA1, NODE, ROOT, SERVICE}))
    era: str | Path | Sequence[str | Path] | None = _option(  # noqa: RUF009
        None, "Read blocks and fee history from the beacon chain's Era files (the execution "
        "payloads since the merge: ``feeslab.sources.era.EraSource``), named as ``era1`` is. "
        "They hold no receipts: tip percentiles raise ``NoReceipts`` (pass "
        "``percentiles=()``). Alone, with ``era1``/``ere``, or beside a node as ``era1``.",
        on=frozenset({ERA1, NODE, ROOT, SERVICE}))
    history: str = _option(
        "all", "Which history the embedded devnet serves, as geth's ``--history.chain`` "
        "(EIP-4444): ``\"all\"``, or ``\"postmerge\"``: the bodies, uncles and receipts of "
        "the blocks before each chain's merge are answered with error 4444 (``HistoryPruned``) "
        "while headers stay served.", on=frozenset({EMBEDDED}))


def _parameters_doc(declared: type) -> str:
    """A numpydoc ``Parameters`` section from the fields' documentation."""
    lines = ["Parameters", "----------"]
    for option in fields(declared):
        lines.append(f"{option.name} : {option.type}")
        lines += textwrap.wrap(option.metadata["doc"], 92, initial_indent="    ",
                               subsequent_indent="    ")  # fmt: skip
    return "\n".join(lines)


Settings.__doc__ = f"{inspect.cleandoc(Settings.__doc__ or '')}\n\n{_parameters_doc(Settings)}"


_P = ParamSpec("_P")


def _options_of(
    declared: Callable[_P, Settings],
) -> Callable[[Callable[..., Lab]], Callable[_P, Lab]]:
    """Give the decorated function ``declared``'s keywords: to type checkers (the
    ``ParamSpec``), at run time (``__signature__``: what ``help()`` and Jupyter's completion
    read) and in its docstring (the Parameters section)."""

    def give(function: Callable[..., Lab]) -> Callable[_P, Lab]:
        signature = inspect.signature(declared, eval_str=True)
        function.__signature__ = signature.replace(return_annotation=Lab)  # type: ignore[attr-defined]
        summary, _, rest = inspect.cleandoc(function.__doc__ or "").partition("\n\n")
        parameters = _parameters_doc(declared)  # type: ignore[arg-type]
        function.__doc__ = "\n\n".join(part for part in (summary, parameters, rest) if part)
        return function

    return give


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


@_options_of(Settings)
def connect(**options: Any) -> Lab:
    """A :class:`Lab` on the real service, a running devnet, any node, the embedded devnet or
    era1 files.

    Returns
    -------
    Lab
        Close it when done (``with feeslab.connect() as lab:``): it holds connections, and
        stops the embedded devnet it started.

    Raises
    ------
    TypeError
        An option ``connect()`` does not have.
    ConfigError
        Options that conflict (one where the connection another chose has no use for it), or
        one that cannot work (``url`` without a key, an unknown plan's name, ...).
    """
    for name in options:
        if name not in _NAMES:
            close = difflib.get_close_matches(name, _NAMES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"connect() got an unexpected keyword argument {name!r}{hint}")
    return connect_with(Settings(**options))


def connect_with(settings: Settings, environment: Environment | None = None) -> Lab:
    """A :class:`Lab` for ``settings`` (what :func:`connect` does with its options; the
    ``feeslab`` command builds its own), with ``environment``'s defaults (read now when not
    given).

    Raises
    ------
    ConfigError
        As :func:`connect`.
    """
    connection = Connection.of(settings, environment)
    _check(connection)
    return open_lab(connection)


_NAMES = [option.name for option in fields(Settings)]


@dataclass(frozen=True, repr=False)
class Environment:
    """The environment's defaults, read once (:meth:`read`): the service's key and its secret,
    and ``feeslab fetch``'s several keys (their text; ``feeslab.cli`` parses it). Its repr
    shows none of them."""

    api_key: str | None = None
    api_key_secret: str | None = None
    api_keys: str | None = None

    @classmethod
    def read(cls, environ: Mapping[str, str] | None = None) -> Environment:
        """``INFURA_API_KEY``, ``INFURA_API_KEY_SECRET`` and ``INFURA_API_KEYS`` of
        ``environ`` (default ``os.environ``); empty values count as unset."""
        environ = os.environ if environ is None else environ
        return cls(api_key=environ.get(KEY_VARIABLE) or None,
                   api_key_secret=environ.get(SECRET_VARIABLE) or None,
                   api_keys=environ.get(KEYS_VARIABLE) or None)  # fmt: skip

    def __repr__(self) -> str:
        named = zip((KEY_VARIABLE, SECRET_VARIABLE, KEYS_VARIABLE),
                    (self.api_key, self.api_key_secret, self.api_keys), strict=True)  # fmt: skip
        given = [name for name, value in named if value]
        return f"<Environment {', '.join(given) or 'no key'} (values not shown)>"


@dataclass(frozen=True, repr=False)
class Connection:
    """``connect()``'s options resolved once (:meth:`of`): the connection they make, what
    chose it, and the key and secret it uses (given, or the environment's). The node's stack
    is built from it; its repr shows no key, secret or URL.

    Attributes
    ----------
    settings : Settings
        The options as given.
    route : str
        ``"era1"``, ``"node"`` (``rpc_url``), ``"root"`` (a running devnet's ``url``),
        ``"service"`` or ``"embedded"`` (the devnet ``connect()`` starts).
    chooser : str
        What chose it, for messages: an option (``"url="``) or ``INFURA_API_KEY``.
    api_key, api_key_secret : str, optional
        The service's (or the devnet's) key and secret.
    """

    settings: Settings
    route: str
    chooser: str
    api_key: str | None = None
    api_key_secret: str | None = None

    @classmethod
    def of(cls, settings: Settings, environment: Environment | None = None) -> Connection:
        """Resolve ``settings`` with ``environment``'s defaults (read now when not given):
        ``era1`` alone reads the files; beside a node option, the node's connection (the
        files join it); a key in the environment reaches the service, or goes with ``url``.
        """
        environment = Environment.read() if environment is None else environment
        if _archives(settings) and not (settings.rpc_url or settings.url
                                        or settings.api_key):  # fmt: skip
            route, chooser = ERA1, "=, ".join(name for name, _ in _archives(settings)) + "="
        elif settings.rpc_url is not None:
            route, chooser = NODE, "rpc_url="
        elif settings.url is not None:
            route, chooser = ROOT, "url="
        elif settings.api_key:
            route, chooser = SERVICE, "api_key="
        elif environment.api_key:
            route, chooser = SERVICE, KEY_VARIABLE
        else:
            route, chooser = EMBEDDED, "no api_key=, url=, rpc_url= or era1="
        keyed = route in (ROOT, SERVICE)  # any node and era1 files take no key
        return cls(settings, route, chooser,
                   api_key=settings.api_key or (environment.api_key if keyed else None),
                   api_key_secret=settings.api_key_secret or (
                       environment.api_key_secret if keyed else None))  # fmt: skip

    def __repr__(self) -> str:
        return f"<Connection {self.route} chosen by {self.chooser} (no key or URL shown)>"

    def on_devnet(self, devnet: DevnetHandle) -> Connection:
        """The same options on ``devnet`` (running): its own key, every surface under its
        root."""
        settings = replace(self.settings, url=devnet.url, block_time=None,
                           wallet_url=self.settings.wallet_url or f"{devnet.ws_url}/wallet")
        return Connection(settings, ROOT, "url=", api_key=devnet.api_key,
                          api_key_secret=devnet.api_key_secret)  # fmt: skip

    def on_network(self, network: str) -> Connection:
        """The same connection on another network of the same service or devnet."""
        return replace(self, settings=replace(self.settings, network=network))


def _check(connection: Connection) -> None:
    """The options' mistakes that need no network: one given (not its default) where the
    connection chosen has no use for it; ``url`` without a key; a pace that is no rate."""
    settings, route, chooser = connection.settings, connection.route, connection.chooser
    for option in fields(settings):
        value = getattr(settings, option.name)
        if value == option.default or route in option.metadata["on"]:
            continue
        given = f"{option.name}={value!r}" if option.repr else f"{option.name}="
        if route == EMBEDDED:  # a secret without a key
            raise ConfigError(f"{given} has no effect without api_key= (or {KEY_VARIABLE}): "
                              "with no key, url=, rpc_url= or era1=, connect() starts the "
                              "embedded devnet, which has its own key")  # fmt: skip
        what = _WHAT[route].format(chooser=chooser)
        raise ConfigError(f"{given} and {chooser} conflict: {what}, where {option.name}= has "
                          "no effect; pass one, not both")  # fmt: skip
    if route == ROOT and not connection.api_key:
        raise ConfigError(f"url= needs api_key= (the devnet prints it; or {KEY_VARIABLE})")
    pacing_rate(settings.credits_per_second)  # a value that is no rate, before a devnet starts
    if settings.history not in HISTORY_MODES:
        raise ConfigError(f"history={settings.history!r}: want one of "
                          f"{', '.join(map(repr, HISTORY_MODES))} (geth's --history.chain)")


def open_lab(connection: Connection, devnet: DevnetHandle | None = None, *,
             owns: bool = False) -> Lab:  # fmt: skip
    """A Lab for ``connection`` (checked by :func:`connect_with`): on ``devnet`` when given
    (a running embedded devnet, which the Lab stops on closing if it ``owns`` it), else as
    the connection says."""
    settings = connection.settings
    if connection.route == ERA1:  # files alone
        files = archive_source(settings)
        assert files is not None
        return Lab(files, credits=files.credits if files.composite else CreditLedger())
    if devnet is None and connection.route == EMBEDDED:
        devnet = _start_devnet(settings)
        try:
            return open_lab(connection.on_devnet(devnet), devnet, owns=True)
        except BaseException:
            devnet.stop()  # a Lab that failed to open leaves no devnet running
            raise
    where = endpoints(connection)
    node = open_node(_node_spec(connection, where, devnet))
    source: RpcSource | CombinedSource = node
    if _archives(settings):  # the files beside the node: the blocks they hold from them
        try:
            source = archive_source(settings, node)
        except BaseException:
            node.close()
            raise
    key, secret = connection.api_key, connection.api_key_secret
    ipfs = None
    if where.ipfs is not None and key and secret:  # the storage API needs both
        try:
            ipfs = IpfsClient(base_url=where.ipfs, api_key=key, api_key_secret=secret)
        except BaseException:
            source.close()
            raise
    reconnect = None  # another node serves one chain
    if settings.rpc_url is None:
        def reconnect(name: str) -> Lab:
            return open_lab(connection.on_network(name), devnet=devnet)

    return Lab(source, credits=source.credits, ipfs=ipfs, wallet_url=where.wallet,
               devnet=devnet, owns_devnet=owns, network=settings.network,
               rpc_url=settings.rpc_url, reconnect=reconnect)  # fmt: skip


def _archives(settings: Settings) -> list[tuple[str, Any]]:
    """The archive options given, (name, value), in order of preference: era1, Ere, Era."""
    return [(name, getattr(settings, name)) for name in ("era1", "ere", "era")
            if getattr(settings, name) is not None]  # fmt: skip


def archive_source(settings: Settings, node: RpcSource | None = None) -> Any:
    """The source of ``settings``' archive files (None: none given), beside ``node``: one
    format alone as its own source; several, or any beside a node, a ``CombinedSource``
    (era1 files below the merge, Ere or Era files above it, the node for the rest)."""
    from feeslab.sources.combined import CombinedSource
    from feeslab.sources.era import EraSource
    from feeslab.sources.era1 import Era1Source
    from feeslab.sources.ere import EreSource

    kinds = {"era1": Era1Source, "ere": EreSource, "era": EraSource}
    archives = [kinds[name](value) for name, value in _archives(settings)]
    if not archives:
        return None
    if len(archives) == 1 and node is None:
        return archives[0]
    return CombinedSource(archives, node)


def _node_spec(connection: Connection, where: Endpoints,
               devnet: DevnetHandle | None) -> NodeSpec:  # fmt: skip
    """The node's spec for ``open_node``: paced at the plan's rate (a devnet's own limit
    asked while the first requests go, when there is a secret to ask with)."""
    settings = connection.settings
    key, secret = connection.api_key, connection.api_key_secret
    host = where.node.partition("//")[2].partition("/")[0]
    service = (settings.rpc_url is None and bool(key)) or host.endswith(".infura.io")
    rate = pacing_rate(settings.credits_per_second, devnet_root=where.devnet, service=service)
    ask = settings.credits_per_second is None and where.devnet is not None
    return NodeSpec(
        url=where.node, max_batch=settings.max_batch, max_concurrency=settings.max_concurrency,
        credits_per_second=rate, devnet_root=where.devnet if ask else None,
        api_key=key, api_key_secret=secret, gas_url=where.gas,
        cache=settings.cache, progress=settings.progress,
        priced=settings.rpc_url is None,  # another node charges no credits
        devnet=True if devnet is not None else None, any_node=settings.rpc_url is not None,
        identity_suffix=None if devnet is None else f"devnet{devnet.simulation}",
        history_cutoff=None if devnet is None else _devnet_cutoff(devnet, settings.network),
        genesis_hash=None if devnet is None else _pruned_genesis(devnet, settings.network),
    )  # fmt: skip


def _pruned_genesis(devnet: DevnetHandle, network: str) -> str | None:
    """The embedded devnet's genesis hash on ``network`` when it prunes history: the cache's
    identity cannot be asked of it (geth answers the genesis body with 4444 too)."""
    server = getattr(devnet, "devnet", None)
    if server is None or server.history == "all":
        return None
    chain = next((c for c in server.chains if c.network == network), None)
    return None if chain is None else "0x" + chain.block(0).hash.hex()


def _devnet_cutoff(devnet: DevnetHandle, network: str) -> int | None:
    """The embedded devnet's history cutoff on ``network`` (known: no call to learn it)."""
    server = getattr(devnet, "devnet", None)
    if server is None:
        return None
    by_id = server.history_cutoffs()
    chain = next((c for c in server.chains if c.network == network), None)
    return None if chain is None else by_id.get(chain.chain_id)


def _start_devnet(settings: Settings) -> DevnetHandle:
    import feeslab.devnet  # only here: a client with a key never loads the devnet

    feeslab.devnet.require(f"no {KEY_VARIABLE} and the devnet is not installed")
    return feeslab.devnet.start(seed=settings.seed, block_time=settings.block_time,
                                history=settings.history)


def endpoints(connection: Connection) -> Endpoints:
    """Where each surface lives for ``connection`` (a devnet's root given as ``url``)."""
    settings, key, network = connection.settings, connection.api_key, connection.settings.network
    if settings.rpc_url is not None:
        where = Endpoints(node=settings.rpc_url, wallet=settings.wallet_url)
    elif settings.url is not None:
        root = settings.url.rstrip("/")
        prefix = "" if network == DEVNET_ROOT_NETWORK else f"/{network}"
        where = Endpoints(node=f"{root}{prefix}/v3/{key}", gas=settings.url,
                          ipfs=settings.url, devnet=settings.url,
                          wallet=settings.wallet_url or websocket_root(settings.url) + "/wallet")
    else:
        where = Endpoints(node=INFURA_NODE.format(network=network, key=key), gas=INFURA_GAS,
                          ipfs=INFURA_IPFS, wallet=settings.wallet_url)
    if settings.websocket and not where.node.startswith(("ws://", "wss://")):
        where = replace(where, node=websocket_url(where.node))
    return where

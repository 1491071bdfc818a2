"""Start the devnet: a local stand-in for the service, served by uvicorn on a background thread.

``start()`` builds the seeded chains, a credit ledger and a fresh key/secret, binds a loopback
socket (so the URL is known before it returns), runs uvicorn on a daemon thread and waits until
the socket answers. The returned ``DevnetHandle`` stops it, also as a context manager::

    with start(seed=7) as devnet:
        httpx.post(f"{devnet.url}/v3/{devnet.api_key}", json={...})

Default limits
--------------
The defaults copy Infura's largest self-serve plan, **Team**: 75,000,000 credits per day and
40,000 credits per second (docs.metamask.io/services/get-started/pricing, "Infura plans";
the free Core plan is 3,000,000/day and 500/s, Developer 15,000,000/day and 4,000/s). A teaching
notebook that scans thousands of blocks needs Team-sized room; pass ``daily_credits`` and
``credits_per_second`` to rehearse a smaller plan.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterable
from functools import partial
from typing import Any

import uvicorn

from feeslab.devnet._trailers import DEFAULT_READ_TIMEOUT, TrailerH11Protocol
from feeslab.devnet.auth import Credentials
from feeslab.devnet.chain import build_chains
from feeslab.devnet.credits import CreditLedger
from feeslab.devnet.service import Devnet
from feeslab.protocol.costs import TEAM_PLAN_CREDITS_PER_SECOND, TEAM_PLAN_DAILY_CREDITS

DEFAULT_DAILY_CREDITS = TEAM_PLAN_DAILY_CREDITS
DEFAULT_CREDITS_PER_SECOND = TEAM_PLAN_CREDITS_PER_SECOND

KEEP_ALIVE_TIMEOUT = 5.0
"""Seconds an idle connection stays open between two requests (uvicorn's timeout_keep_alive;
geth's HTTP server allows 120 s, Go's default idle timeout)."""

WS_MAX_MESSAGE_BYTES = 32 * 1024 * 1024
"""geth's WebSocket read limit; a larger message closes the connection with 1009."""

STARTUP_TIMEOUT = 60.0


class _DenialNoiseFilter(logging.Filter):
    """Drop uvicorn's false alarm after a WebSocket denial response.

    uvicorn's websockets-sansio protocol (0.54) sends the denial but never marks the handshake
    done, then logs "ASGI callable returned without completing handshake." Our endpoints always
    accept, close or deny, so that line only ever follows a denial.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return "returned without completing handshake" not in record.getMessage()


logging.getLogger("uvicorn.error").addFilter(_DenialNoiseFilter())


def simulation_digest(seed: int, height: int | None = None) -> str:
    """12 hex digits naming the simulation: every devnet source file, chains.json, the seed
    and a ``height`` given to lengthen the mainnet chain (None: the configured one)."""
    import hashlib
    from pathlib import Path

    from feeslab.protocol.chaindata import chains_json_bytes

    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    sources = [*sorted(here.rglob("*.py")), *sorted((here / "contracts").glob("*.json"))]
    # the rules outside devnet/ the answers follow: the base fee, the blob fee, the credit costs
    sources += sorted((here.parent / "protocol").glob("*.py"))
    for path in sources:
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(hashlib.sha256(chains_json_bytes()).digest())
    digest.update(str(seed).encode())
    if height is not None:  # answers for "latest" differ; the default digest stays as it was
        digest.update(f"height={height}".encode())
    return digest.hexdigest()[:12]



class DevnetHandle:
    """A running devnet: where it listens, its key and secret, and ``stop()``.

    ``repr`` never shows the key or the secret.

    Attributes
    ----------
    url : str
        ``http://HOST:PORT``; node endpoints are ``{url}/v3/{api_key}`` (mainnet) and
        ``{url}/{network}/v3/{api_key}``.
    ws_url : str
        ``ws://HOST:PORT``; WebSocket endpoints are ``{ws_url}/ws/v3/{api_key}`` and
        ``{ws_url}/{network}/ws/v3/{api_key}``; the multichain wallet is ``{ws_url}/wallet``.
    api_key, api_key_secret : str
        The credentials it accepts.
    seed : int
    chains : ChainSet
    devnet : Devnet
    """

    def __init__(
        self, devnet: Devnet, server: uvicorn.Server, thread: threading.Thread, sock, url_host: str
    ) -> None:
        self.devnet = devnet
        self._server = server
        self._thread = thread
        self._sock = sock
        self.port: int = sock.getsockname()[1]
        self.host = url_host
        self.url = f"http://{url_host}:{self.port}"
        self.ws_url = f"ws://{url_host}:{self.port}"
        self._loop: asyncio.AbstractEventLoop | None = getattr(server, "feeslab_loop", None)

    @property
    def simulation(self) -> str:
        """A digest of what its answers are made from (simulator sources, chains.json, seed).

        Two devnets with the same digest answer alike; a client's answer cache keeps the
        answers of one digest apart from another's (a changed simulator never reads stale data).
        """
        return simulation_digest(self.seed, self.devnet.height)

    @property
    def api_key(self) -> str:
        return self.devnet.credentials.api_key

    @property
    def api_key_secret(self) -> str:
        return self.devnet.credentials.api_key_secret

    @property
    def seed(self) -> int:
        return self.devnet.seed

    @property
    def chains(self) -> Any:
        return self.devnet.chains

    @property
    def contracts(self) -> dict[str, Any]:
        """The deployed contracts: names, addresses, ABIs, storage layouts, accounts."""
        return self.devnet.contracts()

    @property
    def wallet(self) -> Any:
        """The emulated multichain wallet (``WS {ws_url}/wallet``); play its user with
        ``wallet.change_grant(...)``."""
        return self.devnet.wallet

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def drop_websockets(self, timeout: float = 5.0) -> int:
        """Drop every open WebSocket at once, as a lost network does: the TCP connections are
        aborted, with no close frame (clients see the connection end abruptly). What an
        operator does to rehearse a client's reconnection; ``POST /devnet/websockets/drop``
        (with the key and secret as Basic auth) does the same over HTTP.

        Returns
        -------
        int
            How many WebSockets were dropped.
        """
        loop = self._loop
        if loop is None or loop.is_closed() or not self.running:
            return 0
        future = asyncio.run_coroutine_threadsafe(_drop_websockets(self._server), loop)
        return future.result(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and wait for the server thread to end (idempotent)."""
        self._server.should_exit = True
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._sock.close()
        if self.devnet.ipfs is not None:
            self.devnet.ipfs.close()

    def __enter__(self) -> DevnetHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<DevnetHandle {self.url} seed={self.seed} {state}>"


async def _drop_websockets(server: uvicorn.Server) -> int:
    """Abort every WebSocket connection of ``server`` (run on its loop)."""
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

    dropped = 0
    for protocol in list(server.server_state.connections):
        if isinstance(protocol, WebSocketsSansIOProtocol) and protocol.transport is not None:
            protocol.transport.abort()  # no close frame: a lost connection, not a goodbye
            dropped += 1
    return dropped


def _add_drop_route(app: Any, server: uvicorn.Server) -> None:
    """``POST /devnet/websockets/drop`` (Basic auth: key and secret, like ``/devnet/credits``):
    drops every WebSocket and answers ``{"dropped": n}``; it also lets the handle find the
    server's loop."""
    from starlette.routing import Route

    from feeslab.devnet.app import _basic_refusal, _json

    async def drop(request: Any) -> Any:
        refusal = _basic_refusal(request)
        return refusal or _json({"dropped": await _drop_websockets(server)})

    app.router.routes.insert(0, Route("/devnet/websockets/drop", drop, methods=["POST"]))

    startup = server.startup

    async def remember_loop(*args: Any, **kwargs: Any) -> None:
        server.feeslab_loop = asyncio.get_running_loop()  # type: ignore[attr-defined]
        await startup(*args, **kwargs)

    server.startup = remember_loop  # type: ignore[method-assign]


def _check_host(host: str, allow_remote: bool) -> None:
    if allow_remote or host == "localhost":
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(
            f"refusing to serve the devnet on non-loopback host {host!r}; "
            "pass allow_remote=True to expose it"
        )


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must say TCP: asyncio sets TCP_NODELAY on accepted connections only
    # then, and without it Nagle + delayed ACKs add ~40 ms to every small answer
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _wait_until_serving(server: uvicorn.Server, thread: threading.Thread, addr: tuple) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the devnet server stopped during start-up (see the log)")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError("the devnet server did not start in time")
        time.sleep(0.01)
    # started means listening; one real connection proves it
    with socket.create_connection(addr[:2], timeout=5):
        pass


def serve(
    devnet: Devnet,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    allow_remote: bool = False,
    read_timeout: float = DEFAULT_READ_TIMEOUT,
):
    """Serve an already-built ``Devnet`` on a background thread.

    ``read_timeout`` [s]: a client must send a request's headers within it, and may not pause
    longer in a body (``feeslab.devnet._trailers``); idle connections close after
    ``min(KEEP_ALIVE_TIMEOUT, read_timeout)``.

    Returns
    -------
    DevnetHandle
    """
    from feeslab.devnet.app import create_app
    from feeslab.devnet.ipfs import IpfsNode

    _check_host(host, allow_remote)
    if devnet.ipfs is None:
        devnet.ipfs = IpfsNode.open()
    sock = _bind(host, port)
    app = create_app(devnet)
    config = uvicorn.Config(
        app,
        log_config=None,  # leave the embedding program's logging alone
        log_level="warning",
        access_log=False,
        lifespan="on",
        ws="websockets-sansio",  # supports denial responses; the legacy one warns on import
        ws_max_size=WS_MAX_MESSAGE_BYTES,
        # h11 with response trailers (the IPFS X-Stream-Error) and header/body read timeouts
        http=partial(TrailerH11Protocol, read_timeout=read_timeout),
        timeout_keep_alive=min(KEEP_ALIVE_TIMEOUT, read_timeout),
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    _add_drop_route(app, server)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="feeslab-devnet", daemon=True
    )
    thread.start()
    try:
        _wait_until_serving(server, thread, sock.getsockname())
    except BaseException:
        server.should_exit = True
        thread.join(5)
        sock.close()
        raise
    url_host = f"[{host}]" if ":" in host else host
    return DevnetHandle(devnet, server, thread, sock, url_host)


def start(
    *,
    seed: int = 0,
    port: int = 0,
    host: str = "127.0.0.1",
    latency_ms: float = 0,
    daily_credits: int = DEFAULT_DAILY_CREDITS,
    credits_per_second: float = DEFAULT_CREDITS_PER_SECOND,
    block_time: float | None = None,
    api_key: str | None = None,
    api_key_secret: str | None = None,
    allow_remote: bool = False,
    warm: bool = True,
    wallet_user: Any = None,
    blockstore: str | os.PathLike | None = None,
    wallet_allow_origin: str | Iterable[str] | None = None,
    read_timeout: float = DEFAULT_READ_TIMEOUT,
    height: int | None = None,
    reorgs: float = 0.0,
    history: str = "all",
) -> DevnetHandle:
    """Start a devnet on a background thread and return once it accepts connections.

    Parameters
    ----------
    seed : int
        Seed of the simulated chains (same seed, same chains).
    port : int
        TCP port; 0 picks a free one.
    host : str
        Loopback address to bind; anything else needs ``allow_remote=True``.
    latency_ms : float
        Delay before answering each HTTP request and each WebSocket message.
    daily_credits : int
        Credits per UTC day (default: Infura Team plan, 75,000,000).
    credits_per_second : float
        Throughput limit (default: Infura Team plan, 40,000).
    block_time : float, optional
        Seconds per new block: the chains grow live (and ``newHeads`` subscriptions fire).
        None keeps each chain at its fixed head.
    api_key, api_key_secret : str, optional
        Credentials to accept; default fresh ``secrets.token_hex(16)`` each.
    allow_remote : bool
        Allow a non-loopback ``host``.
    warm : bool
        Generate every chain's history up to its head on a background thread
        right away (mainnet first), so that later requests find it ready.  The
        server answers meanwhile; a request for a block not yet generated
        generates what it needs.
    wallet_user : feeslab.devnet.wallet.WalletUser, optional
        The wallet's user policy: which chains, methods and how many accounts per chain they
        approve (default: what is asked, one account per chain).
    blockstore : path, optional
        The IPFS node's blockstore directory, kept across restarts. Default
        ``<cache>/devnet/ipfs``, shared by the devnets of this machine (``FEESLAB_CACHE_DIR``
        moves ``<cache>``); a temporary directory when ``FEESLAB_DEVNET_CACHE=0``.
    wallet_allow_origin : str or list of str, optional
        Browser origins (``https://dapp.example``) besides loopback pages that may open
        ``WS /wallet``; ``"*"`` allows any page. Default none: a page of another origin is
        refused (403), so it cannot drive the wallet's user, who approves everything.
    read_timeout : float
        Seconds a client has to send a request's headers, and the longest pause allowed in a
        body (default 10); idle keep-alive connections close after 5 s (or this, if less).
    height : int, optional
        The mainnet chain's (chain 1's) head block instead of 210,000, for benchmarks and
        scale tests (a 1,000,000-block scan needs a chain that long). Blocks up to 210,000
        are the default chain's, unchanged; the rest continue its last fork (proof of stake
        with blobs). From its last fork (block 206,000) up to 10,000,000; a ``ValueError``
        otherwise. Warming generates the blocks past 210,000 at ~11,000 a second
        (1,000,000: ~75 s on a background thread, while the server answers; a restart loads
        the stored history instead), and the history takes ~390 bytes a block in memory, its
        cached headers ~2 KB a block once scanned. The contracts stay where the default chain
        has them: the first ``eth_call`` or storage read past block 210,000 replays their
        transactions up to it (~3,000 blocks/s).
    reorgs : float
        With ``block_time``: the chance, as each new block becomes the head, that the chain
        reorganises one or two blocks deep (``feeslab.devnet._reorg``); the ``newHeads``
        subscriptions announce the new branch's blocks as a real node does. 0 (default): never.
        Blocks are then answered without the encoded-answer caches (they may change).
    history : {"all", "postmerge"}
        Which history the node serves, as geth's ``--history.chain`` (EIP-4444): with
        ``"postmerge"`` bodies, uncles and receipts below each chain's merge answer 4444 while
        headers stay served (``Devnet.set_history``); set before the server listens.

    Returns
    -------
    DevnetHandle

    Raises
    ------
    ValueError
        ``reorgs`` outside [0, 1], or given without ``block_time``.
    """
    from feeslab.devnet.ipfs import IpfsNode
    from feeslab.devnet.wallet import check_allowed_origins

    _check_host(host, allow_remote)
    allowed_origins = check_allowed_origins(wallet_allow_origin)
    chains = build_chains(seed, block_time=block_time, height=height)
    options: dict[str, Any] = {}
    if reorgs:
        from feeslab.devnet import rpc
        from feeslab.devnet._reorg import ReorgingChain
        from feeslab.devnet.chain import ChainSet

        if block_time is None or not 0 < reorgs <= 1:
            raise ValueError(f"reorgs={reorgs!r} needs block_time and a chance in (0, 1]")
        chains = ChainSet(tuple(ReorgingChain(c, seed, reorgs) for c in chains))
        options["dispatch"] = rpc.dispatch  # the encoded caches hold blocks that never change
    devnet = Devnet(
        seed=seed,
        chains=chains,
        credentials=Credentials(
            api_key or secrets.token_hex(16), api_key_secret or secrets.token_hex(16)
        ),
        ledger=CreditLedger(daily_credits, credits_per_second),
        block_time=block_time,
        height=height,
        latency_ms=latency_ms,
        wallet_user=wallet_user,
        ipfs=IpfsNode.open(blockstore),
        wallet_allow_origins=allowed_origins,
        **options,
    )
    devnet.set_history(history)
    if not read_timeout > 0:
        raise ValueError(f"read_timeout must be > 0 seconds, not {read_timeout!r}")
    handle = serve(
        devnet, host=host, port=port, allow_remote=allow_remote, read_timeout=read_timeout
    )
    if warm:
        threading.Thread(
            target=_warm, args=(devnet.chains,), name="devnet-warm", daemon=True
        ).start()
    return handle


def _warm(chains: Any) -> None:
    for chain in chains:
        chain.warm()

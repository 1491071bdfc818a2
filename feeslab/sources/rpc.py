"""The JSON-RPC service (or any node) as a source of frames, and the one place it is built.

:class:`RpcSource` binds the node client (``feeslab.fetch.node.NodeClient``: cache, ledger,
chunks), the Gas API client when there is one, and what every frame's ``attrs`` say: the
chain, its :class:`~feeslab.protocol.chainspec.ChainSpec` and the source's label. The datasets
(``feeslab.datasets``) build the calls and parse the answers; this module knows nothing about
any one dataset.

:func:`open_node` builds the whole client stack (transport, pacing, ledger, node client, Gas
API client) from a :class:`NodeSpec`, a frozen and picklable description of one node:
``connect()`` (``feeslab.connection``) makes one from its options, and a cluster's driver hands
one to its workers (``feeslab.cluster.jobs``), which open it paced by the cluster's bucket.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import pandas as pd

from feeslab._json import JsonValue
from feeslab._redact import register_secrets
from feeslab.errors import ConfigError, HistoryPruned
from feeslab.fetch.cache import MISSING
from feeslab.fetch.core import GOVERNOR_HEADROOM, CreditGovernor, Governor
from feeslab.fetch.credits import (
    Budget,
    CreditLedger,
    Plan,
    PlanLine,
    ask_devnet_credits_per_second,
)
from feeslab.fetch.gas import GasClient
from feeslab.fetch.node import NodeClient, block_of
from feeslab.fetch.transport import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_CONCURRENCY,
    HTTPTransport,
    RpcCall,
    RpcResult,
)
from feeslab.fetch.ws import WebSocketTransport
from feeslab.frames.io import frame_from_bytes, frame_to_bytes
from feeslab.protocol.chainspec import ChainSpec, with_chain
from feeslab.protocol.costs import method_cost
from feeslab.sources.base import GAS_API, JSON_RPC, SourceBase

__all__ = ["DEVNET_CLIENT", "HISTORY_PROBE", "NodeSpec", "RpcSource", "SharedBucket",
           "history_plan", "open_node", "open_transport", "websocket_root",
           "websocket_url"]  # fmt: skip

DEVNET_CLIENT = "feeslab-devnet/"  # how a devnet's web3_clientVersion begins
# a devnet pruned as geth's --history.chain says so, and its chain's cutoff, in its version
# ("feeslab-devnet/0.1.0/history-postmerge-164999"; feeslab.devnet.rpc.pruning): zero cost
_DEVNET_HISTORY = re.compile(r"/history-(?P<mode>[a-z]+)-(?P<cutoff>\d+)$")

HISTORY_PROBE = RpcCall("eth_getBlockByNumber", ["earliest", False])
"""How a node's cutoff is learnt, in one small call: geth answers ``earliest`` with the first
block whose body it serves (eth/api_backend.go ``BlockByNumber``: ``EarliestBlockNumber`` is
``HistoryPruningCutoff()``), a node keeping all history with its genesis block."""


class RpcSource(SourceBase):
    """A node reached over JSON-RPC, with the Gas API of its service when it has one.

    Parameters
    ----------
    node : NodeClient
        The node client (its ledger counts every credit).
    gas : GasClient, optional
        The Gas API client (the service and devnets; not ``connect(rpc_url=)``).
    open_gas : callable, optional
        Makes the Gas API client on first use instead (``open_node``): a Lab that never asks
        the Gas API holds no thread for it.
    devnet : bool, optional
        Whether the node is a feeslab devnet, when known (the embedded devnet; a cluster's
        worker, told by its driver); None: asked once (``web3_clientVersion``), so that a
        devnet reached by URL is labelled one too.
    any_node : bool
        True for ``connect(rpc_url=)``: another node, not the service.
    history_cutoff : int, optional
        The first block whose body, uncles, receipts and logs the node serves (0: all), when
        known (the embedded devnet); None: learnt when a fetch first needs it, from a
        devnet's version for free, else with one small call (:data:`HISTORY_PROBE`).
    spec : NodeSpec, optional
        What it was opened from (:func:`open_node`): what a cluster's workers open, so that
        they reach the node as this source does. None for a source built by hand.
    governor : Governor, optional
        What paces its transport (given to the transport at construction), for
        :meth:`paced_at`.
    """

    def __init__(
        self, node: NodeClient, *, gas: GasClient | None = None,
        open_gas: Callable[[], GasClient] | None = None,
        devnet: bool | None = None, any_node: bool = False, history_cutoff: int | None = None,
        spec: NodeSpec | None = None, governor: Governor | None = None,
    ) -> None:
        self.node = node
        self.node_spec = spec
        self._governor = governor
        self._gas = gas
        self._open_gas = open_gas
        self._gas_lock = threading.Lock()
        self.any_node = any_node
        self._devnet = devnet  # asked once when None, then kept
        self._chain_id: int | None = None
        self._spec: tuple[ChainSpec | None] | None = None
        self._cutoff = history_cutoff  # learnt once when None
        self._pending: tuple[int, int, str] | None = None  # a range to check (guard_history)
        self.history_probes = 0  # HISTORY_PROBE calls sent (plans count them)

    def __repr__(self) -> str:
        return f"<RpcSource {self.node!r}>"

    def paced_at(self, timeout: float | None = 5.0) -> float | None:
        """The plan's rate its requests are paced at [credits/s] (its spec's, or a devnet's
        own once told: waited for at most ``timeout`` [s]); None when unpaced."""
        governor = self._governor
        if governor is None:
            return None
        governor.settle(timeout=timeout)
        return governor.ceiling / GOVERNOR_HEADROOM

    def offers(self) -> frozenset[str]:
        """JSON-RPC, and the Gas API where the service has one (``feeslab.sources.base``)."""
        has_gas = self._gas is not None or self._open_gas is not None
        return frozenset({JSON_RPC, GAS_API} if has_gas else {JSON_RPC})

    @property
    def gas(self) -> GasClient | None:
        """The Gas API client (made on first use), or None where there is none."""
        if self._gas is None and self._open_gas is not None:
            with self._gas_lock:
                if self._gas is None:
                    self._gas = self._open_gas()
        return self._gas

    @property
    def progress(self) -> bool:
        """Whether long fetches show a bar (the connection's setting)."""
        return self.node.progress

    @property
    def credits(self) -> CreditLedger:
        """The ledger of every credit spent (and every call answered from the cache)."""
        return self.node.ledger

    # -- what the frames' attrs say -----------------------------------------------------------

    @property
    def is_devnet(self) -> bool:
        """Whether the node is a feeslab devnet (its client version says so; asked once)."""
        if self._devnet is None:
            self._read_version(self.node.request("web3_clientVersion", []))
        assert self._devnet is not None
        return self._devnet

    def _read_version(self, version: object) -> None:
        """Whether the node is a devnet, and a devnet's history cutoff, from its version."""
        text = str(version)
        self._devnet = text.startswith(DEVNET_CLIENT)
        if self._devnet and self._cutoff is None:
            said = _DEVNET_HISTORY.search(text)
            self._cutoff = 0 if said is None else int(said["cutoff"])

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
            self._read_version(answers.pop(0).unwrap())
        if ask_chain:
            self._chain_id = int(answers.pop(0).unwrap(), 16)
        self._check_pending()

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
        """Answer ``calls`` in order, through the cache (``NodeClient.run``); a node's 4444
        (``HistoryPruned``) names the block and method of its call."""
        answers = self.node.run(calls, **options)
        for call, answer in zip(calls, answers, strict=True):
            if isinstance(answer.error, HistoryPruned):
                block = block_of(call)
                if block is not None:
                    answer.error.asked(block, method=call.method)
        return answers

    def results(self, calls: Sequence[RpcCall], **options: Any) -> list[Any]:
        """The results of ``calls`` in order; the first error raised."""
        return [answer.unwrap() for answer in self.run(calls, **options)]

    # -- history expiry (EIP-4444) -------------------------------------------------------------

    @property
    def history_known(self) -> bool:
        """Whether the node's history cutoff is known without a call."""
        if self._cutoff is None and self._devnet is None:
            self.prepare()  # a devnet says it in the version the set-up asks anyway
        return self._cutoff is not None

    def history_cutoff(self) -> int:
        """The first block whose body, uncles, receipts and logs the node serves [block]: 0
        for a node keeping all history. Learnt once: a devnet's version says it; any other
        node is asked :data:`HISTORY_PROBE` (one call, 80 credits on the service), after the
        set-up round trip.

        References
        ----------
        .. [1] EIP-4444, "Bound Historical Data in Execution Clients".
        """
        if not self.history_known:
            (answer,) = self.node.prepare([HISTORY_PROBE])
            self.history_probes += 1
            self._cutoff = _cutoff_of(answer)
        assert self._cutoff is not None
        return self._cutoff

    def check_history(self, first: int, stop: int, what: str = "") -> None:
        """Refuse (:class:`~feeslab.errors.HistoryPruned`) blocks ``first`` .. ``stop - 1``
        when their bodies lie below the node's cutoff, before anything of them is sent."""
        cutoff = self.history_cutoff()
        if first < cutoff:
            raise HistoryPruned(first=first, stop=stop, earliest=cutoff, method=what or None)

    @contextlib.contextmanager
    def guard_history(self, first: int, stop: int, what: str = "", *,
                      at_exit: bool = False) -> Iterator[None]:  # fmt: skip
        """Check blocks ``first`` .. ``stop - 1`` against the cutoff (:meth:`check_history`)
        when the fetch inside first sets up (:meth:`prepare`) or enters its budget
        (:meth:`budgeted`): after a budget's refusal, which sends nothing, and before any
        call of the fetch's own; ``at_exit``: at the latest when the block ends (a plan that
        sends nothing)."""
        self._pending = (first, stop, what)
        try:
            yield
            if at_exit:
                self._check_pending()
        finally:
            self._pending = None

    def _check_pending(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            self.check_history(*pending)

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
            cap.check(0 if plan is None else plan, self.credits)
        with self.node.charging(cap):
            if not isinstance(plan, Budget):  # a whole plan refused, or none: nothing left
                self._check_pending()  # to refuse before the fetch's calls (a Budget: its
            yield  # fetch checks more before it sends, and sets up, prepare(), after)

    def close(self) -> None:
        """Close the cache, the transport and the Gas API client."""
        self.node.close()
        self.node.transport.close()
        with self._gas_lock:
            self._open_gas = None  # none made after this
            if self._gas is not None:
                self._gas.close()


def history_plan(probes: int) -> Plan:
    """The plan's line for ``probes`` :data:`HISTORY_PROBE` calls sent while planning."""
    return Plan([PlanLine.of(HISTORY_PROBE.method, probes,
                             note="the node's history cutoff (EIP-4444)")] if probes else [])


def _cutoff_of(answer: RpcResult) -> int:
    """The cutoff a :data:`HISTORY_PROBE` answer says: the ``earliest`` block's number; a node
    refusing even that says its earliest itself (reth) or nothing (then 0: its 4444s will
    come as each call is answered)."""
    if answer.error is not None:
        earliest = getattr(answer.error, "earliest", None)
        return int(earliest) if earliest is not None else 0
    block = answer.result
    if isinstance(block, dict) and isinstance(block.get("number"), str):
        return int(block["number"], 16)
    return 0


# -- the one builder -----------------------------------------------------------------------------


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


class SharedBucket(Governor, Protocol):
    """A pacer shared with other processes (:func:`open_node`'s ``bucket``): a governor told
    what each answer cost."""

    def charge(self, credits: int, booked: int, status: int, calls: dict[str, int], /
               ) -> None: ...  # fmt: skip


def open_node(spec: NodeSpec, *, bucket: SharedBucket | None = None) -> RpcSource:
    """The source ``spec`` describes: its transport (HTTP or WebSocket by the URL's scheme),
    paced at ``spec.credits_per_second``, one ledger for every credit, the node client and the
    Gas API client.

    Parameters
    ----------
    spec : NodeSpec
        Where the node is and how to reach it.
    bucket : optional
        A pacer shared with other processes instead of the transport's own: anything with
        ``CreditGovernor``'s methods and ``charge(credits, booked, status, calls)`` (a
        cluster's, ``feeslab.cluster._governor.ClusterGovernor``). Every batch is booked in
        it, and it is told what each answer cost.

    Returns
    -------
    RpcSource
        Close it (``source.close()``) when done: it holds the transport's threads.
    """
    if bucket is not None and spec.websocket:
        raise ConfigError("a shared bucket paces requests over HTTP(S), not over a WebSocket")
    register_secrets(spec.api_key, spec.api_key_secret)  # masked in logs before any client
    ledger = CreditLedger(priced=spec.priced)
    told = None  # a devnet's own limit, asked while the first requests go
    if spec.devnet_root is not None and spec.api_key and spec.api_key_secret:
        told = ask_devnet_credits_per_second(spec.devnet_root, (spec.api_key, spec.api_key_secret))
    governor: Governor | None = bucket  # every batch booked in the shared bucket
    if bucket is None and spec.credits_per_second:
        own = CreditGovernor(spec.credits_per_second)
        if told is not None:
            own.follow(told)
        governor = own
    transport = open_transport(spec, ledger, bucket=bucket, governor=governor)

    def open_websocket(url: str | None) -> WebSocketTransport:
        ws_url = websocket_url(spec.url) if url is None else url
        if not ws_url.startswith(("ws://", "wss://")):
            raise ConfigError(f"a WebSocket URL starts with ws:// or wss://, not "
                              f"{ws_url.partition(':')[0]!r}")  # fmt: skip
        ws = open_transport(replace(spec, url=ws_url), ledger)
        assert isinstance(ws, WebSocketTransport)  # by the scheme
        return ws

    try:
        known: dict[tuple[str, str], JsonValue] = (  # answers known: not asked
            {} if spec.chain_id is None else {("eth_chainId", "[]"): hex(spec.chain_id)})
        if spec.genesis_hash is not None:  # the identity's genesis, as NodeClient asks it
            known[("eth_getBlockByNumber", json.dumps(["0x0", False]))] = {
                "hash": spec.genesis_hash}
        node = NodeClient(transport, ledger=ledger, cache=spec.cache, progress=spec.progress,
                          identity_suffix=spec.identity_suffix, known=known,
                          head=spec.head, open_websocket=open_websocket)  # fmt: skip
    except BaseException:
        transport.close()
        raise
    open_gas = None
    gas_url, api_key = spec.gas_url, spec.api_key
    if gas_url is not None and api_key:
        def open_gas() -> GasClient:
            return GasClient(base_url=gas_url, api_key=api_key,
                             api_key_secret=spec.api_key_secret, ledger=ledger)  # fmt: skip

    return RpcSource(node, open_gas=open_gas, devnet=spec.devnet, any_node=spec.any_node,
                     history_cutoff=spec.history_cutoff, spec=spec, governor=governor)  # fmt: skip


def open_transport(spec: NodeSpec, ledger: CreditLedger, *, bucket: SharedBucket | None = None,
                   governor: Governor | None = None) -> HTTPTransport | WebSocketTransport:
    """The transport ``spec`` describes (HTTP or WebSocket by the URL's scheme), paced by
    ``governor`` (default: the shared ``bucket``, else its own at ``spec.credits_per_second``)
    and booking every answer in ``ledger``; with ``bucket`` (HTTP only), each answer's cost
    told to that shared pacer. The node's own transport (:func:`open_node`) and the WebSocket
    a watch subscribes on (``NodeClient.open_websocket``) are made here."""
    if governor is None:
        governor = bucket if bucket is not None else (
            CreditGovernor(spec.credits_per_second) if spec.credits_per_second else None)
    options: dict[str, Any] = dict(url=spec.url, max_batch=spec.max_batch,
                                   max_concurrency=spec.max_concurrency,
                                   governor=governor)  # fmt: skip
    if bucket is None:
        options["ledger"] = ledger  # the one count of credits
    else:
        def charged(calls: Sequence[RpcCall], status: int) -> None:
            credits = ledger.record_request(calls, status)  # priced by the ledger, once
            methods = Counter(c.method for c in calls)
            booked = sum(method_cost(m) * n for m, n in methods.items())
            bucket.charge(credits, booked, status, dict(methods))

        options["on_response"] = charged
    return (WebSocketTransport if spec.websocket else HTTPTransport)(**options)


def websocket_url(url: str) -> str:
    """The WebSocket twin of a node URL: ``https://h/v3/K`` -> ``wss://h/ws/v3/K`` (the
    service's and a devnet's layout); another node's URL just changes scheme. The one place
    this rule is written (``connect(websocket=True)`` and a watch use it).

    Raises
    ------
    ConfigError
        ``url`` is not an ``http(s)://`` URL.
    """
    if not url.startswith(("http://", "https://")):
        scheme = url.partition(":")[0]
        raise ConfigError(f"websocket=True needs an http(s) or ws(s) node URL, not {scheme!r}")
    root, sep, rest = url.partition("/v3/")
    return websocket_root(root) + "/ws/v3/" + rest if sep else websocket_root(url)


def websocket_root(url: str) -> str:
    """The WebSocket root of an HTTP(S) root: ``http://h:p/`` -> ``ws://h:p``."""
    root = url.rstrip("/")
    for http, ws in (("https://", "wss://"), ("http://", "ws://")):
        if root.startswith(http):
            return ws + root[len(http) :]
    return root

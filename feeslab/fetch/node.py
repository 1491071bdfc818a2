"""The node client: JSON-RPC calls over a transport, through the cache and the ledger.

The calls themselves are built by the datasets (``feeslab.datasets``), which know what each
answer means; this client knows only which block an answer is about, to cache it.

``NodeClient.run(calls)`` is the one path every fetch takes:

1. calls about settled blocks are looked up in the on-disk cache (free; booked as cached);
2. the rest go to the transport in chunks (for progress), and each batch's settled answers are
   written to the cache as that batch's answer arrives, one transaction per batch — an
   interrupted fetch (``KeyboardInterrupt``, a crash, even ``SIGKILL``, HTTP 402) keeps
   everything already received, and running it again pays only for the batches that were in
   flight (a transport without ``on_batch``, the WebSocket one, writes once per chunk);
3. answers come back in call order, each a result or an ``RpcError`` (one failed item never
   loses the others).

Streaming scans take another path (``submit``): a few parts of a scan in flight at once on
the transport's loop, past the answer cache, each part's answers turned into frame columns by
the dataset and freed, and whole settled chunks cached as files (``Cache.put_chunks``).
``prepare`` asks what any fetch needs first (the head, the cache's identity) in one round trip.

A block is *settled* when it is at least ``settled_depth`` blocks below the head the client
last saw; only answers about settled blocks are cached (never ``latest`` or ``pending``).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import threading
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Protocol

from feeslab.errors import ConfigError, CreditsExhausted, HistoryPruned, ProtocolError
from feeslab.fetch._gc import gc_paused
from feeslab.fetch.cache import MISSING, Cache, chain_identity, moving_tag
from feeslab.fetch.credits import Budget, CreditLedger
from feeslab.fetch.loop import LoopThread
from feeslab.fetch.transport import OnBatch, RpcCall, RpcResult

if TYPE_CHECKING:
    from feeslab._progress import ProgressBar
    from feeslab.fetch.ws import WebSocketTransport

DEFAULT_SETTLED_DEPTH = 64  # two epochs: finalized on a proof-of-stake chain
# calls per chunk between progress updates: big enough that the transport keeps all its
# connections busy (the cache is written per batch, as each arrives, within a chunk)
DEFAULT_CHUNK = 8_000

Reduce = Callable[[RpcResult], RpcResult]
"""``reduce(answer)``: what stands for one answer from its arrival on (see ``NodeClient.run``)."""


class Transport(Protocol):
    """What a ``NodeClient`` sends through: ``HTTPTransport`` or ``WebSocketTransport``.

    One whose ``handle_request`` also takes ``on_batch=`` (an ``OnBatch``, the HTTP one) has
    each batch's answers cached as that batch arrives.
    """

    def handle_request(self, calls: Sequence[RpcCall]) -> list[RpcResult]: ...
    def charging(self, budget: Budget | None) -> contextlib.AbstractContextManager[None]: ...
    def close(self) -> None: ...

    @property
    def asynchronous(self) -> AsyncTransport:
        """Its async twin, for code on its loop thread (``feeslab.fetch.heads``)."""
        ...

    @property
    def loop_thread(self) -> LoopThread: ...


class AsyncTransport(Protocol):
    """An async JSON-RPC transport: ``AsyncHTTPTransport`` or ``AsyncWebSocketTransport``."""

    async def handle_request(self, calls: Sequence[RpcCall]) -> list[RpcResult]: ...


# which positional param names the block an answer is about
_BLOCK_PARAM = {
    "eth_getBlockByNumber": 0,
    "eth_getUncleByBlockNumberAndIndex": 0,
    "eth_getUncleCountByBlockNumber": 0,
    "eth_feeHistory": 1,
    "eth_getStorageAt": 2,
    "eth_call": 1,
    "eth_estimateGas": 1,
}


def quantity(value: int) -> str:
    """A JSON-RPC hex quantity."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"a block number or quantity must be a non-negative int, not {value!r}")
    return hex(value)


def block_of(call: RpcCall) -> int | None:
    """The block number a call's answer is about, when its params name one."""
    index = _BLOCK_PARAM.get(call.method)
    if index is None or len(call.params) <= index:
        return None
    value = call.params[index]
    if isinstance(value, str) and value.startswith("0x"):
        try:
            return int(value, 16)
        except ValueError:
            return None
    return None


class NodeClient:
    """JSON-RPC calls to one chain's node, cached and booked.

    Parameters
    ----------
    transport : HTTPTransport or WebSocketTransport
        Where calls go (its ``on_response`` should feed ``ledger``).
    ledger : CreditLedger
        Books cached answers (free) next to what the transport charges.
    cache : bool or str or path, optional
        ``True`` (default): the user cache directory; a path: that directory; ``False``: none.
    settled_depth : int
        Blocks below the head that count as settled [blocks].
    progress : bool
        Show tqdm progress bars on long fetches.
    chunk : int
        Calls sent between cache writes and progress updates.
    known : mapping, optional
        Answers the caller already has, by ``(method, json.dumps(params))``: given for those
        calls, on every path a call is sent by, without sending them (nothing charged or
        booked). A cluster's workers are handed what the driver asked once (the chain id,
        the client version) this way.
    head : int, optional
        The latest block number, when the caller knows it already (then not asked).
    open_websocket : callable, optional
        ``open_websocket(url)``: a new WebSocket transport to this node (at ``url``, or when
        None at the WebSocket twin of the node's URL), built as this client's transport was
        and booked in ``ledger`` (``feeslab.sources.rpc.open_node`` gives it); see
        :meth:`open_websocket`.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        ledger: CreditLedger,
        cache: bool | str | os.PathLike[str] = True,
        settled_depth: int = DEFAULT_SETTLED_DEPTH,
        progress: bool = True,
        chunk: int = DEFAULT_CHUNK,
        identity_suffix: str | None = None,
        known: Mapping[tuple[str, str], object] | None = None,
        head: int | None = None,
        open_websocket: Callable[[str | None], WebSocketTransport] | None = None,
    ) -> None:
        self.transport = transport
        self._open_websocket = open_websocket
        self.identity_suffix = identity_suffix
        self.ledger = ledger
        self.settled_depth = settled_depth
        self.progress = progress
        self.chunk = chunk
        self._cache_option = cache
        self._cache: Cache | None = None
        self._identity: str | None = None
        self._head: int | None = head
        self._known = dict(known or {})
        self._lock = threading.Lock()
        try:
            self._per_batch = "on_batch" in inspect.signature(transport.handle_request).parameters
        except (AttributeError, TypeError, ValueError):
            self._per_batch = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.transport!r}>"

    def _needs_cache(self, calls: Sequence[RpcCall]) -> bool:
        return self._cache_option is not False and any(
            block_of(c) is not None and moving_tag(c.params) is None for c in calls
        )

    def _open_cache(self) -> Cache | None:
        """The cache, once the identity is known (``None`` when caching is off)."""
        if self._cache is None and self._cache_option is not False:
            assert self._identity is not None
            with self._lock:
                if self._cache is None:
                    option = self._cache_option
                    path = None if isinstance(option, bool) else option  # False never gets here
                    self._cache = Cache(self._identity, path=path)
        return self._cache

    @staticmethod
    def _identity_calls() -> list[RpcCall]:
        return [RpcCall("eth_chainId", []), RpcCall("eth_getBlockByNumber", ["0x0", False])]

    def _learn_identity(self, answers: Sequence[RpcResult]) -> str:
        chain_id, genesis = answers
        if isinstance(genesis.error, HistoryPruned):
            genesis = self._header_identity()
        if not isinstance(genesis.unwrap(), dict):
            raise ProtocolError("the node did not return its genesis block")
        identity = chain_identity(int(chain_id.unwrap(), 16), genesis.result["hash"])
        if self.identity_suffix:  # e.g. a devnet's simulation digest: a changed simulator
            identity = f"{identity}-{self.identity_suffix}"  # must not read older answers
        self._identity = identity
        return identity

    def _header_identity(self) -> RpcResult:
        """The block whose hash keys the cache, from a node that expired the genesis body
        (EIP-4444: geth's ``--history.chain postmerge`` answers it 4444, headers still served):
        the genesis header (``eth_getHeaderByNumber``, geth's and reth's header-only call), or,
        from a node without that method, the earliest block it serves whole (geth's
        ``earliest`` is its cutoff block). Either pins the chain; the second keys the cache
        apart from an unpruned node's.

        References
        ----------
        .. [1] EIP-4444, "Bound Historical Data in Execution Clients".
        .. [2] ethereum/go-ethereum internal/ethapi/api.go (``GetHeaderByNumber``) and
           eth/api_backend.go (``HeaderByNumber``, ``BlockByNumber``) at
           02b73d4ea7181464175e0a6cbecc0a3a2655a562.
        """
        (header,) = self._send([RpcCall("eth_getHeaderByNumber", ["0x0"])])
        if header.ok and isinstance(header.result, dict):
            return header
        (earliest,) = self._send([RpcCall("eth_getBlockByNumber", ["earliest", False])])
        return earliest

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()

    def open_websocket(self, url: str | None = None) -> WebSocketTransport:
        """A new WebSocket to this node, for subscriptions (``feeslab.watch`` follows the head
        on it): at ``url``, or by default at the WebSocket twin of the node's URL (the
        service's and a devnet's layout). Its calls are booked in this client's ledger; the
        caller closes it.

        Raises
        ------
        ConfigError
            This client was made without a way to open one (not by ``open_node``), or
            ``url`` is not a ``ws(s)://`` URL.
        """
        if self._open_websocket is None:
            raise ConfigError("this node client cannot open a WebSocket: pass its URL to a "
                              "feeslab.fetch.ws.WebSocketTransport")  # fmt: skip
        return self._open_websocket(url)

    @property
    def caching(self) -> bool:
        """Whether answers and chunks about settled blocks are cached."""
        return self._cache_option is not False

    @property
    def cache_open(self) -> bool:
        """Whether the cache can be read without a request (its chain's identity known)."""
        return self.caching and self._identity is not None

    def prepare(self, extra: Sequence[RpcCall] = ()) -> list[RpcResult]:
        """What a fetch needs before it starts, in one round trip: the head and (with a cache)
        the identity when not yet known, together with ``extra`` calls; ``extra``'s answers.
        """
        calls: list[RpcCall] = []
        ask_head = self._head is None
        if ask_head:
            calls.append(RpcCall("eth_blockNumber", []))
        ask_identity = self.caching and self._identity is None
        if ask_identity:
            calls.extend(self._identity_calls())
        calls.extend(extra)
        if not calls:
            return []
        answers = self._send(calls)
        if ask_head:
            self._head = int(answers.pop(0).unwrap(), 16)
        if ask_identity:
            self._learn_identity(answers[:2])
            del answers[:2]
        return answers

    def submit(self, calls: Sequence[RpcCall], *, on_batch: OnBatch | None = None,
               cached: bool = False, reduce: Reduce | None = None) -> Future[list[RpcResult]]:
        """Send ``calls`` past the answer cache; a future of their answers in call order. Over
        HTTP they are started on the transport's loop and this returns at once; through the
        cache (``cached``: as ``run`` does), or over WebSocket, they are answered here, in the
        caller's thread, before it returns. As each batch's answers
        arrive, ``reduce`` (see ``run``) replaces each of them by what the future is to hold,
        and then ``on_batch(calls, results)`` is given those (not for cached calls, nor over
        WebSocket): a callback that holds them keeps nothing the future does not.

        For streaming scans: they keep a few parts in flight, so that the transport's
        connections stay busy across part boundaries, and cache whole chunks of results
        (``Cache.put_chunks``) rather than answers.
        """
        calls = list(calls)
        submit = getattr(self.transport, "submit", None)
        if not cached and self._per_batch and submit is not None:
            # sent from the loop thread, started now: no thread of the scan's own
            return self._submitted(calls, _then(on_batch, reduce), submit)
        done: Future[list[RpcResult]] = Future()
        try:
            if cached:
                done.set_result(self.run(calls, progress=False, reduce=reduce))
            elif self._per_batch:
                done.set_result(self._send(calls, _then(on_batch, reduce)))
            else:
                done.set_result(self._send_reduced(calls, reduce))
        except BaseException as exc:
            done.set_exception(exc)
        return done

    def _submitted(
        self,
        calls: list[RpcCall],
        on_batch: OnBatch | None,
        submit: Callable[..., Future[list[RpcResult]]],
    ) -> Future[list[RpcResult]]:
        """``calls`` submitted to the transport, answers the client already ``known`` filled
        in (as ``_send`` does)."""
        if not self._known:
            sent: Future[list[RpcResult]] = submit(calls, on_batch=on_batch)
            return sent
        keys = [(c.method, json.dumps(c.params)) for c in calls]
        todo = [c for c, k in zip(calls, keys, strict=True) if k not in self._known]
        done: Future[list[RpcResult]] = Future()
        done.set_running_or_notify_cancel()

        def fill(answers: list[RpcResult]) -> None:
            sent = iter(answers)
            known = self._known
            done.set_result([RpcResult(c, result=known[k]) if k in known else next(sent)
                             for c, k in zip(calls, keys, strict=True)])  # fmt: skip

        if not todo:
            fill([])
            return done

        def land(part: Future[list[RpcResult]]) -> None:
            try:
                fill(part.result())
            except BaseException as exc:
                done.set_exception(exc)

        submit(todo, on_batch=on_batch).add_done_callback(land)
        return done

    def _send_reduced(self, calls: Sequence[RpcCall], reduce: Reduce | None) -> list[RpcResult]:
        answers = self._send(calls)
        return answers if reduce is None else [reduce(a) for a in answers]

    def _steps(
        self,
        calls: Sequence[RpcCall],
        progress: bool | None,
        description: str,
        on_chunk: Callable[[int], None] | None,
        reduce: Reduce | None = None,
    ) -> Generator[tuple[list[RpcCall], OnBatch | None], list[RpcResult], list[RpcResult]]:
        """One fetch: yields each chunk of calls to send with the ``on_batch`` callback to send
        them with (None: none needed), answered with their results; returns every answer in
        call order (each through ``reduce``). The driver has opened the cache and asked the
        head first when ``_needs_cache(calls)``."""
        answers: list[RpcResult | None] = [None] * len(calls)
        # the per-call checks cost time on big fetches: skip them when there is no cache
        use_cache = self._cache_option is not False
        cacheable = [
            i for i, c in enumerate(calls)
            if use_cache and block_of(c) is not None and moving_tag(c.params) is None
        ]
        cache = self._open_cache() if cacheable else None
        if cache is not None:
            found = cache.get_many([(calls[i].method, calls[i].params) for i in cacheable])
            for i, value in zip(cacheable, found, strict=True):
                if value is not MISSING:
                    answer = RpcResult(calls[i], result=value)
                    answers[i] = answer if reduce is None else reduce(answer)
                    self.ledger.record(calls[i].method, cached=True)
        todo = [i for i, a in enumerate(answers) if a is None]
        show = self.progress if progress is None else progress
        bar = _progress(len(calls), len(calls) - len(todo), description, show, self.ledger)
        per_batch = cache is not None and self._per_batch
        # with a per-batch transport the answers are reduced as each batch arrives (stored
        # first): no chunk's decoded answers wait for its last batch
        reduced = reduce is None or self._per_batch
        try:
            for start in range(0, len(todo), self.chunk):
                part = todo[start : start + self.chunk]
                kept = [0]  # answers of this chunk already stored, batch by batch
                on_batch = _then(None, reduce) if self._per_batch else None
                if per_batch:
                    assert cache is not None
                    settled = self.settled_below()

                    def store(
                        sent: Sequence[RpcCall],
                        results: list[RpcResult],
                        cache: Cache = cache,
                        settled: int = settled,
                        kept: list[int] = kept,
                    ) -> list[RpcResult] | None:
                        self._store(cache, zip(sent, results, strict=True), settled)
                        with self._lock:
                            kept[0] += len(results)
                        return None if reduce is None else [reduce(a) for a in results]

                    on_batch = store

                try:
                    results = yield [calls[i] for i in part], on_batch
                except CreditsExhausted as exc:
                    # everything answered so far is already in the cache
                    exc.answers_kept = len(calls) - len(todo) + start + kept[0]
                    raise
                for i, result in zip(part, results, strict=True):
                    answers[i] = result
                if cache is not None and not per_batch:
                    self._store(cache, [(calls[i], answers[i]) for i in part])
                if not reduced:
                    for i in part:
                        answers[i] = reduce(answers[i])  # type: ignore[arg-type,misc]
                if bar is not None:
                    bar.update(len(part))
                    bar.set_postfix(credits=f"{self.ledger.spent:,}")
                if on_chunk is not None:
                    on_chunk(len(part))
        finally:
            if bar is not None:
                bar.close()
        return answers  # type: ignore[return-value]

    def _store(
        self,
        cache: Cache,
        pairs: Iterable[tuple[RpcCall, RpcResult | None]],
        settled: int | None = None,
    ) -> None:
        """Write the settled answers among ``(call, answer)`` pairs: one transaction."""
        if settled is None:
            settled = self.settled_below()
        items = [
            (call.method, call.params, answer.result, block)
            for call, answer in pairs
            if answer is not None and answer.ok and (block := block_of(call)) is not None
        ]
        if items:
            cache.put_many(items, settled_below=settled)


    # -- identity, head and cache ------------------------------------------------------------

    @property
    def identity(self) -> str:
        """``<chain id>-<genesis hash>``: what the cache is keyed by."""
        if self._identity is None:
            self._learn_identity(self._send(self._identity_calls()))
        assert self._identity is not None
        return self._identity

    @property
    def chain_id(self) -> int:
        return int(self.identity.split("-", 1)[0])

    @property
    def cache(self) -> Cache | None:
        if self._cache_option is not False:
            self.identity  # noqa: B018 - learn it (one request) before opening the cache
        return self._open_cache()

    def head(self, *, refresh: bool = False) -> int:
        """The latest block number (asked once, then remembered unless ``refresh``)."""
        if self._head is None or refresh:
            self._head = int(self.request("eth_blockNumber", []), 16)
        return self._head

    def settled_below(self) -> int:
        """The first block number not considered settled."""
        return max(0, self.head() - self.settled_depth + 1)

    # -- the one path -------------------------------------------------------------------------

    def request(self, method: str, params: Iterable[object]) -> Any:
        """One call: its result, or raise its ``RpcError``."""
        return self.run([RpcCall(method, list(params))], progress=False)[0].unwrap()

    def run(
        self,
        calls: Sequence[RpcCall],
        *,
        progress: bool | None = None,
        description: str = "fetching",
        on_chunk: Callable[[int], None] | None = None,
        reduce: Reduce | None = None,
    ) -> list[RpcResult]:
        """Answer ``calls`` in order, from the cache where possible (see the module notes).

        ``reduce(answer) -> answer``, if given, replaces each answer as soon as it is there
        (a batch's as that batch arrives, after it is cached), e.g. a header by the fields a
        frame keeps: the decoded batches are freed at once, not when the last one comes.
        """
        with gc_paused():
            if self._needs_cache(calls):
                self.cache  # noqa: B018 - the identity and the head, before the steps need them
                self.head()
            steps = self._steps(calls, progress, description, on_chunk, reduce)
            sent: list[RpcResult] | None = None
            error: BaseException | None = None
            while True:
                try:
                    chunk, on_batch = steps.throw(error) if error else steps.send(sent)  # type: ignore[arg-type]
                except StopIteration as finished:
                    answers: list[RpcResult] = finished.value  # what _steps returns
                    return answers
                sent, error = None, None
                try:
                    sent = self._send(chunk, on_batch)
                except BaseException as exc:  # raised where the steps wait: they keep count
                    error = exc

    def charging(self, budget: Budget | None) -> contextlib.AbstractContextManager[None]:
        """Charge ``budget`` with each request's price before it is sent, while inside:
        ``BudgetExceeded`` instead of sending past it (cached answers cost nothing). Nested,
        every enclosing budget is charged too. The transport charges (``RpcCore.before_send``,
        the one place): each request as it goes, a refused one refunded."""
        return self.transport.charging(budget)

    def _send(self, calls: Sequence[RpcCall], on_batch: OnBatch | None = None) -> list[RpcResult]:
        if not self._known:
            return self._post(calls, on_batch)
        keys = [(c.method, json.dumps(c.params)) for c in calls]
        todo = [c for c, k in zip(calls, keys, strict=True) if k not in self._known]
        sent = iter(self._post(todo, on_batch) if todo else [])
        return [RpcResult(c, result=self._known[k]) if k in self._known else next(sent)
                for c, k in zip(calls, keys, strict=True)]  # fmt: skip

    def _post(self, calls: Sequence[RpcCall], on_batch: OnBatch | None = None) -> list[RpcResult]:
        if on_batch is None:
            return self.transport.handle_request(calls)
        # given only when _per_batch: this transport's handle_request takes on_batch
        return self.transport.handle_request(calls, on_batch=on_batch)  # type: ignore[call-arg]


def _then(on_batch: OnBatch | None, reduce: Reduce | None) -> OnBatch | None:
    """An ``on_batch`` giving each answer through ``reduce`` to stand for it, then handing the
    batch so reduced to ``on_batch`` (if any): one holding the raw answers instead kept a
    second copy of the batch alive, which made a first uncle scan with a cache 1.1x slower."""
    if reduce is None:
        return on_batch

    def each(sent: Sequence[RpcCall], results: list[RpcResult]) -> list[RpcResult]:
        reduced = [reduce(answer) for answer in results]
        if on_batch is not None:
            on_batch(sent, reduced)
        return reduced

    return each


def _progress(
    total: int, done: int, description: str, show: bool, ledger: CreditLedger
) -> ProgressBar | None:
    if not show or total - done < DEFAULT_CHUNK // 2:  # short fetches need no bar
        return None
    from feeslab._progress import progress_bar  # a widget in Jupyter, text on stderr elsewhere

    return progress_bar(total=total, initial=done, description=description, unit="call")

"""The node client: typed JSON-RPC methods over a transport, through the cache and the ledger.

``NodeClient.run(calls)`` is the one path every fetch takes:

1. calls about settled blocks are looked up in the on-disk cache (free; booked as cached);
2. the rest go to the transport in chunks, so a long fetch shows progress and writes each
   chunk's settled answers to the cache before sending the next — an interrupted fetch
   (``KeyboardInterrupt``, a crash, HTTP 402) keeps everything already fetched, and running it
   again sends only what is missing;
3. answers come back in call order, each a result or an ``RpcError`` (one failed item never
   loses the others).

A block is *settled* when it is at least ``settled_depth`` blocks below the head the client
last saw; only answers about settled blocks are cached (never ``latest`` or ``pending``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from feeslab.fetch._gc import gc_paused
from feeslab.fetch.cache import MISSING, Cache, chain_identity, moving_tag
from feeslab.fetch.credits import CreditLedger
from feeslab.fetch.errors import CreditsExhausted, ProtocolError
from feeslab.fetch.transport import HTTPTransport, RpcCall, RpcResult

DEFAULT_SETTLED_DEPTH = 64  # two epochs: finalized on a proof-of-stake chain
# calls per chunk between cache writes and progress updates: big enough that the
# transport keeps all its connections busy, small enough that an interruption loses little
DEFAULT_CHUNK = 8_000

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
    """Typed node methods for one chain, cached and booked.

    Parameters
    ----------
    transport : HTTPTransport
        Where calls go (its ``on_response`` should feed ``ledger``).
    ledger : CreditLedger
        Books cached answers (free) next to what the transport charges.
    cache : bool or str or path, optional
        ``True`` (default): the user cache directory; a path: that directory; ``False``: none.
    settled_depth : int
        Blocks below the head that count as settled [blocks].
    progress : bool
        Show tqdm progress bars on long fetches.
    """

    def __init__(
        self,
        transport: HTTPTransport,
        *,
        ledger: CreditLedger,
        cache: Any = True,
        settled_depth: int = DEFAULT_SETTLED_DEPTH,
        progress: bool = True,
        chunk: int = DEFAULT_CHUNK,
    ) -> None:
        self.transport = transport
        self.ledger = ledger
        self.settled_depth = settled_depth
        self.progress = progress
        self.chunk = chunk
        self._cache_option = cache
        self._cache: Cache | None = None
        self._identity: str | None = None
        self._head: int | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<NodeClient {self.transport!r}>"

    # -- identity, head and cache ------------------------------------------------------------

    @property
    def identity(self) -> str:
        """``<chain id>-<genesis hash>``: what the cache is keyed by."""
        if self._identity is None:
            chain_id, genesis = self._send(
                [RpcCall("eth_chainId", []), RpcCall("eth_getBlockByNumber", ["0x0", False])]
            )
            if not isinstance(genesis.unwrap(), dict):
                raise ProtocolError("the node did not return its genesis block")
            self._identity = chain_identity(int(chain_id.unwrap(), 16), genesis.result["hash"])
        return self._identity

    @property
    def chain_id(self) -> int:
        return int(self.identity.split("-", 1)[0])

    @property
    def cache(self) -> Cache | None:
        if self._cache is None and self._cache_option is not False:
            with self._lock:
                if self._cache is None:
                    path = None if self._cache_option is True else self._cache_option
                    self._cache = Cache(self.identity, path=path)
        return self._cache

    def head(self, *, refresh: bool = False) -> int:
        """The latest block number (asked once, then remembered unless ``refresh``)."""
        if self._head is None or refresh:
            self._head = int(self.request("eth_blockNumber", []), 16)
        return self._head

    def settled_below(self) -> int:
        """The first block number not considered settled."""
        return max(0, self.head() - self.settled_depth + 1)

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()

    # -- the one path -------------------------------------------------------------------------

    def request(self, method: str, params: list) -> Any:
        """One call: its result, or raise its ``RpcError``."""
        return self.run([RpcCall(method, list(params))], progress=False)[0].unwrap()

    def run(
        self,
        calls: Sequence[RpcCall],
        *,
        progress: bool | None = None,
        description: str = "fetching",
        on_chunk: Callable[[int], None] | None = None,
    ) -> list[RpcResult]:
        """Answer ``calls`` in order, from the cache where possible (see the module notes)."""
        with gc_paused():
            return self._run(calls, progress, description, on_chunk)

    def _run(
        self,
        calls: Sequence[RpcCall],
        progress: bool | None,
        description: str,
        on_chunk: Callable[[int], None] | None,
    ) -> list[RpcResult]:
        answers: list[RpcResult | None] = [None] * len(calls)
        # the per-call checks cost time on big fetches: skip them when there is no cache
        use_cache = self._cache_option is not False
        cacheable = [
            i for i, c in enumerate(calls)
            if use_cache and block_of(c) is not None and moving_tag(c.params) is None
        ]  # fmt: skip
        cache = self.cache if cacheable else None
        if cache is not None:
            found = cache.get_many([(calls[i].method, calls[i].params) for i in cacheable])
            for i, value in zip(cacheable, found, strict=True):
                if value is not MISSING:
                    answers[i] = RpcResult(calls[i], result=value)
                    self.ledger.record(calls[i].method, cached=True)
        todo = [i for i, a in enumerate(answers) if a is None]
        show = self.progress if progress is None else progress
        bar = _progress(len(calls), len(calls) - len(todo), description, show, self.ledger)
        try:
            for start in range(0, len(todo), self.chunk):
                part = todo[start : start + self.chunk]
                try:
                    results = self._send([calls[i] for i in part])
                except CreditsExhausted as exc:
                    # everything answered so far is already in the cache
                    exc.answers_kept = len(calls) - len(todo) + start
                    raise
                for i, result in zip(part, results, strict=True):
                    answers[i] = result
                if cache is not None:
                    self._store(cache, [(calls[i], answers[i]) for i in part])
                if bar is not None:
                    bar.update(len(part))
                    bar.set_postfix(credits=f"{self.ledger.spent:,}")
                if on_chunk is not None:
                    on_chunk(len(part))
        finally:
            if bar is not None:
                bar.close()
        return answers  # type: ignore[return-value]

    def _send(self, calls: Sequence[RpcCall]) -> list[RpcResult]:
        return self.transport.handle_request(calls)

    def _store(self, cache: Cache, pairs: list[tuple[RpcCall, RpcResult | None]]) -> None:
        settled = self.settled_below()
        items = [
            (call.method, call.params, answer.result, block_of(call))
            for call, answer in pairs
            if answer is not None and answer.ok and block_of(call) is not None
        ]
        if items:
            cache.put_many(items, settled_below=settled)

    # -- typed methods -----------------------------------------------------------------------

    def blocks(self, numbers: Sequence[int], **options: Any) -> list[dict | None]:
        """Block headers (``eth_getBlockByNumber`` without transactions), in order."""
        calls = [RpcCall("eth_getBlockByNumber", [quantity(n), False]) for n in numbers]
        return [r.unwrap() for r in self.run(calls, description="blocks", **options)]

    def uncles(self, wanted: Sequence[tuple[int, int]], **options: Any) -> list[dict | None]:
        """Uncle headers for (block number, index) pairs, in order."""
        calls = [
            RpcCall("eth_getUncleByBlockNumberAndIndex", [quantity(n), quantity(i)])
            for n, i in wanted
        ]
        return [r.unwrap() for r in self.run(calls, description="uncles", **options)]

    def fee_history(
        self, count: int, newest: int, percentiles: Sequence[float] = (), **options: Any
    ) -> dict:
        """One ``eth_feeHistory`` answer (at most 1,024 blocks ending at ``newest``)."""
        call = RpcCall("eth_feeHistory", [quantity(count), quantity(newest), list(percentiles)])
        return self.run([call], progress=False, **options)[0].unwrap()

    def storage_at(self, address: str, slot: int, block: int) -> int:
        """The storage word at ``slot`` of ``address`` after ``block``."""
        return self.storage_series(address, slot, [block], progress=False)[0]

    def storage_series(
        self, address: str, slot: int, blocks: Sequence[int], **options: Any
    ) -> list[int]:
        """The word at ``slot`` of ``address`` after each of ``blocks``, as ints."""
        calls = [
            RpcCall("eth_getStorageAt", [address, quantity(slot), quantity(b)]) for b in blocks
        ]
        return [int(r.unwrap(), 16) for r in self.run(calls, description="storage", **options)]


def _progress(total: int, done: int, description: str, show: bool, ledger: CreditLedger):
    if not show or total - done < DEFAULT_CHUNK // 2:  # short fetches need no bar
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=done, desc=description, unit="call", leave=False)

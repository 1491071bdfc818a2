"""The chain's head, followed: new canonical blocks in order, never one lost or counted twice.

::

    follower = HeadsFollower(node_transport, websocket=ws_transport, window=128)
    for batch in follower.batches():      # blocking; on the shared loop thread underneath
        batch.cut_from, batch.headers     # drop the rows from cut_from on, then add these
    follower.stop()                       # from any thread: the iteration ends

:class:`AsyncHeadsFollower` runs on the blocking clients' one loop thread
(``feeslab.fetch.loop``), as the transports it calls do: it awaits their async twins, and
:class:`HeadsFollower` is its blocking twin, whose ``batches()`` the caller iterates on a
thread of its own (``feeslab.watch`` does, so that its frame and a user's ``on_block`` never
run on the shared loop).

1. **Prefill**: the head (``eth_blockNumber``), then the headers of the last ``window`` blocks
   and the ``extra`` calls for them (the watch's ``eth_feeHistory``) in one batched request:
   the first batch holds the window before any new head arrives.
2. **Follow**: over a WebSocket, ``eth_subscribe("newHeads")``, then a catch-up of what came
   while no subscription was open; without one, a catch-up every ``poll`` seconds. The heads
   that arrived while the caller handled a batch come together in the next one
   (``AsyncSubscription.ready``): a fast chain queues no round trip per block.

Each header is checked against the window held (``number -> hash``):

- held with the same hash: announced again, ignored;
- past the next number expected: the blocks between are fetched first (``eth_getBlockByNumber``);
- held with another hash: a **reorg**. The batch's ``cut_from`` says from which number the rows
  held are replaced and :class:`Reorg` records each replaced block; a header whose
  ``parentHash`` is not the block before's hash has its parent fetched by hash first, as far
  back as the branches differ.

A dropped WebSocket (the subscription ends with ``TransportError``) is opened again under the
fetch layer's one retry policy (``feeslab.fetch.retry.drive``), then the head is asked and every
block missed meanwhile fetched (``drops`` counts these). Each step is applied to the window
only once all its calls are answered, so a step retried after a failure applies once. A 402
ends the iteration with ``CreditsExhausted``, as every fetch does: the calls go through the
caller's transports.

References
----------
.. [1] Ethereum execution APIs, ``eth_subscribe`` ``newHeads``, ``eth_getBlockByNumber``,
   ``eth_getBlockByHash``, https://github.com/ethereum/execution-apis
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from feeslab.errors import ConfigError, FeeslabError, TransportError
from feeslab.fetch.jsonrpc import RpcCall
from feeslab.fetch.loop import Blocking, LoopThread
from feeslab.fetch.node import AsyncTransport
from feeslab.fetch.retry import Retry, Retryable, drive
from feeslab.fetch.ws import AsyncSubscription, AsyncWebSocketTransport, WebSocketTransport

__all__ = ["AsyncHeadsFollower", "HeadsBatch", "HeadsFollower", "Reorg"]

_T = TypeVar("_T")
Header = Mapping[str, Any]
"""A decoded header: a ``newHeads`` notification or an ``eth_getBlockByNumber`` result."""
Extra = Callable[[int, int], list[RpcCall]]
"""``extra(first, last)``: calls sent for blocks ``first`` .. ``last`` with each batch."""
UNSUBSCRIBE_WAIT = 2.0  # [s] for eth_unsubscribe's answer on a socket busy with heads


class OnLoop(Protocol):
    """A blocking transport (``HTTPTransport``, ``WebSocketTransport``): the async twin it
    runs on its loop thread."""

    @property
    def asynchronous(self) -> AsyncTransport: ...

    @property
    def loop_thread(self) -> LoopThread: ...


@dataclass(frozen=True)
class Reorg:
    """One block replaced by another of the same number.

    Attributes
    ----------
    block_number : int
    old_hash, new_hash : str
    """

    block_number: int
    old_hash: str
    new_hash: str


@dataclass(frozen=True)
class HeadsBatch:
    """What changed at the head: drop the rows from ``cut_from`` on (when not None), then add
    ``headers``.

    Attributes
    ----------
    headers : list of dict
        The new canonical headers, in block order, consecutive.
    reorged : list of bool
        Per header, whether it replaced a block of its number held before.
    cut_from : int or None
        The first block number whose row is replaced (a reorg), or from which the window
        restarts (a gap wider than it); None: nothing is replaced.
    reorgs : list of Reorg
        Each block replaced.
    extra : list
        The results of the ``extra`` calls covering ``headers`` (a failed one raises).
    received_ns : int
        When the oldest header of the batch was read off the socket, or asked for
        (``time.monotonic_ns()``) [ns].
    prefill : bool
        The first batch: the window's blocks as the follower started, none of them new.
    """

    headers: list[Header]
    reorged: list[bool]
    cut_from: int | None
    reorgs: list[Reorg]
    extra: list[Any]
    received_ns: int
    prefill: bool = False


def _number(header: Header) -> int:
    value = header["number"]
    return int(value, 16) if isinstance(value, str) else int(value)


class _Stopped(Exception):
    """Raised inside the follower when ``stop()`` was called."""


@dataclass
class _Step:
    """One step's changes to the window, applied once all its calls are answered."""

    held: dict[int, str]  # number -> hash, ascending: a copy of the window
    fresh: dict[int, tuple[Header, bool]] = field(default_factory=dict)  # new rows, ascending
    cut_from: int | None = None
    reorgs: list[Reorg] = field(default_factory=list)

    def drop_from(self, number: int) -> None:
        for n in [n for n in self.held if n >= number]:
            del self.held[n]
        for n in [n for n in self.fresh if n >= number]:
            del self.fresh[n]
        self.cut_from = number if self.cut_from is None else min(self.cut_from, number)


class AsyncHeadsFollower:
    """Follows a chain's head on the loop it runs on; see the module's notes.

    Parameters
    ----------
    node : async transport
        Where headers, parents and the ``extra`` calls are asked (past any cache: live
        blocks are not settled).
    websocket : AsyncWebSocketTransport, optional
        Where ``newHeads`` is subscribed to; None: poll ``node`` every ``poll`` seconds.
    window : int
        Blocks held [blocks]: the prefill asks this many, and a gap wider than it restarts it.
    extra : callable, optional
        ``extra(first, last)``: calls sent for each batch's blocks (their results in
        :attr:`HeadsBatch.extra`).
    poll : float
        Seconds between two looks at the head when polling [s].
    retry : Retry, optional
        How a lost connection or a failed step is tried again (default the fetch layer's).
    """

    def __init__(
        self,
        node: AsyncTransport,
        websocket: AsyncWebSocketTransport | None = None,
        *,
        window: int,
        extra: Extra | None = None,
        poll: float = 1.0,
        retry: Retry | None = None,
    ) -> None:
        if window < 1 or not poll > 0:
            raise ConfigError(f"window must be >= 1 block and poll > 0 s, not {window!r}, "
                              f"{poll!r}")  # fmt: skip
        self._node = node
        self._ws = websocket
        self.window = window
        self._extra = extra
        self.poll = poll
        self._retry = retry or Retry()
        self._held: dict[int, str] = {}
        self._stopping = asyncio.Event()
        self._sub: AsyncSubscription | None = None
        self.drops = 0
        """Times the WebSocket was lost and the subscription opened again."""

    def stop(self) -> None:
        """End the iteration (call on the follower's loop): the wait in progress ends."""
        self._stopping.set()

    async def aclose(self) -> None:
        self.stop()

    async def batches(self) -> AsyncGenerator[HeadsBatch, None]:
        """The prefill, then every change at the head, until :meth:`stop` (then it ends) or an
        error that the retry policy gives up on (then it raises)."""
        try:
            yield await self._driven(self._prefill)
            ws = self._ws
            while ws is None:  # polling
                await self._until_stopped(asyncio.sleep(self.poll))
                batch = await self._driven(self._catch_up)
                if batch is not None:
                    yield batch
            while True:
                self._sub = sub = await self._driven(functools.partial(ws.subscribe, "newHeads"))
                batch = await self._driven(self._catch_up)  # what came while unsubscribed
                if batch is not None:
                    yield batch
                try:
                    while True:
                        header = await self._until_stopped(sub.__anext__())
                        received = sub.received_ns or time.monotonic_ns()  # off the socket
                        headers = [header, *sub.ready()]
                        batch = await self._driven(
                            functools.partial(self._ingest, headers, received))
                        if batch is not None:
                            yield batch
                except (TransportError, StopAsyncIteration):
                    pass  # the connection dropped (or a step failed past its retries): again
                await self._unsubscribe()  # a live one (a failed step's) is not left open
                self.drops += 1
        except _Stopped:
            return
        finally:
            await self._unsubscribe()

    async def _unsubscribe(self) -> None:
        sub, self._sub = self._sub, None
        if sub is None:
            return
        try:
            await asyncio.wait_for(sub.aclose(), UNSUBSCRIBE_WAIT)
        except (TimeoutError, FeeslabError):
            sub.detach()

    # -- waiting, stoppably ------------------------------------------------------------------

    async def _until_stopped(self, awaitable: Awaitable[_T]) -> _T:
        """``await awaitable``, unless :meth:`stop` comes first (then it is cancelled)."""
        if self._stopping.is_set():
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise _Stopped
        task = asyncio.ensure_future(awaitable)
        stopper = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        raise _Stopped

    async def _driven(self, step: Callable[[], Awaitable[_T]]) -> _T:
        """``await step()`` under the retry policy: a ``TransportError`` is tried again with
        backoff (any other error ends the follower)."""

        async def attempt() -> _T:
            try:
                return await step()
            except TransportError as exc:
                raise Retryable(exc) from None

        return await self._until_stopped(drive(attempt, self._retry, asyncio.sleep))

    # -- steps -------------------------------------------------------------------------------

    async def _results(self, calls: list[RpcCall]) -> list[Any]:
        return [answer.unwrap() for answer in await self._node.handle_request(calls)]

    async def _prefill(self) -> HeadsBatch:
        """The window's blocks as the follower starts (the first catch-up, held nothing)."""
        batch = await self._catch_up(prefill=True)
        assert batch is not None  # a prefill's batch is given even when empty
        return batch

    async def _catch_up(self, prefill: bool = False) -> HeadsBatch | None:
        """Every block from the last one held (asked again: it may have been replaced) up to
        the head, with the ``extra`` calls for them, in one request after the head's."""
        (head_hex,) = await self._results([RpcCall("eth_blockNumber", [])])
        asked = time.monotonic_ns()
        head = int(head_hex, 16)
        last = next(reversed(self._held), None)
        low = max(0, head - self.window + 1) if last is None else max(last, head - self.window + 1)
        if low > head:
            return None
        calls = [RpcCall("eth_getBlockByNumber", [hex(n), False]) for n in range(low, head + 1)]
        extra = [] if self._extra is None else self._extra(low, head)
        answers = await self._results(calls + extra)
        headers = [h for h in answers[:len(calls)] if h is not None]
        return await self._ingest(headers, asked, extra=(low, head, answers[len(calls):]),
                                  prefill=prefill)  # fmt: skip

    async def _ingest(self, headers: Sequence[Header], received_ns: int, *,
                      extra: tuple[int, int, list[Any]] | None = None,
                      prefill: bool = False) -> HeadsBatch | None:  # fmt: skip
        """``headers`` checked against the window (see the module's notes) and, once every
        call they needed is answered, applied to it: the batch of what changed."""
        step = _Step(dict(self._held))
        for header in sorted(headers, key=_number):
            await self._accept(header, step)
        # the window's last blocks: held and fresh beyond it are not kept
        for n in list(step.held)[:-self.window]:
            del step.held[n]
        fresh = {n: row for n, row in step.fresh.items() if n in step.held}
        if not fresh and step.cut_from is None and not prefill:
            self._held = step.held
            return None
        results: list[Any] = []
        if fresh:
            first, last = next(iter(fresh)), next(reversed(fresh))
            if extra is not None and extra[0] <= first and last <= extra[1]:
                results = extra[2]
            elif self._extra is not None:
                results = await self._results(self._extra(first, last))
        self._held = step.held
        return HeadsBatch(headers=[h for h, _ in fresh.values()],
                          reorged=[r for _, r in fresh.values()], cut_from=step.cut_from,
                          reorgs=step.reorgs, extra=results, received_ns=received_ns,
                          prefill=prefill)  # fmt: skip

    async def _accept(self, header: Header, step: _Step) -> None:
        number, block_hash = _number(header), str(header["hash"])
        held = step.held
        replaced = None
        if held:
            first, last = next(iter(held)), next(reversed(held))
            if number < first:
                return  # older than the window
            old = held.get(number)
            if old is not None:
                if old == block_hash:
                    return  # announced again: held already
                replaced = old
                step.drop_from(number)
            elif number > last + 1:
                await self._backfill(last + 1, number - 1, step)
            before = held.get(number - 1)
            if before is not None and before != str(header["parentHash"]):
                # the block before is on another branch: take this block's parent first
                parent = str(header["parentHash"])
                (ancestor,) = await self._results([RpcCall("eth_getBlockByHash", [parent, False])])
                if ancestor is None:  # replaced again meanwhile: the canonical one by number
                    (ancestor,) = await self._results(
                        [RpcCall("eth_getBlockByNumber", [hex(number - 1), False])])
                if ancestor is not None:
                    await self._accept(ancestor, step)
        held[number] = block_hash
        step.fresh[number] = (header, replaced is not None)
        if replaced is not None:
            step.reorgs.append(Reorg(number, replaced, block_hash))

    async def _backfill(self, low: int, high: int, step: _Step) -> None:
        """The blocks ``low`` .. ``high`` before a header past the next one expected: at most
        the window's worth (a wider gap restarts the window)."""
        if high - low + 1 >= self.window:
            step.drop_from(next(iter(step.held)))
            low = high - self.window + 2
        calls = [RpcCall("eth_getBlockByNumber", [hex(n), False]) for n in range(low, high + 1)]
        for header in await self._results(calls):
            if header is not None:
                await self._accept(header, step)


class HeadsFollower(Blocking):
    """The blocking twin of :class:`AsyncHeadsFollower`, on the blocking clients' shared loop
    thread: iterate :meth:`batches` on a thread of your own; :meth:`stop` from any thread.

    Parameters
    ----------
    node : HTTPTransport or WebSocketTransport
        Where headers and the ``extra`` calls go (its async twin is awaited on the loop).
    websocket : WebSocketTransport, optional
        Where ``newHeads`` is subscribed to; None: polling. The caller closes it.
    **options
        ``window``, ``extra``, ``poll``, ``retry``: as for :class:`AsyncHeadsFollower`.
    """

    _inner: AsyncHeadsFollower

    def __init__(self, node: OnLoop, websocket: WebSocketTransport | None = None, *,
                 window: int, extra: Extra | None = None, poll: float = 1.0,
                 retry: Retry | None = None) -> None:  # fmt: skip
        def make() -> AsyncHeadsFollower:
            return AsyncHeadsFollower(
                node.asynchronous, None if websocket is None else websocket.asynchronous,
                window=window, extra=extra, poll=poll, retry=retry)  # fmt: skip

        super().__init__(make)
        for client in (node, websocket):
            if client is not None and client.loop_thread is not self._loop:
                self.close()
                raise TransportError("the follower's transports run on another loop thread "
                                     "(closed, or made in another process)")  # fmt: skip

    @property
    def drops(self) -> int:
        """Times the WebSocket was lost and the subscription opened again."""
        return self._inner.drops

    def batches(self) -> Generator[HeadsBatch, None, None]:
        """The prefill, then every change at the head, until :meth:`stop` (see
        ``AsyncHeadsFollower.batches``), each step run on the loop thread; ``close()`` it to
        end early (the follower unsubscribes)."""
        return self._loop.iterate(self._inner.batches())

    def stop(self) -> None:
        """End the iteration, from any thread (the wait in progress ends)."""
        if not self._loop.closed:
            self._loop.loop.call_soon_threadsafe(self._inner.stop)

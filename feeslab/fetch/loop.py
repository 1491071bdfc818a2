"""The one way the blocking clients run: their async twin on one event-loop thread.

Every blocking client (``HTTPTransport``, ``WebSocketTransport``, ``WalletClient``,
``GasClient``, ``IpfsClient``) is an async client driven by a ``LoopThread``: the coroutines
run on that thread's loop, never on the caller's, so a blocking call works inside a running
Jupyter kernel (where the caller's thread already runs a loop) and from many threads at once.

The blocking clients of a process share one such thread (``LoopThread.shared``), started by
the first client and stopped when the last one closes: an idle ``Lab`` holds one thread, not
one per client (issue 27 asked for at most three). The async core under it does its own I/O
(``httpx.AsyncClient``, ``websockets``), so the caller's thread and this one are the only two
layers (docs/architecture.md, "Concurrency").
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import threading
from collections.abc import AsyncGenerator, Callable, Coroutine, Generator, Iterator
from typing import (
    Concatenate,
    ParamSpec,
    Protocol,
    Self,
    TypeAlias,
    TypeVar,
    TypeVarTuple,
    cast,
    overload,
)

from feeslab.errors import TransportError

__all__ = ["Blocking", "LoopThread", "blocking"]

_T = TypeVar("_T")
_P = ParamSpec("_P")
_Ts = TypeVarTuple("_Ts")
_Inner = TypeVar("_Inner")

_Coro: TypeAlias = Coroutine[object, None, _T]
"""A coroutine as asyncio drives it: it yields futures to the loop, is sent None, returns a
``_T`` (every ``async def``'s coroutine is one)."""


class _Closing(Protocol):
    """An async client: what ``Blocking`` runs and closes."""

    async def aclose(self) -> None: ...


class LoopThread:
    """A private event loop on a daemon thread: runs coroutines for blocking callers.

    Parameters
    ----------
    name : str
        The thread's name (shown in tracebacks and profilers).
    """

    _shared: LoopThread | None = None
    _users = 0
    _lock = threading.Lock()

    def __init__(self, name: str = "feeslab-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()
        self._pid = os.getpid()

    @classmethod
    def shared(cls) -> LoopThread:
        """The process's loop thread for blocking clients, started if none runs; give it back
        with ``release`` (it stops when its last user does)."""
        with cls._lock:
            loop = cls._shared
            # a forked child inherits the object but not its thread: it starts its own
            if loop is None or loop.closed or loop._pid != os.getpid():
                loop = cls._shared = LoopThread("feeslab-loop")
                cls._users = 0
            cls._users += 1
            return loop

    def release(self) -> None:
        """One user of the shared loop is done: the last one stops it (``stop`` otherwise)."""
        cls = type(self)
        with cls._lock:
            if cls._shared is self:
                cls._users -= 1
                if cls._users > 0:
                    return
                cls._shared = None
        self.stop()

    @property
    def closed(self) -> bool:
        return self.loop.is_closed()

    def run(self, coro: _Coro[_T]) -> _T:
        """Run ``coro`` on the loop and wait for its result (its exception is raised here)."""
        if self.loop.is_closed():
            coro.close()
            raise TransportError("this client is closed")
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError(f"a blocking call from its own loop thread {self.thread.name}")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def call(self, function: Callable[[*_Ts], _T], *args: *_Ts) -> _T:
        """``function(*args)`` run on the loop thread (for objects bound to its loop)."""

        async def call() -> _T:
            return function(*args)

        return self.run(call())

    def iterate(self, stream: AsyncGenerator[_T, None]) -> Generator[_T, None, None]:
        """The items of an async generator, one blocking step at a time; closed at the end."""
        try:
            while True:
                try:
                    yield self.run(stream.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            if not self.loop.is_closed():
                self.run(stream.aclose())

    def stop(self) -> None:
        """Stop the loop and join its thread (idempotent)."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


class Blocking:
    """The base of every blocking client: its async twin (``_inner``) run on the process's
    shared ``LoopThread``, which it gives back on closing.

    Parameters
    ----------
    factory : callable
        Builds the async client; it runs on the loop thread, so the client's asyncio objects
        belong to that loop.
    """

    _inner: _Closing

    def __init__(self, factory: Callable[[], _Closing]) -> None:
        self._loop = LoopThread.shared()
        self._closed = False
        try:
            self._inner = self._loop.call(factory)
        except BaseException:
            self._closed = True
            self._loop.release()
            raise

    @property
    def loop_thread(self) -> LoopThread:
        """The loop thread this client's async twin runs on (the process's shared one)."""
        return self._loop

    def _run(self, coro: _Coro[_T]) -> _T:
        if self._closed:
            coro.close()
            raise TransportError("this client is closed")
        return self._loop.run(coro)

    def close(self) -> None:
        """Close the connection(s); the last client of the shared loop thread stops it."""
        if self._closed:
            return
        self._closed = True
        try:
            if not self._loop.closed:
                self._loop.run(self._inner.aclose())
        finally:
            self._loop.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@overload
def blocking(
    method: Callable[Concatenate[_Inner, _P], AsyncGenerator[_T, None]],
) -> Callable[Concatenate[Blocking, _P], Iterator[_T]]: ...
@overload
def blocking(
    method: Callable[Concatenate[_Inner, _P], _Coro[_T]],
) -> Callable[Concatenate[Blocking, _P], _T]: ...
def blocking(
    method: Callable[..., AsyncGenerator[object, None] | _Coro[object]],
) -> Callable[..., object]:
    """A blocking method of a ``Blocking`` client from its async twin's ``method`` (a
    coroutine function, or an async generator function that becomes a plain iterator)."""
    # the overloads above type it for callers; which of the two a method is, is told at run time
    if inspect.isasyncgenfunction(method):

        @functools.wraps(method)
        def iterating(self: Blocking, *args: object, **kwargs: object) -> Iterator[object]:
            return self._loop.iterate(method(self._inner, *args, **kwargs))

        return iterating

    coroutine_function = cast(Callable[..., _Coro[object]], method)  # not a generator's: above

    @functools.wraps(method)
    def waiting(self: Blocking, *args: object, **kwargs: object) -> object:
        return self._run(coroutine_function(self._inner, *args, **kwargs))

    return waiting

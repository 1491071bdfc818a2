"""The one way the blocking clients run: their async twin on a private event-loop thread.

Every blocking client (``HTTPTransport``, ``WebSocketTransport``, ``WalletClient``,
``IpfsClient``) is an async client driven by a ``LoopThread``: the coroutines run on the
thread's own loop, never on the caller's, so a blocking call works inside a running Jupyter
kernel (where the caller's thread already runs a loop) and from many threads at once.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterator
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

    def __init__(self, name: str = "feeslab-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

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

    def iterate(self, stream: AsyncGenerator[_T, None]) -> Iterator[_T]:
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
    """The base of every blocking client: its async twin (``_inner``) run on a private
    ``LoopThread``, closed with it.

    Parameters
    ----------
    factory : callable
        Builds the async client; it runs on the loop thread, so the client's asyncio objects
        belong to that loop.
    name : str
        The loop thread's name.
    """

    _inner: _Closing

    def __init__(self, factory: Callable[[], _Closing], name: str) -> None:
        self._loop = LoopThread(name)
        try:
            self._inner = self._loop.call(factory)
        except BaseException:
            self._loop.stop()
            raise

    def _run(self, coro: _Coro[_T]) -> _T:
        return self._loop.run(coro)

    def close(self) -> None:
        """Close the connection(s) and stop the loop thread."""
        if not self._loop.closed:
            try:
                self._loop.run(self._inner.aclose())
            finally:
                self._loop.stop()

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

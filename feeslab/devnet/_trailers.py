"""The devnet's HTTP/1.1 protocol: uvicorn's h11 protocol with response trailers and read
timeouts.

**Read timeouts.** uvicorn times out only the idle wait between two requests
(``timeout_keep_alive``): a connection that never sends a request, or sends its headers or
body a byte at a time (slowloris), stays open for ever. :class:`TrailerH11Protocol` closes a
connection whose request headers are not complete ``read_timeout`` seconds after it began
waiting for them (the connection opened, or the last answer went out), and one whose body
stalls for ``read_timeout`` seconds between two pieces (a large upload that keeps moving is
not cut off). The app then sees a disconnect. WebSocket connections, once upgraded, are not
timed here (websockets pings them).

**Trailers**: the ASGI ``http.response.trailers`` extension, which uvicorn's h11 protocol does
not implement.

kubo reports an error that happens after a streaming answer has begun (status 200 already
sent) in an ``X-Stream-Error`` trailer, after the last chunk of the chunked body. An app
that wants trailers checks ``"http.response.trailers" in scope["extensions"]``, sends
``http.response.start`` with ``"trailers": True``, its body messages, and then one
``http.response.trailers`` message (``headers``, ``more_trailers: False``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

TRAILERS = "http.response.trailers"


class _TrailerCycle(RequestResponseCycle):
    """A request/response cycle that can end its chunked body with trailer fields."""

    _trailers_announced = False
    _body_done = False

    async def send(self, message: Any) -> None:
        kind = message["type"]
        if kind == "http.response.start" and not self.response_started:
            self._trailers_announced = bool(message.get("trailers"))
            await super().send(message)
        elif kind == "http.response.body" and self._trailers_announced:
            if self._body_done:
                raise RuntimeError("http.response.body after the last body message")
            self._body_done = not message.get("more_body", False)
            # the message ends only with the trailers
            await super().send({**message, "more_body": True})
        elif kind == TRAILERS and self._trailers_announced and self._body_done:
            if message.get("more_trailers", False):
                raise RuntimeError("more_trailers is not supported")
            await self._end_with(list(message.get("headers", [])))
        else:
            await super().send(message)

    async def _end_with(self, trailers: list[tuple[bytes, bytes]]) -> None:
        if self.flow.write_paused and not self.disconnected:
            await self.flow.drain()
        if self.disconnected or self.response_complete:
            return
        if self.conn.their_http_version != b"1.1":
            trailers = []  # an HTTP/1.0 peer gets no chunked body, hence no trailers
        self.response_complete = True
        self.message_event.set()
        self.transport.write(self.conn.send(h11.EndOfMessage(headers=trailers)))
        # what RequestResponseCycle.send does once a response is complete
        if self.conn.our_state is h11.MUST_CLOSE or not self.keep_alive:
            self.conn.send(h11.ConnectionClosed())
            self.transport.close()
        self.on_response()


DEFAULT_READ_TIMEOUT = 10.0
"""Seconds a client has to send a request's headers, and the longest pause in its body [s]."""


class TrailerH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with ``http.response.trailers`` and read timeouts (pass as
    ``Config(http=...)``; ``functools.partial(TrailerH11Protocol, read_timeout=...)`` sets
    the timeout)."""

    def __init__(self, *args: Any, read_timeout: float = DEFAULT_READ_TIMEOUT, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.read_timeout = read_timeout
        self._read_timer: asyncio.TimerHandle | None = None

    # -- read timeouts ---------------------------------------------------------------------

    def _arm(self) -> None:
        self._disarm()
        self._read_timer = self.loop.call_later(self.read_timeout, self._read_timed_out)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _reading_body(self) -> bool:
        cycle = self.cycle
        return cycle is not None and cycle.more_body and not cycle.response_complete

    def _read_timed_out(self) -> None:
        self._read_timer = None
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete and not self._reading_body():
            return  # being answered: the app's time, not the client's
        what = "body" if self._reading_body() else "request headers"
        self.logger.info("closed a connection whose %s took over %g s", what, self.read_timeout)
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()  # the headers of the first request are due

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        # armed first: a pipelined request that super() starts now disarms it again
        if not self.transport.is_closing():
            self._arm()  # the next request's headers are due
        super().on_response_complete()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._reading_body():
            self._arm()  # the body moves: it may take its time

    def handle_events(self) -> None:
        before = self.cycle
        super().handle_events()
        cycle = self.cycle
        if self.transport.get_protocol() is not self:
            self._disarm()  # upgraded to a WebSocket
            return
        if cycle is not before and cycle is not None:
            # a request's headers just arrived: time its body, or nothing while it is served
            if self._reading_body():
                self._arm()
            else:
                self._disarm()
        elif cycle is not None and not self._reading_body() and not cycle.response_complete:
            self._disarm()  # the body is complete; the app is answering
        # a request just read: its task exists but has not run yet, so the cycle can still
        # become a trailer-capable one and its scope can announce the extension
        if cycle is not before and cycle is not None and type(cycle) is RequestResponseCycle:
            cycle.__class__ = _TrailerCycle
            cycle.scope.setdefault("extensions", {})[TRAILERS] = {}

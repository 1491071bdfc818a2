"""HTTP/1.1 response trailers for the devnet: the ASGI ``http.response.trailers`` extension on
uvicorn's h11 protocol, which does not implement it.

kubo reports an error that happens after a streaming answer has begun (status 200 already
sent) in an ``X-Stream-Error`` trailer, after the last chunk of the chunked body. An app
that wants trailers checks ``"http.response.trailers" in scope["extensions"]``, sends
``http.response.start`` with ``"trailers": True``, its body messages, and then one
``http.response.trailers`` message (``headers``, ``more_trailers: False``).
"""

from __future__ import annotations

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


class TrailerH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with ``http.response.trailers`` (pass as ``Config(http=...)``)."""

    def handle_events(self) -> None:
        before = self.cycle
        super().handle_events()
        cycle = self.cycle
        # a request just read: its task exists but has not run yet, so the cycle can still
        # become a trailer-capable one and its scope can announce the extension
        if cycle is not before and cycle is not None and type(cycle) is RequestResponseCycle:
            cycle.__class__ = _TrailerCycle
            cycle.scope.setdefault("extensions", {})[TRAILERS] = {}

"""A client of the multichain wallet API (CAIP-25): sessions, invocations and notifications.

::

    with WalletClient(url=f"{devnet.ws_url}/wallet") as wallet:
        session = wallet.create({"eip155:1": Scope(methods=["eth_blockNumber", "eth_subscribe"],
                                                   notifications=["eth_subscription"])})
        head = int(wallet.invoke("eip155:1", "eth_blockNumber"), 16)
        wallet.subscribe("eip155:1")
        for note in wallet.notifications(count=3, timeout=10):
            print(note.scope, int(note.result["number"], 16))
        wallet.revoke()

The wallet speaks JSON-RPC with params *objects* over one WebSocket; its session belongs to
that connection (no session IDs, interface §2.6), so the client never reconnects behind your
back: once the connection is gone, calls raise ``TransportError`` and a new client must create
a new session. Requests are checked before they are sent (``CaipError`` names the bad field);
the wallet's refusals raise ``WalletError`` (``WalletUnauthorized`` for 4100,
``UserRejected`` for 4001), and errors of a method invoked through it raise the node's own
``RpcError``/``RevertError``.

Notifications (``wallet_notify`` and ``wallet_sessionChanged``, no ids) arrive as
:class:`WalletNotification` values, in order, to both an iterator (:meth:`notifications`) and
callbacks (:meth:`on_notification`); up to 10,000 wait for the iterator, the oldest dropped
beyond that. ``AsyncWalletClient`` is the ``asyncio`` twin; ``WalletClient`` runs it on a
private event-loop thread, so it works inside a running Jupyter kernel.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from feeslab.caip import ChainId, Scope, ScopeKey, Session, parse_scopes
from feeslab.errors import (
    CaipError,
    FeeslabError,
    NotificationTimeout,
    TransportError,
    WalletError,
)
from feeslab.fetch.core import DEFAULT_TIMEOUT, secrets_of
from feeslab.fetch.loop import Blocking
from feeslab.fetch.ws import AsyncWebSocketTransport

__all__ = ["AsyncWalletClient", "WalletClient", "WalletNotification"]

log = logging.getLogger(__name__)

MAX_WAITING = 10_000  # notifications kept for the iterator
DEFAULT_NOTIFICATION_TIMEOUT = 30.0
_T = TypeVar("_T")
_CLOSED = object()  # queued when the connection ends


@dataclass(frozen=True)
class WalletNotification:
    """One notification from the wallet.

    Attributes
    ----------
    method : str
        ``"wallet_notify"`` or ``"wallet_sessionChanged"``.
    scope : ChainId or None
        ``wallet_notify``: the chain the event happened on.
    name : str or None
        ``wallet_notify``: the event's own method, e.g. ``"eth_subscription"``.
    params : object
        ``wallet_notify``: the event's params (``{"subscription", "result"}`` for a
        subscription); otherwise the notification's params.
    session : Session or None
        ``wallet_sessionChanged``: the full updated session scopes.
    raw : dict
        The message as received.
    """

    method: str
    scope: ChainId | None = None
    name: str | None = None
    params: object = None
    session: Session | None = None
    raw: Mapping[str, object] = field(default_factory=dict, repr=False)

    @property
    def subscription(self) -> str | None:
        """The subscription id of an ``eth_subscription`` event."""
        return self.params.get("subscription") if isinstance(self.params, Mapping) else None

    @property
    def result(self) -> Any:
        """The payload of an ``eth_subscription`` event (a block header for ``newHeads``)."""
        return self.params.get("result") if isinstance(self.params, Mapping) else None

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> WalletNotification:
        """Read a notification message.

        Raises
        ------
        CaipError
            When its scope or session scopes are malformed.
        """
        method = str(message.get("method"))
        params = message.get("params")
        if method == "wallet_notify" and isinstance(params, Mapping):
            inner = params.get("notification")
            inner = inner if isinstance(inner, Mapping) else {}
            scope = params.get("scope")  # not a string: ChainId.parse's CaipError
            return cls(
                method,
                scope=ChainId.parse(scope, field="wallet_notify.scope"),  # type: ignore[arg-type]
                name=inner.get("method"),
                params=inner.get("params"),
                raw=message,
            )
        if method == "wallet_sessionChanged":
            session = Session.from_json(params, field="wallet_sessionChanged")
            return cls(method, params=params, session=session, raw=message)
        return cls(method, params=params, raw=message)


def _scopes_json(
    scopes: Mapping[ScopeKey | str, Scope | Mapping[str, object]] | None, name: str
) -> dict[str, dict[str, list[str]]]:
    parsed = parse_scopes(scopes, field=name)
    return {str(key): scope.to_json() for key, scope in parsed.items()}


class AsyncWalletClient:
    """The multichain wallet API over one WebSocket, for ``asyncio`` code.

    Parameters
    ----------
    url : str
        The wallet's WebSocket, e.g. ``ws://127.0.0.1:PORT/wallet`` on a devnet.
    timeout : float
        Seconds to wait for the connection and for each answer (default 30).
    """

    def __init__(self, *, url: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        # one connection, one session: no batching, no resend, no reconnect
        self._transport = AsyncWebSocketTransport(
            url=url, timeout=timeout, retries=0, max_batch=1,
            on_message=self._received, on_close=self._ended,
        )
        self._secrets = secrets_of(url, None)  # masked in its errors
        # notifications, then (_CLOSED, the error or None) once the connection is gone
        self._queue: asyncio.Queue[WalletNotification | tuple[object, FeeslabError | None]] = (
            asyncio.Queue()
        )
        self._callbacks: list[Callable[[WalletNotification], None]] = []
        self.dropped = 0
        """Notifications dropped because more than 10,000 waited for the iterator."""
        self.session: Session | None = None
        """The session as last known: created, read, or changed by the user."""

    def __repr__(self) -> str:
        return f"<AsyncWalletClient {self._transport.where()}>"

    # -- requests ----------------------------------------------------------------------------

    async def request(self, method: str, params: Mapping[str, object] | None = None) -> Any:
        """Any wallet method with an object of params, unchecked; its result."""
        transport = self._transport
        if transport.opened and not transport.connected:
            raise TransportError(
                "the wallet connection is closed, and its session ended with it: make a new "
                "client and create a new session",
                secrets=self._secrets,
            )
        item = await transport.call_once(method, dict({} if params is None else params))
        if item.get("error") is not None:
            raise WalletError.from_wallet(item["error"], secrets=self._secrets)
        return item.get("result")

    async def create(
        self,
        scopes: Mapping[ScopeKey | str, Scope | Mapping[str, object]] | None = None,
        *,
        properties: Mapping[str, object] | None = None,
        required: Mapping[ScopeKey | str, Scope | Mapping[str, object]] | None = None,
    ) -> Session:
        """``wallet_createSession``: ask for ``scopes`` (sent as ``optionalScopes``).

        Parameters
        ----------
        scopes : dict
            Scope key (``"eip155:1"``, or a namespace with ``references``) -> ``Scope`` or
            scope object.
        properties : dict, optional
            ``sessionProperties`` (e.g. ``{"expiry": "2030-01-01T00:00:00Z"}``).
        required : dict, optional
            ``requiredScopes``; wallets treat them as optional, so prefer ``scopes``.

        Returns
        -------
        Session
            What was granted, which may be less than asked (fewer chains, methods, accounts).

        Raises
        ------
        CaipError
            A malformed scope, before anything is sent.
        WalletError
            5100 (no requested chain is supported), 5302 (bad ``sessionProperties``),
            ``UserRejected`` (4001).
        """
        params: dict[str, object] = {"optionalScopes": _scopes_json(scopes, "scopes")}
        if required:
            params["requiredScopes"] = _scopes_json(required, "required")
        if properties is not None:
            if not isinstance(properties, Mapping):
                raise CaipError("properties", "sessionProperties must be a dict", properties)
            params["sessionProperties"] = dict(properties)
        self.session = Session.from_json(await self.request("wallet_createSession", params))
        return self.session

    async def get(self) -> Session:
        """``wallet_getSession``: the active session (empty when there is none)."""
        self.session = Session.from_json(await self.request("wallet_getSession", {}))
        return self.session

    async def invoke(
        self,
        scope: ScopeKey | str,
        method: str,
        params: Mapping[str, object] | Iterable[object] | None = None,
    ) -> Any:
        """``wallet_invokeMethod``: run ``method`` on a granted ``scope``; its result.

        Reads both answers: the bare result (MetaMask, the devnet) and the interface's
        ``{scope, result: {method, result}}`` (§4.3).

        Parameters
        ----------
        scope : str or ChainId
            A chain of the session, e.g. ``"eip155:1"``.
        method : str
            A method the session granted there.
        params : list or dict, optional
            The method's own params (positional for node methods).

        Raises
        ------
        WalletUnauthorized
            4100: the scope or method is not granted (interface §4.3 rule 2).
        RpcError
            The invoked method's own error (e.g. ``RevertError``).
        """
        chain = ChainId.parse(scope, field="scope")
        if not isinstance(method, str) or not method:
            raise CaipError("method", "must be a method name", method)
        request: dict[str, object] = {"method": method}
        if params is not None:
            request["params"] = params if isinstance(params, Mapping) else list(params)
        answer = await self.request(
            "wallet_invokeMethod", {"scope": str(chain), "request": request}
        )
        inner = answer.get("result") if isinstance(answer, Mapping) else None
        if not isinstance(inner, Mapping) or "method" not in inner or "scope" not in answer:
            return answer  # a wallet that answers the bare result, as MetaMask's extension does
        return inner.get("result")

    async def revoke(self) -> bool:
        """``wallet_revokeSession``: end the session (``True``, also without one)."""
        done = await self.request("wallet_revokeSession", {})
        self.session = Session()
        return bool(done)

    async def subscribe(self, scope: ScopeKey | str, kind: str = "newHeads") -> str:
        """``eth_subscribe(kind)`` through the wallet; events come as ``wallet_notify``."""
        sub_id: str = await self.invoke(scope, "eth_subscribe", [kind])
        return sub_id

    async def unsubscribe(self, scope: ScopeKey | str, subscription: str) -> bool:
        """``eth_unsubscribe`` through the wallet."""
        done: bool = await self.invoke(scope, "eth_unsubscribe", [subscription])
        return done

    # -- notifications -----------------------------------------------------------------------

    def _ended(self, error: FeeslabError | None) -> None:
        self._queue.put_nowait((_CLOSED, error))

    def _received(self, message: dict[str, object]) -> None:
        try:
            note = WalletNotification.from_message(message)
        except CaipError:
            log.warning("dropped a malformed wallet notification", exc_info=True)
            return
        if note.session is not None:
            self.session = note.session
        for callback in list(self._callbacks):
            try:
                callback(note)
            except Exception:  # a user's callback must not stop the reader
                log.exception("a wallet notification callback failed")
        if self._queue.qsize() >= MAX_WAITING:
            self._queue.get_nowait()
            self.dropped += 1
        self._queue.put_nowait(note)

    def on_notification(self, callback: Callable[[WalletNotification], None]) -> Callable[[], None]:
        """Call ``callback(notification)`` for each notification from now on.

        It runs on the client's event loop (the background thread for ``WalletClient``):
        keep it short. Returns a function that removes it.
        """
        self._callbacks.append(callback)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._callbacks.remove(callback)

        return remove

    async def next_notification(
        self, timeout: float | None = DEFAULT_NOTIFICATION_TIMEOUT
    ) -> WalletNotification:
        """The oldest notification not yet taken, waiting up to ``timeout`` [s].

        Raises
        ------
        NotificationTimeout
            None arrived in time.
        TransportError
            The connection is gone (after the notifications it had delivered).
        """
        try:
            item = await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            raise NotificationTimeout(timeout or 0.0) from None
        if isinstance(item, tuple):  # (_CLOSED, error): the only tuple queued
            self._queue.put_nowait(item)  # every later call ends the same way
            raise item[1] or TransportError("the wallet connection was closed")
        return item

    async def notifications(
        self, *, count: int | None = None, timeout: float | None = DEFAULT_NOTIFICATION_TIMEOUT
    ) -> AsyncGenerator[WalletNotification, None]:
        """Notifications in arrival order: ``count`` of them (or until the connection closes),
        each awaited up to ``timeout`` [s] (``NotificationTimeout`` past it)."""
        taken = 0
        while count is None or taken < count:
            try:
                note = await self.next_notification(timeout)
            except NotificationTimeout:
                raise NotificationTimeout(timeout or 0.0, taken) from None
            except TransportError:
                if count is None and self._transport.closing:
                    return
                raise
            taken += 1
            yield note

    # -- closing -----------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the connection (the session ends with it)."""
        await self._transport.close()

    aclose = close

    async def __aenter__(self) -> AsyncWalletClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class WalletClient(Blocking):
    """The multichain wallet API, blocking: the twin of :class:`AsyncWalletClient`.

    The async client runs on the blocking clients' event-loop thread, never on the caller's
    loop, so this works from a Jupyter cell. Options are those of ``AsyncWalletClient``.
    """

    _inner: AsyncWalletClient

    def __init__(self, *, url: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        super().__init__(lambda: AsyncWalletClient(url=url, timeout=timeout))

    def __repr__(self) -> str:
        return repr(self._inner).replace("AsyncWalletClient", "WalletClient")

    @property
    def session(self) -> Session | None:
        """The session as last known: created, read, or changed by the user."""
        return self._inner.session

    @property
    def dropped(self) -> int:
        return self._inner.dropped

    def request(self, method: str, params: Mapping[str, object] | None = None) -> Any:
        """Any wallet method with an object of params, unchecked; its result."""
        return self._run(self._inner.request(method, params))

    def create(
        self,
        scopes: Mapping[ScopeKey | str, Scope | Mapping[str, object]] | None = None,
        *,
        properties: Mapping[str, object] | None = None,
        required: Mapping[ScopeKey | str, Scope | Mapping[str, object]] | None = None,
    ) -> Session:
        """``wallet_createSession`` (see ``AsyncWalletClient.create``)."""
        return self._run(self._inner.create(scopes, properties=properties, required=required))

    def get(self) -> Session:
        """``wallet_getSession``: the active session (empty when there is none)."""
        return self._run(self._inner.get())

    def invoke(
        self,
        scope: ScopeKey | str,
        method: str,
        params: Mapping[str, object] | Iterable[object] | None = None,
    ) -> Any:
        """``wallet_invokeMethod`` (see ``AsyncWalletClient.invoke``)."""
        return self._run(self._inner.invoke(scope, method, params))

    def revoke(self) -> bool:
        """``wallet_revokeSession``: end the session."""
        return self._run(self._inner.revoke())

    def subscribe(self, scope: ScopeKey | str, kind: str = "newHeads") -> str:
        """``eth_subscribe(kind)`` through the wallet; events come as ``wallet_notify``."""
        return self._run(self._inner.subscribe(scope, kind))

    def unsubscribe(self, scope: ScopeKey | str, subscription: str) -> bool:
        """``eth_unsubscribe`` through the wallet."""
        return self._run(self._inner.unsubscribe(scope, subscription))

    def on_notification(self, callback: Callable[[WalletNotification], None]) -> Callable[[], None]:
        """Call ``callback(notification)`` for each notification, on the blocking clients'
        shared loop thread (in a notebook, append to a list rather than print; a blocking
        feeslab call from there raises, as it would wait on that very thread). Returns a
        remover."""
        return self._loop.call(self._inner.on_notification, callback)

    def next_notification(
        self, timeout: float | None = DEFAULT_NOTIFICATION_TIMEOUT
    ) -> WalletNotification:
        """The oldest notification not yet taken, waiting up to ``timeout`` [s]."""
        return self._run(self._inner.next_notification(timeout))

    def notifications(
        self, *, count: int | None = None, timeout: float | None = DEFAULT_NOTIFICATION_TIMEOUT
    ) -> Iterator[WalletNotification]:
        """Notifications in arrival order: ``count`` of them (or until the connection closes),
        each awaited up to ``timeout`` [s] (``NotificationTimeout`` past it)."""
        return self._loop.iterate(self._inner.notifications(count=count, timeout=timeout))

"""The one retry driver and the one status-to-error map of every client.

Every client of the fetch layer (JSON-RPC over HTTP and over WebSocket, the Gas API, the
storage API) reads a refused answer with :func:`status_error` and retries with :func:`drive`
under one :class:`Retry` policy, so all of them treat the same answer the same way:

=====================================  ==========================================================
429 (or JSON-RPC -32005)               waited out: ``Retry-After`` (seconds or an HTTP-date),
                                       the service's hint, else the backoff; not counted against
                                       ``retries``. After ``rate_limit_patience`` seconds of
                                       nothing but 429s (no request of the client served
                                       meanwhile) -> ``RateLimited``
5xx, connect/read errors, timeouts     retried with the backoff, ``retries`` times; then the
                                       last error (``TransportError``; ``IpfsError`` for the
                                       storage API, whose errors carry its command)
402                                    ``CreditsExhausted`` at once (retrying cannot help)
401, 403                               ``AuthError`` at once (403 is a forbidden command on the
                                       storage API: ``IpfsError``)
404                                    ``ConfigError`` (wrong URL or network; the storage API:
                                       ``IpfsError``, no such command)
any other status                       ``ProtocolError`` (the storage API: ``IpfsError``)
JSON-RPC 4444                          ``HistoryPruned`` at once: the node expired that history
                                       (EIP-4444); a call's error object in an HTTP batch or a
                                       WebSocket answer (``RpcError.from_object``) and a refused
                                       WebSocket message (here) alike
=====================================  ==========================================================

The backoff is exponential with full jitter: the ``n``-th wait is
``uniform(0, min(backoff_cap, backoff * 2**n))``, counted apart for 429s and other failures.
The driver is async: the blocking clients run their async twins on a loop thread
(``feeslab.fetch.loop``), so one loop serves both.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from feeslab.errors import (
    PRUNED_HISTORY_CODE,
    AuthError,
    ConfigError,
    CreditsExhausted,
    FeeslabError,
    HistoryPruned,
    ProtocolError,
    RateLimited,
    TransportError,
)
from feeslab.fetch.jsonrpc import RATE_LIMIT_CODE, backoff_seconds, service_says

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_BACKOFF",
    "DEFAULT_BACKOFF_CAP",
    "DEFAULT_RATE_LIMIT_PATIENCE",
    "DEFAULT_RETRIES",
    "Attempts",
    "Retry",
    "Retryable",
    "drive",
    "http_error",
    "retry_after",
    "status_error",
]

DEFAULT_RETRIES = 5
DEFAULT_BACKOFF = 0.5
DEFAULT_BACKOFF_CAP = 30.0
DEFAULT_RATE_LIMIT_PATIENCE = 600.0
"""[s] A request refused with 429 for this long (the waits added up) while the client got no
request served at all raises ``RateLimited``: the hard stop for a service that answers
nothing but 429. 429s are not failures counted against ``retries``."""

_T = TypeVar("_T")


@dataclass(frozen=True)
class Retry:
    """How a client retries: the one policy of every client (HTTP, WebSocket, IPFS, Gas API).

    Parameters
    ----------
    retries : int
        Further attempts after a transient failure (5xx, a malformed answer, a network error).
        A 429 is not counted: it is waited out.
    backoff, backoff_cap : float
        Base and cap of the exponential backoff with full jitter [s].
    rate_limit_patience : float
        The hard stop for 429s [s]: waited this long on 429s with nothing served raises
        ``RateLimited``.
    rng : random.Random, optional
        Source of the jitter (seeded in tests).
    """

    retries: int = DEFAULT_RETRIES
    backoff: float = DEFAULT_BACKOFF
    backoff_cap: float = DEFAULT_BACKOFF_CAP
    rate_limit_patience: float = DEFAULT_RATE_LIMIT_PATIENCE
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ConfigError("max_batch and max_concurrency must be >= 1 and retries >= 0")
        if not self.rate_limit_patience > 0:
            raise ConfigError("rate_limit_patience must be > 0 seconds")

    def delay(self, attempt: int, hint: float | None = None) -> float:
        """Seconds to wait before attempt ``attempt + 1``: ``hint`` (what the service said)
        when given, else the jittered backoff [s]."""
        if hint is not None:
            return hint
        return self.rng.uniform(0, min(self.backoff_cap, self.backoff * 2**attempt))


def retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header value: delta-seconds or an HTTP-date [s]."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


class Retryable(Exception):
    """This attempt failed in a way worth another try: ``error`` is raised if none is left.

    ``wait`` is what the service asked for [s], if it said.
    """

    def __init__(self, error: FeeslabError, wait: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.wait = wait

    def __reduce__(self) -> tuple[object, ...]:
        return type(self), (self.error, self.wait), dict(vars(self))  # made again, not str()


# -- the status-to-error map -------------------------------------------------------------------


def status_error(
    status: int,
    said: str,
    *,
    where: str = "",
    label: str = "HTTP",
    secrets: Iterable[str] = (),
    wait: float | None = None,
    credits_spent: int | None = None,
    details: str | None = None,
    own: Callable[[int], FeeslabError] | None = None,
    owns: Collection[int] = (),
) -> FeeslabError | Retryable:
    """The error for a refused answer: a ``FeeslabError`` to raise, or a ``Retryable``.

    Parameters
    ----------
    status : int
        The HTTP status, or the code of a JSON-RPC error object the service answers a refused
        WebSocket message with (402, 429, -32005, 4444).
    said : str
        The service's explanation (``jsonrpc.service_says``).
    where, label : str
        The message reads ``f"{where}{label} {status}: {said}"`` (``"HTTP 503: ..."``,
        ``"WebSocket 429: ..."``, ``"Gas API baseFeeHistory: HTTP 401: ..."``).
    secrets : iterable of str
        Masked in the message.
    wait : float, optional
        The service's ``Retry-After`` (or ``backoff_seconds``) for a 429 [s].
    credits_spent : int, optional
        The ledger's total, reported by ``CreditsExhausted``.
    details : str, optional
        The service's explanation of a 402.
    own : callable, optional
        ``own(status)``: the API's own error (the storage API's ``IpfsError``, which carries
        its command) for the statuses in ``owns``, for every status this map has no class
        for, and as what a transient 5xx raises once the retries are spent.
    owns : collection of int
        Statuses that are the API's own answers (a kubo command's 403, 404, 500).
    """
    secrets = tuple(secrets)
    text = f"{where}{label} {status}: {said}"
    if status in (429, RATE_LIMIT_CODE):
        return Retryable(RateLimited(text, retry_after=wait, secrets=secrets), wait)
    if status == 402:
        return CreditsExhausted(credits_spent=credits_spent, details=details, secrets=secrets)
    if status == PRUNED_HISTORY_CODE:  # expired history: asking again cannot bring it back
        return HistoryPruned.from_rpc({"code": status, "message": said}, secrets=secrets)
    if own is not None and status in owns:
        return own(status)
    if status in (401, 403):
        return AuthError(text, status=status, secrets=secrets)
    if status >= 500:
        return Retryable(own(status) if own else TransportError(text, secrets=secrets))
    if own is not None:
        return own(status)
    if status == 404:
        return ConfigError(
            f"{where}{label} 404 (check the URL and network): {said}", secrets=secrets
        )
    return ProtocolError(f"{where}unexpected {label} {status}: {said}", status=status,
                         secrets=secrets)  # fmt: skip


def http_error(
    response: httpx.Response,
    body: object,
    *,
    secrets: Iterable[str] = (),
    credits_spent: int | None = None,
    where: str = "",
) -> FeeslabError | Retryable:
    """:func:`status_error` for an HTTP answer other than 200 (``body``: its JSON or None):
    the service's words, its ``Retry-After`` (else the body's ``backoff_seconds``) and a 402's
    details are read the same way for every client."""
    wait = retry_after(response.headers.get("retry-after"))
    if wait is None:
        wait = backoff_seconds(body)
    error = body.get("error") if isinstance(body, Mapping) else None
    details = error.get("details") if isinstance(error, Mapping) else None
    said = service_says(body, response.content)
    return status_error(response.status_code, said, where=where, secrets=secrets, wait=wait,
                        credits_spent=credits_spent, details=details)  # fmt: skip


# -- the retry driver ------------------------------------------------------------------------


class Attempts:
    """One request's failures so far under a :class:`Retry`: how long to wait after each, or
    the error to raise when the policy says stop.

    Parameters
    ----------
    retry : Retry
    served : callable, optional
        ``served()``: how many requests the client has had served so far. A 429 streak is
        the hard stop only while this does not move (another request being served says the
        service is slowing the client down, not shutting it out).
    secrets : iterable of str
        Masked in the hard stop's message.
    """

    __slots__ = ("_seen", "_served", "failures", "refusals", "refused", "retry", "secrets",
                 "starved")  # fmt: skip

    def __init__(
        self,
        retry: Retry,
        *,
        served: Callable[[], int] | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        self.retry = retry
        self.secrets = tuple(secrets)
        self.failures = 0  # transient failures other than 429s: bounded by retries
        self.refusals = 0  # 429s in a row (the backoff's exponent when the service gives no wait)
        self.starved = 0.0  # seconds of 429 waits since the client last got a request served
        self.refused = False  # whether the last failure was a 429
        self._served = served
        self._seen = served() if served is not None else 0

    def after(self, failure: Retryable) -> float:
        """Seconds to wait before the next attempt [s]; raises the error to give up with."""
        retry = self.retry
        if isinstance(failure.error, RateLimited):
            self.refused = True
            if self._served is not None and self._served() != self._seen:
                self._seen, self.starved = self._served(), 0.0  # the service serves: not starving
            wait = retry.delay(self.refusals, failure.wait)
            self.refusals += 1
            self.starved += wait
            if self.starved > retry.rate_limit_patience:
                raise self._starved(failure.error)
            return wait
        self.refused = False
        self.refusals = 0
        self.failures += 1
        if self.failures > retry.retries:
            raise failure.error
        return retry.delay(self.failures - 1, failure.wait)

    def _starved(self, last: RateLimited) -> RateLimited:
        """The hard stop: only 429s for ``rate_limit_patience`` seconds."""
        patience = self.retry.rate_limit_patience
        return RateLimited(
            f"{last}; the service answered only 429 (rate limited) for {self.starved:,.0f} s "
            f"({self.refusals} refusals in a row, no request served meanwhile), past "
            f"rate_limit_patience={patience:g} s",
            retry_after=last.retry_after,
            attempts=self.refusals,
            secrets=self.secrets,
        )


async def drive(
    attempt: Callable[[], Awaitable[_T]],
    retry: Retry | None,
    sleep: Callable[[float], Awaitable[None]],
    *,
    served: Callable[[], int] | None = None,
    refused: Callable[[float], None] | None = None,
    secrets: Iterable[str] = (),
) -> _T:
    """``await attempt()`` until it succeeds, as ``retry`` says; its result.

    ``attempt`` raises :class:`Retryable` for a failure worth another try (and any other
    exception to stop at once). Between attempts the driver sleeps as :class:`Attempts` says,
    except after a 429 when ``refused`` is given: ``refused(wait)`` is called instead, and the
    next attempt waits itself (a JSON-RPC transport pauses every batch in flight, not this one
    alone). ``retry=None`` sends once: a failure raises its error (an upload whose body is
    spent). Nothing is allocated on the success path.
    """
    attempts: Attempts | None = None
    while True:
        try:
            return await attempt()
        except Retryable as caught:
            failure = caught
        if retry is None:
            raise failure.error
        if attempts is None:
            attempts = Attempts(retry, served=served, secrets=secrets)
        wait = attempts.after(failure)  # out of the except block: no Retryable as __context__
        if refused is not None and attempts.refused:
            refused(wait)
        elif wait > 0:
            await sleep(wait)

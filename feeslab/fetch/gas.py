"""The Gas API client: ``baseFeeHistory`` and friends, with Basic key:secret auth.

A small client: the Gas API is four GET endpoints, each answered in one request. Its
answers are read by every client's status-to-error map and retried by every client's driver
(``feeslab.fetch.retry``): a 429 is waited out (``Retry-After`` in seconds or as an HTTP-date,
until ``rate_limit_patience``), 5xx and network errors are retried ``retries`` times with the
jittered backoff, 401/402 are not. ``AsyncGasClient`` is the client; ``GasClient`` runs it on
the blocking clients' event-loop thread (``feeslab.fetch.loop``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypedDict, Unpack

import httpx

from feeslab._redact import describe, register_secrets
from feeslab.errors import ProtocolError, TransportError, redact
from feeslab.fetch._tls import shared_ssl_context
from feeslab.fetch.core import Limits
from feeslab.fetch.credits import CreditLedger
from feeslab.fetch.jsonrpc import json_or_none
from feeslab.fetch.loop import Blocking, blocking
from feeslab.fetch.retry import Retry, Retryable, drive, http_error
from feeslab.fetch.transport import blocking_sleep

__all__ = ["AsyncGasClient", "GasClient", "GasOptions"]

ENDPOINTS = ("baseFeeHistory", "suggestedGasFees", "baseFeePercentile", "busyThreshold")
GAS_BACKOFF = 0.25  # [s] the backoff's base
GAS_BACKOFF_CAP = 8.0  # [s]


class GasOptions(TypedDict, total=False):
    """``AsyncGasClient``'s keywords besides the root, the credentials, the ledger and
    ``sleep`` (which ``GasClient`` also passes on)."""

    retries: int
    retry: Retry | None
    timeout: float
    transport: httpx.AsyncBaseTransport | None


class AsyncGasClient:
    """The Gas API of one service root, for ``asyncio`` code.

    Parameters
    ----------
    base_url : str
        The root under which ``/networks/<chainId>/<endpoint>`` lives
        (``https://gas.api.infura.io`` or a devnet's URL).
    api_key, api_key_secret : str
        Basic credentials; with no secret the key-only path ``/v3/<key>/networks/...`` is used.
    ledger : CreditLedger
        Books each answered request; the one count of credits (``CreditsExhausted`` reports
        its total).
    retries : int
        Attempts after the first for 5xx, non-JSON answers and network errors (a 429 is
        waited out, as by every client).
    retry : Retry, optional
        The whole retry policy instead of ``retries`` (the one every client takes).
    timeout : float
        Per request [s].
    transport : httpx.AsyncBaseTransport, optional
        E.g. ``httpx.MockTransport`` in tests.
    sleep : callable, optional
        ``await sleep(seconds)``; default ``asyncio.sleep``.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        api_key_secret: str | None,
        ledger: CreditLedger,
        retries: int = 4,
        retry: Retry | None = None,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._base = base_url.rstrip("/")
        self._key = api_key
        self._secret = api_key_secret
        self._secrets = [s for s in (api_key, api_key_secret) if s]
        register_secrets(api_key, api_key_secret)
        self.ledger = ledger
        self._retry = retry or Retry(
            retries=retries, backoff=GAS_BACKOFF, backoff_cap=GAS_BACKOFF_CAP
        )
        self.retries = self._retry.retries
        self._sleep = sleep
        self._served = 0  # answers served: a 429 streak is the hard stop only while it stands
        auth = (api_key, api_key_secret) if api_key_secret else None
        self._client = httpx.AsyncClient(
            timeout=Limits(timeout=timeout).httpx_timeout(), auth=auth, transport=transport,
            verify=shared_ssl_context(),
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {redact(self._base, self._secrets)}>"

    async def aclose(self) -> None:
        await self._client.aclose()

    def _url(self, chain_id: int, endpoint: str) -> str:
        if self._secret:
            return f"{self._base}/networks/{chain_id}/{endpoint}"
        return f"{self._base}/v3/{self._key}/networks/{chain_id}/{endpoint}"

    async def get(self, chain_id: int, endpoint: str) -> Any:
        """The decoded answer of one endpoint for ``chain_id``."""
        if endpoint not in ENDPOINTS:
            raise ValueError(f"unknown Gas API endpoint {endpoint!r}; known: {ENDPOINTS}")
        url = self._url(int(chain_id), endpoint)
        where = f"Gas API {endpoint} (chain {int(chain_id)}): "
        return await drive(lambda: self._attempt(url, endpoint, where), self._retry, self._sleep,
                           served=self._served_count, secrets=self._secrets)  # fmt: skip

    def _served_count(self) -> int:
        return self._served

    async def _attempt(self, url: str, endpoint: str, where: str) -> Any:
        """One request; ``Retryable`` when it is worth another."""
        try:
            answer = await self._client.get(url)
        except httpx.HTTPError as exc:
            # no key in its request's URL/headers
            message = f"Gas API unreachable: {describe(exc, self._secrets)}"
            error = TransportError(message, secrets=self._secrets)
            error.__cause__ = exc
            raise Retryable(error) from None
        status = answer.status_code
        self.ledger.record(endpoint, http_status=status, kind="gas")
        body = json_or_none(answer.content)
        if status != 200:
            raise http_error(answer, body, secrets=self._secrets, credits_spent=self.ledger.spent,
                             where=where)  # fmt: skip
        self._served += 1
        if body is None:  # a cut or proxied answer, as over JSON-RPC: worth another try
            said = answer.content[:120].decode("utf-8", "replace")
            raise Retryable(ProtocolError(f"{where}the answer is not JSON: {said}", status=200,
                                          secrets=self._secrets))  # fmt: skip
        return body

    async def base_fee_history(self, chain_id: int) -> list[str]:
        """The previous 500 blocks' base fees, oldest first, as decimal gwei strings."""
        history: list[str] = await self.get(chain_id, "baseFeeHistory")  # the API's JSON
        return history


class GasClient(Blocking):
    """The Gas API, blocking: ``AsyncGasClient`` on the blocking clients' event-loop thread
    (it works inside a running Jupyter kernel). Options as ``AsyncGasClient``'s; ``sleep`` blocks
    (``time.sleep`` by default)."""

    _inner: AsyncGasClient

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        api_key_secret: str | None,
        ledger: CreditLedger,
        sleep: Callable[[float], object] = time.sleep,
        **options: Unpack[GasOptions],
    ) -> None:
        def make() -> AsyncGasClient:
            return AsyncGasClient(base_url=base_url, api_key=api_key,
                                  api_key_secret=api_key_secret, ledger=ledger,
                                  sleep=blocking_sleep(sleep), **options)  # fmt: skip

        super().__init__(make)

    def __repr__(self) -> str:
        return repr(self._inner).replace("AsyncGasClient", "GasClient")

    @property
    def ledger(self) -> CreditLedger:
        return self._inner.ledger

    @property
    def retries(self) -> int:
        return self._inner.retries

    get = blocking(AsyncGasClient.get)
    base_fee_history = blocking(AsyncGasClient.base_fee_history)

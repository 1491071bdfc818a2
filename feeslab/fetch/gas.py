"""The Gas API client: ``baseFeeHistory`` and friends, with Basic key:secret auth.

A small client: the Gas API is four GET endpoints, each answered in one request.
Transient failures (429, 5xx, network errors) are retried with backoff; 401/402 are not.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from feeslab._redact import describe, register_secrets
from feeslab.errors import (
    AuthError,
    CreditsExhausted,
    ProtocolError,
    RateLimited,
    TransportError,
    redact,
)
from feeslab.fetch._tls import shared_ssl_context
from feeslab.fetch.credits import CreditLedger

ENDPOINTS = ("baseFeeHistory", "suggestedGasFees", "baseFeePercentile", "busyThreshold")


class GasClient:
    """The Gas API of one service root.

    Parameters
    ----------
    base_url : str
        The root under which ``/networks/<chainId>/<endpoint>`` lives
        (``https://gas.api.infura.io`` or a devnet's URL).
    api_key, api_key_secret : str
        Basic credentials; with no secret the key-only path ``/v3/<key>/networks/...`` is used.
    ledger : CreditLedger
        Books each answered request.
    retries : int
        Attempts after the first for 429, 5xx and network errors.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        api_key_secret: str | None,
        ledger: CreditLedger,
        retries: int = 4,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Any = time.sleep,
    ) -> None:
        self._base = base_url.rstrip("/")
        self._key = api_key
        self._secret = api_key_secret
        self._secrets = [s for s in (api_key, api_key_secret) if s]
        register_secrets(api_key, api_key_secret)
        self.ledger = ledger
        self.retries = retries
        self._sleep = sleep
        auth = (api_key, api_key_secret) if api_key_secret else None
        self._client = httpx.Client(
            timeout=timeout, auth=auth, transport=transport, verify=shared_ssl_context()
        )

    def __repr__(self) -> str:
        return f"<GasClient {redact(self._base, self._secrets)}>"

    def close(self) -> None:
        self._client.close()

    def _url(self, chain_id: int, endpoint: str) -> str:
        if self._secret:
            return f"{self._base}/networks/{chain_id}/{endpoint}"
        return f"{self._base}/v3/{self._key}/networks/{chain_id}/{endpoint}"

    def get(self, chain_id: int, endpoint: str) -> Any:
        """The decoded answer of one endpoint for ``chain_id``."""
        if endpoint not in ENDPOINTS:
            raise ValueError(f"unknown Gas API endpoint {endpoint!r}; known: {ENDPOINTS}")
        url = self._url(int(chain_id), endpoint)
        for attempt in range(self.retries + 1):
            try:
                answer = self._client.get(url)
            except httpx.HTTPError as exc:
                if attempt == self.retries:
                    # no key in its request's URL/headers
                    message = f"Gas API unreachable: {describe(exc, self._secrets)}"
                    raise TransportError(message, secrets=self._secrets) from exc
                self._sleep(min(8.0, 0.25 * 2**attempt))
                continue
            self.ledger.record(endpoint, http_status=answer.status_code, kind="gas")
            status = answer.status_code
            if status == 200:
                try:
                    return answer.json()
                except ValueError:
                    raise ProtocolError(f"Gas API {endpoint} answered non-JSON") from None
            if status in (401, 403):
                raise AuthError(redact(f"Gas API refused the credentials: {answer.text}",
                                       self._secrets))
            if status == 402:
                raise CreditsExhausted(credits_spent=self.ledger.spent)
            if status == 429 or status >= 500:
                if attempt == self.retries:
                    if status == 429:
                        raise RateLimited("Gas API throughput exceeded", attempts=attempt + 1)
                    raise TransportError(f"Gas API {endpoint}: HTTP {status}")
                wait = answer.headers.get("retry-after")
                self._sleep(float(wait) if wait and wait.isdigit() else 0.25 * 2**attempt)
                continue
            raise ProtocolError(
                redact(f"Gas API {endpoint} for chain {chain_id}: HTTP {status}: "
                       f"{answer.text[:200]}", self._secrets)
            )
        raise AssertionError("unreachable")  # pragma: no cover

    def base_fee_history(self, chain_id: int) -> list[str]:
        """The previous 500 blocks' base fees, oldest first, as decimal gwei strings."""
        return self.get(chain_id, "baseFeeHistory")

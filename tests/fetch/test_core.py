"""The fetch core's policies: one retry policy for every client (httpx.MockTransport for the
faults), ``Retry-After`` in both forms, and the blocking clients' private loop threads."""

from __future__ import annotations

import asyncio
import email.utils
import random
import threading
import time

import httpx
import pytest

from feeslab.errors import (
    AuthError,
    ConfigError,
    CreditsExhausted,
    IpfsError,
    RateLimited,
    TransportError,
)
from feeslab.fetch.core import Limits, Retry, retry_after
from feeslab.fetch.credits import CreditLedger
from feeslab.fetch.gas import GasClient
from feeslab.fetch.jsonrpc import RpcCall
from feeslab.fetch.loop import LoopThread

NOW = 1_700_000_000.0


def test_retry_waits_are_jittered_within_the_cap_or_as_the_service_said() -> None:
    retry = Retry(backoff=0.5, backoff_cap=3.0, rng=random.Random(4))
    waits = [retry.delay(n) for n in range(8)]
    assert all(0 <= w <= min(3.0, 0.5 * 2**n) for n, w in enumerate(waits))
    assert len(set(waits)) == len(waits)  # jitter: no two alike
    assert retry.delay(5, 7.5) == 7.5


def test_bad_policies_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="retries"):
        Retry(retries=-1)
    with pytest.raises(ConfigError, match="rate_limit_patience"):
        Retry(rate_limit_patience=0)
    with pytest.raises(ConfigError, match="max_batch"):
        Limits(max_batch=0)


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert retry_after("3") == 3.0
    assert retry_after(" 1.5 ") == 1.5
    date = email.utils.formatdate(NOW + 20, usegmt=True)
    assert retry_after(date, now=NOW) == 20.0
    assert retry_after(email.utils.formatdate(NOW - 5, usegmt=True), now=NOW) == 0.0
    assert retry_after("soon") is None and retry_after(None) is None


def gas(handler, waits: list[float], **options) -> GasClient:
    return GasClient(
        base_url="https://gas.example", api_key="k" * 32, api_key_secret="s" * 32,
        ledger=CreditLedger(), transport=httpx.MockTransport(handler), sleep=waits.append,
        **options,
    )  # fmt: skip


def test_the_gas_api_waits_an_http_date_retry_after_then_succeeds() -> None:
    soon = email.utils.formatdate(time.time() + 3, usegmt=True)  # whole seconds: 2-3 s away
    answers = iter([
        httpx.Response(429, headers={"Retry-After": soon}),
        httpx.Response(503),
        httpx.Response(200, json=["1.5", "2.5"]),
    ])  # fmt: skip
    waits: list[float] = []
    with gas(lambda request: next(answers), waits) as client:
        assert client.base_fee_history(1) == ["1.5", "2.5"]
        assert client.ledger.spent == 80  # one served answer; 429 and 5xx are free
    assert len(waits) == 2
    assert 1.5 <= waits[0] <= 3.0  # the date the service said
    assert 0 <= waits[1] <= 0.25  # the first failure (429s count apart): backoff base 0.25 s


def test_the_gas_api_waits_429s_out_like_every_client_until_its_patience() -> None:
    waits: list[float] = []
    refused = httpx.Response(429, headers={"Retry-After": "2"})
    policy = Retry(retries=0, rate_limit_patience=5.0)  # 429s are not counted as retries
    with gas(lambda request: refused, waits, retry=policy) as client, pytest.raises(
        RateLimited
    ) as caught:
        client.get(1, "baseFeeHistory")
    assert waits == [2.0, 2.0] and caught.value.attempts == 3  # a third wait passes 5 s
    assert caught.value.retry_after == 2.0
    assert "only 429" in str(caught.value) and "rate_limit_patience=5" in str(caught.value)


def test_blocking_clients_run_inside_a_running_loop_on_their_own_thread() -> None:
    loop = LoopThread("feeslab-test")

    async def where() -> str:
        return threading.current_thread().name

    async def cell() -> str:  # a Jupyter cell: the caller's thread already runs a loop
        assert asyncio.get_running_loop().is_running()
        return loop.run(where())

    try:
        assert asyncio.run(cell()) == "feeslab-test"
    finally:
        loop.stop()
    with pytest.raises(Exception, match="closed"):
        loop.run(where())


def test_one_retry_policy_given_to_every_client() -> None:
    from feeslab.fetch.ipfs import IpfsClient
    from feeslab.fetch.transport import HTTPTransport

    policy = Retry(retries=1, backoff=0.0, backoff_cap=0.0)
    seen: list[str] = []

    def down(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.host)
        return httpx.Response(503)

    mock = httpx.MockTransport(down)
    waits: list[float] = []
    with gas(down, waits, retry=policy) as client, pytest.raises(TransportError):
        client.get(1, "baseFeeHistory")
    ipfs = IpfsClient(base_url="https://ipfs.example", api_key="k", api_key_secret="s",
                      retry=policy, transport=mock)  # fmt: skip
    with ipfs, pytest.raises(IpfsError):
        ipfs.version()
    node = HTTPTransport(url="https://node.example/v3/key", retry=policy, transport=mock)
    with node, pytest.raises(TransportError):
        node.handle_request([RpcCall("eth_chainId", [])])
    # each sent once and retried once, as the one policy says
    assert seen == ["gas.example"] * 2 + ["ipfs.example"] * 2 + ["node.example"] * 2


def _three_clients(handler, retry: Retry):
    """The Gas API, the storage API and a node over HTTP, each answered by ``handler``."""
    from feeslab.fetch.ipfs import IpfsClient
    from feeslab.fetch.transport import HTTPTransport

    mock = httpx.MockTransport(handler)
    waits: list[float] = []
    gas_client = gas(handler, waits, retry=retry)
    ipfs = IpfsClient(base_url="https://ipfs.example", api_key="k", api_key_secret="s",
                      retry=retry, transport=mock)  # fmt: skip
    node = HTTPTransport(url="https://node.example/v3/key", retry=retry, transport=mock)
    return {
        "gas": (gas_client, lambda: gas_client.get(1, "baseFeeHistory")),
        "ipfs": (ipfs, ipfs.version),
        "node": (node, lambda: node.handle_request([RpcCall("eth_chainId", [])])),
    }


@pytest.mark.parametrize(
    ("status", "expected"),
    [(401, AuthError), (402, CreditsExhausted), (429, RateLimited), (503, TransportError)],
)
def test_one_map_every_client_raises_the_same_error_for_the_same_answer(status, expected):
    seen: list[str] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.host)
        body = {"error": {"code": status, "message": "the service said so"}}
        return httpx.Response(status, headers={"Retry-After": "0.01"}, json=body)

    # 429s waited out 0.01 s at a time until 0.025 s of them: three tries; a 503 twice
    policy = Retry(retries=1, backoff=0.0, backoff_cap=0.0, rate_limit_patience=0.025)
    for name, (client, ask) in _three_clients(refuse, policy).items():
        # the storage API's failures after the retries carry its command: IpfsError
        wanted = IpfsError if (name, status) == ("ipfs", 503) else expected
        with client, pytest.raises(wanted) as caught:
            ask()
        assert type(caught.value) is wanted, name
        if status != 402:  # a 402's text is the ledger's and the cache's; the others say why
            assert "said so" in str(caught.value), (name, str(caught.value))
        if status == 429:
            assert caught.value.attempts == 3 and "rate_limit_patience" in str(caught.value)
    tries = {401: 1, 402: 1, 429: 3, 503: 2}[status]
    assert seen == [f"{host}.example" for host in ("gas", "ipfs", "node") for _ in range(tries)]

"""The node clients: the sync one and its asyncio twin answer alike, cache alike and resume
alike, over HTTP and WebSocket against a devnet on loopback."""

from __future__ import annotations

import asyncio

import pytest

from feeslab.devnet import start
from feeslab.fetch import AsyncHTTPTransport, AsyncWebSocketTransport, CreditsExhausted
from feeslab.fetch.credits import CreditLedger
from feeslab.fetch.node import AsyncNodeClient, NodeClient
from feeslab.fetch.transport import HTTPTransport

SEED = 7  # the session devnet's


def _async_client(url: str, cache, **options) -> AsyncNodeClient:
    ledger = CreditLedger()
    kind = AsyncWebSocketTransport if url.startswith("ws") else AsyncHTTPTransport
    transport = kind(url=url, on_response=ledger.on_response, **options)
    return AsyncNodeClient(transport, ledger=ledger, cache=cache, progress=False)


async def _close(client: AsyncNodeClient) -> None:
    client.close()
    if isinstance(client.transport, AsyncHTTPTransport):
        await client.transport.aclose()
    else:
        await client.transport.close()


@pytest.mark.parametrize("over", ["http", "ws"])
def test_async_twin_answers_like_the_sync_client_and_caches(devnet, tmp_path, over):
    http_url = f"{devnet.url}/v3/{devnet.api_key}"
    url = http_url if over == "http" else f"{devnet.ws_url}/ws/v3/{devnet.api_key}"
    ledger = CreditLedger()
    sync = NodeClient(HTTPTransport(url=http_url, on_response=ledger.on_response),
                      ledger=ledger, cache=False, progress=False)
    numbers = range(100_000, 101_200)
    expected = sync.blocks(numbers)
    word = sync.storage_series("0x" + "00" * 20, 0, [100_000, 150_000])
    fees = sync.fee_history(10, 200_000, [50])
    sync.transport.close()

    async def scenario():
        client = _async_client(url, tmp_path / over)
        try:
            assert await client.blocks(numbers) == expected
            assert await client.storage_series("0x" + "00" * 20, 0, [100_000, 150_000]) == word
            assert await client.fee_history(10, 200_000, [50]) == fees
            assert (await client.identity()).startswith("1-0x")
            assert await client.chain_id() == 1
            sent = client.ledger.calls
            assert await client.blocks(numbers) == expected  # settled: from the cache
            assert client.ledger.calls == sent  # nothing sent
            assert client.ledger.cached == len(numbers)
            with_uncles = [(n, 0) for n, h in zip(numbers, expected, strict=True) if h["uncles"]]
            uncles = await client.uncles(with_uncles)
            assert all(u is not None for u in uncles)
        finally:
            await _close(client)

    asyncio.run(scenario())


def test_async_twin_keeps_its_work_when_credits_run_out_and_resumes(tmp_path):
    blocks = range(70_000, 72_000)

    async def fetch(devnet, **options):
        client = _async_client(f"{devnet.url}/v3/{devnet.api_key}", tmp_path, **options)
        client.chunk = 200
        try:
            return await client.blocks(blocks), client.ledger
        finally:
            await _close(client)

    poor = start(seed=SEED, daily_credits=80 * 1000 + 500, credits_per_second=10**9)
    with poor, pytest.raises(CreditsExhausted) as refused:
        asyncio.run(fetch(poor, max_batch=100, max_concurrency=1))
    kept = refused.value.answers_kept
    assert 0 < kept < len(blocks)
    with start(seed=SEED, credits_per_second=10**9) as rich:
        headers, ledger = asyncio.run(fetch(rich))
    assert [int(h["number"], 16) for h in headers] == list(blocks)
    assert ledger.cached == kept
    assert ledger.by_method["eth_getBlockByNumber"] == 80 * (len(blocks) - kept + 1)


@pytest.mark.parametrize("twin", ["sync", "async"])
def test_each_batch_is_cached_as_it_arrives_not_at_the_end_of_its_chunk(tmp_path, twin):
    """A 402 inside one 8,000-call chunk: the batches answered before it are kept."""
    blocks = range(70_000, 72_000)  # one chunk (DEFAULT_CHUNK is 8,000 calls)

    def fetch(devnet, **options):
        url = f"{devnet.url}/v3/{devnet.api_key}"
        if twin == "async":

            async def scenario():
                client = _async_client(url, tmp_path, **options)
                try:
                    return await client.blocks(blocks), client.ledger
                finally:
                    await _close(client)

            return asyncio.run(scenario())
        ledger = CreditLedger()
        transport = HTTPTransport(url=url, on_response=ledger.on_response, **options)
        client = NodeClient(transport, ledger=ledger, cache=tmp_path, progress=False)
        try:
            return client.blocks(blocks), ledger
        finally:
            client.close()
            transport.close()

    poor = start(seed=SEED, daily_credits=80 * 1000 + 500, credits_per_second=10**9)
    with poor, pytest.raises(CreditsExhausted) as refused:
        fetch(poor, max_batch=100, max_concurrency=1)
    kept = refused.value.answers_kept
    assert kept == 1_000  # ten batches of 100 paid for (the eleventh did not fit): all kept
    with start(seed=SEED, credits_per_second=10**9) as rich:
        headers, ledger = fetch(rich)
    assert [int(h["number"], 16) for h in headers] == list(blocks)
    assert ledger.cached == kept
    assert ledger.by_method["eth_getBlockByNumber"] == 80 * (len(blocks) - kept + 1)

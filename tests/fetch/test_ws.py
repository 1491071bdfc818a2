"""JSON-RPC over one WebSocket, against the real devnet."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from feeslab.devnet import start
from feeslab.errors import AuthError, ConfigError, CreditsExhausted, TransportError
from feeslab.fetch import AsyncWebSocketTransport, RpcCall, WebSocketTransport


def ws_url(devnet: Any, key: str | None = None) -> str:
    return f"{devnet.ws_url}/ws/v3/{key or devnet.api_key}"


def block(n: int) -> RpcCall:
    return RpcCall("eth_getBlockByNumber", [hex(n), False])


def numbers(results: list[Any]) -> list[int]:
    return [int(r.unwrap()["number"], 16) for r in results]


def test_batches_split_order_and_item_errors(devnet) -> None:
    async def main() -> tuple[list[Any], list[Any]]:
        async with AsyncWebSocketTransport(url=ws_url(devnet), max_batch=4) as transport:
            big = await transport.handle_request([block(n) for n in range(30)])
            mixed = await transport.handle_request(
                [block(5), RpcCall("eth_nope", []), RpcCall("eth_chainId", [])]
            )
        return big, mixed

    big, mixed = asyncio.run(main())
    assert numbers(big) == list(range(30))
    assert int(mixed[0].result["number"], 16) == 5
    assert mixed[1].error.code == -32601
    assert mixed[2].result == "0x1"


def test_concurrent_requests_are_multiplexed_by_id(devnet) -> None:
    async def main() -> list[list[int]]:
        async with AsyncWebSocketTransport(url=ws_url(devnet)) as transport:
            answers = await asyncio.gather(
                *(transport.handle_request([block(k), block(k + 50)]) for k in range(25))
            )
            assert transport.connected
        return [numbers(a) for a in answers]

    assert asyncio.run(main()) == [[k, k + 50] for k in range(25)]


def test_sync_twin_inside_a_running_loop(devnet) -> None:
    async def cell() -> list[int]:
        with WebSocketTransport(url=ws_url(devnet), max_batch=3) as transport:
            return numbers(transport.handle_request([block(n) for n in range(7)]))

    assert asyncio.run(cell()) == list(range(7))


def test_wrong_key_is_an_auth_error(devnet) -> None:
    wrong = "e" * 32
    with pytest.raises(AuthError) as info, WebSocketTransport(url=ws_url(devnet, wrong)) as t:
        t.handle_request([RpcCall("eth_chainId", [])])
    assert info.value.status == 401 and "invalid project id" in str(info.value)
    assert wrong not in str(info.value) and wrong not in repr(info.value)


def test_http_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        AsyncWebSocketTransport(url="http://localhost/ws/v3/x")


def test_subscribe_new_heads_async_and_sync() -> None:
    with start(seed=7, block_time=0.3, warm=False) as devnet:

        async def main() -> list[int]:
            async with AsyncWebSocketTransport(url=ws_url(devnet)) as transport:
                sub = await transport.subscribe("newHeads")
                heads = []
                async for head in sub:
                    heads.append(int(head["number"], 16))
                    if len(heads) == 2:
                        break
                await sub.aclose()
                # the connection still serves requests after unsubscribing
                (chain,) = await transport.handle_request([RpcCall("eth_chainId", [])])
                assert chain.result == "0x1"
            return heads

        heads = asyncio.run(asyncio.wait_for(main(), 30))
        assert heads[1] == heads[0] + 1

        with WebSocketTransport(url=ws_url(devnet)) as transport:
            sub = transport.subscribe("newHeads")
            first = next(iter(sub))
            second = next(sub)
            sub.close()
            assert list(sub) == []  # closed: the iteration ends
        assert int(second["number"], 16) == int(first["number"], 16) + 1


def test_the_blocking_transport_hands_its_options_on(devnet) -> None:
    # max_size (the largest message read) and the retry policy reach the async transport: a
    # header is past 64 bytes, so the connection refuses it and, with no retries, that is final
    small = WebSocketTransport(url=ws_url(devnet), max_size=64, retries=0)
    with small, pytest.raises(TransportError):
        small.handle_request([block(1)])
    with WebSocketTransport(url=ws_url(devnet), max_size=1 << 20, retries=0) as large:
        assert numbers(large.handle_request([block(1)])) == [1]


def test_real_429_over_the_websocket_is_retried() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await asyncio.sleep(seconds)

    with start(seed=7, credits_per_second=400, warm=False) as devnet:

        async def main() -> tuple[list[int], float]:
            async with AsyncWebSocketTransport(
                url=ws_url(devnet),
                timeout=5,  # a refusal that found no batch would cost this much
                max_batch=2,
                max_concurrency=2,
                retries=30,
                backoff=0.2,
                backoff_cap=1.0,
                sleep=sleep,
            ) as transport:
                await transport.handle_request([RpcCall("eth_chainId", [])])  # connected
                began = time.monotonic()
                results = await transport.handle_request([block(n) for n in range(12)])
                return numbers(results), time.monotonic() - began

        got, elapsed = asyncio.run(main())
    assert got == list(range(12))
    assert waits  # refused (a batch's 429 has id null), then admitted
    assert elapsed < 5  # every refusal found its batch: no answer timed out


def test_402_then_close_is_credits_exhausted_for_calls_and_subscriptions() -> None:
    with start(seed=7, daily_credits=500, warm=False) as devnet:

        async def calls() -> int:
            async with AsyncWebSocketTransport(url=ws_url(devnet), max_batch=1) as transport:
                with pytest.raises(CreditsExhausted) as info:
                    await transport.handle_request([block(n) for n in range(10)])
                # the socket is gone; later calls say the same without trying
                with pytest.raises(CreditsExhausted):
                    await transport.handle_request([RpcCall("eth_chainId", [])])
                return info.value.credits_spent

        spent = asyncio.run(calls())
        assert spent is not None and spent <= 500

    with start(seed=7, daily_credits=5 + 3 * 50, block_time=0.2, warm=False) as devnet:
        # eth_subscribe costs 5, each head 50: the fourth head cannot be paid for

        async def subscription() -> list[Any]:
            async with AsyncWebSocketTransport(url=ws_url(devnet)) as transport:
                sub = await transport.subscribe("newHeads")
                heads = []
                with pytest.raises(CreditsExhausted):
                    async for head in sub:
                        heads.append(head)
                return heads

        began = time.monotonic()
        heads = asyncio.run(asyncio.wait_for(subscription(), 30))
        assert len(heads) == 3 and time.monotonic() - began < 30

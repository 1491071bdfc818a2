"""JSON-RPC over HTTP: the real devnet for behaviour, ``httpx.MockTransport`` only for faults."""

from __future__ import annotations

import asyncio
import email.utils
import gc
import json
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from feeslab.devnet import start
from feeslab.errors import (
    AuthError,
    ConfigError,
    CreditsExhausted,
    ProtocolError,
    RateLimited,
    RevertError,
    RpcError,
    TransportError,
)
from feeslab.fetch import AsyncHTTPTransport, CreditGovernor, HTTPTransport, RpcCall
from feeslab.fetch.transport import GOVERNOR_BURST, GOVERNOR_HEADROOM

URL = "https://mainnet.example/v3/0123456789abcdef0123456789abcdef"


def block(n: int) -> RpcCall:
    return RpcCall("eth_getBlockByNumber", [hex(n), False])


def node_url(devnet: Any) -> str:
    return f"{devnet.url}/v3/{devnet.api_key}"


class Statuses:
    """An ``on_response`` recorder."""

    def __init__(self) -> None:
        self.seen: list[tuple[list[str], int]] = []
        self._lock = threading.Lock()

    def __call__(self, calls: Any, status: int) -> None:
        with self._lock:
            self.seen.append(([c.method for c in calls], status))

    @property
    def statuses(self) -> list[int]:
        return [status for _, status in self.seen]


# -- the devnet: normal behaviour ---------------------------------------------------------------


def test_split_batches_come_back_in_call_order(devnet) -> None:
    seen = Statuses()
    calls = [block(n) for n in range(100)]
    with HTTPTransport(url=node_url(devnet), max_batch=7, on_response=seen) as transport:
        results = transport.handle_request(calls)
    assert [int(r.unwrap()["number"], 16) for r in results] == list(range(100))
    assert [r.call for r in results] == calls
    assert len(seen.seen) == 15  # ceil(100 / 7) requests
    assert sorted(len(methods) for methods, _ in seen.seen) == [2] + [7] * 14
    assert transport.credits_spent == 100 * 80


def test_what_on_batch_returns_stands_for_that_batch(devnet) -> None:
    """A scan keeps only what it needs of each batch as it arrives: the list on_batch returns
    is what comes back for that batch, in call order; None keeps the batch as it came."""
    seen: list[int] = []

    def on_batch(sent, results):
        seen.append(len(results))
        if int(sent[0].params[0], 16) >= 20:  # the first batches kept whole, the rest reduced
            return [len(r.result["uncles"]) for r in results]
        return None

    calls = [block(n) for n in range(50)]
    with HTTPTransport(url=node_url(devnet), max_batch=10) as transport:
        plain = transport.handle_request(calls)
        got = transport.handle_request(calls, on_batch=on_batch)
    assert sorted(seen) == [10] * 5
    assert got[:20] == plain[:20]
    assert got[20:] == [len(r.result["uncles"]) for r in plain[20:]]


def test_each_answer_is_freed_once_read_with_the_collector_paused(devnet) -> None:
    """httpx binds a response and its stream in a reference cycle; the fetches pause the
    collector, so unless the transport breaks the cycle every batch's answer bytes stay
    until the collector's next pass (a long scan's peak memory)."""
    calls = [block(n) for n in range(40)]
    with HTTPTransport(url=node_url(devnet), max_batch=5) as transport:
        transport.handle_request(calls[:5])  # connections and first-use objects made
        gc.collect()
        gc.disable()
        try:
            for _ in range(3):
                transport.handle_request(calls)
            # a pool thread may still hold the last answer for a moment after handing it over
            # (a local of the executor's work item): that one goes by its refcount, while one
            # in a cycle would wait for the collector, which stays off
            for _ in range(100):
                alive = sum(isinstance(o, httpx.Response) for o in gc.get_objects())
                if not alive:
                    break
                time.sleep(0.01)
        finally:
            gc.enable()
    assert alive == 0  # 24 responses answered, none waits for the collector


def test_item_errors_do_not_lose_the_other_results(devnet) -> None:
    calls = [
        block(1),
        RpcCall("eth_noSuchMethod", []),
        block(2),
        RpcCall("eth_getStorageAt", ["0x00", "0xzz", "latest"]),
        RpcCall("eth_chainId", []),
    ]
    with HTTPTransport(url=node_url(devnet)) as transport:
        results = transport.handle_request(calls)
    assert int(results[0].result["number"], 16) == 1
    assert results[1].error.code == -32601 and not results[1].ok
    assert int(results[2].result["number"], 16) == 2
    assert results[3].error.code == -32602
    assert results[4].result == "0x1"
    with pytest.raises(RpcError):
        results[1].unwrap()


def test_a_single_call_and_an_empty_list(devnet) -> None:
    with HTTPTransport(url=node_url(devnet)) as transport:
        assert transport.handle_request([]) == []
        (only,) = transport.handle_request([RpcCall("eth_chainId", [])])
    assert only.result == "0x1"
    assert transport.attempts == 1


def test_other_networks_by_path(devnet) -> None:
    url = f"{devnet.url}/sepolia/v3/{devnet.api_key}"
    with HTTPTransport(url=url) as transport:
        (chain,) = transport.handle_request([RpcCall("eth_chainId", [])])
    assert int(chain.result, 16) == 11155111


def test_concurrent_callers_each_get_their_own_answers(devnet) -> None:
    with HTTPTransport(url=node_url(devnet), max_batch=5, max_concurrency=4) as transport:
        out: dict[int, list[int]] = {}

        def worker(k: int) -> None:
            results = transport.handle_request([block(k * 20 + i) for i in range(20)])
            out[k] = [int(r.unwrap()["number"], 16) for r in results]

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert out == {k: list(range(k * 20, k * 20 + 20)) for k in range(6)}


def test_sync_transport_inside_a_running_event_loop(devnet) -> None:
    # as in a Jupyter cell: a loop is running in this thread while the sync API is called
    async def cell() -> list[int]:
        assert asyncio.get_running_loop().is_running()
        with HTTPTransport(url=node_url(devnet), max_batch=4) as transport:
            results = transport.handle_request([block(n) for n in range(10)])
        return [int(r.unwrap()["number"], 16) for r in results]

    assert asyncio.run(cell()) == list(range(10))


def test_async_transport_splits_and_keeps_order(devnet) -> None:
    async def main() -> tuple[list[int], list[list[int]], int]:
        seen = Statuses()
        async with AsyncHTTPTransport(
            url=node_url(devnet), max_batch=6, max_concurrency=3, on_response=seen
        ) as transport:
            big = await transport.handle_request([block(n) for n in range(40)])
            many = await asyncio.gather(
                *(transport.handle_request([block(k), block(k + 100)]) for k in range(10))
            )
        numbers = [int(r.unwrap()["number"], 16) for r in big]
        pairs = [[int(r.unwrap()["number"], 16) for r in rs] for rs in many]
        return numbers, pairs, len(seen.seen)

    numbers, pairs, requests = asyncio.run(main())
    assert numbers == list(range(40))
    assert pairs == [[k, k + 100] for k in range(10)]
    assert requests == 7 + 10


def test_wrong_key_is_an_auth_error_without_retry(devnet) -> None:
    wrong = "f" * 32
    seen = Statuses()
    transport = HTTPTransport(url=f"{devnet.url}/v3/{wrong}", on_response=seen)
    with transport, pytest.raises(AuthError) as info:
        transport.handle_request([RpcCall("eth_chainId", [])])
    assert info.value.status == 401
    assert "invalid project id" in str(info.value)
    assert wrong not in str(info.value) and wrong not in repr(info.value)
    assert seen.statuses == [401]


def test_unknown_network_is_a_config_error(devnet) -> None:
    url = f"{devnet.url}/nowhere-mainnet/v3/{devnet.api_key}"
    with HTTPTransport(url=url) as transport, pytest.raises(ConfigError) as info:
        transport.handle_request([RpcCall("eth_chainId", [])])
    assert "404" in str(info.value) and devnet.api_key not in str(info.value)


def test_real_429_is_retried_after_retry_after() -> None:
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    seen = Statuses()
    # 400 credits/s: five eth_getBlockByNumber calls per second
    with start(seed=7, credits_per_second=400, warm=False) as devnet:
        transport = HTTPTransport(
            url=node_url(devnet),
            max_batch=1,
            max_concurrency=2,
            retries=10,
            sleep=sleep,
            on_response=seen,
        )
        with transport:
            results = transport.handle_request([block(n) for n in range(9)])
    assert [int(r.unwrap()["number"], 16) for r in results] == list(range(9))
    assert 429 in seen.statuses and seen.statuses.count(200) == 9
    assert any(abs(w - 1.0) < 0.05 for w in waits)  # the devnet's Retry-After, honoured
    assert transport.credits_spent == 9 * 80  # 429 answers are free


def test_governor_keeps_a_scan_under_the_plan_throughput() -> None:
    seen = Statuses()
    with start(seed=7, credits_per_second=4000, warm=False) as devnet:
        transport = HTTPTransport(
            url=node_url(devnet), max_batch=5, credits_per_second=4000, on_response=seen
        )
        began = time.monotonic()
        with transport:
            results = transport.handle_request([block(n) for n in range(150)])
        elapsed = time.monotonic() - began
    assert [int(r.unwrap()["number"], 16) for r in results] == list(range(150))
    assert set(seen.statuses) == {200}  # paced: never refused
    # 12,000 credits at 90% of 4,000/s after one second's burst: the last batch (400) is
    # booked once the first 11,600 have drained to zero
    rate = 4000 * GOVERNOR_HEADROOM
    assert elapsed >= (150 * 80 - 400 - rate) / rate - 0.05


def test_real_402_raises_credits_exhausted_without_retry() -> None:
    seen = Statuses()
    with start(seed=7, daily_credits=1000, warm=False) as devnet:
        transport = HTTPTransport(
            url=node_url(devnet), max_batch=1, max_concurrency=1, on_response=seen
        )
        with transport, pytest.raises(CreditsExhausted) as info:
            transport.handle_request([block(n) for n in range(20)])
    assert seen.statuses == [200] * 12 + [402]  # 12 * 80 = 960; the 13th does not fit
    assert info.value.credits_spent == 960
    assert "daily credit limit" in (info.value.details or "")


# -- faults: httpx.MockTransport ----------------------------------------------------------------


def rpc_answer(request: httpx.Request, result: Callable[[dict], Any] = lambda c: c["method"]):
    body = json.loads(request.content)
    items = body if isinstance(body, list) else [body]
    answers = [{"jsonrpc": "2.0", "id": c["id"], "result": result(c)} for c in items]
    return answers if isinstance(body, list) else answers[0]


class Script:
    """A MockTransport handler answering from a list of steps, recording every request."""

    def __init__(self, *steps: Any) -> None:
        self.steps = list(steps)
        self.requests: list[Any] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(json.loads(request.content))
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        if isinstance(step, Exception):
            raise step
        if callable(step):
            return step(request)
        return step

    @property
    def attempts(self) -> int:
        return len(self.requests)


def ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json=rpc_answer(request))


def mock(script: Script, **options: Any) -> tuple[HTTPTransport, list[float]]:
    waits: list[float] = []
    options.setdefault("rng", random.Random(1))
    options.setdefault("clock", lambda: 1000.0)  # a still clock: waits are exactly as asked
    transport = HTTPTransport(
        url=URL, transport=httpx.MockTransport(script), sleep=waits.append, **options
    )
    return transport, waits


def moving(script: Script, **options: Any) -> tuple[HTTPTransport, list[float]]:
    """Like ``mock``, with a fake clock that moves only when the transport sleeps."""
    waits: list[float] = []
    now = [1000.0]

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    options.setdefault("rng", random.Random(1))
    transport = HTTPTransport(
        url=URL, transport=httpx.MockTransport(script), sleep=sleep, clock=lambda: now[0],
        **options,
    )  # fmt: skip
    transport.now = now  # type: ignore[attr-defined]
    return transport, waits


TOO_MANY = {
    "jsonrpc": "2.0",
    "id": 1,
    "error": {"code": 429, "event": -33200, "message": "Too Many Requests"},
}
OLD_TOO_MANY = {
    "jsonrpc": "2.0",
    "id": 1,
    "error": {
        "code": -32005,
        "message": "daily request count exceeded, request rate limited",
        "data": {"see": "https://infura.io/dashboard", "backoff_seconds": 30.0},
    },
}


def test_429_with_retry_after_seconds() -> None:
    script = Script(httpx.Response(429, json=TOO_MANY, headers={"Retry-After": "2"}), ok)
    transport, waits = mock(script)
    (result,) = transport.handle_request([RpcCall("eth_chainId", [])])
    assert result.result == "eth_chainId"
    assert script.attempts == 2 and waits == [2.0]


def test_429_with_retry_after_http_date() -> None:
    when = email.utils.formatdate(time.time() + 120, usegmt=True)
    script = Script(httpx.Response(429, json=TOO_MANY, headers={"Retry-After": when}), ok)
    transport, waits = mock(script)
    transport.handle_request([RpcCall("eth_chainId", [])])
    assert script.attempts == 2
    assert len(waits) == 1 and 115 <= waits[0] <= 121


def test_429_without_retry_after_backs_off_and_is_not_a_counted_failure() -> None:
    script = Script(httpx.Response(429, json=TOO_MANY))
    transport, waits = moving(script, retries=1, backoff=0.5, backoff_cap=3.0,
                              rate_limit_patience=20)  # fmt: skip
    with pytest.raises(RateLimited) as info:
        transport.handle_request([RpcCall("eth_chainId", [])])
    # far more attempts than retries=1 allows a timeout: only the patience ended it
    assert script.attempts > 5 and info.value.attempts == script.attempts
    assert info.value.retry_after is None
    assert len(waits) == script.attempts - 1
    assert sum(waits) <= 20 < sum(waits) + 3.0
    for n, wait in enumerate(waits):  # full jitter under an exponential, capped ceiling
        assert 0 <= wait <= min(3.0, 0.5 * 2 ** (n + 1))
    assert "Too Many Requests" in str(info.value) and "rate_limit_patience=20" in str(info.value)


def test_old_minus_32005_body_with_backoff_seconds() -> None:
    script = Script(httpx.Response(429, json=OLD_TOO_MANY), ok)
    transport, waits = mock(script)
    transport.handle_request([RpcCall("eth_chainId", [])])
    assert waits == [30.0] and script.attempts == 2


def test_retry_after_wins_over_backoff_seconds_and_gives_retry_after() -> None:
    script = Script(httpx.Response(429, json=OLD_TOO_MANY, headers={"Retry-After": "4"}))
    transport, waits = mock(script, retries=1, rate_limit_patience=10)
    with pytest.raises(RateLimited) as info:
        transport.handle_request([RpcCall("eth_chainId", [])])
    assert waits == [4.0, 4.0] and info.value.retry_after == 4.0


def test_minus_32005_items_in_a_batch_are_retried_alone() -> None:
    def limited_second(request: httpx.Request) -> httpx.Response:
        answers = rpc_answer(request)
        answers[1] = {"jsonrpc": "2.0", "id": answers[1]["id"], "error": OLD_TOO_MANY["error"]}
        return httpx.Response(200, json=answers)

    script = Script(limited_second, ok)
    transport, waits = mock(script)
    calls = [RpcCall("a", []), RpcCall("b", []), RpcCall("c", [])]
    results = transport.handle_request(calls)
    assert [r.result for r in results] == ["a", "b", "c"]
    assert waits == [30.0]
    assert script.requests[1]["method"] == "b"  # only that call went again, as a single


def test_402_is_never_retried() -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {
            "code": 402,
            "event": -33000,
            "message": "Payment Required",
            "details": "You have reached your daily credit limit.",
        },
    }
    script = Script(ok, httpx.Response(402, json=body))
    transport, waits = mock(script)
    transport.handle_request([RpcCall("eth_call", []), RpcCall("eth_chainId", [])])
    with pytest.raises(CreditsExhausted) as info:
        transport.handle_request([RpcCall("eth_call", [])])
    assert script.attempts == 2 and waits == []
    assert info.value.credits_spent == 85
    assert "daily credit limit" in str(info.value)


@pytest.mark.parametrize("status", [401, 403])
def test_auth_failures_are_never_retried(status: int) -> None:
    script = Script(httpx.Response(status, json={"error": "invalid project id"}))
    transport, waits = mock(script)
    with pytest.raises(AuthError) as info:
        transport.handle_request([RpcCall("eth_chainId", [])])
    assert info.value.status == status and "invalid project id" in str(info.value)
    assert script.attempts == 1 and waits == []


def test_500_then_success() -> None:
    script = Script(httpx.Response(500, text="upstream hiccup"), ok)
    transport, waits = mock(script, backoff=1.0)
    (result,) = transport.handle_request([RpcCall("eth_chainId", [])])
    assert result.result == "eth_chainId"
    assert script.attempts == 2 and len(waits) == 1 and 0 <= waits[0] <= 1.0


def test_5xx_every_time_is_a_transport_error() -> None:
    script = Script(httpx.Response(503, text="unavailable"))
    transport, waits = mock(script, retries=3)
    with pytest.raises(TransportError, match="HTTP 503"):
        transport.handle_request([RpcCall("eth_chainId", [])])
    assert script.attempts == 4 and len(waits) == 3


def test_timeout_then_success() -> None:
    script = Script(httpx.ReadTimeout("timed out"), ok)
    transport, _ = mock(script)
    (result,) = transport.handle_request([RpcCall("eth_chainId", [])])
    assert result.result == "eth_chainId" and script.attempts == 2


def test_timeouts_every_time_wrap_the_httpx_error() -> None:
    script = Script(httpx.ConnectTimeout("timed out"))
    transport, waits = mock(script, retries=2)
    with pytest.raises(TransportError) as info:
        transport.handle_request([RpcCall("eth_chainId", [])])
    assert isinstance(info.value.__cause__, httpx.ConnectTimeout)
    assert "ConnectTimeout" in str(info.value)
    assert script.attempts == 3 and len(waits) == 2


def test_malformed_json_is_retried_then_a_protocol_error() -> None:
    html = httpx.Response(200, text="<html>502 Bad Gateway</html>")
    script = Script(html, ok)
    transport, _ = mock(script)
    assert transport.handle_request([RpcCall("x", [])])[0].result == "x"
    assert script.attempts == 2

    script = Script(html)
    transport, _ = mock(script, retries=2)
    with pytest.raises(ProtocolError, match="not JSON") as info:
        transport.handle_request([RpcCall("x", [])])
    assert info.value.status == 200 and script.attempts == 3


def test_json_that_is_not_json_rpc_is_a_protocol_error() -> None:
    script = Script(httpx.Response(200, json=[1, 2]))
    transport, _ = mock(script, retries=0)
    with pytest.raises(ProtocolError, match="not JSON-RPC"):
        transport.handle_request([RpcCall("x", []), RpcCall("y", [])])


def test_unexpected_status_is_a_protocol_error() -> None:
    script = Script(httpx.Response(415, json={"error": "bad content type"}))
    transport, waits = mock(script)
    with pytest.raises(ProtocolError, match="415") as info:
        transport.handle_request([RpcCall("x", [])])
    assert info.value.status == 415 and script.attempts == 1 and waits == []


def test_a_batch_with_some_failed_items() -> None:
    revert = {"code": 3, "message": "execution reverted", "data": "0x"}

    def mixed(request: httpx.Request) -> httpx.Response:
        answers = rpc_answer(request)
        answers[0] = {"jsonrpc": "2.0", "id": answers[0]["id"], "error": revert}
        answers[2] = {
            "jsonrpc": "2.0",
            "id": answers[2]["id"],
            "error": {"code": -32000, "message": "header not found"},
        }
        answers.reverse()  # order of answers is the server's business
        return httpx.Response(200, json=answers)

    script = Script(mixed)
    transport, _ = mock(script)
    results = transport.handle_request([RpcCall(m, []) for m in "abcd"])
    assert isinstance(results[0].error, RevertError)
    assert results[1].result == "b" and results[3].result == "d"
    assert type(results[2].error) is RpcError and results[2].error.code == -32000
    assert script.attempts == 1


def test_missing_ids_are_sent_again_alone() -> None:
    def drop_last(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=rpc_answer(request)[:-1])

    script = Script(drop_last, ok)
    transport, _ = mock(script)
    results = transport.handle_request([RpcCall(m, []) for m in "abc"])
    assert [r.result for r in results] == ["a", "b", "c"]
    assert script.attempts == 2 and script.requests[1]["method"] == "c"


def test_ids_never_answered_are_a_protocol_error() -> None:
    def wrong_ids(request: httpx.Request) -> httpx.Response:
        answers = rpc_answer(request)
        for answer in answers:
            answer["id"] = answer["id"] + 10_000  # ids we never sent are ignored
        return httpx.Response(200, json=answers)

    script = Script(wrong_ids)
    transport, _ = mock(script, retries=2)
    with pytest.raises(ProtocolError, match="2 call"):
        transport.handle_request([RpcCall("a", []), RpcCall("b", [])])
    assert script.attempts == 3


def test_a_whole_request_error_is_raised() -> None:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "batch too large"}}
    script = Script(httpx.Response(200, json=body))
    transport, _ = mock(script)
    with pytest.raises(RpcError, match="batch too large"):
        transport.handle_request([RpcCall("a", []), RpcCall("b", [])])
    assert script.attempts == 1


def test_a_429_pauses_the_other_batches_too() -> None:
    first = [True]
    lock = threading.Lock()

    def once_limited(request: httpx.Request) -> httpx.Response:
        with lock:
            limited, first[0] = first[0], False
        if limited:
            return httpx.Response(429, json=TOO_MANY, headers={"Retry-After": "50"})
        return ok(request)

    now = [1000.0]
    script = Script(once_limited)
    waits: list[float] = []
    transport = HTTPTransport(
        url=URL,
        transport=httpx.MockTransport(script),
        sleep=waits.append,
        clock=lambda: now[0],
        max_batch=1,
        max_concurrency=1,
    )
    transport.handle_request([RpcCall(m, []) for m in "abc"])
    # the clock never moves: every later batch is told to wait out the pause
    assert waits == [50.0, 50.0, 50.0]


def test_on_response_sees_calls_and_statuses() -> None:
    script = Script(httpx.Response(500), ok)
    seen = Statuses()
    transport, _ = mock(script, on_response=seen)
    transport.handle_request([RpcCall("eth_call", []), RpcCall("eth_chainId", [])])
    assert seen.seen == [(["eth_call", "eth_chainId"], 500), (["eth_call", "eth_chainId"], 200)]
    assert transport.credits_spent == 85


def test_async_twin_handles_the_same_faults() -> None:
    script = Script(
        httpx.Response(429, json=TOO_MANY, headers={"Retry-After": "3"}),
        httpx.ReadTimeout("slow"),
        lambda r: httpx.Response(200, json=rpc_answer(r)[:1]),
        ok,
    )
    waits: list[float] = []

    now = [0.0]

    async def sleep(seconds: float) -> None:  # a fake clock that moves only when we sleep
        waits.append(seconds)
        now[0] += seconds

    async def main() -> list[Any]:
        async with AsyncHTTPTransport(
            url=URL,
            transport=httpx.MockTransport(script),
            sleep=sleep,
            rng=random.Random(2),
            clock=lambda: now[0],
        ) as transport:
            return [
                r.result
                for r in await transport.handle_request([RpcCall("a", []), RpcCall("b", [])])
            ]

    assert asyncio.run(main()) == ["a", "b"]
    assert script.attempts == 4 and waits[0] == 3.0 and len(waits) == 3
    assert script.requests[3]["method"] == "b"


def test_async_402_cancels_the_other_batches() -> None:
    body = {"jsonrpc": "2.0", "id": 1, "error": {"code": 402, "message": "Payment Required"}}
    script = Script(httpx.Response(402, json=body))

    async def main() -> None:
        async with AsyncHTTPTransport(
            url=URL, transport=httpx.MockTransport(script), max_batch=1, max_concurrency=2
        ) as transport:
            await transport.handle_request([RpcCall(str(n), []) for n in range(50)])

    with pytest.raises(CreditsExhausted):
        asyncio.run(main())
    assert script.attempts <= 3  # the first refusal stops the rest


def test_a_batch_out_when_a_sibling_gets_402_lands_and_on_batch_keeps_it(devnet) -> None:
    """Its answer is charged for: cancelled in flight, it was paid and lost (a scan's resume
    notes missed it, and the rerun bought it again). Fault injection in front of the real
    devnet: the second batch is refused at once while the first is still out."""
    real = httpx.Client()
    body = {"jsonrpc": "2.0", "id": 1, "error": {"code": 402, "message": "Payment Required"}}

    def handler(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content)[0]["params"][0] != hex(0):
            return httpx.Response(402, json=body)
        time.sleep(0.3)  # out while the sibling is refused
        answer = real.post(str(request.url), content=request.content, headers=request.headers)
        return httpx.Response(answer.status_code, content=answer.content,
                              headers={"Content-Type": "application/json"})

    landed: list[int] = []
    transport = HTTPTransport(url=node_url(devnet), transport=httpx.MockTransport(handler),
                              max_batch=5, max_concurrency=2)
    try:
        with transport, pytest.raises(CreditsExhausted):
            transport.handle_request(
                [block(n) for n in range(10)],
                on_batch=lambda sent, results: landed.extend(
                    int(r.unwrap()["number"], 16) for r in results))
    finally:
        real.close()
    assert landed == [0, 1, 2, 3, 4]


# -- the governor and the options ----------------------------------------------------------------


def test_governor_books_waits_by_method_cost() -> None:
    now = [0.0]
    governor = CreditGovernor(1000 / GOVERNOR_HEADROOM, clock=lambda: now[0])  # 1000/s
    assert GOVERNOR_BURST == 0.5  # the bucket holds 500 credits
    assert governor.reserve(1500) == 0.0  # the burst: a positive bucket admits
    wait = governor.reserve(80)  # 1,000 in debt: admitted once it is positive again
    assert wait == pytest.approx(1.0, abs=0.01)
    wait = governor.reserve(80)  # queued behind the previous booking
    assert wait == pytest.approx(1.08, abs=0.01)
    now[0] = 10.0
    assert governor.reserve(80) == 0.0


def test_transport_governor_uses_method_costs() -> None:
    now = [0.0]
    script = Script(ok)
    transport, waits = mock(
        script,
        credits_per_second=300 / GOVERNOR_HEADROOM,
        clock=lambda: now[0],
        max_batch=1,
        max_concurrency=1,
    )
    transport.handle_request([RpcCall("eth_estimateGas", []) for _ in range(3)])  # 300 each
    # the first call overdraws the half-second bucket (150) by 150 and goes at once; the
    # second goes once it is positive again (0.5 s), the third waits out the second's 300
    assert len(waits) == 2
    assert waits[0] == pytest.approx(0.5, abs=0.01) and waits[1] == pytest.approx(1.5, abs=0.01)


@pytest.mark.parametrize(
    "options",
    [
        {"url": ""},
        {"url": "mainnet.infura.io/v3/x"},
        {"url": "ws://host/ws/v3/x"},
        {"url": URL, "max_batch": 0},
        {"url": URL, "credits_per_second": -1},
    ],
)
def test_bad_options_are_config_errors(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        HTTPTransport(**options)


def test_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        HTTPTransport(URL)  # type: ignore[misc]
    with pytest.raises(TypeError):
        AsyncHTTPTransport(URL)  # type: ignore[misc]


def test_answer_matching_fast_and_slow_paths_agree() -> None:
    from feeslab.fetch.transport import read_items

    calls = {i: RpcCall("eth_chainId", []) for i in (1, 2, 3)}
    whole = read_items([{"jsonrpc": "2.0", "id": i, "result": hex(i)} for i in (3, 1, 2)], calls)
    assert {i: r.result for i, r in whole.answered.items()} == {1: "0x1", 2: "0x2", 3: "0x3"}
    assert whole.retry_ids == []
    # one error item, a duplicate, an unknown id, a non-object: the careful path decides
    odd = [
        {"id": 1, "error": {"code": -32000, "message": "no"}},
        {"id": 2, "result": "0x2"},
        {"id": 2, "result": "0xdead"},
    ]
    outcome = read_items(odd, calls)
    assert not outcome.answered[1].ok and outcome.answered[2].result == "0x2"
    assert outcome.retry_ids == [3]
    for items in ([{"id": 9, "result": 1}, {"id": 1, "result": 1}, {"id": 2, "result": 1}],
                  ["x", {"id": 1, "result": 1}, {"id": 2, "result": 1}],
                  [{"id": [1], "result": 1}, {"id": 1, "result": 1}, {"id": 2, "result": 1}],
                  [{"id": 1}, {"id": 2, "result": 1}, {"id": 3, "result": 1}]):
        outcome = read_items(items, calls)
        assert sorted([*outcome.answered, *outcome.retry_ids]) == [1, 2, 3]
        assert outcome.retry_ids  # something was not answered: it goes again


def test_clients_share_one_tls_context() -> None:
    from feeslab.fetch._tls import shared_ssl_context

    first = HTTPTransport(url="https://example.invalid/v3/k")
    second = HTTPTransport(url="https://example.invalid/v3/k")
    try:
        assert shared_ssl_context() is shared_ssl_context()
        assert shared_ssl_context().verify_mode.name == "CERT_REQUIRED"
        assert shared_ssl_context().check_hostname
    finally:
        first.close()
        second.close()


# -- pacing: adapting to 429s, the hard stop, batches cut to the bucket ----------------------------


@pytest.mark.parametrize("form", ["seconds", "http-date"])
def test_a_429_is_honoured_and_the_pacer_slows_down_then_recovers(form: str) -> None:
    from feeslab.fetch.transport import QUIET_SECONDS, RATE_CUT, RECOVERY_PER_SECOND

    refused = [False]

    def limited_once(request: httpx.Request) -> httpx.Response:
        if not refused[0]:
            refused[0] = True
            if form == "seconds":
                after = "3"
            else:  # an HTTP date about 3 s ahead of the wall clock
                after = email.utils.formatdate(time.time() + 3.5, usegmt=True)  # 3-3.5 s
            return httpx.Response(429, json=TOO_MANY, headers={"Retry-After": after})
        return ok(request)

    transport, waits = moving(
        Script(limited_once), credits_per_second=1000, max_batch=1, max_concurrency=1
    )
    governor = transport.governor
    assert governor is not None and governor.rate == governor.ceiling == 950
    transport.handle_request([RpcCall("eth_chainId", [])])  # 5 credits: refused, then served
    assert transport.rate_limited == 1 and governor.cuts == 1
    assert 2.5 <= waits[0] <= 3.6  # the Retry-After, either form (a date: whole seconds)
    assert governor.rate == pytest.approx(950 * RATE_CUT)
    # served calls within the quiet stretch do not speed it up again
    transport.handle_request([RpcCall("eth_chainId", [])])
    assert governor.rate == pytest.approx(950 * RATE_CUT)
    # a stretch without 429s: the rate climbs back to the ceiling, not past it
    transport.now[0] += QUIET_SECONDS + 0.5 / RECOVERY_PER_SECOND + 1
    transport.handle_request([RpcCall("eth_chainId", [])])
    assert governor.rate == governor.ceiling
    assert transport.credits_spent == 3 * 5  # the 429 was free


def test_the_429s_of_one_burst_cut_the_rate_once_and_never_below_the_floor() -> None:
    from feeslab.fetch.transport import CUT_SPACING, RATE_FLOOR

    now = [0.0]
    governor = CreditGovernor(10_000, clock=lambda: now[0])
    for _ in range(8):  # eight batches in flight refused together
        governor.rate_limited(1.0)
    assert governor.cuts == 1 and governor.rate == pytest.approx(governor.ceiling / 2)
    # the bucket is empty until the Retry-After has passed
    assert governor.reserve(1) == pytest.approx(1.0, abs=0.01)
    for _ in range(20):
        now[0] += CUT_SPACING
        governor.rate_limited(1.0)
    assert governor.cuts == 21 and governor.rate == pytest.approx(governor.ceiling * RATE_FLOOR)


def test_never_ending_429s_end_with_rate_limited_after_the_patience() -> None:
    from feeslab.fetch.transport import DEFAULT_RATE_LIMIT_PATIENCE

    script = Script(httpx.Response(429, json=TOO_MANY, headers={"Retry-After": "30"}))
    transport, waits = moving(script, credits_per_second=40_000)
    with pytest.raises(RateLimited) as info:
        transport.handle_request([RpcCall("eth_getBlockByNumber", ["0x1", False])])
    assert DEFAULT_RATE_LIMIT_PATIENCE == 600
    # 20 waits of 30 s fill the 600 s of patience; the 21st refusal is the end
    assert script.attempts == 21 and info.value.attempts == 21
    assert transport.rate_limited == 20  # the last one was not waited out
    assert [w for w in waits if w >= 1] == [pytest.approx(30, abs=0.2)] * 20
    assert info.value.retry_after == 30.0
    text = str(info.value)
    assert "only 429" in text and "rate_limit_patience=600" in text
    assert "0123456789abcdef0123456789abcdef" not in text  # the key in the URL never shows


def test_patience_counts_only_while_nothing_is_served() -> None:
    # each answer serves one call and refuses the rest with -32005 (2 s backoff): 18 s of
    # refusals in all, past a 3 s patience, but something is served every time
    def one_at_a_time(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        items = body if isinstance(body, list) else [body]
        first, *rest = items
        answers = [{"jsonrpc": "2.0", "id": first["id"], "result": first["method"]}]
        answers += [
            {"jsonrpc": "2.0", "id": c["id"], "error": {**OLD_TOO_MANY["error"], "data": {
                "backoff_seconds": 2.0}}}
            for c in rest
        ]  # fmt: skip
        return httpx.Response(200, json=answers if isinstance(body, list) else answers[0])

    transport, waits = moving(Script(one_at_a_time), rate_limit_patience=3, max_batch=10)
    results = transport.handle_request([RpcCall(str(n), []) for n in range(10)])
    assert [r.result for r in results] == [str(n) for n in range(10)]
    assert transport.rate_limited == 9 and sum(waits) >= 18


def test_batches_are_cut_to_the_bucket_by_each_calls_cost() -> None:
    from feeslab.fetch.jsonrpc import chunks as _chunks

    calls = [RpcCall("eth_getBlockByNumber", [])] * 5 + [RpcCall("eth_estimateGas", [])] * 3
    # 400 credits a batch: 5 headers (400), then one 300-credit estimate per batch
    chunks = _chunks(calls, 500, 400)
    assert [len(c) for c in chunks] == [5, 1, 1, 1]
    assert _chunks(calls, 3, 400) == [calls[:3], calls[3:5], calls[5:6], calls[6:7], calls[7:]]
    assert _chunks(calls, 500, 10) == [[c] for c in calls]  # at least one call a batch
    assert _chunks(calls, 500, None) == [calls]
    seen = Statuses()
    script = Script(ok)
    transport, _ = mock(script, credits_per_second=8 * 400 / GOVERNOR_HEADROOM, on_response=seen)
    transport.handle_request([RpcCall("eth_getBlockByNumber", [hex(n)]) for n in range(12)])
    assert sorted(len(methods) for methods, _ in seen.seen) == [2, 5, 5]  # 400 credits each


def test_block_sized_answers_go_at_most_500_to_a_batch_small_ones_up_to_max_batch() -> None:
    from feeslab.fetch.jsonrpc import MOST_LARGE_ANSWERS
    from feeslab.fetch.jsonrpc import chunks as _chunks

    headers = [RpcCall("eth_getBlockByNumber", [hex(n), False]) for n in range(2_100)]
    counts = [RpcCall("eth_getUncleCountByBlockNumber", [hex(n)]) for n in range(2_100)]
    assert MOST_LARGE_ANSWERS == 500
    assert [len(c) for c in _chunks(headers, 1_000)] == [500] * 4 + [100]
    assert [len(c) for c in _chunks(counts, 1_000)] == [1_000, 1_000, 100]
    assert [len(c) for c in _chunks(counts, 300)] == [300] * 7  # max_batch still caps all
    assert [len(c) for c in _chunks(headers, 300)] == [300] * 7
    # mixed: a batch closes at 500 block-sized answers or 1,000 calls, whichever first
    mixed = counts[:700] + headers[:600] + counts[:100]
    assert [len(c) for c in _chunks(mixed, 1_000)] == [1_000, 400]
    assert [sum(c.method == "eth_getBlockByNumber" for c in b)
            for b in _chunks(mixed, 1_000)] == [300, 300]
    mixed = headers[:600] + counts[:300]
    assert [len(c) for c in _chunks(mixed, 1_000)] == [500, 400]
    assert [len(c) for c in _chunks(headers, 1_000, 80 * 200)] == [200] * 10 + [100]


def test_the_governor_takes_a_rate_told_later_and_keeps_a_slow_down() -> None:
    from concurrent.futures import Future

    now = [0.0]
    governor = CreditGovernor(40_000, clock=lambda: now[0])
    told: Future = Future()
    governor.follow(told)
    governor.reserve(80)  # not told yet: paces at what it has
    assert governor.ceiling == pytest.approx(40_000 * GOVERNOR_HEADROOM)
    governor.rate_limited(1.0)  # a 429 meanwhile halves the rate
    told.set_result(12_345)
    governor.reserve(80)  # taken without waiting, at the next booking
    assert governor.ceiling == pytest.approx(12_345 * GOVERNOR_HEADROOM)
    assert governor.rate == pytest.approx(governor.ceiling / 2)
    unknown: Future = Future()
    governor.follow(unknown)
    unknown.set_result(None)  # not a devnet: keep the rate it has
    governor.settle()
    assert governor.ceiling == pytest.approx(12_345 * GOVERNOR_HEADROOM)


# -- one count of credits, a budget before every request --------------------------------------


def test_the_ledger_is_the_one_count_and_402_reports_its_total() -> None:
    from feeslab.fetch.credits import CreditLedger

    ledger = CreditLedger()
    ledger.record("baseFeeHistory", kind="gas")  # another client on the same ledger: 80
    refused = httpx.Response(402, json={"error": {"code": 402, "details": "daily limit"}})
    script = Script(ok, refused)
    transport, _ = mock(script, ledger=ledger)
    with transport:
        transport.handle_request([block(1), block(2)])  # 160 credits
        assert transport.credits_spent == ledger.spent == 80 + 160
        with pytest.raises(CreditsExhausted) as caught:
            transport.handle_request([block(3)])
    assert caught.value.credits_spent == ledger.spent == 240  # the same total as the ledger


def test_a_budget_is_charged_before_each_request_and_refunded_when_refused() -> None:
    from feeslab.errors import BudgetExceeded
    from feeslab.fetch.credits import Budget

    budget = Budget(200)
    script = Script(httpx.Response(429, headers={"Retry-After": "1"}, json=TOO_MANY), ok)
    transport, waits = mock(script, budget=budget)
    with transport:
        transport.handle_request([block(1), block(2)])  # 160, charged twice, refunded once
        assert waits == [1.0]  # the 429 waited out
        assert budget.spent == 160 and script.attempts == 2
        with pytest.raises(BudgetExceeded) as caught:
            transport.handle_request([block(3)])  # 80 more would pass 200
    assert caught.value.planned == 80 and caught.value.spent == 160
    assert script.attempts == 2  # refused before it was sent


def test_a_fetchs_budgets_are_charged_in_one_place_once_per_request() -> None:
    # NodeClient.charging hands its budgets to the transport, which charges each request as
    # it goes (not the node's whole chunk up front as well), nested budgets alike, refunds alike
    from feeslab.errors import BudgetExceeded
    from feeslab.fetch.credits import Budget, CreditLedger
    from feeslab.fetch.node import NodeClient

    script = Script(httpx.Response(429, headers={"Retry-After": "1"}, json=TOO_MANY), ok)
    transport, waits = mock(script, max_batch=1, max_concurrency=1)  # a request per call
    node = NodeClient(transport, ledger=CreditLedger(), cache=False, progress=False)
    outer = Budget(1_000)
    with transport:
        with node.charging(outer):
            with node.charging(Budget(200)), pytest.raises(BudgetExceeded):
                node.run([block(1), block(2), block(3)])  # 240: the third would pass 200
            # each request charged before it went (the 429's attempt refunded): the two that
            # fit went, the third was refused unsent, and no budget kept its charge
            assert outer.spent == 160 and waits[0] == 1.0  # the 429 waited out
            assert script.attempts == 3
            inner = Budget(100)
            with node.charging(inner), pytest.raises(BudgetExceeded):
                node.run([block(4), block(5)])
            assert (outer.spent, inner.spent, script.attempts) == (240, 80, 4)
        node.run([block(6)])  # outside: no budget charged
    assert outer.spent == 240 and script.attempts == 5

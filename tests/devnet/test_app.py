"""The devnet over real HTTP and WebSocket on loopback: auth, limits, routes, subscriptions."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
import websockets

from feeslab.devnet import start

NETWORK_PATHS = [
    "/v3/{key}",
    "/mainnet/v3/{key}",
    "/sepolia/v3/{key}",
    "/polygon-mainnet/v3/{key}",
    "/base-mainnet/v3/{key}",
    "/v3/{key}/",  # a trailing slash is served, not redirected
    "/sepolia/v3/{key}/",
]
CHAIN_IDS = {
    "mainnet": "0x1",
    "sepolia": "0xaa36a7",
    "polygon-mainnet": "0x89",
    "base-mainnet": "0x2105",
}
GAS_ENDPOINTS = ["baseFeeHistory", "suggestedGasFees", "baseFeePercentile", "busyThreshold"]


def body(method: str, *params, id_: int = 1) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": list(params)}


def post(handle, payload, path: str = "/v3/{key}", **kwargs) -> httpx.Response:
    url = handle.url + path.format(key=handle.api_key)
    return httpx.post(url, json=payload, timeout=60, **kwargs)


def credits(handle) -> dict:
    reply = httpx.get(
        f"{handle.url}/devnet/credits", auth=(handle.api_key, handle.api_key_secret), timeout=60
    )
    assert reply.status_code == 200
    return reply.json()


def ws_exchange(url: str, *messages: dict | list, events: int = 0) -> list:
    """Send messages one at a time, collect one answer each, then ``events`` pushed messages."""

    async def run() -> list:
        received = []
        async with websockets.connect(url) as conn:
            for message in messages:
                await conn.send(json.dumps(message))
                received.append(json.loads(await asyncio.wait_for(conn.recv(), 30)))
            for _ in range(events):
                received.append(json.loads(await asyncio.wait_for(conn.recv(), 30)))
        return received

    return asyncio.run(run())


def ws_status(url: str) -> tuple[int, bytes]:
    """The HTTP status (and body) a refused WebSocket handshake got."""

    async def run():
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with websockets.connect(url):
                pass
        return refused.value.response.status_code, bytes(refused.value.response.body or b"")

    return asyncio.run(run())


# -- routes and chains ----------------------------------------------------------------------


@pytest.mark.parametrize("path", NETWORK_PATHS)
def test_every_network_path_serves_its_chain(devnet, path):
    parts = path.strip("/").split("/")
    network = parts[0] if len(parts) == 3 else "mainnet"
    reply = post(devnet, body("eth_chainId"), path)
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("application/json")
    assert reply.json() == {"jsonrpc": "2.0", "id": 1, "result": CHAIN_IDS[network]}


def test_unknown_network_is_404_json(devnet):
    reply = post(devnet, body("eth_chainId"), "/holesky/v3/{key}")
    assert reply.status_code == 404
    assert "holesky" in reply.json()["error"]
    status, _ = ws_status(f"{devnet.ws_url}/holesky/ws/v3/{devnet.api_key}")
    assert status == 404


def test_wrong_http_method_is_405_json(devnet):
    reply = httpx.get(f"{devnet.url}/v3/{devnet.api_key}", timeout=60)
    assert reply.status_code == 405
    assert reply.headers["allow"] == "POST"
    assert reply.json() == {"error": "method not allowed"}


def test_wrong_content_type_is_415(devnet):
    url = f"{devnet.url}/v3/{devnet.api_key}"
    reply = httpx.post(
        url,
        content=json.dumps(body("eth_chainId")),
        headers={"Content-Type": "text/plain"},
        timeout=60,
    )
    assert reply.status_code == 415
    assert reply.json()["error"]["code"] == -32600
    ok = httpx.post(
        url,
        content=json.dumps(body("eth_chainId")),
        headers={"Content-Type": "application/json; charset=utf-8"},
        timeout=60,
    )
    assert ok.json()["result"] == "0x1"


def test_huge_body_is_413_not_a_dropped_connection(devnet):
    url = f"{devnet.url}/v3/{devnet.api_key}"
    huge = b"[" + b'"' + b"x" * (6 * 1024 * 1024) + b'"]'
    reply = httpx.post(url, content=huge, headers={"Content-Type": "application/json"}, timeout=60)
    assert reply.status_code == 413
    assert reply.json()["error"]["code"] == -32600
    assert post(devnet, body("eth_chainId")).status_code == 200  # still serving


def test_unknown_path_is_json_404(devnet):
    reply = httpx.get(f"{devnet.url}/nothing/here", timeout=60)
    assert reply.status_code == 404
    assert "error" in reply.json()


def test_info_lists_seed_and_chains(devnet):
    reply = httpx.get(
        f"{devnet.url}/devnet/info", auth=(devnet.api_key, devnet.api_key_secret), timeout=60
    )
    info = reply.json()
    assert info["seed"] == 7
    assert {c["network"] for c in info["chains"]} == set(CHAIN_IDS)
    assert {c["chain_id"] for c in info["chains"]} == {1, 11155111, 137, 8453}
    assert all(c["head"] > 0 for c in info["chains"])
    assert info["block_time"] is None


def test_handle_repr_hides_key_and_secret(devnet):
    assert devnet.api_key not in repr(devnet)
    assert devnet.api_key_secret not in repr(devnet)
    assert devnet.api_key not in repr(devnet.devnet)
    assert devnet.url.startswith("http://127.0.0.1:")
    assert devnet.ws_url.startswith("ws://127.0.0.1:")


def test_non_loopback_host_is_refused():
    with pytest.raises(ValueError, match="non-loopback"):
        start(host="0.0.0.0")


# -- authentication ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v3/", "/v3", "/sepolia/v3/", "/sepolia/v3"])
def test_missing_key_is_401(devnet, path):
    reply = httpx.post(devnet.url + path, json=body("eth_chainId"), timeout=60)
    assert reply.status_code == 401
    assert reply.json() == {"error": "project id required in the URL"}


@pytest.mark.parametrize("path", ["/v3/{key}", "/sepolia/v3/{key}"])
def test_wrong_key_is_401_and_not_echoed(devnet, path):
    wrong = "0" * 32
    reply = httpx.post(devnet.url + path.format(key=wrong), json=body("eth_chainId"), timeout=60)
    assert reply.status_code == 401
    assert reply.json() == {"error": "invalid project id"}
    assert wrong not in reply.text and devnet.api_key not in reply.text


def test_websocket_key_is_checked_at_the_handshake(devnet):
    status, answer = ws_status(f"{devnet.ws_url}/ws/v3/{'0' * 32}")
    assert status == 401
    assert json.loads(answer) == {"error": "invalid project id"}
    status, answer = ws_status(f"{devnet.ws_url}/ws/v3/")
    assert status == 401
    assert json.loads(answer) == {"error": "project id required in the URL"}
    status, _ = ws_status(f"{devnet.ws_url}/sepolia/ws/v3/nope")
    assert status == 401


@pytest.mark.parametrize("path", ["/networks/1/baseFeeHistory", "/devnet/credits", "/devnet/info"])
def test_basic_auth_surfaces_say_what_is_wrong(devnet, path):
    url = devnet.url + path
    cases = [
        (None, "basic authentication required"),
        (("0" * 32, devnet.api_key_secret), "invalid project id"),
        ((devnet.api_key, "0" * 32), "invalid project secret"),
        ((devnet.api_key, ""), "project secret required"),
    ]
    for creds, message in cases:
        reply = httpx.get(url, auth=creds, timeout=60)
        assert reply.status_code == 401
        assert reply.json() == {"error": message}
        assert reply.headers["www-authenticate"].startswith("Basic")
    garbled = httpx.get(url, headers={"Authorization": "Basic !!!notbase64"}, timeout=60)
    assert garbled.status_code == 401


def test_gas_api_key_only_path_checks_the_key(devnet):
    reply = httpx.get(f"{devnet.url}/v3/{'0' * 32}/networks/1/baseFeeHistory", timeout=60)
    assert reply.status_code == 401
    assert reply.json() == {"error": "invalid project id"}


# -- Gas API ----------------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", GAS_ENDPOINTS)
def test_gas_api_answers_on_both_paths(devnet, endpoint):
    basic = httpx.get(
        f"{devnet.url}/networks/1/{endpoint}",
        auth=(devnet.api_key, devnet.api_key_secret),
        timeout=60,
    )
    key_only = httpx.get(f"{devnet.url}/v3/{devnet.api_key}/networks/1/{endpoint}", timeout=60)
    assert basic.status_code == key_only.status_code == 200
    if endpoint == "baseFeeHistory":
        history = basic.json()
        assert len(history) == 500
        assert all(isinstance(fee, str) for fee in history)
    else:
        assert isinstance(basic.json(), dict)


def test_gas_api_unknown_chain_is_400_naming_supported_ids(devnet):
    reply = httpx.get(f"{devnet.url}/v3/{devnet.api_key}/networks/42/baseFeeHistory", timeout=60)
    assert reply.status_code == 400
    answer = reply.json()
    assert "42" in answer["error"]
    assert answer["supported_chain_ids"] == [1, 137, 8453, 11155111]


def test_gas_api_unknown_endpoint_is_404(devnet):
    reply = httpx.get(f"{devnet.url}/v3/{devnet.api_key}/networks/1/nope", timeout=60)
    assert reply.status_code == 404
    assert "nope" in reply.json()["error"]


# -- credits ----------------------------------------------------------------------------------


def test_batch_charges_every_call_and_the_ledger_adds_up():
    with start(seed=7, daily_credits=100_000) as handle:
        assert credits(handle) == {"spent": 0, "remaining": 100_000, "by_method": {}}
        batch = [
            body("eth_chainId", id_=1),
            body("eth_blockNumber", id_=2),
            body("eth_getStorageAt", "0x" + "00" * 20, "0x0", "latest", id_=3),
            body("no_such_method", id_=4),
            {"jsonrpc": "2.0", "method": "eth_chainId"},
        ]
        reply = post(handle, batch)
        assert reply.status_code == 200
        assert len(reply.json()) == 4  # the notification is charged but not answered
        httpx.get(
            f"{handle.url}/networks/137/baseFeeHistory",
            auth=(handle.api_key, handle.api_key_secret),
            timeout=60,
        )
        httpx.get(f"{handle.url}/v3/{handle.api_key}", timeout=60)  # 405 costs 5
        post(handle, body("eth_chainId"), "/v3/" + "0" * 32)  # 401 costs nothing
        ledger = credits(handle)
        assert ledger["by_method"] == {
            "eth_chainId": 10,
            "eth_blockNumber": 80,
            "eth_getStorageAt": 80,
            "no_such_method": 80,
            "baseFeeHistory": 80,
            "http_4xx": 5,
        }
        assert ledger["spent"] == sum(ledger["by_method"].values()) == 335
        assert ledger["spent"] + ledger["remaining"] == 100_000


def test_daily_balance_exhausted_is_402_with_the_reference_body():
    with start(seed=7, daily_credits=200) as handle:
        assert post(handle, body("eth_blockNumber", id_=5)).status_code == 200
        assert post(handle, body("eth_blockNumber", id_=6)).status_code == 200
        reply = post(handle, body("eth_blockNumber", id_=7))
        assert reply.status_code == 402
        assert reply.json() == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {
                "code": 402,
                "event": -33000,
                "message": "Payment Required",
                "details": reply.json()["error"]["details"],
            },
        }
        assert reply.json()["error"]["details"].startswith("You have reached your daily credit")
        assert post(handle, body("eth_chainId")).status_code == 200  # 5 still fit in 40
        gas = httpx.get(f"{handle.url}/v3/{handle.api_key}/networks/1/busyThreshold", timeout=60)
        assert gas.status_code == 402
        assert credits(handle)["spent"] == 165  # refused requests were free


def test_throughput_exceeded_is_429_with_retry_after():
    with start(seed=7, credits_per_second=100) as handle:
        batch = [body("eth_blockNumber", id_=i) for i in range(5)]  # 400 credits at once
        assert post(handle, batch).status_code == 200
        reply = post(handle, body("eth_chainId"))
        assert reply.status_code == 429
        assert reply.json()["error"]["code"] == 429
        assert reply.json()["error"]["event"] == -33200
        assert reply.json()["error"]["message"] == "Too Many Requests"
        retry_after = int(reply.headers["retry-after"])
        assert 1 <= retry_after <= 4
        assert credits(handle)["spent"] == 400
        time.sleep(retry_after)
        assert post(handle, body("eth_chainId")).status_code == 200


# -- WebSocket --------------------------------------------------------------------------------


def test_websocket_answers_singles_and_batches(devnet):
    url = f"{devnet.ws_url}/sepolia/ws/v3/{devnet.api_key}"
    single, batch, garbage = ws_exchange(
        url,
        body("eth_chainId"),
        [body("eth_chainId", id_=1), body("nope", id_=2)],
        {"jsonrpc": "2.0", "id": 3},
    )
    assert single == {"jsonrpc": "2.0", "id": 1, "result": "0xaa36a7"}
    assert batch[0]["result"] == "0xaa36a7"
    assert batch[1]["error"]["code"] == -32601
    assert garbage["error"]["code"] == -32600


def test_websocket_subscription_kinds(devnet):
    url = f"{devnet.ws_url}/ws/v3/{devnet.api_key}"
    sub, logs, stop, again = ws_exchange(
        url,
        body("eth_subscribe", "newHeads", id_=1),
        body("eth_subscribe", "logs", id_=2),
        body("eth_unsubscribe", "SUB", id_=3),
        body("eth_unsubscribe", "SUB", id_=4),
    )
    assert len(sub["result"]) == 34 and sub["result"].startswith("0x")
    assert logs["error"]["code"] == -32602
    # the same connection's unsubscribe of an unknown id is false
    assert stop["result"] is False and again["result"] is False


def test_newheads_arrive_in_order_and_are_charged():
    with start(seed=7, block_time=0.2) as handle:
        url = f"{handle.ws_url}/ws/v3/{handle.api_key}"

        async def run():
            async with websockets.connect(url) as conn:
                await conn.send(json.dumps(body("eth_subscribe", "newHeads")))
                sub_id = json.loads(await conn.recv())["result"]
                events = [json.loads(await asyncio.wait_for(conn.recv(), 30)) for _ in range(5)]
                await conn.send(json.dumps(body("eth_unsubscribe", sub_id, id_=2)))
                while True:  # events already in flight may come before the answer
                    message = json.loads(await asyncio.wait_for(conn.recv(), 30))
                    if message.get("id") == 2:
                        return sub_id, events, message["result"]

        sub_id, events, unsubscribed = asyncio.run(run())
        assert unsubscribed is True
        numbers = [int(e["params"]["result"]["number"], 16) for e in events]
        assert numbers == list(range(numbers[0], numbers[0] + 5))
        for event in events:
            assert event["method"] == "eth_subscription"
            assert event["params"]["subscription"] == sub_id
            assert "id" not in event
        ledger = credits(handle)["by_method"]
        assert ledger["eth_subscribe"] == 5 and ledger["eth_unsubscribe"] == 10
        assert ledger["newHeads"] >= 5 * 50 and ledger["newHeads"] % 50 == 0


def test_websocket_is_closed_when_the_balance_runs_out():
    with start(seed=7, block_time=0.1, daily_credits=5 + 2 * 50 + 20) as handle:
        url = f"{handle.ws_url}/ws/v3/{handle.api_key}"

        async def run():
            messages = []
            async with websockets.connect(url) as conn:
                await conn.send(json.dumps(body("eth_subscribe", "newHeads")))
                with pytest.raises(websockets.ConnectionClosed):
                    while True:
                        messages.append(json.loads(await asyncio.wait_for(conn.recv(), 30)))
            return messages

        messages = asyncio.run(run())
        assert len(messages) == 4  # subscription id, two heads, then the 402 body
        assert messages[-1]["error"]["code"] == 402
        assert credits(handle)["spent"] == 105


# -- latency ----------------------------------------------------------------------------------


def test_latency_option_delays_http_and_websocket_answers():
    latency = 0.3
    with start(seed=7, latency_ms=latency * 1000) as handle:
        started = time.monotonic()
        assert post(handle, body("eth_chainId")).status_code == 200
        assert time.monotonic() - started >= latency

        async def ws_round_trip() -> float:
            async with websockets.connect(f"{handle.ws_url}/ws/v3/{handle.api_key}") as conn:
                began = time.monotonic()
                await conn.send(json.dumps(body("eth_chainId")))
                await conn.recv()
                return time.monotonic() - began

        assert asyncio.run(ws_round_trip()) >= latency


def test_listening_socket_is_tcp_so_answers_are_not_delayed_by_nagle():
    # asyncio turns on TCP_NODELAY for accepted connections only when the
    # listening socket's proto is IPPROTO_TCP; without it small answers wait ~40 ms
    import socket

    from feeslab.devnet.server import _bind

    sock = _bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()

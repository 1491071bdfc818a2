"""No input gets a 500 and nothing grows without bound: slow and idle connections time out,
a client that hangs up mid-body leaves one log line, subscriptions per connection are capped.

Real sockets on loopback; the server's log records are captured from the ``logging`` tree
(uvicorn, Starlette and the devnet all log there).
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time

import pytest
import websockets

from feeslab.devnet import start
from feeslab.devnet.subscriptions import MAX_SUBSCRIPTIONS_PER_CONNECTION

READ_TIMEOUT = 1.0


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def text(self) -> str:
        return "\n".join(self.format(r) for r in self.records)


@pytest.fixture
def log():
    handler = Records()
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield handler
    root.removeHandler(handler)
    root.setLevel(previous)


@pytest.fixture(scope="module")
def quick():
    """A devnet whose connections must send a request within READ_TIMEOUT seconds."""
    with start(seed=7, warm=False, read_timeout=READ_TIMEOUT) as handle:
        yield handle


def address(handle) -> tuple[str, int]:
    return handle.host, handle.port


def closed_within(sock: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed ``sock`` (reads drained), or None if it stayed open."""
    start_at = time.monotonic()
    sock.settimeout(0.1)
    while time.monotonic() - start_at < seconds:
        try:
            if sock.recv(65536) == b"":
                return time.monotonic() - start_at
        except TimeoutError:
            continue
        except ConnectionResetError:
            return time.monotonic() - start_at
    return None


def test_a_short_body_then_hang_up_logs_one_line(devnet, log):
    head = (
        f"POST /v3/{devnet.api_key} HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    ).encode()
    with socket.create_connection(address(devnet)) as sock:
        sock.sendall(head + b'{"jsonrpc":')
    time.sleep(0.5)
    text = log.text()
    assert "Traceback" not in text and not any(r.exc_info for r in log.records), text
    lines = [r for r in log.records if "disconnected" in r.getMessage()]
    assert len(lines) == 1, text
    assert "11 of 1000" in lines[0].getMessage()


def test_a_silent_connection_is_closed(quick):
    with socket.create_connection(address(quick)) as sock:
        took = closed_within(sock, READ_TIMEOUT + 3)
    assert took is not None and took >= READ_TIMEOUT * 0.9


def test_slow_headers_are_cut_off(quick):
    # slowloris: a header line every 0.2 s never completes the request
    with socket.create_connection(address(quick)) as sock:
        sock.sendall(b"POST /v3/x HTTP/1.1\r\nHost: x\r\n")
        began = time.monotonic()
        closed = False
        while time.monotonic() - began < READ_TIMEOUT + 3:
            try:
                sock.sendall(b"X-Slow: 1\r\n")
            except OSError:
                closed = True
                break
            if closed_within(sock, 0.2) is not None:
                closed = True
                break
    assert closed and time.monotonic() - began < READ_TIMEOUT + 2


def test_a_stalled_body_is_cut_off(quick, log):
    with socket.create_connection(address(quick)) as sock:
        sock.sendall(
            f"POST /v3/{quick.api_key} HTTP/1.1\r\nHost: x\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{".encode()
        )
        took = closed_within(sock, READ_TIMEOUT + 3)
    assert took is not None
    time.sleep(0.2)
    assert "Traceback" not in log.text()


def test_an_idle_keep_alive_connection_is_closed(quick):
    with socket.create_connection(address(quick)) as sock:
        body = b'{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}'
        sock.sendall(
            f"POST /v3/{quick.api_key} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode() + body
        )
        sock.settimeout(5)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        took = closed_within(sock, READ_TIMEOUT + 3)
    assert took is not None


def test_many_slow_connections_are_all_closed(quick):
    socks = [socket.create_connection(address(quick)) for _ in range(200)]
    try:
        for sock in socks:
            sock.sendall(b"GET /devnet/info HTTP/1.1\r\n")
        time.sleep(READ_TIMEOUT + 1)
        still_open = sum(closed_within(sock, 0.5) is None for sock in socks)
    finally:
        for sock in socks:
            sock.close()
    assert still_open == 0


def test_websockets_are_not_cut_by_the_read_timeout(quick):
    async def run() -> dict:
        async with websockets.connect(f"{quick.ws_url}/ws/v3/{quick.api_key}") as ws:
            await asyncio.sleep(READ_TIMEOUT * 2)
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_chainId"}))
            return json.loads(await asyncio.wait_for(ws.recv(), 10))

    assert asyncio.run(run())["result"] == "0x1"


def subscribe(i: int) -> str:
    body = {"jsonrpc": "2.0", "id": i, "method": "eth_subscribe", "params": ["newHeads"]}
    return json.dumps(body)


def test_subscriptions_per_connection_are_capped(devnet):
    limit = MAX_SUBSCRIPTIONS_PER_CONNECTION

    async def run() -> tuple[list, dict, dict]:
        async with websockets.connect(f"{devnet.ws_url}/ws/v3/{devnet.api_key}") as ws:
            answers = []
            for i in range(limit + 1):
                await ws.send(subscribe(i))
                answers.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
            first = answers[0]["result"]
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": "u", "method": "eth_unsubscribe",
                                      "params": [first]}))
            freed = json.loads(await asyncio.wait_for(ws.recv(), 30))
            await ws.send(subscribe(-1))
            again = json.loads(await asyncio.wait_for(ws.recv(), 30))
            return answers, freed, again

    answers, freed, again = asyncio.run(run())
    assert all("result" in a for a in answers[:limit])
    assert answers[limit]["error"]["code"] == -32005
    assert f"limit {limit}" in answers[limit]["error"]["message"]
    assert freed["result"] is True and "result" in again


def test_wallet_subscriptions_per_connection_are_capped(devnet):
    limit = MAX_SUBSCRIPTIONS_PER_CONNECTION
    scope = {"methods": ["eth_subscribe"], "notifications": ["eth_subscription"]}

    def invoke(i: int, chain: str) -> str:
        request = {"method": "eth_subscribe", "params": ["newHeads"]}
        params = {"scope": chain, "request": request}
        return json.dumps({"jsonrpc": "2.0", "id": i, "method": "wallet_invokeMethod",
                           "params": params})

    async def run() -> list:
        async with websockets.connect(f"{devnet.ws_url}/wallet") as ws:
            create = {"optionalScopes": {"eip155:1": scope, "eip155:137": scope}}
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "wallet_createSession",
                                      "params": create}))
            await asyncio.wait_for(ws.recv(), 30)
            answers = []
            for i in range(limit + 1):  # across both chains: one connection, one cap
                await ws.send(invoke(i + 1, "eip155:1" if i % 2 else "eip155:137"))
                while True:
                    message = json.loads(await asyncio.wait_for(ws.recv(), 30))
                    if "id" in message:
                        break
                answers.append(message)
            return answers

    answers = asyncio.run(run())
    assert all("result" in a for a in answers[:limit])
    assert answers[limit]["error"]["code"] == -32005


def test_an_ipfs_upload_cut_short_logs_one_line(devnet, log):
    import base64

    auth = base64.b64encode(f"{devnet.api_key}:{devnet.api_key_secret}".encode()).decode()
    head = (
        "POST /api/v0/add HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Basic {auth}\r\n"
        "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 5000\r\n\r\n"
    ).encode()
    part = b'--b\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n\r\nhello'
    with socket.create_connection(address(devnet)) as sock:
        sock.sendall(head + part)
        time.sleep(0.2)
    time.sleep(0.5)
    text = log.text()
    assert "Traceback" not in text and not any(r.exc_info for r in log.records), text
    lines = [r for r in log.records if "disconnected" in r.getMessage()]
    assert len(lines) == 1, text
    assert "/api/v0/add" in lines[0].getMessage()


def test_feeslab_serve_read_timeout():
    from feeslab.devnet import spawn

    with spawn(seed=7, read_timeout=0.5) as served:
        host, port = served.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as sock:
            took = closed_within(sock, 5)
    assert took is not None and took < 3
    with pytest.raises(RuntimeError, match="read_timeout must be > 0"):
        spawn(seed=7, read_timeout=0)

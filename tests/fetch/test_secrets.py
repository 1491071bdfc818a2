"""Keys and secrets stay out of log records, exceptions and their chains, reprs and the cache.

Every surface talks to a real devnet on loopback whose key and secret are distinctive
(``k3y`` + a uuid): DEBUG logging is captured both by caplog and by a real root handler
writing to a StringIO. Failures are real too: a closed loopback port (refused) and a loopback
socket that accepts connections and never answers (timeout).
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import socket
import traceback
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

import feeslab
from feeslab._redact import LOG_FILTER, redact, register_secrets, scrub_exception
from feeslab.caip import Scope
from feeslab.devnet import start
from feeslab.errors import ConfigError, TransportError
from feeslab.fetch.credits import CreditLedger
from feeslab.fetch.gas import GasClient
from feeslab.fetch.ipfs import AsyncIpfsClient, IpfsClient
from feeslab.fetch.transport import AsyncHTTPTransport, HTTPTransport, RpcCall
from feeslab.fetch.wallet import WalletClient
from feeslab.fetch.ws import WebSocketTransport

KEY = "k3y" + uuid.uuid4().hex
SECRET = "s3cr3t" + uuid.uuid4().hex
BASIC = base64.b64encode(f"{KEY}:{SECRET}".encode()).decode()
FORBIDDEN = (KEY, SECRET, BASIC)


def leaked(text: str) -> list[str]:
    return [secret for secret in FORBIDDEN if secret in text]


@pytest.fixture(scope="module")
def dev() -> Iterator[Any]:
    with start(
        seed=7, api_key=KEY, api_key_secret=SECRET, daily_credits=10**15, credits_per_second=10**12
    ) as handle:
        yield handle


@pytest.fixture
def logs(
    caplog: pytest.LogCaptureFixture,
) -> Iterator[tuple[pytest.LogCaptureFixture, io.StringIO]]:
    """Everything logged at DEBUG: caplog's records, and a real root handler's text."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    caplog.set_level(logging.DEBUG)
    try:
        yield caplog, stream
    finally:
        root.removeHandler(handler)


def assert_no_secret_logged(caplog: pytest.LogCaptureFixture, stream: io.StringIO) -> None:
    assert caplog.records, "nothing was logged: the test would prove nothing"
    for record in caplog.records:
        shown = [record.getMessage(), repr(record.args), record.exc_text or "", str(record.msg)]
        if record.exc_info and record.exc_info[1] is not None:
            shown.append("".join(traceback.format_exception(record.exc_info[1])))
        if record.stack_info:
            shown.append(record.stack_info)
        assert not leaked("\n".join(shown)), f"{record.name}: {record.getMessage()}"
    assert not leaked(caplog.text)
    assert not leaked(stream.getvalue())


def messages(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == name]


def lab_on(dev: Any, **options: Any) -> feeslab.Lab:
    options = {"cache": False, "progress": False, **options}
    return feeslab.connect(url=dev.url, api_key=KEY, api_key_secret=SECRET, **options)


# -- log records, surface by surface ----------------------------------------------------------


def test_node_http_batches_log_no_key(dev, logs) -> None:
    caplog, stream = logs
    with lab_on(dev, max_batch=4) as lab:
        frame = lab.blocks(1, 21)  # 20 calls in 5 batches
    assert len(frame) == 20
    # the node's batches (the pacer's GET /devnet/info carries no key)
    sent = [m for m in messages(caplog, "httpx") if "POST" in m]
    assert len(sent) >= 5
    assert all(f"{dev.url}/v3/*** " in m for m in sent), sent[:2]
    assert messages(caplog, "httpcore.http11"), "httpcore's DEBUG records were not seen"
    assert_no_secret_logged(caplog, stream)


def test_node_websocket_logs_no_key(dev, logs) -> None:
    caplog, stream = logs
    with lab_on(dev, websocket=True, max_batch=4) as lab:
        assert len(lab.blocks(1, 9)) == 8
    handshake = [m for m in messages(caplog, "websockets.client") if m.startswith("> GET ")]
    assert handshake == ["> GET /ws/v3/*** HTTP/1.1"]
    assert_no_secret_logged(caplog, stream)


def test_gas_api_logs_no_key_basic_or_key_only(dev, logs) -> None:
    caplog, stream = logs
    with lab_on(dev) as lab:
        assert len(lab.base_fee_history()) == 500
    ledger = CreditLedger()
    key_only = GasClient(base_url=dev.url, api_key=KEY, api_key_secret=None, ledger=ledger)
    try:
        assert len(key_only.base_fee_history(1)) == 500
    finally:
        key_only.close()
    sent = messages(caplog, "httpx")
    assert any("/networks/1/baseFeeHistory" in m and "/v3/" not in m for m in sent)
    assert any("/v3/***/networks/1/baseFeeHistory" in m for m in sent)
    assert_no_secret_logged(caplog, stream)


def test_ipfs_logs_no_key_or_secret(dev, logs) -> None:
    caplog, stream = logs
    with lab_on(dev) as lab:
        (added,) = lab.ipfs.add(b"no secrets here\n", name="plain.txt")
        assert lab.ipfs.cat(added.cid) == b"no secrets here\n"
    assert any("/api/v0/cat" in m for m in messages(caplog, "httpx"))
    assert_no_secret_logged(caplog, stream)


def test_wallet_logs_no_key(dev, logs) -> None:
    caplog, stream = logs
    with lab_on(dev) as lab:
        lab.wallet.create({"eip155:1": Scope(methods=["eth_blockNumber"])})
        assert int(lab.wallet.invoke("eip155:1", "eth_blockNumber"), 16) > 0
    assert messages(caplog, "websockets.client")
    assert_no_secret_logged(caplog, stream)


def test_a_leaky_record_is_rewritten_not_dropped(logs) -> None:
    caplog, stream = logs
    register_secrets(KEY, SECRET)
    url = httpx.URL(f"https://mainnet.infura.io/v3/{KEY}")
    logging.getLogger("httpx").info("HTTP Request: %s %s", "POST", url)
    logging.getLogger("websockets.client").debug("> Authorization: Basic %s", BASIC)
    logging.getLogger("feeslab.fetch.cache").warning("key %s and secret %s", KEY, SECRET)
    logging.getLogger("httpx").info("plain %d", 7)  # nothing secret: left as it was
    texts = [r.getMessage() for r in caplog.records]
    assert texts == [
        "HTTP Request: POST https://mainnet.infura.io/v3/***",
        "> Authorization: Basic ***",
        "key *** and secret ***",
        "plain 7",
    ]
    assert caplog.records[-1].args == (7,)
    assert_no_secret_logged(caplog, stream)


def test_an_exception_in_a_record_is_scrubbed(logs, closed_port: int) -> None:
    caplog, stream = logs
    register_secrets(KEY, SECRET)
    try:  # a raw httpx error, straight from httpx: its request carries the key and the secret
        httpx.post(f"http://127.0.0.1:{closed_port}/v3/{KEY}", auth=(KEY, SECRET))
    except httpx.ConnectError as exc:
        raw = exc
    assert KEY in str(raw.request.url)
    logging.getLogger("feeslab.fetch.cache").error("the request failed", exc_info=raw)
    (record,) = [r for r in caplog.records if r.name == "feeslab.fetch.cache"]
    assert "ConnectError" in record.exc_text and "Connection refused" in record.exc_text
    assert str(raw.request.url) == f"http://127.0.0.1:{closed_port}/v3/***"
    assert raw.request.headers["authorization"] == "Basic ***"
    assert_no_secret_logged(caplog, stream)


def test_the_filter_is_on_every_logger_the_requests_use(dev) -> None:
    with lab_on(dev):
        pass
    names = ["httpx", "httpcore.connection", "httpcore.http11", "websockets.client"]
    names += ["websockets.server", "uvicorn.error", "feeslab.fetch.cache", "feeslab.fetch.wallet"]
    for name in names:
        assert LOG_FILTER in logging.getLogger(name).filters, name


# -- exceptions and their chains ------------------------------------------------------------


@pytest.fixture
def closed_port() -> int:
    """A loopback port nobody listens on: connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield sock.getsockname()[1]


def chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo = [error]
    while todo:
        link = todo.pop()
        if link is None or any(link is s for s in seen):
            continue
        seen.append(link)
        todo += [link.__cause__, link.__context__]
    return seen


def _headers(message: Any) -> str:
    headers = getattr(message, "headers", None)
    if isinstance(headers, httpx.Headers):
        return repr(headers.multi_items())
    if hasattr(headers, "raw_items"):
        return repr(list(headers.raw_items()))
    return repr(headers)


def everything_shown(error: BaseException) -> tuple[str, int]:
    """All the text the error and its chain can show, and how many requests it holds."""
    texts = [str(error), repr(error), "".join(traceback.format_exception(error))]
    requests = 0
    for link in chain(error):
        texts += [str(link), repr(link), repr(link.args), repr(vars(link))]
        for name in ("request", "response"):
            try:
                message = getattr(link, name)
            except (AttributeError, RuntimeError):  # httpx: "the .request property ... not set"
                continue
            if message is None:
                continue
            requests += isinstance(message, httpx.Request)
            texts += [repr(message), str(getattr(message, "url", "")), _headers(message)]
            if isinstance(message, httpx.Response):
                texts += [
                    repr(message.request),
                    str(message.request.url),
                    _headers(message.request),
                ]
    return "\n".join(texts), requests


def node_http(port: int) -> None:
    url = f"http://127.0.0.1:{port}/v3/{KEY}"
    with HTTPTransport(url=url, retries=0, timeout=0.5) as transport:
        transport.handle_request([RpcCall("eth_blockNumber"), RpcCall("eth_chainId")])


def node_http_other_provider(port: int) -> None:
    """rpc_url= of another provider: the key in a /v2/ path and the query."""
    url = f"http://127.0.0.1:{port}/v2/{KEY}?apikey={SECRET}"
    with HTTPTransport(url=url, retries=0, timeout=0.5) as transport:
        transport.handle_request([RpcCall("eth_blockNumber")])


def node_http_async(port: int) -> None:
    async def main() -> None:
        url = f"http://127.0.0.1:{port}/v3/{KEY}"
        async with AsyncHTTPTransport(url=url, retries=0, timeout=0.5) as transport:
            await transport.handle_request([RpcCall("eth_blockNumber")])

    asyncio.run(main())


def node_websocket(port: int) -> None:
    url = f"ws://127.0.0.1:{port}/ws/v3/{KEY}"
    with WebSocketTransport(url=url, retries=0, timeout=0.5) as transport:
        transport.handle_request([RpcCall("eth_blockNumber")])


def gas_basic(port: int) -> None:
    gas = GasClient(
        base_url=f"http://127.0.0.1:{port}", api_key=KEY, api_key_secret=SECRET,
        ledger=CreditLedger(), retries=0, timeout=0.5,
    )  # fmt: skip
    try:
        gas.base_fee_history(1)
    finally:
        gas.close()


def gas_key_only(port: int) -> None:
    gas = GasClient(
        base_url=f"http://127.0.0.1:{port}", api_key=KEY, api_key_secret=None,
        ledger=CreditLedger(), retries=0, timeout=0.5,
    )  # fmt: skip
    try:
        gas.base_fee_history(1)
    finally:
        gas.close()


def ipfs(port: int) -> None:
    root = f"http://127.0.0.1:{port}"
    with IpfsClient(base_url=root, api_key=KEY, api_key_secret=SECRET, retries=0, timeout=0.5) as c:
        c.cat("bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e")


def ipfs_async(port: int) -> None:
    async def main() -> None:
        root = f"http://127.0.0.1:{port}"
        client = AsyncIpfsClient(
            base_url=root, api_key=KEY, api_key_secret=SECRET, retries=0, timeout=0.5
        )
        async with client:
            await client.version()

    asyncio.run(main())


def wallet(port: int) -> None:
    with WalletClient(url=f"ws://127.0.0.1:{port}/ws/v3/{KEY}", timeout=0.5) as client:
        client.get()


SURFACES: dict[str, tuple[Callable[[int], None], bool]] = {
    # name: (what to run, whether an httpx request rides on the chain)
    "node-http": (node_http, True),
    "node-http-async": (node_http_async, True),
    "node-http-other-provider": (node_http_other_provider, True),
    "node-websocket": (node_websocket, False),
    "gas-basic": (gas_basic, True),
    "gas-key-only": (gas_key_only, True),
    "ipfs": (ipfs, True),
    "ipfs-async": (ipfs_async, True),
    "wallet": (wallet, False),
}


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("failure", ["refused", "timeout"])
def test_a_failed_connection_shows_no_key_anywhere_in_the_chain(
    surface: str, failure: str, closed_port: int, silent_port: int
) -> None:
    run, over_httpx = SURFACES[surface]
    port = closed_port if failure == "refused" else silent_port
    with pytest.raises(TransportError) as caught:
        run(port)
    shown, requests = everything_shown(caught.value)
    assert not leaked(shown), shown
    # still useful: it says what happened, and the cause keeps its type and its (masked) request
    said = "refused|Connect call failed|connection attempts failed"
    said = said if failure == "refused" else "timed out"
    assert any(part in str(caught.value) for part in said.split("|")), str(caught.value)
    if over_httpx:
        assert requests >= 1
        assert isinstance(caught.value.__cause__, httpx.TransportError)
        url = str(caught.value.__cause__.request.url)
        assert url.startswith(f"http://127.0.0.1:{port}/")
        if "/v3/" in url or "/v2/" in url:
            assert "/v3/***" in url or "/v2/***?apikey=***" in url


def test_an_invalid_url_with_a_key_shows_no_key() -> None:
    with pytest.raises(ConfigError) as caught:
        HTTPTransport(url=f"http://127.0.0.1:1/v3/{KEY}\x00")
    shown, _ = everything_shown(caught.value)
    assert not leaked(shown), shown
    assert "/v3/***" in str(caught.value)


@pytest.mark.parametrize("tail", ["#fragment", ""])
def test_a_websocket_url_websockets_refuses_shows_no_key(tail: str) -> None:
    port = "1" if tail else "99999"  # a fragment, or a port out of range
    url = f"ws://127.0.0.1:{port}/ws/v3/{KEY}{tail}"
    refused = pytest.raises(ConfigError, match="the WebSocket URL cannot be used")
    with WebSocketTransport(url=url, retries=0, timeout=0.5) as transport, refused as caught:
        transport.handle_request([RpcCall("eth_blockNumber")])
    shown, _ = everything_shown(caught.value)
    assert not leaked(shown), shown


def test_scrub_exception_keeps_type_and_story() -> None:
    request = httpx.Request("POST", f"https://mainnet.infura.io/v3/{KEY}")
    request.headers["Authorization"] = f"Basic {BASIC}"
    inner = httpx.ConnectError("[Errno 111] Connection refused", request=request)
    try:
        try:
            raise inner
        except httpx.ConnectError:
            raise RuntimeError(f"while fetching https://x/ws/v3/{KEY}?apikey={SECRET}") from None
    except RuntimeError as outer:
        error = outer
    assert error.__context__ is inner  # `from None` keeps the context: it must be clean too
    assert scrub_exception(error) is error
    assert str(error) == "while fetching https://x/ws/v3/***?apikey=***"
    assert isinstance(error.__context__, httpx.ConnectError)
    assert str(inner) == "[Errno 111] Connection refused"
    assert str(inner.request.url) == "https://mainnet.infura.io/v3/***"
    assert inner.request.headers["authorization"] == "Basic ***"
    assert not leaked(everything_shown(error)[0])


def test_redact_masks_registered_secrets_but_not_short_words() -> None:
    register_secrets(KEY, SECRET)
    assert redact(f"echo {KEY}, then {SECRET} and {BASIC}") == "echo ***, then *** and ***"
    register_secrets("wrong")  # too short to mask in every text of the process
    assert redact("something went wrong") == "something went wrong"


# -- reprs and the cache -------------------------------------------------------------------------


def test_reprs_show_no_key(dev) -> None:
    with lab_on(dev) as lab, lab_on(dev, websocket=True) as over_ws:
        shown = [lab, lab.node, lab.node.transport, lab.gas, lab.ipfs, lab.wallet, lab.credits]
        shown += [over_ws, over_ws.node, over_ws.node.transport, dev]
        text = "\n".join(f"{obj!r} {obj}" for obj in shown)
    assert "/v3/***" in text and "/ws/v3/***" in text
    assert not leaked(text), text


def test_the_cache_files_hold_no_key(dev, tmp_path) -> None:
    with lab_on(dev, cache=tmp_path) as lab:
        assert len(lab.blocks(1, 41)) == 40
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".sqlite3" and p.stat().st_size > 0 for p in files), files
    contents = b"".join(p.read_bytes() for p in files)
    assert b"eth_getBlockByNumber" in contents  # the answers are there...
    for secret in FORBIDDEN:  # ...and no credential, in the files or their names
        assert secret.encode() not in contents
        assert all(secret not in str(p) for p in files)

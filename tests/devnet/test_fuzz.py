"""Fuzz every surface of a real ``feeslab serve`` on loopback with hypothesis: JSON-RPC over
HTTP and WebSocket, the Gas API, IPFS, the wallet and ``/devnet/*``.

Whatever comes in, the server answers without a 5xx (except kubo's documented 500s: a
command that fails, or a missing argument, with kubo's error body), never hangs, and logs no
traceback (its stderr is read at the end). Bounded: derandomized, a fixed number of examples
per surface, a few seconds each.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote as _quote

import httpx
import pytest
import websockets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from feeslab.devnet.rpc import METHODS

FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
MANY = settings(FUZZ, max_examples=200)  # for the surfaces that answer in a millisecond
TIMEOUT = 20.0  # a request not answered in this long counts as a hang
BANNER = re.compile(r"(URL|WS URL|API key|API secret):\s+(\S+)")


@pytest.fixture(scope="module")
def served():
    """``feeslab serve`` in its own process; its stderr (the log) goes to a file read at the
    end of the module."""
    log_path = Path(tempfile.mkstemp(prefix="feeslab-fuzz-", suffix=".log")[1])
    log = log_path.open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "feeslab.cli", "serve", "--port", "0", "--seed", "7",
         "--daily-credits", str(10**15), "--credits-per-second", str(10**12)],
        stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    banner: dict[str, str] = {}
    deadline = time.monotonic() + 90
    while not {"URL", "WS URL", "API key", "API secret"} <= banner.keys():
        line = process.stdout.readline() if process.stdout else ""
        assert line and time.monotonic() < deadline, "feeslab serve did not start"
        match = BANNER.match(line)
        if match:
            banner[match.group(1)] = match.group(2)
    with httpx.Client(timeout=TIMEOUT) as client:
        yield {"client": client, **banner}
    process.terminate()
    process.wait(30)
    assert process.stdout is not None
    process.stdout.close()
    log.close()
    text = log_path.read_text()
    log_path.unlink()
    assert "Traceback" not in text, text[-6000:]
    assert "Exception in ASGI application" not in text, text[-6000:]


def quote(segment: str) -> str:
    return _quote(segment, safe="")


def kubo_500(response: httpx.Response) -> bool:
    """kubo's documented 500: its error body, code 0 (a failed command)."""
    try:
        body = response.json()
    except ValueError:
        return False
    return (
        isinstance(body, dict)
        and body.get("Code") == 0
        and body.get("Type") == "error"
        and body.get("Message") not in (None, "", "internal error")
    )


def no_5xx(response: httpx.Response, *, kubo: bool = False) -> None:
    if response.status_code >= 500:
        assert kubo and response.status_code == 500 and kubo_500(response), (
            response.status_code,
            response.request.method,
            str(response.request.url)[:200],
            response.text[:300],
        )


# -- strategies -------------------------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**300), max_value=2**300),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(["latest", "pending", "earliest", "safe", "finalized", "0x", "0x0", "0x1",
                     "0x" + "00" * 20, "0x" + "ff" * 32, "0xzz", "-0x1", "0x" + "1" * 70,
                     "newHeads", "eip155:1", "eip155:137", "solana:x", "/ipfs/", ""]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
CALL_KEYS = ("from", "to", "gas", "gasPrice", "maxFeePerGas", "value", "data", "input",
             "nonce", "chainId")
call_objects = st.fixed_dictionaries({}, optional=dict.fromkeys(CALL_KEYS, json_values))
methods = st.one_of(
    st.sampled_from(sorted(METHODS)), st.sampled_from(["eth_subscribe", "eth_unsubscribe"]),
    st.text(max_size=30),
)
params = st.one_of(
    st.lists(st.one_of(json_values, call_objects), max_size=4), json_values, st.just([])
)


@st.composite
def rpc_calls(draw) -> Any:
    call: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "1.0", None]))}
    call["id"] = draw(st.one_of(st.integers(), st.text(max_size=8), st.none(), json_values))
    call["method"] = draw(methods)
    call["params"] = draw(params)
    for key in [k for k in call if draw(st.booleans()) and draw(st.booleans())]:
        del call[key]  # now and then a member is missing
    return call


rpc_bodies = st.one_of(
    rpc_calls().map(json.dumps),
    st.lists(rpc_calls(), max_size=5).map(json.dumps),
    json_values.map(json.dumps),
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
    st.text(max_size=200),
)
segments = st.one_of(
    st.text(alphabet=st.characters(codec="ascii", exclude_characters="/?#"), max_size=12),
    st.sampled_from(["1", "137", "8453", "11155111", "0", "-1", "99999999999999999999"]),
)
http_methods = st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"])


# -- JSON-RPC over HTTP ---------------------------------------------------------------------


@MANY
@given(body=rpc_bodies, network=st.sampled_from(["", "/sepolia", "/polygon-mainnet", "/nope"]),
       content_type=st.sampled_from(["application/json", "text/plain", ""]),
       method=http_methods)
def test_json_rpc_over_http(served, body, network, content_type, method):
    url = f"{served['URL']}{network}/v3/{served['API key']}"
    headers = {"content-type": content_type} if content_type else {}
    response = served["client"].request(method, url, content=body.encode("utf-8", "replace"),
                                        headers=headers)
    no_5xx(response)


# -- JSON-RPC over WebSocket ----------------------------------------------------------------


async def exchange(url: str, messages: list[str], *, origin: str | None = None) -> list[Any]:
    """Send each message and read what comes back until the answer to it arrives; a batch of
    notifications only, or an empty batch, may answer nothing."""
    out: list[Any] = []
    async with websockets.connect(url, origin=origin, max_size=2**25) as ws:
        for message in messages:
            await ws.send(message)
            while True:
                try:
                    answer = json.loads(await asyncio.wait_for(ws.recv(), 0.5))
                except TimeoutError:
                    out.append(None)  # no answer owed (notifications); the socket still works
                    break
                if isinstance(answer, dict) and "id" not in answer and "method" in answer:
                    continue  # a notification
                out.append(answer)
                break
        # still alive and answering: no hang
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": "last", "method": "eth_chainId"}
                                 if "/ws/" in url else
                                 {"jsonrpc": "2.0", "id": "last", "method": "wallet_getSession",
                                  "params": {}}))
        while True:
            final = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
            if isinstance(final, dict) and final.get("id") == "last":
                break
    return out


@FUZZ
@given(messages=st.lists(rpc_bodies, min_size=1, max_size=3))
def test_json_rpc_over_websocket(served, messages):
    url = f"{served['WS URL']}/ws/v3/{served['API key']}"
    answers = asyncio.run(exchange(url, messages))
    for answer in answers:
        if isinstance(answer, dict) and "error" in answer:
            assert answer["error"]["code"] not in (-32603,), answer  # no internal errors


# -- wallet ---------------------------------------------------------------------------------

wallet_methods = st.sampled_from(
    ["wallet_createSession", "wallet_getSession", "wallet_invokeMethod", "wallet_revokeSession"]
)
WALLET_CALLS = ["eth_blockNumber", "eth_call", "personal_sign", "eth_subscribe", "signMessage"]
SCOPE_KEYS = ["eip155:1", "eip155:137", "eip155", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"]
scope_objects = st.fixed_dictionaries(
    {},
    optional={
        "methods": st.one_of(
            st.lists(st.sampled_from(WALLET_CALLS) | st.text(max_size=8), max_size=4),
            json_values,
        ),
        "notifications": st.one_of(st.just(["eth_subscription"]), json_values),
        "accounts": st.one_of(st.lists(st.text(max_size=50), max_size=2), json_values),
        "references": json_values,
    },
)
create_params = st.fixed_dictionaries(
    {},
    optional={
        "optionalScopes": st.dictionaries(
            st.sampled_from(SCOPE_KEYS) | st.text(max_size=10), scope_objects, max_size=3
        ),
        "requiredScopes": json_values,
        "sessionProperties": json_values,
    },
)
invoke_params = st.fixed_dictionaries(
    {
        "scope": st.sampled_from(SCOPE_KEYS) | st.text(max_size=10),
        "request": st.fixed_dictionaries(
            {"method": methods | st.sampled_from(WALLET_CALLS)}, optional={"params": params}
        ),
    }
)
wallet_params = st.one_of(create_params, invoke_params, json_values)


@st.composite
def wallet_messages(draw) -> str:
    body = {"jsonrpc": "2.0", "id": draw(st.integers(0, 10**6)), "method": draw(wallet_methods),
            "params": draw(wallet_params)}
    return json.dumps(body)


GRANT_ALL = json.dumps({
    "jsonrpc": "2.0", "id": "grant", "method": "wallet_createSession",
    "params": {"optionalScopes": {
        "eip155:1": {"methods": [*METHODS, "eth_subscribe", "eth_unsubscribe", "personal_sign"],
                     "notifications": ["eth_subscription"]},
        "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp": {"methods": ["signMessage"]}}},
})


@FUZZ
@given(messages=st.lists(st.one_of(wallet_messages(), rpc_bodies), min_size=1, max_size=4),
       granted=st.booleans())
def test_wallet(served, messages, granted):
    # half the cases start with a session granting everything, so invocations reach the chain
    # and the wallet's own signing
    opening = [GRANT_ALL] if granted else []
    answers = asyncio.run(exchange(f"{served['WS URL']}/wallet", opening + messages))
    if granted:
        assert "sessionScopes" in answers[0]["result"]


# -- Gas API ---------------------------------------------------------------------------------


@FUZZ
@given(chain=segments, endpoint=st.one_of(segments, st.sampled_from(
    ["baseFeeHistory", "suggestedGasFees", "baseFeePercentile", "busyThreshold"])),
       method=http_methods, keyed=st.booleans(), query=st.text(max_size=20))
def test_gas_api(served, chain, endpoint, method, keyed, query):
    client, base = served["client"], served["URL"]
    auth = (served["API key"], served["API secret"])
    if keyed:
        url = f"{base}/v3/{served['API key']}/networks/{quote(chain)}/{quote(endpoint)}"
        response = client.request(method, url, params={"q": query})
    else:
        url = f"{base}/networks/{quote(chain)}/{quote(endpoint)}"
        response = client.request(method, url, params={"q": query}, auth=auth)
    no_5xx(response)


# -- IPFS ------------------------------------------------------------------------------------

ipfs_commands = st.sampled_from(
    ["add", "cat", "block/get", "block/put", "block/stat", "pin/add", "pin/rm", "pin/ls",
     "object/get", "version", "id", "dag/get", "name/publish", "nope"]
)
HELLO = "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o"
ipfs_args = st.one_of(
    st.sampled_from(["", "/ipfs/", "/ipfs//", "/ipfs/%2F", "/", HELLO, f"/ipfs/{HELLO}/a",
                     "bafkqaaa", "/ipns/x", f"/ipfs/{HELLO}"]),
    st.text(max_size=30),
)
ipfs_flags = st.lists(
    st.tuples(st.sampled_from(["offset", "length", "cid-version", "pin", "encoding",
                               "data-encoding", "type", "stream", "chunker", "raw-leaves",
                               "hash", "quiet", "wrap-with-directory"]) | st.text(max_size=6),
              st.text(max_size=10) | st.sampled_from(["true", "false", "1", "-1", "json"])),
    max_size=3,
)


@MANY
@given(command=ipfs_commands, args=st.lists(ipfs_args, max_size=2), flags=ipfs_flags,
       body=st.one_of(st.just(b""), st.binary(max_size=300)),
       multipart=st.booleans(), method=st.sampled_from(["POST", "POST", "GET"]))
def test_ipfs(served, command, args, flags, body, multipart, method):
    query = [("arg", a) for a in args] + flags
    auth = (served["API key"], served["API secret"])
    url = f"{served['URL']}/api/v0/{quote(command)}"
    client = served["client"]
    if multipart:
        response = client.request(method, url, params=query, auth=auth,
                                  files={"file": ("f.txt", body)})
    else:
        response = client.request(method, url, params=query, auth=auth, content=body)
    no_5xx(response, kubo=True)


# -- /devnet/* -------------------------------------------------------------------------------


@MANY
@given(path=st.sampled_from(["wallet", "info", "credits", "contracts", "nope"]),
       method=http_methods, body=st.one_of(json_values.map(json.dumps), st.binary(max_size=100)),
       authorized=st.booleans())
def test_devnet_endpoints(served, path, method, body, authorized):
    auth = (served["API key"], served["API secret"]) if authorized else None
    content = body.encode() if isinstance(body, str) else body
    response = served["client"].request(method, f"{served['URL']}/devnet/{path}", auth=auth,
                                        content=content)
    no_5xx(response)


@MANY
@given(edits=st.dictionaries(st.sampled_from(
    ["revoke", "remove_chains", "remove_methods", "remove_accounts", "add_accounts", "x"]),
    json_values, max_size=3))
def test_devnet_wallet_edits(served, edits):
    auth = (served["API key"], served["API secret"])
    response = served["client"].post(f"{served['URL']}/devnet/wallet", json=edits, auth=auth)
    no_5xx(response)
    assert response.status_code in (200, 400), response.text

"""The JSON-RPC envelope: parsing, pricing, answering, and bad bodies over real HTTP."""

from __future__ import annotations

import json

import httpx
import pytest

from feeslab.devnet.errors import RpcError
from feeslab.devnet.jsonrpc import (
    MAX_BATCH_ITEMS,
    CallContext,
    execute,
    parse_request,
    request_costs,
)

CTX = CallContext(chain=None, chains=None, transport="http")


def answer(body: bytes | str, dispatch=None):
    """Parse, run and decode, with a tiny dispatcher standing in for the methods."""

    def local(ctx, method, params):
        if method == "echo":
            return params
        if method == "boom":
            raise KeyError("secret internals")
        if method == "bad_result":
            return object()
        raise RpcError(-32601, f"the method {method} does not exist/is not available")

    payload = execute(parse_request(body), CTX, dispatch or local)
    return None if payload is None else json.loads(payload)


def call(method="echo", id_=1, **extra):
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": [1], **extra}


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b"\xff\xfe\xfa garbage",
        b'{"jsonrpc": "2.0", "id": 1, "method": "\xc3\x28"}',  # invalid UTF-8
        b"[" * 100_000,
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
        b'{"jsonrpc":"2.0","id":NaN,"method":"echo"}',
        b'{"jsonrpc":"2.0","id":' + b"9" * 10_000 + b',"method":"echo"}',
    ],
)
def test_unparseable_bodies_are_one_parse_error(body):
    assert answer(body) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "parse error"},
    }


def test_empty_batch_is_one_error_object():
    assert answer(b"[]") == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "empty batch"},
    }


def test_batch_limit_is_1000():
    full = [call(id_=i) for i in range(MAX_BATCH_ITEMS)]
    assert len(answer(json.dumps(full))) == MAX_BATCH_ITEMS
    too_big = answer(json.dumps([*full, call()]))
    assert too_big == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "batch too large"},
    }


@pytest.mark.parametrize(
    "item",
    [
        5,
        "text",
        None,
        {},
        {"jsonrpc": "2.0", "id": 1},  # no method
        {"jsonrpc": "2.0", "id": 1, "method": 7},
        {"jsonrpc": "2.0", "id": 1, "method": ""},
        {"jsonrpc": "1.0", "id": 1, "method": "echo"},
        {"id": 1, "method": "echo"},
        {"jsonrpc": "2.0", "id": {"a": 1}, "method": "echo"},
        {"jsonrpc": "2.0", "id": [1], "method": "echo"},
        {"jsonrpc": "2.0", "id": True, "method": "echo"},
    ],
)
def test_invalid_items_get_invalid_request(item):
    single = answer(json.dumps(item))
    assert single["error"] == {"code": -32600, "message": "invalid request"}
    batch = answer(json.dumps([item, call(id_=9)]))
    assert batch[0]["error"]["code"] == -32600
    assert batch[1] == {"jsonrpc": "2.0", "id": 9, "result": [1]}


def test_scalar_params_are_invalid_params():
    reply = answer(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "echo", "params": 5}))
    assert reply == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32602, "message": "non-array args"},
    }


def test_ids_are_echoed_and_params_default_to_empty():
    assert answer(json.dumps(call(id_="abc")))["id"] == "abc"
    assert answer(json.dumps(call(id_=None)))["id"] is None
    assert answer(json.dumps(call(id_=1.5)))["id"] == 1.5
    no_params = {"jsonrpc": "2.0", "id": 1, "method": "echo"}
    assert answer(json.dumps(no_params))["result"] == []


def test_lone_surrogate_id_is_echoed_as_valid_json():
    reply = execute(
        parse_request(b'{"jsonrpc":"2.0","id":"\\ud800","method":"echo"}'),
        CTX,
        lambda ctx, m, p: "ok",
    )
    assert reply.isascii()
    assert json.loads(reply)["id"] == "\ud800"


def test_notifications_get_no_answer_but_run():
    seen = []

    def dispatch(ctx, method, params):
        seen.append(method)
        return True

    note = {"jsonrpc": "2.0", "method": "echo", "params": []}
    assert answer(json.dumps(note), dispatch) is None
    assert answer(json.dumps([note, note]), dispatch) is None
    mixed = answer(json.dumps([note, call(id_=4)]), dispatch)
    assert [r["id"] for r in mixed] == [4]
    assert len(seen) == 5


def test_method_errors_and_internal_errors():
    reply = answer(json.dumps([call("nope"), call("boom", id_=2), call("bad_result", id_=3)]))
    assert reply[0]["error"] == {
        "code": -32601,
        "message": "the method nope does not exist/is not available",
    }
    assert reply[1]["error"] == {"code": -32603, "message": "internal error"}
    assert "secret internals" not in json.dumps(reply)
    assert reply[2]["error"] == {"code": -32603, "message": "internal error"}


def test_subscriptions_need_a_websocket():
    reply = answer(json.dumps(call("eth_subscribe")))
    assert reply["error"] == {"code": -32601, "message": "notifications not supported"}


def test_costs_are_priced_before_running_including_failures():
    batch = [call("eth_chainId"), call("eth_estimateGas"), call("nope"), 5]
    costs = request_costs(parse_request(json.dumps(batch)))
    assert costs == [
        ("eth_chainId", 5),
        ("eth_estimateGas", 300),
        ("nope", 80),
        ("invalid_request", 5),
    ]
    assert request_costs(parse_request(b"garbage")) == [("invalid_request", 5)]


# -- over real HTTP -------------------------------------------------------------------------

NASTY_BODIES = [
    b"",
    b"\x00" * 1000,
    b"\xff" * 1000,
    b"[" * 200_000,
    b'{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":' + b"[" * 5000 + b"]" * 5000 + b"}",
    b"[" + b"1," * 5000 + b"1]",
    json.dumps(
        [{"jsonrpc": "2.0", "id": i, "method": "eth_chainId"} for i in range(1001)]
    ).encode(),
    b'{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":[{"a":[]},"x",1,null]}',
    b'{"jsonrpc":"2.0","id":1,"method":"eth_call","params":"0x"}',
    b'{"jsonrpc":"2.0","id":1,"method":"eth_getStorageAt","params":[[],[],[]]}',
    b'{"jsonrpc":"2.0","id":1,"method":"eth_feeHistory","params":[1e308,"latest",[1e400]]}',
    '"\ud800"'.encode("utf-8", "surrogatepass"),
]


@pytest.mark.parametrize("body", NASTY_BODIES)
def test_no_body_gives_a_server_error(devnet, body):
    url = f"{devnet.url}/v3/{devnet.api_key}"
    reply = httpx.post(url, content=body, headers={"Content-Type": "application/json"}, timeout=60)
    assert reply.status_code == 200
    parsed = reply.json()
    errors = parsed if isinstance(parsed, list) else [parsed]
    for item in errors:
        assert item["jsonrpc"] == "2.0"
        if "error" in item:
            assert item["error"]["code"] != -32603 or item["error"]["message"] == "internal error"


def test_batch_over_http_answers_in_order(devnet):
    url = f"{devnet.url}/v3/{devnet.api_key}"
    batch = [{"jsonrpc": "2.0", "id": i, "method": "eth_chainId"} for i in range(50)]
    reply = httpx.post(url, json=batch, timeout=60).json()
    assert [r["id"] for r in reply] == list(range(50))
    assert {r["result"] for r in reply} == {"0x1"}


def test_notification_only_body_answers_empty(devnet):
    url = f"{devnet.url}/v3/{devnet.api_key}"
    reply = httpx.post(url, json={"jsonrpc": "2.0", "method": "eth_chainId"}, timeout=60)
    assert reply.status_code == 200
    assert reply.content == b""


def test_deep_nesting_is_refused_even_with_a_raised_recursion_limit():
    # web3 raises the limit to 100000; the C decoder would then overflow the C stack
    import sys

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        for body in (b"[" * 200_000, "{" * 200_000, b'{"a":' * 60_000 + b"1" + b"}" * 60_000):
            assert answer(body)["error"]["code"] == -32700
        # nesting within the limit still parses: a batch of one invalid item
        assert answer(b"[" * 900 + b"]" * 900)[0]["error"]["code"] == -32600
    finally:
        sys.setrecursionlimit(old)


def test_depth_check_skips_brackets_inside_strings_and_counts_wide_batches_right():
    wide = json.dumps([call(id_=i) for i in range(800)]).encode()  # > 1,000 brackets, depth 3
    assert len(answer(wide)) == 800
    quoted = b'[{"jsonrpc":"2.0","id":"' + b"[" * 5_000 + b'","method":"echo","params":[1]}]'
    assert answer(quoted)[0]["id"] == "[" * 5_000
    assert answer(b"[" * 1_001 + b"]" * 1_001)["error"]["code"] == -32700
    # an escaped quote inside a string does not end it: its brackets stay uncounted ...
    escaped = b'[{"jsonrpc":"2.0","id":"\\"' + b"[" * 5_000 + b'","method":"echo","params":[1]}]'
    assert answer(escaped)[0]["id"] == '"' + "[" * 5_000
    # ... and brackets after a string holding one are counted
    deep = b'[{"jsonrpc":"2.0","id":"\\"","params":' + b"[" * 1_001 + b"]" * 1_001 + b"}]"
    assert answer(deep)["error"]["code"] == -32700


def test_encoded_results_are_spliced_with_the_callers_id():
    from feeslab.devnet._encoded import Encoded, encode

    def local(ctx, method, params):
        return Encoded(encode({"b": [1, "x"]}))

    body = [call(id_=7), call(id_="seven"), call(id_=None), {"jsonrpc": "2.0", "method": "n"}]
    assert answer(json.dumps(body), local) == [
        {"jsonrpc": "2.0", "id": 7, "result": {"b": [1, "x"]}},
        {"jsonrpc": "2.0", "id": "seven", "result": {"b": [1, "x"]}},
        {"jsonrpc": "2.0", "id": None, "result": {"b": [1, "x"]}},
    ]  # the notification (no id) gets no answer

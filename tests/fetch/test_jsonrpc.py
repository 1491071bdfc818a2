"""The pure JSON-RPC helpers: bodies and answers read the same with orjson as with the stdlib,
including what orjson refuses (ints past 64 bits, NaN), which the stdlib then takes."""

import json

import pytest

from feeslab.fetch.jsonrpc import RpcCall, build_body, json_or_none


def test_body_is_compact_json_with_ids_in_order():
    body = build_body(
        [RpcCall("eth_blockNumber", []), RpcCall("eth_getBalance", ["0xab", "latest"])], [7, 8]
    )
    assert b" " not in body
    assert json.loads(body) == [
        {"jsonrpc": "2.0", "id": 7, "method": "eth_blockNumber", "params": []},
        {"jsonrpc": "2.0", "id": 8, "method": "eth_getBalance", "params": ["0xab", "latest"]},
    ]


def test_one_call_is_sent_as_an_object_not_a_batch():
    assert json.loads(build_body([RpcCall("eth_chainId", [])], [1]))["method"] == "eth_chainId"


def test_body_with_an_int_past_64_bits_is_still_exact():
    value = 2**80 + 1  # orjson refuses it; the wallet API's named params may carry such values
    body = build_body([RpcCall("wallet_x", {"value": value})], [1])
    assert json.loads(body)["params"]["value"] == value


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            b'{"jsonrpc":"2.0","id":1,"result":"0x10"}',
            {"jsonrpc": "2.0", "id": 1, "result": "0x10"},
        ),
        (
            b'{"id":1,"error":{"code":-1,"data":123456789012345678901234567890}}',
            {"id": 1, "error": {"code": -1, "data": 123456789012345678901234567890}},
        ),
        (b"[1, 2]", [1, 2]),
        (b"<html>bad gateway</html>", None),
        (b"\xff\xfe", None),
        (b"", None),
    ],
)
def test_answers_decode_like_the_stdlib(content, expected):
    assert json_or_none(content) == expected


def test_nan_reads_as_the_stdlib_reads_it():
    value = json_or_none(b'{"x": NaN}')
    assert value is not None and value["x"] != value["x"]

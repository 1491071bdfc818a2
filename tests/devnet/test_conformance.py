"""The devnet seen by clients not written here, and across processes.

``feeslab serve`` runs as a separate process, as a user would run it; web3.py's
HTTPProvider reads from it, and two processes with the same seed must answer
with the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from protocol_reference import header_hash
from web3 import Web3

from feeslab.devnet.process import SpawnedDevnet, spawn


def rpc_url(served: SpawnedDevnet) -> str:
    return f"{served.url}/v3/{served.api_key}"


def call(served: SpawnedDevnet, method: str, params: list) -> httpx.Response:
    # generous timeout: a cold devnet generates history on first use
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(rpc_url(served), json=body, timeout=60)


def quantity(value: str) -> int:
    return int(value, 16)


@pytest.fixture(scope="module")
def served() -> Iterator[SpawnedDevnet]:
    with spawn(seed=3) as s:
        yield s


def test_web3_reads_blocks_that_agree_with_the_raw_json(served):
    w3 = Web3(Web3.HTTPProvider(rpc_url(served), request_kwargs={"timeout": 60}))
    assert w3.eth.chain_id == 1
    assert w3.eth.block_number == 210_000
    for number in (0, 5_000, 119_999, 120_000, 164_999, 165_000, 209_999):
        raw = call(served, "eth_getBlockByNumber", [hex(number), False]).json()["result"]
        block = w3.eth.get_block(number)
        assert block["number"] == quantity(raw["number"]) == number
        assert block["hash"].to_0x_hex() == raw["hash"]
        assert block["parentHash"].to_0x_hex() == raw["parentHash"]
        assert block["gasUsed"] == quantity(raw["gasUsed"])
        assert block["gasLimit"] == quantity(raw["gasLimit"])
        assert block["timestamp"] == quantity(raw["timestamp"])
        assert block["difficulty"] == quantity(raw["difficulty"])
        assert block["miner"].lower() == raw["miner"]
        assert [u.to_0x_hex() for u in block["uncles"]] == raw["uncles"]
        if "baseFeePerGas" in raw:
            assert block["baseFeePerGas"] == quantity(raw["baseFeePerGas"])
        else:
            assert "baseFeePerGas" not in block
        # the hash verifies from the JSON fields alone
        assert header_hash(raw) == raw["hash"]
        by_hash = w3.eth.get_block(raw["hash"])
        assert by_hash["number"] == number


def test_web3_fee_history_agrees_with_the_blocks(served):
    w3 = Web3(Web3.HTTPProvider(rpc_url(served), request_kwargs={"timeout": 60}))
    history = w3.eth.fee_history(8, 150_000, [25, 75])
    assert history["oldestBlock"] == 150_000 - 7
    for offset, fee in enumerate(history["baseFeePerGas"][:-1]):
        block = w3.eth.get_block(150_000 - 7 + offset)
        assert fee == block["baseFeePerGas"]
        assert history["gasUsedRatio"][offset] == pytest.approx(
            block["gasUsed"] / block["gasLimit"]
        )
    assert w3.eth.get_block(150_001)["baseFeePerGas"] == history["baseFeePerGas"][-1]


def test_two_processes_with_the_same_seed_answer_with_identical_bytes(served):
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "eth_getBlockByNumber", "params": ["0x1388", True]},
        {"jsonrpc": "2.0", "id": 2, "method": "eth_getUncleByBlockNumberAndIndex",
         "params": ["0x1389", "0x0"]},
        {"jsonrpc": "2.0", "id": 3, "method": "eth_feeHistory",
         "params": ["0x40", "0x249f0", [10, 50, 90]]},
        {"jsonrpc": "2.0", "id": 4, "method": "eth_getBlockByNumber", "params": ["latest", False]},
    ]
    with spawn(seed=3) as twin, spawn(seed=4) as other:
        ours = httpx.post(rpc_url(served), json=batch, timeout=60)
        theirs = httpx.post(rpc_url(twin), json=batch, timeout=60)
        different = httpx.post(rpc_url(other), json=batch, timeout=60)
        gas = [
            httpx.get(f"{s.url}/networks/1/baseFeeHistory", auth=(s.api_key, s.api_key_secret))
            for s in (served, twin)
        ]
        gas = [answer.content for answer in gas]
    assert ours.status_code == theirs.status_code == 200
    assert ours.content == theirs.content
    assert gas[0] == gas[1]
    assert different.content != ours.content
    # but not vacuously: the answers hold real blocks
    assert all("result" in item for item in ours.json())

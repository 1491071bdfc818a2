"""The devnet seen by clients not written here, and across processes.

``feeslab serve`` runs as a separate process, as a user would run it; web3.py's
HTTPProvider reads from it, and two processes with the same seed must answer
with the same bytes.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import pytest
from protocol_reference import header_hash
from web3 import Web3


@dataclass
class Served:
    url: str
    key: str
    secret: str

    @property
    def rpc(self) -> str:
        return f"{self.url}/v3/{self.key}"


@contextmanager
def feeslab_serve(*args: str) -> Iterator[Served]:
    """Run ``feeslab serve --port 0`` and read its banner."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "feeslab.cli", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        seen: dict[str, str] = {}
        deadline = time.monotonic() + 60
        while not {"URL", "API key", "API secret"} <= seen.keys():
            line = proc.stdout.readline()
            if not line or time.monotonic() > deadline:
                raise RuntimeError(f"feeslab serve did not start: {seen}")
            match = re.match(r"(URL|API key|API secret):\s+(\S+)", line)
            if match:
                seen[match.group(1)] = match.group(2)
        yield Served(seen["URL"], seen["API key"], seen["API secret"])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def call(served: Served, method: str, params: list) -> httpx.Response:
    # generous timeout: a cold devnet generates history on first use
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(served.rpc, json=body, timeout=60)


def quantity(value: str) -> int:
    return int(value, 16)


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    with feeslab_serve("--seed", "3") as s:
        yield s


def test_web3_reads_blocks_that_agree_with_the_raw_json(served):
    w3 = Web3(Web3.HTTPProvider(served.rpc, request_kwargs={"timeout": 60}))
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
    w3 = Web3(Web3.HTTPProvider(served.rpc, request_kwargs={"timeout": 60}))
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
    ]  # fmt: skip
    with feeslab_serve("--seed", "3") as twin, feeslab_serve("--seed", "4") as other:
        ours = httpx.post(served.rpc, json=batch, timeout=60)
        theirs = httpx.post(twin.rpc, json=batch, timeout=60)
        different = httpx.post(other.rpc, json=batch, timeout=60)
        gas = [
            httpx.get(f"{s.url}/networks/1/baseFeeHistory", auth=(s.key, s.secret)).content
            for s in (served, twin)
        ]
    assert ours.status_code == theirs.status_code == 200
    assert ours.content == theirs.content
    assert gas[0] == gas[1]
    assert different.content != ours.content
    # but not vacuously: the answers hold real blocks
    assert all("result" in item for item in ours.json())

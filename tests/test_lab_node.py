"""feeslab's own client against a node that is not the devnet: ganache 7.9.2 (package.json).

ganache answers ``eth_getStorageAt`` of an empty slot with ``0x`` (geth with 32 zero bytes),
runs chain 1337, which ``data/chains.json`` does not describe, and charges no credits.
"""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import feeslab
from feeslab.analysis import fees

REPO = Path(__file__).resolve().parents[1]
NODE_BIN = REPO / "node_modules" / ".bin" / "ganache"
START_TIMEOUT = 60.0  # [s]
# constructor: SSTORE(0, 1); SSTORE(1, 0xff); RETURN one byte of code (STOP)
INIT_CODE = "0x600160005560ff60015560016000f3"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rpc(client: httpx.Client, url: str, method: str, *params):
    body = client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method,
                                  "params": list(params)}).json()  # fmt: skip
    assert "error" not in body, body
    return body["result"]


@pytest.fixture(scope="module")
def ganache() -> Iterator[tuple[str, str]]:
    """``(url, address)``: ganache on loopback (its default chain 1337) with a contract whose
    slots 0 and 1 hold 1 and 0xff from block 1 on."""
    if not NODE_BIN.exists():
        pytest.skip(reason=f"{NODE_BIN} is missing: run `make test` (or `npm ci`) for ganache")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [str(NODE_BIN), "--server.host=127.0.0.1", f"--server.port={port}",
               "--wallet.deterministic", "--logging.quiet"]  # fmt: skip
    with (
        tempfile.TemporaryFile() as log,
        httpx.Client(timeout=60) as client,
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log) as process,
    ):
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while True:
                if process.poll() is not None:
                    log.seek(0)
                    pytest.fail(f"ganache exited: {log.read().decode()[-2000:]}")
                try:
                    _rpc(client, url, "eth_chainId")
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        pytest.fail(f"ganache did not answer within {START_TIMEOUT} s")
                    time.sleep(0.1)
            sender = _rpc(client, url, "eth_accounts")[0]
            tx = _rpc(client, url, "eth_sendTransaction",
                      {"from": sender, "gas": hex(300_000), "data": INIT_CODE})  # fmt: skip
            receipt = _rpc(client, url, "eth_getTransactionReceipt", tx)
            assert receipt["status"] == "0x1" and receipt["blockNumber"] == "0x1"
            yield url, receipt["contractAddress"]
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def lab(ganache, tmp_path) -> Iterator[feeslab.Lab]:
    url, _ = ganache
    with feeslab.connect(rpc_url=url, cache=tmp_path, progress=False) as lab:
        yield lab


def test_empty_slots_answered_0x_read_as_zero(lab, ganache):
    url, address = ganache
    with httpx.Client() as client:  # what ganache itself answers, asked directly
        assert _rpc(client, url, "eth_getStorageAt", address, "0x2", "0x1") == "0x"
        assert _rpc(client, url, "eth_getStorageAt", address, "0x0", "0x0") == "0x"
    assert lab.storage(address, 0, 1) == 1
    assert lab.storage(address, 1, 1) == 0xFF
    assert lab.storage(address, 2, 1) == 0  # an empty slot: "0x"
    assert lab.storage(address, 0, 0) == 0  # before the contract existed
    series = lab.storage_series(address, 0, [0, 1])
    assert series["word"].tolist() == [0, 1]
    assert series["word_hex"].tolist() == ["0x" + "00" * 32, "0x" + "00" * 31 + "01"]
    assert series.attrs == {"chain_id": 1337, "chain_spec": None, "source": "node"}


def test_a_node_is_described_as_itself_and_its_calls_are_not_priced(lab, ganache):
    url, address = ganache
    lab.storage_series(address, 0, [0, 1])
    assert repr(lab) == f"<Lab chain 1337 at {url}, {lab.credits.calls} calls>"
    assert lab.credits.calls > 0 and lab.credits.spent == 0
    assert set(lab.credits.by_method.values()) == {0}
    assert "not priced" in repr(lab.credits) and "spent" not in repr(lab.credits)
    assert (lab.chain_spec, lab.source) == (None, "node")
    # a key in a node URL stays out of the repr
    with feeslab.connect(rpc_url="http://127.0.0.1:9/v3/supersecretkey", cache=False) as other:
        assert repr(other) == "<Lab a node at http://127.0.0.1:9/v3/***, 0 calls>"


def test_analysis_of_an_unknown_chain_asks_for_its_parameters(lab):
    blocks = lab.blocks(0, 2)
    assert blocks.attrs["chain_id"] == 1337
    with pytest.raises(feeslab.MissingChainSpec, match=r"chain 1337, which data/chains\.json"):
        fees.next_base_fees(blocks)
    # ganache runs London's rule from genesis: with the parameters given, it checks out
    predicted = fees.next_base_fees(blocks, elasticity_multiplier=2, max_change_denominator=8)
    assert int(predicted.iloc[0]) == int(blocks["base_fee_wei"].iloc[1])

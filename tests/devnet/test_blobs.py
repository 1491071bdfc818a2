"""The devnet after the merge: Shanghai, Cancun, Prague, Osaka and the BPO forks.

Header layouts are checked against real mainnet headers (data/samples/mainnet_fork_headers.json,
see SOURCES.md) and recomputed with ``rlp``/``eth_hash``; blob fees with EIP-4844's reference
code transcribed in ``protocol_reference``; the blob parameters are read from chains.json here,
not through feeslab.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

import pytest
import rlp
from eth_hash.auto import keccak
from protocol_reference import (
    GAS_PER_BLOB,
    calc_excess_blob_gas,
    fake_exponential,
    header_hash,
)
from trie import HexaryTrie

from feeslab.devnet.chain import Header

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
CHAINS = json.loads((Path(__file__).resolve().parents[2] / "data" / "chains.json").read_text())
INT_FIELDS = {7, 8, 9, 10, 11, 15, 17, 18}  # quantities among a header's RLP items


def devnet_forks(chain_id: int) -> dict:
    entry = next(c for c in CHAINS["chains"] if c["chain_id"] == chain_id)
    return entry["devnet"]


def schedule_at(chain_id: int, number: int) -> dict | None:
    found = None
    for rule in devnet_forks(chain_id)["blob_schedule"]:
        if number >= rule["from_block"]:
            found = rule
    return found


def real_headers() -> list[bytes]:
    data = json.loads((SAMPLES / "mainnet_fork_headers.json").read_text())
    return [bytes.fromhex(h["header_rlp"][2:]) for h in data["headers"]]


def test_the_devnet_header_encodes_real_mainnet_headers_byte_for_byte():
    # every era from Shanghai to Prague: the devnet's Header lists fields in geth's order
    counts = set()
    for raw in real_headers():
        items = rlp.decode(raw)
        counts.add(len(items))
        values = [
            int.from_bytes(v, "big") if i in INT_FIELDS else bytes(v) for i, v in enumerate(items)
        ]
        header = Header(*values)
        assert header.encode() == raw
        assert header.hash == keccak(raw)
    assert counts == {16, 17, 20, 21}  # London, Shanghai, Cancun, Prague


@pytest.mark.parametrize("network, chain_id", [("mainnet", 1), ("sepolia", 11155111)])
def test_blocks_carry_each_forks_fields_and_hash_to_them(rpc, network, chain_id):
    forks = devnet_forks(chain_id)["forks"]
    expected = {
        "withdrawalsRoot": forks["shanghai"],
        "blobGasUsed": forks["cancun"],
        "excessBlobGas": forks["cancun"],
        "parentBeaconBlockRoot": forks["cancun"],
        "requestsHash": forks["prague"],
    }
    for fork in ("shanghai", "cancun", "prague", "osaka", "bpo1", "bpo2"):
        for number in (forks[fork] - 1, forks[fork]):
            block = rpc("eth_getBlockByNumber", hex(number), False, network=network)
            for field, start in expected.items():
                assert (field in block) == (number >= start), (network, number, field)
            assert ("withdrawals" in block) == (number >= forks["shanghai"])
            if number >= forks["shanghai"]:
                # a full payload of withdrawals, whose trie root (py-trie's, keyed by rlp(i))
                # is the header's withdrawalsRoot
                served = block["withdrawals"]
                assert len(served) == 16
                tree = HexaryTrie(db={})
                for i, w in enumerate(served):
                    tree[rlp.encode(i)] = rlp.encode([
                        int(w["index"], 16), int(w["validatorIndex"], 16),
                        bytes.fromhex(w["address"][2:]), int(w["amount"], 16),
                    ])  # fmt: skip
                assert block["withdrawalsRoot"] == "0x" + tree.root_hash.hex()
            if number >= forks["prague"]:
                assert block["requestsHash"] == (
                    "0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
                )  # sha256(b""): no requests (EIP-7685)
            assert header_hash(block) == block["hash"]
            by_hash = rpc("eth_getBlockByHash", block["hash"], False, network=network)
            assert by_hash == block


@pytest.mark.parametrize("network, chain_id", [("mainnet", 1), ("sepolia", 11155111)])
def test_excess_blob_gas_follows_eip4844_with_each_blocks_schedule(truth, network, chain_id):
    from feeslab.devnet.chain import build_chains

    chain = truth if chain_id == 1 else build_chains(7).by_id[chain_id]
    forks = devnet_forks(chain_id)["forks"]
    history = chain.history
    head = chain.head()
    used = history.blob_gas_used_range(0, head + 1)
    excess = history.excess_blob_gas_range(0, head + 1)
    fees = history.base_fees(0, head + 1)
    assert all(v == -1 for v in used[: forks["cancun"]])  # no blob fields before Cancun
    assert excess[forks["cancun"]] == 0
    floors = bursts = 0
    for n in range(forks["cancun"] + 1, head + 1):
        rule = schedule_at(chain_id, n)
        osaka = rule.get("eip7918", False)
        want = calc_excess_blob_gas(
            excess[n - 1], used[n - 1], rule["target"], rule["max"],
            rule["base_fee_update_fraction"], fees[n - 1] if osaka else None,
        )  # fmt: skip
        assert excess[n] == want, n
        assert 0 <= used[n] <= rule["max"] * GAS_PER_BLOB and used[n] % GAS_PER_BLOB == 0
        fee = fake_exponential(1, excess[n], rule["base_fee_update_fraction"])
        floors += fee == 1
        bursts += fee > 10**9
    # quiet stretches at the 1-wei floor and bursts above 1 gwei both happen
    assert floors > 1000 and bursts > 50


def test_fee_history_reports_blob_fees_and_ratios_across_prague(rpc):
    prague = devnet_forks(1)["forks"]["prague"]
    newest = prague + 20
    history = rpc("eth_feeHistory", hex(40), hex(newest), [])
    oldest = int(history["oldestBlock"], 16)
    assert oldest == newest - 39
    for i, number in enumerate(range(oldest, newest + 1)):
        block = rpc("eth_getBlockByNumber", hex(number), False)
        rule = schedule_at(1, number)
        want = fake_exponential(
            1, int(block["excessBlobGas"], 16), rule["base_fee_update_fraction"]
        )
        assert int(history["baseFeePerBlobGas"][i], 16) == want
        ratio = int(block["blobGasUsed"], 16) / (rule["max"] * GAS_PER_BLOB)
        assert history["blobGasUsedRatio"][i] == pytest.approx(ratio, rel=0, abs=0)
    child = rpc("eth_getBlockByNumber", hex(newest + 1), False)
    want = fake_exponential(
        1, int(child["excessBlobGas"], 16), schedule_at(1, newest + 1)["base_fee_update_fraction"]
    )
    assert int(history["baseFeePerBlobGas"][-1], 16) == want
    # before Cancun geth answers zeros
    early = rpc("eth_feeHistory", hex(4), hex(170_000), [])
    assert early["baseFeePerBlobGas"] == ["0x0"] * 5
    assert early["blobGasUsedRatio"] == [0] * 4


def test_blob_base_fee_is_the_head_blocks(rpc):
    head = rpc("eth_getBlockByNumber", "latest", False)
    rule = schedule_at(1, int(head["number"], 16))
    want = fake_exponential(1, int(head["excessBlobGas"], 16), rule["base_fee_update_fraction"])
    assert int(rpc("eth_blobBaseFee"), 16) == want


@pytest.fixture
def web3_suites(request):
    # web3.py's module_testing marks its async tests for pytest-asyncio; we call them ourselves
    request.config.addinivalue_line("markers", "asyncio: web3.py module_testing's async tests")


def test_web3s_own_blob_fee_test_passes(devnet, web3_suites):
    from web3 import Web3
    from web3._utils.module_testing.eth_module import EthModuleTest

    w3 = Web3(Web3.HTTPProvider(f"{devnet.url}/v3/{devnet.api_key}"))
    EthModuleTest().test_eth_blob_base_fee(w3)
    assert w3.eth.blob_base_fee >= 1


def test_web3s_own_new_heads_and_get_block_tests_pass(web3_suites):
    """web3.py's persistent-connection tests that need Shanghai's withdrawalsRoot."""
    from web3 import AsyncWeb3, WebSocketProvider
    from web3._utils.module_testing.persistent_connection_provider import (
        PersistentConnectionProviderTest,
    )

    from feeslab.devnet import start

    suite = PersistentConnectionProviderTest()

    async def run(url: str) -> None:
        tests = (
            suite.test_async_eth_subscribe_new_heads,
            suite.test_async_eth_subscribe_creates_and_handles_new_heads_subscription_type,
            suite.test_async_public_socket_api,
        )
        for test in tests:  # a fresh connection each, as web3's fixtures give
            async with AsyncWeb3(WebSocketProvider(url)) as w3:
                await test(w3)

    with start(seed=7, block_time=0.2, daily_credits=10**15, credits_per_second=10**12) as dev:
        asyncio.run(asyncio.wait_for(run(f"{dev.ws_url}/ws/v3/{dev.api_key}"), 60))


def test_gas_limits_rise_as_mainnets_did(rpc, truth):
    # validators voted 30M -> 36M -> 45M -> 60M (data/chains.json gas_limit_history); the
    # devnet's producers vote towards each step at its scaled height, 1/1024 per block
    def limit(number: int, network: str = "mainnet") -> int:
        return int(rpc("eth_getBlockByNumber", hex(number), False, network=network)["gasLimit"], 16)

    assert [limit(n) for n in (183_000, 184_500, 195_500, 199_000, 210_000)] == [
        30_000_000, 36_000_000, 45_000_000, 60_000_000, 60_000_000,
    ]  # fmt: skip
    steps = truth.gas_limit_range(165_000, 210_001)  # the served chain, in-process
    bound = all(abs(b - a) <= a // 1024 for a, b in itertools.pairwise(steps))
    assert bound  # every step within the protocol's 1/1024
    assert [limit(n, "sepolia") for n in (34_000, 36_000, 51_000)] == [
        30_000_000, 36_000_000, 60_000_000,
    ]  # fmt: skip

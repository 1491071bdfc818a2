"""World state: slot math against solc's storageLayout, eth_getStorageAt and eth_call.

Slots are computed here from the Solidity storage rules (value types at their
slot and offset, mappings at keccak(key . slot), dynamic arrays at keccak(slot)
+ index, EIP-1967 slots) using only solc's storageLayout and keccak, and then
read through the node methods; view functions run by the EVM must agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from eth_abi import decode as abi_decode
from eth_abi import encode as abi_encode
from eth_hash.auto import keccak

from feeslab.devnet.chain import build_chains
from feeslab.devnet.jsonrpc import CallContext
from feeslab.devnet.rpc import dispatch

SEED = 7  # the session devnet's seed: its history is shared, not generated twice
IMPLEMENTATION_SLOT = int.from_bytes(keccak(b"eip1967.proxy.implementation"), "big") - 1
ADMIN_SLOT = int.from_bytes(keccak(b"eip1967.proxy.admin"), "big") - 1


@dataclass
class Node:
    """Calls the devnet's node methods in process, as the HTTP layer does."""

    ctx: CallContext

    def __call__(self, method: str, *params: Any) -> Any:
        return dispatch(self.ctx, method, list(params))

    def word(self, address: str, slot: int, block: int) -> int:
        return int(self("eth_getStorageAt", address, hex(slot), hex(block)), 16)

    def view(self, address: str, signature: str, types: list[str], args: list, block: int,
             returns: list[str]) -> tuple:
        data = keccak(signature.encode())[:4] + abi_encode(types, args)
        call = {"from": "0x" + "00" * 20, "to": address, "data": "0x" + data.hex()}
        return abi_decode(returns, bytes.fromhex(self("eth_call", call, hex(block))[2:]))


@pytest.fixture(scope="module")
def chain():
    return build_chains(SEED).by_id[1]


@pytest.fixture(scope="module")
def node(chain) -> Node:
    chains = build_chains(SEED)
    return Node(CallContext(chain=chains.by_id[1], chains=chains, transport="http"))


@pytest.fixture(scope="module")
def state(chain):
    state = chain.state
    state.ensure(chain.head())
    return state


def address_of(state, name: str) -> str:
    return "0x" + state.deployments[name].address.hex()


def layout_slot(state, contract: str, label: str) -> tuple[int, int, str]:
    """(slot, offset, type) of a state variable, from solc's storageLayout."""
    layout = state.deployments[contract].artifact.storage_layout
    for entry in layout["storage"]:
        if entry["label"] == label:
            return int(entry["slot"]), int(entry["offset"]), entry["type"]
    raise AssertionError(f"{contract} has no {label}")


def pad(value: int | str) -> bytes:
    if isinstance(value, str):
        return bytes.fromhex(value[2:]).rjust(32, b"\0")
    return value.to_bytes(32, "big")


def mapping_slot(key: int | str, slot: int) -> int:
    return int.from_bytes(keccak(pad(key) + pad(slot)), "big")


def sample_blocks(state, chain) -> list[int]:
    start = state.contracts_block
    return [start, start + 1, start + 777, state.upgrade_block - 1, state.upgrade_block,
            state.upgrade_block + 2, chain.head() - 3, chain.head()]


def test_everything_reads_zero_before_deployment(state, node):
    token = address_of(state, "FeeslabToken")
    before = state.contracts_block - 1
    assert node("eth_getStorageAt", token, "0x2", hex(before)) == "0x" + "00" * 32
    call = {"from": "0x" + "00" * 20, "to": token, "data": "0x18160ddd"}  # totalSupply()
    assert node("eth_call", call, hex(before)) == "0x"


def test_value_slot_total_supply(state, chain, node):
    token = address_of(state, "FeeslabToken")
    slot, offset, _ = layout_slot(state, "FeeslabToken", "_totalSupply")
    assert (slot, offset) == (2, 0)
    supplies = []
    for block in sample_blocks(state, chain):
        word = node.word(token, slot, block)
        (expected,) = node.view(token, "totalSupply()", [], [], block, ["uint256"])
        assert word == expected > 0
        supplies.append(word)
    assert supplies[-1] > supplies[0]  # mints happened


def test_packed_slot_owner_and_decimals(state, node):
    token = address_of(state, "FeeslabToken")
    slot, owner_offset, _ = layout_slot(state, "FeeslabToken", "owner")
    slot2, decimals_offset, _ = layout_slot(state, "FeeslabToken", "decimals")
    assert slot == slot2 and (owner_offset, decimals_offset) == (0, 20)
    word = node.word(token, slot, state.contracts_block + 10).to_bytes(32, "big")
    # offsets count from the low-order end of the word
    owner = word[32 - owner_offset - 20 : 32 - owner_offset]
    decimals = word[32 - decimals_offset - 1]
    assert "0x" + owner.hex() == "0x" + state.deployer.hex()
    assert decimals == 18


def test_mapping_balances_follow_transfers(state, chain, node):
    token = address_of(state, "FeeslabToken")
    slot, _, _ = layout_slot(state, "FeeslabToken", "_balances")
    holders = ["0x" + h.hex() for h in state.holders[:6]]
    seen = set()
    for block in sample_blocks(state, chain):
        for holder in holders:
            word = node.word(token, mapping_slot(holder, slot), block)
            (balance,) = node.view(
                token, "balanceOf(address)", ["address"], [holder], block, ["uint256"]
            )
            assert word == balance
            seen.add((holder, word))
    # balances change over time: more distinct values than holders
    assert len(seen) > len(holders) * 2


def test_nested_mapping_allowances(state, chain, node):
    token = address_of(state, "FeeslabToken")
    slot, _, _ = layout_slot(state, "FeeslabToken", "_allowances")
    found = 0
    for owner in state.holders[:20]:
        for spender in state.spenders:
            o, s = "0x" + owner.hex(), "0x" + spender.hex()
            inner = int.from_bytes(keccak(pad(o) + pad(slot)), "big")
            word = node.word(token, mapping_slot(s, inner), chain.head())
            (allowed,) = node.view(
                token, "allowance(address,address)", ["address", "address"], [o, s],
                chain.head(), ["uint256"],
            )
            assert word == allowed
            found += word > 0
    assert found > 0


def test_packed_struct_and_dynamic_array_of_rounds(state, chain, node):
    oracle = address_of(state, "PriceOracle")
    latest_slot, _, latest_type = layout_slot(state, "PriceOracle", "latest")
    rounds_slot, _, _ = layout_slot(state, "PriceOracle", "rounds")
    types = state.deployments["PriceOracle"].artifact.storage_layout["types"]
    members = {m["label"]: m for m in types[latest_type]["members"]}
    assert int(types[latest_type]["numberOfBytes"]) == 32  # the struct packs into one slot

    def field_of(word: int, label: str) -> int:
        member = members[label]
        width = int(types[member["type"]]["numberOfBytes"]) * 8
        raw = (word >> (8 * int(member["offset"]))) & ((1 << width) - 1)
        if types[member["type"]]["label"].startswith("int") and raw >> (width - 1):
            raw -= 1 << width
        return raw

    head = chain.head()
    count = node.word(oracle, rounds_slot, head)  # a dynamic array's slot holds its length
    (expected_count,) = node.view(oracle, "roundCount()", [], [], head, ["uint256"])
    assert count == expected_count > 100
    base = int.from_bytes(keccak(pad(rounds_slot)), "big")
    for i in (0, 1, count // 2, count - 1):
        word = node.word(oracle, base + i, head)  # one slot per packed element
        round_id, answer, updated_at = node.view(
            oracle, "getRound(uint256)", ["uint256"], [i], head, ["uint80", "int128", "uint40"]
        )
        assert field_of(word, "roundId") == round_id == i + 1
        assert field_of(word, "answer") == answer > 0
        assert field_of(word, "updatedAt") == updated_at
    latest = node.word(oracle, latest_slot, head)
    assert latest == node.word(oracle, base + count - 1, head)
    # archive: an earlier block saw fewer rounds
    assert node.word(oracle, rounds_slot, state.contracts_block + 100) < count


def test_proxy_slots_and_the_upgrade(state, node):
    proxy = address_of(state, "FeeslabProxy")
    v1 = int(address_of(state, "CounterV1"), 16)
    v2 = int(address_of(state, "CounterV2"), 16)
    up = state.upgrade_block
    assert node.word(proxy, IMPLEMENTATION_SLOT, up - 1) == v1
    assert node.word(proxy, IMPLEMENTATION_SLOT, up) == v2
    assert node.word(proxy, ADMIN_SLOT, up) == int.from_bytes(state.admin, "big")
    # the implementation's state lives in the proxy and survives the upgrade
    before = node.word(proxy, 0, up - 1)
    assert before > 0 and node.word(proxy, 0, up) == before
    (count,) = node.view(proxy, "count()", [], [], up + 500, ["uint256"])
    assert count == node.word(proxy, 0, up + 500) > before


def test_unknown_accounts_and_slots_read_zero(node, chain):
    zero = "0x" + "00" * 32
    assert node("eth_getStorageAt", "0x" + "ab" * 20, "0x0", "latest") == zero
    assert node("eth_getStorageAt", "0x" + "ab" * 20, hex(2**255), hex(chain.head())) == zero


def test_storage_over_http_matches_in_process(devnet, state, node):
    token = address_of(state, "FeeslabToken")
    url = f"{devnet.url}/v3/{devnet.api_key}"
    body = [
        {"jsonrpc": "2.0", "id": i, "method": "eth_getStorageAt",
         "params": [token, "0x2", hex(block)]}
        for i, block in enumerate((state.contracts_block, state.upgrade_block))
    ]
    answers = httpx.post(url, json=body, timeout=60).json()
    for answer, block in zip(answers, (state.contracts_block, state.upgrade_block), strict=True):
        assert int(answer["result"], 16) == node.word(token, 2, block)


def test_contracts_endpoint_publishes_addresses_abis_and_layouts(devnet, state):
    listing = httpx.get(
        f"{devnet.url}/devnet/contracts", auth=(devnet.api_key, devnet.api_key_secret), timeout=60
    ).json()
    names = {c["name"]: c for c in listing["contracts"]}
    assert set(names) >= {"FeeslabToken", "PriceOracle", "FeeslabProxy", "Reverter", "GasBurner"}
    assert names["FeeslabToken"]["address"] == address_of(state, "FeeslabToken")
    assert any(
        e["label"] == "_balances" for e in names["FeeslabToken"]["storage_layout"]["storage"]
    )
    assert {c["chain_id"] for c in listing["chains"]} == {1, 11155111, 137, 8453}
    assert devnet.contracts["contracts"] == listing["contracts"]
    unauthorized = httpx.get(f"{devnet.url}/devnet/contracts", timeout=60)
    assert unauthorized.status_code == 401


def test_concurrent_calls_on_one_block_agree(state, chain, node):
    # the server runs calls on worker threads; they share one cached executor per block
    from concurrent.futures import ThreadPoolExecutor

    token = address_of(state, "FeeslabToken")
    holders = ["0x" + h.hex() for h in state.holders[:40]]
    block = chain.head() - 1

    def balance(holder: str) -> int:
        return node.view(token, "balanceOf(address)", ["address"], [holder], block, ["uint256"])[0]

    expected = [node.word(token, mapping_slot(h, 0), block) for h in holders]
    import sys

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # make threads interleave inside a call's snapshot/revert
    try:
        with ThreadPoolExecutor(max_workers=16) as pool:
            for _ in range(10):
                assert list(pool.map(balance, holders)) == expected
    finally:
        sys.setswitchinterval(old)


def test_execution_methods_cost_what_the_interface_says(devnet, state):
    token = address_of(state, "FeeslabToken")
    auth = (devnet.api_key, devnet.api_key_secret)

    def ledger() -> dict[str, int]:
        return httpx.get(f"{devnet.url}/devnet/credits", auth=auth, timeout=60).json()["by_method"]

    call = {"from": "0x" + "11" * 20, "to": token, "data": "0x18160ddd"}
    body = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "eth_getStorageAt",
            "params": [token, "0x2", "latest"],
        },
        {"jsonrpc": "2.0", "id": 2, "method": "eth_call", "params": [call, "latest"]},
        {"jsonrpc": "2.0", "id": 3, "method": "eth_estimateGas", "params": [call]},
    ]
    before = ledger()
    answers = httpx.post(f"{devnet.url}/v3/{devnet.api_key}", json=body, timeout=60).json()
    assert all("result" in a for a in answers)
    after = ledger()
    spent = {m: after.get(m, 0) - before.get(m, 0) for m in after}
    assert spent["eth_getStorageAt"] == 80
    assert spent["eth_call"] == 80
    assert spent["eth_estimateGas"] == 300

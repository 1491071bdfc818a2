"""Storage-slot arithmetic: hand-computed vectors, then the devnet's real contracts.

Expected slots are computed here from the Solidity rules with keccak and byte strings, never
with ``feeslab.slots``; the devnet tests read the chain's storage and compare it with what the
contracts' own getters answer through ``eth_call`` at the same block.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eth_abi import decode as abi_decode
from eth_hash.auto import keccak

from feeslab import slots
from feeslab.slots import (
    ADMIN_SLOT,
    BEACON_SLOT,
    IMPLEMENTATION_SLOT,
    array_element_slot,
    decode_short_string,
    decode_word,
    mapping_slot,
    nested_mapping_slot,
    packed_field,
    slot_from_layout,
    slot_hex,
    struct_member_slot,
)

ARTIFACTS = Path(__file__).resolve().parents[1] / "feeslab/devnet/contracts/artifacts.json"
LAYOUTS = {
    name: artifact["storageLayout"]
    for name, artifact in json.loads(ARTIFACTS.read_text())["contracts"].items()
}

ALICE = "0x" + "a1" * 20
BOB = "0x" + "b0" * 20


def k(data: bytes) -> int:
    return int.from_bytes(keccak(data), "big")


def w(n: int) -> bytes:
    """32-byte big-endian word (two's complement for negatives)."""
    return (n % 2**256).to_bytes(32, "big")


def addr(a: str) -> bytes:
    return bytes.fromhex(a[2:]).rjust(32, b"\0")


# --- hand-computed vectors ---------------------------------------------------------------------


def test_eip1967_slots_are_the_eips_constants():
    # the hex literals as printed in EIP-1967
    assert IMPLEMENTATION_SLOT == 0x360894A13BA1A3210667C828492DB98DCA3E2076CC3735A920A3CA505D382BBC
    assert ADMIN_SLOT == 0xB53127684A568B3173AE13B9F8A6016E243E63B6E8EE1178D6A717850B5D6103
    assert BEACON_SLOT == 0xA3F0AD74E5423AEBFD80D3EF4346578335A9A72AEAEE59FF6CB3582B35133D50
    assert k(b"eip1967.proxy.implementation") - 1 == IMPLEMENTATION_SLOT


def test_mapping_slot_value_type_keys():
    assert mapping_slot(ALICE, 0) == k(addr(ALICE) + w(0))
    assert mapping_slot(ALICE.upper().replace("0X", "0x"), 0) == k(addr(ALICE) + w(0))
    assert mapping_slot(bytes.fromhex("a1" * 20), "0x0") == k(addr(ALICE) + w(0))
    assert mapping_slot(7, 3, key_type="uint256") == k(w(7) + w(3))
    assert mapping_slot(7, 3, key_type="uint80") == k(w(7) + w(3))
    assert mapping_slot(7, 3, key_type="t_uint80") == k(w(7) + w(3))
    assert mapping_slot(-1, 2, key_type="int128") == k(b"\xff" * 32 + w(2))  # sign-extended
    assert mapping_slot(True, 1, key_type="bool") == k(w(1) + w(1))
    key32 = bytes(range(32))
    assert mapping_slot(key32, 4, key_type="bytes32") == k(key32 + w(4))
    assert mapping_slot("0x" + key32.hex(), 4, key_type="bytes32") == k(key32 + w(4))
    # bytes4 keys are left-aligned, as abi.encode pads them
    assert mapping_slot("0xdeadbeef", 9, key_type="bytes4") == k(
        bytes.fromhex("deadbeef") + b"\0" * 28 + w(9)
    )
    big_slot = 2**255 + 1
    assert mapping_slot(1, hex(big_slot), key_type="uint8") == k(w(1) + w(big_slot))


def test_mapping_slot_string_and_bytes_keys_are_not_padded():
    assert mapping_slot("hello", 5, key_type="string") == k(b"hello" + w(5))
    assert mapping_slot("é", 5, key_type="string") == k("é".encode() + w(5))
    assert mapping_slot("", 5, key_type="t_string_memory_ptr") == k(w(5))
    assert mapping_slot(b"\x01\x02", 6, key_type="bytes") == k(b"\x01\x02" + w(6))
    assert mapping_slot("0x0102", 6, key_type="bytes") == k(b"\x01\x02" + w(6))


def test_nested_mapping_slot_is_keys_applied_outermost_first():
    inner = k(addr(ALICE) + w(1))
    assert nested_mapping_slot([ALICE, BOB], 1) == k(addr(BOB) + w(inner))
    mixed = nested_mapping_slot([ALICE, 42], 1, key_types=["address", "uint256"])
    assert mixed == k(w(42) + w(inner))
    assert nested_mapping_slot([ALICE], 1) == mapping_slot(ALICE, 1)


def test_array_element_slots():
    start = k(w(2))
    assert array_element_slot(2, 0) == start
    assert array_element_slot(2, 5) == start + 5
    assert array_element_slot(2, 5, element_slots=3) == start + 15
    assert array_element_slot(2, 5, dynamic=False) == 7  # uint256[10] at slot 2
    # uint8[]: 32 to a slot; uint64[]: 4 to a slot, from the low-order end
    assert array_element_slot(2, 33, element_bytes=1) == (start + 1, 1)
    assert array_element_slot(2, 6, element_bytes=8) == (start + 1, 16)
    assert array_element_slot(2, 1, element_bytes=20) == (start + 1, 0)  # address[]: 1 a slot
    # slot arithmetic wraps modulo 2**256, as the EVM's does
    assert array_element_slot(2, 2**256 - start + 3) == 3
    assert struct_member_slot(2**256 - 1, 2) == 1
    assert struct_member_slot("0x10", 3) == 0x13


def test_packed_field_and_decode_word_take_offsets_from_the_low_end():
    owner = 0x7718923578B117FAA87307484D26DFB12D8029D3
    word = (18 << 160) | owner  # FeeslabToken slot 5: owner at offset 0, decimals at 20
    assert packed_field(word, 0, 20) == owner
    assert packed_field(word, 20, 1) == 18
    assert decode_word(word, "address") == f"0x{owner:040x}"
    assert decode_word(hex(word), "uint8", offset=20) == 18
    assert decode_word(w(word), "t_uint8", offset=20) == 18
    # int128 -5 at offset 10, as in the oracle's Round
    packed = ((-5 % 2**128) << 80) | 7
    assert packed_field(packed, 10, 16, signed=True) == -5
    assert decode_word(packed, "int128", offset=10) == -5
    assert decode_word(packed, "uint80") == 7
    assert decode_word(1 << 8, "bool", offset=1) is True
    assert decode_word(0, "bool") is False
    assert decode_word(0xDEADBEEF, "bytes4") == bytes.fromhex("deadbeef")  # low-order aligned
    assert decode_word(2**256 - 1, "int256") == -1
    assert decode_word(2**256 - 1, "uint") == 2**256 - 1


def test_short_strings():
    word = b"Feeslab Token".ljust(31, b"\0") + bytes([2 * 13])
    assert decode_short_string(word) == "Feeslab Token"
    assert decode_short_string("0x" + word.hex(), raw=True) == b"Feeslab Token"
    assert decode_short_string(0) == ""
    full = b"x" * 31 + bytes([62])
    assert decode_short_string(full) == "x" * 31


def test_long_string_error_says_where_the_data_is():
    with pytest.raises(ValueError, match=r"long string or bytes \(40 bytes.*2 data words.*keccak"):
        decode_short_string(2 * 40 + 1)


def test_slot_from_layout_reads_solc_output():
    token = LAYOUTS["FeeslabToken"]
    assert slot_from_layout(token, "_balances") == (0, 0, "t_mapping(t_address,t_uint256)")
    assert slot_from_layout(token, "owner") == (5, 0, "t_address")
    assert slot_from_layout(token, "decimals") == (5, 20, "t_uint8")
    oracle = LAYOUTS["PriceOracle"]
    assert slot_from_layout(oracle, "heartbeat") == (0, 20, "t_uint64")
    assert slot_from_layout(oracle, "latest.roundId") == (1, 0, "t_uint80")
    assert slot_from_layout(oracle, "latest.answer") == (1, 10, "t_int128")
    assert slot_from_layout(oracle, "latest.updatedAt") == (1, 26, "t_uint40")
    assert slot_from_layout(oracle, "rounds")[0] == 2
    with pytest.raises(ValueError, match=r"no 'balances' in storage_layout \(labels: _allowances"):
        slot_from_layout(token, "balances")
    with pytest.raises(ValueError, match="not a struct"):
        slot_from_layout(token, "owner.x")
    with pytest.raises(ValueError, match="no 'nope' in struct latest"):
        slot_from_layout(oracle, "latest.nope")


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: mapping_slot(ALICE, -1), ValueError, r"slot must be in \[0, 2\*\*256\)"),
        (lambda: mapping_slot(ALICE, 2**256), ValueError, "slot must be in"),
        (lambda: mapping_slot(ALICE, "12"), ValueError, "slot must be a 0x-prefixed hex"),
        (lambda: mapping_slot(ALICE, 1.0), TypeError, "slot must be an int"),
        (lambda: mapping_slot(ALICE, True), TypeError, "slot must be an int.*not bool"),
        (lambda: mapping_slot(ALICE, b"\0" * 33), ValueError, "slot is longer than 32 bytes"),
        (lambda: mapping_slot("0x1234", 0), ValueError, "key must be a 20-byte 0x address"),
        (lambda: mapping_slot(256, 0, key_type="uint8"), ValueError, "does not fit 'uint8'"),
        (lambda: mapping_slot(1, 0, key_type="uint7"), ValueError, "key_type: unsupported"),
        (lambda: mapping_slot(1, 0, key_type="string"), TypeError, "key must be str or bytes"),
        (lambda: mapping_slot("0x01", 0, key_type="bytes2"), ValueError, "exactly 2 bytes"),
        (lambda: mapping_slot(2**127, 0, key_type="int128"), ValueError, "out of range"),
        (lambda: nested_mapping_slot([ALICE], 0, ["address", "uint256"]), ValueError,
         "key_types has 2 types for 1 keys"),
        (lambda: array_element_slot(0, -1), ValueError, "index must be >= 0"),
        (lambda: array_element_slot(0, 1, element_slots=2, element_bytes=1), ValueError,
         "not both"),
        (lambda: packed_field(0, 31, 2), ValueError, "size_bytes must be in 1..1"),
        (lambda: packed_field(0, 32, 1), ValueError, "offset_bytes must be in 0..31"),
        (lambda: decode_word(2, "bool"), ValueError, "not a bool"),
        (lambda: decode_word(0, "string"), ValueError, "decode_short_string"),
        (lambda: decode_word("0xzz", "uint256"), ValueError, "word must be a 0x-prefixed"),
        (lambda: decode_short_string(64 << 0), ValueError, "not a short string's"),
        (lambda: decode_short_string((1 << 40) | 2), ValueError, "past its length"),
        (lambda: slot_from_layout({"x": 1}, "a"), TypeError, "storage_layout must be"),
    ],
)
def test_bad_input_raises_naming_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_slot_hex():
    assert slot_hex(5) == "0x" + "0" * 63 + "5"
    assert slot_hex(IMPLEMENTATION_SLOT) == (
        "0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc"
    )
    assert slots.type_size("t_uint80") == 10 and slots.type_size("address") == 20


# --- the devnet's contracts ------------------------------------------------------------------


@pytest.fixture(scope="module")
def chain(devnet):
    """Addresses, accounts and a block after the proxy upgrade, from GET /devnet/contracts."""
    listing = devnet.contracts
    mainnet = next(c for c in listing["chains"] if c["network"] == "mainnet")
    return {
        "address": {c["name"]: c["address"] for c in listing["contracts"]},
        "layout": {c["name"]: c["storage_layout"] for c in listing["contracts"]},
        "accounts": listing["accounts"],
        "upgrade_block": mainnet["upgrade_block"],
        "block": hex(mainnet["upgrade_block"] + 1000),
    }


def eth_call(rpc, to: str, signature: str, args: bytes, block: str, types: list[str]):
    data = "0x" + (keccak(signature.encode())[:4] + args).hex()
    sender = "0x" + "00" * 19 + "01"
    return abi_decode(types, bytes.fromhex(rpc("eth_call", {"from": sender, "to": to, "data": data},
                                               block)[2:]))


def storage(rpc, address: str, slot: int, block: str) -> str:
    return rpc("eth_getStorageAt", address, slot_hex(slot), block)


def test_devnet_layouts_are_the_artifacts(chain):
    assert chain["layout"]["FeeslabToken"] == LAYOUTS["FeeslabToken"]


def test_token_balances_allowances_and_packed_slot(rpc, chain):
    token, block = chain["address"]["FeeslabToken"], chain["block"]
    layout = chain["layout"]["FeeslabToken"]
    balances_slot, _, balances_type = slot_from_layout(layout, "_balances")
    key_type = balances_type.removeprefix("t_mapping(").split(",")[0]  # "t_address"
    nonzero = 0
    for holder in chain["accounts"]["holders"][:8]:
        (expected,) = eth_call(rpc, token, "balanceOf(address)", addr(holder), block, ["uint256"])
        word = storage(rpc, token, mapping_slot(holder, balances_slot, key_type=key_type), block)
        assert decode_word(word, "uint256") == expected
        nonzero += expected > 0
    assert nonzero > 0  # the comparison was not all zeros
    allowances_slot = slot_from_layout(layout, "_allowances")[0]
    seen = 0
    for owner in chain["accounts"]["holders"][:5]:
        for spender in chain["accounts"]["spenders"][:5]:
            (expected,) = eth_call(rpc, token, "allowance(address,address)",
                                   addr(owner) + addr(spender), block, ["uint256"])
            slot = nested_mapping_slot([owner, spender], allowances_slot)
            assert decode_word(storage(rpc, token, slot, block), "uint256") == expected
            seen += expected > 0
    assert seen > 0  # some owner/spender pair has an allowance
    (supply,) = eth_call(rpc, token, "totalSupply()", b"", block, ["uint256"])
    assert (
        int(storage(rpc, token, slot_from_layout(layout, "_totalSupply")[0], block), 16) == supply
    )
    # owner and decimals share slot 5
    packed = storage(rpc, token, 5, block)
    slot, offset, type_ = slot_from_layout(layout, "decimals")
    (decimals,) = eth_call(rpc, token, "decimals()", b"", block, ["uint8"])
    (owner,) = eth_call(rpc, token, "owner()", b"", block, ["address"])
    assert (slot, offset) == (5, 20)
    assert decode_word(packed, type_, offset=offset) == decimals == 18
    assert decode_word(packed, "address") == owner.lower() == chain["accounts"]["deployer"]
    # short strings in slots 3 and 4
    (name,) = eth_call(rpc, token, "name()", b"", block, ["string"])
    (symbol,) = eth_call(rpc, token, "symbol()", b"", block, ["string"])
    assert decode_short_string(storage(rpc, token, 3, block)) == name
    assert decode_short_string(storage(rpc, token, 4, block)) == symbol


def test_oracle_packed_struct_array_and_mapping(rpc, chain):
    oracle, block = chain["address"]["PriceOracle"], chain["block"]
    layout = chain["layout"]["PriceOracle"]
    round_types = ["uint80", "int128", "uint40"]
    fields = ["latest.roundId", "latest.answer", "latest.updatedAt"]

    def decode_round(word):
        values = []
        for field in fields:
            _, offset, type_ = slot_from_layout(layout, field)
            values.append(decode_word(word, type_, offset=offset))
        return tuple(values)

    latest = eth_call(rpc, oracle, "latest()", b"", block, round_types)
    assert (
        decode_round(storage(rpc, oracle, slot_from_layout(layout, "latest")[0], block)) == latest
    )
    assert latest[0] > 1
    (count,) = eth_call(rpc, oracle, "roundCount()", b"", block, ["uint256"])
    rounds_slot = slot_from_layout(layout, "rounds")[0]
    assert int(storage(rpc, oracle, rounds_slot, block), 16) == count == latest[0]
    for i in (0, 1, count - 1):
        expected = eth_call(rpc, oracle, "rounds(uint256)", w(i), block, round_types)
        assert decode_round(storage(rpc, oracle, array_element_slot(rounds_slot, i), block)) == (
            expected
        )
        assert expected[0] == i + 1
    mapping = slot_from_layout(layout, "submittedAtBlock")
    key_type = mapping[2].removeprefix("t_mapping(").split(",")[0]  # "t_uint80"
    (submitted,) = eth_call(
        rpc, oracle, "submittedAtBlock(uint80)", w(latest[0]), block, ["uint256"]
    )
    word = storage(rpc, oracle, mapping_slot(latest[0], mapping[0], key_type=key_type), block)
    assert decode_word(word, "uint256") == submitted > 0
    # updater and heartbeat packed in slot 0
    (heartbeat,) = eth_call(rpc, oracle, "heartbeat()", b"", block, ["uint64"])
    _, offset, type_ = slot_from_layout(layout, "heartbeat")
    slot0 = storage(rpc, oracle, 0, block)
    assert decode_word(slot0, type_, offset=offset) == heartbeat
    assert decode_word(slot0, "address") == chain["accounts"]["oracle_updater"]


def test_proxy_eip1967_slots_before_and_after_the_upgrade(rpc, chain):
    proxy = chain["address"]["FeeslabProxy"]
    before = hex(chain["upgrade_block"] - 1)
    after = chain["block"]
    assert (
        decode_word(storage(rpc, proxy, IMPLEMENTATION_SLOT, before), "address")
        == (chain["address"]["CounterV1"])
    )
    assert (
        decode_word(storage(rpc, proxy, IMPLEMENTATION_SLOT, after), "address")
        == (chain["address"]["CounterV2"])
    )
    (implementation,) = eth_call(rpc, proxy, "implementation()", b"", after, ["address"])
    assert implementation.lower() == chain["address"]["CounterV2"]
    assert (
        decode_word(storage(rpc, proxy, ADMIN_SLOT, after), "address")
        == (chain["accounts"]["proxy_admin"])
    )
    assert int(storage(rpc, proxy, BEACON_SLOT, after), 16) == 0  # not a beacon proxy
    # the implementation's own variables live at the proxy's slots 0, 1, ...
    counter = slot_from_layout(LAYOUTS["CounterV2"], "count")
    (count,) = eth_call(rpc, proxy, "count()", b"", after, ["uint256"])
    assert decode_word(storage(rpc, proxy, counter[0], after), counter[2]) == count


@pytest.mark.parametrize(
    ("answer", "value"),
    [
        ("0x" + "00" * 31 + "2a", 42),  # geth, the devnet: 32 bytes
        ("0x", 0),  # ganache: an empty slot
        ("0x0", 0),
        ("0x1", 1),  # short words without leading zeros
        ("0X" + "ff" * 32, 2**256 - 1),
    ],
)
def test_every_storage_word_shape_nodes_answer_reads(answer, value):
    assert slots.storage_word(answer) == value


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        ("0x" + "00" * 33, r"answer is longer than 32 bytes \(33 bytes\)"),
        ("0xzz", "answer is not 0x followed by at most 64 hex digits: '0xzz'"),
        ("2a", "answer is not 0x followed by at most 64 hex digits"),
        (42, "answer is not 0x followed by at most 64 hex digits: 42"),
        (None, "answer is not 0x"),
    ],
)
def test_malformed_storage_words_are_a_feeslab_error(answer, match):
    import feeslab

    with pytest.raises(feeslab.MalformedWord, match=match) as info:
        slots.storage_word(answer, "answer")
    assert isinstance(info.value, feeslab.FeeslabError) and isinstance(info.value, ValueError)
    assert info.value.value == answer

"""`feeslab.protocol.headers`: a header's hash recomputed from real JSON-RPC answers (geth's
recorded answers across every fork's header layout, and real mainnet uncles from three
providers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from feeslab.protocol.headers import HEADER_FIELDS, header_hash, header_rlp

DATA = Path(__file__).parent / "data"
GETH = DATA / "execution-apis" / "tests" / "eth_getBlockByNumber"


def geth_block(name: str) -> dict:
    answer = next(line for line in (GETH / name).read_text().splitlines() if line.startswith("<<"))
    return json.loads(answer[2:])["result"]


@pytest.mark.parametrize("name", ["get-genesis.io", "get-block-london-fork.io",
                                  "get-block-shanghai-fork.io", "get-block-cancun-fork.io",
                                  "get-block-prague-fork.io"])
def test_geths_blocks_hash_to_their_hash(name: str) -> None:
    block = geth_block(name)
    assert header_hash(block) == block["hash"]


@pytest.mark.parametrize("path", sorted((DATA / "uncles").glob("*.json")), ids=lambda p: p.stem)
def test_real_mainnet_uncles_hash_to_their_hash(path: Path) -> None:
    uncle = json.loads(path.read_text())["response"]["result"]
    assert "baseFeePerGas" not in uncle  # proof-of-work headers: the first 15 fields only
    assert header_hash(uncle) == uncle["hash"]


def test_one_changed_field_changes_the_hash() -> None:
    block = geth_block("get-block-prague-fork.io")
    changed = {**block, "gasUsed": hex(int(block["gasUsed"], 16) + 1)}
    assert header_hash(changed) != block["hash"]


def test_a_missing_field_before_a_later_one_is_refused() -> None:
    block = geth_block("get-block-cancun-fork.io")
    del block["withdrawalsRoot"]
    with pytest.raises(ValueError, match="lacks 'withdrawalsRoot'"):
        header_rlp(block)


def test_a_field_that_is_not_hex_is_named() -> None:
    block = {name: "0x00" for name in HEADER_FIELDS[:15]}
    block["stateRoot"] = "0xzz"
    with pytest.raises(ValueError, match="'stateRoot' is not hex"):
        header_rlp(block)
    block["stateRoot"] = 7
    with pytest.raises(ValueError, match="'stateRoot' must be a 0x-hex"):
        header_rlp(block)


# -- Amsterdam and after: no public Amsterdam header is in a fixture, so an Amsterdam header
# (geth's Prague block with EIP-7928's and EIP-7843's fields) is checked against an RLP
# encoding written here from go-ethereum core/types/block.go Header (02b73d4), not feeslab's

PRAGUE_ORDER = (
    ("parentHash", "b"), ("sha3Uncles", "b"), ("miner", "b"), ("stateRoot", "b"),
    ("transactionsRoot", "b"), ("receiptsRoot", "b"), ("logsBloom", "b"), ("difficulty", "i"),
    ("number", "i"), ("gasLimit", "i"), ("gasUsed", "i"), ("timestamp", "i"),
    ("extraData", "b"), ("mixHash", "b"), ("nonce", "b"), ("baseFeePerGas", "i"),
    ("withdrawalsRoot", "b"), ("blobGasUsed", "i"), ("excessBlobGas", "i"),
    ("parentBeaconBlockRoot", "b"), ("requestsHash", "b"),
)  # fmt: skip


def reference_hash(block: dict, order) -> str:
    import rlp
    from eth_hash.auto import keccak

    items = [int(block[n], 16) if kind == "i" else bytes.fromhex(block[n][2:]) for n, kind in order]
    return "0x" + keccak(rlp.encode(items)).hex()


def amsterdam_block() -> dict:
    block = geth_block("get-block-prague-fork.io")
    block["blockAccessListHash"] = "0x" + "ab" * 32
    block["slotNumber"] = "0x1c3"
    block["hash"] = reference_hash(block, (*PRAGUE_ORDER, ("blockAccessListHash", "b"),
                                           ("slotNumber", "i")))  # fmt: skip
    return block


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    import feeslab.protocol.headers

    monkeypatch.setattr(feeslab.protocol.headers, "_warned", set())


def test_an_amsterdam_header_hashes_as_an_independent_encoding_does() -> None:
    block = amsterdam_block()
    assert HEADER_FIELDS[-2:] == ("blockAccessListHash", "slotNumber")
    assert header_hash(block) == block["hash"]
    assert header_hash({**block, "slotNumber": "0x1c4"}) != block["hash"]
    without = {k: v for k, v in block.items() if k != "slotNumber"}
    assert header_hash(without) != block["hash"]  # the field counts


@pytest.mark.parametrize("value", ["0x" + "cd" * 32, "0x2a"], ids=["data", "quantity"])
def test_an_invented_header_field_is_kept_in_the_hash_with_a_warning_once(value: str) -> None:
    import warnings

    from feeslab.protocol.headers import UnknownHeaderFieldWarning, unknown_header_fields

    block = amsterdam_block()
    block["futureRoot"] = value  # a field of a fork after Amsterdam, as a node would serve it
    kind = "i" if value == "0x2a" else "b"
    block["hash"] = reference_hash(block, (*PRAGUE_ORDER, ("blockAccessListHash", "b"),
                                           ("slotNumber", "i"), ("futureRoot", kind)))  # fmt: skip
    with pytest.warns(UnknownHeaderFieldWarning, match="'futureRoot'"):
        assert header_hash(block) == block["hash"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once: the second block says nothing
        assert unknown_header_fields(block) == ("futureRoot",)
        assert header_hash(block) == block["hash"]


def test_a_served_key_outside_the_header_does_not_break_the_hash_check() -> None:
    block = geth_block("get-block-prague-fork.io")
    block["l1BlockNumber"] = "0x10"  # an extra key some clients serve, not a header field
    with pytest.warns(UserWarning, match="l1BlockNumber"):
        assert header_hash(block) == block["hash"]

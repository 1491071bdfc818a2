"""`feeslab.headers`: a header's hash recomputed from real JSON-RPC answers (geth's recorded
answers across every fork's header layout, and real mainnet uncles from three providers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from feeslab.headers import HEADER_FIELDS, header_hash, header_rlp

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

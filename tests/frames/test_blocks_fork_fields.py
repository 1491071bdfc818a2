"""Headers of any fork as frames: every field through Amsterdam, and a field feeslab does not
know kept as an extra column with a warning once, its hash checked with the fields as
served."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import rlp
from eth_hash.auto import keccak

import feeslab.protocol.headers
from feeslab.frames.blocks import (
    BLOCK_DTYPES,
    HEADER_FIELD_DTYPES,
    parse_blocks,
    parse_header_fields,
    slim_block,
)
from feeslab.protocol.headers import UnknownHeaderFieldWarning

GETH = Path(__file__).parents[1] / "data" / "execution-apis" / "tests" / "eth_getBlockByNumber"
FORKS = ["get-genesis.io", "get-block-london-fork.io", "get-block-shanghai-fork.io",
         "get-block-cancun-fork.io", "get-block-prague-fork.io"]  # fmt: skip


def geth_block(name: str) -> dict:
    answer = next(line for line in (GETH / name).read_text().splitlines() if line.startswith("<<"))
    return json.loads(answer[2:])["result"]


def rehash(block: dict, extra: list[tuple[str, bool]]) -> str:
    """keccak(rlp) written here: geth's Prague block fields, then ``extra`` (name, is_int)."""
    order = ["parentHash", "sha3Uncles", "miner", "stateRoot", "transactionsRoot",
             "receiptsRoot", "logsBloom", "difficulty", "number", "gasLimit", "gasUsed",
             "timestamp", "extraData", "mixHash", "nonce", "baseFeePerGas", "withdrawalsRoot",
             "blobGasUsed", "excessBlobGas", "parentBeaconBlockRoot", "requestsHash"]  # fmt: skip
    ints = {"difficulty", "number", "gasLimit", "gasUsed", "timestamp", "baseFeePerGas",
            "blobGasUsed", "excessBlobGas"}  # fmt: skip
    items = [int(block[n], 16) if n in ints else bytes.fromhex(block[n][2:]) for n in order]
    items += [int(block[n], 16) if is_int else bytes.fromhex(block[n][2:]) for n, is_int in extra]
    return "0x" + keccak(rlp.encode(items)).hex()


def amsterdam(**more: str) -> dict:
    block = geth_block("get-block-prague-fork.io")
    block.update(blockAccessListHash="0x" + "ab" * 32, slotNumber="0x1c3", **more)
    extra = [("blockAccessListHash", False), ("slotNumber", True)]
    extra += [(name, not value.startswith("0x00") and len(value) != 66) for name, value in
              more.items()]  # fmt: skip
    block["hash"] = rehash(block, extra)
    return block


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feeslab.protocol.headers, "_warned", set())


def test_every_field_of_every_fork_through_amsterdam_is_parsed_and_verified() -> None:
    blocks = [geth_block(name) for name in FORKS] + [amsterdam()]
    frame = parse_header_fields(blocks)
    assert {c: str(t) for c, t in frame.dtypes.items()} == HEADER_FIELD_DTYPES
    assert frame["hash_verified"].all()
    assert frame["base_fee_wei"].isna().tolist() == [True, False, False, False, False, False]
    assert frame["requests_hash"].isna().tolist() == [True] * 4 + [False, False]
    assert frame["slot_number"].isna().tolist() == [True] * 5 + [False]
    assert frame["slot_number"].iloc[-1] == 0x1C3
    assert frame["block_access_list_hash"].iloc[-1] == "0x" + "ab" * 32
    assert frame["logs_bloom"].str.len().eq(2 + 512).all()  # 256 bytes, as served
    # one changed field and the check says so
    forged = {**blocks[-1], "slotNumber": "0x1c4"}
    assert not parse_header_fields([forged])["hash_verified"].iloc[0]


def test_an_invented_field_is_an_extra_column_with_one_warning() -> None:
    block = amsterdam(futureRoot="0x" + "cd" * 32)
    with pytest.warns(UnknownHeaderFieldWarning, match="'futureRoot'"):
        frame = parse_header_fields([block, block])
    assert frame["hash_verified"].all()  # the hash check used the field as served
    assert frame["future_root"].tolist() == ["0x" + "cd" * 32] * 2
    assert frame.attrs["extra_header_fields"] == ("futureRoot",)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once: the next frame says nothing
        blocks = parse_blocks([block, geth_block("get-block-prague-fork.io")])
    # the fee frame keeps its columns and adds the field's, None where a block lacks it
    assert list(blocks.columns) == [*BLOCK_DTYPES, "future_root"]
    assert blocks["future_root"].tolist() == ["0x" + "cd" * 32, None]
    assert blocks.attrs["extra_header_fields"] == ("futureRoot",)
    # a streaming fetch's slim header keeps it too
    slim = slim_block(block)
    assert slim["futureRoot"] == block["futureRoot"] and "logsBloom" not in slim


def test_known_forks_add_no_column_to_the_fee_frame() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame = parse_blocks([geth_block(name) for name in FORKS] + [amsterdam()])
    assert list(frame.columns) == list(BLOCK_DTYPES) and "extra_header_fields" not in frame.attrs

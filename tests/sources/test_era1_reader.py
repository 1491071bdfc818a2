"""The era1 reader on the real first mainnet file, on damaged copies, and on devnet exports."""

from __future__ import annotations

import hashlib
import shutil
import struct
from pathlib import Path

import cramjam
import numpy as np
import pandas as pd
import pytest
import rlp
from eth_hash.auto import keccak

import feeslab
from feeslab.errors import ConfigError
from feeslab.protocol.era1 import accumulator_root
from feeslab.sources import era1 as era1_module
from feeslab.sources.era1 import (
    Era1Error,
    Era1File,
    Era1Source,
    effective_rewards,
    era1_files,
)

REAL = Path(__file__).parent.parent / "data" / "era1" / "mainnet-00000-5ec1ffb8.era1"
GENESIS = "0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3"
BLOCK_1 = "0x88e96d4537bea4d9c05d12549907b32561d3bf31f45aae734cdc119f13406cb6"


def records(path: Path) -> list[tuple[bytes, int, bytes]]:
    """(type, offset, data) of every e2store record, parsed with struct alone."""
    data = path.read_bytes()
    out, pos = [], 0
    while pos < len(data):
        kind, length, _ = struct.unpack_from("<2sIH", data, pos)
        out.append((kind, pos, data[pos + 8 : pos + 8 + length]))
        pos += 8 + length
    return out


@pytest.fixture(scope="module")
def real_blocks() -> pd.DataFrame:
    return Era1Source(REAL).blocks(0, 8192, progress=False)


@pytest.fixture(scope="module")
def real_uncles() -> tuple[pd.DataFrame, pd.DataFrame]:
    return Era1Source(REAL).uncle_rows(0, 8192, progress=False)


# -- the real file -----------------------------------------------------------------------------


def test_real_file_hashes_are_keccak_of_each_header(real_blocks):
    headers = [cramjam.snappy.decompress(d) for k, _, d in records(REAL) if k == b"\x03\x00"]
    assert len(headers) == len(real_blocks) == 8192
    expected = ["0x" + keccak(bytes(h)).hex() for h in headers]
    assert real_blocks["hash"].tolist() == expected
    assert real_blocks["hash"].iloc[0] == GENESIS
    assert real_blocks["hash"].iloc[1] == BLOCK_1
    assert (real_blocks["parent_hash"].iloc[1:].to_numpy() == real_blocks["hash"].iloc[:-1]
            .to_numpy()).all()  # fmt: skip
    assert real_blocks["block_number"].tolist() == list(range(8192))
    decoded = rlp.decode(bytes(headers[4321]))
    row = real_blocks.iloc[4321]
    assert row["miner"] == "0x" + decoded[2].hex()
    assert row["difficulty"] == int.from_bytes(decoded[7], "big")
    assert row["gas_limit"] == int.from_bytes(decoded[9], "big")
    assert row["timestamp"] == pd.Timestamp(int.from_bytes(decoded[11], "big"), unit="s", tz="UTC")


def test_real_file_accumulator_root_and_total_difficulty(real_blocks):
    handle = Era1File(REAL)
    stored = next(d for k, _, d in records(REAL) if k == b"\x07\x00")
    assert handle.accumulator == stored and stored[:4].hex() == "5ec1ffb8"  # the file's name
    hashes = [bytes.fromhex(h[2:]) for h in real_blocks["hash"]]
    assert accumulator_root(hashes, real_blocks["total_difficulty"].tolist()) == stored
    assert real_blocks["total_difficulty"].iloc[0] == 2**34  # mainnet genesis difficulty
    difficulty = real_blocks["difficulty"].tolist()
    assert real_blocks["total_difficulty"].tolist() == list(np.cumsum(difficulty, dtype=object))


def test_ssz_root_of_no_and_one_record_by_hand():
    zero = [bytes(32)]
    for _ in range(13):
        zero.append(hashlib.sha256(zero[-1] * 2).digest())
    assert accumulator_root([], []) == hashlib.sha256(zero[13] + bytes(32)).digest()
    leaf = hashlib.sha256(b"\x11" * 32 + (5).to_bytes(32, "little")).digest()
    node = leaf
    for depth in range(13):
        node = hashlib.sha256(node + zero[depth]).digest()
    expected = hashlib.sha256(node + (1).to_bytes(32, "little")).digest()
    assert accumulator_root([b"\x11" * 32], [5]) == expected


def test_real_file_uncles_match_the_bodies(real_blocks, real_uncles):
    uncles, per_block = real_uncles
    bodies = [rlp.decode(bytes(cramjam.snappy.decompress(d))) for k, _, d in records(REAL)
              if k == b"\x04\x00"]  # fmt: skip
    counts = [len(b[1]) for b in bodies]
    assert per_block["uncle_count"].tolist() == counts == real_blocks["uncle_count"].tolist()
    assert len(uncles) == sum(counts) == 1410
    first = uncles.iloc[0]
    uncle = bodies[first["block_number"]][1][first["uncle_index"]]
    assert first["hash"] == "0x" + keccak(rlp.encode(uncle)).hex()
    assert first["uncle_number"] == int.from_bytes(uncle[8], "big")
    assert first["miner"] == "0x" + uncle[2].hex()
    assert ((uncles["depth"] >= 1) & (uncles["depth"] <= 6)).all()
    listed = [h for t in real_blocks["uncle_hashes"] for h in t]
    assert sorted(listed) == sorted(uncles["hash"])
    assert real_blocks["transaction_count"].sum() == 0  # mainnet's first transaction: 46,147
    header7 = [cramjam.snappy.decompress(d) for k, _, d in records(REAL) if k == b"\x03\x00"][7]
    full = rlp.encode([rlp.decode(bytes(header7)), *bodies[7]])  # rlp([header, txs, uncles])
    assert real_blocks["size_bytes"].iloc[7] == len(full)


def test_vectorised_header_walk_equals_rlp_decode():
    handle = Era1File(REAL)
    headers = handle.headers()
    raw = [*headers.raw, b"\xf9" + b"\x00" * 600]  # not a header: must be reported, not read
    columns, failed = era1_module._parse_headers(raw)
    assert failed.tolist() == [8192]
    for i in range(0, 8192, 37):
        fields = rlp.decode(raw[i])
        assert int(columns["number"][i]) == int.from_bytes(fields[8], "big")
        assert int(columns["difficulty"][i]) == int.from_bytes(fields[7], "big")
        assert int(columns["gas_used"][i]) == int.from_bytes(fields[10], "big")
        assert int(columns["timestamp"][i]) == int.from_bytes(fields[11], "big")
        assert bytes(columns["coinbase"][i]) == fields[2]
        assert columns["parent_hash"][i] == fields[0]


def test_headers_the_walker_cannot_read_go_through_rlp():
    """A header with a 9-byte integer (gasLimit 2**64) takes the rlp path and still reads."""
    fields = rlp.decode(Era1File(REAL).headers().raw[5])
    fields[9] = (2**64).to_bytes(9, "big")
    fields.append((7).to_bytes(1, "big"))  # a base fee: a London header
    columns, failed = era1_module._parse_headers([rlp.encode(fields)])
    assert failed.size == 0
    assert columns["gas_limit"][0] == 2**64 and columns["base_fee"][0] == 7
    assert bool(columns["has_fee"][0])


# -- damaged copies ----------------------------------------------------------------------------


def damaged(tmp_path: Path, change) -> Path:
    data = bytearray(REAL.read_bytes())
    data = change(data, records(REAL))
    path = tmp_path / REAL.name
    path.write_bytes(bytes(data))
    return path


def header_offset(recs, block: int) -> int:
    return [o for k, o, _ in recs if k == b"\x03\x00"][block]


def truncate_end(d, r):
    return d[: len(d) - 1000]


def cut_out_bytes(d, r):
    return d[:1000] + d[1100:]


def flip_header_100(d, r):
    d[header_offset(r, 100) + 48] ^= 1  # inside its compressed parentHash
    return d


def flip_total_difficulty_2000(d, r):
    d[[o for k, o, _ in r if k == b"\x06\x00"][2000] + 8] ^= 1
    return d


def not_era1(d, r):
    return b"not an era1 file" + d[16:]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (truncate_end, ["BlockIndex", "truncated"]),
        (cut_out_bytes, ["BlockIndex", "damaged"]),
        (flip_header_100, ["block 100:", "parentHash"]),
        (flip_total_difficulty_2000, ["block 2,000", "total difficulty"]),
        (not_era1, ["not an era1 file"]),
    ],
)
def test_damaged_files_raise_naming_file_and_block(tmp_path, change, words):
    path = damaged(tmp_path, change)
    with pytest.raises(Era1Error) as info:
        Era1Source(path).uncle_rows(0, 8192, progress=False)
    message = str(info.value)
    assert message.startswith(REAL.name), message
    for word in words:
        assert word in message, message
    assert isinstance(info.value, feeslab.FeeslabError)


def test_a_damaged_body_is_caught_by_sha3_uncles(tmp_path, real_uncles):
    uncles, _ = real_uncles
    block = int(uncles["block_number"].iloc[0])
    body = [(o, d) for k, o, d in records(REAL) if k == b"\x04\x00"][block]
    plain = bytearray(bytes(cramjam.snappy.decompress(body[1])))
    plain[-3] ^= 0xFF  # inside the uncle's nonce
    packed = bytes(cramjam.snappy.compress(bytes(plain)))
    assert len(packed) == len(body[1])

    def change(d, r):
        d[body[0] + 8 : body[0] + 8 + len(packed)] = packed
        return d

    path = damaged(tmp_path, change)
    assert len(Era1Source(path).blocks(block + 1, block + 3, progress=False)) == 2
    with pytest.raises(Era1Error, match=rf"block {block:,}: its body's uncles do not hash"):
        Era1Source(path).uncle_rows(0, 8192, progress=False)


# -- files, directories, globs ---------------------------------------------------------------------


def test_paths_files_directories_and_globs(tmp_path):
    copy = tmp_path / "era" / REAL.name
    copy.parent.mkdir()
    shutil.copy(REAL, copy)
    assert era1_files(copy) == [copy]
    assert era1_files(copy.parent) == [copy]
    assert era1_files(str(copy.parent / "mainnet-*.era1")) == [copy]
    with pytest.raises(Era1Error, match="no era1 file in the pattern"):
        era1_files(str(tmp_path / "sepolia-*.era1"))
    with pytest.raises(Era1Error, match="no era1 file in the directory"):
        era1_files(tmp_path)
    source = Era1Source(copy)
    with pytest.raises(Era1Error, match=r"no era1 file covers block 8,192 .*0\.\.8,191"):
        source.blocks(8000, 8300, progress=False)
    assert source.heights == "protocol" and source.network == "mainnet"


def test_connect_era1_lab_reads_files_at_zero_credits(real_uncles):
    with feeslab.connect(era1=REAL) as lab:
        scan = lab.uncles(0, 1000, progress=False)
        expected, per_block = real_uncles
        pd.testing.assert_frame_equal(
            scan.uncles, expected[expected["block_number"] < 1000].reset_index(drop=True)
        )
        assert scan.blocks["uncle_count"].tolist() == per_block["uncle_count"][:1000].tolist()
        assert scan.plan.total == 0 and lab.credits.spent == 0
        assert scan.uncles.attrs["chain_id"] == 1 and scan.uncles.attrs["source"] == "era1"
        assert lab.blocks(10, 20, progress=False)["block_number"].tolist() == list(range(10, 20))
        fees = lab.fee_history(0, 5)
        assert fees["base_fee_wei"].tolist() == [0] * 5  # before London, as nodes answer
        assert lab.chain_spec.label == "mainnet" and lab.source == "era1"
        with pytest.raises(ConfigError, match=r"storage dataset needs 'json-rpc', but <Era1Source "
                                              r"mainnet: 1 files> \(era1\) offers 'blocks'"):
            lab.storage("0x" + "11" * 20, 0, 1)


def test_effective_rewards_as_geth_fee_history():
    # block gasUsed 100,000: tx tips 5, 1, 3 wei using 21,000, 50,000 and 29,000 gas.
    # sorted by tip: (1, 50k), (3, 29k), (5, 21k); running gas 50k, 79k, 100k
    rewards = effective_rewards(100_000, [5, 1, 3], [21_000, 50_000, 29_000], [0, 50, 60, 79, 80,
                                                                              100])  # fmt: skip
    assert rewards == [1, 1, 3, 3, 5, 5]
    assert effective_rewards(0, [], [], [10, 90]) == [0, 0]
    tx = [b"\x01", b"\x05", (3 * 10**9).to_bytes(4, "big"), (40 * 10**9).to_bytes(5, "big")]
    assert era1_module._tip(tx, 2, 39 * 10**9) == 10**9  # min(tip cap, fee cap - base fee)
    assert era1_module._tip(tx, 2, 30 * 10**9) == 3 * 10**9
    assert era1_module._tip([b"", (50 * 10**9).to_bytes(5, "big")], None, 30 * 10**9) == 20 * 10**9


# -- a block with transactions: the transactions root and fee-history tips ------------------------

GWEI = 10**9


def london_blocks(
    tamper: bool = False, tamper_receipts: int = 0
) -> tuple[list[tuple[bytes, bytes, bytes, int]], list]:
    """Block 0 (empty) and block 1 (base fee 10 gwei) with a legacy, an EIP-2930 and an
    EIP-1559 transaction and their receipts (21,000, 50,000 and 29,000 gas)."""
    from trie import HexaryTrie

    to = bytes.fromhex("11" * 20)
    sig = [27, 1, 2]
    legacy = [0, 15 * GWEI, 21_000, to, 0, b"", *sig]
    access = b"\x01" + rlp.encode([1, 0, 12 * GWEI, 50_000, to, 0, b"", [], 0, 1, 2])
    dynamic = b"\x02" + rlp.encode([1, 0, 3 * GWEI, 11 * GWEI, 29_000, to, 0, b"", [], 0, 1, 2])
    tree = HexaryTrie(db={})
    for i, value in enumerate([rlp.encode(legacy), access, dynamic]):
        tree[rlp.encode(i)] = value
    bloom = bytes(256)
    receipt_items = [[1, 21_000, bloom, []], b"\x01" + rlp.encode([1, 71_000, bloom, []]),
                     b"\x02" + rlp.encode([1, 100_000 + tamper_receipts, bloom, []])]  # fmt: skip
    receipts = rlp.encode(receipt_items)
    receipt_tree = HexaryTrie(db={})
    untampered = b"\x02" + rlp.encode([1, 100_000, bloom, []])
    for i, item in enumerate([*receipt_items[:2], untampered]):
        receipt_tree[rlp.encode(i)] = rlp.encode(item) if isinstance(item, list) else item
    empty_uncles = keccak(rlp.encode([]))
    genesis = [bytes(32), empty_uncles, bytes(20), bytes(32), keccak(b"\x80"), keccak(b"\x80"),
               bloom, 2**17, 0, 30_000_000, 0, 0, b"", bytes(32), bytes(8)]  # fmt: skip
    header0 = rlp.encode(genesis)
    fields = [keccak(header0), empty_uncles, to, bytes(32), tree.root_hash, receipt_tree.root_hash,
              bloom,
              2**17, 1, 30_000_000, 100_000, 12, b"", bytes(32), bytes(8), 10 * GWEI]  # fmt: skip
    header1 = rlp.encode(fields)
    transactions = [legacy, access, dynamic]
    if tamper:
        transactions = [[0, 16 * GWEI, 21_000, to, 0, b"", *sig], access, dynamic]
    body1 = rlp.encode([transactions, []])
    blocks = [(header0, rlp.encode([[], []]), rlp.encode([]), 2**17),
              (header1, body1, receipts, 2**18)]  # fmt: skip
    return blocks, fields


def test_transactions_root_and_fee_history_tips_from_receipts(tmp_path):
    from feeslab.protocol.era1 import era1_bytes

    blocks, fields = london_blocks()
    content, root = era1_bytes(0, blocks)
    path = tmp_path / f"mainnet-00000-{root[:4].hex()}.era1"
    path.write_bytes(content)
    source = Era1Source(path)
    frame = source.blocks(0, 2, progress=False)
    assert frame["transaction_count"].tolist() == [0, 3]
    assert frame["base_fee_wei"].tolist()[1] == 10 * GWEI and pd.isna(frame["base_fee_wei"][0])
    full = rlp.encode([fields, *rlp.decode(blocks[1][1])])
    assert frame["size_bytes"].tolist()[1] == len(full)
    fees = source.fee_history(0, 2, percentiles=(10, 50, 90))
    # tips: legacy 15 - 10 = 5, 2930 12 - 10 = 2, 1559 min(3, 11 - 10) = 1 gwei; by tip the
    # running gas is 29,000, 79,000, 100,000 of 100,000: 10 % -> 1, 50 % -> 2, 90 % -> 5 gwei
    assert fees.iloc[1][["reward_p10_wei", "reward_p50_wei", "reward_p90_wei"]].tolist() == [
        GWEI, 2 * GWEI, 5 * GWEI]  # fmt: skip
    assert fees.iloc[0]["reward_p50_wei"] == 0
    assert fees["gas_used_ratio"].tolist()[1] == 100_000 / 30e6

    tampered, _ = london_blocks(tamper=True)
    content, root = era1_bytes(0, tampered)
    path.write_bytes(content)
    with pytest.raises(Era1Error, match="block 1: its body's transactions do not hash to its "
                                        "transactionsRoot"):  # fmt: skip
        Era1Source(path).blocks(0, 2, progress=False)

    tampered, _ = london_blocks(tamper_receipts=1)
    content, root = era1_bytes(0, tampered)
    path.write_bytes(content)
    assert len(Era1Source(path).blocks(0, 2, progress=False)) == 2  # receipts not read
    with pytest.raises(Era1Error, match="block 1: its receipts do not hash to its receiptsRoot"):
        Era1Source(path).fee_history(0, 2)


def test_the_reader_builds_its_frames_with_the_public_frame_builders():
    """era1's frames are made by feeslab.frames' builders, as the node's are: the reader
    takes nothing private from the frames package (a private helper would let it build a
    frame of its own)."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(era1_module))
    taken = [(node.module, alias.name) for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                 "feeslab.frames") for alias in node.names]  # fmt: skip
    assert {name for _, name in taken} >= {"blocks_frame", "uncles_frame", "fee_history_frame"}
    assert [(m, n) for m, n in taken if n.startswith("_")] == []
    modules = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names]  # fmt: skip
    assert not [m for m in modules if m.startswith("feeslab.frames")]

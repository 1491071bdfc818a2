"""devnet -> era1 -> frames equals devnet -> JSON-RPC -> frames; the CLI on era1 files."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import feeslab
from feeslab.devnet.era1 import export_era1
from feeslab.sources.era1 import Era1File, Era1Source

SEED = 7  # the session devnet's (tests/conftest.py)
STOP = 20_001  # blocks 0 .. 20,000
REAL = Path(__file__).parent.parent / "data" / "era1" / "mainnet-00000-5ec1ffb8.era1"


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> list[Path]:
    return export_era1(tmp_path_factory.mktemp("era1"), epochs=3, seed=SEED)


@pytest.fixture(scope="module")
def over_rpc(devnet):
    # with the secret the client asks the devnet its limit (above any plan's): without it,
    # a devnet's default plan paces these 45,000 blocks for ~100 s
    with feeslab.connect(url=devnet.url, api_key=devnet.api_key,
                         api_key_secret=devnet.api_key_secret, cache=False,
                         progress=False) as lab:  # fmt: skip
        return lab.blocks(0, STOP), lab.uncles(0, STOP), lab.fee_history(115_000, 125_000)


def test_exported_files_are_named_and_laid_out_as_era1(exported):
    assert [p.name.split("-")[:2] for p in exported] == [["devnet", f"{e:05d}"] for e in range(3)]
    for epoch, path in enumerate(exported):
        handle = Era1File(path)
        assert (handle.start, handle.count) == (epoch * 8192, 8192)
        assert path.name.endswith(f"-{handle.accumulator[:4].hex()}.era1")


def test_round_trip_blocks_equal_json_rpc_row_for_row(exported, over_rpc):
    blocks, _, _ = over_rpc
    frame = Era1Source(exported).blocks(0, STOP, progress=False)
    assert frame.attrs["source"] == "era1"
    pd.testing.assert_frame_equal(frame, blocks)


def test_round_trip_uncles_equal_json_rpc_row_for_row(exported, over_rpc):
    _, scan, _ = over_rpc
    uncles, per_block = Era1Source(exported).uncle_rows(0, STOP, progress=False)
    assert len(uncles) > 1000
    pd.testing.assert_frame_equal(uncles, scan.uncles)
    pd.testing.assert_frame_equal(per_block, scan.blocks)


def test_fee_history_equals_json_rpc_rewards_included(tmp_path, over_rpc):
    """Around the devnet's London (120,000): era1's rewards, computed by the reader from the
    exported bodies and receipts, are eth_feeHistory's, which the devnet computes from the
    same transactions (geth's gas-weighted percentiles of the effective tips)."""
    _, _, fees = over_rpc
    paths = export_era1(tmp_path, start_epoch=14, epochs=2, seed=SEED)
    frame = Era1Source(paths).fee_history(115_000, 125_000, progress=False)
    rewards = [c for c in fees.columns if c.startswith("reward_")]
    columns = ["block_number", "base_fee_wei", "base_fee_gwei", "gas_used_ratio", *rewards]
    assert "reward_p50_wei" in rewards
    pd.testing.assert_frame_equal(frame[columns], fees[columns].reset_index(drop=True))
    assert (frame.loc[frame["block_number"] >= 120_000, "base_fee_wei"] > 0).all()
    busy = frame["gas_used_ratio"] > 0
    assert (frame.loc[busy, "reward_p50_wei"] > 0).all()
    assert (frame.loc[~busy, "reward_p50_wei"] == 0).all() and (~busy).any()


def test_the_last_file_is_partial_at_the_merge(tmp_path):
    (path,) = export_era1(tmp_path, start_epoch=20, seed=SEED)
    handle = Era1File(path)
    assert (handle.start, handle.stop) == (20 * 8192, 165_000)
    assert handle.headers().columns["has_fee"].all()


# -- the CLI -------------------------------------------------------------------------------------


def feeslab_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "feeslab.cli", *args], capture_output=True,
                          text=True, timeout=300)  # fmt: skip


def test_cli_fetch_uncles_blocks_base_fees_from_era1(exported, tmp_path):
    pattern = str(exported[0].parent / "devnet-*.era1")
    out = tmp_path / "uncles.parquet"
    proc = feeslab_cli("fetch", "uncles", "--era1", pattern, "--start", "100", "--stop",
                       "9000", "-o", str(out), "--quiet")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    expected, _ = Era1Source(exported).uncle_rows(100, 9000, progress=False)
    assert pd.read_parquet(out)["hash"].tolist() == expected["hash"].tolist()
    out = tmp_path / "blocks.csv"
    proc = feeslab_cli("fetch", "blocks", "--era1", str(REAL), "--start", "0", "--stop", "50",
                       "-o", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "0 credits" in proc.stdout
    assert pd.read_csv(out)["hash"].iloc[0].startswith("0xd4e56740")


def test_cli_damaged_or_missing_file_exits_2_on_one_line_writes_nothing(tmp_path):
    data = bytearray(REAL.read_bytes())
    data[-70_000] ^= 0x01  # inside the last blocks' records
    damaged = tmp_path / REAL.name
    damaged.write_bytes(bytes(data))
    for args, words in [
        (["--era1", str(damaged), "--start", "0", "--stop", "10"], [REAL.name, "block"]),
        (["--era1", str(REAL), "--start", "8000", "--stop", "9000"], ["covers block 8,192"]),
        (["--era1", str(tmp_path / "none-*.era1"), "--start", "0", "--stop", "9"], ["no era1"]),
    ]:
        out = tmp_path / "out.parquet"
        proc = feeslab_cli("fetch", "uncles", *args, "-o", str(out), "--quiet")
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
        for word in words:
            assert word in lines[0], lines[0]
        assert not out.exists() and list(tmp_path.glob(".out.parquet*")) == []
    proc = feeslab_cli("fetch", "base-fees", "--era1", str(REAL), "-o", str(tmp_path / "f.csv"))
    assert proc.returncode == 2, proc.stderr  # the Gas API is no file: what the files offer
    assert "needs 'gas-api'" in proc.stderr and "offers 'blocks', 'fee_history', 'uncles'" in (
        proc.stderr)


def test_cli_export_era1(tmp_path, exported):
    proc = feeslab_cli("export-era1", "--out", str(tmp_path), "--epochs", "1", "--seed",
                       str(SEED))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (written,) = tmp_path.glob("*.era1")
    assert written.name == exported[0].name
    assert written.read_bytes() == exported[0].read_bytes()  # deterministic, byte for byte
    proc = feeslab_cli("export-era1", "--out", str(tmp_path), "--start-epoch", "21")
    assert proc.returncode == 2 and "start_epoch" in proc.stderr
    shutil.rmtree(tmp_path)


def test_exported_records_decode_with_plain_struct_cramjam_and_rlp(exported):
    """Another reader's view: e2store records by struct, framed snappy with its CRCs by
    cramjam, RLP by the rlp package; the layout era1 specifies."""
    import struct

    import cramjam
    import rlp
    from eth_hash.auto import keccak

    data = exported[1].read_bytes()
    kinds, pos, items = [], 0, []
    while pos < len(data):
        kind, length, reserved = struct.unpack_from("<2sIH", data, pos)
        assert reserved == 0
        kinds.append(kind)
        items.append(data[pos + 8 : pos + 8 + length])
        pos += 8 + length
    assert kinds == [b"e2", *[b"\x03\x00", b"\x04\x00", b"\x05\x00", b"\x06\x00"] * 8192,
                     b"\x07\x00", b"f2"]  # fmt: skip
    header = rlp.decode(bytes(cramjam.snappy.decompress(items[1])))
    assert int.from_bytes(header[8], "big") == 8192
    body = rlp.decode(bytes(cramjam.snappy.decompress(items[2])))
    assert keccak(rlp.encode(body[1])) == header[1]
    # block 8,192's transactions (legacy before London: 9-item lists) and their receipts in
    # geth's stored form, [status or root, cumulativeGasUsed, logs], ending at its gasUsed
    assert body[0] and all(isinstance(tx, list) and len(tx) == 9 for tx in body[0])
    receipts = rlp.decode(bytes(cramjam.snappy.decompress(items[3])))
    assert len(receipts) == len(body[0]) and all(len(r) == 3 for r in receipts)
    assert int.from_bytes(receipts[-1][1], "big") == int.from_bytes(header[10], "big")
    index = items[-1]
    assert struct.unpack_from("<Q", index, 0)[0] == 8192
    assert struct.unpack_from("<Q", index, len(index) - 8)[0] == 8192
    first = struct.unpack_from("<q", index, 8)[0]  # relative to the index record's start
    assert len(data) - (8 + len(index)) + first == 8


def test_no_file_stays_open_between_calls(exported):
    """The archive has 1,896 files, more than a process may hold open: none is kept."""
    import os

    before = len(os.listdir("/proc/self/fd"))
    source = Era1Source(exported)
    source.uncle_rows(0, 3 * 8192, progress=False)
    source.blocks(8000, 8400, progress=False)
    assert len(os.listdir("/proc/self/fd")) == before

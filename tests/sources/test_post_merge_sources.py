"""Post-merge history from files: one frame across the devnet's merge from era1 + Ere files equals
the devnet's JSON-RPC answers (blocks, fee history with tips); Era files refuse tip percentiles
with a typed error and give the real blocks' header fields; the composite source names the
blocks each source gave; connect() and the CLI take the new files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import feeslab
from feeslab.devnet.era1 import export_era1
from feeslab.devnet.ere import export_ere
from feeslab.errors import ConfigError, FeeslabError
from feeslab.frames.io import frame_from_bytes
from feeslab.sources.archive import NoReceipts
from feeslab.sources.base import SourceMismatch
from feeslab.sources.combined import CombinedSource, file_source
from feeslab.sources.era import EraFile, EraSource, era_bytes
from feeslab.sources.era1 import Era1Source
from feeslab.sources.ere import EreError, EreSource

SEED = 7  # the session devnet's (tests/conftest.py)
MERGE = 165_000
A, B = 163_000, 167_000  # across the merge
DATA = Path(__file__).parent.parent / "data" / "beacon_blocks"


@pytest.fixture(scope="module")
def era1_dir(tmp_path_factory) -> Path:
    """Epochs 19 and 20 of chain 1 as era1 files: blocks 155,648 .. 164,999."""
    out = tmp_path_factory.mktemp("era1")
    export_era1(out, start_epoch=19, epochs=2, seed=SEED)
    return out


@pytest.fixture(scope="module")
def ere_dir(tmp_path_factory) -> Path:
    """Epochs 19 and 20 as Ere files: blocks 155,648 .. 172,031 (across the merge)."""
    out = tmp_path_factory.mktemp("ere")
    export_ere(out, start_epoch=19, epochs=2, seed=SEED)
    return out


@pytest.fixture(scope="module")
def over_rpc(devnet):
    with feeslab.connect(url=devnet.url, api_key=devnet.api_key,
                         api_key_secret=devnet.api_key_secret, cache=False,
                         progress=False) as lab:  # fmt: skip
        return (lab.blocks(A, B), lab.fee_history(A, B, percentiles=(10, 50, 90)),
                lab.fee_history(A, B, percentiles=()))  # fmt: skip


def test_one_call_across_the_merge_from_era1_and_ere_equals_the_devnet(era1_dir, ere_dir,
                                                                         over_rpc):  # fmt: skip
    blocks, _, _ = over_rpc
    with feeslab.connect(era1=era1_dir, ere=ere_dir, progress=False) as lab:
        frame = lab.blocks(A, B)
    assert frame.attrs["sources"] == {"era1": [A, MERGE - 1], "ere": [MERGE, B - 1]}
    assert frame.attrs["chain_id"] == blocks.attrs["chain_id"] == 1
    assert frame.attrs["chain_spec"] == blocks.attrs["chain_spec"]
    assert frame.attrs["source"] == "era1+ere" and blocks.attrs["source"] == "devnet"
    pd.testing.assert_frame_equal(frame, blocks, check_flags=True)
    assert (frame.loc[frame["block_number"] >= MERGE, "difficulty"] == 0).all()
    assert (frame["transaction_count"] > 0).any() and (frame["uncle_count"] > 0).any()


def test_fee_history_across_the_merge_with_tips_equals_the_devnet(era1_dir, ere_dir, over_rpc):
    _, fees, plain = over_rpc
    with feeslab.connect(era1=era1_dir, ere=ere_dir, progress=False) as lab:
        frame = lab.fee_history(A, B, percentiles=(10, 50, 90))
        without = lab.fee_history(A, B, percentiles=())
    assert frame.attrs["sources"] == {"era1": [A, MERGE - 1], "ere": [MERGE, B - 1]}
    pd.testing.assert_frame_equal(frame, fees.reset_index(drop=True))
    pd.testing.assert_frame_equal(without, plain.reset_index(drop=True))
    after = frame[frame["block_number"] >= MERGE]
    assert (after["reward_p50_wei"] > 0).any()


def test_transactions_from_ere_files_equal_the_devnets(era1_dir, ere_dir, devnet):
    """Each transaction decoded from the bodies, its gas used from the slim receipts: the
    devnet's eth_getBlockByNumber(n, true) and eth_getBlockReceipts, row for row."""
    with feeslab.connect(url=devnet.url, api_key=devnet.api_key,
                         api_key_secret=devnet.api_key_secret, cache=False,
                         progress=False) as node:  # fmt: skip
        expected = node.transactions(164_900, 165_100)
    with feeslab.connect(era1=era1_dir, ere=ere_dir, progress=False) as lab:
        frame = lab.transactions(164_900, 165_100)
    assert len(frame) > 1000 and set(frame["type"]) == {0, 2}
    pd.testing.assert_frame_equal(frame, expected)
    # era1 files hold no transactions dataset: every row is the Ere files', tagged by them
    assert frame.attrs["source"] == "ere" and frame.attrs["chain_id"] == 1


def test_ere_files_alone_read_both_sides_of_the_merge(ere_dir, over_rpc):
    blocks, fees, _ = over_rpc
    source = EreSource(ere_dir)
    frame = source.blocks(A, B)
    assert frame.attrs["source"] == "ere" and frame.attrs["network"] == "devnet"
    pd.testing.assert_frame_equal(frame, blocks)
    pd.testing.assert_frame_equal(source.fee_history(A, B), fees.reset_index(drop=True))
    # every file's end links noted as the read reached them
    (first, second) = sorted(source.ends)
    assert set(source.ends[first]) == {"last_hash"}
    assert set(source.ends[second]) == {"first_parent"}
    assert source.ends[second]["first_parent"] == source.ends[first]["last_hash"]


def test_a_block_no_file_holds_is_named(era1_dir, ere_dir):
    with feeslab.connect(era1=era1_dir, ere=ere_dir, progress=False) as lab, pytest.raises(
            SourceMismatch, match=r"blocks 172,032 \.\. 172,999 of blocks are in no era1 or "
            r"ere file, and no node"):  # fmt: skip
        lab.blocks(170_000, 173_000)
    with pytest.raises(EreError, match="no ere file holds block 172,032"):
        EreSource(ere_dir).blocks(172_000, 172_100)
    with pytest.raises(EreError, match="no ere file in"):
        EreSource(era1_dir)


# -- Era files: the beacon chain's, without receipts --------------------------------------------


def _era(tmp_path: Path, names: list[str]) -> Path:
    """Real mainnet beacon blocks (tests/data/beacon_blocks) in one Era file of their era."""
    messages = [(DATA / name).read_bytes() for name in names]
    slots = [int.from_bytes(m[:8], "little") for m in messages]
    era = slots[0] // 8192 + 1
    assert all(s // 8192 + 1 == era for s in slots)
    state = bytes(40) + (era * 8192).to_bytes(8, "little")
    path = tmp_path / f"mainnet-{era:05d}-00000000.era"
    path.write_bytes(era_bytes(era * 8192, {s: (100).to_bytes(4, "little") + bytes(96) + m
                                            for s, m in zip(slots, messages, strict=True)},
                               state))  # fmt: skip
    return path


@pytest.fixture
def era_file(tmp_path) -> Path:
    return _era(tmp_path, ["19426587-block.ssz"])


def test_era_fee_history_with_percentiles_raises_no_receipts(era_file):
    source = EraSource(era_file)
    with pytest.raises(NoReceipts, match="no receipts") as caught:
        source.fee_history(19_426_587, 19_426_588, percentiles=(50,))
    assert isinstance(caught.value, SourceMismatch) and isinstance(caught.value, FeeslabError)
    with feeslab.connect(era=era_file, progress=False) as lab, pytest.raises(NoReceipts):
        lab.fee_history(19_426_587, 19_426_588, percentiles=(10, 90))


def test_era_blocks_and_fee_history_without_tips_are_the_payloads(era_file, tmp_path):
    (payload,) = EraFile(era_file).payloads()
    with feeslab.connect(era=era_file, progress=False) as lab:
        blocks = lab.blocks(19_426_587, 19_426_588)
        fees = lab.fee_history(19_426_587, 19_426_588, percentiles=())
    (row,) = blocks.itertuples()
    assert row.hash == "0x" + payload.block_hash.hex()
    assert row.gas_used == payload.gas_used and row.base_fee_wei == payload.base_fee_per_gas
    assert row.transaction_count == 37 and row.uncle_count == 0 and row.difficulty == 0
    assert pd.isna(row.total_difficulty)  # Era files hold none
    assert blocks.attrs["source"] == "era" and blocks.attrs["chain_id"] == 1
    # the block's real size: its header, body and withdrawals as the Ere file of the same
    # block holds them (tests/sources/test_ere_reader.py's real block)
    from tests.sources.test_ere_reader import real_block

    header, body, _ = real_block()
    from feeslab.protocol.e2store import rlp_item, rlp_list_size

    _, p, e = rlp_item(body, 0, len(body))
    assert row.size_bytes == rlp_list_size(len(header) + e - p)
    (fee,) = fees.itertuples()
    assert fee.base_fee_wei == payload.base_fee_per_gas
    assert fee.gas_used_ratio == payload.gas_used / payload.gas_limit
    # Cancun's first block: excess blob gas 0, the minimum blob base fee of 1 wei
    assert payload.excess_blob_gas == 0 and fee.base_fee_per_blob_gas_wei == 1


def test_archive_options_conflict_and_name_files_as_era1_does(era1_dir, tmp_path):
    with pytest.raises(ConfigError, match="seed=3"):
        feeslab.connect(ere=tmp_path, seed=3)
    with pytest.raises(FeeslabError, match="no era file in"):
        feeslab.connect(era=tmp_path)
    assert isinstance(file_source(next(era1_dir.glob("*.era1"))), Era1Source)
    with pytest.raises(SourceMismatch, match="not an archive file"):
        file_source(tmp_path / "x.parquet")


def test_files_of_two_chains_are_refused(era1_dir, era_file):
    source = CombinedSource([Era1Source(era1_dir), EraSource(era_file)])
    with pytest.raises(ConfigError, match="cannot join"):
        source.split("blocks", (A, B))


def test_the_cli_fetches_across_the_merge_from_era1_and_ere(era1_dir, ere_dir, tmp_path, over_rpc):
    blocks, _, _ = over_rpc
    out = tmp_path / "blocks.parquet"
    proc = subprocess.run([sys.executable, "-m", "feeslab.cli", "fetch", "blocks", "--era1",
                           str(era1_dir), "--ere", str(ere_dir), "--start", str(A), "--stop",
                           str(B), "--quiet", "-o", str(out)], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    pd.testing.assert_frame_equal(frame_from_bytes(out.read_bytes()), blocks)
    proc = subprocess.run([sys.executable, "-m", "feeslab.cli", "fetch", "blocks", "--ere",
                           str(ere_dir), "--url", "http://127.0.0.1:9", "--api-key", "k",
                           "--start", "1", "--stop", "2", "-o", str(out)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 2 and "--ere reads files" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_era_transactions_are_the_ere_files_but_for_the_gas_used(era_file, tmp_path):
    """The same real block (mainnet 19,426,587) from its beacon block and from an Ere file with
    its receipts: every column equal but gas_used, which the Era files cannot know."""
    from feeslab.sources.ere import ere_bytes
    from tests.sources.test_ere_reader import real_block

    header, body, receipts = real_block()
    content, last, _ = ere_bytes(19426587, [(header, body, receipts, None)])
    ere = tmp_path / f"mainnet-02371-{last[:4].hex()}-noproofs.ere"
    ere.write_bytes(content)
    full = EreSource(ere).transactions(19_426_587, 19_426_588)
    frame = EraSource(era_file).transactions(19_426_587, 19_426_588)
    assert len(frame) == 37 and frame.attrs["unknown"] == ["gas_used"]
    assert frame["gas_used"].isna().all() and (full["gas_used"] > 0).all()
    same = [c for c in full.columns if c != "gas_used"]
    pd.testing.assert_frame_equal(frame[same], full[same])
    assert (frame["effective_tip_wei"] >= 0).all()

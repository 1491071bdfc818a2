"""The Ere reader: a real mainnet block (header, body, slim receipts), the devnet's Ere export
read back against its JSON-RPC answers over two whole epochs (one across its merge), and
damaged files of each kind."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import rlp

from feeslab.devnet.era1 import epoch_bytes as era1_epoch
from feeslab.devnet.ere import export_ere
from feeslab.errors import FeeslabError
from feeslab.protocol.e2store import keccak, rlp_children, rlp_item
from feeslab.sources.era import EraFile, era_bytes
from feeslab.sources.ere import EreError, EreFile, ere_bytes, iter_blocks, slim_receipts_rlp

DATA = Path(__file__).parent.parent / "data" / "beacon_blocks"
SEED = 7  # the session devnet's (tests/conftest.py)
MERGE = 165_000


def real_block() -> tuple[bytes, bytes, bytes]:
    """Mainnet block 19,426,587 (Cancun's first): header, body and receipts RLP, the receipts
    in the slim form ``[type, status, cumulative gas, logs]`` (portal-spec-tests' encoding)."""
    text = (DATA / "block-data-19426587.yaml").read_text()
    fields = dict(re.findall(r"^(\w+): 0x([0-9a-f]+)$", text, re.M))
    return tuple(bytes.fromhex(fields[k]) for k in ("header", "body", "receipts"))  # type: ignore[return-value]


@pytest.fixture
def real(tmp_path) -> Path:
    header, body, receipts = real_block()
    content, last, root = ere_bytes(19426587, [(header, body, receipts, None)])
    assert root is None  # no total difficulty: no accumulator
    path = tmp_path / f"mainnet-02371-{last[:4].hex()}-noproofs.ere"
    path.write_bytes(content)
    return path


def test_a_real_block_reads_with_every_root_checked(real):
    header, body, receipts = real_block()
    (block,) = iter_blocks(real)
    assert block.number == 19426587 and block.hash == keccak(header)
    assert block.header_rlp == header
    decoded = rlp.decode(body)
    assert len(block.transactions) == len(decoded[0]) == 37
    assert block.withdrawals is not None and len(block.withdrawals) == 16
    assert block.receipts is not None and len(block.receipts) == 37
    assert slim_receipts_rlp(block.receipts) == receipts  # decoded and encoded, byte for byte
    cumulative = [r.cumulative_gas_used for r in block.receipts]
    assert cumulative == sorted(cumulative) and cumulative[-1] == block.header.gas_used
    assert block.header.blob_gas_used == 0 and block.header.parent_beacon_block_root is not None
    with EreFile(real) as handle:
        assert handle.components == ("CompressedHeader", "CompressedBody",
                                     "CompressedSlimReceipts")  # fmt: skip
        assert handle.total_difficulty(19426587) is None and handle.accumulator is None


def test_the_real_block_is_the_same_from_its_beacon_block_in_an_era_file(real, tmp_path):
    message = (DATA / "19426587-block.ssz").read_bytes()
    slot = int.from_bytes(message[:8], "little")
    era = tmp_path / "mainnet-01054-00000000.era"
    state = bytes(40) + (1054 * 8192).to_bytes(8, "little")
    era.write_bytes(era_bytes(1054 * 8192, {slot: (100).to_bytes(4, "little") + bytes(96)
                                             + message}, state))  # fmt: skip
    (payload,) = EraFile(era).payloads()
    (block,) = iter_blocks(real)
    assert payload.transactions == block.transactions
    assert [(w.index, w.validator_index, w.address, w.amount_gwei)
            for w in payload.withdrawals] == list(block.withdrawals)  # fmt: skip
    assert payload.block_hash == block.hash


# -- the devnet's export, over two whole epochs ----------------------------------------------------


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> list[Path]:
    """Epochs 19 (blocks 155,648 .. 163,839, before the merge) and 20 (163,840 .. 172,031,
    across the merge at 165,000 and Shanghai at 170,000)."""
    return export_ere(tmp_path_factory.mktemp("ere"), start_epoch=19, epochs=2, seed=SEED)


def _hex(value: bytes) -> str:
    return "0x" + value.hex()


@pytest.mark.slow
def test_the_export_read_back_equals_json_rpc_for_every_block(exported, devnet_batch):
    for path in exported:
        blocks = list(iter_blocks(path))
        assert len(blocks) == 8192
        numbers = [b.number for b in blocks]
        answers = []
        for lo in range(0, 8192, 1000):
            answers += devnet_batch([("eth_getBlockByNumber", [hex(n), False])
                                     for n in numbers[lo : lo + 1000]])  # fmt: skip
        receipts = []
        for lo in range(0, 8192, 1000):
            receipts += devnet_batch([("eth_getBlockReceipts", [hex(n)])
                                      for n in numbers[lo : lo + 1000]])  # fmt: skip
        for block, answer, rpc_receipts in zip(blocks, answers, receipts, strict=True):
            h = block.header
            assert answer["hash"] == _hex(block.hash)
            assert answer["parentHash"] == _hex(h.parent_hash)
            assert answer["miner"] == _hex(h.miner)
            assert answer["stateRoot"] == _hex(h.state_root)
            assert answer["transactionsRoot"] == _hex(h.transactions_root)
            assert answer["receiptsRoot"] == _hex(h.receipts_root)
            assert answer["logsBloom"] == _hex(h.logs_bloom)
            assert int(answer["difficulty"], 16) == h.difficulty
            assert int(answer["gasLimit"], 16) == h.gas_limit
            assert int(answer["gasUsed"], 16) == h.gas_used
            assert int(answer["timestamp"], 16) == h.timestamp
            assert answer["extraData"] == _hex(h.extra_data)
            assert answer["mixHash"] == _hex(h.mix_hash)
            assert int(answer["baseFeePerGas"], 16) == h.base_fee_per_gas
            assert answer.get("withdrawalsRoot") == (
                None if h.withdrawals_root is None else _hex(h.withdrawals_root))
            assert int(answer["totalDifficulty"], 16) == block.total_difficulty
            assert answer["transactions"] == [_hex(keccak(tx)) for tx in block.transactions]
            assert answer["uncles"] == [_hex(keccak(u)) for u in block.uncles]
            withdrawals = [(int(w["index"], 16), int(w["validatorIndex"], 16),
                            bytes.fromhex(w["address"][2:]), int(w["amount"], 16))
                           for w in answer.get("withdrawals", [])]  # fmt: skip
            assert withdrawals == list(block.withdrawals or ())
            assert ("withdrawals" in answer) == (block.withdrawals is not None)
            assert block.receipts is not None
            assert [(int(r["type"], 16), int(r["status"], 16), int(r["cumulativeGasUsed"], 16),
                     len(r["logs"])) for r in rpc_receipts] == [
                (r.tx_type, r.status, r.cumulative_gas_used, len(r.logs))
                for r in block.receipts]  # fmt: skip
    merged = [b for b in iter_blocks(exported[1]) if b.number >= MERGE]
    assert merged and all(b.header.difficulty == 0 for b in merged)
    assert any(b.withdrawals for b in merged)


@pytest.mark.slow
def test_the_accumulator_roots_equal_the_era1_exports(exported):
    for epoch, path in zip((19, 20), exported, strict=True):
        _, era1_root = era1_epoch(epoch, seed=SEED)
        with EreFile(path) as handle:
            handle.scan()  # checks the root against the headers and total difficulties
            assert handle.accumulator == era1_root
            assert handle.components[3] == "TotalDifficulty"
    with EreFile(exported[1]) as handle:  # after the merge, the final total difficulty
        assert handle.total_difficulty(171_000) == handle.total_difficulty(MERGE - 1)
        assert handle.total_difficulty(MERGE - 1) > handle.total_difficulty(MERGE - 2)


def test_cli_export_era_ere_writes_the_same_file(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "feeslab.cli", "export-era", "--format", "ere",
                           "--out", str(tmp_path / "cli"), "--epochs", "1", "--seed", str(SEED)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (written,) = (tmp_path / "cli").glob("*.ere")
    (expected,) = export_ere(tmp_path / "api", epochs=1, seed=SEED)
    assert written.name == expected.name and written.name.endswith("-noproofs.ere")
    assert written.read_bytes() == expected.read_bytes()  # deterministic, byte for byte
    with EreFile(written) as handle:
        assert (handle.start, handle.count) == (0, 8192)
        assert handle.scan().hashes[-1][:4].hex() in written.name
    proc = subprocess.run([sys.executable, "-m", "feeslab.cli", "export-era", "--format", "ere",
                           "--out", str(tmp_path), "--start-epoch", "99"], capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 2 and "start_epoch" in proc.stderr and "Traceback" not in proc.stderr


# -- damaged files ------------------------------------------------------------------------------


def expect(path: Path, *words: str) -> EreError:
    with pytest.raises(EreError) as caught, EreFile(path) as handle:
        list(handle.blocks())
    error = caught.value
    assert isinstance(error, FeeslabError) and error.path == str(path)
    assert path.name in str(error)
    for word in words:
        assert word in str(error), str(error)
    return error


def rewrite(path: Path, change) -> Path:
    data = bytearray(path.read_bytes())
    change(data)
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("cut", [1, 8, 30, 2000, 20_000])
def test_a_truncated_file(real, cut):
    rewrite(real, lambda d: d.__delitem__(slice(len(d) - cut, None)))
    expect(real)


def test_a_record_of_the_wrong_type(real):
    error = expect(rewrite(real, lambda d: d.__setitem__(slice(8, 10), b"\x04\x00")),
                   "wrong type")  # fmt: skip
    assert error.record == "CompressedHeader"


def test_a_record_of_the_wrong_length(real):
    error = expect(rewrite(real, lambda d: d.__setitem__(slice(10, 14), (10**7).to_bytes(
        4, "little"))), "wrong length")  # fmt: skip
    assert error.record == "CompressedHeader" and error.block == 19426587


def test_a_bad_snappy_frame(real):
    error = expect(rewrite(real, lambda d: d.__setitem__(26, 0x02)), "does not decompress")
    assert error.record == "CompressedHeader" and error.block == 19426587


def test_a_body_or_receipts_whose_hash_does_not_match(tmp_path):
    header, body, receipts = real_block()
    assert receipts[6:10] == bytes.fromhex("80018305")  # [type 0, status 1, gas 0x05099b,
    first_tx_end = rlp_children(body, *rlp_item(body, 3, len(body))[1:])[0][2]

    def flip(data: bytes, at: int) -> bytes:  # a byte of a value, not of an RLP prefix
        return data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :]

    for i, (b, r, words) in enumerate([
        (flip(body, len(body) - 1), receipts, "withdrawalsRoot"),  # the last amount
        (flip(body, first_tx_end - 1), receipts, "transactionsRoot"),  # the first's signature
        (body, flip(receipts, 10), "receiptsRoot"),  # the first one's cumulative gas
    ]):  # fmt: skip
        path = tmp_path / f"mainnet-{i}.ere"
        path.write_bytes(ere_bytes(19426587, [(header, b, r, None)])[0])
        error = expect(path, words, "block 19,426,587")
        assert error.record in ("CompressedBody", "CompressedSlimReceipts")


def test_a_damaged_header_breaks_the_next_blocks_parent_link(exported, tmp_path):
    with EreFile(exported[0]) as handle:
        start = handle.start
        receipts = [slim_receipts_rlp(handle.block(n).receipts) for n in range(start, start + 3)]
        blocks = [(handle.header_rlp(n), handle.body_rlp(n), receipts[n - start],
                   handle.total_difficulty(n)) for n in range(start, start + 3)]  # fmt: skip
    fields = rlp.decode(blocks[1][0])
    fields[12] = b"damaged"  # extraData
    blocks[1] = (rlp.encode(fields), *blocks[1][1:])
    path = tmp_path / "devnet-00019-00000000.ere"
    path.write_bytes(ere_bytes(start, blocks)[0])
    error = expect(path, "parentHash", f"block {start + 2:,}")
    assert error.record == "CompressedHeader"


def test_a_file_with_the_real_proof_reads_it_back(tmp_path):
    """Block 19,426,587's real proof (portal-spec-tests' ``BlockHeaderWithProof``: a
    ``BlockProofHistoricalSummariesDeneb``, Ere's proof type 3) in a Proof record: the index's
    fourth column is told apart by its records' type; the proof is read, not verified."""
    text = (DATA / "19426587-header-with-proof.yaml").read_text()
    value = bytes.fromhex(re.search(r'^content_value: "0x([0-9a-f]+)"$', text, re.M)[1])
    start, stop = (int.from_bytes(value[i : i + 4], "little") for i in (0, 4))
    header, body, receipts = real_block()
    assert value[start:stop] == header  # the same real header in both sources
    proof = value[stop:]
    path = tmp_path / "mainnet-02371-00000000.ere"
    content, last, _ = ere_bytes(19426587, [(header, body, receipts, None)], proofs=[(3, proof)])
    path.write_bytes(content)
    path = path.rename(tmp_path / f"mainnet-02371-{last[:4].hex()}.ere")
    with EreFile(path) as handle:
        assert handle.components == ("CompressedHeader", "CompressedBody",
                                     "CompressedSlimReceipts", "Proof")  # fmt: skip
        kind, ssz = handle.proof(19426587)
        assert (kind, ssz) == (3, proof)
        # the proof's last field is the beacon slot of the block: Deneb's first, 8,626,176
        assert int.from_bytes(ssz[-8:], "little") == 8_626_176
        (block,) = handle.blocks()
        assert block.hash == keccak(header)


def test_a_length_one_byte_too_long_runs_into_the_next_record(real):
    data = real.read_bytes()
    length = int.from_bytes(data[10:14], "little")
    error = expect(rewrite(real, lambda d: d.__setitem__(slice(10, 14), (length + 1).to_bytes(
        4, "little"))), "into the next record: wrong length")  # fmt: skip
    assert error.record == "CompressedHeader" and error.block == 19426587

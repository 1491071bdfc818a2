"""The Era reader on real mainnet beacon blocks (Bellatrix to Deneb), and on damaged files.

Each real block (tests/data/beacon_blocks/, portal-spec-tests) is an unsigned ``BeaconBlock``;
an Era file stores ``SignedBeaconBlock``: the test wraps each with a zero signature (the reader
checks no signature) and writes it into an Era group of its era, with a state record holding
the state's first 48 bytes (mainnet's genesis time and genesis validators root, then the slot:
all the reader reads of a state, whose real size is hundreds of MB).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import rlp
from trie.hexary import HexaryTrie

from feeslab.errors import FeeslabError
from feeslab.protocol.e2store import keccak, ordered_trie_root
from feeslab.sources.era import (
    MAINNET_FORKS,
    EraError,
    EraFile,
    era_bytes,
    fork_at,
    iter_payloads,
)

DATA = Path(__file__).parent.parent / "data" / "beacon_blocks"
BLOCKS = sorted(DATA.glob("*-block.ssz"))
GENESIS_TIME = 1606824023
GENESIS_VALIDATORS_ROOT = bytes.fromhex(
    "4b363db94e286120d76eb905340fdd4e54bfe9f06bf33ff6cf5ad27f511bfe95")  # fmt: skip
FORK_OF = {15537394: "bellatrix", 15539558: "bellatrix", 15547621: "bellatrix",
           17034870: "capella", 17042287: "capella", 17062257: "capella", 19426586: "capella",
           19426587: "deneb", 22162263: "deneb"}  # fmt: skip


def signed(message: bytes) -> bytes:
    """``SignedBeaconBlock(message, signature)``: the message's offset (100), a zero
    signature, the message."""
    return (100).to_bytes(4, "little") + bytes(96) + message


def state(slot: int) -> bytes:
    return GENESIS_TIME.to_bytes(8, "little") + GENESIS_VALIDATORS_ROOT + slot.to_bytes(8, "little")


def slot_of(message: bytes) -> int:
    return int.from_bytes(message[:8], "little")


def era_file(directory: Path, messages: list[bytes], name: str | None = None) -> Path:
    """One Era group per era the ``messages`` fall in, concatenated (a multi-era file)."""
    eras: dict[int, dict[int, bytes]] = {}
    for message in messages:
        slot = slot_of(message)
        eras.setdefault(slot // 8192 + 1, {})[slot] = signed(message)
    content = b"".join(era_bytes(era * 8192, blocks, state(era * 8192))
                       for era, blocks in sorted(eras.items()))  # fmt: skip
    path = directory / (name or f"mainnet-{min(eras):05d}-00000000.era")
    path.write_bytes(content)
    return path


def real_header(number: int) -> bytes:
    """The real RLP header of block ``number``: the ``header`` of the SSZ
    ``BlockHeaderWithProof`` (portal-spec-tests ``headers_with_proof/<N>.yaml``)."""
    text = (DATA / f"{number}-header-with-proof.yaml").read_text()
    value = bytes.fromhex(re.search(r'^content_value: "0x([0-9a-f]+)"$', text, re.M)[1])
    start, stop = (int.from_bytes(value[i : i + 4], "little") for i in (0, 4))
    return value[start:stop]


def test_the_real_blocks_are_those_the_sources_name():
    assert [int(p.name.split("-")[0]) for p in BLOCKS] == sorted(FORK_OF)


@pytest.mark.parametrize("path", BLOCKS, ids=lambda p: p.name.split("-")[0])
def test_every_real_block_yields_its_payload_whose_rebuilt_header_hashes_to_block_hash(
        path, tmp_path):  # fmt: skip
    number = int(path.name.split("-")[0])
    message = path.read_bytes()
    file = era_file(tmp_path, [message])
    with EraFile(file) as handle:
        (payload,) = list(handle.payloads())
        assert handle.counts == {"blocks": 1, "payloads": 1, "pre_merge": 0,
                                 "empty_slots": 8191}  # fmt: skip
        assert handle.state_slot() == (slot_of(message) // 8192 + 1) * 8192
    assert payload.block_number == number
    assert payload.fork == FORK_OF[number]
    assert payload.slot == slot_of(message)
    assert keccak(payload.header_rlp()) == payload.block_hash
    # the transactions root, again with the trie package (HexaryTrie): the reference
    tree = HexaryTrie(db={})
    for i, tx in enumerate(payload.transactions):
        tree[rlp.encode(i)] = tx
    assert tree.root_hash == ordered_trie_root(payload.transactions)
    assert rlp.decode(payload.header_rlp())[4] == tree.root_hash
    assert (payload.withdrawals is None) == (number < 17_034_870)  # Shanghai's first block
    assert (payload.blob_count is None) == (number < 19_426_587)  # Cancun's first block


def test_the_merge_block_is_the_first_payload():
    """Block 15,537,394, the first proof-of-stake block: its parent is the last era1 block."""
    header = rlp.decode(real_header(15537394))
    assert int.from_bytes(header[8], "big") == 15537394
    assert int.from_bytes(header[7], "big") == 0  # difficulty: proof of stake


@pytest.mark.parametrize("number", sorted(FORK_OF))
def test_the_payload_equals_the_real_rlp_header_of_the_same_block(number, tmp_path):
    header = real_header(number)
    (payload,) = iter_payloads(era_file(tmp_path, [(DATA / f"{number}-block.ssz").read_bytes()]))
    fields = rlp.decode(header)
    assert keccak(header) == payload.block_hash
    assert payload.header_rlp() == header  # field for field, byte for byte
    assert fields[0] == payload.parent_hash
    assert fields[2] == payload.fee_recipient
    assert fields[3] == payload.state_root
    assert fields[5] == payload.receipts_root
    assert fields[6] == payload.logs_bloom
    assert int.from_bytes(fields[8], "big") == payload.block_number == number
    assert int.from_bytes(fields[9], "big") == payload.gas_limit
    assert int.from_bytes(fields[10], "big") == payload.gas_used
    assert int.from_bytes(fields[11], "big") == payload.timestamp
    assert fields[12] == payload.extra_data
    assert fields[13] == payload.prev_randao
    assert int.from_bytes(fields[15], "big") == payload.base_fee_per_gas
    assert len(fields) == {"bellatrix": 16, "capella": 17, "deneb": 20}[payload.fork]
    if payload.fork == "deneb":
        assert int.from_bytes(fields[17], "big") == payload.blob_gas_used
        assert int.from_bytes(fields[18], "big") == payload.excess_blob_gas
        assert fields[19] == payload.parent_root  # EIP-4788: the beacon block's parent root


def test_a_file_of_two_eras_reads_in_slot_order_with_index_lookups(tmp_path):
    """Capella's last block (slot 8,626,175) and Deneb's first (8,626,176) lie in two eras:
    one file of two groups, read back to back; a slot looked up by its index."""
    messages = [(DATA / f"{n}-block.ssz").read_bytes() for n in (19426587, 19426586)]
    path = era_file(tmp_path, messages)
    with EraFile(path) as handle:
        assert [g.start_slot for g in handle.groups] == [1052 * 8192, 1053 * 8192]
        assert list(handle.slots()) == [8626175, 8626176]
        payloads = list(handle.payloads())
        assert [p.block_number for p in payloads] == [19426586, 19426587]
        assert payloads[1].parent_hash == payloads[0].block_hash
        assert handle.payload(8626176).block_number == 19426587
        assert handle.payload(8626177) is None  # an empty slot
        with pytest.raises(KeyError):
            handle.payload(5)


def test_pre_merge_slots_are_skipped_and_counted(tmp_path):
    """A block of an Altair slot carries no payload: skipped, counted. (The real Bellatrix
    block with its slot set to Altair's last one: the reader reads no further than the
    slot of a block before Bellatrix.)"""
    altair_last = dict(MAINNET_FORKS)["bellatrix"] - 1
    assert fork_at(altair_last) == "altair"
    real = (DATA / "15539558-block.ssz").read_bytes()
    moved = altair_last.to_bytes(8, "little") + real[8:]
    path = era_file(tmp_path, [moved])
    with EraFile(path) as handle:
        assert list(handle.payloads()) == []
        assert handle.counts["pre_merge"] == 1 and handle.counts["blocks"] == 1


def test_gloas_slots_are_refused_not_guessed(tmp_path):
    message = (DATA / "22162263-block.ssz").read_bytes()
    forks = (*MAINNET_FORKS, ("gloas", slot_of(message)))
    with pytest.raises(EraError, match="Gloas"):
        list(iter_payloads(era_file(tmp_path, [message]), forks))


# -- damaged files ------------------------------------------------------------------------------


@pytest.fixture
def good(tmp_path) -> Path:
    return era_file(tmp_path, [(DATA / "17042287-block.ssz").read_bytes()])


def damaged(path: Path, change) -> Path:
    data = bytearray(path.read_bytes())
    change(data)
    path.write_bytes(bytes(data))
    return path


def read_all(path: Path) -> None:
    with EraFile(path) as handle:
        list(handle.payloads())
        handle.state_slot()


def expect(path: Path, *words: str) -> EraError:
    with pytest.raises(EraError) as caught:
        read_all(path)
    error = caught.value
    assert isinstance(error, FeeslabError)
    assert path.name in str(error) and error.path == str(path)
    for word in words:
        assert word in str(error), str(error)
    return error


@pytest.mark.parametrize("cut", [1, 8, 100, 5000, 40_000])
def test_a_truncated_file_is_named_never_read(good, cut):
    damaged(good, lambda d: d.__delitem__(slice(len(d) - cut, None)))
    error = expect(good)
    assert error.record in ("SlotIndex", "CompressedSignedBeaconBlock", "CompressedBeaconState")


def test_a_record_of_the_wrong_type(good):
    error = expect(damaged(good, lambda d: d.__setitem__(slice(8, 10), b"\x02\x00")),
                   "wrong type", "slot 6,217,730")  # fmt: skip
    assert error.record == "CompressedSignedBeaconBlock" and error.slot == 6217730


def test_a_record_of_the_wrong_length(good):
    error = expect(damaged(good, lambda d: d.__setitem__(slice(10, 14), (10**7).to_bytes(
        4, "little"))), "wrong length")  # fmt: skip
    assert error.record == "CompressedSignedBeaconBlock"


def test_a_bad_snappy_frame(good):
    # the first chunk's type byte (after the 8-byte Version, 8-byte record header and the
    # 10-byte stream identifier) made a reserved unskippable chunk type
    error = expect(damaged(good, lambda d: d.__setitem__(26, 0x02)), "does not decompress")
    assert error.record == "CompressedSignedBeaconBlock" and error.slot == 6217730


def test_a_payload_whose_hash_does_not_match(tmp_path):
    message = bytearray((DATA / "17042287-block.ssz").read_bytes())
    message[-3000] ^= 0x01  # inside its transactions
    error = expect(era_file(tmp_path, [bytes(message)]), "payload hash mismatch",
                   "execution block 17,042,287")  # fmt: skip
    assert error.slot == 6217730


def test_a_block_in_the_wrong_slot(tmp_path):
    real = (DATA / "17042287-block.ssz").read_bytes()
    path = era_file(tmp_path, [real])
    data = bytearray(path.read_bytes())
    # the same block recorded one slot later in the block index (before the 32-byte state index)
    entry = len(data) - 32 - (24 + 8 * 8192) + 16 + 8 * (slot_of(real) % 8192)
    offset = bytes(data[entry : entry + 8])
    data[entry : entry + 8], data[entry + 8 : entry + 16] = bytes(8), offset
    path.write_bytes(bytes(data))
    expect(path, "holds a block of slot 6,217,730", "slot 6,217,731")


def test_a_missing_file_and_a_file_of_another_kind(tmp_path):
    with pytest.raises(EraError, match="cannot read"):
        EraFile(tmp_path / "none.era")
    other = tmp_path / "mainnet-00000-5ec1ffb8.era1"
    other.write_bytes((Path(__file__).parent.parent / "data" / "era1" /
                       "mainnet-00000-5ec1ffb8.era1").read_bytes()[:200_000])  # fmt: skip
    with pytest.raises(EraError, match="SlotIndex"):
        EraFile(other)


def test_a_length_one_byte_too_long_runs_into_the_state(good):
    length = int.from_bytes(good.read_bytes()[10:14], "little")
    error = expect(damaged(good, lambda d: d.__setitem__(slice(10, 14), (length + 1).to_bytes(
        4, "little"))), "past the next record: wrong length")  # fmt: skip
    assert error.record == "CompressedSignedBeaconBlock" and error.slot == 6217730

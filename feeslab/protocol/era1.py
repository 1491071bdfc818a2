"""The era1 archive format: e2store records, the block index and the header accumulator.

An era1 file is an e2store file of up to 8,192 blocks::

    era1       := Version | block-tuple* | other-entries* | Accumulator | BlockIndex
    block-tuple := CompressedHeader | CompressedBody | CompressedReceipts | TotalDifficulty

Each e2store record is ``type (2 bytes) | length (uint32 LE) | reserved (2 zero bytes) |
data``. Header, body and receipts are snappy-framed RLP; ``TotalDifficulty`` is a uint256
little-endian; ``Accumulator`` is ``hash_tree_root(List[HeaderRecord(block_hash,
total_difficulty), 8192])``; ``BlockIndex`` is ``starting-number | offsets | count`` (int64
LE, offsets relative to the index record's start).

The format's rules, shared by the reader (:mod:`feeslab.sources.era1`, which checks every file
against them) and the devnet's exporter (:mod:`feeslab.devnet.era1`, which writes files with
:func:`era1_bytes`), so what the devnet writes is what the reader accepts.

References
----------
.. [1] nimbus-eth1, ``docs/e2store.md`` (e2store, era1).
.. [2] go-ethereum, ``internal/era`` (the era1 builder and reader).
.. [3] Snappy framing format, https://github.com/google/snappy/blob/main/framing_format.txt
.. [4] Ethereum consensus specs, SSZ ``hash_tree_root`` (merkleisation of lists).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import cramjam
from Crypto.Hash import keccak as _keccak_mod  # pycryptodome: wheels everywhere, no compiler

try:  # safe-pysha3 where it has wheels (Linux x86-64): 1.7 us a header against 4.5 us
    from sha3 import keccak_256 as _keccak_256  # type: ignore[import-untyped]

    def keccak(data: bytes) -> bytes:
        """keccak256 (safe-pysha3), called directly: eth-hash's wrapper adds ~2 us a header."""
        return bytes(_keccak_256(data).digest())

except ImportError:  # pragma: no cover - elsewhere pycryptodome, which has wheels everywhere

    def keccak(data: bytes) -> bytes:
        """keccak256 (pycryptodome), called directly: eth-hash's wrapper adds ~2 us a header."""
        return _keccak_mod.new(data=data, digest_bits=256).digest()


__all__ = [
    "ACCUMULATOR",
    "BLOCK_INDEX",
    "COMPRESSED_BODY",
    "COMPRESSED_HEADER",
    "COMPRESSED_RECEIPTS",
    "EPOCH_SIZE",
    "RECORD_NAMES",
    "TOTAL_DIFFICULTY",
    "VERSION",
    "accumulator_root",
    "e2store_record",
    "era1_bytes",
    "keccak",
]

EPOCH_SIZE = 8192  # blocks per era1 file (the accumulator's list limit)
VERSION = b"e2"
COMPRESSED_HEADER = b"\x03\x00"
COMPRESSED_BODY = b"\x04\x00"
COMPRESSED_RECEIPTS = b"\x05\x00"
TOTAL_DIFFICULTY = b"\x06\x00"
ACCUMULATOR = b"\x07\x00"
BLOCK_INDEX = b"f2"
RECORD_NAMES = {
    VERSION: "Version", COMPRESSED_HEADER: "CompressedHeader", COMPRESSED_BODY: "CompressedBody",
    COMPRESSED_RECEIPTS: "CompressedReceipts", TOTAL_DIFFICULTY: "TotalDifficulty",
    ACCUMULATOR: "Accumulator", BLOCK_INDEX: "BlockIndex",
}  # fmt: skip


# -- SSZ accumulator ---------------------------------------------------------------------------

_ZERO_HASHES = [bytes(32)]
for _ in range(13):
    _ZERO_HASHES.append(hashlib.sha256(_ZERO_HASHES[-1] * 2).digest())


def accumulator_root(hashes: Sequence[bytes], total_difficulties: Sequence[int]) -> bytes:
    """``hash_tree_root(List[HeaderRecord(block_hash, total_difficulty), 8192])``.

    Written by hand (sha256 over a fixed 13-level tree and a length mix-in, 20 lines): the
    SSZ libraries on PyPI pull in a consensus client's worth of code for this one root.

    Parameters
    ----------
    hashes : sequence of bytes
        Block hashes (32 bytes each), in block order.
    total_difficulties : sequence of int
        The total difficulty after each block [hashes].

    Returns
    -------
    bytes
        The 32-byte root era1's ``Accumulator`` record holds.

    References
    ----------
    .. [1] Ethereum consensus specs, "SimpleSerialize (SSZ)": ``merkleize`` with a limit,
       ``mix_in_length``.
    """
    count = len(hashes)
    if count > EPOCH_SIZE or count != len(total_difficulties):
        raise ValueError("one hash and one total difficulty per block, at most 8,192")
    sha = hashlib.sha256
    layer = [
        sha(h + td.to_bytes(32, "little")).digest()
        for h, td in zip(hashes, total_difficulties, strict=True)
    ]
    for depth in range(13):
        if not layer:
            layer = [_ZERO_HASHES[depth + 1]]
            continue
        if len(layer) % 2:
            layer.append(_ZERO_HASHES[depth])
        layer = [sha(layer[i] + layer[i + 1]).digest() for i in range(0, len(layer), 2)]
    return sha(layer[0] + count.to_bytes(32, "little")).digest()


# -- writing -----------------------------------------------------------------------------------


def e2store_record(kind: bytes, data: bytes) -> bytes:
    """One e2store record: ``kind | len(data) (uint32 LE) | 2 zero bytes | data``."""
    return kind + len(data).to_bytes(4, "little") + b"\x00\x00" + data


def _framed(data: bytes) -> bytes:
    return bytes(cramjam.snappy.compress(data))


def era1_bytes(
    start: int, blocks: Sequence[tuple[bytes, bytes, bytes, int]]
) -> tuple[bytes, bytes]:
    """An era1 file's content from RLP blocks: (content, accumulator root).

    Parameters
    ----------
    start : int
        The first block's number.
    blocks : sequence of (header RLP, body RLP, receipts RLP, total difficulty)
        In block order, at most 8,192.
    """
    if not 0 < len(blocks) <= EPOCH_SIZE:
        raise ValueError(f"an era1 file holds 1 to {EPOCH_SIZE:,} blocks, not {len(blocks):,}")
    parts = [e2store_record(VERSION, b"")]
    offset = 8
    offsets, hashes, tds = [], [], []
    for header, body, receipts, total_difficulty in blocks:
        tuple_bytes = b"".join((
            e2store_record(COMPRESSED_HEADER, _framed(header)),
            e2store_record(COMPRESSED_BODY, _framed(body)),
            e2store_record(COMPRESSED_RECEIPTS, _framed(receipts)),
            e2store_record(TOTAL_DIFFICULTY, total_difficulty.to_bytes(32, "little")),
        ))  # fmt: skip
        offsets.append(offset)
        offset += len(tuple_bytes)
        parts.append(tuple_bytes)
        hashes.append(keccak(header))
        tds.append(total_difficulty)
    root = accumulator_root(hashes, tds)
    parts.append(e2store_record(ACCUMULATOR, root))
    index_start = offset + 40
    index = b"".join(
        [start.to_bytes(8, "little")]
        + [(o - index_start).to_bytes(8, "little", signed=True) for o in offsets]
        + [len(offsets).to_bytes(8, "little")]
    )
    parts.append(e2store_record(BLOCK_INDEX, index))
    return b"".join(parts), root

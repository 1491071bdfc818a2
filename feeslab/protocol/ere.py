"""The Ere archive format: its record types and the writer the devnet exports with.

Ere files hold execution history on both sides of the merge (eth-clients/e2store-format-specs,
``formats/ere.md``); :mod:`feeslab.sources.ere` reads and checks them, and the devnet
(:mod:`feeslab.devnet.ere`) writes them with :func:`ere_bytes`, so what the devnet writes is
what the reader accepts. The e2store pieces both use are in :mod:`feeslab.protocol.e2store`.

References
----------
.. [1] eth-clients/e2store-format-specs, ``formats/ere.md``, ``types/0x0a00.md``,
   ``types/0x0b00.md``, ``types/0x6732.md``; reth ``crates/era`` (``ere``), the writer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import rlp

from feeslab.protocol.e2store import (
    VERSION,
    framed,
    keccak,
    record,
    rlp_bytes,
    rlp_int,
    rlp_list,
)
from feeslab.protocol.era1 import EPOCH_SIZE, accumulator_root

__all__ = [
    "ACCUMULATOR",
    "BLOCK_INDEX",
    "COMPRESSED_BODY",
    "COMPRESSED_HEADER",
    "COMPRESSED_SLIM_RECEIPTS",
    "PROOF",
    "RECORD_NAMES",
    "TOTAL_DIFFICULTY",
    "SlimReceipt",
    "ere_bytes",
    "slim_receipts_rlp",
]

COMPRESSED_HEADER = b"\x03\x00"
COMPRESSED_BODY = b"\x04\x00"
COMPRESSED_SLIM_RECEIPTS = b"\x0a\x00"
PROOF = b"\x0b\x00"
TOTAL_DIFFICULTY = b"\x06\x00"
ACCUMULATOR = b"\x07\x00"
BLOCK_INDEX = b"g2"
RECORD_NAMES = {
    VERSION: "Version", COMPRESSED_HEADER: "CompressedHeader", COMPRESSED_BODY: "CompressedBody",
    COMPRESSED_SLIM_RECEIPTS: "CompressedSlimReceipts", PROOF: "Proof",
    TOTAL_DIFFICULTY: "TotalDifficulty", ACCUMULATOR: "Accumulator",
    BLOCK_INDEX: "DynamicBlockIndex",
}  # fmt: skip

_Log = tuple[bytes, tuple[bytes, ...], bytes]


class SlimReceipt(NamedTuple):
    """A receipt as Ere stores it: ``[tx-type, status or post-state, cumulative-gas, logs]``.

    ``status`` is 0/1, or the 32-byte post-state root before Byzantium; ``logs`` each
    ``(address, topics, data)``; ``cumulative_gas_used`` [gas].
    """

    tx_type: int
    status: int | bytes
    cumulative_gas_used: int
    logs: tuple[_Log, ...]


# -- writing -----------------------------------------------------------------------------------


def slim_receipts_rlp(receipts: Sequence[SlimReceipt]) -> bytes:
    """The RLP a ``CompressedSlimReceipts`` record holds."""
    return rlp_list([
        rlp_list((rlp_int(r.tx_type), rlp_bytes(r.status) if isinstance(r.status, bytes)
                  else rlp_int(r.status), rlp_int(r.cumulative_gas_used),
                  rlp.encode([[*list(log[:2]), log[2]] for log in r.logs])))
        for r in receipts
    ])  # fmt: skip


def ere_bytes(
    start: int,
    blocks: Sequence[tuple[bytes, bytes, bytes | None, int | None]],
    proofs: Sequence[tuple[int, bytes]] | None = None,
) -> tuple[bytes, bytes, bytes | None]:
    """An Ere file's content from RLP blocks: (content, last block's hash, accumulator root).

    Parameters
    ----------
    start : int
        The first block's number.
    blocks : sequence of (header RLP, body RLP, slim receipts RLP or None, total difficulty
        or None)
        In block order, at most 8,192; receipts and total difficulties for all or for none.
        The accumulator is written over the blocks with a difficulty (pre-merge) when total
        difficulties are given and some block is pre-merge.
    proofs : sequence of (proof type, SSZ proof), optional
        One per block: ``Proof`` records, between the receipts and the total difficulties as
        the format orders them (the index lists them last).
    """
    if not 0 < len(blocks) <= EPOCH_SIZE:
        raise ValueError(f"an Ere file holds 1 to {EPOCH_SIZE:,} blocks, not {len(blocks):,}")
    has_receipts = blocks[0][2] is not None
    has_td = blocks[0][3] is not None
    if any((b[2] is not None) != has_receipts or (b[3] is not None) != has_td for b in blocks):
        raise ValueError("receipts and total difficulties: for every block or for none")
    parts = [record(VERSION, b"")]
    pos = 8
    columns: list[list[int]] = []
    sections: list[tuple[bytes, list[bytes]]] = [
        (COMPRESSED_HEADER, [framed(b[0]) for b in blocks]),
        (COMPRESSED_BODY, [framed(b[1]) for b in blocks]),
    ]
    if has_receipts:
        sections.append((COMPRESSED_SLIM_RECEIPTS, [framed(b[2]) for b in blocks]))  # type: ignore[arg-type]
    if proofs is not None:
        if len(proofs) != len(blocks):
            raise ValueError(f"{len(proofs)} proofs for {len(blocks)} blocks")
        sections.append((PROOF, [framed(rlp_list((rlp_int(kind), rlp_bytes(ssz))))
                                 for kind, ssz in proofs]))  # fmt: skip
    if has_td:
        sections.append((TOTAL_DIFFICULTY, [b[3].to_bytes(32, "little") for b in blocks]))  # type: ignore[union-attr]
    for kind, items in sections:
        column = []
        for item in items:
            column.append(pos)
            part = record(kind, item)
            parts.append(part)
            pos += len(part)
        columns.append(column)
    hashes = [keccak(b[0]) for b in blocks]
    root = None
    if has_td:
        pre = [i for i, b in enumerate(blocks) if rlp.decode(b[0])[7] not in (b"", b"\x00")]
        if pre:
            root = accumulator_root([hashes[i] for i in pre],
                                    [blocks[i][3] for i in pre])  # type: ignore[misc]  # fmt: skip
            part = record(ACCUMULATOR, root)
            parts.append(part)
            pos += len(part)
    index_start = pos
    if proofs is not None:  # the index's order: header, body, receipts?, difficulty?, proof
        columns.append(columns.pop(len(columns) - 1 - has_td))
    body = start.to_bytes(8, "little") + b"".join(
        (column[i] - index_start).to_bytes(8, "little", signed=True)
        for i in range(len(blocks)) for column in columns
    ) + len(columns).to_bytes(8, "little") + len(blocks).to_bytes(8, "little")  # fmt: skip
    parts.append(record(BLOCK_INDEX, body))
    return b"".join(parts), hashes[-1], root


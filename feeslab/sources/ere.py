"""Ere files: execution history on both sides of the merge, headers, bodies and slim receipts.

An Ere file is an e2store file of up to 8,192 blocks, its records grouped by type::

    ere := Version | CompressedHeader+ | CompressedBody+ | CompressedSlimReceipts* | Proof* |
           TotalDifficulty* | other-entries* | Accumulator? | DynamicBlockIndex

    CompressedHeader        0x0300  snappyFramed(rlp(header))
    CompressedBody          0x0400  snappyFramed(rlp([transactions, uncles, withdrawals?]))
    CompressedSlimReceipts  0x0a00  snappyFramed(rlp([[tx-type, status, cumulative-gas, logs],
                                    ...]))  (no bloom: it follows from the logs)
    Proof                   0x0b00  snappyFramed(rlp([proof-type, ssz(proof)]))
    TotalDifficulty         0x0600  uint256 LE (pre-merge; the final one after the merge)
    Accumulator             0x0700  hash_tree_root(List[HeaderRecord, 8192]) of the pre-merge
                                    blocks (era1's, over the file's pre-merge part)
    DynamicBlockIndex       "g2"    starting-number | offsets (component-count per block) |
                                    component-count | count  (int64 LE, relative to the index
                                    record's start; header, body, receipts?, difficulty?, proof?)

Files are named ``<network>-<era:05>-<first 4 bytes of the last block's hash>(-<profile>)?.ere``
(profiles ``noproofs``, ``noreceipts``). The optional components are told apart by the type
of the record each index column points at, not by position, so a ``noreceipts`` file with
total difficulties reads as well as a full one.

Reading checks what the file can prove: the layout (every index offset points at a record of
its column's type that fits before the index), each header's hash and parent link, its number
against the index, the total difficulties (each the previous plus the block's difficulty), the
accumulator root over the pre-merge blocks and the last block's hash against the file name's
(:meth:`EreFile.scan`, without decoding a header whole); for each body read, ``sha3Uncles``,
``transactionsRoot`` and ``withdrawalsRoot``; for the receipts read, their count, and
``receiptsRoot`` and ``logsBloom`` of the receipts rebuilt in the consensus encoding (blooms
recomputed from the logs). Any mismatch raises :class:`EreError` naming the file, the record
and the block. Files the devnet exports (named ``devnet-``) have stand-in transactions and
receipts roots (``feeslab.devnet.transactions``): those two checks are left out for them, as
the era1 reader does. Proofs are read (:meth:`EreFile.proof`), not verified: that needs the
historical roots of the beacon chain.

References
----------
.. [1] eth-clients/e2store-format-specs, ``formats/ere.md``, ``types/0x0a00.md``,
   ``types/0x0b00.md``, ``types/0x6732.md``; reth ``crates/era`` (``ere``), the writer.
.. [2] Portal network history specs (``HeaderRecord``, the proof types).
.. [3] go-ethereum ``core/types/bloom9.go`` (a receipt's bloom from its logs).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import cramjam
import numpy as np
import pandas as pd
import rlp

from feeslab.errors import FeeslabError
from feeslab.frames import (
    blocks_frame_from_rows,
    fee_history_frame,
    gas_used_ratio,
    reward_column,
)
from feeslab.frames.transactions import parse_transactions
from feeslab.protocol.e2store import (
    VERSION,
    decompress_all,
    keccak,
    ordered_trie_root,
    rlp_bytes,
    rlp_children,
    rlp_int,
    rlp_item,
    rlp_list,
    rlp_list_size,
    snappy_frames,
    u16,
    u32,
    uint_column,
)
from feeslab.protocol.era1 import EPOCH_SIZE, accumulator_root
from feeslab.protocol.ere import (
    ACCUMULATOR,
    BLOCK_INDEX,
    COMPRESSED_BODY,
    COMPRESSED_HEADER,
    COMPRESSED_SLIM_RECEIPTS,
    PROOF,
    RECORD_NAMES,
    TOTAL_DIFFICULTY,
    SlimReceipt,
    _Log,
    ere_bytes,
    slim_receipts_rlp,
)
from feeslab.sources._mapped import MappedFile
from feeslab.sources.archive import FileArchive, NoReceipts, blob_columns
from feeslab.sources.era1 import effective_rewards, transaction_tip

__all__ = [
    "ACCUMULATOR",
    "BLOCK_INDEX",
    "COMPRESSED_BODY",
    "COMPRESSED_HEADER",
    "COMPRESSED_SLIM_RECEIPTS",
    "PROOF",
    "TOTAL_DIFFICULTY",
    "EreBlock",
    "EreError",
    "EreFile",
    "EreSource",
    "Header",
    "HeaderScan",
    "SlimReceipt",
    "decode_header",
    "ere_bytes",
    "iter_blocks",
    "logs_bloom",
    "rpc_transaction",
    "slim_receipts_rlp",
]

_OPTIONAL = (COMPRESSED_SLIM_RECEIPTS, TOTAL_DIFFICULTY, PROOF)
_FIELDS = (
    "parent_hash", "uncles_hash", "miner", "state_root", "transactions_root", "receipts_root",
    "logs_bloom", "difficulty", "number", "gas_limit", "gas_used", "timestamp", "extra_data",
    "mix_hash", "nonce", "base_fee_per_gas", "withdrawals_root", "blob_gas_used",
    "excess_blob_gas", "parent_beacon_block_root", "requests_hash",
)  # fmt: skip
_INTEGERS = frozenset({"difficulty", "number", "gas_limit", "gas_used", "timestamp",
                       "base_fee_per_gas", "blob_gas_used", "excess_blob_gas"})  # fmt: skip


class EreError(FeeslabError, ValueError):
    """An Ere file that is damaged, truncated or not an Ere file.

    Attributes
    ----------
    path : str or None
        The file.
    block : int or None
        The block whose record failed.
    record : str or None
        The record's type name (``CompressedHeader``, ``DynamicBlockIndex``, ...).
    """

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None,
                 block: int | None = None, record: str | None = None) -> None:  # fmt: skip
        super().__init__(message)
        self.path = None if path is None else str(path)
        self.block = block
        self.record = record


_Withdrawals = tuple[tuple[int, int, bytes, int], ...]


class Header(NamedTuple):
    """An execution header's fields (None where its fork has none); hashes and addresses as
    bytes, integers as int ([gas], [wei], [s])."""

    parent_hash: bytes
    uncles_hash: bytes
    miner: bytes
    state_root: bytes
    transactions_root: bytes
    receipts_root: bytes
    logs_bloom: bytes
    difficulty: int
    number: int
    gas_limit: int
    gas_used: int
    timestamp: int
    extra_data: bytes
    mix_hash: bytes
    nonce: bytes
    base_fee_per_gas: int | None
    withdrawals_root: bytes | None
    blob_gas_used: int | None
    excess_blob_gas: int | None
    parent_beacon_block_root: bytes | None
    requests_hash: bytes | None


class HeaderScan(NamedTuple):
    """What :meth:`EreFile.scan` read of every header, in block order."""

    hashes: list[bytes]
    raws: list[bytes]  # each header's RLP
    numbers: list[int]
    difficulties: list[int]
    uncles_hashes: list[bytes]
    total_difficulties: list[int] | None


_NAME = re.compile(r"^[a-z0-9]+-\d{5}-([0-9a-f]{8})(?:-[a-z]+)*\.ere$")
# the prefixes of parentHash, sha3Uncles, miner, stateRoot, transactionsRoot, receiptsRoot
# and logsBloom at their fixed positions in a header's RLP
_FIXED = (0xA0, 0xA0, 0x94, 0xA0, 0xA0, 0xA0, b"\xb9\x01\x00")
_FIXED_AT = ((3, 0xA0), (36, 0xA0), (69, 0x94), (90, 0xA0), (123, 0xA0), (156, 0xA0),
             (189, 0xB9), (190, 0x01), (191, 0x00))  # fmt: skip


def _int_at(raw: bytes, pos: int) -> tuple[int, int]:
    """(value, next position) of the RLP integer at ``pos``."""
    b = raw[pos]
    if b < 0x80:
        return b, pos + 1
    n = b - 0x80
    if n > 32 or pos + 1 + n > len(raw):
        raise ValueError(f"no integer at byte {pos}")
    return int.from_bytes(raw[pos + 1 : pos + 1 + n], "big"), pos + 1 + n


def _numbers_and_difficulties(raws: list[bytes]) -> tuple[np.ndarray, list[int]]:
    """Every header's ``number`` (an array; -1 where the vectorised walk could not read it)
    and ``difficulty``, walked all at once with numpy (``_difficulty_and_number`` header by
    header costs ~1.5 us more each; integers over 8 bytes are left to it)."""
    n = len(raws)
    lengths = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    buf = np.frombuffer(b"".join(raws) + bytes(512), dtype=np.uint8)  # no walk runs off
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    ok = (lengths >= 460) & (buf[starts] == 0xF9)
    ok &= (buf[starts + 1].astype(np.int64) << 8 | buf[starts + 2]) + 3 == lengths
    for pos, byte in _FIXED_AT:
        ok &= buf[starts + pos] == byte
    difficulty, after = uint_column(buf, np.where(ok, starts + 448, 0), ok)
    number, _ = uint_column(buf, np.where(ok, after, 0), ok)
    numbers = np.where(ok, number.astype(np.int64), -1)
    return numbers, difficulty.tolist()


def _difficulty_and_number(raw: bytes) -> tuple[int, int]:
    """A header's ``difficulty`` and ``number``, read where a header has them (after seven
    fixed-width fields); ``ValueError`` where the layout is not a header's."""
    if len(raw) < 460 or raw[0] != 0xF9 or int.from_bytes(raw[1:3], "big") + 3 != len(raw):
        raise ValueError("not one long RLP list")
    if (raw[3], raw[36], raw[69], raw[90], raw[123], raw[156], raw[189:192]) != _FIXED:
        raise ValueError("its first seven fields are not a header's (32, 32, 20, 32, 32, 32 "
                         "and 256 bytes)")  # fmt: skip
    difficulty, pos = _int_at(raw, 448)
    number, _ = _int_at(raw, pos)
    return difficulty, number


@dataclass(frozen=True, slots=True)
class EreBlock:
    """One block of an Ere file, checked.

    Attributes
    ----------
    number : int
    hash : bytes
        keccak of ``header_rlp``.
    header : Header
    header_rlp : bytes
    transactions : tuple of bytes
        Each transaction's encoding (``type || rlp`` for typed ones).
    uncles : tuple of bytes
        Each uncle header's RLP.
    withdrawals : tuple of (int, int, bytes, int) or None
        ``(index, validator_index, address, amount [gwei])`` from Shanghai on.
    receipts : tuple of SlimReceipt or None
        None when the file holds none (or they were not asked for).
    total_difficulty : int or None
        [hashes] None when the file holds none.
    """

    number: int
    hash: bytes
    header: Header
    header_rlp: bytes
    transactions: tuple[bytes, ...]
    uncles: tuple[bytes, ...]
    withdrawals: tuple[tuple[int, int, bytes, int], ...] | None
    receipts: tuple[SlimReceipt, ...] | None
    total_difficulty: int | None


def decode_header(data: bytes) -> Header:
    """An execution header's RLP as :class:`Header` (``ValueError`` if it is none)."""
    fields = rlp.decode(data)
    if not isinstance(fields, list) or not 15 <= len(fields) <= len(_FIELDS) or any(
            not isinstance(f, bytes) for f in fields):  # fmt: skip
        raise ValueError("not an RLP block header (15 to 21 byte strings)")
    values: list[Any] = []
    for name, value in zip(_FIELDS, fields, strict=False):
        values.append(int.from_bytes(value, "big") if name in _INTEGERS else value)
    values += [None] * (len(_FIELDS) - len(values))
    return Header(*values)


def logs_bloom(logs: Sequence[tuple[bytes, Sequence[bytes], bytes]]) -> bytes:
    """The 2,048-bit bloom of ``logs`` (each address and topic sets three bits)."""
    bits = 0
    for address, topics, _ in logs:
        for item in (address, *topics):
            h = keccak(item)
            for k in (0, 2, 4):
                bits |= 1 << ((h[k] << 8 | h[k + 1]) & 2047)
    return bits.to_bytes(256, "big")


def _consensus_receipt(receipt: SlimReceipt, raw_logs: bytes, bloom: bytes) -> bytes:
    """The receipt as the receipts trie holds it: ``type || rlp([status, cumulative gas,
    bloom, logs])`` (no type byte for legacy ones)."""
    first = rlp_bytes(receipt.status) if isinstance(receipt.status, bytes) else rlp_int(
        receipt.status)  # fmt: skip
    payload = rlp_list((first, rlp_int(receipt.cumulative_gas_used), rlp_bytes(bloom),
                        raw_logs))  # fmt: skip
    return payload if receipt.tx_type == 0 else bytes((receipt.tx_type,)) + payload


def _logs(data: bytes, start: int, stop: int) -> tuple[_Log, ...]:
    """The logs of the RLP list payload ``data[start:stop]``, each ``[address, [topics],
    data]`` (walked in place: most receipts have none, and ``rlp.decode`` costs ~4 us even
    for an empty list)."""
    out = []
    for _, p, e, is_list in rlp_children(data, start, stop):
        fields = rlp_children(data, p, e) if is_list else []
        if len(fields) != 3 or fields[0][3] or not fields[1][3] or fields[2][3]:
            raise ValueError("a log is not [address, [topics], data]")
        topics = rlp_children(data, fields[1][1], fields[1][2])
        if any(t[3] for t in topics):
            raise ValueError("a log's topic is a list")
        out.append((data[fields[0][1] : fields[0][2]],
                    tuple(data[t[1] : t[2]] for t in topics),
                    data[fields[2][1] : fields[2][2]]))  # fmt: skip
    return tuple(out)


class EreFile(MappedFile):
    """One Ere file: its index read and checked on opening, its blocks on demand.

    Parameters
    ----------
    path : str or Path

    Attributes
    ----------
    path : Path
    start : int
        The first block it holds.
    count : int
        How many blocks it holds.
    components : tuple of str
        The record types each block has, in index order (``CompressedHeader``,
        ``CompressedBody``, then any of ``CompressedSlimReceipts``, ``TotalDifficulty``,
        ``Proof``).
    accumulator : bytes or None
        The root its ``Accumulator`` record holds (files with pre-merge blocks).
    stand_in_roots : bool
        True for files the devnet exported (``devnet-*``): their transactions and receipts
        roots are not checked.
    """

    KIND, MIN_SIZE, ERROR = "an Ere file", 8 + 8 + 24, EreError

    def __init__(self, path: str | Path) -> None:
        self.stand_in_roots = Path(path).name.startswith("devnet-")
        self._open(path)
        self._scan: HeaderScan | None = None
        self._layout()

    def __repr__(self) -> str:
        return f"<EreFile {self.path.name}: blocks {self.start:,} .. {self.stop - 1:,}>"

    @property
    def stop(self) -> int:
        """The block after the last one it holds."""
        return self.start + self.count

    def _error(self, message: str, block: int | None = None,
               kind: bytes | None = None) -> EreError:  # fmt: skip
        name = None if kind is None else RECORD_NAMES.get(kind, f"type 0x{kind.hex()}")
        where = "" if block is None else f"block {block:,}: "
        what = "" if name is None else f"its {name} record "
        return EreError(f"{self.path.name}: {where}{what}{message}", path=self.path,
                        block=block, record=name)  # fmt: skip

    def _layout(self) -> None:
        data = self._map
        size = len(data)
        if data[:8] != VERSION + bytes(6):
            raise self._error("no e2store Version record at byte 0: not an Ere file", kind=VERSION)
        count = int.from_bytes(data[size - 8 :], "little")
        width = int.from_bytes(data[size - 16 : size - 8], "little")
        index_start = size - (8 + 8 + 8 * count * width + 16) if 2 <= width <= 5 else -1
        head = data[index_start : index_start + 6] if index_start >= 8 else b""
        if not 0 < count <= EPOCH_SIZE or head[:2] != BLOCK_INDEX or int.from_bytes(
                head[2:], "little") != 24 + 8 * count * width:  # fmt: skip
            raise self._error("no DynamicBlockIndex record at the end: truncated or not an Ere "
                              "file", kind=BLOCK_INDEX)  # fmt: skip
        self.start = int.from_bytes(data[index_start + 8 : index_start + 16], "little")
        self.count = count
        relative = np.frombuffer(data, dtype="<i8", count=count * width, offset=index_start + 16)
        offsets = index_start + relative.reshape(count, width)
        limit = index_start
        self.accumulator = None
        acc = index_start - 40
        if acc >= 8 and data[acc : acc + 8] == ACCUMULATOR + (32).to_bytes(4, "little") + bytes(2):
            self.accumulator = bytes(data[acc + 8 : acc + 40])
            limit = acc
        buf = np.frombuffer(data, dtype=np.uint8)
        kinds = []
        self._records: dict[bytes, tuple[list[int], list[int]]] = {}
        for column in range(width):
            pos = offsets[:, column]
            fits = (pos >= 8) & (pos + 8 <= limit)
            if not fits.all():
                i = int(np.argmin(fits))
                raise self._error(f"its index points at byte {int(pos[i]):,}, outside the "
                                  "records: damaged or truncated", self.start + i,
                                  BLOCK_INDEX)  # fmt: skip
            kind = bytes(data[int(pos[0]) : int(pos[0]) + 2])
            expected = (COMPRESSED_HEADER, COMPRESSED_BODY)[column] if column < 2 else kind
            if expected != kind or (column >= 2 and (kind not in _OPTIONAL or kind in kinds)):
                raise self._error(f"at byte {int(pos[0]):,} has type 0x{kind.hex()}: wrong type "
                                  f"for index column {column}", self.start, expected)  # fmt: skip
            type_ok = (u16(buf, pos) == int.from_bytes(kind, "little")) & (u16(buf, pos + 6) == 0)
            if not type_ok.all():
                i = int(np.argmin(type_ok))
                found = bytes(data[int(pos[i]) : int(pos[i]) + 2])
                raise self._error(f"at byte {int(pos[i]):,} has type 0x{found.hex()}: wrong "
                                  "type", self.start + i, kind)  # fmt: skip
            length = u32(buf, pos + 2)
            past = pos + 8 + length > limit
            if past.any():
                i = int(np.argmax(past))
                raise self._error(f"at byte {int(pos[i]):,} claims {int(length[i]):,} bytes, "
                                  "past the index: wrong length or truncated", self.start + i,
                                  kind)  # fmt: skip
            kinds.append(kind)
            self._records[kind] = ((pos + 8).tolist(), length.tolist())
        # in file order, each record ends where the next begins or before: a length that runs
        # into the next record is wrong, whatever its column
        starts = offsets.T.ravel()
        ends = np.concatenate([np.asarray(self._records[k][0]) + np.asarray(self._records[k][1])
                               for k in kinds])  # fmt: skip
        order = np.argsort(starts, kind="stable")
        overlap = ends[order] > np.append(starts[order][1:], limit)
        if overlap.any():
            j = int(order[int(np.argmax(overlap))])
            kind, i = kinds[j // count], j % count
            raise self._error(f"at byte {int(starts[j]):,} claims {int(ends[j] - starts[j] - 8):,} "
                              "bytes, into the next record: wrong length", self.start + i,
                              kind)  # fmt: skip
        if TOTAL_DIFFICULTY in self._records:
            lengths = np.asarray(self._records[TOTAL_DIFFICULTY][1])
            if (lengths != 32).any():
                i = int(np.argmax(lengths != 32))
                raise self._error("is not 32 bytes: wrong length", self.start + i,
                                  TOTAL_DIFFICULTY)  # fmt: skip
        self.components = tuple(RECORD_NAMES[k] for k in kinds)

    # -- records -------------------------------------------------------------------------------

    def _data(self, kind: bytes, i: int) -> bytes:
        offsets, lengths = self._records[kind]
        o = offsets[i]
        try:
            return snappy_frames(self._map[o : o + lengths[i]])
        except (cramjam.DecompressionError, ValueError) as exc:
            raise self._error(f"at byte {o - 8:,} does not decompress (a bad snappy frame: "
                              f"{exc})", self.start + i, kind) from None  # fmt: skip

    def _index(self, number: int) -> int:
        if not self.start <= number < self.stop:
            raise KeyError(f"{self.path.name} holds blocks {self.start:,} .. "
                           f"{self.stop - 1:,}: not {number:,}")  # fmt: skip
        return number - self.start

    def header_rlp(self, number: int) -> bytes:
        """Block ``number``'s header RLP, decompressed, unchecked (:meth:`headers` checks)."""
        return self._data(COMPRESSED_HEADER, self._index(number))

    def body_rlp(self, number: int) -> bytes:
        """Block ``number``'s body RLP, decompressed, unchecked (:meth:`block` checks)."""
        return self._data(COMPRESSED_BODY, self._index(number))

    def total_difficulty(self, number: int) -> int | None:
        """Block ``number``'s total difficulty [hashes] (None: the file holds none)."""
        if TOTAL_DIFFICULTY not in self._records:
            return None
        o = self._records[TOTAL_DIFFICULTY][0][self._index(number)]
        return int.from_bytes(self._map[o : o + 32], "little")

    def proof(self, number: int) -> tuple[int, bytes] | None:
        """Block ``number``'s proof, ``(proof type, SSZ)``, unverified (None: no proofs)."""
        if PROOF not in self._records:
            return None
        i = self._index(number)
        data = self._data(PROOF, i)
        try:
            decoded = rlp.decode(data)
            if not isinstance(decoded, list) or len(decoded) != 2 or not all(
                    isinstance(x, bytes) for x in decoded):  # fmt: skip
                raise ValueError("not [proof-type, ssz]")
        except (rlp.exceptions.DecodingError, ValueError) as exc:
            raise self._error(f"is not an RLP proof ({exc})", number, PROOF) from None
        return int.from_bytes(decoded[0], "big"), decoded[1]

    # -- checked reading -----------------------------------------------------------------------

    def scan(self) -> HeaderScan:
        """Every header, hashed and checked without decoding it whole (once per file): its
        number against the index, its parent link, the total difficulties, the accumulator
        root over the pre-merge blocks, and the last block's hash against the file name's.

        Each header's fixed-width fields are read at their fixed positions (a header is a
        long list: prefix ``0xf9`` and two length bytes, then seven fields of fixed width
        before ``difficulty`` and ``number``): ``rlp.decode`` costs ~20 us a header, the
        whole check here ~3 us. :meth:`header` decodes one whole.
        """
        if self._scan is not None:
            return self._scan
        offsets, lengths = self._records[COMPRESSED_HEADER]
        raws = decompress_all(self._map, offsets, lengths)  # one chunk each: the usual case
        if raws is None:  # record by record, to name the one that fails
            raws = [self._data(COMPRESSED_HEADER, i) for i in range(self.count)]
        hashes = list(map(keccak, raws))
        numbers, difficulties = _numbers_and_difficulties(raws)
        for i in np.flatnonzero(numbers < 0).tolist():  # the walk's leftovers, one by one
            try:
                difficulties[i], numbers[i] = _difficulty_and_number(raws[i])
            except (ValueError, IndexError) as exc:
                raise self._error(f"is not an RLP block header ({exc})", self.start + i,
                                  COMPRESSED_HEADER) from None  # fmt: skip
        wrong = numbers != np.arange(self.start, self.stop)
        if wrong.any():
            i = int(np.argmax(wrong))
            raise self._error(f"says block {int(numbers[i]):,}, the index {self.start + i:,}",
                              self.start + i, COMPRESSED_HEADER)  # fmt: skip
        for i in range(1, self.count):
            if raws[i][4:36] != hashes[i - 1]:
                raise self._error(f"has parentHash 0x{raws[i][4:36].hex()}, not the hash of "
                                  f"block {self.start + i - 1:,}: a damaged header",
                                  self.start + i, COMPRESSED_HEADER)  # fmt: skip
        tds = None
        if TOTAL_DIFFICULTY in self._records:
            mm = self._map
            tds = [int.from_bytes(mm[o : o + 32], "little")
                   for o in self._records[TOTAL_DIFFICULTY][0]]  # fmt: skip
            for i in range(1, self.count):
                if tds[i] - tds[i - 1] != difficulties[i]:
                    raise self._error(f"holds {tds[i]}, not block {self.start + i - 1:,}'s "
                                      f"{tds[i - 1]} + its difficulty {difficulties[i]}",
                                      self.start + i, TOTAL_DIFFICULTY)  # fmt: skip
            pre = [i for i, d in enumerate(difficulties) if d]
            if self.accumulator is not None:
                root = accumulator_root([hashes[i] for i in pre], [tds[i] for i in pre])
                if root != self.accumulator:
                    raise self._error(
                        f"holds 0x{self.accumulator.hex()}, not the root of its pre-merge "
                        f"headers 0x{root.hex()}: a damaged header or total difficulty",
                        kind=ACCUMULATOR)  # fmt: skip
        elif self.accumulator is not None:
            raise self._error("needs total difficulties, which the file does not hold",
                              kind=ACCUMULATOR)  # fmt: skip
        named = _NAME.match(self.path.name)
        if named and named[1] != hashes[-1][:4].hex():
            raise self._error(f"is the last block's, hashing to 0x{hashes[-1].hex()}, not to "
                              f"the name's {named[1]}: a damaged header or a renamed file",
                              self.stop - 1, COMPRESSED_HEADER)  # fmt: skip
        self._scan = HeaderScan(hashes, raws, numbers.tolist(), difficulties,
                                [r[37:69] for r in raws], tds)  # fmt: skip
        return self._scan

    def header(self, number: int) -> Header:
        """Block ``number``'s header, decoded whole (after :meth:`scan` checked the file's)."""
        raw = self.scan().raws[self._index(number)]
        try:
            return decode_header(raw)
        except (rlp.exceptions.DecodingError, ValueError) as exc:
            raise self._error(f"is not an RLP block header ({exc})", number,
                              COMPRESSED_HEADER) from None  # fmt: skip

    def uncles(self, number: int) -> tuple[bytes, ...]:
        """Block ``number``'s uncle headers (RLP each), checked against its ``sha3Uncles``;
        its transactions left unread (what an uncle scan needs of a body)."""
        scan = self.scan()
        i = self._index(number)
        data = self._data(COMPRESSED_BODY, i)
        try:
            is_list, start, stop = rlp_item(data, 0, len(data))
            if not is_list or stop != len(data):
                raise ValueError("not one RLP list")
            _, txs_end = rlp_item(data, start, stop)[1:]
            is_list, payload, end = rlp_item(data, txs_end, stop)
            if not is_list:
                raise ValueError("its uncles are no list")
            uncles = rlp_children(data, payload, end)
        except ValueError as exc:
            raise self._error(f"is not an RLP block body ({exc})", number,
                              COMPRESSED_BODY) from None  # fmt: skip
        if keccak(data[txs_end:end]) != scan.uncles_hashes[i]:
            raise self._error("holds uncles that do not hash to its header's sha3Uncles",
                              number, COMPRESSED_BODY)  # fmt: skip
        return tuple(data[a:e] for a, _, e, _ in uncles)

    def headers(self) -> list[Header]:
        """Every header, checked (:meth:`scan`) and decoded whole."""
        return [self.header(n) for n in range(self.start, self.stop)]

    def block(self, number: int, *, receipts: bool = True) -> EreBlock:
        """Block ``number``, checked: its header (with the file's), body and, with
        ``receipts`` and where the file holds them, its receipts."""
        scan = self.scan()
        i = self._index(number)
        header = self.header(number)
        transactions, uncles, withdrawals = self._body(i, header)
        slim = None
        if receipts and COMPRESSED_SLIM_RECEIPTS in self._records:
            slim = self._receipts(i, header, len(transactions))
        return EreBlock(number=number, hash=scan.hashes[i], header=header,
                        header_rlp=scan.raws[i], transactions=transactions, uncles=uncles,
                        withdrawals=withdrawals, receipts=slim,
                        total_difficulty=None if scan.total_difficulties is None
                        else scan.total_difficulties[i])  # fmt: skip

    def blocks(self, *, receipts: bool = True) -> Iterator[EreBlock]:
        """Every block, checked, in order (see :meth:`block`)."""
        for number in range(self.start, self.stop):
            yield self.block(number, receipts=receipts)

    def _body(self, i: int, header: Header) -> tuple[tuple[bytes, ...], tuple[bytes, ...],
                                                      _Withdrawals | None]:  # fmt: skip
        number = self.start + i
        data = self._data(COMPRESSED_BODY, i)
        try:
            is_list, start, stop = rlp_item(data, 0, len(data))
            if not is_list or stop != len(data):
                raise ValueError("not one RLP list")
            parts = rlp_children(data, start, stop)
            if len(parts) not in (2, 3) or not all(p[3] for p in parts):
                raise ValueError("not [transactions, uncles, withdrawals?]")
            txs = rlp_children(data, parts[0][1], parts[0][2])
            uncles = rlp_children(data, parts[1][1], parts[1][2])
            raw_withdrawals = rlp_children(data, parts[2][1], parts[2][2]) if len(parts) == 3 \
                else None  # fmt: skip
        except ValueError as exc:
            raise self._error(f"is not an RLP block body ({exc})", number,
                              COMPRESSED_BODY) from None  # fmt: skip
        if keccak(data[parts[1][0] : parts[1][2]]) != header.uncles_hash:
            raise self._error("holds uncles that do not hash to its header's sha3Uncles",
                              number, COMPRESSED_BODY)  # fmt: skip
        encoded = tuple(data[a:e] if is_item_list else data[p:e] for a, p, e, is_item_list in txs)
        if not self.stand_in_roots and ordered_trie_root(encoded) != header.transactions_root:
            raise self._error("holds transactions that do not hash to its header's "
                              "transactionsRoot", number, COMPRESSED_BODY)  # fmt: skip
        withdrawals = None
        if (raw_withdrawals is None) != (header.withdrawals_root is None):
            raise self._error("has withdrawals where its header has no withdrawalsRoot, or "
                              "none where it has", number, COMPRESSED_BODY)  # fmt: skip
        if raw_withdrawals is not None:
            items = [data[a:e] for a, _, e, _ in raw_withdrawals]
            if ordered_trie_root(items) != header.withdrawals_root:
                raise self._error("holds withdrawals that do not hash to its header's "
                                  "withdrawalsRoot", number, COMPRESSED_BODY)  # fmt: skip
            withdrawals = tuple(
                (int.from_bytes(w[0], "big"), int.from_bytes(w[1], "big"), w[2],
                 int.from_bytes(w[3], "big"))
                for w in map(rlp.decode, items)
            )  # fmt: skip
        return encoded, tuple(data[a:e] for a, _, e, _ in uncles), withdrawals

    def _receipts(self, i: int, header: Header, transactions: int) -> tuple[SlimReceipt, ...]:
        number = self.start + i
        data = self._data(COMPRESSED_SLIM_RECEIPTS, i)
        kind = COMPRESSED_SLIM_RECEIPTS
        try:
            is_list, start, stop = rlp_item(data, 0, len(data))
            if not is_list or stop != len(data):
                raise ValueError("not one RLP list")
            out, raw_logs = [], []
            for _, p, e, item_is_list in rlp_children(data, start, stop):
                fields = rlp_children(data, p, e)
                if not item_is_list or len(fields) != 4 or not fields[3][3] or any(
                        f[3] for f in fields[:3]):  # fmt: skip
                    raise ValueError("a receipt is not [tx-type, status, cumulative-gas, logs]")
                status_bytes = data[fields[1][1] : fields[1][2]]
                logs = _logs(data, fields[3][1], fields[3][2])
                out.append(SlimReceipt(
                    int.from_bytes(data[fields[0][1] : fields[0][2]], "big"),
                    status_bytes if len(status_bytes) == 32 else int.from_bytes(status_bytes,
                                                                                "big"),
                    int.from_bytes(data[fields[2][1] : fields[2][2]], "big"), logs))  # fmt: skip
                raw_logs.append(data[fields[3][0] : fields[3][2]])
        except (ValueError, rlp.exceptions.DecodingError, IndexError, TypeError) as exc:
            raise self._error(f"is not RLP slim receipts ({exc})", number, kind) from None
        if len(out) != transactions:
            raise self._error(f"holds {len(out)} receipts for {transactions} transactions",
                              number, kind)  # fmt: skip
        if not self.stand_in_roots:
            blooms = [logs_bloom(r.logs) for r in out]
            encoded = [_consensus_receipt(r, logs, bloom)
                       for r, logs, bloom in zip(out, raw_logs, blooms, strict=True)]  # fmt: skip
            if ordered_trie_root(encoded) != header.receipts_root:
                raise self._error("holds receipts that do not hash to its header's "
                                  "receiptsRoot", number, kind)  # fmt: skip
            combined = 0
            for bloom in blooms:
                combined |= int.from_bytes(bloom, "big")
            if combined.to_bytes(256, "big") != header.logs_bloom:
                raise self._error("holds logs whose bloom is not its header's logsBloom",
                                  number, kind)  # fmt: skip
        return tuple(out)


def iter_blocks(path: str | Path, *, receipts: bool = True) -> Iterator[EreBlock]:
    """Every block of an Ere file, checked, in order, the file mapped while the iterator runs.

    Raises
    ------
    EreError
        The file is damaged (naming the file, the block and the record).
    """
    with EreFile(path) as handle:
        yield from handle.blocks(receipts=receipts)




# -- a source of frames ---------------------------------------------------------------------------


class EreSource(FileArchive):
    """Blocks, fee history and transactions read from Ere files, at zero credits.

    Parameters
    ----------
    path : str, Path, or a sequence of them
        A file, a directory of ``*.ere`` files, or a glob pattern (``"~/ere/mainnet-*.ere"``).

    Notes
    -----
    Ere files hold both sides of the merge, so they serve any block they hold; beside era1
    files (``feeslab.sources.combined.CombinedSource``) they give the blocks from the merge
    on. Every file a range touches has its headers checked (:meth:`EreFile.scan`); ``blocks``
    decodes every body of the range (the size and counts need them), ``fee_history`` the bodies
    and receipts of blocks that used gas. The frames are built by the functions of
    ``feeslab.frames`` a node's are, so the columns and dtypes are a node's.
    """

    label = "ere"
    suffix = "ere"
    error = EreError

    def offers(self) -> frozenset[str]:
        """The datasets Ere files hold (``feeslab.sources.base``)."""
        return frozenset({"blocks", "fee_history", "transactions"})

    def span_of(self, path: Path) -> tuple[int, int]:
        """The blocks ``path`` holds (its index read)."""
        with EreFile(path) as handle:
            return handle.start, handle.stop

    def _files(self, start: int, stop: int) -> Iterator[tuple[EreFile, HeaderScan, int, int]]:
        """(open file, its checked headers, first block, block after the last) per file, the
        links between files checked and noted."""
        previous: bytes | None = None
        for path, first, after in self.covering(start, stop):
            with EreFile(path) as handle:
                scan = handle.scan()
                parent = scan.raws[0][4:36] if first == handle.start else None
                last = scan.hashes[-1] if after == handle.stop else None
                self.note(path, parent, last, previous)
                previous = last
                yield handle, scan, first, after

    def blocks(self, start: int, stop: int, *, progress: bool | None = None) -> pd.DataFrame:
        """Blocks ``start`` .. ``stop - 1`` as ``feeslab.frames.parse_blocks`` gives them."""
        return self.tag(blocks_frame_from_rows(self._block_rows(start, stop)))

    def _block_rows(self, start: int, stop: int) -> Iterator[dict[str, Any]]:
        """Each block's row of :meth:`blocks`, decoded from its header and body."""
        for handle, _, first, after in self._files(start, stop):
            for number in range(first, after):
                block = handle.block(number, receipts=False)
                h = block.header
                body = handle.body_rlp(number)
                _, payload, end = rlp_item(body, 0, len(body))
                yield {
                    "block_number": number, "hash": "0x" + block.hash.hex(),
                    "parent_hash": "0x" + h.parent_hash.hex(), "timestamp": h.timestamp,
                    "miner": "0x" + h.miner.hex(), "difficulty": h.difficulty,
                    "total_difficulty": block.total_difficulty, "gas_limit": h.gas_limit,
                    "gas_used": h.gas_used, "base_fee_wei": h.base_fee_per_gas,
                    # a block's RLP: [header, transactions, uncles, withdrawals?]
                    "size_bytes": rlp_list_size(len(block.header_rlp) + end - payload),
                    "transaction_count": len(block.transactions),
                    "uncle_hashes": tuple("0x" + keccak(u).hex() for u in block.uncles),
                    "blob_gas_used": h.blob_gas_used, "excess_blob_gas": h.excess_blob_gas,
                }  # fmt: skip

    def fee_history(
        self,
        start: int,
        stop: int,
        *,
        percentiles: Sequence[float] = (10, 50, 90),
        progress: bool | None = None,
    ) -> pd.DataFrame:
        """Base fees, gas used ratios, blob fees and tip percentiles of blocks ``start`` ..
        ``stop - 1``, as ``Lab.fee_history`` gives them: the tips from the bodies and slim
        receipts as geth's ``eth_feeHistory`` computes them
        (``feeslab.sources.era1.effective_rewards``).

        Raises
        ------
        NoReceipts
            Percentiles asked of files without receipts (the ``noreceipts`` profile).
        """
        if list(percentiles) != sorted(percentiles):
            raise ValueError(f"percentiles must rise, got {list(percentiles)}")
        names = [reward_column(p) for p in percentiles]
        rows: list[tuple[int, int, int | None, int | None]] = []
        fees, used, limits = [], [], []
        rewards: list[list[int]] = []
        for handle, _, first, after in self._files(start, stop):
            if percentiles and COMPRESSED_SLIM_RECEIPTS not in handle._records:
                raise NoReceipts(f"{handle.path.name} holds no receipts: tip percentiles "
                                 "need the gas each transaction used; pass percentiles=()")
            for number in range(first, after):
                h = handle.header(number)
                fee = h.base_fee_per_gas or 0
                rows.append((number, h.timestamp, h.blob_gas_used, h.excess_blob_gas))
                fees.append(fee)
                used.append(h.gas_used)
                limits.append(h.gas_limit)
                if not percentiles:
                    continue
                if not h.gas_used:  # no transaction: every tip 0, as geth answers
                    rewards.append([0] * len(percentiles))
                    continue
                block = handle.block(number)
                assert block.receipts is not None  # the file holds them (checked above)
                cumulative = [r.cumulative_gas_used for r in block.receipts]
                gas = [b - a for a, b in zip([0, *cumulative[:-1]], cumulative, strict=True)]
                tips = [transaction_tip(tx, fee) for tx in block.transactions]
                rewards.append(effective_rewards(h.gas_used, tips, gas, percentiles))
        blob_fees, blob_ratios = blob_columns(rows, self.chain_spec)
        table = np.asarray(rewards, dtype=np.int64).reshape(len(rewards), len(names))
        return self.tag(fee_history_frame({
            "block_number": np.asarray([r[0] for r in rows], dtype=np.int64),
            "base_fee_wei": np.asarray(fees, dtype=np.int64),
            "gas_used_ratio": gas_used_ratio(np.asarray(used, dtype=np.int64),
                                             np.asarray(limits, dtype=np.int64)),
            "base_fee_per_blob_gas_wei": blob_fees,
            "blob_gas_used_ratio": np.asarray(blob_ratios, dtype=np.float64),
            **{name: table[:, k] for k, name in enumerate(names)},
        }, percentiles))  # fmt: skip

    def transactions(self, start: int, stop: int, *,
                     progress: bool | None = None) -> pd.DataFrame:  # fmt: skip
        """Every transaction of blocks ``start`` .. ``stop - 1``, as
        ``feeslab.frames.parse_transactions`` gives a node's (each transaction decoded from the
        body, its gas used from the slim receipts' cumulative gas).

        Raises
        ------
        NoReceipts
            Files without receipts (the ``noreceipts`` profile): the gas used is unknown.
        """
        blocks: list[dict[str, Any]] = []
        receipts: list[list[dict[str, Any]]] = []
        for handle, _, first, after in self._files(start, stop):
            if COMPRESSED_SLIM_RECEIPTS not in handle._records:
                raise NoReceipts(f"{handle.path.name} holds no receipts: a transaction's gas "
                                 "used is in its receipt")  # fmt: skip
            for number in range(first, after):
                block = handle.block(number)
                assert block.receipts is not None
                fee = block.header.base_fee_per_gas
                txs, paid = [], []
                previous = 0
                for i, (encoded, receipt) in enumerate(zip(block.transactions, block.receipts,
                                                           strict=True)):  # fmt: skip
                    tx = rpc_transaction(encoded, i)
                    used = receipt.cumulative_gas_used - previous
                    previous = receipt.cumulative_gas_used
                    price = transaction_tip(encoded, fee or 0) + (fee or 0)
                    txs.append(tx)
                    paid.append({"transactionHash": tx["hash"], "gasUsed": hex(used),
                                 "effectiveGasPrice": hex(price),
                                 "transactionIndex": hex(i)})  # fmt: skip
                blocks.append({"number": hex(number),
                               "baseFeePerGas": None if fee is None else hex(fee),
                               "transactions": txs})  # fmt: skip
                receipts.append(paid)
        return self.tag(parse_transactions(blocks, receipts))


def rpc_transaction(encoded: bytes, index: int) -> dict[str, Any]:
    """The fee fields of one transaction (its body encoding) as a node's JSON names them."""
    typed = encoded[0] < 0xC0
    fields = rlp.decode(encoded[1:] if typed else encoded)
    kind = encoded[0] if typed else 0

    def q(i: int) -> str:
        return hex(int.from_bytes(fields[i], "big"))

    tx: dict[str, Any] = {"hash": "0x" + keccak(encoded).hex(), "type": hex(kind),
                          "transactionIndex": hex(index)}  # fmt: skip
    if kind == 0:  # [nonce, gasPrice, gas, ...]
        tx.update(gasPrice=q(1), gas=q(2))
    elif kind == 1:  # [chainId, nonce, gasPrice, gas, ...]
        tx.update(gasPrice=q(2), gas=q(3))
    else:  # [chainId, nonce, maxPriorityFeePerGas, maxFeePerGas, gas, ...]
        tx.update(maxPriorityFeePerGas=q(2), maxFeePerGas=q(3), gas=q(4))
        if kind == 3:  # ..., accessList, maxFeePerBlobGas, blobVersionedHashes, ...
            tx.update(maxFeePerBlobGas=q(9), blobVersionedHashes=list(fields[10]))
    return tx

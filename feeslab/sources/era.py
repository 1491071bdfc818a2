"""Era files: the beacon chain's archive, read for the execution payloads its blocks carry.

An Era file is an e2store file of one or more groups, each the blocks of one era (8,192 slots,
``SLOTS_PER_HISTORICAL_ROOT``) and the state at its end::

    era   := group+
    group := Version | block* | era-state | other-entries* | slot-index(block)? | slot-index(state)
    block := CompressedSignedBeaconBlock   (type 0x0100, snappyFramed(ssz(SignedBeaconBlock)))
    era-state := CompressedBeaconState     (type 0x0200, snappyFramed(ssz(BeaconState)))
    SlotIndex := starting-slot | offset * count | count   (type "i2", int64 LE, offsets relative
                 to the index record's start; 0 for an empty slot)

Files are named ``<config>-<era:05>-<short root>.era``; era ``n``'s group holds the blocks of
slots ``(n - 1) * 8192 .. n * 8192 - 1`` and the state of slot ``n * 8192``.

What is read: the slot indexes (from the back, group by group), every block record, and in
each block only the execution payload (and the few body fields its header commits to). The
fork of a block, and so its SSZ layout, follows from its slot (mainnet's fork epochs,
:data:`MAINNET_FORKS`):

* phase0 and Altair blocks carry no payload, nor do Bellatrix blocks before the merge (their
  payload is the empty default): they are skipped and counted (:attr:`EraFile.counts`).
* Bellatrix adds ``execution_payload``; Capella its ``withdrawals``; Deneb ``blob_gas_used``,
  ``excess_blob_gas`` and the body's ``blob_kzg_commitments``; Electra (and Fulu, whose block
  is Electra's) the body's ``execution_requests``, which the header commits to as
  ``requests_hash`` (EIP-7685).
* **Gloas (ePBS, EIP-7732)** moves the payload out of the beacon block: the body holds only a
  signed bid (the builder's commitment to a payload's hash), and the payload travels in a
  separate ``SignedExecutionPayloadEnvelope`` that may be withheld. A Gloas beacon block alone
  therefore yields no payload; a reader needs the envelopes, which no Era record type holds
  yet. This reader refuses Gloas-era slots with :class:`EraError` rather than guess (mainnet
  has not scheduled Gloas).

Every payload is checked before it is yielded: the execution header is rebuilt from it (the
transactions and withdrawals roots computed, ``parentBeaconBlockRoot`` from the beacon block,
``requestsHash`` from its execution requests) and must hash to the payload's ``block_hash``;
a record that is cut, of the wrong type, of an impossible length, not snappy-framed, or whose
hash does not match raises :class:`EraError` naming the file, the slot and the record. Not
checked: the signatures and the beacon block roots against the state (that needs the state,
hundreds of MB, which is skipped: only its slot is read, from its first snappy chunk).

References
----------
.. [1] eth-clients/e2store-format-specs, ``formats/era.md``, ``types/0x0100.md``,
   ``types/0x0200.md``, ``types/0x6932.md``; nimbus-eth2, ``docs/e2store.md``.
.. [2] Ethereum consensus specs, ``specs/{bellatrix,capella,deneb,electra,fulu,gloas}/
   beacon-chain.md`` (``BeaconBlockBody``, ``ExecutionPayload``), ``configs/mainnet.yaml``.
.. [3] EIP-3675 (the merge's header constants), EIP-4895, EIP-4844, EIP-4788, EIP-7685.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import mmap
import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import cramjam
import numpy as np
import pandas as pd

from feeslab.errors import FeeslabError
from feeslab.frames import blocks_frame_from_rows, fee_history_frame, gas_used_ratio
from feeslab.protocol.e2store import (
    EMPTY_UNCLES_HASH,
    VERSION,
    first_chunk,
    framed,
    keccak,
    ordered_trie_root,
    record,
    rlp_bytes,
    rlp_int,
    rlp_list,
    rlp_list_size,
    snappy_frames,
    u16,
    u32,
)
from feeslab.sources._mapped import MappedFile
from feeslab.sources.archive import FileArchive, NoReceipts, blob_columns

__all__ = [
    "COMPRESSED_BEACON_STATE",
    "COMPRESSED_SIGNED_BEACON_BLOCK",
    "MAINNET_FORKS",
    "SLOTS_PER_HISTORICAL_ROOT",
    "SLOT_INDEX",
    "EraError",
    "EraFile",
    "EraSource",
    "ExecutionPayload",
    "Withdrawal",
    "block_size",
    "era_bytes",
    "fork_at",
    "iter_payloads",
]

SLOTS_PER_HISTORICAL_ROOT = 8192
SLOTS_PER_EPOCH = 32
COMPRESSED_SIGNED_BEACON_BLOCK = b"\x01\x00"
COMPRESSED_BEACON_STATE = b"\x02\x00"
SLOT_INDEX = b"i2"
RECORD_NAMES = {
    VERSION: "Version", COMPRESSED_SIGNED_BEACON_BLOCK: "CompressedSignedBeaconBlock",
    COMPRESSED_BEACON_STATE: "CompressedBeaconState", SLOT_INDEX: "SlotIndex",
}  # fmt: skip

MAINNET_FORKS: tuple[tuple[str, int], ...] = (
    ("phase0", 0),
    ("altair", 74_240 * SLOTS_PER_EPOCH),
    ("bellatrix", 144_896 * SLOTS_PER_EPOCH),
    ("capella", 194_048 * SLOTS_PER_EPOCH),
    ("deneb", 269_568 * SLOTS_PER_EPOCH),
    ("electra", 364_032 * SLOTS_PER_EPOCH),
    ("fulu", 411_392 * SLOTS_PER_EPOCH),
)
"""Mainnet's forks and their first slots (consensus-specs ``configs/mainnet.yaml``: the fork
epochs times 32). Gloas is not scheduled; a table with ``("gloas", slot)`` makes its slots
raise :class:`EraError`."""

_ORDER = ("phase0", "altair", "bellatrix", "capella", "deneb", "electra", "fulu", "gloas")
# the body's fixed part: randao 96, eth1_data 72, graffiti 32, 5 list offsets, sync aggregate 160,
# then the payload offset (Bellatrix) and one offset more per fork
_BODY_PAYLOAD_OFFSET = 380
_BODY_FIXED = {"bellatrix": 384, "capella": 388, "deneb": 392, "electra": 396, "fulu": 396}
_PAYLOAD_FIXED = {"bellatrix": 508, "capella": 512, "deneb": 528, "electra": 528, "fulu": 528}
_REQUEST_SIZES = (192, 76, 116)  # DepositRequest, WithdrawalRequest, ConsolidationRequest


class EraError(FeeslabError, ValueError):
    """An Era file that is damaged, truncated or not an Era file.

    Attributes
    ----------
    path : str or None
        The file.
    slot : int or None
        The slot whose record failed.
    record : str or None
        The record's type name (``CompressedSignedBeaconBlock``, ``SlotIndex``, ...).
    """

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None,
                 slot: int | None = None, record: str | None = None) -> None:  # fmt: skip
        super().__init__(message)
        self.path = None if path is None else str(path)
        self.slot = slot
        self.record = record


def fork_at(slot: int, forks: tuple[tuple[str, int], ...] = MAINNET_FORKS) -> str:
    """The fork whose rules a beacon block of ``slot`` follows."""
    name = forks[0][0]
    for fork, first in forks:
        if slot >= first:
            name = fork
    return name


@dataclass(frozen=True, slots=True)
class Withdrawal:
    """One withdrawal of a Capella-or-later payload (EIP-4895): its index, the validator's,
    the address credited and the amount [gwei]."""

    index: int
    validator_index: int
    address: bytes
    amount_gwei: int


@dataclass(frozen=True, slots=True)
class ExecutionPayload:
    """The execution payload of one beacon block, with what its execution header needs.

    Attributes
    ----------
    slot, proposer_index : int
        The beacon block's.
    fork : str
        The beacon block's fork (``bellatrix`` .. ``fulu``).
    parent_root : bytes
        The beacon block's parent root: the execution header's ``parentBeaconBlockRoot`` from
        Deneb on (EIP-4788).
    parent_hash, fee_recipient, state_root, receipts_root, logs_bloom, prev_randao : bytes
        As the execution header's ``parentHash``, ``miner``, ``stateRoot``, ``receiptsRoot``,
        ``logsBloom``, ``mixHash``.
    block_number, gas_limit, gas_used, timestamp : int
        [gas] for the gas fields, [s] since 1970 for ``timestamp``.
    extra_data : bytes
    base_fee_per_gas : int
        [wei]
    block_hash : bytes
        The execution block's hash, checked against the rebuilt header.
    transactions : tuple of bytes
        Each transaction's encoding (``type || rlp`` for typed ones, the RLP list for legacy).
    withdrawals : tuple of Withdrawal or None
        From Capella on, else None.
    blob_gas_used, excess_blob_gas : int or None
        From Deneb on [gas], else None.
    blob_count : int or None
        From Deneb on, the block's blob KZG commitments, else None.
    requests_hash : bytes or None
        From Electra on, the EIP-7685 hash of the body's execution requests, else None.
    """

    slot: int
    proposer_index: int
    fork: str
    parent_root: bytes
    parent_hash: bytes
    fee_recipient: bytes
    state_root: bytes
    receipts_root: bytes
    logs_bloom: bytes
    prev_randao: bytes
    block_number: int
    gas_limit: int
    gas_used: int
    timestamp: int
    extra_data: bytes
    base_fee_per_gas: int
    block_hash: bytes
    transactions: tuple[bytes, ...]
    withdrawals: tuple[Withdrawal, ...] | None
    blob_gas_used: int | None
    excess_blob_gas: int | None
    blob_count: int | None
    requests_hash: bytes | None

    def header_rlp(self) -> bytes:
        """The execution header this payload implies, RLP-encoded: ``keccak`` of it is the
        block's hash. Post-merge constants (EIP-3675): empty ommers, difficulty 0, nonce 0."""
        fields = [
            rlp_bytes(self.parent_hash), rlp_bytes(EMPTY_UNCLES_HASH),
            rlp_bytes(self.fee_recipient), rlp_bytes(self.state_root),
            rlp_bytes(ordered_trie_root(self.transactions)), rlp_bytes(self.receipts_root),
            rlp_bytes(self.logs_bloom), b"\x80", rlp_int(self.block_number),
            rlp_int(self.gas_limit), rlp_int(self.gas_used), rlp_int(self.timestamp),
            rlp_bytes(self.extra_data), rlp_bytes(self.prev_randao), rlp_bytes(bytes(8)),
            rlp_int(self.base_fee_per_gas),
        ]  # fmt: skip
        if self.withdrawals is not None:
            fields.append(rlp_bytes(withdrawals_root(self.withdrawals)))
        if self.blob_gas_used is not None and self.excess_blob_gas is not None:
            fields += [rlp_int(self.blob_gas_used), rlp_int(self.excess_blob_gas),
                       rlp_bytes(self.parent_root)]  # fmt: skip
        if self.requests_hash is not None:
            fields.append(rlp_bytes(self.requests_hash))
        return rlp_list(fields)


def withdrawals_root(withdrawals: tuple[Withdrawal, ...]) -> bytes:
    """``withdrawalsRoot``: the trie of ``rlp([index, validatorIndex, address, amount])``."""
    return ordered_trie_root([
        rlp_list((rlp_int(w.index), rlp_int(w.validator_index), rlp_bytes(w.address),
                  rlp_int(w.amount_gwei)))
        for w in withdrawals
    ])  # fmt: skip


# -- SSZ ---------------------------------------------------------------------------------------
# Written by hand: a payload is a few fixed offsets into the block. py-ssz and remerkleable
# (PyPI) would decode the whole block, attestations included, into objects, ~100x the cost of
# reading these fields, and the hash check below covers every field read.


def _u64(data: bytes | mmap.mmap, pos: int) -> int:
    return int.from_bytes(data[pos : pos + 8], "little")


def _u32(data: bytes | mmap.mmap, pos: int) -> int:
    return int.from_bytes(data[pos : pos + 4], "little")


def _variable_list(data: bytes, start: int, stop: int) -> list[bytes]:
    """The items of an SSZ list of variable-size items, ``data[start:stop]``."""
    if start == stop:
        return []
    first = _u32(data, start)
    if first % 4 or first == 0 or start + first > stop:
        raise ValueError(f"a list's first offset {first} is not a multiple of 4 inside it")
    count = first // 4
    offsets = [*struct.unpack_from(f"<{count}I", data, start), stop - start]
    items = []
    for a, b in itertools.pairwise(offsets):
        if b < a:
            raise ValueError(f"list offsets go backwards ({a} > {b})")
        items.append(data[start + a : start + b])
    return items


def _offsets(data: bytes, base: int, positions: tuple[int, ...], stop: int,
             fixed: int) -> list[int]:  # fmt: skip
    """Absolute, checked starts of a container's variable fields (``positions`` of their
    offsets), the first at its fixed part's end, rising, the last at most ``stop``."""
    out = [base + _u32(data, base + p) for p in positions]
    if out[0] != base + fixed:
        raise ValueError(f"its first variable field starts at {out[0] - base}, not {fixed}")
    if any(b < a for a, b in itertools.pairwise(out)) or out[-1] > stop:
        raise ValueError("its offsets are out of order or past its end")
    return out


def _decode_block(data: bytes, forks: tuple[tuple[str, int], ...]) -> ExecutionPayload | int:
    """A ``SignedBeaconBlock``'s execution payload, or its slot when it has none (pre-merge).

    Raises ValueError (the file reader names the file and slot) for what is not a block of
    its slot's fork.
    """
    if len(data) < 100 + 84 or _u32(data, 0) != 100:
        raise ValueError("not a SignedBeaconBlock (its message offset is not 100)")
    slot = _u64(data, 100)
    fork = fork_at(slot, forks)
    if fork == "gloas":
        raise ValueError("a Gloas block carries no execution payload (EIP-7732: it is in a "
                         "separate envelope, which Era files do not hold)")  # fmt: skip
    if fork not in _BODY_FIXED:
        return slot
    if _u32(data, 180) != 84:
        raise ValueError("not a BeaconBlock (its body offset is not 84)")
    body = 184
    end = len(data)
    body_fixed = _BODY_FIXED[fork]
    positions = tuple(range(200, 220, 4)) + tuple(range(380, body_fixed, 4))
    starts = _offsets(data, body, positions, end, body_fixed)
    variable = dict(zip(positions, [*starts[1:], end], strict=True))  # each field's end
    p = body + _u32(data, body + _BODY_PAYLOAD_OFFSET)
    p_end = variable[_BODY_PAYLOAD_OFFSET]
    fixed = _PAYLOAD_FIXED[fork]
    if p_end - p < fixed:
        raise ValueError(f"its execution payload is {p_end - p} bytes, under {fixed}")
    block_hash = data[p + 472 : p + 504]
    if block_hash == bytes(32):
        return slot  # the default payload of a Bellatrix block before the merge
    payload_positions = (436, 504) if fork == "bellatrix" else (436, 504, 508)
    extra, txs, *rest = _offsets(data, p, payload_positions, p_end, fixed)
    withdrawals = None
    if rest:
        w_start = rest[0]
        if (p_end - w_start) % 44:
            raise ValueError(f"its withdrawals are {p_end - w_start} bytes, not 44 each")
        withdrawals = tuple(
            Withdrawal(_u64(data, w), _u64(data, w + 8), data[w + 16 : w + 36],
                       _u64(data, w + 36))
            for w in range(w_start, p_end, 44)
        )  # fmt: skip
    blob_gas_used = excess_blob_gas = blob_count = None
    requests_hash = None
    if fork in ("deneb", "electra", "fulu"):
        blob_gas_used, excess_blob_gas = _u64(data, p + 512), _u64(data, p + 520)
        commitments = variable[388]
        size = commitments - starts[positions.index(388)]
        if size % 48:
            raise ValueError(f"its blob KZG commitments are {size} bytes, not 48 each")
        blob_count = size // 48
    if fork in ("electra", "fulu"):
        requests_hash = _requests_hash(data, starts[positions.index(392)], end)
    return ExecutionPayload(
        slot=slot, proposer_index=_u64(data, 108), fork=fork, parent_root=data[116:148],
        parent_hash=data[p : p + 32], fee_recipient=data[p + 32 : p + 52],
        state_root=data[p + 52 : p + 84], receipts_root=data[p + 84 : p + 116],
        logs_bloom=data[p + 116 : p + 372], prev_randao=data[p + 372 : p + 404],
        block_number=_u64(data, p + 404), gas_limit=_u64(data, p + 412),
        gas_used=_u64(data, p + 420), timestamp=_u64(data, p + 428),
        extra_data=data[extra:txs], base_fee_per_gas=int.from_bytes(data[p + 440 : p + 472],
                                                                    "little"),
        block_hash=block_hash,
        transactions=tuple(_variable_list(data, txs, rest[0] if rest else p_end)),
        withdrawals=withdrawals, blob_gas_used=blob_gas_used, excess_blob_gas=excess_blob_gas,
        blob_count=blob_count, requests_hash=requests_hash,
    )  # fmt: skip


def _requests_hash(data: bytes, start: int, stop: int) -> bytes:
    """EIP-7685's ``requests_hash`` of an Electra body's ``ExecutionRequests`` (deposits,
    withdrawals, consolidations: three lists of fixed-size items): ``sha256`` of the
    ``sha256(type || ssz(list))`` of each non-empty list."""
    if stop - start < 12:
        raise ValueError("its execution requests are under 12 bytes")
    starts = _offsets(data, start, (0, 4, 8), stop, 12)
    ends = [*starts[1:], stop]
    digests = b""
    for kind, (a, b, size) in enumerate(zip(starts, ends, _REQUEST_SIZES, strict=True)):
        if (b - a) % size:
            raise ValueError(f"its execution requests of type {kind} are {b - a} bytes, not "
                             f"{size} each")  # fmt: skip
        if b > a:
            digests += hashlib.sha256(bytes((kind,)) + data[a:b]).digest()
    return hashlib.sha256(digests).digest()


# -- one file ----------------------------------------------------------------------------------


class _Group(NamedTuple):
    start_slot: int  # the first block slot (the state's slot - 8,192; the state's for genesis)
    state_slot: int
    state_offset: int
    slots: list[int]  # the slots that have a block, rising
    positions: list[int]  # their records' starts
    lengths: list[int]  # their records' data lengths [bytes]
    size: int  # the slots the block index covers (8,192; 0 for the genesis era)


class EraFile(MappedFile):
    """One Era file: its slot indexes read and checked on opening, its blocks on demand.

    Parameters
    ----------
    path : str or Path
    forks : tuple of (str, int)
        The fork schedule (name, first slot); mainnet's by default.

    Attributes
    ----------
    path : Path
    groups : list
        One per era: (first block slot, state slot, state record offset, block record offsets).
    counts : dict of str to int
        What :meth:`payloads` has met so far: ``blocks`` (records read), ``payloads``
        (yielded), ``pre_merge`` (blocks without a payload: before Bellatrix or before the
        merge, skipped) and ``empty_slots`` (slots without a block).
    """

    KIND, MIN_SIZE, ERROR = "an Era file", 8 + 32, EraError

    def __init__(self, path: str | Path,
                 forks: tuple[tuple[str, int], ...] = MAINNET_FORKS) -> None:  # fmt: skip
        self.forks = forks
        self.counts = {"blocks": 0, "payloads": 0, "pre_merge": 0, "empty_slots": 0}
        self._open(path)
        self.groups = self._layout()

    def __repr__(self) -> str:
        slots = [g.start_slot for g in self.groups]
        return f"<EraFile {self.path.name}: {len(self.groups)} eras from slot {min(slots):,}>"

    def _error(self, message: str, slot: int | None = None,
               kind: bytes | None = None) -> EraError:  # fmt: skip
        name = None if kind is None else RECORD_NAMES.get(kind, f"type 0x{kind.hex()}")
        where = "" if slot is None else f"slot {slot:,}: "
        what = "" if name is None else f"its {name} record "
        return EraError(f"{self.path.name}: {where}{what}{message}", path=self.path, slot=slot,
                        record=name)  # fmt: skip

    def _slot_index(self, end: int) -> tuple[int, int, np.ndarray]:
        """(record start, starting slot, relative offsets) of the SlotIndex ending at ``end``."""
        data = self._map
        if end < 8 + 32:
            raise self._error(f"no SlotIndex record ends at byte {end:,}: truncated",
                              kind=SLOT_INDEX)  # fmt: skip
        count = int.from_bytes(data[end - 8 : end], "little")
        start = end - (8 + 16 + 8 * count)
        head = data[start : start + 6] if start >= 8 else b""
        if not 0 < count <= SLOTS_PER_HISTORICAL_ROOT or head[:2] != SLOT_INDEX or _u32(
                head, 2) != 16 + 8 * count:  # fmt: skip
            raise self._error(f"no SlotIndex record ends at byte {end:,}: truncated or not an "
                              "Era file", kind=SLOT_INDEX)  # fmt: skip
        first = int.from_bytes(data[start + 8 : start + 16], "little")
        return start, first, np.frombuffer(data, dtype="<i8", count=count, offset=start + 16)

    def _layout(self) -> list[_Group]:
        """Every group's indexes, from the back; each offset checked to point at a record of
        the right type that fits before the index."""
        groups = []
        end = len(self._map)
        data = self._map
        while end > 8:
            state_start, state_slot, (state_offset,) = self._state_index(end)
            if state_slot % SLOTS_PER_HISTORICAL_ROOT:
                raise self._error(f"its state slot {state_slot:,} is not at an era's end",
                                  state_slot, SLOT_INDEX)  # fmt: skip
            self._check_record(state_offset, COMPRESSED_BEACON_STATE, state_start, state_slot)
            begin = state_offset
            first, present = state_slot, np.zeros(0, np.int64)
            positions: list[int] = []
            lengths: list[int] = []
            size = 0
            if state_slot > 0:
                index_start, first, relative = self._slot_index(state_start)
                size = len(relative)
                if first != state_slot - SLOTS_PER_HISTORICAL_ROOT or size != (
                        SLOTS_PER_HISTORICAL_ROOT):  # fmt: skip
                    raise self._error(f"its block index covers slots {first:,} + {size:,}, not "
                                      f"the era before slot {state_slot:,}", first,
                                      SLOT_INDEX)  # fmt: skip
                present = np.flatnonzero(relative != 0)  # 5x faster than on the integers
                positions, lengths = self._check_blocks(index_start + relative[present],
                                                        first + present, state_offset)  # fmt: skip
                if positions:
                    begin = positions[0]
            if begin < 8 or data[begin - 8 : begin] != VERSION + bytes(6):
                raise self._error("no Version record before its era's first record",
                                  first, VERSION)  # fmt: skip
            groups.append(_Group(first, state_slot, state_offset, (first + present).tolist(),
                                 positions, lengths, size))  # fmt: skip
            end = begin - 8
        if end != 0:
            raise self._error(f"{end:,} bytes before its first group are no group")
        return groups[::-1]

    def _state_index(self, end: int) -> tuple[int, int, list[int]]:
        start, slot, offsets = self._slot_index(end)
        if len(offsets) != 1 or offsets[0] == 0:
            raise self._error("its state index does not point at one state", slot, SLOT_INDEX)
        return start, slot, [start + int(offsets[0])]

    def _check_blocks(self, pos: np.ndarray, slots: np.ndarray,
                      limit: int) -> tuple[list[int], list[int]]:  # fmt: skip
        """(positions, data lengths) of the block records at ``pos``, each checked: inside
        the records, rising, of the block type, fitting before the next (all at once)."""
        kind = COMPRESSED_SIGNED_BEACON_BLOCK
        if not len(pos):
            return [], []
        fits = (pos >= 8) & (pos + 8 <= limit)
        fits[1:] &= np.diff(pos) > 0
        if not fits.all():
            i = int(np.argmin(fits))
            raise self._error(f"at byte {int(pos[i]):,} lies outside the file's records or out "
                              "of order: truncated or damaged", int(slots[i]), kind)  # fmt: skip
        buf = np.frombuffer(self._map, dtype=np.uint8)
        type_ok = (u16(buf, pos) == int.from_bytes(kind, "little")) & (u16(buf, pos + 6) == 0)
        if not type_ok.all():
            i = int(np.argmin(type_ok))
            found = bytes(self._map[int(pos[i]) : int(pos[i]) + 2])
            raise self._error(f"at byte {int(pos[i]):,} has type 0x{found.hex()}: wrong type",
                              int(slots[i]), kind)  # fmt: skip
        length = u32(buf, pos + 2)
        past = pos + 8 + length > np.append(pos[1:], limit)
        if past.any():
            i = int(np.argmax(past))
            raise self._error(f"at byte {int(pos[i]):,} claims {int(length[i]):,} bytes, past "
                              "the next record: wrong length or truncated", int(slots[i]),
                              kind)  # fmt: skip
        return pos.tolist(), length.tolist()

    def _check_record(self, offset: int, kind: bytes, limit: int, slot: int) -> None:
        data = self._map
        if offset < 8 or offset + 8 > limit:
            raise self._error(f"at byte {offset:,} lies outside the file's records: truncated "
                              "or damaged", slot, kind)  # fmt: skip
        if data[offset : offset + 2] != kind or data[offset + 6 : offset + 8] != b"\x00\x00":
            found = bytes(data[offset : offset + 2])
            raise self._error(f"at byte {offset:,} has type 0x{found.hex()}: wrong type", slot,
                              kind)  # fmt: skip
        length = _u32(data, offset + 2)
        if offset + 8 + length > limit:
            raise self._error(f"at byte {offset:,} claims {length:,} bytes, past the next "
                              "record: wrong length or truncated", slot, kind)  # fmt: skip

    def _data(self, offset: int, slot: int, kind: bytes, length: int | None = None) -> bytes:
        if length is None:
            length = _u32(self._map, offset + 2)
        try:
            return snappy_frames(self._map[offset + 8 : offset + 8 + length])
        except (cramjam.DecompressionError, ValueError) as exc:
            raise self._error(f"at byte {offset:,} does not decompress (a bad snappy frame: "
                              f"{exc})", slot, kind) from None  # fmt: skip

    def slots(self) -> Iterator[int]:
        """The slots that have a block, in order."""
        for group in self.groups:
            yield from group.slots

    def block_ssz(self, slot: int) -> bytes | None:
        """The ``SignedBeaconBlock`` SSZ of ``slot`` (None for an empty slot), decompressed,
        unchecked. Raises ``KeyError`` for a slot outside the file's eras."""
        for group in self.groups:
            if group.start_slot <= slot < group.start_slot + group.size:
                k = bisect.bisect_left(group.slots, slot)
                if k == len(group.slots) or group.slots[k] != slot:
                    return None
                return self._data(group.positions[k], slot, COMPRESSED_SIGNED_BEACON_BLOCK,
                                  group.lengths[k])  # fmt: skip
        raise KeyError(f"{self.path.name} holds no era with slot {slot:,}")

    def payload(self, slot: int) -> ExecutionPayload | None:
        """The checked execution payload of ``slot`` (None: an empty slot or no payload)."""
        data = self.block_ssz(slot)
        return None if data is None else self._payload(data, slot)

    def _payload(self, data: bytes, slot: int) -> ExecutionPayload | None:
        kind = COMPRESSED_SIGNED_BEACON_BLOCK
        try:
            decoded = _decode_block(data, self.forks)
        except (ValueError, struct.error) as exc:
            raise self._error(f"is not a beacon block of its fork ({exc})", slot, kind) from None
        found = decoded if isinstance(decoded, int) else decoded.slot
        if found != slot:
            raise self._error(f"holds a block of slot {found:,}, its index slot {slot:,}",
                              slot, kind)  # fmt: skip
        if isinstance(decoded, int):
            return None
        rebuilt = keccak(decoded.header_rlp())
        if rebuilt != decoded.block_hash:
            raise self._error(
                f"holds execution block {decoded.block_number:,} whose header, rebuilt from "
                f"its payload, hashes to 0x{rebuilt.hex()}, not its block_hash "
                f"0x{decoded.block_hash.hex()}: a payload hash mismatch", slot, kind)
        return decoded

    def payloads(self) -> Iterator[ExecutionPayload]:
        """Every checked execution payload, in slot order (see :attr:`counts`)."""
        kind = COMPRESSED_SIGNED_BEACON_BLOCK
        for group in self.groups:
            self.counts["empty_slots"] += group.size - len(group.slots)
            for slot, offset, length in zip(group.slots, group.positions, group.lengths,
                                            strict=True):  # fmt: skip
                self.counts["blocks"] += 1
                payload = self._payload(self._data(offset, slot, kind, length), slot)
                if payload is None:
                    self.counts["pre_merge"] += 1
                    continue
                self.counts["payloads"] += 1
                yield payload

    def state_slot(self, era: int = -1) -> int:
        """The slot a group's state says it is at (read from its first snappy chunk, the
        state left compressed), checked against the state index."""
        group = self.groups[era]
        offset = group.state_offset
        length = _u32(self._map, offset + 2)
        kind = COMPRESSED_BEACON_STATE
        try:
            head = first_chunk(self._map[offset + 8 : offset + 8 + length])
        except (cramjam.DecompressionError, ValueError) as exc:
            raise self._error(f"does not decompress (a bad snappy frame: {exc})",
                              group.state_slot, kind) from None  # fmt: skip
        if len(head) < 48:
            raise self._error("is under 48 bytes: no slot", group.state_slot, kind)
        slot = _u64(head, 40)  # genesis_time (8), genesis_validators_root (32), slot
        if slot != group.state_slot:
            raise self._error(f"says slot {slot:,}, its index {group.state_slot:,}",
                              group.state_slot, kind)  # fmt: skip
        return slot


def iter_payloads(
    path: str | Path, forks: tuple[tuple[str, int], ...] = MAINNET_FORKS
) -> Iterator[ExecutionPayload]:
    """Every execution payload an Era file holds, checked, in slot order, the file mapped
    while the iterator runs (see :class:`EraFile` for the counts of what was skipped).

    Raises
    ------
    EraError
        The file is damaged (naming the file, the slot and the record).
    """
    with EraFile(path, forks) as handle:
        yield from handle.payloads()


# -- writing -----------------------------------------------------------------------------------


def _slot_index(start_slot: int, offsets: list[int], index_start: int) -> bytes:
    rel = [0 if o is None else o - index_start for o in offsets]
    body = start_slot.to_bytes(8, "little") + struct.pack(f"<{len(rel)}q", *rel) + len(
        rel).to_bytes(8, "little")  # fmt: skip
    return record(SLOT_INDEX, body)


def era_bytes(state_slot: int, blocks: dict[int, bytes], state: bytes) -> bytes:
    """One Era group's content: the SSZ ``SignedBeaconBlock`` s of ``blocks`` (slot -> SSZ),
    in slot order, then ``state`` (SSZ of the state at ``state_slot``) and the two indexes.

    Parameters
    ----------
    state_slot : int
        A multiple of 8,192: the era's end. The blocks' slots must lie in the 8,192 before it.
    blocks : dict of int to bytes
    state : bytes
        A ``BeaconState``'s SSZ (the reader reads only its slot, bytes 40..48).
    """
    if state_slot % SLOTS_PER_HISTORICAL_ROOT:
        raise ValueError(f"the state slot {state_slot} is not a multiple of 8,192")
    first = state_slot - SLOTS_PER_HISTORICAL_ROOT
    if any(not first <= s < state_slot for s in blocks) or (state_slot == 0 and blocks):
        raise ValueError(f"block slots must lie in {first} .. {state_slot - 1}")
    parts = [record(VERSION, b"")]
    pos = 8
    offsets: list[int | None] = [None] * SLOTS_PER_HISTORICAL_ROOT
    for slot in sorted(blocks):
        offsets[slot - first] = pos
        part = record(COMPRESSED_SIGNED_BEACON_BLOCK, framed(blocks[slot]))
        parts.append(part)
        pos += len(part)
    state_offset = pos
    part = record(COMPRESSED_BEACON_STATE, framed(state))
    parts.append(part)
    pos += len(part)
    if state_slot > 0:
        part = _slot_index(first, offsets, pos)  # type: ignore[arg-type]
        parts.append(part)
        pos += len(part)
    parts.append(_slot_index(state_slot, [state_offset], pos))
    return b"".join(parts)


# -- a source of frames ---------------------------------------------------------------------------


class EraSource(FileArchive):
    """Blocks, fee history and transactions read from the beacon chain's Era files, at zero
    credits.

    Parameters
    ----------
    path : str, Path, or a sequence of them
        A file, a directory of ``*.era`` files, or a glob pattern.

    Notes
    -----
    An Era file holds the execution payloads of the beacon blocks of its eras: every header
    field (the header is rebuilt from the payload and checked against its hash), the
    transactions and the withdrawals, but no receipts. So what needs the gas each transaction
    used cannot be had from them: tip percentiles raise :class:`NoReceipts` (``fee_history``
    with ``percentiles=()`` gives the base fees, gas used and blob columns). Nor do they hold
    total difficulty: the blocks frame's ``total_difficulty`` is None (a node answers the final
    one, unchanged since the merge). Pre-merge slots carry no payload and hold no block here.
    The transactions frame has every column of a node's but ``gas_used``, which is ``<NA>``
    (``Int64``), its ``attrs["unknown"]`` saying so: the effective gas price and tip of each
    transaction follow from it and the base fee, the gas it used only from its receipt.
    """

    label = "era"
    suffix = "era"
    error = EraError

    def offers(self) -> frozenset[str]:
        """The datasets Era files hold (``feeslab.sources.base``)."""
        return frozenset({"blocks", "fee_history", "transactions"})

    def span_of(self, path: Path) -> tuple[int, int] | None:
        """The execution blocks ``path`` holds: its first and last payload's numbers read
        (None: only pre-merge slots)."""
        with EraFile(path) as handle:
            slots = list(handle.slots())
            first = next((p for p in map(handle.payload, slots) if p is not None), None)
            if first is None:
                return None
            last = next(p for p in map(handle.payload, reversed(slots)) if p is not None)
            return first.block_number, last.block_number + 1

    def _payloads(self, start: int, stop: int) -> Iterator[ExecutionPayload]:
        """The checked payloads of blocks ``start`` .. ``stop - 1``, in order, each linked to
        the one before (its ``parent_hash``), every block present."""
        previous: bytes | None = None
        expected = start
        spans = {path: (lo, hi) for lo, hi, path in self.ranges()}
        for path, first, after in self.covering(start, stop):
            with EraFile(path) as handle:
                first_parent = last = None
                for payload in handle.payloads():
                    n = payload.block_number
                    if n == first:
                        first_parent = payload.parent_hash
                    if n < first or n >= after:
                        continue
                    if n != expected:
                        raise handle._error(f"holds execution block {n:,} where block "
                                            f"{expected:,} was due: a block is missing",
                                            payload.slot)  # fmt: skip
                    if expected > first and payload.parent_hash != last:
                        raise handle._error(f"holds execution block {n:,} whose parent_hash "
                                            "is not the previous block's hash", payload.slot)
                    last = payload.block_hash
                    expected += 1
                    yield payload
                lo, hi = spans[path]
                self.note(path, first_parent if first == lo else None,
                          last if after == hi else None, previous)
                previous = last

    def blocks(self, start: int, stop: int, *, progress: bool | None = None) -> pd.DataFrame:
        """Blocks ``start`` .. ``stop - 1`` as ``feeslab.frames.parse_blocks`` gives them
        (``total_difficulty`` None: Era files hold none)."""
        rows = ({
            "block_number": p.block_number, "hash": "0x" + p.block_hash.hex(),
            "parent_hash": "0x" + p.parent_hash.hex(), "timestamp": p.timestamp,
            "miner": "0x" + p.fee_recipient.hex(), "difficulty": 0,
            "total_difficulty": None, "gas_limit": p.gas_limit, "gas_used": p.gas_used,
            "base_fee_wei": p.base_fee_per_gas, "size_bytes": block_size(p),
            "transaction_count": len(p.transactions), "uncle_hashes": (),
            "blob_gas_used": p.blob_gas_used, "excess_blob_gas": p.excess_blob_gas,
        } for p in self._payloads(start, stop))  # fmt: skip
        return self.tag(blocks_frame_from_rows(rows))

    def fee_history(
        self,
        start: int,
        stop: int,
        *,
        percentiles: Sequence[float] = (10, 50, 90),
        progress: bool | None = None,
    ) -> pd.DataFrame:
        """Base fees, gas used ratios and blob fees of blocks ``start`` .. ``stop - 1``, as
        ``Lab.fee_history(..., percentiles=())`` gives them.

        Raises
        ------
        NoReceipts
            Any percentile: a tip percentile is weighted by the gas each transaction used,
            which only its receipt says, and Era files hold no receipts.
        """
        if len(percentiles):
            raise NoReceipts(
                f"tip percentiles {list(percentiles)} from Era files: they hold no receipts, "
                "so the gas each transaction used (which weighs each tip) is unknown; pass "
                "percentiles=() for base fees and gas used, or read Ere or era1 files, or a "
                "node")  # fmt: skip
        rows, fees, used, limits = [], [], [], []
        for p in self._payloads(start, stop):
            rows.append((p.block_number, p.timestamp, p.blob_gas_used, p.excess_blob_gas))
            fees.append(p.base_fee_per_gas)
            used.append(p.gas_used)
            limits.append(p.gas_limit)
        blob_fees, blob_ratios = blob_columns(rows, self.chain_spec)
        return self.tag(fee_history_frame({
            "block_number": np.asarray([r[0] for r in rows], dtype=np.int64),
            "base_fee_wei": np.asarray(fees, dtype=np.int64),
            "gas_used_ratio": gas_used_ratio(np.asarray(used, dtype=np.int64),
                                             np.asarray(limits, dtype=np.int64)),
            "base_fee_per_blob_gas_wei": blob_fees,
            "blob_gas_used_ratio": np.asarray(blob_ratios, dtype=np.float64),
        }))  # fmt: skip


    def transactions(self, start: int, stop: int, *,
                     progress: bool | None = None) -> pd.DataFrame:  # fmt: skip
        """Every transaction of blocks ``start`` .. ``stop - 1``: the columns of
        ``feeslab.frames.parse_transactions``, ``gas_used`` ``<NA>`` (no receipts; ``attrs[
        "unknown"] == ["gas_used"]``), the effective gas price and tip from the fee fields
        and the base fee (geth's ``EffectiveGasTip``)."""
        from feeslab.frames.transactions import parse_transactions
        from feeslab.sources.era1 import transaction_tip
        from feeslab.sources.ere import rpc_transaction

        blocks, receipts = [], []
        for p in self._payloads(start, stop):
            fee = p.base_fee_per_gas
            txs = [rpc_transaction(encoded, i) for i, encoded in enumerate(p.transactions)]
            blocks.append({"number": hex(p.block_number), "baseFeePerGas": hex(fee),
                           "transactions": txs})  # fmt: skip
            # a stand-in gas used of 0, replaced by <NA> below: no receipt says it
            receipts.append([{"transactionHash": tx["hash"], "gasUsed": "0x0",
                              "effectiveGasPrice": hex(fee + transaction_tip(encoded, fee)),
                              "transactionIndex": tx["transactionIndex"]}
                             for tx, encoded in zip(txs, p.transactions, strict=True)])
        frame = parse_transactions(blocks, receipts)
        frame["gas_used"] = pd.array([pd.NA] * len(frame), dtype="Int64")
        frame = self.tag(frame)
        frame.attrs["unknown"] = ["gas_used"]  # Era files hold no receipts
        return frame

def block_size(payload: ExecutionPayload) -> int:
    """The size of the execution block's RLP ``[header, transactions, uncles, withdrawals?]``
    [bytes], as a node's ``size`` says (typed transactions as byte strings in the body)."""
    txs = sum(len(tx) if tx[0] >= 0xC0 else len(rlp_bytes(tx)) for tx in payload.transactions)
    body = rlp_list_size(txs) + 1  # the transactions, then no uncles (0xc0)
    if payload.withdrawals is not None:
        body += rlp_list_size(sum(
            len(rlp_list((rlp_int(w.index), rlp_int(w.validator_index), rlp_bytes(w.address),
                          rlp_int(w.amount_gwei))))
            for w in payload.withdrawals))  # fmt: skip
    return rlp_list_size(len(payload.header_rlp()) + body)

"""Content addressing as kubo does it: UnixFS files in dag-pb, CIDs, and their encodings.

Pure code shared by the devnet's IPFS node and the client, so that anyone holding the bytes of a
file can recompute its CID without a node. The rules are kubo's defaults for ``ipfs add``:

- the file is cut into chunks of 262,144 bytes (``size-262144``); an empty file is one empty
  chunk;
- each chunk becomes a leaf: a dag-pb node holding UnixFS ``File`` data (CIDv0), or, with raw
  leaves (implied by ``cid-version=1``), the chunk itself as a ``raw`` block (codec 0x55);
- leaves are gathered into a *balanced* tree: parents of at most 174 links, every leaf at the
  same depth, the last parent of each level holding what is left; a one-chunk file's leaf is
  its root;
- a parent is a dag-pb node whose links (field 2) come before its data (field 1); each link
  writes the child's CID, its name (always, even empty) and its cumulative DAG size (Tsize);
  the parent's UnixFS data says ``File``, the total file size and each child's file size;
- a block's CID hashes it with sha2-256: CIDv0 is base58btc of the multihash
  (``Qm...``), CIDv1 is ``b`` + lower-case base32 of version, codec and multihash.

References
----------
.. [1] UnixFS specification, https://github.com/ipfs/specs/blob/main/UNIXFS.md
.. [2] dag-pb specification, https://ipld.io/specs/codecs/dag-pb/spec/
.. [3] CID specification, https://github.com/multiformats/cid
.. [4] go-unixfs ``importer/balanced`` (the layout kubo's ``ipfs add`` uses).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

__all__ = [
    "CHUNK_SIZE",
    "CID",
    "DAG_PB",
    "MAX_CHUNK_SIZE",
    "MAX_LINKS",
    "RAW",
    "Block",
    "CidError",
    "DagError",
    "FileImporter",
    "ImportOptions",
    "ImportResult",
    "Link",
    "PBNode",
    "UnixFSData",
    "b58decode",
    "b58encode",
    "cid_of",
    "decode_pbnode",
    "decode_unixfs",
    "directory_block",
    "encode_pbnode",
    "encode_unixfs",
    "import_bytes",
    "verify",
]

CHUNK_SIZE = 262_144
"""kubo's default chunk [bytes] (``--chunker=size-262144``)."""
MAX_CHUNK_SIZE = 1_048_576
"""The largest chunk kubo accepts [bytes]."""
MAX_LINKS = 174
"""Links per parent node in kubo's balanced layout."""

DAG_PB = 0x70
RAW = 0x55
SHA2_256 = 0x12
SHA2_256_LENGTH = 32

# UnixFS Data.Type
UNIXFS_RAW, DIRECTORY, FILE, METADATA, SYMLINK, HAMT_SHARD = range(6)
_TYPE_NAMES = {0: "raw", 1: "directory", 2: "file", 3: "metadata", 4: "symlink", 5: "hamt-shard"}

_CODEC_NAMES = {DAG_PB: "dag-pb", RAW: "raw"}


class CidError(ValueError):
    """Text or bytes that are not a CID this module understands."""


class DagError(ValueError):
    """A block that does not decode as the dag-pb/UnixFS node it should be."""


# -- varints and bases ------------------------------------------------------------------------

_VARINTS = [bytes([n]) for n in range(128)]


def varint(n: int) -> bytes:
    """Unsigned LEB128, as protobuf and multiformats write integers."""
    if n < 128:
        if n < 0:
            raise ValueError("varint of a negative number")
        return _VARINTS[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode the varint at ``buf[pos]``; returns ``(value, next position)``."""
    value = shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise DagError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise DagError("varint longer than 64 bits")


_B58 = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_INDEX = {c: i for i, c in enumerate(_B58)}


def b58encode(data: bytes) -> str:
    """base58btc (Bitcoin's alphabet); leading zero bytes become ``1``."""
    zeros = len(data) - len(data.lstrip(b"\0"))
    n = int.from_bytes(data, "big")
    out = bytearray()
    while n:
        n, r = divmod(n, 58)
        out.append(_B58[r])
    out.extend(b"1" * zeros)
    out.reverse()
    return out.decode("ascii")


def b58decode(text: str) -> bytes:
    """Inverse of :func:`b58encode`; raises ``CidError`` on a character outside the alphabet."""
    n = 0
    try:
        for c in text.encode("ascii"):
            n = n * 58 + _B58_INDEX[c]
    except (KeyError, UnicodeEncodeError):
        raise CidError(f"invalid base58btc text {text[:64]!r}") from None
    zeros = len(text) - len(text.lstrip("1"))
    body = n.to_bytes((n.bit_length() + 7) // 8, "big") if n else b""
    return b"\0" * zeros + body


def _b32encode(data: bytes) -> str:
    return base64.b32encode(data).decode("ascii").rstrip("=").lower()


def _b32decode(text: str) -> bytes:
    padded = text.upper() + "=" * (-len(text) % 8)
    try:
        return base64.b32decode(padded)
    except (ValueError, TypeError):
        raise CidError(f"invalid base32 text {text[:64]!r}") from None


# -- CIDs -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CID:
    """A content identifier: version, codec and sha2-256 multihash.

    ``str(cid)`` is kubo's form: base58btc for version 0, ``b`` + base32 for version 1.

    Attributes
    ----------
    version : int
        0 or 1. Version 0 is always dag-pb.
    codec : int
        ``DAG_PB`` (0x70) or ``RAW`` (0x55).
    multihash : bytes
        ``0x12 0x20`` + the 32-byte sha2-256 digest.
    """

    version: int
    codec: int
    multihash: bytes

    @classmethod
    def of_block(cls, block: bytes, *, version: int = 0, codec: int = DAG_PB) -> CID:
        """The CID of ``block`` (hashed here)."""
        if version == 0 and codec != DAG_PB:
            raise CidError("a CIDv0 is always dag-pb; raw blocks need CIDv1")
        return cls(version, codec, b"\x12\x20" + hashlib.sha256(block).digest())

    @classmethod
    def parse(cls, text: str) -> CID:
        """Read a CID from its text: ``Qm...`` (v0), or v1 in base32 ``b``, base58btc ``z``
        or base16 ``f``."""
        if not isinstance(text, str) or not text:
            raise CidError("empty CID")
        if len(text) == 46 and text.startswith("Qm"):
            return cls.from_bytes(b58decode(text))
        prefix, rest = text[0], text[1:]
        if prefix in "bB":
            raw = _b32decode(rest)
        elif prefix == "z":
            raw = b58decode(rest)
        elif prefix in "fF":
            try:
                raw = bytes.fromhex(rest)
            except ValueError:
                raise CidError(f"invalid base16 CID {text[:64]!r}") from None
        else:
            raise CidError(f"invalid CID {text[:64]!r}: unknown multibase prefix {prefix!r}")
        if raw[:1] == b"\x12":
            raise CidError(f"invalid CID {text[:64]!r}: a CIDv0 is written in base58btc (Qm...)")
        return cls.from_bytes(raw)

    @classmethod
    def from_bytes(cls, raw: bytes) -> CID:
        """Read a binary CID (as links hold them): a bare multihash is v0."""
        raw = bytes(raw)
        if len(raw) == 34 and raw[0] == SHA2_256 and raw[1] == SHA2_256_LENGTH:
            return cls(0, DAG_PB, raw)
        try:
            version, pos = read_varint(raw, 0)
            codec, pos = read_varint(raw, pos)
            hash_code, start = read_varint(raw, pos)
            length, start = read_varint(raw, start)
        except DagError:
            raise CidError("truncated CID") from None
        if version != 1:
            raise CidError(f"unsupported CID version {version}")
        if hash_code != SHA2_256 or length != SHA2_256_LENGTH or len(raw) != start + length:
            raise CidError(
                f"unsupported multihash 0x{hash_code:x} of {length} bytes (only sha2-256 here)"
            )
        if codec not in _CODEC_NAMES:
            raise CidError(f"unsupported codec 0x{codec:x} (only dag-pb and raw here)")
        return cls(1, codec, raw[pos:])

    def __bytes__(self) -> bytes:
        if self.version == 0:
            return self.multihash
        return b"\x01" + varint(self.codec) + self.multihash

    def __str__(self) -> str:
        if self.version == 0:
            return b58encode(self.multihash)
        return "b" + _b32encode(bytes(self))

    def __repr__(self) -> str:
        return f"CID({str(self)!r})"

    @property
    def digest(self) -> bytes:
        """The 32-byte sha2-256 digest."""
        return self.multihash[2:]

    @property
    def codec_name(self) -> str:
        return _CODEC_NAMES[self.codec]

    def to_v1(self) -> CID:
        return CID(1, self.codec, self.multihash)

    def matches(self, block: bytes) -> bool:
        """Whether ``block`` hashes to this CID."""
        return hashlib.sha256(block).digest() == self.digest


# -- dag-pb and UnixFS protobufs --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Link:
    """A dag-pb link: the child's CID, its name and its cumulative DAG size [bytes]."""

    cid: CID
    name: str = ""
    tsize: int = 0


@dataclass(frozen=True, slots=True)
class PBNode:
    """A decoded dag-pb node: its links and its data (None when absent)."""

    links: tuple[Link, ...]
    data: bytes | None


@dataclass(frozen=True, slots=True)
class UnixFSData:
    """A decoded UnixFS ``Data`` message (the data of a dag-pb node).

    Attributes
    ----------
    type : int
        ``FILE`` (2), ``DIRECTORY`` (1), ``UNIXFS_RAW`` (0), ...
    data : bytes
        The file bytes this node holds itself (leaves); empty for parents.
    filesize : int or None
        Total file bytes under this node [bytes].
    blocksizes : tuple of int
        File bytes under each child link, in link order [bytes].
    """

    type: int
    data: bytes = b""
    filesize: int | None = None
    blocksizes: tuple[int, ...] = ()

    @property
    def type_name(self) -> str:
        return _TYPE_NAMES.get(self.type, f"unknown ({self.type})")


def _field(tag: int, payload: bytes) -> bytes:
    return bytes([tag]) + varint(len(payload)) + payload


def encode_unixfs(
    type: int,
    data: bytes | None = None,
    filesize: int | None = None,
    blocksizes: Iterable[int] = (),
) -> bytes:
    """Encode a UnixFS ``Data`` message: Type (1), Data (2), filesize (3), blocksizes (4)."""
    out = [b"\x08", varint(type)]
    if data:
        out.append(_field(0x12, data))
    if filesize is not None:
        out += (b"\x18", varint(filesize))
    for size in blocksizes:
        out += (b"\x20", varint(size))
    return b"".join(out)


def encode_pbnode(links: Iterable[Link], data: bytes | None) -> bytes:
    """Encode a dag-pb node: every link (field 2) and then the data (field 1)."""
    out = []
    for link in links:
        name = link.name.encode("utf-8")
        body = b"".join(
            (_field(0x0A, bytes(link.cid)), _field(0x12, name), b"\x18", varint(link.tsize))
        )
        out.append(_field(0x12, body))
    if data is not None:
        out.append(_field(0x0A, data))
    return b"".join(out)


def _fields(buf: bytes | memoryview, what: str) -> Iterator[tuple[int, int | memoryview]]:
    """Walk protobuf fields: yields ``(number, value)``, an int for a varint (wire type 0),
    a memoryview for a length-delimited field (wire type 2)."""
    view = memoryview(buf)
    pos, end = 0, len(view)
    while pos < end:
        key, pos = read_varint(view, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = read_varint(view, pos)
            yield number, value
        elif wire == 2:
            length, pos = read_varint(view, pos)
            if pos + length > end:
                raise DagError(f"truncated {what}")
            yield number, view[pos : pos + length]
            pos += length
        else:
            raise DagError(f"unexpected protobuf wire type {wire} in {what}")


def decode_pbnode(block: bytes) -> PBNode:
    """Decode a dag-pb block; raises ``DagError`` when it is not one."""
    links: list[Link] = []
    data = None
    for number, value in _fields(block, "dag-pb node"):
        if number == 2 and isinstance(value, memoryview):
            links.append(_decode_link(value))
        elif number == 1 and isinstance(value, memoryview):
            data = bytes(value)
        else:
            raise DagError(f"unexpected field {number} in a dag-pb node")
    return PBNode(tuple(links), data)


def _decode_link(buf: memoryview) -> Link:
    cid = None
    name = ""
    tsize = 0
    for number, value in _fields(buf, "dag-pb link"):
        if number == 1 and isinstance(value, memoryview):
            try:
                cid = CID.from_bytes(bytes(value))
            except CidError as exc:
                raise DagError(f"bad link hash: {exc}") from None
        elif number == 2 and isinstance(value, memoryview):
            name = bytes(value).decode("utf-8", "replace")
        elif number == 3 and isinstance(value, int):
            tsize = value
        else:
            raise DagError(f"unexpected field {number} in a dag-pb link")
    if cid is None:
        raise DagError("a dag-pb link without a hash")
    return Link(cid, name, tsize)


def decode_unixfs(data: bytes | None) -> UnixFSData:
    """Decode the UnixFS ``Data`` message held by a dag-pb node."""
    if data is None:
        raise DagError("not a UnixFS node: the dag-pb node has no data")
    kind = None
    payload = b""
    filesize = None
    sizes: list[int] = []
    for number, value in _fields(data, "UnixFS data"):
        if number == 1 and isinstance(value, int):
            kind = value
        elif number == 2 and isinstance(value, memoryview):
            payload = bytes(value)
        elif number == 3 and isinstance(value, int):
            filesize = value
        elif number == 4 and isinstance(value, int):
            sizes.append(value)
        elif number == 4 and isinstance(value, memoryview):  # a packed encoder's blocksizes
            inner, pos = memoryview(value), 0
            while pos < len(inner):
                size, pos = read_varint(inner, pos)
                sizes.append(size)
        # hashType, fanout, mode and mtime (5-8) do not change the file's bytes
    if kind is None:
        raise DagError("not a UnixFS node: no type")
    return UnixFSData(kind, payload, filesize, tuple(sizes))


# -- importing files --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Block:
    """A block and its CID."""

    cid: CID
    data: bytes


@dataclass(frozen=True)
class ImportOptions:
    """How ``ipfs add`` turns bytes into a DAG.

    Parameters
    ----------
    cid_version : int
        0 (default) or 1.
    raw_leaves : bool, optional
        Leaves as raw blocks; default: true exactly when ``cid_version`` is 1.
    chunk_size : int
        Bytes per leaf (kubo's ``--chunker=size-N``), 1 .. 1,048,576 [bytes].
    max_links : int
        Links per parent node.
    """

    cid_version: int = 0
    raw_leaves: bool | None = None
    chunk_size: int = CHUNK_SIZE
    max_links: int = MAX_LINKS

    def __post_init__(self) -> None:
        if self.cid_version not in (0, 1):
            raise ValueError(f"cid_version must be 0 or 1, not {self.cid_version!r}")
        if not 1 <= self.chunk_size <= MAX_CHUNK_SIZE:
            raise ValueError(f"chunk_size must be 1 .. {MAX_CHUNK_SIZE:,} bytes")
        if self.max_links < 2:
            raise ValueError("max_links must be at least 2")

    @property
    def leaves_raw(self) -> bool:
        return self.cid_version == 1 if self.raw_leaves is None else self.raw_leaves


@dataclass(frozen=True)
class ImportResult:
    """What importing one file gave.

    Attributes
    ----------
    cid : CID
        The root's CID.
    size : int
        Cumulative DAG size: every block's bytes [bytes] (``ipfs add``'s ``Size``).
    filesize : int
        The file's own bytes [bytes].
    blocks : list of Block
        Every block, leaves first (empty when not kept).
    """

    cid: CID
    size: int
    filesize: int
    blocks: list[Block] = field(default_factory=list, repr=False)


_PB_FILE_HEADER = b"\x08\x02"


class FileImporter:
    """Turn a stream of bytes into kubo's balanced UnixFS DAG, block by block.

    ``write(data)`` any number of times, then ``finish()``. Each block is handed to ``emit``
    as soon as it is final (leaves first, a parent right after its last child), so a node can
    store a file of any size without holding it.

    Parameters
    ----------
    options : ImportOptions
    emit : callable, optional
        ``emit(block)``; by default blocks are dropped (only the CID is wanted).
    """

    def __init__(
        self, options: ImportOptions | None = None, emit: Callable[[Block], object] | None = None
    ) -> None:
        self.options = options or ImportOptions()
        self._emit = emit
        self._buffer = bytearray()
        # levels[0] holds pending leaves; levels[k] pending parents of depth k:
        # (link, file bytes under it)
        self._levels: list[list[tuple[Link, int]]] = [[]]
        self._filesize = 0
        self._chunks = 0
        self._finished = False
        self._pb_version = self.options.cid_version

    @property
    def filesize(self) -> int:
        """Bytes written so far [bytes]."""
        return self._filesize

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Add bytes to the file."""
        if self._finished:
            raise RuntimeError("write() after finish()")
        size = self.options.chunk_size
        buffer = self._buffer
        if not buffer and len(data) >= size:
            # the common case for big writes: slice chunks straight out of ``data``
            view = memoryview(data)
            whole = len(view) - len(view) % size
            for start in range(0, whole, size):
                self._leaf(bytes(view[start : start + size]))
            buffer += view[whole:]
            return
        buffer += data
        while len(buffer) >= size:
            chunk = bytes(buffer[:size])
            del buffer[:size]
            self._leaf(chunk)

    def finish(self) -> ImportResult:
        """Close the file: emit the remaining parents and return the root."""
        if self._finished:
            raise RuntimeError("finish() called twice")
        if self._buffer or self._chunks == 0:
            self._leaf(bytes(self._buffer))  # an empty file is one empty leaf
            self._buffer.clear()
        self._finished = True
        levels = self._levels
        depth = 0
        while True:
            pending = levels[depth]
            top = depth == len(levels) - 1
            if top and len(pending) == 1:
                link, _ = pending[0]
                return ImportResult(link.cid, link.tsize, self._filesize)
            if pending:
                self._parent(depth)
            depth += 1

    def _leaf(self, chunk: bytes) -> None:
        self._chunks += 1
        n = len(chunk)
        self._filesize += n
        if self.options.leaves_raw:
            block = chunk
            cid = CID(1, RAW, b"\x12\x20" + hashlib.sha256(block).digest())
            tsize = n
        else:
            if n:
                tail = b"\x18" + varint(n)
                unixfs_len = 2 + 1 + len(varint(n)) + n + len(tail)
                block = b"".join(
                    (b"\x0a", varint(unixfs_len), _PB_FILE_HEADER, b"\x12", varint(n), chunk, tail)
                )
            else:
                block = b"\x0a\x04\x08\x02\x18\x00"
            cid = CID(self._pb_version, DAG_PB, b"\x12\x20" + hashlib.sha256(block).digest())
            tsize = len(block)
        if self._emit is not None:
            self._emit(Block(cid, block))
        self._push(0, Link(cid, "", tsize), n)

    def _push(self, depth: int, link: Link, filesize: int) -> None:
        levels = self._levels
        if depth == len(levels):
            levels.append([])
        levels[depth].append((link, filesize))
        if len(levels[depth]) == self.options.max_links:
            self._parent(depth)

    def _parent(self, depth: int) -> None:
        """Gather the pending nodes of ``depth`` under one parent."""
        children = self._levels[depth]
        self._levels[depth] = []
        sizes = [size for _, size in children]
        total = sum(sizes)
        data = encode_unixfs(FILE, None, total, sizes)
        block = encode_pbnode([link for link, _ in children], data)
        cid = CID(self._pb_version, DAG_PB, b"\x12\x20" + hashlib.sha256(block).digest())
        tsize = len(block) + sum(link.tsize for link, _ in children)
        if self._emit is not None:
            self._emit(Block(cid, block))
        self._push(depth + 1, Link(cid, "", tsize), total)


def import_bytes(
    data: bytes | bytearray | memoryview, options: ImportOptions | None = None, *, keep: bool = True
) -> ImportResult:
    """Import a whole file held in memory.

    Parameters
    ----------
    data : bytes-like
        The file.
    options : ImportOptions, optional
        kubo's defaults when omitted.
    keep : bool
        Keep the blocks in the result (``False``: only the CID and sizes).
    """
    blocks: list[Block] = []
    importer = FileImporter(options, blocks.append if keep else None)
    importer.write(data)
    result = importer.finish()
    return ImportResult(result.cid, result.size, result.filesize, blocks)


def cid_of(
    data: bytes | bytearray | memoryview,
    *,
    cid_version: int = 0,
    raw_leaves: bool | None = None,
    chunk_size: int = CHUNK_SIZE,
) -> CID:
    """The CID ``ipfs add`` gives ``data`` with these options (nothing stored).

    Examples
    --------
    >>> str(cid_of(b"hello world\\n"))
    'QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o'
    """
    options = ImportOptions(cid_version=cid_version, raw_leaves=raw_leaves, chunk_size=chunk_size)
    return import_bytes(data, options, keep=False).cid


def verify(data: bytes | bytearray | memoryview, cid: CID | str) -> bool:
    """Whether ``data`` is a file whose import gives ``cid``.

    The options are read off the CID: a CIDv0 root means dag-pb leaves; a CIDv1 root is tried
    with raw leaves (kubo's ``cid-version=1``) and then with dag-pb leaves. Chunks are assumed
    to be kubo's default 262,144 bytes.
    """
    cid = CID.parse(cid) if isinstance(cid, str) else cid
    if cid.version == 0:
        return cid_of(data) == cid
    if cid.codec == RAW:
        return cid.matches(bytes(data))
    return any(cid_of(data, cid_version=1, raw_leaves=raw) == cid for raw in (True, False))


def directory_block(
    entries: Iterable[tuple[str, CID, int]], *, cid_version: int = 0
) -> tuple[Block, int]:
    """A UnixFS directory over ``(name, cid, cumulative size)`` entries, links sorted by name.

    Returns
    -------
    (Block, int)
        The directory block and its cumulative DAG size [bytes].
    """
    links = sorted(
        (Link(cid, name, tsize) for name, cid, tsize in entries), key=lambda x: x.name.encode()
    )
    block = encode_pbnode(links, encode_unixfs(DIRECTORY))
    cid = CID.of_block(block, version=cid_version)
    return Block(cid, block), len(block) + sum(link.tsize for link in links)

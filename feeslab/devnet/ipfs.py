"""The devnet's IPFS node: the storage API subset of kubo's HTTP RPC, on a durable blockstore.

``POST /api/v0/<command>?arg=...&<flag>=...`` with HTTP Basic ``key:secret``:

=================  ===========================================================================
``add``            multipart/form-data, one part per file (``application/x-directory`` parts and
                   ``dir/name`` file names make directories); NDJSON ``{"Name","Hash","Size"}``
                   per file, then per directory. Flags: ``cid-version``, ``raw-leaves``,
                   ``only-hash``, ``pin`` (default true), ``wrap-with-directory``,
                   ``progress`` (``{"Name","Bytes"}`` events), ``chunker=size-N``
``cat``            the bytes of one or more files; ``offset``, ``length``
``object/get``     ``{"Links": [{"Name","Hash","Size"}], "Data": ...}``; ``data-encoding``
                   ``text`` (default) or ``base64``
``pin/add``        ``{"Pins": [...]}``; ``recursive`` (default true)
``pin/rm``         ``{"Pins": [...]}``; ``recursive`` (default true)
``pin/ls``         ``{"Keys": {cid: {"Type"}}}``, or NDJSON ``{"Cid","Type"}`` with ``stream``;
                   ``type`` = all (default), recursive, direct, indirect
``block/get``      a block's bytes
``block/stat``     ``{"Key","Size"}``
``version``        ``{"Version","Commit","Repo","System","Golang"}``
=================  ===========================================================================

Answers follow kubo (go-ipfs-cmds): 401 without the right credentials; ``OPTIONS`` is a
preflight (200); any other method than ``POST`` is 405 with ``Allow: OPTIONS, POST``; an unknown
command 404 (``404 page not found``); a real kubo command outside the subset 403; a bad flag
or a malformed argument 400 and a failed command 500, both with
``{"Message", "Code", "Type": "error"}`` (Code 1 for the caller's mistakes, 0 otherwise).
Streaming answers (``add``, ``cat``, ``block/get``, ``pin/ls`` with ``stream``) announce
``Trailer: X-Stream-Error``: once their status 200 is sent, a failure ends the chunked body
with that trailer (NDJSON answers also carry it as a last error object). JSON is written like
Go's ``encoding/json``, so bytes match kubo's (``<`` as ``\\u003c``, control characters as
``\\u00XX``, invalid UTF-8 as U+FFFD).

CIDs are kubo's defaults (see ``feeslab.unixfs``). Blocks live in a ``Blockstore``; nothing is
acknowledged (an ``add`` line, a pin) before it is on disk and fsynced. The storage API costs
no credits: the interface and the reference list no IPFS costs.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import contextlib
import logging
import platform
import re
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote_plus

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from feeslab import unixfs
from feeslab.devnet import _store, auth
from feeslab.devnet._blockstore import BlockCorrupt, BlockNotFound, Blockstore
from feeslab.devnet._multipart import MultipartError, MultipartParser, boundary_of
from feeslab.devnet._trailers import TRAILERS
from feeslab.unixfs import CID, CidError, DagError

log = logging.getLogger(__name__)

KUBO_VERSION = "0.27.0"  # the last kubo whose object/get answers as the interface shows
REPO_VERSION = "15"
STREAM_ERROR = "X-Stream-Error"
BATCH_BYTES = 1 << 20  # body bytes handed to a worker thread at a time [bytes]
MAX_ERROR_LENGTH = 1000  # a trailer carries at most this much of a message [characters]

# kubo's commands outside the subset: answered 403 (the service forbids them), not 404
FORBIDDEN = frozenset(
    """bitswap/ledger bitswap/reprovide bitswap/stat bitswap/wantlist block/put block/rm
    bootstrap bootstrap/add bootstrap/list bootstrap/rm cid/base32 cid/bases cid/codecs
    cid/format cid/hashes commands config config/edit config/profile/apply config/replace
    config/show dag/export dag/get dag/import dag/put dag/resolve dag/stat dht/findpeer
    dht/findprovs dht/get dht/provide dht/put dht/query diag/cmds diag/profile diag/sys dns
    files/chcid files/cp files/flush files/ls files/mkdir files/mv files/read files/rm
    files/stat files/write filestore/dups filestore/ls filestore/verify get id key/export
    key/gen key/import key/list key/rename key/rm key/rotate log/level log/ls log/tail ls
    multibase/decode multibase/encode multibase/list multibase/transcode name/inspect
    name/publish name/pubsub/cancel name/pubsub/state name/pubsub/subs name/resolve
    object/data object/diff object/links object/new object/patch/add-link
    object/patch/append-data object/patch/rm-link object/patch/set-data object/put
    object/stat p2p/close p2p/forward p2p/listen p2p/ls p2p/stream/close p2p/stream/ls
    pin/remote/add pin/remote/ls pin/remote/rm pin/remote/service/add
    pin/remote/service/ls pin/remote/service/rm pin/update pin/verify ping pubsub/ls
    pubsub/peers pubsub/pub pubsub/sub refs refs/local repo/fsck repo/gc repo/ls
    repo/migrate repo/stat repo/verify repo/version resolve routing/findpeer
    routing/findprovs routing/get routing/provide routing/put shutdown stats/bitswap
    stats/bw stats/dht stats/provide stats/repo swarm/addrs swarm/addrs/listen
    swarm/addrs/local swarm/connect swarm/disconnect swarm/filters swarm/filters/add
    swarm/filters/rm swarm/peering/add swarm/peering/ls swarm/peering/rm swarm/peers
    swarm/resources tar/add tar/cat urlstore/add version/deps""".split()  # noqa: SIM905 (a word list)
)


# -- Go's encoding/json -----------------------------------------------------------------------

_GO_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
for _code in range(0x20):
    _GO_ESCAPES.setdefault(chr(_code), f"\\u{_code:04x}")
_GO_ESCAPE = re.compile('[\\x00-\\x1f"\\\\<>&\u2028\u2029]')


def _go_replace(error: UnicodeDecodeError) -> tuple[str, int]:
    # Go turns each byte of invalid UTF-8 into its own U+FFFD
    return "\ufffd" * (error.end - error.start), error.end


codecs.register_error("feeslab-go", _go_replace)


def go_text(data: bytes) -> str:
    """Bytes as Go's ``string(data)`` reads in JSON: invalid UTF-8 bytes become U+FFFD."""
    return data.decode("utf-8", "feeslab-go")


def _go_string(text: str) -> str:
    return '"' + _GO_ESCAPE.sub(lambda m: _GO_ESCAPES[m.group()], text) + '"'


def _go_value(value: Any) -> str:
    if isinstance(value, str):
        return _go_string(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_go_string(k)}:{_go_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_go_value(v) for v in value) + "]"
    raise TypeError(f"cannot encode {type(value).__name__}")


def go_json(value: Any) -> bytes:
    """``value`` as Go's ``json.Encoder`` writes it (keys in the given order, then a newline)."""
    return (_go_value(value) + "\n").encode("utf-8")


# -- errors and flags -------------------------------------------------------------------------


class CommandError(Exception):
    """A command that failed: kubo's ``{"Message", "Code", "Type": "error"}``.

    Code 1 (the caller's mistake) answers 400, code 0 answers 500.
    """

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    @property
    def status(self) -> int:
        return 400 if self.code == 1 else 500

    def body(self) -> dict[str, Any]:
        return {"Message": self.message, "Code": self.code, "Type": "error"}


def _client_error(message: str) -> CommandError:
    return CommandError(message, code=1)


def _conversion_error(raw: str, kind: str, name: str) -> CommandError:
    return _client_error(f'could not convert value "{raw}" to type "{kind}" (for option "-{name}")')


def log_disconnect(scope: Any) -> None:
    """One line (no traceback) for a client that hung up before its upload was complete."""
    client = scope.get("client")
    where = f"{client[0]}:{client[1]}" if client else "a client"
    log.info("%s disconnected before its upload ended (%s %s)", where, scope.get("method"),
             str(scope.get("path", ""))[:80])


def _error_response(error: CommandError) -> Response:
    return Response(go_json(error.body()), error.status, media_type="application/json")


_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


class Flags:
    """A command's query flags, converted as go-ipfs-cmds converts them (errors are 400)."""

    def __init__(self, items: list[tuple[str, str]]) -> None:
        self._values: dict[str, list[str]] = {}
        for key, value in items:
            if key != "arg":
                self._values.setdefault(key, []).append(value)

    def _raw(self, name: str, aliases: tuple[str, ...]) -> str | None:
        given = [n for n in (name, *aliases) if n in self._values]
        if not given:
            return None
        values = [v for n in given for v in self._values[n]]
        if len(values) > 1:
            raise _client_error(f'option "{name}" given more than once')
        return values[0]

    def bool(self, name: str, default: bool, *aliases: str) -> bool:
        raw = self._raw(name, aliases)
        if raw is None:
            return default
        if raw == "" or raw in _TRUE:
            return True  # a bare flag (?progress) means true
        if raw in _FALSE:
            return False
        raise _conversion_error(raw, "bool", name)

    def int(self, name: str, default: int | None, *aliases: str) -> int | None:
        raw = self._raw(name, aliases)
        if raw is None:
            return default
        if not re.fullmatch(r"[+-]?\d{1,19}", raw):
            raise _conversion_error(raw, "int", name)
        return int(raw)

    def str(self, name: str, default: str | None, *aliases: str) -> str | None:
        raw = self._raw(name, aliases)
        return default if raw is None else raw


def _json_only(flags: Flags) -> None:
    encoding = flags.str("encoding", "json")
    if encoding != "json":
        raise _client_error(f'encoding "{encoding}" is not supported here: use encoding=json')


def _one_arg(args: list[str], name: str) -> str:
    if not args:
        raise CommandError(f'argument "{name}" is required')
    if len(args) > 1:
        raise _client_error(f"expected 1 argument, got {len(args)}")
    return args[0]


def _some_args(args: list[str], name: str) -> list[str]:
    if not args:
        raise CommandError(f'argument "{name}" is required')
    return args


# -- the node ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _FileNode:
    """A UnixFS file node read from its block: its own bytes and its children."""

    data: bytes
    children: tuple[tuple[CID, int], ...]  # (child, file bytes under it)

    @property
    def size(self) -> int:
        return len(self.data) + sum(size for _, size in self.children)


class IpfsNode:
    """An IPFS node over one blockstore: paths, files, DAG walks and pins.

    Every method is blocking (disk I/O); the endpoints run them on worker threads.

    Parameters
    ----------
    blockstore : Blockstore
    temporary : bool
        Remove the blockstore's directory on ``close()`` (a throwaway store).
    """

    def __init__(self, blockstore: Blockstore, *, temporary: bool = False) -> None:
        self.blocks = blockstore
        self.temporary = temporary

    @classmethod
    def open(cls, directory: str | Path | None = None) -> IpfsNode:
        """A node on ``directory``, or on the default one.

        The default is ``<cache>/devnet/ipfs`` (``FEESLAB_CACHE_DIR`` moves ``<cache>``), shared
        by every devnet on this machine; with ``FEESLAB_DEVNET_CACHE=0`` it is a temporary
        directory removed when the devnet stops.
        """
        if directory is not None:
            return cls(Blockstore(directory))
        cache = _store.store_dir()
        if cache is None:
            return cls(Blockstore(tempfile.mkdtemp(prefix="feeslab-ipfs-")), temporary=True)
        return cls(Blockstore(cache / "ipfs"))

    @property
    def root(self) -> Path:
        return self.blocks.root

    def close(self) -> None:
        self.blocks.close()
        if self.temporary:
            shutil.rmtree(self.blocks.root, ignore_errors=True)

    def __repr__(self) -> str:
        return f"<IpfsNode {self.blocks.root}>"

    # -- blocks and nodes --------------------------------------------------------------------

    def get(self, cid: CID) -> bytes:
        try:
            return self.blocks.get(cid)
        except (BlockNotFound, BlockCorrupt) as exc:
            raise CommandError(str(exc)) from None

    def pbnode(self, cid: CID) -> unixfs.PBNode:
        if cid.codec != unixfs.DAG_PB:
            raise CommandError(f"{cid} is a raw block, not a dag-pb node")
        try:
            return unixfs.decode_pbnode(self.get(cid))
        except DagError as exc:
            raise CommandError(f"failed to decode Protocol Buffers: {exc}") from None

    def _unixfs(self, cid: CID, node: unixfs.PBNode) -> unixfs.UnixFSData:
        try:
            return unixfs.decode_unixfs(node.data)
        except DagError as exc:
            raise CommandError(f"{cid} is not a UnixFS node: {exc}") from None

    def file_node(self, cid: CID) -> _FileNode:
        """``cid`` read as a UnixFS file node; a directory or another kind is an error."""
        if cid.codec == unixfs.RAW:
            return _FileNode(self.get(cid), ())
        node = self.pbnode(cid)
        data = self._unixfs(cid, node)
        if data.type in (unixfs.DIRECTORY, unixfs.HAMT_SHARD):
            raise CommandError("this dag node is a directory")
        if data.type not in (unixfs.FILE, unixfs.UNIXFS_RAW):
            raise CommandError(f"{cid} is a UnixFS {data.type_name}, not a file")
        if len(data.blocksizes) != len(node.links):
            raise CommandError(
                f"{cid}: {len(node.links)} links but {len(data.blocksizes)} block sizes"
            )
        sizes = zip(node.links, data.blocksizes, strict=True)
        children = tuple((link.cid, size) for link, size in sizes)
        return _FileNode(data.data, children)

    def links(self, cid: CID) -> list[CID]:
        """The CIDs ``cid`` links to (none for a raw block)."""
        if cid.codec == unixfs.RAW:
            self.get(cid)  # present and intact
            return []
        return [link.cid for link in self.pbnode(cid).links]

    def walk(self, root: CID) -> Iterator[CID]:
        """Every CID of the DAG under ``root``, each once, depth first; missing blocks fail."""
        seen: set[bytes] = set()
        stack = [root]
        while stack:
            cid = stack.pop()
            if cid.multihash + bytes([cid.codec]) in seen:
                continue
            seen.add(cid.multihash + bytes([cid.codec]))
            yield cid
            stack.extend(reversed(self.links(cid)))

    # -- paths ------------------------------------------------------------------------------

    def resolve(self, path: str) -> CID:
        """A ``/ipfs/<cid>/a/b`` or ``<cid>/a/b`` path to the CID it names."""
        text = path.strip()
        segments = [p for p in text.split("/") if p]
        if not segments or (text.startswith("/") and len(segments) < 2):
            # boxo's path.ErrInsufficientComponents: "", "/", "/ipfs/", "/ipfs//"
            raise _client_error(f'invalid path "{path}": path does not have enough components')
        if text.startswith("/ipns/"):
            raise CommandError(f'could not resolve name "{text}": IPNS is not served here')
        if text.startswith("/ipfs/"):
            text = text[len("/ipfs/") :]
        elif text.startswith("/"):
            raise _client_error(f'invalid path "{path}": not an /ipfs/ path')
        first, *names = [p for p in text.split("/") if p]
        if not first:
            raise _client_error(f'invalid path "{path}": no CID')
        try:
            cid = CID.parse(first)
        except CidError as exc:
            raise _client_error(f'invalid path "{path}": {exc}') from None
        for name in names:
            node = self.pbnode(cid)
            data = self._unixfs(cid, node)
            if data.type != unixfs.DIRECTORY:
                raise CommandError(f'no link named "{name}" under {cid}')
            match = next((link for link in node.links if link.name == name), None)
            if match is None:
                raise CommandError(f'no link named "{name}" under {cid}')
            cid = match.cid
        return cid

    # -- files ------------------------------------------------------------------------------

    def read(self, cid: CID, offset: int = 0, length: int | None = None) -> Iterator[bytes]:
        """The bytes of file ``cid`` from ``offset``, at most ``length`` of them, in pieces."""
        end = None if length is None else offset + length
        yield from self._read(cid, offset, end)

    def _read(self, cid: CID, start: int, end: int | None) -> Iterator[bytes]:
        node = self.file_node(cid)
        position = 0
        if node.data:
            piece = node.data[start:end]
            if piece:
                yield piece
            position = len(node.data)
        for child, size in node.children:
            if end is not None and position >= end:
                return
            if position + size > start:
                yield from self._read(
                    child, max(0, start - position), None if end is None else end - position
                )
            position += size

    # -- pins -------------------------------------------------------------------------------

    def pin(self, cids: list[CID], *, recursive: bool = True) -> list[str]:
        """Pin ``cids`` (all their blocks must be here); returns them as text."""
        for cid in cids:
            if recursive:
                for _ in self.walk(cid):
                    pass
            else:
                self.get(cid)
        names = [str(cid) for cid in cids]

        def update(pins: dict[str, dict[str, None]]) -> None:
            for name in names:
                if recursive:
                    pins["direct"].pop(name, None)
                    pins["recursive"].setdefault(name)
                elif name in pins["recursive"]:
                    raise CommandError(f"pin: {name} already pinned recursively")
                else:
                    pins["direct"].setdefault(name)

        self.blocks.pins.change(update)
        return names

    def unpin(self, cids: list[CID], *, recursive: bool = True) -> list[str]:
        """Remove the pins of ``cids``; every one must be pinned (else nothing changes)."""
        names = [str(cid) for cid in cids]

        def update(pins: dict[str, dict[str, None]]) -> None:
            for name in names:
                if name in pins["recursive"]:
                    if not recursive:
                        raise CommandError(f"{name} is pinned recursively")
                elif name not in pins["direct"]:
                    raise CommandError(f"{name} is not pinned or pinned indirectly")
            for name in names:
                pins["recursive"].pop(name, None)
                pins["direct"].pop(name, None)

        self.blocks.pins.change(update)
        return names

    def pinned(self, kind: str = "all") -> Iterator[tuple[str, str]]:
        """``(cid, type)`` of every pin of ``kind`` (all, recursive, direct, indirect)."""
        pins = self.blocks.pins.snapshot()
        listed: set[str] = set()
        if kind in ("all", "recursive"):
            for name in pins["recursive"]:
                listed.add(name)
                yield name, "recursive"
        if kind in ("all", "direct"):
            for name in pins["direct"]:
                if name not in listed:
                    listed.add(name)
                    yield name, "direct"
        if kind in ("all", "indirect"):
            roots = set(pins["recursive"])
            for root in pins["recursive"]:
                for cid in self.walk(CID.parse(root)):
                    name = str(cid)
                    if name not in roots and name not in listed:
                        listed.add(name)
                        yield name, "indirect"

    def pin_type(self, cid: CID) -> str | None:
        """How ``cid`` is pinned: recursive, direct, ``indirect through <root>``, or None."""
        name = str(cid)
        pins = self.blocks.pins.snapshot()
        if name in pins["recursive"]:
            return "recursive"
        if name in pins["direct"]:
            return "direct"
        for root in pins["recursive"]:
            if any(str(c) == name for c in self.walk(CID.parse(root))):
                return f"indirect through {root}"
        return None


# -- add --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AddOptions:
    """The flags of one ``add`` request."""

    importer: unixfs.ImportOptions
    only_hash: bool = False
    pin: bool = True
    wrap: bool = False
    progress: bool = False

    @classmethod
    def from_flags(cls, flags: Flags) -> AddOptions:
        cid_version = flags.int("cid-version", 0)
        if cid_version not in (0, 1):
            raise _client_error(f"unknown CID version: {cid_version}")
        raw_leaves = flags.bool("raw-leaves", cid_version == 1)
        chunker = flags.str("chunker", "size-262144", "s") or "size-262144"
        match = re.fullmatch(r"size-(\d{1,8})", chunker)
        if match is None:
            raise _client_error(
                f'chunker "{chunker}" is not supported here (only size-<bytes>, kubo\'s default '
                "size-262144)"
            )
        chunk_size = int(match.group(1))
        if not 1 <= chunk_size <= unixfs.MAX_CHUNK_SIZE:
            raise _client_error(
                f"chunker parameters may not exceed the maximum chunk size of "
                f"{unixfs.MAX_CHUNK_SIZE} (and must be at least 1)"
            )
        hash_name = flags.str("hash", "sha2-256")
        if hash_name != "sha2-256":
            raise _client_error(f'hash "{hash_name}" is not supported here (only sha2-256)')
        for name, alias in (("trickle", "t"), ("inline", ""), ("nocopy", ""), ("fscache", ""),
                            ("preserve-mode", ""), ("preserve-mtime", "")):
            if flags.bool(name, False, *filter(None, [alias])):
                raise _client_error(f"{name}=true is not supported here: it would change CIDs")
        for name in ("to-files", "mode", "mtime"):
            if flags.str(name, None) is not None:
                raise _client_error(f"{name} is not supported here")
        return cls(
            importer=unixfs.ImportOptions(
                cid_version=cid_version, raw_leaves=raw_leaves, chunk_size=chunk_size
            ),
            only_hash=flags.bool("only-hash", False, "n"),
            pin=flags.bool("pin", True),
            wrap=flags.bool("wrap-with-directory", False, "w"),
            progress=flags.bool("progress", False, "p"),
        )


@dataclass
class _Dir:
    entries: dict[str, _Dir | tuple[CID, int]] = field(default_factory=dict)


def _clean_path(raw: str) -> str:
    """A part's file name as kubo reads it (query-unescaped), as a relative path."""
    name = unquote_plus(raw)
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise _client_error(f'file name "{raw}" leaves its directory (..)')
    return "/".join(parts)


class AddSession:
    """One ``add`` request: multipart body in, blocks to the store, NDJSON lines out.

    Blocking: ``feed`` and ``close`` run on a worker thread, one call at a time.
    """

    def __init__(self, node: IpfsNode, options: AddOptions, boundary: str) -> None:
        self.node = node
        self.options = options
        self.parser = MultipartParser(boundary)
        self.tree = _Dir()
        self.lines: list[bytes] = []
        self._file: unixfs.FileImporter | None = None
        self._path = ""
        self._reported = 0
        self._writer = node.blocks.writer()

    def feed(self, data: bytes) -> list[bytes]:
        try:
            events = self.parser.feed(data)
        except MultipartError as exc:
            raise _client_error(str(exc)) from None
        for kind, value in events:
            if kind == "data":
                if self._file is not None:
                    self._file.write(value)
            elif kind == "part":
                self._start(value)
            else:
                self._end()
        if self.options.progress and self._file is not None:
            self._progress()
        return self._take()

    def close(self) -> list[bytes]:
        try:
            self.parser.close()
        except MultipartError as exc:
            raise _client_error(str(exc)) from None
        if self.parser.parts == 0:
            raise _client_error("file argument 'path' is required")
        self._finish_directories()
        return self._take()

    def _take(self) -> list[bytes]:
        lines, self.lines = self.lines, []
        return lines

    def _emit(self, **fields: Any) -> None:
        self.lines.append(go_json(fields))

    def _progress(self) -> None:
        assert self._file is not None
        if self._file.filesize != self._reported:
            self._reported = self._file.filesize
            self._emit(Name=self._path, Bytes=self._reported)

    def _store(self, block: unixfs.Block) -> None:
        self._writer.put(block.cid, block.data)

    def _sync(self) -> None:
        self._writer.flush()

    def abandon(self) -> None:
        """The request ended early: let the writes in flight finish, acknowledge nothing."""
        self._writer.abandon()

    def _start(self, part: Any) -> None:
        path = _clean_path(part.filename or "")
        if part.content_type == "application/x-directory":
            if path:
                self._directory(path.split("/"), create=True)
            return
        if part.content_type == "application/symlink":
            raise _client_error(f'"{path}": symlinks are not supported here')
        sink = None if self.options.only_hash else self._store
        self._file = unixfs.FileImporter(self.options.importer, sink)
        self._path = path
        self._reported = 0
        if self.options.progress:
            self._emit(Name=path, Bytes=0)

    def _directory(self, names: list[str], *, create: bool) -> _Dir:
        here = self.tree
        for name in names:
            entry = here.entries.get(name)
            if entry is None:
                if not create:
                    break
                entry = here.entries[name] = _Dir()
            if not isinstance(entry, _Dir):
                raise _client_error(f'"{name}" is both a file and a directory')
            here = entry
        return here

    def _end(self) -> None:
        if self._file is None:
            return  # a directory part
        importer, self._file = self._file, None
        result = importer.finish()
        if self.options.progress and importer.filesize != self._reported:
            self._emit(Name=self._path, Bytes=importer.filesize)
        name = self._path or str(result.cid)
        *parents, leaf = name.split("/")
        folder = self._directory(parents, create=True)
        if leaf in folder.entries:
            raise _client_error(f'file "{name}" is given more than once')
        folder.entries[leaf] = (result.cid, result.size)
        self._sync()
        if not parents and not self.options.wrap:
            self._pin(result.cid)
        self._emit(Name=name, Hash=str(result.cid), Size=str(result.size))

    def _pin(self, cid: CID) -> None:
        if self.options.pin and not self.options.only_hash:
            self.node.pin([cid])

    def _finish_directories(self) -> None:
        version = self.options.importer.cid_version

        def build(folder: _Dir, path: str) -> tuple[CID, int]:
            entries = []
            for name in sorted(folder.entries):
                entry = folder.entries[name]
                if isinstance(entry, _Dir):
                    child = f"{path}/{name}" if path else name
                    cid, size = build(entry, child)
                    if not path and not self.options.wrap:
                        self._sync()
                        self._pin(cid)
                    self._emit(Name=child, Hash=str(cid), Size=str(size))
                else:
                    cid, size = entry
                entries.append((name, cid, size))
            block, size = unixfs.directory_block(entries, cid_version=version)
            if not self.options.only_hash:
                self._store(block)
            return block.cid, size

        root, size = build(self.tree, "")
        self._sync()
        if self.options.wrap:
            self._pin(root)
            self._emit(Name="", Hash=str(root), Size=str(size))


# -- streaming answers ------------------------------------------------------------------------


class StreamAnswer(Response):
    """A kubo streaming answer: status 200 with what is ready, the rest as it comes.

    An error raised by ``rest`` after the status went out ends the chunked body with an
    ``X-Stream-Error`` trailer (and, for NDJSON, a last error object). Where the server cannot
    send trailers the connection is dropped instead, so a client never mistakes a cut answer
    for a whole one.
    """

    def __init__(
        self,
        first: list[bytes],
        rest: AsyncIterator[list[bytes]] | None,
        *,
        media_type: str,
        headers: dict[str, str],
        ndjson: bool,
    ) -> None:
        # no Response.__init__: there is no body to measure, and no Content-Length to send
        self.status_code = 200
        self.media_type = media_type
        self.background = None
        fields = {**headers, "Content-Type": media_type, "Trailer": STREAM_ERROR}
        self.raw_headers = [(k.lower().encode(), v.encode()) for k, v in fields.items()]
        self._first = first
        self._rest = rest
        self._ndjson = ndjson

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        trailers = TRAILERS in scope.get("extensions", {})
        await send({"type": "http.response.start", "status": 200,
                    "headers": self.raw_headers, "trailers": trailers})
        error = None
        try:
            await send({"type": "http.response.body", "body": b"".join(self._first),
                        "more_body": True})
            if self._rest is not None:
                async for pieces in self._rest:
                    for piece in pieces:
                        await send({"type": "http.response.body", "body": piece, "more_body": True})
        except CommandError as exc:
            error = exc.message
        except ClientDisconnect:
            log_disconnect(scope)
            error = "the client went away"
        except Exception as exc:  # a disk error, or a bug: still end the answer properly
            log.warning("IPFS stream failed after it began", exc_info=True)
            error = str(exc) or type(exc).__name__
        finally:
            if self._rest is not None:
                with contextlib.suppress(Exception):
                    await self._rest.aclose()  # type: ignore[attr-defined]
        if error is not None and not trailers:
            raise RuntimeError(f"stream failed after it began: {error}")
        tail = b""
        if error is not None and self._ndjson:
            tail = go_json(CommandError(error).body())
        await send({"type": "http.response.body", "body": tail, "more_body": False})
        if trailers:
            fields = []
            if error is not None:
                text = " ".join(error.split())[:MAX_ERROR_LENGTH]
                fields = [(STREAM_ERROR.lower().encode(), text.encode("utf-8", "replace"))]
            await send({"type": TRAILERS, "headers": fields, "more_trailers": False})


async def _stream(pieces: Iterator[bytes], limit: int = BATCH_BYTES) -> AsyncIterator[list[bytes]]:
    """Pull a blocking iterator on worker threads, about ``limit`` bytes per trip."""

    failed: list[Exception] = []

    def batch() -> list[bytes]:
        out, size = [], 0
        try:
            for piece in pieces:
                out.append(piece)
                size += len(piece)
                if size >= limit:
                    break
        except Exception as exc:
            if not out:
                raise
            failed.append(exc)  # send what was read first, then fail
        return out

    while True:
        if failed:
            raise failed[0]
        got = await run_in_threadpool(batch)
        if not got:
            return
        yield got


async def _start_stream(
    rest: AsyncIterator[list[bytes]], *, media_type: str, headers: dict[str, str], ndjson: bool
) -> Response:
    """Wait for the first output: errors before it answer with their status."""
    first: list[bytes] = []
    try:
        while not first:
            first = await anext(rest)
    except StopAsyncIteration:
        return StreamAnswer(first, None, media_type=media_type, headers=headers, ndjson=ndjson)
    return StreamAnswer(first, rest, media_type=media_type, headers=headers, ndjson=ndjson)


def _ndjson_stream(rest: AsyncIterator[list[bytes]]) -> Any:
    return _start_stream(
        rest, media_type="application/json", headers={"X-Chunked-Output": "1"}, ndjson=True
    )


# -- commands ---------------------------------------------------------------------------------


def _json(value: Any) -> Response:
    return Response(go_json(value), 200, media_type="application/json")


async def _version(request: Request, node: IpfsNode, args: list[str], flags: Flags) -> Response:
    _json_only(flags)
    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    python = ".".join(map(str, sys.version_info[:3]))
    return _json(
        {
            "Version": KUBO_VERSION,
            "Commit": "feeslab-devnet",
            "Repo": REPO_VERSION,
            "System": f"{machine}/{sys.platform}",
            "Golang": f"none (feeslab devnet on Python {python})",
        }
    )


async def _add(request: Request, node: IpfsNode, args: list[str], flags: Flags) -> Response:
    _json_only(flags)
    options = AddOptions.from_flags(flags)
    boundary = boundary_of(request.headers.get("content-type", ""))
    if boundary is None:
        raise _client_error("file argument 'path' is required")
    try:
        session = AddSession(node, options, boundary)
    except MultipartError as exc:
        raise _client_error(str(exc)) from None

    async def lines() -> AsyncIterator[list[bytes]]:
        pending: list[bytes] = []
        size = 0
        # one batch is hashed and written on a worker thread while the next one arrives
        running: asyncio.Future | None = None
        done = False
        try:
            async for piece in request.stream():
                pending.append(piece)
                size += len(piece)
                if size >= BATCH_BYTES:
                    data, pending, size = b"".join(pending), [], 0
                    if running is not None:
                        yield await running
                    running = asyncio.ensure_future(run_in_threadpool(session.feed, data))
            if running is not None:
                previous, running = running, None
                yield await previous
            if pending:
                yield await run_in_threadpool(session.feed, b"".join(pending))
            yield await run_in_threadpool(session.close)
            done = True
        finally:
            if running is not None:  # the thread must finish before the session is dropped
                with contextlib.suppress(Exception):
                    await running
            if not done:
                await run_in_threadpool(session.abandon)

    return await _ndjson_stream(lines())


def _cat_plan(node: IpfsNode, paths: list[str], offset: int, length: int | None):
    """Resolve every path and size every file before anything is sent."""
    plan = []
    total = 0
    for path in paths:
        cid = node.resolve(path)
        size = node.file_node(cid).size
        if offset >= size:
            offset -= size
            continue
        take = size - offset if length is None else min(size - offset, length - total)
        if take <= 0:
            break
        plan.append((cid, offset, take))
        total += take
        offset = 0
    return plan, total


async def _cat(request: Request, node: IpfsNode, args: list[str], flags: Flags) -> Response:
    paths = _some_args(args, "ipfs-path")
    offset = flags.int("offset", 0)
    length = flags.int("length", -1, "l")
    if offset < 0:
        raise _client_error("cannot specify negative offset")
    if length is not None and length < -1:
        raise _client_error("cannot specify negative length")
    length = None if length == -1 else length
    plan, total = await run_in_threadpool(_cat_plan, node, paths, offset, length)

    def pieces() -> Iterator[bytes]:
        for cid, start, take in plan:
            yield from node.read(cid, start, take)

    headers = {"X-Stream-Output": "1", "X-Content-Length": str(total)}
    return await _start_stream(
        _stream(pieces()), media_type="text/plain", headers=headers, ndjson=False
    )


async def _object_get(request: Request, node: IpfsNode, args: list[str], flags: Flags) -> Response:
    _json_only(flags)
    path = _one_arg(args, "key")
    encoding = flags.str("data-encoding", "text")
    if encoding not in ("text", "base64"):
        raise _client_error(f'unknown data field encoding "{encoding}" (text or base64)')

    def read() -> dict[str, Any]:
        cid = node.resolve(path)
        if cid.codec != unixfs.DAG_PB:
            raise CommandError(f"{cid} is a raw block: object get needs a dag-pb node")
        pb = node.pbnode(cid)
        data = pb.data or b""
        return {
            "Links": [
                {"Name": link.name, "Hash": str(link.cid), "Size": link.tsize} for link in pb.links
            ],
            "Data": go_text(data) if encoding == "text" else base64.b64encode(data).decode(),
        }

    return _json(await run_in_threadpool(read))


def _resolve_all(node: IpfsNode, paths: list[str]) -> list[CID]:
    return [node.resolve(path) for path in paths]


async def _pin_add(request: Request, node: IpfsNode, args: list[str], flags: Flags) -> Response:
    _json_only(flags)
    paths = _some_args(args, "ipfs-path")
    recursive = flags.bool("recursive", True, "r")
    flags.bool("progress", False)  # accepted; pins complete before the answer either way

    def run() -> list[str]:
        return node.pin(_resolve_all(node, paths), recursive=recursive)

    return _json({"Pins": await run_in_threadpool(run)})


async def _pin_rm(request: Request, node: IpfsNode, args: list[str], flags: Flags) -> Response:
    _json_only(flags)
    paths = _some_args(args, "ipfs-path")
    recursive = flags.bool("recursive", True, "r")

    def run() -> list[str]:
        return node.unpin(_resolve_all(node, paths), recursive=recursive)

    return _json({"Pins": await run_in_threadpool(run)})


PIN_LS_TYPES = ("all", "direct", "indirect", "recursive")


async def _pin_ls(request: Request, node: IpfsNode, args: list[str], flags: Flags) -> Response:
    _json_only(flags)
    kind = flags.str("type", "all", "t")
    if kind not in PIN_LS_TYPES:
        raise _client_error(
            f"invalid type '{kind}', must be one of {{direct, indirect, recursive, all}}"
        )
    stream = flags.bool("stream", False, "s")
    flags.bool("quiet", False, "q")  # shapes the command line's text only

    def listed() -> Iterator[tuple[str, str]]:
        if not args:
            yield from node.pinned(kind)
            return
        for path in args:
            cid = node.resolve(path)
            how = node.pin_type(cid)
            wanted = kind == "all" or (how or "").startswith(kind)
            if how is None or not wanted:
                raise CommandError(f"path '{path}' is not pinned")
            yield str(cid), how

    if stream:
        pairs = listed()

        def lines() -> Iterator[bytes]:
            for name, how in pairs:
                yield go_json({"Cid": name, "Type": how})

        return await _ndjson_stream(_stream(lines(), limit=64 * 1024))
    keys = dict(sorted(await run_in_threadpool(lambda: list(listed()))))
    return _json({"Keys": {name: {"Type": how} for name, how in keys.items()}})


async def _block_get(request: Request, node: IpfsNode, args: list[str], flags: Flags) -> Response:
    path = _one_arg(args, "cid")

    def read() -> list[bytes]:
        return [node.get(node.resolve(path))]

    block = await run_in_threadpool(read)
    headers = {"X-Stream-Output": "1", "X-Content-Length": str(len(block[0]))}
    return StreamAnswer(block, None, media_type="text/plain", headers=headers, ndjson=False)


async def _block_stat(request: Request, node: IpfsNode, args: list[str], flags: Flags) -> Response:
    _json_only(flags)
    path = _one_arg(args, "cid")

    def stat() -> dict[str, Any]:
        cid = node.resolve(path)
        return {"Key": str(cid), "Size": len(node.get(cid))}

    return _json(await run_in_threadpool(stat))


Command = Callable[[Request, IpfsNode, list[str], Flags], Any]
COMMANDS: dict[str, Command] = {
    "add": _add,
    "block/get": _block_get,
    "block/stat": _block_stat,
    "cat": _cat,
    "object/get": _object_get,
    "pin/add": _pin_add,
    "pin/ls": _pin_ls,
    "pin/rm": _pin_rm,
    "version": _version,
}
assert not FORBIDDEN & COMMANDS.keys()
ALLOW = "OPTIONS, POST"


# -- the endpoint -----------------------------------------------------------------------------


class Served(Protocol):
    """What the endpoint reads of the devnet it is served by (``feeslab.devnet.service.Devnet``
    has both): its credentials and its node. Named here, not imported, so the devnet's service,
    which opens this module's node, and this module do not import each other."""

    credentials: auth.Credentials
    ipfs: IpfsNode


def _devnet(request: Request) -> Served:
    served: Served = request.app.state.devnet
    return served


async def api(request: Request) -> Response:
    """``/api/v0/{command}``: authentication, method, command, then the command itself."""
    if request.method == "OPTIONS":  # a CORS preflight carries no credentials
        return Response(None, 200, headers={"Allow": ALLOW})
    devnet = _devnet(request)
    problem = auth.check_basic(devnet.credentials, request.headers.get("authorization"))
    if problem:
        return Response(
            go_json(auth.unauthorized_body(problem)),
            401,
            headers={"WWW-Authenticate": auth.BASIC_CHALLENGE},
            media_type="application/json",
        )
    if request.method != "POST":
        return Response(None, 405, headers={"Allow": ALLOW})
    name = request.path_params["command"]
    command = COMMANDS.get(name)
    if command is None:
        if name in FORBIDDEN:
            error = CommandError(f'command "{name}" is not available on this service', code=0)
            return Response(go_json(error.body()), 403, media_type="application/json")
        return Response(b"404 page not found\n", 404, media_type="text/plain")
    items = request.query_params.multi_items()
    args = [value for key, value in items if key == "arg"]
    node = devnet.ipfs
    try:
        return await command(request, node, args, Flags(items))
    except CommandError as exc:
        return _error_response(exc)
    except OSError as exc:  # the disk failed: kubo's 500 with the reason, never a traceback
        log.warning("IPFS command %s failed", name, exc_info=True)
        return _error_response(CommandError(str(exc) or type(exc).__name__))
    except ClientDisconnect:
        log_disconnect(request.scope)
        return Response(None, 400)  # nobody is listening; nothing was acknowledged

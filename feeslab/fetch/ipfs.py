"""The storage (IPFS) API client: kubo's HTTP RPC subset, streamed, with CIDs checked locally.

::

    ipfs = IpfsClient(base_url="https://ipfs.infura.io:5001", api_key=..., api_key_secret=...)
    [added] = ipfs.add(b"hello world\\n", name="hello.txt")
    ipfs.cat(added.cid)                       # b"hello world\\n"
    cid = ipfs.publish(data)                  # a file's bytes, added and pinned
    same = ipfs.load(cid)                     # refused unless the bytes hash to ``cid``

Every command is ``POST {base_url}/api/v0/<command>?arg=...&<flag>=...`` with HTTP Basic
``key:secret``. Answers are read as streams: NDJSON (``add``, ``pin/ls``) one object at a
time as it arrives, ``cat`` piece by piece, never buffered whole by the client. kubo reports a
failure that happens after its 200 went out in an ``X-Stream-Error`` HTTP trailer, which httpx
does not expose; the clients here use their own small transport (httpcore with a network
backend that keeps the tail of each connection's bytes) to read it, and raise
``IpfsStreamError``. A ``cat`` cut short of its ``X-Content-Length`` raises the same.

``AsyncIpfsClient`` is the client; ``IpfsClient`` runs it on the blocking clients' event-loop
thread (``feeslab.fetch.loop``): the same methods, blocking. Refused answers are read by every
client's status-to-error map and retried by every client's driver (``feeslab.fetch.retry``),
with the storage API's own errors (``IpfsError``: kubo's 400, 403, 404, 405 and 500, the
command's failures) never retried; an upload is sent once (its body is spent).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncGenerator, Callable, Generator, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import (
    IO,
    TYPE_CHECKING,
    Any,
    BinaryIO,
    Protocol,
    TypeAlias,
    TypedDict,
    TypeVar,
    TypeVarTuple,
    Unpack,
    cast,
)
from urllib.parse import quote_plus

import httpcore
import httpx

from feeslab import unixfs
from feeslab._redact import describe, redact, register_secrets
from feeslab.errors import (
    CidMismatchError,
    ConfigError,
    FeeslabError,
    IpfsError,
    IpfsStreamError,
    TransportError,
)
from feeslab.fetch._tls import shared_ssl_context
from feeslab.fetch.core import Limits
from feeslab.fetch.loop import Blocking, blocking
from feeslab.fetch.retry import Retry, Retryable, drive, retry_after, status_error

if TYPE_CHECKING:
    import ssl

__all__ = [
    "AddOptions",
    "AddProgress",
    "Added",
    "AsyncIpfsClient",
    "BlockStat",
    "CidLike",
    "Content",
    "Files",
    "IpfsClient",
    "IpfsOptions",
    "NodeVersion",
    "ObjectLink",
    "ObjectNode",
]

STREAM_ERROR = "x-stream-error"
TAIL_BYTES = 64 * 1024  # bytes of each connection kept to read trailers from [bytes]
COMMAND_STATUSES = frozenset({403, 404, 405, 500, 501})
"""Statuses kubo answers a command's own failure with (a forbidden or unknown command, a wrong
method, the command failed): ``IpfsError``, never retried. Other 5xx (a gateway's 502-504)
are retried; 401, 402 and 429 mean what they mean for every client."""
IO_THREADS = 4  # commands of one client in flight at once
IDLE_SECONDS = 2.0  # without I/O this long, a client lets its pool's threads go [s]
IPFS_BACKOFF = 0.1  # [s] the retry backoff's base: a gateway's 502 is usually brief
IPFS_BACKOFF_CAP = 2.0  # [s]
TRAILERS = "feeslab.trailers"  # the response extension holding an answer's trailer fields


# -- reading trailers: httpcore with a network backend that keeps each connection's tail -----


def _keep(tail: bytearray, data: bytes) -> None:
    tail += data
    if len(tail) > 2 * TAIL_BYTES:
        del tail[:-TAIL_BYTES]


class _TailStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream
        self.tail = bytearray()

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = self._stream.read(max_bytes, timeout)
        _keep(self.tail, data)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, timeout)

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> _TailStream:
        return _TailStream(self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> object:
        return self._stream.get_extra_info(info)


class _TailBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> _TailStream:
        stream = self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return _TailStream(stream)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> _TailStream:
        return _TailStream(self._backend.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


@contextlib.contextmanager
def _httpx_errors() -> Iterator[None]:
    """httpcore's exceptions as httpx's (same names), as httpx's own transport maps them."""
    try:
        yield
    except httpcore.UnsupportedProtocol as exc:
        raise httpx.UnsupportedProtocol(str(exc)) from exc
    except Exception as exc:
        if not type(exc).__module__.startswith("httpcore"):
            raise
        mapped = next(
            (
                getattr(httpx, cls.__name__)
                for cls in type(exc).__mro__
                if isinstance(getattr(httpx, cls.__name__, None), type)
            ),
            httpx.TransportError,
        )
        raise mapped(str(exc)) from exc


def _core_request(request: httpx.Request) -> httpcore.Request:
    return httpcore.Request(
        method=request.method,
        url=httpcore.URL(
            scheme=request.url.raw_scheme,
            host=request.url.raw_host,
            port=request.url.port,
            target=request.url.raw_path,
        ),
        headers=request.headers.raw,
        content=request.stream,
        extensions=request.extensions,
    )


def _parse_tail(tail: bytes) -> dict[str, str] | None:
    """The trailer fields at the end of a chunked body, or None if the tail is not one."""
    # the body ends "0\r\n" + ("Name: value\r\n")* + "\r\n"
    if not tail.endswith(b"\r\n\r\n"):
        return None
    fields: dict[str, str] = {}
    for line in reversed(tail[:-2].split(b"\r\n")[:-1]):
        if line == b"0" or line.startswith(b"0;"):
            return fields
        name, colon, value = line.partition(b":")
        if not colon:
            return None
        key = name.strip().lower().decode("latin-1")
        fields.setdefault(key, value.strip().decode("utf-8", "replace"))
    return None


class _TrailerSlot:
    """Filled with an answer's trailer fields the moment its body has been read."""

    __slots__ = ("fields",)

    def __init__(self) -> None:
        self.fields: dict[str, str] | None = None


def _answer(answer: httpcore.Response) -> httpx.Response:
    slot = _TrailerSlot()
    extensions = {**answer.extensions, TRAILERS: slot}
    network = answer.extensions.get("network_stream")
    chunked = any(
        k.lower() == b"transfer-encoding" and b"chunked" in v.lower() for k, v in answer.headers
    )
    # a sync pool's answer streams sync bytes (httpcore types it either way)
    body = _Body(answer.stream, network if chunked else None, slot)  # type: ignore[arg-type]
    return httpx.Response(answer.status, headers=answer.headers, stream=body,
                          extensions=extensions)


class _ByteStream(Protocol):
    """httpcore's answer body: its bytes, then closed."""

    def __iter__(self) -> Iterator[bytes]: ...
    def close(self) -> None: ...


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: _ByteStream, network: object, slot: _TrailerSlot) -> None:
        self._stream = stream
        self._network = network
        self._slot = slot

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors():
            yield from self._stream
        # read now: once the body is closed the connection may serve another request
        tail = getattr(self._network, "tail", None)
        self._slot.fields = {} if self._network is None else _parse_tail(bytes(tail or b""))

    def close(self) -> None:
        with _httpx_errors():
            self._stream.close()


class TrailerTransport(httpx.BaseTransport):
    """An httpx transport (HTTP/1.1, TLS verified) whose answers keep their trailers.

    ``response_trailers(response)`` reads them once the body has been read.
    """

    def __init__(self, *, max_connections: int = 10) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=shared_ssl_context(),
            max_connections=max_connections,
            network_backend=_TailBackend(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with _httpx_errors():
            answer = self._pool.handle_request(_core_request(request))
        return _answer(answer)

    def close(self) -> None:
        self._pool.close()


def response_trailers(response: httpx.Response) -> dict[str, str] | None:
    """The trailer fields of an answer whose body has been read (names in lower case).

    None when they cannot be known: the answer did not come through a trailer transport, or
    its body was not read to the end.
    """
    slot = response.extensions.get(TRAILERS)
    return slot.fields if isinstance(slot, _TrailerSlot) else None


# -- requests and answers, shared by the twins -------------------------------------------------


@dataclass(frozen=True)
class Added:
    """One entry of an ``add`` answer.

    Attributes
    ----------
    name : str
        The file's (or directory's) path as sent; ``""`` for the wrapping directory.
    cid : str
    size : int
        Cumulative DAG size: every block's bytes [bytes].
    """

    name: str
    cid: str
    size: int


@dataclass(frozen=True)
class AddProgress:
    """A progress event of ``add`` (``progress=``): ``bytes`` of ``name`` read so far."""

    name: str
    bytes: int


class ObjectLink(TypedDict):
    """A link of a dag-pb node, as kubo's ``object/get`` answers it (``Size`` [bytes])."""

    Name: str
    Hash: str
    Size: int


class ObjectNode(TypedDict):
    """A dag-pb node, as kubo's ``object/get`` answers it (``Data`` as ``data_encoding``)."""

    Links: list[ObjectLink]
    Data: str


class BlockStat(TypedDict):
    """kubo's ``block/stat`` answer: the block's CID and ``Size`` [bytes]."""

    Key: str
    Size: int


class NodeVersion(TypedDict):
    """kubo's ``version`` answer."""

    Version: str
    Commit: str
    Repo: str
    System: str
    Golang: str


class _AddEvent(TypedDict, total=False):
    """A line of kubo's ``add`` answer: a file's ``Hash`` and ``Size``, or ``Bytes`` read."""

    Name: str
    Hash: str
    Size: str
    Bytes: int


class _Pins(TypedDict):
    Pins: list[str]


class _PinEntry(TypedDict):
    Cid: str
    Type: str


class AddOptions(TypedDict, total=False):
    """``add``'s keywords besides ``progress``: as :meth:`AsyncIpfsClient.iter_add`'s."""

    name: str | None
    cid_version: int | None
    raw_leaves: bool | None
    only_hash: bool
    pin: bool | None
    wrap_with_directory: bool
    chunker: str | None


class IpfsOptions(TypedDict, total=False):
    """``AsyncIpfsClient``'s keywords besides the root and the credentials (what
    :meth:`IpfsClient.replace` changes)."""

    timeout: float
    retries: int
    retry: Retry | None
    transport: httpx.BaseTransport | None


def _flag(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _params(args: Iterable[object] = (), **flags: object) -> list[tuple[str, str]]:
    params = [("arg", str(a)) for a in args]
    params += [(name.replace("_", "-"), _flag(v)) for name, v in flags.items() if v is not None]
    return params


Content: TypeAlias = bytes | bytearray | memoryview | str | os.PathLike[str] | BinaryIO
"""One file to add: its bytes, its path (a directory's: everything under it), or a binary
file open for reading."""
Files: TypeAlias = (
    Content
    | Mapping[str, Content]
    | list[Content | tuple[str, Content]]
    | tuple[Content | tuple[str, Content], ...]
)
"""What ``add`` takes: one ``Content``, names to contents, or a list of contents and
``(name, content)`` pairs."""
CidLike: TypeAlias = str | unixfs.CID
"""A CID, or a path under one (``<cid>/a/b``, ``/ipfs/<cid>/a``), as text or parsed."""
_Entry = tuple[str, bytes | Path | BinaryIO | None]  # (path, content); None: a directory
_Parts = list[tuple[str, tuple[str, bytes | IO[bytes], str]]]  # httpx's multipart files
_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")


def _entries(files: Files, name: str | None) -> list[_Entry]:
    """What to upload as ``(path, content)``: content is bytes, a binary file, or None (a
    directory)."""
    items: list[tuple[str | None, Content]]
    if isinstance(files, Mapping):
        items = list(files.items())
    elif isinstance(files, list | tuple):
        items = [f if isinstance(f, tuple) else (None, f) for f in files]
    else:
        items = [(name, files)]
    out: list[_Entry] = []
    for given, content in items:
        if isinstance(content, bytes | bytearray | memoryview):
            out.append((given or "data", bytes(content)))
        elif isinstance(content, str | os.PathLike):
            path = Path(content)
            if not path.exists():
                raise ConfigError(f"no such file to add: {path}")
            base = given or path.name
            if path.is_dir():
                out.append((base, None))
                for sub in sorted(path.rglob("*")):
                    relative = f"{base}/{sub.relative_to(path).as_posix()}"
                    out.append((relative, None if sub.is_dir() else sub))
            else:
                out.append((base, path))
        elif hasattr(content, "read"):
            fallback = Path(getattr(content, "name", "") or "data").name
            out.append((given or fallback, content))
        else:
            raise TypeError(
                f"cannot add {type(content).__name__}: give bytes, a path or a binary file"
            )
    if not out:
        raise ConfigError("nothing to add")
    return out


def _multipart(entries: list[_Entry], stack: contextlib.ExitStack) -> _Parts:
    # names are query-escaped, as kubo's own client sends them (and kubo unescapes them)
    parts: _Parts = []
    for name, content in entries:
        if content is None:
            parts.append(("file", (quote_plus(name, safe=""), b"", "application/x-directory")))
            continue
        body = stack.enter_context(content.open("rb")) if isinstance(content, Path) else content
        parts.append(("file", (quote_plus(name, safe=""), body, "application/octet-stream")))
    return parts


def _add_params(
    *,
    cid_version: int | None,
    raw_leaves: bool | None,
    only_hash: bool,
    pin: bool | None,
    wrap_with_directory: bool,
    chunker: str | None,
    progress: bool,
) -> list[tuple[str, str]]:
    return _params(
        cid_version=cid_version,
        raw_leaves=raw_leaves,
        only_hash=only_hash or None,
        pin=pin,
        wrap_with_directory=wrap_with_directory or None,
        chunker=chunker,
        progress=progress or None,
    )


def _add_event(obj: _AddEvent) -> Added | AddProgress:
    if "Hash" in obj:
        return Added(obj.get("Name", ""), obj["Hash"], int(obj.get("Size") or 0))
    return AddProgress(obj.get("Name", ""), int(obj.get("Bytes", 0)))


class _Lines:
    """Split NDJSON as it arrives: feed bytes, get decoded objects."""

    def __init__(self, command: str, secrets: list[str]) -> None:
        self._buffer = b""
        self._command = command
        self._secrets = secrets

    def feed(self, data: bytes) -> Iterator[object]:
        """The objects ``data`` completes, decoded one at a time (an error object raises only
        once the objects before it have been taken)."""
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            if line.strip():
                yield self._decode(line)

    def close(self) -> list[object]:
        rest, self._buffer = self._buffer, b""
        return [self._decode(rest)] if rest.strip() else []

    def _decode(self, line: bytes) -> object:
        try:
            obj = json.loads(line)
        except ValueError:
            raise IpfsStreamError(
                f"{self._command}: a line of the answer is not JSON: {line[:120]!r}",
                command=self._command, secrets=self._secrets,
            ) from None
        if isinstance(obj, dict) and obj.get("Type") == "error" and "Message" in obj:
            raise IpfsStreamError(
                f"{self._command} failed: {obj['Message']}",
                code=obj.get("Code"), command=self._command, secrets=self._secrets,
            )
        return obj


def _error(
    command: str, response: httpx.Response, body: bytes, secrets: list[str]
) -> FeeslabError | Retryable:
    """The error (or ``Retryable``) for a non-200 answer, by every client's map: kubo's
    ``Message`` is what the service said, and its command failures are ``IpfsError``."""
    status = response.status_code
    message, code = None, None
    try:
        obj = json.loads(body)
    except ValueError:
        obj = None
    if isinstance(obj, dict):
        message = obj.get("Message") or obj.get("error") or obj.get("message")
        code = obj.get("Code")
    if not message:
        message = body.decode("utf-8", "replace").strip()[:300] or response.reason_phrase

    def own(status: int) -> IpfsError:
        what = {
            404: "no such command",
            403: "forbidden on this service",
            405: "HTTP method not allowed",
        }.get(status)
        text = f"{command}: {message}" if what is None else f"{command}: {what} ({message})"
        return IpfsError(text, status=status, code=code, command=command, secrets=secrets)

    wait = retry_after(response.headers.get("retry-after"))
    return status_error(status, str(message), where=f"the storage API's {command}: ",
                        secrets=secrets, wait=wait, own=own, owns=COMMAND_STATUSES)  # fmt: skip


def _check_end(
    command: str, response: httpx.Response, received: int | None, secrets: list[str]
) -> None:
    """After the body: the trailer's error, or an answer shorter than announced."""
    trailers = response_trailers(response)
    if trailers and trailers.get(STREAM_ERROR):
        raise IpfsStreamError(
            f"{command} failed after the answer began: {trailers[STREAM_ERROR]}",
            command=command, secrets=secrets,
        )
    expected = response.headers.get("x-content-length")
    if received is not None and expected and expected.isdigit() and received != int(expected):
        raise IpfsStreamError(
            f"{command} was cut short: {received:,} of {int(expected):,} bytes arrived",
            command=command, secrets=secrets,
        )


def _check_block(cid: str, data: bytes) -> bytes:
    parsed = unixfs.CID.parse(cid)
    if not parsed.matches(data):
        actual = unixfs.CID.of_block(data, version=parsed.version or 1, codec=parsed.codec)
        raise CidMismatchError(expected=cid, actual=str(actual), command="block/get")
    return data


def _check_file(cid: str, data: bytes) -> None:
    """Raise ``CidMismatchError`` unless ``data`` imports to ``cid`` (kubo's defaults)."""
    try:
        parsed = unixfs.CID.parse(cid)
    except unixfs.CidError as exc:
        raise ConfigError(f"not a CID: {exc}") from None
    if unixfs.verify(data, parsed):
        return
    actual = unixfs.cid_of(data, cid_version=parsed.version)
    raise CidMismatchError(expected=cid, actual=str(actual), command="cat")


def _cid_text(cid: CidLike) -> str:
    text = str(cid).strip()
    try:
        unixfs.CID.parse(text.removeprefix("/ipfs/").split("/")[0])
    except unixfs.CidError as exc:
        raise ConfigError(f"not a CID: {exc}") from None
    return text


# -- the clients ------------------------------------------------------------------------------


class AsyncIpfsClient:
    """The storage API of one service root (the real one or a devnet), for ``asyncio`` code.

    Parameters
    ----------
    base_url : str
        The root under which ``/api/v0/<command>`` lives (``https://ipfs.infura.io:5001`` or a
        devnet's URL).
    api_key, api_key_secret : str
        HTTP Basic credentials; both are required.
    timeout : float
        Seconds to wait for a connection or for each piece of an answer [s].
    retries : int
        Attempts after the first when a command other than ``add`` meets a network error or
        a gateway's 5xx, with the backoff of ``feeslab.fetch.retry.Retry`` (a 429 is waited
        out, as by every client).
    retry : Retry, optional
        The whole retry policy instead of ``retries`` (the one every client takes).
    transport : httpx.BaseTransport, optional
        Replaces the trailer-reading transport (then ``X-Stream-Error`` goes unseen; a cut
        ``cat`` is still caught by its length).
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        api_key_secret: str,
        timeout: float = 60.0,
        retries: int = 2,
        retry: Retry | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"the storage API URL must be http(s)://..., not {base_url!r}")
        if not api_key or not api_key_secret:
            raise ConfigError("the storage API needs both the API key and the API key secret")
        self.base_url = base_url.rstrip("/")
        self._retry = retry or Retry(
            retries=retries, backoff=IPFS_BACKOFF, backoff_cap=IPFS_BACKOFF_CAP
        )
        self.retries = self._retry.retries
        limits = Limits(max_concurrency=IO_THREADS, timeout=timeout)
        self._secrets = [api_key, api_key_secret]
        register_secrets(api_key, api_key_secret)
        self._options: IpfsOptions = {"timeout": timeout, "retries": retries}
        # the I/O is blocking httpx on a small pool, each command's answer streamed from there
        # piece by piece: httpx's sync client moves bytes about twice as fast as its asyncio
        # one here (benchmarks/ipfs.py), and the trailers are read off its sync streams. The
        # pool is made on first use and let go after IDLE_SECONDS without I/O, so an idle
        # client holds no thread but the shared loop's (docs/architecture.md, "Concurrency")
        self._client = httpx.Client(
            auth=(api_key, api_key_secret),
            timeout=limits.httpx_timeout(),
            transport=transport or TrailerTransport(),
        )
        self._threads = limits.max_concurrency
        self._pool: ThreadPoolExecutor | None = None
        self._busy = 0  # I/O calls on the pool now
        self._idle: asyncio.TimerHandle | None = None  # the pool's release, when none is
        self._served = 0  # answers served: a 429 streak is the hard stop only while it stands

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {redact(self.base_url, self._secrets)}>"

    async def aclose(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        self._release_pool(wait=True)
        self._client.close()

    def _release_pool(self, wait: bool = False) -> None:
        self._idle = None
        if self._busy == 0 and self._pool is not None:
            pool, self._pool = self._pool, None
            pool.shutdown(wait=wait)

    async def __aenter__(self) -> AsyncIpfsClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- plumbing: the retry driver and the answers' checks ---------------------------------

    def _served_count(self) -> int:
        return self._served

    def _send(
        self, command: str, params: list[tuple[str, str]], files: _Parts | None
    ) -> httpx.Response:
        """One attempt (blocking: runs on the pool): the answer, its status 200 and its body
        still to read; ``Retryable`` when it is worth another."""
        url = f"{self.base_url}/api/v0/{command}"
        try:
            # httpx's list of query pairs is invariant: pairs of str are among what it takes
            request = self._client.build_request(
                "POST", url, params=params, files=files  # type: ignore[arg-type]
            )
            response = self._client.send(request, stream=True)
        except httpx.TransportError as exc:
            # describe() scrubs it: its request's Basic header shows no secret
            reached = describe(exc, self._secrets)
            error = TransportError(
                f"{command}: the storage API could not be reached: {reached}",
                secrets=self._secrets,
            )
            error.__cause__ = exc
            raise Retryable(error) from None
        if response.status_code == 200:
            self._served += 1
            return response
        try:
            refused = _error(command, response, response.read(), self._secrets)
        finally:
            response.close()
        raise refused

    async def _open(
        self, command: str, params: list[tuple[str, str]], files: _Parts | None = None
    ) -> httpx.Response:
        """The answer to one command, its status checked, its body still to read; retried by
        the one driver (an upload is sent once: its body is spent)."""

        async def attempt() -> httpx.Response:
            return await self._io(self._send, command, params, files)

        retry = self._retry if files is None else None
        return await drive(attempt, retry, asyncio.sleep, served=self._served_count,
                           secrets=self._secrets)  # fmt: skip

    def _stream(
        self, command: str, response: httpx.Response, *, counted: bool = False
    ) -> Generator[bytes, None, None]:
        """An open answer's pieces as they arrive, then its end checked (blocking); ``counted``:
        also against its ``X-Content-Length``."""
        try:
            received = 0
            for piece in response.iter_bytes():
                received += len(piece)
                yield piece
            _check_end(command, response, received if counted else None, self._secrets)
        except httpx.TransportError as exc:
            reached = describe(exc, self._secrets)
            raise IpfsStreamError(
                f"{command}: the connection failed mid-answer: {reached}",
                command=command, secrets=self._secrets,
            ) from exc
        finally:
            response.close()

    async def _io(self, function: Callable[[*_Ts], _T], *args: *_Ts) -> _T:
        loop = asyncio.get_running_loop()
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="feeslab-ipfs")
        self._busy += 1
        try:
            return await loop.run_in_executor(self._pool, function, *args)
        finally:
            self._busy -= 1
            if self._busy == 0:  # a streamed answer's next piece comes well within this
                self._idle = loop.call_later(IDLE_SECONDS, self._release_pool)

    async def _whole(
        self, command: str, params: list[tuple[str, str]], *, counted: bool = False
    ) -> bytes:
        """The whole answer, read on the pool in one go."""
        response = await self._open(command, params)
        return await self._io(b"".join, self._stream(command, response, counted=counted))

    async def _pieces(
        self, command: str, params: list[tuple[str, str]], files: _Parts | None = None,
        *, counted: bool = False,
    ) -> AsyncGenerator[bytes, None]:
        """The answer's pieces, each handed over from the pool as it arrives."""
        response = await self._open(command, params, files)
        stream = self._stream(command, response, counted=counted)
        try:
            while (piece := await self._io(next, stream, None)) is not None:
                yield piece
        finally:
            await self._io(stream.close)
            await self._io(response.close)  # a stream never started does not close it

    async def _json(self, command: str, params: list[tuple[str, str]]) -> object:
        body = await self._whole(command, params)
        try:
            return json.loads(body)
        except ValueError:
            raise IpfsError(f"{command}: the answer is not JSON: {body[:120]!r}",
                            status=200, command=command) from None

    async def _objects(
        self, command: str, params: list[tuple[str, str]], files: _Parts | None = None
    ) -> AsyncGenerator[object, None]:
        lines = _Lines(command, self._secrets)
        async for piece in self._pieces(command, params, files):
            for obj in lines.feed(piece):
                yield obj
        for obj in lines.close():
            yield obj

    # -- commands ------------------------------------------------------------------------------

    async def iter_add(
        self,
        files: Files,
        *,
        name: str | None = None,
        cid_version: int | None = None,
        raw_leaves: bool | None = None,
        only_hash: bool = False,
        pin: bool | None = None,
        wrap_with_directory: bool = False,
        chunker: str | None = None,
        progress: bool = False,
    ) -> AsyncGenerator[Added | AddProgress, None]:
        """``add``, as its NDJSON answer streams in: :class:`Added` per file and directory,
        :class:`AddProgress` events with ``progress=True``.

        Parameters
        ----------
        files : bytes, path, binary file, mapping of name to those, or list
            What to add; a directory path is added with everything under it (files are read
            by httpx as it sends them).
        name : str, optional
            The file name of a single bytes or file object (default ``"data"``).
        cid_version, raw_leaves, only_hash, pin, wrap_with_directory, chunker, progress
            kubo's ``add`` flags; None leaves kubo's default (CIDv0, pinned).
        """
        params = _add_params(
            cid_version=cid_version, raw_leaves=raw_leaves, only_hash=only_hash, pin=pin,
            wrap_with_directory=wrap_with_directory, chunker=chunker, progress=progress,
        )
        entries = _entries(files, name)
        with contextlib.ExitStack() as stack:
            parts = _multipart(entries, stack)
            async for obj in self._objects("add", params, parts):
                yield _add_event(cast(_AddEvent, obj))  # kubo's NDJSON

    async def add(
        self,
        /,  # so that blocking() can type it: **options could name a "self" otherwise
        files: Files,
        *,
        progress: Callable[[AddProgress], object] | None = None,
        **options: Unpack[AddOptions],
    ) -> list[Added]:
        """``add`` files; returns one :class:`Added` per file and directory, the root last.

        ``progress`` is called with each :class:`AddProgress` as it arrives (for
        ``IpfsClient``, on its loop thread). Other options as :meth:`iter_add`.
        """
        added: list[Added] = []
        async for event in self.iter_add(files, progress=progress is not None, **options):
            if isinstance(event, Added):
                added.append(event)
            elif progress is not None:
                progress(event)
        return added

    async def iter_cat(
        self, path: CidLike, *, offset: int = 0, length: int | None = None
    ) -> AsyncGenerator[bytes, None]:
        """The bytes of a file (``<cid>`` or ``/ipfs/<cid>/path``) as they arrive."""
        params = _params([_cid_text(path)], offset=offset or None, length=length)
        async for piece in self._pieces("cat", params, counted=True):
            yield piece

    async def cat(self, path: CidLike, *, offset: int = 0, length: int | None = None) -> bytes:
        """The bytes of a file (``<cid>`` or ``/ipfs/<cid>/path``), from ``offset``, at most
        ``length`` of them."""
        params = _params([_cid_text(path)], offset=offset or None, length=length)
        return await self._whole("cat", params, counted=True)

    async def object_get(self, cid: CidLike, *, data_encoding: str = "text") -> ObjectNode:
        """A dag-pb node: ``{"Links": [{"Name", "Hash", "Size"}], "Data": ...}``."""
        params = _params([_cid_text(cid)], encoding="json", data_encoding=data_encoding)
        return cast(ObjectNode, await self._json("object/get", params))  # kubo's JSON

    async def pin_add(self, *cids: CidLike, recursive: bool = True) -> list[str]:
        """Pin ``cids`` (recursively by default); returns the pinned CIDs."""
        params = _params([_cid_text(c) for c in cids], recursive=recursive)
        return cast(_Pins, await self._json("pin/add", params))["Pins"]

    async def pin_rm(self, *cids: CidLike, recursive: bool = True) -> list[str]:
        """Unpin ``cids``; returns the unpinned CIDs."""
        params = _params([_cid_text(c) for c in cids], recursive=recursive)
        return cast(_Pins, await self._json("pin/rm", params))["Pins"]

    async def iter_pin_ls(
        self, *cids: CidLike, type: str = "all"
    ) -> AsyncGenerator[tuple[str, str], None]:
        """``(cid, pin type)`` pairs as they stream in (``pin/ls`` with ``stream``)."""
        params = _params([_cid_text(c) for c in cids], type=type, stream=True)
        async for obj in self._objects("pin/ls", params):
            entry = cast(_PinEntry, obj)  # kubo's NDJSON
            yield entry["Cid"], entry["Type"]

    async def pin_ls(self, *cids: CidLike, type: str = "all") -> dict[str, str]:
        """Pins as ``{cid: type}``: all of them, or how each of ``cids`` is pinned."""
        return {cid: kind async for cid, kind in self.iter_pin_ls(*cids, type=type)}

    async def block_get(self, cid: CidLike) -> bytes:
        """A block's bytes, checked against its CID here."""
        text = _cid_text(cid)
        data = await self._whole("block/get", _params([text]), counted=True)
        return _check_block(text, data)

    async def block_stat(self, cid: CidLike) -> BlockStat:
        """``{"Key": cid, "Size": bytes}``."""
        return cast(BlockStat, await self._json("block/stat", _params([_cid_text(cid)])))

    async def version(self) -> NodeVersion:
        """The node's ``{"Version", "Commit", "Repo", "System", "Golang"}``."""
        return cast(NodeVersion, await self._json("version", []))

    async def call(self, /, command: str, *args: object, **flags: object) -> Any:
        """Any command with a JSON answer: ``call("pin/ls", type="direct")``.

        Flags are given with ``_`` for ``-`` (``cid_version=1``); booleans are sent as
        ``true``/``false``.
        """
        return await self._json(command.strip("/"), _params(args, **flags))

    # -- files checked by CID (``Lab.publish_frame`` / ``load_frame`` send frames' bytes) --------

    async def publish(
        self, data: bytes, *, name: str = "file", pin: bool = True, cid_version: int = 0
    ) -> str:
        """Add ``data`` as one file (pinned by default) and return its CID.

        The CID is computed here too, from the same bytes, and must match the node's: a node
        that stored something else is caught at once.
        """
        [entry] = await self.add(data, name=name, pin=pin, cid_version=cid_version)
        _check_file(entry.cid, data)
        return entry.cid

    async def load(self, cid: CidLike) -> bytes:
        """The file published under ``cid``, after checking its bytes hash to ``cid``.

        Raises
        ------
        CidMismatchError
            The bytes received are not the ones ``cid`` names.
        """
        text = _cid_text(cid)
        data = await self.cat(text)
        _check_file(text, data)
        return data


class IpfsClient(Blocking):
    """The storage API, blocking: ``AsyncIpfsClient`` run on the blocking clients' event-loop
    thread (so it works inside a running Jupyter kernel). The same methods and options;
    ``iter_*`` are plain iterators.
    """

    _inner: AsyncIpfsClient

    def __init__(
        self, *, base_url: str, api_key: str, api_key_secret: str, **options: Unpack[IpfsOptions]
    ) -> None:
        super().__init__(
            lambda: AsyncIpfsClient(
                base_url=base_url, api_key=api_key, api_key_secret=api_key_secret, **options
            ),
        )
        self.base_url = self._inner.base_url
        self.retries = self._inner.retries

    def __repr__(self) -> str:
        return repr(self._inner).replace("AsyncIpfsClient", "IpfsClient")

    def replace(self, **options: Unpack[IpfsOptions]) -> IpfsClient:
        """A new client to the same root with the same credentials and other ``options``
        (``timeout``, ``retries``, ``transport``)."""
        key, secret = self._inner._secrets
        merged: IpfsOptions = {**self._inner._options, **options}
        return IpfsClient(base_url=self.base_url, api_key=key, api_key_secret=secret, **merged)

    iter_add = blocking(AsyncIpfsClient.iter_add)
    add = blocking(AsyncIpfsClient.add)
    iter_cat = blocking(AsyncIpfsClient.iter_cat)
    cat = blocking(AsyncIpfsClient.cat)
    object_get = blocking(AsyncIpfsClient.object_get)
    pin_add = blocking(AsyncIpfsClient.pin_add)
    pin_rm = blocking(AsyncIpfsClient.pin_rm)
    iter_pin_ls = blocking(AsyncIpfsClient.iter_pin_ls)
    pin_ls = blocking(AsyncIpfsClient.pin_ls)
    block_get = blocking(AsyncIpfsClient.block_get)
    block_stat = blocking(AsyncIpfsClient.block_stat)
    version = blocking(AsyncIpfsClient.version)
    call = blocking(AsyncIpfsClient.call)
    publish = blocking(AsyncIpfsClient.publish)
    load = blocking(AsyncIpfsClient.load)

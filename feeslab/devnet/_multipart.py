"""A streaming ``multipart/form-data`` reader for ``POST /api/v0/add``.

Sans-I/O: feed it the request body piece by piece and it returns events, so an upload of any
size passes through in constant memory. Only what ``ipfs add`` needs is read from each part's
headers: ``Content-Disposition`` (``name``, ``filename``) and ``Content-Type``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_HEADER_BYTES = 16 * 1024
_PARAM = re.compile(r';\s*([^\s=;]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)')


class MultipartError(ValueError):
    """A body that is not well-formed ``multipart/form-data``."""


@dataclass
class Part:
    """One part's headers.

    Attributes
    ----------
    headers : dict
        Header names in lower case -> values.
    name, filename : str or None
        From ``Content-Disposition``.
    content_type : str
        Without parameters, lower case; ``application/octet-stream`` when absent.
    """

    headers: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    filename: str | None = None
    content_type: str = "application/octet-stream"


def boundary_of(content_type: str) -> str | None:
    """The ``boundary`` parameter of a ``multipart/form-data`` content type, or None."""
    kind, _, params = content_type.partition(";")
    if kind.strip().lower() != "multipart/form-data":
        return None
    found = _params(";" + params).get("boundary")
    return found or None


def _params(text: str) -> dict[str, str]:
    out = {}
    for key, value in _PARAM.findall(text):
        value = value.strip()
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        out[key.lower()] = value
    return out


def _parse_headers(block: bytes) -> Part:
    part = Part()
    for line in block.decode("utf-8", "replace").split("\r\n"):
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            raise MultipartError(f"malformed part header {line[:80]!r}")
        part.headers[name.strip().lower()] = value.strip()
    disposition = part.headers.get("content-disposition", "")
    params = _params(";" + disposition.partition(";")[2])
    part.name = params.get("name")
    part.filename = params.get("filename")
    kind = part.headers.get("content-type", "").split(";")[0].strip().lower()
    part.content_type = kind or "application/octet-stream"
    return part


class MultipartParser:
    """Feed ``multipart/form-data`` bytes; get ``("part", Part)``, ``("data", bytes)`` and
    ``("end", None)`` (end of a part) events.

    Parameters
    ----------
    boundary : str
        From the request's content type.
    """

    def __init__(self, boundary: str) -> None:
        if not boundary or len(boundary) > 200:
            raise MultipartError("the multipart boundary is missing or too long")
        self._delimiter = b"\r\n--" + boundary.encode("latin-1")
        # a leading CRLF lets the first boundary line match like every other
        self._buffer = bytearray(b"\r\n")
        self._state = "preamble"
        self.parts = 0

    @property
    def done(self) -> bool:
        return self._state == "done"

    def feed(self, data: bytes) -> list[tuple[str, object]]:
        """Consume ``data``; returns the events it completes."""
        if self._state == "done":
            return []  # the epilogue is ignored
        self._buffer += data
        events: list[tuple[str, object]] = []
        while self._step(events):
            pass
        return events

    def close(self) -> None:
        """The body ended; raises ``MultipartError`` if it ended early."""
        if self._state != "done":
            raise MultipartError("unexpected end of the multipart body (no closing boundary)")

    def _step(self, events: list[tuple[str, object]]) -> bool:
        buffer = self._buffer
        delimiter = self._delimiter
        if self._state in ("preamble", "body"):
            at = buffer.find(delimiter)
            if at < 0:
                keep = len(delimiter) - 1
                if self._state == "body" and len(buffer) > keep:
                    events.append(("data", bytes(buffer[:-keep])))
                if len(buffer) > keep:
                    del buffer[:-keep]
                return False
            if self._state == "body":
                if at:
                    events.append(("data", bytes(buffer[:at])))
                events.append(("end", None))
            del buffer[: at + len(delimiter)]
            self._state = "boundary"
            return True
        if self._state == "boundary":
            # after a delimiter: "--" closes the body; else padding then CRLF opens a part
            if len(buffer) < 2:
                return False
            if buffer[:2] == b"--":
                self._state = "done"
                buffer.clear()
                return False
            end = buffer.find(b"\r\n")
            if end < 0:
                if len(buffer) > 256:
                    raise MultipartError("malformed multipart boundary line")
                return False
            if buffer[:end].strip(b" \t"):
                raise MultipartError("malformed multipart boundary line")
            del buffer[: end + 2]
            self._state = "headers"
            return True
        if self._state == "headers":
            if buffer[:2] == b"\r\n":
                block, skip = b"", 2
            else:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    if len(buffer) > MAX_HEADER_BYTES:
                        raise MultipartError("multipart part headers too long")
                    return False
                block, skip = bytes(buffer[:end]), end + 4
            del buffer[:skip]
            events.append(("part", _parse_headers(block)))
            self.parts += 1
            self._state = "body"  # the delimiter's own CRLF ends the data, even empty data
            return True
        return False

"""A streaming ``multipart/form-data`` reader for ``POST /api/v0/add``, on python-multipart.

Sans-I/O: feed it the request body piece by piece and it returns events, so an upload of any
size passes through in constant memory. Only what ``ipfs add`` needs is read from each part's
headers: ``Content-Disposition`` (``name``, ``filename``) and ``Content-Type``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import python_multipart
from python_multipart.exceptions import FormParserError, MultipartParseError
from python_multipart.multipart import parse_options_header

MAX_HEADER_BYTES = 16 * 1024


# python-multipart logs each malformed body as a WARNING before raising; the client gets the
# same message in its 400, so the devnet's log keeps only errors from it
_PARSER_LOG = logging.getLogger(__name__ + ".python_multipart")
_PARSER_LOG.setLevel(logging.ERROR)


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
    kind, params = _options(content_type)
    if kind != "multipart/form-data":
        return None
    return params.get("boundary") or None


def _options(header: str) -> tuple[str, dict[str, str]]:
    """A header's value (lower case) and its parameters (names in lower case), unquoted."""
    # as bytes: python-multipart encodes a str header as latin-1, which UTF-8 names are not
    value, params = parse_options_header(header.encode("utf-8"))
    return value.decode("utf-8", "replace"), {
        k.decode("utf-8", "replace").lower(): v.decode("utf-8", "replace")
        for k, v in params.items()
    }


def _part(headers: list[tuple[str, str]]) -> Part:
    part = Part()
    for name, value in headers:
        part.headers[name.strip().lower()] = value.strip()
    _, params = _options(part.headers.get("content-disposition", ""))
    part.name = params.get("name")
    part.filename = params.get("filename")
    kind, _ = _options(part.headers.get("content-type", ""))
    part.content_type = kind or "application/octet-stream"
    return part


class MultipartParser:
    """Feed ``multipart/form-data`` bytes; get ``("part", Part)``, ``("data", bytes)`` and
    ``("end", None)`` (end of a part) events.

    python-multipart's streaming parser (Starlette's) does the reading; this keeps its
    callbacks as a list of events per ``feed``, so the caller stays sans-I/O.

    Parameters
    ----------
    boundary : str
        From the request's content type.
    """

    def __init__(self, boundary: str) -> None:
        if not boundary or len(boundary) > 200:
            raise MultipartError("the multipart boundary is missing or too long")
        self._events: list[tuple[str, object]] = []
        self._field = bytearray()
        self._value = bytearray()
        self._headers: list[tuple[str, str]] = []
        self._header_bytes = 0
        self._done = False
        self.parts = 0
        # RFC 2046 allows a preamble before the first boundary (Go's reader, so kubo, skips
        # it); python-multipart does not, so it is dropped here: until the first delimiter
        # the bytes wait in _preamble, behind a CRLF so a delimiter at the start matches too
        self._first = b"\r\n--" + boundary.encode("latin-1")
        self._preamble: bytearray | None = bytearray(b"\r\n")
        self._parser = python_multipart.MultipartParser(
            boundary.encode("latin-1"),
            {
                "on_part_begin": self._part_begin,
                "on_header_field": self._header_field,
                "on_header_value": self._header_value,
                "on_header_end": self._header_end,
                "on_headers_finished": self._headers_finished,
                "on_part_data": self._part_data,
                "on_part_end": self._part_end,
                "on_end": self._end,
            },
            max_header_size=MAX_HEADER_BYTES,
        )
        self._parser.logger = _PARSER_LOG

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, data: bytes) -> list[tuple[str, object]]:
        """Consume ``data``; returns the events it completes."""
        if self._done:
            return []  # the epilogue is ignored
        if self._preamble is not None:
            self._preamble += data
            at = self._preamble.find(self._first)
            if at < 0:
                del self._preamble[: -len(self._first)]
                return []
            data, self._preamble = bytes(self._preamble[at + 2 :]), None
        try:
            self._parser.write(data)
        except (MultipartParseError, FormParserError) as exc:
            raise MultipartError(f"malformed multipart body: {exc}") from None
        events, self._events = self._events, []
        return events

    def close(self) -> None:
        """The body ended; raises ``MultipartError`` if it ended early."""
        if not self._done:
            raise MultipartError("unexpected end of the multipart body (no closing boundary)")

    # -- python-multipart's callbacks --------------------------------------------------------

    def _part_begin(self) -> None:
        self._headers = []
        self._header_bytes = 0

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]
        self._count(end - start)

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]
        self._count(end - start)

    def _count(self, size: int) -> None:
        self._header_bytes += size
        if self._header_bytes > MAX_HEADER_BYTES:
            raise MultipartError("multipart part headers too long")

    def _header_end(self) -> None:
        name = self._field.decode("utf-8", "replace").strip()
        if not name:
            raise MultipartError("malformed part header (no name)")
        self._headers.append((name, self._value.decode("utf-8", "replace")))
        self._field.clear()
        self._value.clear()

    def _headers_finished(self) -> None:
        self._events.append(("part", _part(self._headers)))
        self.parts += 1

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if end > start:
            self._events.append(("data", bytes(data[start:end])))

    def _part_end(self) -> None:
        self._events.append(("end", None))

    def _end(self) -> None:
        self._done = True

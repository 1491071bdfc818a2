"""Keeping API keys and secrets out of text, log records and exceptions.

The service takes its key in the URL path (``https://mainnet.infura.io/v3/KEY``,
``wss://mainnet.infura.io/ws/v3/KEY``, the Gas API's ``/v3/KEY/networks/...``) or as HTTP Basic
``key:secret`` (the Gas API, the storage API). Both travel where libraries like to show them:
httpx logs every request's URL at INFO, websockets logs the handshake's request line at DEBUG,
and an httpx error carries its ``Request`` (URL and headers) to wherever it is chained.

- :func:`redact` masks credentials in a text: ``/v3/<key>`` (and ``/v2/<key>``) segments,
  ``Basic <base64>``,
  ``user:pass@`` in URLs, key-like query parameters, and every secret a feeslab client holds.
- :func:`register_secrets` is called by each client holding a key or secret: it remembers
  them (for the lifetime of the process) and installs :data:`LOG_FILTER` on the loggers of
  httpx, httpcore, websockets, uvicorn, asyncio and feeslab.
- :func:`scrub_exception` masks, in place, an exception and every exception chained to it
  (``__cause__``, ``__context__``, groups): their args and string attributes, and the httpx
  ``Request``/``Response`` and websockets handshake objects they carry. Types, tracebacks and
  the rest of the message stay, so ``ConnectError: [Errno 111] Connection refused`` still
  says what happened, with the URL ``http://host/v3/***``.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import re
import sys
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeGuard, cast

if TYPE_CHECKING:  # for the types only: the error tree imports without the network layer
    import httpx

__all__ = [
    "LOG_FILTER",
    "REDACTED",
    "RedactedError",
    "RedactingFilter",
    "describe",
    "install_log_filter",
    "redact",
    "register_secrets",
    "scrub_exception",
    "secrets_in_url",
]

REDACTED = "***"
_MIN_SECRET = 4  # a shorter "secret" would shred ordinary text
# registered secrets apply to every text of the process: a short one ("wrong", "test") would
# mask ordinary words; real keys and secrets are 32 characters
_MIN_REGISTERED = 8

# /v3/<key> (node and key-only Gas API paths; /v2/<key> other providers' node URLs given as
# rpc_url=): the key is anything up to the next separator
_V3_KEY = re.compile(r"(/v[23]/)[^/?#\s\"'<>]+")
_BASIC = re.compile(r"(\bBasic\s+)[A-Za-z0-9+/=_-]+", re.IGNORECASE)
_URL_USERINFO = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/@\s\"'<>]+@", re.IGNORECASE)
# ?apikey=..., &token=...: other providers' node URLs (rpc_url=) put the key in the query
_QUERY_KEY = re.compile(
    r"([?&](?:api[_-]?key|key|token|access[_-]?token|secret|api[_-]?key[_-]?secret|password)=)"
    r"[^&#\s\"'<>]+",
    re.IGNORECASE,
)

_lock = threading.Lock()
_registered: set[str] = set()
_registered_pattern: re.Pattern[str] | None = None


def _pattern(secrets: Iterable[str]) -> re.Pattern[str] | None:
    values = sorted({s for s in secrets if s and len(s) >= _MIN_SECRET}, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, values))) if values else None


def _with_basic_forms(secrets: Iterable[str | None]) -> list[str]:
    """The secrets, plus the Base64 of ``key:secret`` should a header value be echoed bare."""
    values = [str(s) for s in secrets if s]
    if len(values) >= 2:
        values.append(base64.b64encode(f"{values[0]}:{values[1]}".encode()).decode())
    return values


def register_secrets(*secrets: str | None) -> None:
    """Remember secrets a client holds (e.g. the key and the key secret), and install the
    log filter.

    From then on :func:`redact` masks them in any text, :data:`LOG_FILTER` in any record of
    the filtered loggers and :func:`scrub_exception` in any exception. Secrets are kept for the
    life of the process (a client's key may be in a record logged after it closed).
    """
    global _registered_pattern
    values = [s for s in _with_basic_forms(secrets) if len(s) >= _MIN_REGISTERED]
    with _lock:
        if not set(values) <= _registered:
            _registered.update(values)
            _registered_pattern = _pattern(_registered)
    install_log_filter()


def secrets_in_url(url: str) -> list[str]:
    """The credentials a URL carries: a ``/v3/``/``/v2/`` path key, ``user:pass@``, key-like
    query values (to register, so they are masked wherever they appear)."""
    found = [m.group(0)[len(m.group(1)) :] for m in _V3_KEY.finditer(url)]
    found += [m.group(0)[len(m.group(1)) :] for m in _QUERY_KEY.finditer(url)]
    userinfo = _URL_USERINFO.search(url)
    if userinfo:
        found += userinfo.group(0)[len(userinfo.group(1)) : -1].split(":")
    return found


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Hide credentials in ``text``.

    Replaces ``/v3/<key>`` and ``/v2/<key>`` path segments, ``Basic <base64>`` credentials,
    ``user:pass@`` in
    URLs, key-like query parameters (``?apikey=``, ``&token=``, ...) and any exact occurrence
    of the given ``secrets``, of the secrets registered by feeslab's clients, and of their
    Basic Base64 forms with ``***``.

    Parameters
    ----------
    text : str
        Any text: a message, a URL, a response body.
    secrets : iterable of str
        Values known to be secret (the key, the secret), hidden wherever they appear.

    Returns
    -------
    str
    """
    text = str(text)
    given = _pattern(_with_basic_forms(secrets))
    if given is not None:
        text = given.sub(REDACTED, text)
    registered = _registered_pattern
    if registered is not None:
        text = registered.sub(REDACTED, text)
    text = _V3_KEY.sub(rf"\g<1>{REDACTED}", text)
    text = _BASIC.sub(rf"\g<1>{REDACTED}", text)
    text = _QUERY_KEY.sub(rf"\g<1>{REDACTED}", text)
    return _URL_USERINFO.sub(rf"\g<1>{REDACTED}@", text)


# -- exceptions ----------------------------------------------------------------------------------


def _redact_bytes(data: bytes, secrets: Iterable[str]) -> bytes:
    text = data.decode("latin-1")  # one char per byte: what is not a secret comes back unchanged
    clean = redact(text, secrets)
    return data if clean == text else clean.encode("latin-1")


def _httpx(name: str) -> type | tuple[()]:
    """httpx's class ``name``, or ``()`` (matches nothing) while httpx is not imported: an httpx
    object cannot exist before, and the error tree stays importable without the network layer."""
    module = sys.modules.get("httpx")
    return cast(type, getattr(module, name)) if module is not None else ()


def _is_headers(value: object) -> TypeGuard[httpx.Headers]:
    return isinstance(value, _httpx("Headers"))


def _is_request(value: object) -> TypeGuard[httpx.Request]:
    return isinstance(value, _httpx("Request"))


def _is_response(value: object) -> TypeGuard[httpx.Response]:
    return isinstance(value, _httpx("Response"))


def _is_url(value: object) -> TypeGuard[httpx.URL]:
    return isinstance(value, _httpx("URL"))


def _clean_httpx_headers(headers: httpx.Headers, secrets: Iterable[str]) -> httpx.Headers:
    items = headers.multi_items()
    clean = [(k, redact(v, secrets)) for k, v in items]
    return headers if clean == items else type(headers)(clean)


def _clean_headers(headers: object, secrets: Iterable[str]) -> object:
    if _is_headers(headers):
        return _clean_httpx_headers(headers, secrets)
    raw_items = getattr(headers, "raw_items", None)  # websockets' Headers
    if callable(raw_items):
        items = list(raw_items())
        clean = [(k, redact(v, secrets)) for k, v in items]
        if clean == items:
            return headers
        # websockets' Headers is built from its (name, value) pairs
        return cast(Callable[[list[tuple[str, str]]], object], type(headers))(clean)
    return headers


def _scrub_message(obj: object, secrets: Iterable[str]) -> None:
    """Mask an httpx or websockets request/response in place: URL, path, headers, body."""
    if _is_request(obj):
        url = str(obj.url)
        clean = redact(url, secrets)
        if clean != url:
            obj.url = type(obj.url)(clean)
        obj.headers = _clean_httpx_headers(obj.headers, secrets)
        if isinstance(getattr(obj, "_content", None), bytes):
            obj._content = _redact_bytes(obj._content, secrets)
        return
    if _is_response(obj):
        obj.headers = _clean_httpx_headers(obj.headers, secrets)
        if isinstance(getattr(obj, "_content", None), bytes):
            obj._content = _redact_bytes(obj._content, secrets)
        if getattr(obj, "_request", None) is not None:
            _scrub_message(obj._request, secrets)
        return
    # websockets' handshake Request/Response (dataclasses: path, headers, body, reason_phrase)
    for name in ("path", "reason_phrase", "body", "headers"):
        value = getattr(obj, name, None)
        masked: object
        if isinstance(value, str):
            masked = redact(value, secrets)
        elif isinstance(value, bytes):
            masked = _redact_bytes(value, secrets)
        elif name == "headers" and value is not None:
            masked = _clean_headers(value, secrets)
        else:
            continue
        if masked is not value:
            # a frozen or slotted object stays as it is
            with contextlib.suppress(AttributeError, TypeError):
                setattr(obj, name, masked)


def _is_message(value: object) -> bool:
    if _is_request(value) or _is_response(value):
        return True
    return type(value).__module__.startswith("websockets") and hasattr(value, "headers")


def _clean_value(value: object, secrets: Iterable[str]) -> object:
    """``value`` with credentials masked: a new str/bytes/URL/tuple, or the same object
    (requests and responses are masked in place)."""
    if isinstance(value, str):
        clean = redact(value, secrets)
        return value if clean == value else clean
    if isinstance(value, bytes):
        return _redact_bytes(value, secrets)
    if _is_url(value):
        text = str(value)
        clean = redact(text, secrets)
        return value if clean == text else type(value)(clean)
    if isinstance(value, tuple):
        items = tuple(_clean_value(v, secrets) for v in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if _is_message(value):
        _scrub_message(value, secrets)
    return value


def _scrub_one(exc: BaseException, secrets: Iterable[str]) -> None:
    args = _clean_value(exc.args, secrets)  # a tuple again, new only where masked
    if isinstance(args, tuple) and args is not exc.args:
        with contextlib.suppress(AttributeError, TypeError):
            exc.args = args
    for name, value in list(vars(exc).items()):
        if name.startswith("__"):
            continue
        clean = _clean_value(value, secrets)
        if clean is not value:
            with contextlib.suppress(AttributeError, TypeError):
                setattr(exc, name, clean)
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list):
        notes[:] = [redact(n, secrets) if isinstance(n, str) else n for n in notes]


def _leaks(exc: BaseException, secrets: Iterable[str]) -> bool:
    try:
        shown = f"{exc}\n{exc!r}"
    except Exception:  # a broken __str__ shows nothing
        return False
    return redact(shown, secrets) != shown


class RedactedError(Exception):
    """Stands in a chain for an exception whose text could not be masked in place.

    Its message is the original's type and redacted text, e.g.
    ``ConnectError: [Errno 111] Connection refused (http://host/v3/***)``.
    """


def _stand_in(exc: BaseException, secrets: Iterable[str]) -> RedactedError:
    try:
        text = str(exc)
    except Exception:
        text = ""
    stand_in = RedactedError(f"{type(exc).__name__}: {redact(text, secrets)}")
    stand_in.__traceback__ = exc.__traceback__
    return stand_in


def scrub_exception(exc: BaseException, secrets: Iterable[str] = ()) -> BaseException:
    """Mask credentials in ``exc`` and every exception chained to it, in place.

    Walks ``__cause__``, ``__context__`` and the members of exception groups; in each, masks
    string args and attributes, ``__notes__``, and the httpx ``Request``/``Response`` (URL,
    headers, body) or websockets handshake objects it holds. An exception whose text still
    shows a secret afterwards (a ``__str__`` reading state it keeps elsewhere) is replaced in
    the chain by a :class:`RedactedError` saying its type and redacted text.

    Parameters
    ----------
    exc : BaseException
    secrets : iterable of str
        Secrets to mask besides the registered ones and the recognised forms.

    Returns
    -------
    BaseException
        ``exc`` itself (or its stand-in, should its own text not be maskable).
    """
    secrets = list(secrets)
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        _scrub_one(current, secrets)
        for link in ("__cause__", "__context__"):
            chained = getattr(current, link)
            if chained is None:
                continue
            if _leaks(chained, secrets) and not _clean_after(chained, secrets):
                chained = _stand_in(chained, secrets)
                setattr(current, link, chained)
            stack.append(chained)
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)
    if _leaks(exc, secrets):
        return _stand_in(exc, secrets)
    return exc


def describe(exc: BaseException, secrets: Iterable[str] = ()) -> str:
    """What happened, for a feeslab error's message: ``"ConnectError: [Errno 111] Connection
    refused"``, the exception scrubbed first (:func:`scrub_exception`).

    A timeout with no text of its own (anyio's) says ``timed out``; another exception with
    none borrows its first cause's.
    """
    scrub_exception(exc, secrets)
    text = str(exc).strip()
    if not text and (isinstance(exc, (TimeoutError, _httpx("TimeoutException")))):
        text = "timed out"  # anyio's own text is a cancel scope's id: noise
    link = exc.__cause__ or exc.__context__
    for _ in range(8):  # the chains here are short; a cycle must not spin
        if link is None or text:
            break
        text = str(link).strip()
        link = link.__cause__ or link.__context__
    return f"{type(exc).__name__}: {redact(text, secrets)}" if text else type(exc).__name__


def _clean_after(exc: BaseException, secrets: Iterable[str]) -> bool:
    _scrub_one(exc, secrets)
    return not _leaks(exc, secrets)


# -- log records ---------------------------------------------------------------------------------


class RedactingFilter(logging.Filter):
    """Rewrites a log record that shows a credential; never drops one.

    The message is formatted, masked and stored as ``record.msg`` with no ``args``; the
    exception in ``exc_info`` is scrubbed (:func:`scrub_exception`) and its formatted text
    masked into ``exc_text``, which formatters use as is; ``stack_info`` is masked too.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken record: let logging report it as it does
            return True
        clean = redact(message)
        args = record.args
        leaky_args = bool(args) and redact(repr(args)) != repr(args)
        if clean != message or leaky_args:
            record.msg, record.args = clean, ()
        if record.exc_info and record.exc_info[1] is not None:
            exc = scrub_exception(record.exc_info[1])
            record.exc_info = (type(exc), exc, record.exc_info[2])
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(text)
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


LOG_FILTER = RedactingFilter()
"""The one filter :func:`install_log_filter` puts on the loggers."""

_FILTERED = (
    "asyncio",
    "feeslab",
    "httpcore",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
    "httpx",
    "uvicorn",
    "uvicorn.access",
    "uvicorn.asgi",
    "uvicorn.error",
    "websockets",
    "websockets.client",
    "websockets.server",
)
_FILTERED_PREFIXES = ("feeslab.", "httpcore.", "httpx.", "uvicorn.", "websockets.")


def install_log_filter() -> None:
    """Put :data:`LOG_FILTER` on the loggers feeslab's requests write to.

    A logger's filters see only the records logged to that very logger (not those its
    children pass up), so each is filtered by name: httpx, httpcore's, websockets',
    uvicorn's (the embedded devnet), asyncio and every ``feeslab.*`` logger that exists.
    Idempotent; :func:`register_secrets` calls it.
    """
    existing = [
        n for n in list(logging.root.manager.loggerDict) if n.startswith(_FILTERED_PREFIXES)
    ]
    for name in {*_FILTERED, *existing}:
        logger = logging.getLogger(name)
        if LOG_FILTER not in logger.filters:
            logger.addFilter(LOG_FILTER)

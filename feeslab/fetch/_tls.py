"""One TLS context for every client of the process.

httpx builds a fresh ``SSLContext`` (loading the whole CA bundle) for each client it makes,
which costs 20-60 ms: more than a whole batch of 500 headers on a fast link. The context holds
no per-connection state, so one, built the way httpx builds its default (certifi's bundle,
``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured), serves every client.
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """The process's verifying TLS context (made on first use)."""
    return httpx.create_ssl_context()

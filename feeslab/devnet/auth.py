"""API key and secret checks for the devnet, as the real service answers them.

The node surfaces carry the key in the URL path (``/v3/<KEY>``); the Gas API and the devnet's own
endpoints take HTTP Basic ``key:secret``. A failure answers HTTP 401 with a JSON body that says
what is missing or wrong, never what the right value is.

Comparisons run in constant time (``hmac.compare_digest``), and nothing here logs or echoes a
key: a failure message names the field, not the value.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from dataclasses import dataclass, field

KEY_REQUIRED = "project id required in the URL"
INVALID_KEY = "invalid project id"
INVALID_SECRET = "invalid project secret"
SECRET_REQUIRED = "project secret required"
BASIC_REQUIRED = "basic authentication required"
MALFORMED_BASIC = "malformed basic authentication header"

BASIC_CHALLENGE = 'Basic realm="feeslab devnet", charset="UTF-8"'
"""``WWW-Authenticate`` value sent with a 401 on a Basic-authenticated surface."""


@dataclass(frozen=True)
class Credentials:
    """The one key and secret a devnet accepts.

    ``repr`` hides both, so a traceback or a log line cannot leak them.
    """

    api_key: str = field(repr=False)
    api_key_secret: str = field(repr=False)


def _same(given: str, expected: str) -> bool:
    # compare_digest needs bytes for non-ASCII text; surrogatepass keeps odd path text encodable
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


def check_key(creds: Credentials, key: str | None) -> str | None:
    """Check a key taken from a URL path.

    Returns
    -------
    str or None
        ``None`` when the key is right, else the 401 message.
    """
    if not key:
        return KEY_REQUIRED
    if not _same(key, creds.api_key):
        return INVALID_KEY
    return None


def parse_basic(header: str | None) -> tuple[str, str] | None:
    """Split an ``Authorization: Basic ...`` header into ``(user, password)``.

    Returns ``None`` when the header is absent, not Basic, or not valid Base64 of ``user:password``
    (a missing colon means an empty password).
    """
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic" or not token.strip():
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    user, _, password = decoded.partition(":")
    return user, password


def check_basic(creds: Credentials, header: str | None) -> str | None:
    """Check HTTP Basic ``key:secret`` credentials.

    Parameters
    ----------
    creds : Credentials
        What the devnet accepts.
    header : str or None
        The request's ``Authorization`` header.

    Returns
    -------
    str or None
        ``None`` when both key and secret are right, else the 401 message.
    """
    if not header:
        return BASIC_REQUIRED
    parsed = parse_basic(header)
    if parsed is None:
        return MALFORMED_BASIC
    user, password = parsed
    problem = check_key(creds, user)
    if problem == KEY_REQUIRED:
        return BASIC_REQUIRED
    if problem is not None:
        return problem
    if not password:
        return SECRET_REQUIRED
    if not _same(password, creds.api_key_secret):
        return INVALID_SECRET
    return None


def unauthorized_body(message: str) -> dict[str, str]:
    """The JSON body of a 401 answer."""
    return {"error": message}

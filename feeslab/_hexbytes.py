"""Hex-string checks shared by the client's layers (addresses for now)."""

from __future__ import annotations

import re
from typing import TypeGuard

__all__ = ["check_address", "is_address"]

# eth-utils' is_hex_address with the 0x required, as a pattern: importing eth-utils costs 0.4 s
# and 20 MiB (pydantic, cytoolz), which every dataset's import would pay for this one check
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")


def is_address(value: object) -> TypeGuard[str]:
    """Whether ``value`` is ``0x`` and 40 hex digits (any case; a checksum is not required)."""
    # eth-utils also accepts the digits without 0x (and 0X); the JSON-RPC spec does not
    return isinstance(value, str) and _ADDRESS.fullmatch(value) is not None


def check_address(value: object, name: str) -> str:
    """``value`` if it is an address (see :func:`is_address`), else a ValueError naming ``name``."""
    if not is_address(value):
        raise ValueError(f"{name} must be 0x followed by 40 hex digits, not {value!r}")
    return value

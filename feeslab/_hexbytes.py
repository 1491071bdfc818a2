"""Hex-string checks shared by the client's layers (addresses for now)."""

from __future__ import annotations

from typing import TypeGuard

from eth_utils.address import is_hex_address

__all__ = ["check_address", "is_address"]


def is_address(value: object) -> TypeGuard[str]:
    """Whether ``value`` is ``0x`` and 40 hex digits (any case; a checksum is not required)."""
    # eth-utils also accepts the digits without 0x (and 0X); the JSON-RPC spec does not
    return isinstance(value, str) and value.startswith("0x") and is_hex_address(value)


def check_address(value: object, name: str) -> str:
    """``value`` if it is an address (see :func:`is_address`), else a ValueError naming ``name``."""
    if not is_address(value):
        raise ValueError(f"{name} must be 0x followed by 40 hex digits, not {value!r}")
    return value

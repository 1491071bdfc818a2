"""The devnet's flat RLP encoder and keccak256: what the chain hashes block by block.

A flat-list encoder: the header chain is hashed block by block, and the general ``rlp``
package is several times slower.  Tests check this encoder against ``rlp.encode``.  Its own
module so that the chain, its transactions and its access lists share it without importing
one another.

References
----------
.. [1] G. Wood, "Ethereum: a secure decentralised generalised transaction ledger" (Yellow
   Paper), appendix B (Recursive Length Prefix).
"""

from __future__ import annotations

from collections.abc import Sequence

from eth_hash.auto import keccak  # pycryptodome's keccak: wheels on every platform, no compiler

__all__ = ["rlp_list_of_encoded"]

try:  # safe-pysha3 where it ships wheels (Linux x86-64): ~1.3 us a hash, eth-hash's ~9 us
    from sha3 import keccak_256 as _keccak_256

    def _keccak(data: bytes) -> bytes:
        return _keccak_256(data).digest()
except ImportError:  # pragma: no cover - other platforms
    _keccak = keccak



def _rlp_length_prefix(length: int, offset: int) -> bytes:
    if length < 56:
        return bytes((offset + length,))
    raw = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes((offset + 55 + len(raw),)) + raw


def _rlp_item(value: bytes | int) -> bytes:
    if isinstance(value, int):
        value = value.to_bytes((value.bit_length() + 7) // 8, "big")
    if len(value) == 1 and value[0] < 0x80:
        return value
    return _rlp_length_prefix(len(value), 0x80) + value


def _rlp_int(value: int) -> bytes:
    if value < 0x80:
        return b"\x80" if value == 0 else bytes((value,))
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return bytes((0x80 + len(raw),)) + raw


def rlp_list_of_encoded(encoded: Sequence[bytes]) -> bytes:
    """RLP of a list whose items are already RLP-encoded."""
    payload = b"".join(encoded)
    return _rlp_length_prefix(len(payload), 0xC0) + payload

"""Independent reference implementations the tests check the code against.

Written from the specifications (EIP-1559's reference code, the Yellow Paper's
header layout) with the ``rlp`` and ``eth_hash`` packages, never with feeslab's
own code, so that a test comparing the two can fail.
"""

from __future__ import annotations

from typing import Any

import rlp
from eth_hash.auto import keccak

# Yellow Paper header order; "int" fields are quantities, the rest byte strings
HEADER_FIELDS = (
    ("parentHash", "bytes"), ("sha3Uncles", "bytes"), ("miner", "bytes"),
    ("stateRoot", "bytes"), ("transactionsRoot", "bytes"), ("receiptsRoot", "bytes"),
    ("logsBloom", "bytes"), ("difficulty", "int"), ("number", "int"), ("gasLimit", "int"),
    ("gasUsed", "int"), ("timestamp", "int"), ("extraData", "bytes"), ("mixHash", "bytes"),
    ("nonce", "bytes"),
)


def eip1559_base_fee(
    parent_fee: int, used: int, limit: int, elasticity: int = 2, denominator: int = 8
) -> int:
    """EIP-1559's reference base fee update, transcribed from the EIP [wei]."""
    target = limit // elasticity
    if used == target:
        return parent_fee
    if used > target:
        return parent_fee + max(parent_fee * (used - target) // target // denominator, 1)
    return parent_fee - parent_fee * (target - used) // target // denominator


def header_rlp(block: dict[str, Any]) -> bytes:
    """RLP of the header a block/uncle JSON object describes (London adds baseFeePerGas)."""
    items: list[Any] = []
    for name, kind in HEADER_FIELDS:
        value = block[name]
        items.append(int(value, 16) if kind == "int" else bytes.fromhex(value[2:]))
    if "baseFeePerGas" in block:
        items.append(int(block["baseFeePerGas"], 16))
    return rlp.encode(items)


def header_hash(block: dict[str, Any]) -> str:
    """``0x`` keccak256 of :func:`header_rlp`: what the block's ``hash`` must be."""
    return "0x" + keccak(header_rlp(block)).hex()

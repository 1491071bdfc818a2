"""A block header's hash from its JSON-RPC answer: anyone can check a block without trusting
the node that served it.

A block's hash is keccak256 of its RLP-encoded header: the fields of the yellow paper in their
order, extended at each fork (London's ``baseFeePerGas``, Shanghai's ``withdrawalsRoot``,
Cancun's blob fields and beacon root, Prague's ``requestsHash``). The JSON of
``eth_getBlockByNumber`` or ``eth_getUncleByBlockNumberAndIndex`` carries every one of them, so
:func:`header_hash` recomputes the hash from the answer alone.
"""

from __future__ import annotations

from collections.abc import Mapping

import rlp
from eth_hash.auto import keccak

__all__ = ["HEADER_FIELDS", "header_hash", "header_rlp"]

HEADER_FIELDS: tuple[str, ...] = (
    "parentHash", "sha3Uncles", "miner", "stateRoot", "transactionsRoot", "receiptsRoot",
    "logsBloom", "difficulty", "number", "gasLimit", "gasUsed", "timestamp", "extraData",
    "mixHash", "nonce",
    "baseFeePerGas",  # London
    "withdrawalsRoot",  # Shanghai
    "blobGasUsed", "excessBlobGas", "parentBeaconBlockRoot",  # Cancun
    "requestsHash",  # Prague
)  # fmt: skip
"""The header's fields in RLP order, as JSON-RPC names them."""

_QUANTITIES = frozenset(
    {"difficulty", "number", "gasLimit", "gasUsed", "timestamp", "baseFeePerGas", "blobGasUsed",
     "excessBlobGas"}
)  # encoded as integers; the rest are byte strings


def header_rlp(block: Mapping[str, object]) -> bytes:
    """The RLP encoding of a block's header, from its JSON-RPC object.

    Parameters
    ----------
    block : mapping
        A block (``eth_getBlockByNumber``) or uncle (``eth_getUncleBy*``) as JSON: hex strings.
        A fork's fields are encoded when present; a field in the middle of the list that is
        missing while a later one is present is an error (no header skips one).

    Raises
    ------
    ValueError
        When a field is missing out of order or is not hex.
    """
    present = [name for name in HEADER_FIELDS if block.get(name) is not None]
    if present != list(HEADER_FIELDS[: len(present)]):
        gap = next(n for n, p in zip(HEADER_FIELDS, present, strict=False) if n != p)
        raise ValueError(f"the block's header lacks {gap!r} but has later fields: not a header")
    items: list[int | bytes] = []
    for name in present:
        text = block[name]
        if not isinstance(text, str) or not text.startswith("0x"):
            raise ValueError(f"header field {name!r} must be a 0x-hex string, not {text!r}")
        try:
            items.append(int(text, 16) if name in _QUANTITIES else bytes.fromhex(text[2:]))
        except ValueError:
            raise ValueError(f"header field {name!r} is not hex: {text!r}") from None
    encoded: bytes = rlp.encode(items)  # rlp is untyped
    return encoded


def header_hash(block: Mapping[str, object]) -> str:
    """keccak256 of the header's RLP, as ``0x``-hex: equal to ``block["hash"]`` for a genuine
    block.

    Examples
    --------
    >>> block = lab.node.request("eth_getBlockByNumber", [hex(120_000), False])  # doctest: +SKIP
    >>> header_hash(block) == block["hash"]  # doctest: +SKIP
    True
    """
    return "0x" + keccak(header_rlp(block)).hex()

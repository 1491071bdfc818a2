"""A block header's hash from its JSON-RPC answer: anyone can check a block without trusting
the node that served it.

A block's hash is keccak256 of its RLP-encoded header: the fields of the yellow paper in their
order, extended at each fork (London's ``baseFeePerGas``, Shanghai's ``withdrawalsRoot``,
Cancun's blob fields and beacon root, Prague's ``requestsHash``, Amsterdam's
``blockAccessListHash`` and ``slotNumber``). The JSON of ``eth_getBlockByNumber`` or
``eth_getUncleByBlockNumberAndIndex`` carries every one of them, so :func:`header_hash`
recomputes the hash from the answer alone.

A field feeslab does not know (a fork after Amsterdam's) is kept, not refused: it is encoded
after the known ones in the order the node served it, and :func:`header_hash` checks the
header with the fields as served. :func:`unknown_header_fields` names such fields, and the
first time a field is met a :class:`UnknownHeaderFieldWarning` says so.

References
----------
.. [1] go-ethereum ``core/types/block.go`` ``Header`` (the RLP order; ``BlockAccessListHash``,
   EIP-7928, and ``SlotNumber``, EIP-7843, after ``RequestsHash``), at commit
   02b73d4ea7181464175e0a6cbecc0a3a2655a562.
.. [2] Ethereum execution APIs, the ``Block`` schema.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping

from eth_hash.auto import keccak

__all__ = [
    "HEADER_FIELDS",
    "NON_HEADER_KEYS",
    "UnknownHeaderFieldWarning",
    "header_hash",
    "header_rlp",
    "unknown_header_fields",
]

HEADER_FIELDS: tuple[str, ...] = (
    "parentHash", "sha3Uncles", "miner", "stateRoot", "transactionsRoot", "receiptsRoot",
    "logsBloom", "difficulty", "number", "gasLimit", "gasUsed", "timestamp", "extraData",
    "mixHash", "nonce",
    "baseFeePerGas",  # London
    "withdrawalsRoot",  # Shanghai
    "blobGasUsed", "excessBlobGas", "parentBeaconBlockRoot",  # Cancun
    "requestsHash",  # Prague
    "blockAccessListHash", "slotNumber",  # Amsterdam (EIP-7928, EIP-7843)
)  # fmt: skip
"""The header's fields in RLP order, as JSON-RPC names them."""

NON_HEADER_KEYS: frozenset[str] = frozenset(
    {"hash", "size", "totalDifficulty", "transactions", "uncles", "withdrawals", "sealFields",
     "author", "blockAccessList", "requests", "executionWitness"}
)  # fmt: skip
"""Keys of a JSON-RPC block that are not header fields (the hash itself, the body, clients'
extras): never encoded, never reported as unknown."""

_QUANTITIES = frozenset(
    {"difficulty", "number", "gasLimit", "gasUsed", "timestamp", "baseFeePerGas", "blobGasUsed",
     "excessBlobGas", "slotNumber"}
)  # encoded as integers; the rest are byte strings
_KNOWN = frozenset(HEADER_FIELDS) | NON_HEADER_KEYS
_warned: set[str] = set()


class UnknownHeaderFieldWarning(UserWarning):
    """A block carried a header field feeslab does not know; it was kept (once per field)."""


def unknown_header_fields(block: Mapping[str, object]) -> tuple[str, ...]:
    """The keys of a JSON-RPC block that are neither known header fields nor known non-header
    keys, in the order served; warns once per field name (:class:`UnknownHeaderFieldWarning`).
    """
    unknown = tuple(key for key in block if key not in _KNOWN)
    for key in unknown:
        if key not in _warned:
            _warned.add(key)
            warnings.warn(
                f"block header field {key!r} is not one feeslab knows (a fork after "
                "Amsterdam?): kept as served, after the known fields, in the hash check and "
                "as an extra column",
                UnknownHeaderFieldWarning,
                stacklevel=2,
            )
    return unknown


def _item(name: str, text: object, as_int: bool) -> int | bytes:
    if not isinstance(text, str) or not text.startswith("0x"):
        raise ValueError(f"header field {name!r} must be a 0x-hex string, not {text!r}")
    try:
        return int(text, 16) if as_int else bytes.fromhex(text[2:])
    except ValueError:
        raise ValueError(f"header field {name!r} is not hex: {text!r}") from None


def _looks_like_data(text: object) -> bool:
    """An unknown field's likely encoding: DATA (even length, a leading zero byte or a hash
    or address's length) rather than a QUANTITY (no leading zeros)."""
    if not isinstance(text, str):
        return False
    digits = len(text) - 2
    return digits % 2 == 0 and (text[2:4] == "00" or digits in (40, 64) or digits == 0)


def _known_items(block: Mapping[str, object]) -> list[int | bytes]:
    present = [name for name in HEADER_FIELDS if block.get(name) is not None]
    if present != list(HEADER_FIELDS[: len(present)]):
        gap = next(n for n, p in zip(HEADER_FIELDS, present, strict=False) if n != p)
        raise ValueError(f"the block's header lacks {gap!r} but has later fields: not a header")
    return [_item(name, block[name], name in _QUANTITIES) for name in present]


def header_rlp(block: Mapping[str, object], *, extra: Mapping[str, bool] | None = None) -> bytes:
    """The RLP encoding of a block's header, from its JSON-RPC object.

    Parameters
    ----------
    block : mapping
        A block (``eth_getBlockByNumber``) or uncle (``eth_getUncleBy*``) as JSON: hex strings.
        A fork's fields are encoded when present; a field in the middle of the list that is
        missing while a later one is present is an error (no header skips one). Fields
        feeslab does not know follow, in the order served.
    extra : mapping of str to bool, optional
        The unknown fields to encode, each True to encode it as an integer (a QUANTITY) or
        False as bytes (DATA); by default every unknown field, guessed from its text.

    Raises
    ------
    ValueError
        When a field is missing out of order or is not hex.
    """
    items = _known_items(block)
    if extra is None:
        extra = {key: not _looks_like_data(block[key]) for key in unknown_header_fields(block)}
    items += [_item(key, block[key], as_int) for key, as_int in extra.items()]
    import rlp  # on first use: rlp loads eth-utils (0.4 s), which a process reading no header skips

    encoded: bytes = rlp.encode(items)  # rlp is untyped
    return encoded


def header_hash(block: Mapping[str, object]) -> str:
    """keccak256 of the header's RLP, as ``0x``-hex: equal to ``block["hash"]`` for a genuine
    block.

    With fields feeslab does not know, the header is checked with the fields as served: when
    the block names its ``hash``, each unknown field is tried as a QUANTITY and as DATA (JSON
    does not say which), then without the unknown fields (a client's extra key that is not
    in the header); the hash that matches is returned, else the first guess's.

    Examples
    --------
    >>> block = lab.node.request("eth_getBlockByNumber", [hex(120_000), False])  # doctest: +SKIP
    >>> header_hash(block) == block["hash"]  # doctest: +SKIP
    True
    """
    unknown = unknown_header_fields(block)
    guess = {key: not _looks_like_data(block[key]) for key in unknown}
    first = "0x" + keccak(header_rlp(block, extra=guess)).hex()
    served = block.get("hash")
    if not unknown or served is None or first == served:
        return first
    for kinds in itertools.product((True, False), repeat=len(unknown)):
        candidate = "0x" + keccak(header_rlp(block, extra=dict(zip(unknown, kinds,
                                                                   strict=True)))).hex()
        if candidate == served:
            return candidate
    without = "0x" + keccak(header_rlp(block, extra={})).hex()
    return without if without == served else first

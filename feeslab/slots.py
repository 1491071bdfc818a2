"""Solidity storage-slot arithmetic: where a contract keeps a value, and how to decode it.

Pure functions on Python integers. Slots and words are 256-bit unsigned integers; every
function accepts them as ``int``, as ``0x`` hex strings (``"0x5"``, or the 66-character words
``eth_getStorageAt`` answers) or as big-endian ``bytes`` of at most 32 bytes, and returns
``int`` (use :func:`slot_hex` for the hex form ``eth_getStorageAt`` takes). Bad input raises
``TypeError`` (wrong kind) or ``ValueError`` (wrong value), naming the argument.

Rules, from the Solidity documentation's "Layout of State Variables in Storage" [1]_:

* state variables take slots ``0, 1, 2, ...`` in declaration order; value types smaller than
  32 bytes share a slot, packed from its *low-order* end (solc's ``storageLayout`` gives each
  variable's ``offset`` in bytes from that end);
* the value of ``mapping`` key ``k`` at slot ``p`` is at ``keccak256(h(k) . p)``, where
  ``h`` pads value types to 32 bytes and leaves ``string``/``bytes`` keys unpadded;
* a dynamic array at slot ``p`` keeps its length at ``p`` and its elements from
  ``keccak256(p)``, packed like state variables when an element takes 16 bytes or fewer;
* a ``string`` or ``bytes`` of at most 31 bytes lives in its slot (data in the high-order
  bytes, ``2 * length`` in the lowest byte); a longer one keeps ``2 * length + 1`` in the slot
  and its data from ``keccak256(p)``.

EIP-1967 [2]_ puts a proxy's implementation, admin and beacon addresses at slots derived from
fixed strings, far from the implementation's own slots.

References
----------
.. [1] Solidity documentation, "Layout of State Variables in Storage" and "Layout in Memory /
   Mappings and Dynamic Arrays", https://docs.soliditylang.org/en/latest/internals/layout_in_storage.html
.. [2] EIP-1967: Proxy Storage Slots, https://eips.ethereum.org/EIPS/eip-1967
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping, Sequence
from typing import Any, SupportsIndex, TypeAlias

from eth_hash.auto import keccak

__all__ = [
    "ADMIN_SLOT",
    "BEACON_SLOT",
    "IMPLEMENTATION_SLOT",
    "WordLike",
    "array_element_slot",
    "decode_short_string",
    "decode_word",
    "mapping_slot",
    "nested_mapping_slot",
    "packed_field",
    "slot_from_layout",
    "slot_hex",
    "storage_word",
    "struct_member_slot",
    "type_size",
]

#: A slot, key or storage word as the functions here take it: an int (or anything with
#: ``__index__``), a 0x hex string, or big-endian bytes.
WordLike: TypeAlias = SupportsIndex | str | bytes | bytearray | memoryview
WORD_BITS = 256
WORD_MOD = 1 << WORD_BITS

_HEX = re.compile(r"0[xX][0-9a-fA-F]+")
_WORD = re.compile(r"0[xX][0-9a-fA-F]{0,64}")
# value types without a size suffix: (kind, size) as _parse_type returns it
_FIXED_SIZES = {"address": 20, "bool": 1, "string": 0}


# -- input normalisation ------------------------------------------------------------------------


def _as_uint256(value: WordLike, name: str) -> int:
    """``value`` (int, 0x hex string or big-endian bytes) as an int in [0, 2**256)."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, a 0x hex string or bytes, not bool")
    if isinstance(value, str):
        if not _HEX.fullmatch(value):
            raise ValueError(f"{name} must be a 0x-prefixed hex string, got {value!r}")
        if len(value) - 2 > 64:
            raise ValueError(f"{name} is longer than 32 bytes: {value!r}")
        return int(value, 16)
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        if len(data) > 32:
            raise ValueError(f"{name} is longer than 32 bytes ({len(data)} bytes)")
        return int.from_bytes(data, "big")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(
            f"{name} must be an int, a 0x hex string or bytes, not {type(value).__name__}"
        ) from None
    if not 0 <= number < WORD_MOD:
        raise ValueError(f"{name} must be in [0, 2**256), got {number}")
    return number


def storage_word(answer: object, name: str = "word") -> int:
    """An ``eth_getStorageAt`` answer as an int in [0, 2**256).

    Every shape real nodes answer is a word: 66-character words (geth, the devnet), short
    ones without leading zeros (``0x0``, ``0x1``) and ``0x`` for an empty slot (ganache), all
    big-endian.

    Raises
    ------
    feeslab.MalformedWord
        (a ``FeeslabError`` and a ``ValueError``) Not a string, not hex, or longer than 32
        bytes; ``name`` says which answer.
    """
    from feeslab.errors import MalformedWord  # late: slots stays importable alone

    if not isinstance(answer, str) or not _WORD.fullmatch(answer):
        shown = repr(answer) if len(repr(answer)) <= 80 else repr(answer)[:77] + "..."
        why = (f"is longer than 32 bytes ({(len(answer) - 1) // 2} bytes)"
               if isinstance(answer, str) and _HEX.fullmatch(answer)
               else "is not 0x followed by at most 64 hex digits")
        raise MalformedWord(f"{name} {why}: {shown}", value=answer)
    return int(answer[2:] or "0", 16)


def _word_bytes(value: int) -> bytes:
    return value.to_bytes(32, "big")


def _keccak_int(data: bytes) -> int:
    return int.from_bytes(keccak(data), "big")


def _parse_type(type_: object, name: str = "type") -> tuple[str, int]:
    """Normalise a Solidity value type to ``(kind, bits-or-bytes)``.

    Accepts ``"uint80"``, ``"int128"``, ``"uint"`` (= uint256), ``"address"``, ``"bool"``,
    ``"bytes32"``, ``"string"``, ``"bytes"`` and solc's type ids (``"t_uint80"``,
    ``"t_string_storage"``, ``"t_bytes_memory_ptr"``). Returns ``("uint", 80)``,
    ``("int", 128)``, ``("address", 20)``, ``("bool", 1)``, ``("fixedbytes", 32)``,
    ``("string", 0)`` or ``("bytes", 0)``.
    """
    if not isinstance(type_, str):
        raise TypeError(f"{name} must be a Solidity type name such as 'uint256', not "
                        f"{type(type_).__name__}")
    t = type_.strip()
    if t.startswith("t_"):
        t = t[2:]
        for suffix in ("_storage_ptr", "_storage", "_memory_ptr", "_calldata_ptr", "_payable"):
            t = t.removesuffix(suffix)
    if t == "address payable":
        t = "address"
    # eth-abi's grammar (and its parser's dependencies) loads here, when a type is first read,
    # not with every frame module that imports slots
    from eth_abi.exceptions import ABITypeError, ParseError
    from eth_abi.grammar import BasicType, normalize, parse

    try:
        parsed = parse(normalize(t))
        parsed.validate()
    except (ParseError, ABITypeError):
        parsed = None
    if isinstance(parsed, BasicType) and not parsed.arrlist:
        base, sub = parsed.base, parsed.sub
        if base in _FIXED_SIZES and sub is None:
            return base, _FIXED_SIZES[base]
        if base in ("uint", "int"):
            return base, sub
        if base == "bytes":
            return ("fixedbytes", sub) if sub else ("bytes", 0)
    raise ValueError(
        f"{name}: unsupported Solidity value type {type_!r} (expected uint<N>, int<N>, "
        "address, bool, bytes<N>, string or bytes)"
    )


def type_size(type_: str) -> int:
    """Bytes a Solidity value type takes in storage [bytes].

    Parameters
    ----------
    type_ : str
        ``"uint<N>"``, ``"int<N>"``, ``"address"``, ``"bool"`` or ``"bytes<N>"``, or solc's
        type id for one of them (``"t_uint80"``).

    Returns
    -------
    int
        ``N / 8`` for integers, 20 for ``address``, 1 for ``bool``, ``N`` for ``bytes<N>``.

    References
    ----------
    .. [1] Solidity documentation, "Layout of State Variables in Storage".
    """
    kind, size = _parse_type(type_, "type_")
    if kind in ("uint", "int"):
        return size // 8
    if kind in ("string", "bytes"):
        raise ValueError(f"type_ {type_!r} is dynamically sized; it has no fixed width")
    return size


def slot_hex(slot: WordLike) -> str:
    """A slot as the 0x-prefixed 64-digit hex string that ``eth_getStorageAt`` takes.

    Parameters
    ----------
    slot : int, str or bytes
        The slot.

    Returns
    -------
    str
        ``"0x"`` followed by 64 lower-case hex digits.
    """
    return f"0x{_as_uint256(slot, 'slot'):064x}"


# -- slots -------------------------------------------------------------------------------------


def _encode_key(key: Any, key_type: str) -> bytes:
    """``h(k)`` of the Solidity docs: value types padded to 32 bytes, string/bytes as they are."""
    kind, size = _parse_type(key_type, "key_type")
    if kind == "string":
        if isinstance(key, str):
            return key.encode("utf-8")
        if isinstance(key, bytes | bytearray):
            return bytes(key)
        raise TypeError(f"key must be str or bytes for key_type 'string', not {type(key).__name__}")
    if kind == "bytes":
        if isinstance(key, bytes | bytearray):
            return bytes(key)
        if isinstance(key, str):
            if key in ("0x", "0X"):
                return b""
            if not _HEX.fullmatch(key) or len(key) % 2:
                raise ValueError(f"key must be 0x hex with whole bytes for key_type 'bytes': "
                                 f"{key!r}")
            return bytes.fromhex(key[2:])
        raise TypeError(f"key must be bytes or 0x hex for key_type 'bytes', not "
                        f"{type(key).__name__}")
    if kind == "int":
        if isinstance(key, bool):
            raise TypeError("key must be an int for a signed key_type, not bool")
        try:
            number = operator.index(key)
        except TypeError:
            raise TypeError(f"key must be an int for key_type {key_type!r}, "
                            f"not {type(key).__name__}") from None
        if not -(1 << (size - 1)) <= number < 1 << (size - 1):
            raise ValueError(f"key {number} is out of range for {key_type!r}")
        return _word_bytes(number % WORD_MOD)  # sign-extended to 32 bytes, as abi.encode does
    if kind == "bool":
        if not isinstance(key, bool) and key not in (0, 1):
            raise ValueError(f"key must be True/False (or 0/1) for key_type 'bool', got {key!r}")
        return _word_bytes(int(bool(key)))
    if kind == "fixedbytes":
        if isinstance(key, bytes | bytearray | str):
            if isinstance(key, str):
                if not _HEX.fullmatch(key) or len(key) % 2:
                    raise ValueError(f"key must be 0x hex with whole bytes: {key!r}")
                data = bytes.fromhex(key[2:])
            else:
                data = bytes(key)
            if len(data) != size:
                raise ValueError(f"key must be exactly {size} bytes for key_type {key_type!r}, "
                                 f"got {len(data)}")
        else:
            number = _as_uint256(key, "key")
            if number >= 1 << (8 * size):
                raise ValueError(f"key {number:#x} does not fit {key_type!r}")
            data = number.to_bytes(size, "big")
        return data.ljust(32, b"\0")  # bytesN are left-aligned in an ABI word
    # uint<N>, address
    bits = size if kind == "uint" else 160
    if kind == "address" and isinstance(key, str) and not (len(key) == 42 and _HEX.fullmatch(key)):
        raise ValueError(f"key must be a 20-byte 0x address (42 characters), got {key!r}")
    if kind == "address" and isinstance(key, bytes | bytearray) and len(key) != 20:
        raise ValueError(f"key must be 20 bytes for key_type 'address', got {len(key)}")
    number = _as_uint256(key, "key")
    if number >= 1 << bits:
        raise ValueError(f"key {number:#x} does not fit {key_type!r}")
    return _word_bytes(number)


def mapping_slot(key: WordLike, slot: WordLike, *, key_type: str = "address") -> int:
    """Slot of ``mapping[key]`` for a mapping declared at ``slot``.

    ``keccak256(h(key) . pad32(slot))``, where ``h`` left-pads integers and addresses to 32
    bytes (signed integers sign-extended), right-pads ``bytes<N>``, and leaves ``string`` and
    ``bytes`` keys unpadded.

    Parameters
    ----------
    key : int, str or bytes
        The key: an address as ``0x`` + 40 hex digits (or 20 bytes, or an int); an integer;
        ``bytes<N>`` as N bytes, 0x hex or an int; a ``string`` key as ``str`` (UTF-8 encoded)
        or raw bytes; a ``bytes`` key as bytes or 0x hex.
    slot : int, str or bytes
        The mapping's own slot (from solc's ``storageLayout``, or a slot computed by this
        module for mappings inside mappings, structs or arrays).
    key_type : str, default "address"
        The key's Solidity type: ``"address"``, ``"uint<N>"``, ``"int<N>"``, ``"bool"``,
        ``"bytes<N>"``, ``"string"``, ``"bytes"``, or solc's type id (``"t_address"``).

    Returns
    -------
    int
        The slot holding the value (for value types) or where the value's layout starts.

    References
    ----------
    .. [1] Solidity documentation, "Layout of State Variables in Storage", section "Mappings
       and Dynamic Arrays".
    """
    base = _as_uint256(slot, "slot")
    return _keccak_int(_encode_key(key, key_type) + _word_bytes(base))


def nested_mapping_slot(
    keys: Sequence[WordLike], slot: WordLike, key_types: str | Sequence[str] = "address"
) -> int:
    """Slot of ``mapping[k0][k1]...`` for nested mappings declared at ``slot``.

    Applies :func:`mapping_slot` once per key, outermost first: the value of ``m[a][b]`` is at
    ``keccak256(h(b) . keccak256(h(a) . pad32(slot)))``.

    Parameters
    ----------
    keys : sequence
        Keys, outermost first (e.g. ``(owner, spender)`` for ERC-20 allowances).
    slot : int, str or bytes
        The outer mapping's slot.
    key_types : str or sequence of str, default "address"
        One type for every key, or one type per key.

    Returns
    -------
    int
        The innermost value's slot.

    References
    ----------
    .. [1] Solidity documentation, "Layout of State Variables in Storage", section "Mappings
       and Dynamic Arrays" (the ``data[4][9].a`` example).
    """
    if isinstance(keys, str | bytes) or not isinstance(keys, Sequence):
        raise TypeError("keys must be a sequence of keys, outermost first")
    if not keys:
        raise ValueError("keys must hold at least one key")
    types = [key_types] * len(keys) if isinstance(key_types, str) else list(key_types)
    if len(types) != len(keys):
        raise ValueError(f"key_types has {len(types)} types for {len(keys)} keys")
    current = _as_uint256(slot, "slot")
    for key, key_type in zip(keys, types, strict=True):
        current = mapping_slot(key, current, key_type=key_type)
    return current


def array_element_slot(
    slot: WordLike,
    index: int,
    *,
    element_slots: int = 1,
    element_bytes: int | None = None,
    dynamic: bool = True,
) -> int | tuple[int, int]:
    """Slot of element ``index`` of a storage array declared at ``slot``.

    A dynamic array keeps its length at ``slot`` and its elements from ``keccak256(slot)``;
    a fixed-size array (``dynamic=False``) starts at ``slot`` itself. Elements of 16 bytes or
    fewer are packed ``32 // element_bytes`` to a slot, from the low-order end.

    Parameters
    ----------
    slot : int, str or bytes
        The array's slot.
    index : int
        Element index (not bounds-checked: read the length at ``slot`` for that).
    element_slots : int, default 1
        Slots one element takes (a struct of three slots: 3).
    element_bytes : int, optional
        Bytes one element takes, for elements of at most 16 bytes (``uint8[]``: 1,
        ``address[]``: 20 -> one per slot). When given, the result is ``(slot, offset)``.
    dynamic : bool, default True
        False for fixed-size arrays (``uint256[4]``), whose data starts at ``slot``.

    Returns
    -------
    int or tuple of (int, int)
        The element's slot; with ``element_bytes``, ``(slot, offset_bytes)`` where the offset
        counts from the slot's low-order end, as in solc's ``storageLayout``.

    References
    ----------
    .. [1] Solidity documentation, "Layout of State Variables in Storage", sections "Mappings
       and Dynamic Arrays" and the packing rules for state variables.
    """
    base = _as_uint256(slot, "slot")
    index = _non_negative(index, "index")
    start = _keccak_int(_word_bytes(base)) if dynamic else base
    if element_bytes is not None:
        if element_slots != 1:
            raise ValueError("give element_slots or element_bytes, not both")
        if isinstance(element_bytes, bool) or not 1 <= operator.index(element_bytes) <= 32:
            raise ValueError(f"element_bytes must be in 1..32, got {element_bytes!r}")
        per_slot = 32 // element_bytes
        return (start + index // per_slot) % WORD_MOD, (index % per_slot) * element_bytes
    if isinstance(element_slots, bool) or operator.index(element_slots) < 1:
        raise ValueError(f"element_slots must be an int >= 1, got {element_slots!r}")
    return (start + index * element_slots) % WORD_MOD


def struct_member_slot(base: WordLike, member_slot_offset: int) -> int:
    """Slot of a struct member: the struct's first slot plus the member's ``slot`` offset.

    Parameters
    ----------
    base : int, str or bytes
        The struct's first slot (a state variable's slot, a mapping value's slot, an array
        element's slot).
    member_slot_offset : int
        The member's ``slot`` in solc's ``storageLayout`` type entry (``members``). Its byte
        ``offset`` is unchanged: use it with :func:`packed_field`.

    Returns
    -------
    int
        ``(base + member_slot_offset) mod 2**256``.

    References
    ----------
    .. [1] Solidity documentation, "Layout of State Variables in Storage": struct members
       follow the same rules as state variables, starting at the struct's slot.
    """
    start = _as_uint256(base, "base")
    return (start + _non_negative(member_slot_offset, "member_slot_offset")) % WORD_MOD


def _non_negative(value: SupportsIndex, name: str) -> int:
    """``value`` as an int >= 0 (numpy ints accepted): a TypeError for a bool or a non-integer,
    a ValueError naming ``name`` for a negative one."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not bool")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}") from None
    if number < 0:
        raise ValueError(f"{name} must be >= 0, got {number}")
    return number


# -- words -------------------------------------------------------------------------------------


def packed_field(
    word: WordLike, offset_bytes: int, size_bytes: int, *, signed: bool = False
) -> int:
    """Extract a packed value from a storage word.

    Parameters
    ----------
    word : int, str or bytes
        The 32-byte storage word (``eth_getStorageAt``'s answer).
    offset_bytes : int
        Offset of the value's lowest byte from the word's low-order end [bytes], as solc's
        ``storageLayout`` gives it (``decimals`` at offset 20 sits just above a 20-byte
        address at offset 0).
    size_bytes : int
        The value's width [bytes] (``numberOfBytes`` in ``storageLayout``).
    signed : bool, default False
        Read the field as two's complement (``int<N>``).

    Returns
    -------
    int
        The field's value.

    References
    ----------
    .. [1] Solidity documentation, "Layout of State Variables in Storage".
    """
    value = _as_uint256(word, "word")
    for name, number in (("offset_bytes", offset_bytes), ("size_bytes", size_bytes)):
        if isinstance(number, bool) or not isinstance(number, int):
            raise TypeError(f"{name} must be an int")
    if not 0 <= offset_bytes <= 31:
        raise ValueError(f"offset_bytes must be in 0..31, got {offset_bytes}")
    if not 1 <= size_bytes <= 32 - offset_bytes:
        raise ValueError(
            f"size_bytes must be in 1..{32 - offset_bytes} at offset {offset_bytes}, "
            f"got {size_bytes}"
        )
    bits = 8 * size_bytes
    field = (value >> (8 * offset_bytes)) & ((1 << bits) - 1)
    if signed and field >> (bits - 1):
        field -= 1 << bits
    return field


def decode_word(word: WordLike, type: str, *, offset: int = 0) -> int | bool | str | bytes:
    """Decode a value type from a storage word, as solc reads it.

    The value occupies ``type_size(type)`` bytes starting ``offset`` bytes from the word's
    low-order end; bytes outside it (other packed variables) are ignored, as solc does.
    ``bytes<N>`` too is stored low-order aligned in storage (unlike in ABI encoding, where it
    is left-aligned).

    Parameters
    ----------
    word : int, str or bytes
        The 32-byte storage word.
    type : str
        ``"uint<N>"``, ``"int<N>"``, ``"address"``, ``"bool"``, ``"bytes<N>"`` or solc's type
        id (``"t_uint8"``).
    offset : int, default 0
        The value's byte offset from the low-order end (solc's ``storageLayout`` ``offset``).

    Returns
    -------
    int, bool, str or bytes
        ``int`` for integers (negative for ``int<N>``), ``str`` ``"0x"`` + 40 lower-case hex
        digits for ``address``, ``bool``, ``bytes`` of length N for ``bytes<N>``.

    Raises
    ------
    ValueError
        For a ``bool`` byte other than 0 or 1, which means a wrong type or offset.

    References
    ----------
    .. [1] Solidity documentation, "Layout of State Variables in Storage".
    """
    kind, size = _parse_type(type, "type")
    if kind in ("string", "bytes"):
        raise ValueError(
            f"type {type!r} is dynamically sized: use decode_short_string for the slot's word"
        )
    width = size // 8 if kind in ("uint", "int") else size
    field = packed_field(word, offset, width, signed=kind == "int")
    if kind in ("uint", "int"):
        return field
    if kind == "address":
        return f"0x{field:040x}"
    if kind == "bool":
        if field not in (0, 1):
            raise ValueError(f"word holds {field:#x} at offset {offset}, not a bool (0 or 1)")
        return bool(field)
    return field.to_bytes(width, "big")


def decode_short_string(word: WordLike, *, raw: bool = False) -> str | bytes:
    """Decode a ``string`` (or ``bytes``) of at most 31 bytes from its slot's word.

    A short value keeps its data in the word's high-order bytes and ``2 * length`` in the
    lowest byte. A long one (32 bytes or more) keeps ``2 * length + 1`` in the slot and its
    data in ``ceil(length / 32)`` words from ``keccak256(slot)``
    (``array_element_slot(slot, 0)``, ``array_element_slot(slot, 1)``, ...); this function
    raises ``ValueError`` for it, giving the length.

    Parameters
    ----------
    word : int, str or bytes
        The variable's slot word.
    raw : bool, default False
        Return the bytes (for ``bytes`` variables) instead of decoding UTF-8.

    Returns
    -------
    str or bytes

    References
    ----------
    .. [1] Solidity documentation, "Layout of State Variables in Storage", section "bytes and
       string".
    """
    value = _as_uint256(word, "word")
    low = value & 0xFF
    if low & 1:
        length = value >> 1
        raise ValueError(
            f"word holds a long string or bytes ({length} bytes; the slot stores 2*length+1 = "
            f"{value:#x}): read its {(length + 31) // 32} data words from keccak256(slot) = "
            "array_element_slot(slot, 0), then array_element_slot(slot, 1), ..."
        )
    length = low // 2
    if length > 31:
        raise ValueError(f"word's length byte {low:#x} is not a short string's (2*length <= 62)")
    data = _word_bytes(value)
    if any(data[length:31]):
        raise ValueError("word is not a short string: bytes past its length are not zero")
    if raw:
        return data[:length]
    try:
        return data[:length].decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"word's {length} bytes are not UTF-8; pass raw=True: {err}") from None


# -- EIP-1967 ------------------------------------------------------------------------------------


def _eip1967(label: str) -> int:
    """``bytes32(uint256(keccak256(label)) - 1)``."""
    return _keccak_int(label.encode()) - 1


#: EIP-1967 implementation slot: keccak256("eip1967.proxy.implementation") - 1.
IMPLEMENTATION_SLOT: int = _eip1967("eip1967.proxy.implementation")
#: Slot of an EIP-1967 proxy's admin address: keccak256("eip1967.proxy.admin") - 1.
ADMIN_SLOT: int = _eip1967("eip1967.proxy.admin")
#: Slot of an EIP-1967 beacon proxy's beacon address: keccak256("eip1967.proxy.beacon") - 1.
BEACON_SLOT: int = _eip1967("eip1967.proxy.beacon")


# -- solc storageLayout ----------------------------------------------------------------------


def slot_from_layout(storage_layout: Mapping[str, Any], label: str) -> tuple[int, int, str]:
    """Find a state variable, or a member of a struct variable, in solc's ``storageLayout``.

    Parameters
    ----------
    storage_layout : dict
        solc's ``storageLayout`` output: ``{"storage": [...], "types": {...}}``.
    label : str
        A state variable's name (``"decimals"``), or a dotted path into struct variables
        (``"latest.answer"``).

    Returns
    -------
    tuple of (int, int, str)
        ``(slot, offset, type)``: the slot, the byte offset from the slot's low-order end,
        and solc's type id (``"t_uint8"``), which :func:`decode_word` and
        :func:`mapping_slot` accept.

    Raises
    ------
    ValueError
        When ``label`` names no variable (the message lists the labels there are).

    References
    ----------
    .. [1] Solidity documentation, "Layout of State Variables in Storage", section "JSON
       Output" (the ``storageLayout`` format).
    """
    if not isinstance(storage_layout, Mapping) or not isinstance(
        storage_layout.get("storage"), list
    ):
        raise TypeError("storage_layout must be solc's storageLayout: a dict with a 'storage' list")
    if not isinstance(label, str) or not label:
        raise TypeError("label must be a non-empty str")
    types = storage_layout.get("types") or {}
    entries: list[Mapping[str, Any]] = storage_layout["storage"]
    slot = 0
    path = label.split(".")
    for depth, part in enumerate(path):
        found = [e for e in entries if e.get("label") == part]
        if not found:
            known = ", ".join(sorted(str(e.get("label")) for e in entries)) or "none"
            where = "storage_layout" if depth == 0 else f"struct {'.'.join(path[:depth])}"
            raise ValueError(f"label {label!r}: no {part!r} in {where} (labels: {known})")
        if len(found) > 1:
            raise ValueError(f"label {label!r}: {part!r} is ambiguous ({len(found)} entries)")
        entry = found[0]
        slot = (slot + int(entry["slot"])) % WORD_MOD
        offset = int(entry["offset"])
        type_id = str(entry["type"])
        if depth < len(path) - 1:
            members = (types.get(type_id) or {}).get("members")
            if not members:
                raise ValueError(f"label {label!r}: {part!r} has type {type_id}, not a struct")
            entries = members
    return slot, offset, type_id

"""Storage slots over time: ``eth_getStorageAt`` answers at many blocks as a frame.

Pure functions. A storage word is a uint256, beyond int64 and float precision, so words are
kept exact as Python ints in an ``object`` column, beside their 0x hex form.

References
----------
.. [1] Ethereum execution APIs, ``eth_getStorageAt``, https://github.com/ethereum/execution-apis
.. [2] Solidity documentation, "Layout of State Variables in Storage",
   https://docs.soliditylang.org/en/latest/internals/layout_in_storage.html
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from feeslab import slots
from feeslab._hexbytes import check_address
from feeslab.frames.blocks import _empty, _int64, _object_series, _quantity

__all__ = ["STORAGE_DTYPES", "decode_series", "parse_storage_series"]

#: Columns and dtypes of :func:`parse_storage_series`' frame, in order.
STORAGE_DTYPES: dict[str, str] = {
    "block_number": "int64",
    "address": "str",
    "slot": "str",
    "word": "object",
    "word_hex": "str",
}


def parse_storage_series(
    address: str, slot: slots.WordLike, answers: Mapping[int, str] | Mapping[str, str]
) -> pd.DataFrame:
    """One storage slot's words at several blocks.

    Parameters
    ----------
    address : str
        The contract, ``0x`` + 40 hex digits (kept lower-case).
    slot : int, str or bytes
        The slot asked for (see :mod:`feeslab.slots` to compute it).
    answers : dict
        ``{block_number: word}``: block numbers as ints (or 0x quantities) and the words
        ``eth_getStorageAt`` answered at them (0x hex, at most 32 bytes; ``0x`` and short
        words like ``0x1`` as some nodes answer).

    Returns
    -------
    pandas.DataFrame
        One row per block, sorted by block number, RangeIndex, columns (dtype):

        ``block_number`` (int64)
        ``address`` (str)
            Lower-case 0x hex, the same in every row.
        ``slot`` (str)
            0x + 64 hex digits, the same in every row.
        ``word`` (object: Python int)
            The word, exact (0 <= word < 2**256).
        ``word_hex`` (str)
            The word as 0x + 64 hex digits.

        No answers give an empty frame with these dtypes (``STORAGE_DTYPES``).

    References
    ----------
    .. [1] Ethereum execution APIs, ``eth_getStorageAt``.
    """
    check_address(address, "address")
    slot_text = slots.slot_hex(slot)
    if not isinstance(answers, Mapping):
        raise TypeError(f"answers must be a dict {{block_number: word}}, not "
                        f"{type(answers).__name__}")
    if not answers:
        return _empty(STORAGE_DTYPES)
    rows = sorted(
        (_quantity(block, f"answers key {block!r}"), word) for block, word in answers.items()
    )
    numbers = [b for b, _ in rows]
    if len(set(numbers)) != len(numbers):
        raise ValueError("answers has the same block twice (as an int and as hex)")
    words = []
    for block, word in rows:
        if not isinstance(word, str):
            raise TypeError(f"answers[{block}] must be a 0x hex word, not {type(word).__name__}")
        words.append(slots.storage_word(word, f"answers[{block}]"))
    n = len(rows)
    return pd.DataFrame(
        {
            "block_number": _int64(numbers, "block_number", "answers"),
            "address": pd.Series([address.lower()] * n, dtype="str"),
            "slot": pd.Series([slot_text] * n, dtype="str"),
            "word": _object_series(words),
            "word_hex": pd.Series([f"0x{w:064x}" for w in words], dtype="str"),
        }
    )


def _dtype_for(kind: str, bits: int) -> str:
    if (kind == "uint" and bits <= 56) or (kind == "int" and bits <= 64):
        return "int64"
    if kind in ("uint", "int"):
        return "object"
    return {"address": "str", "bool": "bool"}.get(kind, "object")


def decode_series(
    frame: pd.DataFrame, type: str, offset: int = 0, size: int | None = None
) -> pd.Series:
    """Decode a value type from every word of :func:`parse_storage_series`' frame.

    Parameters
    ----------
    frame : pandas.DataFrame
        A frame with a ``word`` column of Python ints (``parse_storage_series``).
    type : str
        ``"uint<N>"``, ``"int<N>"``, ``"address"``, ``"bool"``, ``"bytes<N>"``, or solc's type
        id (``"t_uint8"``, as :func:`feeslab.slots.slot_from_layout` returns).
    offset : int, default 0
        Byte offset from the word's low-order end (solc's ``storageLayout`` ``offset``).
    size : int, optional
        Field width [bytes]; the type's width by default. May be narrower than an integer
        type (the field is then read as that many bytes, sign-extended for ``int<N>``), never
        wider; ``address``, ``bool`` and ``bytes<N>`` take exactly their width.

    Returns
    -------
    pandas.Series
        Indexed like ``frame``, named after ``type``, dtype:

        * int64 for ``uint8`` .. ``uint56`` and ``int8`` .. ``int64`` (exact);
        * object (Python ints, exact) for wider integers;
        * bool for ``bool``; str (lower-case 0x hex) for ``address``;
        * object (``bytes`` of length N) for ``bytes<N>``.

    References
    ----------
    .. [1] Solidity documentation, "Layout of State Variables in Storage".
    """
    if not isinstance(frame, pd.DataFrame) or "word" not in frame.columns:
        raise TypeError("frame must be parse_storage_series' frame (a 'word' column)")
    kind, bits = slots._parse_type(type, "type")
    if kind in ("string", "bytes"):
        raise ValueError(f"type {type!r} is dynamically sized; use slots.decode_short_string")
    width = slots.type_size(type)
    if size is None:
        size = width
    elif isinstance(size, bool) or not isinstance(size, int):
        raise TypeError("size must be an int")
    elif size > width or (size != width and kind not in ("uint", "int")):
        raise ValueError(f"size {size} does not fit type {type!r} ({width} bytes)")
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise TypeError("offset must be an int")
    signed = kind == "int"
    fields = [slots.packed_field(w, offset, size, signed=signed) for w in frame["word"]]
    if kind in ("uint", "int"):
        values: list[object] = list(fields)
    elif kind == "address":
        values = [f"0x{v:040x}" for v in fields]
    elif kind == "bool":
        bad = [v for v in fields if v not in (0, 1)]
        if bad:
            raise ValueError(f"a word holds {bad[0]:#x} at offset {offset}, not a bool (0 or 1)")
        values = [bool(v) for v in fields]
    else:
        values = [v.to_bytes(size, "big") for v in fields]
    dtype = _dtype_for(kind, bits)
    name = str(type)
    if dtype == "object":
        series = _object_series(values)
        series.index = frame.index
        series.name = name
        return series
    return pd.Series(np.array(values, dtype=dtype) if dtype != "str" else values,
                     index=frame.index, dtype=dtype, name=name)

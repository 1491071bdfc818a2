"""Decoded storage series: layouts, packed fields, token balances, proxy upgrades, oracle rounds.

Pure functions on the frames :meth:`feeslab.Lab.storage_series` returns (one slot's word at
many blocks, see :func:`feeslab.frames.parse_storage_series`), and on solc's
``storageLayout``. Nothing here does I/O: fetch the words, then decode them here.

Words are uint256, beyond int64 and float precision, so amounts are kept exact as Python ints
in ``object`` columns (``*_raw``) beside a float64 column scaled for reading and plotting.

References
----------
.. [1] Solidity documentation, "Layout of State Variables in Storage",
   https://docs.soliditylang.org/en/latest/internals/layout_in_storage.html
.. [2] EIP-20: Token Standard, https://eips.ethereum.org/EIPS/eip-20
.. [3] EIP-1967: Proxy Storage Slots, https://eips.ethereum.org/EIPS/eip-1967
.. [4] Chainlink, "Data Feeds API Reference" (``latestRoundData``: ``roundId``, ``answer``,
   ``updatedAt``), https://docs.chain.link/data-feeds/api-reference
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from feeslab.frames import decode_series
from feeslab.frames.blocks import _empty, _object_series

__all__ = [
    "LAYOUT_DTYPES",
    "PRICE_ORACLE_ROUND",
    "decode_fields",
    "implementation_periods",
    "layout_table",
    "oracle_rounds",
    "round_updates",
    "token_balances",
]

#: Columns and dtypes of :func:`layout_table`'s frame, in order.
LAYOUT_DTYPES: dict[str, str] = {
    "label": "str",
    "slot": "object",
    "offset_bytes": "int64",
    "size_bytes": "int64",
    "type": "str",
    "type_label": "str",
    "encoding": "str",
    "where": "str",
}

#: Where feeslab's ``PriceOracle`` keeps a ``Round`` in one slot: field -> (type, byte offset).
#: 80 + 128 + 40 bits share the word, packed from its low-order end.
PRICE_ORACLE_ROUND: dict[str, tuple[str, int]] = {
    "roundId": ("uint80", 0),
    "answer": ("int128", 10),
    "updatedAt": ("uint40", 26),
}

_ROUND_FIELDS = ("roundId", "answer", "updatedAt")


def _storage_frame(frame: object, name: str = "frame") -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame) or not {"block_number", "word"} <= set(frame.columns):
        raise TypeError(
            f"{name} must be a storage series (Lab.storage_series or "
            "feeslab.frames.parse_storage_series: 'block_number' and 'word' columns)"
        )
    return frame


def _frame_slot(frame: pd.DataFrame) -> int | None:
    """The one slot a storage series holds, when it says (its ``slot`` column)."""
    if "slot" not in frame.columns or frame.empty:
        return None
    found = {int(s, 16) for s in frame["slot"]}
    if len(found) != 1:
        raise ValueError(f"frame holds {len(found)} different slots; give one slot's series")
    return found.pop()


def _scale(decimals: object) -> int:
    """``10**decimals``: base units per whole unit of a token or a feed's answer."""
    if isinstance(decimals, bool) or not isinstance(decimals, int | np.integer) or decimals < 0:
        raise ValueError(f"decimals must be a non-negative int, not {decimals!r}")
    return int(10 ** int(decimals))  # a non-negative power: an int


# -- layouts -----------------------------------------------------------------------------------


def _where(encoding: str, slot: int, offset: int, size: int) -> str:
    """Where a variable's data lives, as the Solidity documentation's rules put it."""
    if encoding == "mapping":
        return f"value of key k at keccak256(h(k) . {slot})"
    if encoding == "dynamic_array":
        return f"length at slot {slot}; element i from keccak256({slot}) + i"
    if encoding == "bytes":
        return f"slot {slot} if under 32 bytes, else 2*length+1 there, data at keccak256({slot})"
    if size > 32:
        return f"slots {slot} to {slot + (size + 31) // 32 - 1}"
    if size == 32:
        return f"slot {slot}"
    return f"slot {slot}, bytes {offset} to {offset + size - 1} from the right"


def layout_table(storage_layout: Mapping[str, Any]) -> pd.DataFrame:
    """solc's ``storageLayout`` as a table: one row per variable, struct members expanded.

    Parameters
    ----------
    storage_layout : dict
        solc's ``storageLayout`` output (``{"storage": [...], "types": {...}}``), as in
        the service's contract listing or a build's artifacts.

    Returns
    -------
    pandas.DataFrame
        One row per state variable in declaration order; a struct kept in place (not behind a
        mapping or array) gives one row per member, labelled ``variable.member``. Columns
        (dtype, see ``LAYOUT_DTYPES``):

        ``label`` (str)
        ``slot`` (object: Python int)
            The variable's slot; exact, since solc's ``layout at`` can put it anywhere.
        ``offset_bytes`` (int64) [bytes]
            Offset of its lowest byte from the slot's low-order end (packed variables > 0).
        ``size_bytes`` (int64) [bytes]
            ``numberOfBytes``: 32 for mappings, dynamic arrays, strings and bytes (their slot),
            more than 32 for fixed arrays and structs spanning several slots.
        ``type`` (str)
            solc's type id (``t_uint80``), which :func:`decode_fields` and
            :func:`feeslab.slots.decode_word` accept.
        ``type_label`` (str)
            The Solidity type (``uint80``, ``mapping(address => uint256)``).
        ``encoding`` (str)
            ``inplace``, ``mapping``, ``dynamic_array`` or ``bytes``.
        ``where`` (str)
            Where the data lives, in words (``value of key k at keccak256(h(k) . 0)``).

    References
    ----------
    .. [1] Solidity documentation, "Layout of State Variables in Storage", sections "JSON
       Output" and "Mappings and Dynamic Arrays".
    """
    if not isinstance(storage_layout, Mapping) or not isinstance(
        storage_layout.get("storage"), list
    ):
        raise TypeError("storage_layout must be solc's storageLayout: a dict with a 'storage' list")
    types: Mapping[str, Any] = storage_layout.get("types") or {}
    rows: list[dict[str, object]] = []

    def visit(entries: list[Mapping[str, Any]], base: int, prefix: str) -> None:
        for entry in entries:
            type_id = str(entry["type"])
            info = types.get(type_id)
            if info is None:
                raise ValueError(f"storage_layout has no type entry for {type_id!r}")
            slot = base + int(entry["slot"])
            label = prefix + str(entry["label"])
            if info.get("members") and info.get("encoding") == "inplace":
                visit(info["members"], slot, label + ".")
                continue
            offset, size = int(entry["offset"]), int(info["numberOfBytes"])
            encoding = str(info["encoding"])
            rows.append(
                {"label": label, "slot": slot, "offset_bytes": offset, "size_bytes": size,
                 "type": type_id, "type_label": str(info["label"]), "encoding": encoding,
                 "where": _where(encoding, slot, offset, size)}
            )

    visit(storage_layout["storage"], 0, "")
    if not rows:
        return _empty(LAYOUT_DTYPES)
    frame = pd.DataFrame(rows)
    frame["slot"] = _object_series(frame["slot"].tolist())
    return frame.astype({k: v for k, v in LAYOUT_DTYPES.items() if k != "slot"})


def decode_fields(frame: pd.DataFrame, fields: Mapping[str, Any] | pd.DataFrame) -> pd.DataFrame:
    """Decode the value-type variables packed in one slot, at every block of its series.

    Parameters
    ----------
    frame : pandas.DataFrame
        One slot's storage series (``Lab.storage_series``).
    fields : dict or pandas.DataFrame
        What the slot holds: ``{name: type}`` or ``{name: (type, offset_bytes)}`` (types as
        ``"uint80"``, ``"address"``, ``"t_int128"``...), or rows of :func:`layout_table` (e.g.
        ``table[table["slot"] == 1]``), whose slot must be the series' slot.

    Returns
    -------
    pandas.DataFrame
        ``block_number`` (int64), then one column per field, named after it, with
        :func:`feeslab.frames.decode_series`' dtypes (int64 up to ``uint56``/``int64``, exact
        Python ints in ``object`` above, str for ``address``, bool for ``bool``, bytes for
        ``bytes<N>``).

    Raises
    ------
    ValueError
        When a field is not a value type (a mapping, an array, a string: their data is
        elsewhere, see ``where`` in :func:`layout_table`), or when layout rows name another
        slot than the series'.

    References
    ----------
    .. [1] Solidity documentation, "Layout of State Variables in Storage": value types
       smaller than 32 bytes share a slot, packed from its low-order end.
    """
    frame = _storage_frame(frame)
    if isinstance(fields, pd.DataFrame):
        missing = {"label", "type", "offset_bytes"} - set(fields.columns)
        if missing:
            raise TypeError(f"fields is missing layout_table columns {sorted(missing)}")
        slot = _frame_slot(frame)
        if slot is not None and "slot" in fields.columns:
            other = [(lab, s) for lab, s in zip(fields["label"], fields["slot"], strict=True)
                     if int(s) != slot]
            if other:
                raise ValueError(
                    f"field {other[0][0]!r} lives in slot {other[0][1]}, but the series holds "
                    f"slot {slot}; pick the layout rows of that slot"
                )
        encodings = (
            fields["encoding"] if "encoding" in fields.columns else ["inplace"] * len(fields)
        )
        spec = {}
        for label, type_id, offset, encoding in zip(
            fields["label"], fields["type"], fields["offset_bytes"], encodings, strict=True
        ):
            if encoding != "inplace":
                raise ValueError(f"field {label!r} is a {encoding}: its data is not in its slot")
            spec[str(label)] = (str(type_id), int(offset))
    elif isinstance(fields, Mapping):
        spec = {}
        for name, value in fields.items():
            type_id, offset = (value, 0) if isinstance(value, str) else tuple(value)
            spec[str(name)] = (type_id, offset)
    else:
        raise TypeError("fields must be {name: type}, {name: (type, offset)} or layout_table rows")
    if not spec:
        raise ValueError("fields names no field to decode")
    if "block_number" in spec:
        raise ValueError("a field may not be named 'block_number' (the frame's first column)")
    out = pd.DataFrame({"block_number": frame["block_number"].astype(np.int64)})
    for name, (type_id, offset) in spec.items():
        try:
            out[name] = decode_series(frame, type_id, offset)
        except (TypeError, ValueError) as err:
            raise type(err)(f"field {name!r}: {err}") from None
    return out.reset_index(drop=True)


# -- token balances ----------------------------------------------------------------------------


def token_balances(
    frames: Mapping[str, pd.DataFrame],
    *,
    decimals: int = 18,
    total_supply: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """ERC-20 balances over time, from each holder's balance slot series.

    Parameters
    ----------
    frames : dict
        ``{holder: series}``: a label or address per holder, and the storage series of its
        balance slot (``feeslab.slots.mapping_slot(holder, balances_slot)``).
    decimals : int, default 18
        The token's ``decimals()``: a balance of ``raw`` base units is ``raw / 10**decimals``
        tokens.
    total_supply : pandas.DataFrame, optional
        The storage series of the total supply's slot, at (at least) the same blocks: adds a
        ``share`` column.

    Returns
    -------
    pandas.DataFrame
        One row per holder and block, holders in the order given, blocks ascending,
        RangeIndex. Columns (dtype):

        ``block_number`` (int64)
        ``holder`` (str)
        ``balance_raw`` (object: Python int) [base units]
            The word, exact.
        ``balance`` (float64) [tokens]
            ``balance_raw / 10**decimals``, correctly rounded.
        ``share`` (float64) [fraction of supply]
            Only with ``total_supply``: ``balance_raw / supply``, NaN where the supply is 0.

    References
    ----------
    .. [1] EIP-20: Token Standard (``balanceOf``, ``totalSupply``, ``decimals``).
    .. [2] Solidity documentation, "Layout of State Variables in Storage", section "Mappings
       and Dynamic Arrays".
    """
    if not isinstance(frames, Mapping) or not frames:
        raise TypeError("frames must be a non-empty dict {holder: balance slot series}")
    scale = _scale(decimals)
    supply: dict[int, int] | None = None
    if total_supply is not None:
        supply_frame = _storage_frame(total_supply, "total_supply")
        supply = dict(zip(supply_frame["block_number"].tolist(), supply_frame["word"],
                          strict=True))
    parts = []
    for holder, frame in frames.items():
        frame = _storage_frame(frame, f"frames[{holder!r}]").sort_values("block_number")
        raw = list(frame["word"])
        part: dict[str, Any] = {
            "block_number": frame["block_number"].to_numpy(np.int64),
            "holder": pd.Series([str(holder)] * len(raw), dtype="str"),
            "balance_raw": _object_series(raw),
            "balance": np.array([float(Fraction(r, scale)) for r in raw], dtype=np.float64),
        }
        if supply is not None:
            missing = [int(b) for b in part["block_number"] if int(b) not in supply]
            if missing:
                raise ValueError(
                    f"total_supply has no word at block {missing[0]:,} (holder {holder!r})"
                )
            totals = [supply[int(b)] for b in part["block_number"]]
            part["share"] = np.array(
                [r / t if t else np.nan for r, t in zip(raw, totals, strict=True)],
                dtype=np.float64,
            )
        parts.append(pd.DataFrame(part))
    return pd.concat(parts, ignore_index=True)


# -- proxies -------------------------------------------------------------------------------------


def implementation_periods(frame: pd.DataFrame) -> pd.DataFrame:
    """Which implementation a proxy pointed at, and between which sampled blocks it changed.

    Parameters
    ----------
    frame : pandas.DataFrame
        The storage series of the proxy's implementation slot
        (``feeslab.slots.IMPLEMENTATION_SLOT`` for an EIP-1967 proxy), at sampled blocks.

    Returns
    -------
    pandas.DataFrame
        One row per run of consecutive samples with the same implementation (an upgrade and a
        later return to the old one give three rows), RangeIndex. Columns (dtype):

        ``implementation`` (str)
            Lower-case 0x address; the zero address while the slot was empty (before the
            proxy existed, or never initialised).
        ``first_block``, ``last_block`` (int64)
            The first and last sampled blocks showing it.
        ``samples`` (int64)
            How many sampled blocks show it.
        ``changed_after`` (Int64, nullable)
            The last sampled block before ``first_block``: the change happened in a block in
            ``(changed_after, first_block]``; ``<NA>`` for the first period. Sample that
            interval densely to find the exact block.

    Raises
    ------
    ValueError
        When a word holds more than an address (its 12 high bytes are not zero): not an
        implementation slot.

    References
    ----------
    .. [1] EIP-1967: Proxy Storage Slots (the implementation address at
       ``keccak256("eip1967.proxy.implementation") - 1``).
    """
    frame = _storage_frame(frame).sort_values("block_number")
    dtypes = {"implementation": "str", "first_block": "int64", "last_block": "int64",
              "samples": "int64", "changed_after": "Int64"}
    if frame.empty:
        return _empty(dtypes)
    blocks = frame["block_number"].tolist()
    addresses = []
    for block, word in zip(blocks, frame["word"], strict=True):
        if word >> 160:
            raise ValueError(
                f"the word at block {block:,} ({word:#066x}) holds more than an address: "
                "not an implementation slot"
            )
        addresses.append(f"0x{word:040x}")
    rows: list[dict[str, Any]] = []
    for i, (block, address) in enumerate(zip(blocks, addresses, strict=True)):
        if rows and rows[-1]["implementation"] == address:
            rows[-1]["last_block"] = block
            rows[-1]["samples"] += 1
            continue
        rows.append({"implementation": address, "first_block": block, "last_block": block,
                     "samples": 1, "changed_after": blocks[i - 1] if i else None})
    return pd.DataFrame(rows).astype(dtypes)


# -- oracle rounds ---------------------------------------------------------------------------


def oracle_rounds(
    frame: pd.DataFrame,
    *,
    decimals: int = 8,
    fields: Mapping[str, tuple[str, int]] = PRICE_ORACLE_ROUND,
) -> pd.DataFrame:
    """An oracle's latest round at each sampled block, decoded.

    Reads either a storage series of the slot holding the latest round (packed as
    ``fields`` says), or an ``eth_call`` series of a getter returning ``roundId``,
    ``answer`` and ``updatedAt`` by those names (``Lab.call_series`` of ``latest`` on
    feeslab's oracle, of ``latestRoundData`` with its ABI on a Chainlink feed).

    Parameters
    ----------
    frame : pandas.DataFrame
        A storage series (``word`` column) or a call series (``roundId``, ``answer``,
        ``updatedAt`` columns; rows with an ``error`` are left out).
    decimals : int, default 8
        The feed's ``decimals()``: an answer of ``raw`` is ``raw / 10**decimals``.
    fields : dict, default PRICE_ORACLE_ROUND
        For a storage series: ``roundId``, ``answer`` and ``updatedAt`` -> ``(type,
        offset_bytes)`` in the word.

    Returns
    -------
    pandas.DataFrame
        One row per sampled block that had a round (samples before the first round, whose
        round id is 0, are left out), blocks ascending, RangeIndex. Columns (dtype):

        ``block_number`` (int64)
        ``round_id`` (object: Python int)
            Exact: Chainlink proxies put the phase in bits 64 and up of a uint80.
        ``answer_raw`` (object: Python int)
        ``answer`` (float64) [quote units, e.g. USD]
            ``answer_raw / 10**decimals``.
        ``updated_at`` (datetime64[ns, UTC])
            When the round was written (the block timestamp of its submission).

    References
    ----------
    .. [1] Chainlink, "Data Feeds API Reference", ``latestRoundData``.
    .. [2] Solidity documentation, "Layout of State Variables in Storage" (a struct's members
       packed into one slot).
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError("frame must be a storage series or a call series (a DataFrame)")
    scale = _scale(decimals)
    if "word" in frame.columns:
        missing = set(_ROUND_FIELDS) - set(fields)
        if missing:
            raise ValueError(f"fields must place {sorted(missing)} in the word")
        decoded = decode_fields(frame, {name: fields[name] for name in _ROUND_FIELDS})
    elif set(_ROUND_FIELDS) <= set(frame.columns):
        decoded = frame
        if "error" in frame.columns:
            decoded = frame[frame["error"].isna()]
    else:
        raise TypeError(
            "frame must be a storage series (a 'word' column) or a call series with "
            "'roundId', 'answer' and 'updatedAt' columns (call with the function's ABI)"
        )
    decoded = decoded.sort_values("block_number")
    keep = [int(r) != 0 for r in decoded["roundId"]]
    decoded = decoded[keep]
    answers = [int(a) for a in decoded["answer"]]
    return pd.DataFrame(
        {
            "block_number": decoded["block_number"].to_numpy(np.int64),
            "round_id": _object_series([int(r) for r in decoded["roundId"]]),
            "answer_raw": _object_series(answers),
            "answer": np.array([float(Fraction(a, scale)) for a in answers], dtype=np.float64),
            "updated_at": pd.to_datetime(
                np.array([int(t) for t in decoded["updatedAt"]], dtype=np.int64),
                unit="s",
                utc=True,
            ).as_unit("ns"),
        }
    )


def round_updates(rounds: pd.DataFrame) -> pd.DataFrame:
    """The rounds an oracle series saw: the first sample of each new round.

    Parameters
    ----------
    rounds : pandas.DataFrame
        :func:`oracle_rounds`' frame.

    Returns
    -------
    pandas.DataFrame
        One row per distinct round, in the order sampled, RangeIndex: ``block_number`` (the
        first sampled block showing it), ``round_id``, ``answer_raw``, ``answer``,
        ``updated_at`` as in :func:`oracle_rounds`, and:

        ``rounds_skipped`` (Int64, nullable)
            Rounds between this one and the previous one seen, which the sampling missed
            (0 when every round was sampled); 0 for the first; ``<NA>`` across a Chainlink
            phase change (round ids differing in bits 64 and up).
        ``seconds_since_previous`` (float64) [s]
            ``updated_at`` minus the previous seen round's; NaN for the first. Compare it
            with the feed's heartbeat.

    References
    ----------
    .. [1] Chainlink, "Data Feeds API Reference" (round ids and phases).
    """
    if not isinstance(rounds, pd.DataFrame) or not {"round_id", "updated_at"} <= set(
        rounds.columns
    ):
        raise TypeError("rounds must be oracle_rounds' frame")
    ordered = rounds.sort_values("block_number", kind="stable")
    ids = [int(r) for r in ordered["round_id"]]
    first = [i == 0 or ids[i] != ids[i - 1] for i in range(len(ids))]
    seen = ordered[first].reset_index(drop=True)
    seen_ids = [int(r) for r in seen["round_id"]]
    skipped: list[int | None] = [0] if seen_ids else []
    for previous, current in itertools.pairwise(seen_ids):
        gap = current - previous - 1
        same_phase = previous >> 64 == current >> 64
        skipped.append(gap if same_phase and gap >= 0 else None)
    seen["rounds_skipped"] = pd.Series(skipped, dtype="Int64")
    seen["seconds_since_previous"] = seen["updated_at"].diff().dt.total_seconds()
    return seen

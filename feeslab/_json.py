"""The one JSON type alias feeslab's modules share (decoded JSON-RPC answers and params).

``JsonValue`` is what ``json.loads`` / ``orjson.loads`` can return; read-only containers
(``Sequence``, ``Mapping``) so that a ``list[dict[str, str]]`` is one too. A function that
checks what it is handed (a parser refusing a bad field with a clear error) takes
``Mapping[str, object]`` instead: it cannot rely on the shape before checking it.

References
----------
.. [1] RFC 8259, The JavaScript Object Notation (JSON) Data Interchange Format,
   https://www.rfc-editor.org/rfc/rfc8259
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

__all__ = ["JsonObject", "JsonValue"]

#: A decoded JSON value: null, true/false, a number, a string, an array or an object.
JsonValue: TypeAlias = (
    "bool | int | float | str | Sequence[JsonValue] | Mapping[str, JsonValue] | None"
)

#: A decoded JSON object (a block, a receipt, a transaction as a node serves it).
JsonObject: TypeAlias = Mapping[str, JsonValue]

"""Frames as files: the one exact-integer Parquet/CSV writer and its reader.

Columns of exact Python ints (``object`` dtype: uint256 storage words, difficulties) are
written as decimal text, as neither format has a 256-bit integer; in Parquet the file's
metadata names those columns, so :func:`frame_from_bytes` gives them back as ints. Dtypes,
UTC timestamps and ``attrs`` survive Parquet; CSV keeps the values (a reader names the
nullable ``Int64`` columns, as CSV has no types). ``feeslab fetch`` writes files with
:func:`write_frame`, ``Lab.publish_frame`` shares the same bytes by CID.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path

import pandas as pd
from pandas.api.types import infer_dtype

__all__ = ["FORMATS", "exact_int_columns", "frame_from_bytes", "frame_to_bytes", "write_bytes",
           "write_frame"]

FORMATS = ("parquet", "csv")
_EXACT_INTS = b"feeslab.exact_int_columns"  # Parquet metadata key: the columns to read as ints


_PLAIN = frozenset({int, type(None), float, type(pd.NA)})  # ints and missing values (None,
# NaN, pd.NA) once infer_dtype has said "integer" (so that any float there is NaN)


def exact_int_columns(frame: pd.DataFrame) -> list[str]:
    """The ``object`` columns holding Python ints only (missing values aside), in order."""
    found = []
    for name, column in frame.items():
        if column.dtype != object:
            continue
        # pandas' C scan first (ints, missing values skipped; no bool): most columns are
        # told apart there, without a Python call per value
        if infer_dtype(column, skipna=True) != "integer":
            continue
        values = column.tolist()
        kinds = set(map(type, values))
        if (int in kinds and kinds <= _PLAIN) or all(
                isinstance(v, int) and not isinstance(v, bool) for v in values
                if not pd.isna(v)):  # fmt: skip
            found.append(name)
    return found


def frame_to_bytes(frame: pd.DataFrame, format: str = "parquet") -> bytes:
    """A DataFrame as a file: Parquet (exact, dtypes and ``attrs`` kept) or CSV.

    The same frame always gives the same bytes (and so the same CID) with the same pandas and
    pyarrow.

    Raises
    ------
    ValueError
        For a format other than ``"parquet"`` or ``"csv"``.
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {format!r}")
    portable = frame.copy(deep=False)  # only the exact columns are replaced, not written into
    portable.attrs = {}  # pandas deep-copies attrs into every column it hands out: put back below
    exact = exact_int_columns(portable)
    for name in exact:
        values = portable[name].tolist()
        portable[name] = ([None if v is None or v is pd.NA or v != v else str(v) for v in values]
                          if portable[name].hasnans else list(map(str, values)))  # fmt: skip
    if format == "csv":
        text: str = portable.to_csv(index=False)
        return text.encode("utf-8")
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        json.dumps(frame.attrs)
    except (TypeError, ValueError):  # pyarrow's own way with such attrs: a warning, and none
        portable.attrs = frame.attrs
    table = pa.Table.from_pandas(portable)
    metadata = {**(table.schema.metadata or {}), _EXACT_INTS: json.dumps(exact).encode()}
    if frame.attrs and not portable.attrs:  # where and as pyarrow writes them (same bytes)
        described = json.loads(metadata[b"pandas"])
        described["attributes"] = frame.attrs
        metadata[b"pandas"] = json.dumps(described).encode("utf8")
    sink = pa.BufferOutputStream()
    pq.write_table(table.replace_schema_metadata(metadata), sink)
    return bytes(sink.getvalue().to_pybytes())


def frame_from_bytes(data: bytes) -> pd.DataFrame:
    """Read a file made by :func:`frame_to_bytes` (Parquet, else CSV)."""
    if data[:4] == b"PAR1" and data[-4:] == b"PAR1":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pq.read_table(pa.BufferReader(data))
        exact = json.loads((table.schema.metadata or {}).get(_EXACT_INTS, b"[]"))
        frame = table.to_pandas()
        for name in exact:
            frame[name] = frame[name].map(lambda v: None if pd.isna(v) else int(v)).astype(object)
        return frame
    return pd.read_csv(io.BytesIO(data))


def write_frame(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write ``frame`` to ``path`` (``.parquet`` or ``.csv``, by its suffix), atomically.

    The bytes go to a temporary file beside ``path``, which is then renamed over it
    (``os.replace``): a failure at any point removes the temporary file and leaves ``path``
    as it was, so no partial file is ever seen under its name.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ValueError
        For a suffix other than ``.parquet`` or ``.csv`` (nothing written).
    """
    path = Path(path)
    format = path.suffix.lower().lstrip(".")
    if format not in FORMATS:
        raise ValueError(f"write FILE.parquet or FILE.csv, not {path.name!r}")
    return write_bytes(frame_to_bytes(frame, format), path)


def write_bytes(data: bytes, path: str | os.PathLike[str]) -> Path:
    """Write ``data`` to ``path`` atomically and durably: a temporary file beside it, flushed
    to the disk (``fsync``), then renamed over it; a failure removes the temporary file and
    leaves ``path`` as it was.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path

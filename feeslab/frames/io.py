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

__all__ = ["FORMATS", "exact_int_columns", "frame_from_bytes", "frame_to_bytes", "write_frame"]

FORMATS = ("parquet", "csv")
_EXACT_INTS = b"feeslab.exact_int_columns"  # Parquet metadata key: the columns to read as ints


def exact_int_columns(frame: pd.DataFrame) -> list[str]:
    """The ``object`` columns holding Python ints only (missing values aside), in order."""
    return [
        name
        for name in frame.columns
        if frame[name].dtype == object
        and frame[name].notna().any()
        and all(
            isinstance(v, int) and not isinstance(v, bool) for v in frame[name] if not pd.isna(v)
        )
    ]


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
    exact = exact_int_columns(frame)
    portable = frame.copy()
    for name in exact:
        portable[name] = portable[name].map(lambda v: None if pd.isna(v) else str(v))
    if format == "csv":
        return portable.to_csv(index=False).encode("utf-8")
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(portable)
    metadata = {**(table.schema.metadata or {}), _EXACT_INTS: json.dumps(exact).encode()}
    sink = pa.BufferOutputStream()
    pq.write_table(table.replace_schema_metadata(metadata), sink)
    return sink.getvalue().to_pybytes()


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
    data = frame_to_bytes(frame, format)
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

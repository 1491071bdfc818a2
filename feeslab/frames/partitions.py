"""Partition files: a frame's rows as one Parquet file of a job's folder, read back as written.

The one format the jobs runner writes (``feeslab.jobs``) and a folder of them is
read as a source by (``feeslab.sources.partitions``): Parquet, written atomically, its
``attrs`` holding what the writer says of the file, and its columns of tuples (a block's uncle
hashes, a call's array outputs) named, since Parquet gives every list back as an array.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from feeslab.frames.io import frame_from_bytes, frame_to_bytes, write_bytes

__all__ = ["JOB", "MANIFEST", "TUPLES", "concat_partitions", "partition_bytes", "read_partition",
           "write_partition"]

TUPLES = "feeslab_tuples"  # a partition file's attrs: its columns of tuples
MANIFEST = "_manifest.json"  # a job's partitions and which are written (leading underscore:
# pyarrow and dask.dataframe skip it)
JOB = "_job.json"  # what a finished job computed: its dataset, parameters and frames' attrs


def write_partition(frame: pd.DataFrame, path: Path, attrs: Mapping[str, object]) -> None:
    """``frame`` as ``path``, atomically and durably (:func:`partition_bytes` written by
    ``feeslab.frames.io.write_bytes``)."""
    write_bytes(partition_bytes(frame, attrs), path)


def partition_bytes(frame: pd.DataFrame, attrs: Mapping[str, object]) -> bytes:
    """The Parquet file of ``frame`` as a partition: its ``attrs`` replaced by ``attrs`` (and
    the names of its columns of tuples)."""
    frame.attrs.clear()
    frame.attrs.update(attrs)
    tuples = [name for name, dtype in frame.dtypes.items() if dtype == np.dtype(object)
              and _all_tuples(frame[name].tolist())]  # fmt: skip
    if tuples:
        frame.attrs[TUPLES] = tuples
    return frame_to_bytes(frame)


def _all_tuples(values: list[object]) -> bool:
    """Whether ``values`` holds tuples and missing values only, a tuple at least (the types
    first: a column of ints is told in one pass, without ``pd.isna`` on each)."""
    kinds = set(map(type, values))
    if tuple not in kinds:
        return False
    return kinds == {tuple} or all(type(v) is tuple or pd.isna(v) for v in values)


def read_partition(path: Path) -> pd.DataFrame:
    """A partition file as :func:`write_partition` was given it (no ``attrs``)."""
    frame = frame_from_bytes(path.read_bytes())
    for name in frame.attrs.pop(TUPLES, []):
        values = [tuple(v.tolist()) if isinstance(v, np.ndarray) else v for v in frame[name]]
        frame[name] = pd.Series(values, dtype=object, index=frame.index)
    frame.attrs.clear()
    return frame


def concat_partitions(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Partitions' rows in the order given, as one frame (the first's columns if all are
    empty)."""
    full = [f for f in frames if not f.empty]
    if not full:
        return frames[0].iloc[0:0].reset_index(drop=True)
    return pd.concat(full, ignore_index=True) if len(full) > 1 else full[0].reset_index(drop=True)

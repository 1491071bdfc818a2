"""Exact integer columns: the one input checker and result builder of the fee analyses.

:mod:`feeslab.analysis.fees` and :mod:`feeslab.analysis.blobs` both take wei amounts as
int64, ``Int64`` or Python ints and give them back the same way; both use these two
functions, so neither module imports the other for them (fees re-exports blobs, one way).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import pandas as pd

__all__ = ["INT64_MAX", "Ints", "exact_ints", "exact_series", "scalar_ints", "wei_column"]

INT64_MAX = 2**63 - 1
#: Exact integers as the fee analyses take them: one int, or a sequence (None where missing),
#: an array or a Series (int64, ``Int64`` or Python ints) of them; floats and bools are refused.
Ints: TypeAlias = int | np.integer | Sequence[int | None] | np.ndarray | pd.Series


def exact_ints(values: Ints, name: str, length: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact integers as (int64 or object array, missing mask); floats and bools refused."""
    if isinstance(values, bool | np.bool_):
        raise TypeError(f"{name} must be an integer, not a bool")
    if isinstance(values, int | np.integer):
        n = 1 if length is None else length
        value = int(values)
        dtype = np.int64 if -INT64_MAX <= value <= INT64_MAX else object
        return np.full(n, value, dtype=dtype), np.zeros(n, dtype=bool)
    if isinstance(values, float | np.floating):
        raise TypeError(f"{name} must be an exact integer, not a float ({values!r})")
    if isinstance(values, str | bytes):
        raise TypeError(f"{name} must be integers, not a {type(values).__name__}")
    if isinstance(values, pd.Series):
        series = values
    elif isinstance(values, np.ndarray):
        series = pd.Series(values.ravel() if values.ndim == 0 else values)
    else:
        series = pd.Series(list(values), dtype=object)
    if length is not None and len(series) != length:
        raise ValueError(f"{name} has {len(series)} values, expected {length} (one per row)")
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        raise TypeError(f"{name} must be integers, not bools")
    if pd.api.types.is_float_dtype(dtype):
        raise TypeError(
            f"{name} must be exact integers, not {dtype} (floats lose wei above 2**53; "
            "keep wei columns int64, Int64 or Python ints)"
        )
    if pd.api.types.is_integer_dtype(dtype):  # int64, uint64, Int64 (masked)
        mask = series.isna().to_numpy()
        if pd.api.types.is_unsigned_integer_dtype(dtype) and (series.fillna(0) > INT64_MAX).any():
            return series.astype(object).to_numpy(), mask
        return series.fillna(0).to_numpy(dtype=np.int64), mask
    if not pd.api.types.is_object_dtype(dtype):
        raise TypeError(f"{name} must be integers, not {dtype}")
    items = series.tolist()
    mask = np.zeros(len(items), dtype=bool)
    out: list[int] = []
    for i, item in enumerate(items):
        if item is None or item is pd.NA or (isinstance(item, float) and math.isnan(item)):
            mask[i] = True
            out.append(0)
        elif isinstance(item, bool | np.bool_) or not isinstance(item, int | np.integer):
            raise TypeError(f"{name}[{i}] must be an integer, not {type(item).__name__}")
        else:
            out.append(int(item))
    fits = all(-INT64_MAX <= v <= INT64_MAX for v in out)
    return np.array(out, dtype=np.int64 if fits else object), mask


def scalar_ints(*values: Ints) -> tuple[int, ...] | None:
    """``values`` as ints when every one is an int or a numpy integer (a scalar call), else None."""
    ints = tuple(int(v) for v in values if isinstance(v, int | np.integer))
    return ints if len(ints) == len(values) else None


def exact_series(values: np.ndarray, mask: np.ndarray, index: pd.Index, name: str) -> pd.Series:
    """int64 when exact and complete, Int64 with gaps, object (Python ints) beyond int64."""
    if values.dtype == object:
        if all(-INT64_MAX <= int(v) <= INT64_MAX for v in values):
            values = values.astype(np.int64)
        else:
            data = [pd.NA if m else int(v) for v, m in zip(values, mask, strict=True)]
            return pd.Series(data, index=index, dtype=object, name=name)
    if mask.any():
        return pd.Series(pd.arrays.IntegerArray(values, mask), index=index, name=name)
    return pd.Series(values, index=index, name=name)


def wei_column(frame: pd.DataFrame, name: str, what: str, bound: int) -> np.ndarray:
    """``frame[name]`` as int64, every value in ``0 .. bound`` [wei]: the int64 arithmetic of
    the estimators and the backtest stays exact below ``bound``. Floats, missing values and
    values out of range raise, naming ``what`` asked and the row."""
    if name not in frame.columns:
        raise ValueError(f"{what}: the frame lacks {name!r} (has {list(frame.columns)})")
    series = frame[name]
    if pd.api.types.is_float_dtype(series.dtype):
        raise TypeError(f"{what}: {name!r} must hold exact integers [wei], not {series.dtype}")
    if series.isna().any():
        at = int(np.flatnonzero(series.isna().to_numpy())[0])
        raise ValueError(f"{what}: {name!r} is missing at row {at}")
    values = series.astype(object).to_numpy() if series.dtype == object else series.to_numpy()
    if values.dtype == object:
        if any(v > bound or v < 0 for v in values):
            raise ValueError(f"{what}: {name!r} has values beyond {bound} wei, outside "
                             "exact int64 arithmetic")  # fmt: skip
        values = values.astype(np.int64)
    values = np.asarray(values, dtype=np.int64)
    if len(values) and (values.max() > bound or values.min() < 0):
        raise ValueError(f"{what}: {name!r} has values outside 0..{bound} wei, beyond exact "
                         "int64 arithmetic")  # fmt: skip
    return values

"""The real data the course's exercises are checked against, each loaded once per process.

A check may run many times (a reader retrying, the tests); the sample behind it loads the first
time only. Callers must not modify the frames returned.
"""

from __future__ import annotations

import functools

import pandas as pd

__all__ = ["blob_market"]


@functools.cache
def blob_market() -> pd.DataFrame:
    """:func:`feeslab.samples.blob_market`, loaded once (about 2 s) and shared."""
    from feeslab import samples  # loads when first checked, not when the course is listed

    return samples.blob_market()

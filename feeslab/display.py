"""Values formatted for people: token amounts, gwei and ETH, counts with thousands separators.

Notebooks print numbers for readers, not for the interpreter: ``4,126,781.29 FLT`` rather than
``4126781287977559717511168``. Amounts are exact integers of base units (wei, a token's smallest
unit) and are formatted with :class:`decimal.Decimal`, so no digit is lost to float rounding
before the last one shown.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from numbers import Integral

import pandas as pd

__all__ = ["format_amount", "format_count", "format_eth", "format_gwei", "format_table"]


def format_amount(value: int, *, decimals: int, places: int = 2, unit: str = "") -> str:
    """An integer of base units as a decimal amount with thousands separators.

    Parameters
    ----------
    value : int
        Base units (wei, or a token's smallest unit); exact, any size.
    decimals : int
        The unit's decimals: 18 for ETH and most ERC-20 tokens, 9 for gwei.
    places : int, default 2
        Digits shown after the point, rounded half to even.
    unit : str, optional
        Appended after a space when given.

    Returns
    -------
    str
        For example ``format_amount(4126781287977559717511168, decimals=18, unit="FLT")`` is
        ``"4,126,781.29 FLT"``.
    """
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"value must be an integer of base units, got {type(value).__name__}")
    if decimals < 0 or places < 0:
        raise ValueError(f"decimals and places must be >= 0, got {decimals} and {places}")
    amount = (Decimal(int(value)).scaleb(-decimals)).quantize(Decimal(1).scaleb(-places),
                                                             rounding=ROUND_HALF_EVEN)
    text = f"{amount:,.{places}f}"
    return f"{text} {unit}" if unit else text


def format_gwei(wei: int, *, places: int = 3) -> str:
    """Wei as gwei: ``format_gwei(23522536417)`` is ``"23.523 gwei"``."""
    return format_amount(wei, decimals=9, places=places, unit="gwei")


def format_eth(wei: int, *, places: int = 4) -> str:
    """Wei as ETH: ``format_eth(2 * 10**18)`` is ``"2.0000 ETH"``."""
    return format_amount(wei, decimals=18, places=places, unit="ETH")


def format_count(value: float) -> str:
    """A count with thousands separators, never ``2048.0``: ``format_count(2048.0)`` is ``"2,048"``.

    Raises
    ------
    ValueError
        When the value is not a whole number (a count that is not one is a bug upstream).
    """
    if isinstance(value, bool) or pd.isna(value) or float(value) != int(value):
        raise ValueError(f"a count must be a whole number, got {value!r}")
    return f"{int(value):,}"


def format_table(frame: pd.DataFrame, formats: dict[str, object]) -> pd.DataFrame:
    """A copy of ``frame`` with the named columns as display text; missing values stay blank.

    Parameters
    ----------
    frame : pandas.DataFrame
    formats : dict
        Column name to a one-argument callable (e.g. ``format_gwei``) or a format spec (``",.3f"``).

    Returns
    -------
    pandas.DataFrame
        Same index and columns; formatted columns hold strings, ``""`` where the value was missing.
    """
    missing = sorted(set(formats) - set(frame.columns))
    if missing:
        raise KeyError(f"no such columns to format: {missing}")
    shown = frame.copy()
    for column, how in formats.items():
        render = how if callable(how) else (lambda v, spec=how: format(v, spec))
        shown[column] = [("" if pd.isna(v) else render(v)) for v in frame[column]]
    return shown

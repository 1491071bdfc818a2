"""feeslab.display: numbers as a reader reads them, exact for integers of any size."""

from __future__ import annotations

import pandas as pd
import pytest

from feeslab.display import format_amount, format_count, format_eth, format_gwei, format_table


def test_format_amount_is_exact_beyond_float_precision():
    assert format_amount(4126781287977559717511168, decimals=18, unit="FLT") == "4,126,781.29 FLT"
    # float would print 1.004193e+27; the digits survive
    assert format_amount(1004193000000000000000000000, decimals=18, places=0) == "1,004,193,000"
    assert format_amount(5, decimals=0) == "5.00"
    assert format_amount(-1_500_000_000, decimals=9, places=1) == "-1.5"


def test_format_amount_rounds_half_to_even():
    assert format_amount(125, decimals=3, places=2) == "0.12"
    assert format_amount(135, decimals=3, places=2) == "0.14"


def test_gwei_and_eth():
    assert format_gwei(23_522_536_417) == "23.523 gwei"
    assert format_eth(2 * 10**18) == "2.0000 ETH"


@pytest.mark.parametrize("bad", [1.5, "12", True])
def test_format_amount_refuses_what_is_not_base_units(bad):
    with pytest.raises(TypeError, match="integer of base units"):
        format_amount(bad, decimals=18)


def test_format_count():
    assert format_count(2048.0) == "2,048"
    assert format_count(12) == "12"
    with pytest.raises(ValueError, match="whole number"):
        format_count(2.5)
    with pytest.raises(ValueError, match="whole number"):
        format_count(float("nan"))


def test_format_table_formats_named_columns_and_blanks_missing():
    fee = pd.array([10**9, None], dtype="Int64")
    frame = pd.DataFrame({"fee_wei": fee, "share": [0.5, float("nan")]})
    shown = format_table(frame, {"fee_wei": format_gwei, "share": ".0%"})
    assert shown["fee_wei"].tolist() == ["1.000 gwei", ""]
    assert shown["share"].tolist() == ["50%", ""]
    assert frame["fee_wei"].iloc[0] == 10**9  # the input is untouched
    with pytest.raises(KeyError, match="no such columns"):
        format_table(frame, {"tips": format_gwei})

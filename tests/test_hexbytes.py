"""The one address check the client's layers share."""

from __future__ import annotations

import pytest

from feeslab._hexbytes import check_address, is_address

GOOD = "0x" + "aB" * 20


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (GOOD, True),
        ("0x" + "00" * 20, True),
        ("aB" * 20, False),  # eth-utils alone accepts it; JSON-RPC wants 0x
        ("0X" + "aB" * 20, False),
        ("0x" + "aB" * 19, False),
        ("0x" + "aB" * 20 + "0", False),
        ("0x" + "gg" * 20, False),
        (GOOD + "\n", False),
        (GOOD.encode(), False),
        (None, False),
    ],
)
def test_is_address(value, expected):
    assert is_address(value) is expected


def test_check_address_names_the_argument():
    assert check_address(GOOD, "to") == GOOD
    with pytest.raises(ValueError, match=r"^to must be 0x followed by 40 hex digits, not '0x12'$"):
        check_address("0x12", "to")

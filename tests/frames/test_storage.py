"""Storage series: eth_getStorageAt answers over blocks, decoded with packed offsets."""

from __future__ import annotations

import pandas as pd
import pytest

from feeslab.frames import STORAGE_DTYPES, decode_series, parse_storage_series
from feeslab.slots import IMPLEMENTATION_SLOT, slot_hex

TOKEN = "0x" + "cd" * 20


def dtypes(frame) -> dict[str, str]:
    return {c: str(t) for c, t in frame.dtypes.items()}


def test_words_stay_exact_and_sorted():
    top = 2**256 - 1
    frame = parse_storage_series(
        TOKEN.upper().replace("0X", "0x"),
        "0x5",
        {12: "0x" + "ff" * 32, 10: "0x0", "0xb": "0x" + "00" * 11 + "12" + "ab" * 20},
    )
    assert dtypes(frame) == STORAGE_DTYPES
    assert frame.block_number.tolist() == [10, 11, 12]
    assert frame.word.tolist() == [0, (0x12 << 160) | int("ab" * 20, 16), top]
    assert type(frame.word.iloc[2]) is int
    assert frame.word_hex.iloc[0] == "0x" + "0" * 64
    assert frame.address.unique().tolist() == [TOKEN]
    assert frame.slot.unique().tolist() == [slot_hex(5)]
    # owner (address at offset 0) and decimals (uint8 at offset 20), as solc packs them
    decimals = decode_series(frame, "t_uint8", offset=20)
    assert decimals.dtype == "int64" and decimals.tolist() == [0, 0x12, 0xFF]
    owners = decode_series(frame, "address")
    assert str(owners.dtype) == "str"
    assert owners.iloc[1] == "0x" + "ab" * 20
    assert decode_series(frame, "uint256").tolist() == [0, frame.word.iloc[1], top]
    assert decode_series(frame, "uint256").dtype == object
    assert decode_series(frame, "int8", offset=20).tolist() == [0, 0x12, -1]
    assert decode_series(frame, "int256", offset=0, size=1).tolist() == [0, -0x55, -1]
    assert decode_series(frame, "bytes2").tolist() == [b"\0\0", b"\xab\xab", b"\xff\xff"]
    assert decode_series(frame, "uint8", offset=20).index.equals(frame.index)


def test_empty_answers_give_empty_frame():
    frame = parse_storage_series(TOKEN, IMPLEMENTATION_SLOT, {})
    assert len(frame) == 0 and dtypes(frame) == STORAGE_DTYPES


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (("0x12", 0, {1: "0x0"}), ValueError, "address must be 0x followed by 40 hex"),
        ((TOKEN, -1, {1: "0x0"}), ValueError, "slot must be in"),
        ((TOKEN, 0, {1: "0x" + "0" * 66}), ValueError, r"answers\[1\] is longer than 32 bytes"),
        ((TOKEN, 0, {1: 5}), TypeError, r"answers\[1\] must be a 0x hex word"),
        ((TOKEN, 0, {"one": "0x0"}), ValueError, "answers key 'one' is not a hex quantity"),
        ((TOKEN, 0, {1: "0x0", "0x1": "0x0"}), ValueError, "same block twice"),
        ((TOKEN, 0, [("0x1", "0x0")]), TypeError, "answers must be a dict"),
    ],
)
def test_bad_input_is_named(args, error, match):
    with pytest.raises(error, match=match):
        parse_storage_series(*args)


def test_decode_series_refuses_mismatches():
    frame = parse_storage_series(TOKEN, 0, {1: "0x2"})
    with pytest.raises(ValueError, match="not a bool"):
        decode_series(frame, "bool")
    with pytest.raises(ValueError, match="size 2 does not fit type 'uint8'"):
        decode_series(frame, "uint8", size=2)
    with pytest.raises(ValueError, match="size 19 does not fit type 'address'"):
        decode_series(frame, "address", size=19)
    with pytest.raises(ValueError, match="dynamically sized"):
        decode_series(frame, "string")
    with pytest.raises(TypeError, match="'word' column"):
        decode_series(pd.DataFrame({"x": [1]}), "uint8")


def test_a_slot_over_blocks_from_the_devnet(devnet, rpc):
    """The proxy's implementation slot across its upgrade, parsed and decoded."""
    listing = devnet.contracts
    address = {c["name"]: c["address"] for c in listing["contracts"]}
    upgrade = next(c for c in listing["chains"] if c["network"] == "mainnet")["upgrade_block"]
    blocks = [upgrade - 2, upgrade - 1, upgrade, upgrade + 1]
    answers = {
        b: rpc("eth_getStorageAt", address["FeeslabProxy"], slot_hex(IMPLEMENTATION_SLOT), hex(b))
        for b in blocks
    }
    frame = parse_storage_series(address["FeeslabProxy"], IMPLEMENTATION_SLOT, answers)
    assert frame.block_number.tolist() == blocks
    assert frame.word_hex.tolist() == [answers[b] for b in blocks]
    implementations = decode_series(frame, "address")
    assert implementations.tolist() == [address["CounterV1"]] * 2 + [address["CounterV2"]] * 2

"""The one frame writer: exact ints through Parquet and CSV, and files written atomically."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from feeslab.frames.io import exact_int_columns, frame_from_bytes, frame_to_bytes, write_frame


@pytest.fixture
def frame() -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "block_number": [15_000_000, 15_000_001, 15_000_002],
            "base_fee_wei": [12_345_678_901, 10**9, 7],
            "word": [2**255 + 1, 0, None],
            "gas_used_ratio": [0.5, 1.0, 0.0],
            "miner": ["0xaa", "0xbb", "0xcc"],
            "timestamp": pd.to_datetime([1_700_000_000, 1_700_000_012, 1_700_000_024],
                                        unit="s", utc=True),
        }
    )
    frame.attrs.update(chain_id=1, chain_spec="mainnet", source="service")
    return frame


def test_frames_round_trip_exactly(frame):
    assert exact_int_columns(frame) == ["word"]
    back = frame_from_bytes(frame_to_bytes(frame))
    pd.testing.assert_frame_equal(back, frame)
    assert back["word"].iloc[0] == 2**255 + 1 and isinstance(back["word"].iloc[0], int)
    assert back.attrs == frame.attrs
    assert frame_to_bytes(frame) == frame_to_bytes(frame.copy())
    csv = frame_from_bytes(frame_to_bytes(frame, "csv"))
    assert csv["base_fee_wei"].tolist() == frame["base_fee_wei"].tolist()
    assert [None if pd.isna(v) else int(v) for v in csv["word"]] == [2**255 + 1, 0, None]
    with pytest.raises(ValueError, match="format"):
        frame_to_bytes(frame, "xlsx")


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_write_frame_gives_the_same_bytes_as_publishing(frame, tmp_path, suffix):
    path = write_frame(frame, tmp_path / f"out{suffix}")
    assert path.read_bytes() == frame_to_bytes(frame, suffix[1:])
    assert [p.name for p in tmp_path.iterdir()] == [f"out{suffix}"]
    back = pd.read_parquet(path) if suffix == ".parquet" else pd.read_csv(path)
    assert [None if pd.isna(v) else int(v) for v in back["word"]] == [2**255 + 1, 0, None]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(frame, tmp_path, monkeypatch):
    path = tmp_path / "fees.parquet"
    path.write_bytes(b"the previous run's file")

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        write_frame(frame, path)
    assert path.read_bytes() == b"the previous run's file"
    assert [p.name for p in tmp_path.iterdir()] == ["fees.parquet"]


def test_an_unknown_suffix_writes_nothing(frame, tmp_path):
    with pytest.raises(ValueError, match=r"FILE\.parquet or FILE\.csv"):
        write_frame(frame, tmp_path / "out.xlsx")
    assert list(tmp_path.iterdir()) == []

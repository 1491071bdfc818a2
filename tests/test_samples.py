"""feeslab.samples: the real mainnet samples load typed, and equal their sources."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from feeslab import samples
from feeslab.sources.era1 import Era1Source

ERA1 = Path(__file__).parent / "data" / "era1" / "mainnet-00000-5ec1ffb8.era1"


def test_frontier_samples_equal_a_fresh_read_of_the_era1_file():
    source = Era1Source(ERA1)
    pd.testing.assert_frame_equal(samples.frontier_blocks(), source.blocks(0, 8192, progress=False))
    uncles, _ = source.uncle_rows(0, 8192, progress=False)
    pd.testing.assert_frame_equal(samples.frontier_uncles(), uncles)
    assert samples.frontier_blocks().attrs["chain_id"] == 1
    assert samples.frontier_uncles().attrs["source"] == "era1"


def test_uncle_counts_2021_cover_london():
    frame = samples.uncle_counts_2021()
    assert frame["block_number"].tolist() == list(range(12_710_000, 13_510_000))
    assert frame["uncle_count"].dtype == "int64" and set(frame["uncle_count"]) <= {0, 1, 2}
    assert frame.attrs == {"chain_id": 1, "source": "SciEcon/EIP1559",
                           "reference": "Liu et al. 2022, arXiv:2201.05574"}  # fmt: skip
    assert samples.LONDON_BLOCK in set(frame["block_number"])


def test_attack_gas_2016_rows_of_the_research_csv():
    frame = samples.attack_gas_2016()
    assert len(frame) == 23_153
    assert frame.iloc[0].tolist() == [2_271_721, 2_944_806, 2_797_534, 0]  # the CSV's first row
    assert frame.iloc[-1].tolist() == [2_419_325, 1_471_000, 1_450_000, 0]  # and its last
    assert frame.attrs["source"] == "ethereum/research"
    assert list(frame.dtypes) == ["int64"] * 4

"""Source lines: a figure says whether its data is the simulator's or a real chain's, and which
blocks, from the frame's own attrs (a frame without them is refused, never guessed)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from feeslab import plots, samples


def test_the_devnet_is_named_simulated() -> None:
    frame = pd.DataFrame({"block_number": range(210_000, 199_989, -1)})
    frame["timestamp"] = pd.Timestamp("2024-01-01", tz="UTC")  # simulated: never named
    frame.attrs.update({"chain_id": 1, "chain_spec": "mainnet@devnet", "source": "devnet"})
    assert plots.describe_source(frame) == "devnet (simulated), blocks 199,990-210,000"


def test_a_real_sample_is_named_by_network_blocks_and_source() -> None:
    frontier = samples.frontier_blocks()
    assert plots.describe_source(frontier) == (
        "mainnet, blocks 0-8,191, 2015-07-30 to 2015-07-31 (era1)"  # genesis says 1970
    )


def test_blocks_that_do_not_fill_their_range_are_listed_or_counted_never_called_a_range() -> None:
    frontier = samples.frontier_blocks()
    four = frontier.iloc[[0, 10, 500, 8_191]]
    four.attrs = frontier.attrs
    assert plots.describe_source(four) == (
        "mainnet, blocks 0, 10, 500 and 8,191, 2015-07-30 to 2015-07-31 (era1)"
    )
    sparse = frontier.iloc[::2]
    sparse.attrs = frontier.attrs
    assert plots.describe_source(sparse).startswith("mainnet, 4,096 blocks of 0-8,190, ")


def test_the_network_comes_from_the_chain_when_attrs_do_not_name_it() -> None:
    frame = pd.DataFrame({"x": [1]}, index=pd.Index([5, 9], name="block_number")[:1])
    frame.attrs.update({"chain_id": 8453, "source": "infura"})
    assert plots.describe_source(frame) == "base-mainnet, block 5 (infura)"


def test_a_frame_without_a_source_is_refused() -> None:
    with pytest.raises(ValueError, match="no 'source'"):
        plots.describe_source(pd.DataFrame({"block_number": [1]}))


def test_the_source_line_is_written_under_the_figure() -> None:
    fig, ax = plt.subplots()
    try:
        assert plots.add_source(ax, "devnet (simulated), blocks 1-2") is fig
        assert fig.get_supxlabel() == "Source: devnet (simulated), blocks 1-2"
        with pytest.raises(ValueError, match="empty"):
            plots.add_source(fig, " ")
    finally:
        plt.close(fig)

"""feeslab.plots.revenue: the stacked parts and the bundle share drawn where the windows say."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from feeslab.analysis import revenue
from feeslab.plots import plot_bundle_share, plot_revenue_by_window

ETH = 10**18


@pytest.fixture
def windows() -> pd.DataFrame:
    """Two windows of 10 blocks: 2 ETH rewards, fees of 1 then 3 ETH a block, one transfer."""
    frame = pd.DataFrame({
        "block_number": np.arange(1_000, 1_020),
        "static_reward_wei": [2 * ETH] * 20,
        "uncle_inclusion_reward_wei": [0] * 20,
        "flashbots_bundle_gas_fee_wei": [0] * 19 + [ETH],
        "other_gas_fee_wei": [ETH] * 10 + [3 * ETH] * 9 + [2 * ETH],
        "flashbots_coinbase_transfer_wei": [0] * 19 + [5 * ETH],
    })  # fmt: skip
    return revenue.revenue_by_window(frame, window=10)


def test_parts_are_stacked_as_means_per_block(windows):
    ax = plot_revenue_by_window(windows, events={"London": 1_010}, scale=1.0)
    stairs = [p for p in ax.patches if type(p).__name__ == "StepPatch"]
    assert [s.get_label() for s in stairs] == [
        "static reward", "uncle inclusion reward", "gas fees (whole fee before London, tips after)",
        "coinbase transfers (bundles)"]  # fmt: skip
    tops = [s.get_data() for s in stairs]
    assert np.allclose(tops[0].values, [2.0, 2.0])  # the static reward, from 0
    assert np.allclose(tops[2].values, [3.0, 5.0])  # + 1 and 3 ETH of fees a block
    assert np.allclose(tops[3].values, [3.0, 5.5])  # + 5 ETH of transfers over 10 blocks
    assert np.allclose(tops[3].baseline, tops[2].values)
    assert np.allclose(tops[0].edges, [1_000, 1_010, 1_020])
    assert "ETH per block" in ax.get_ylabel()
    assert any(t.get_text() == "London" for t in ax.texts)


def test_bundle_share_in_percent(windows):
    ax = plot_bundle_share(windows)
    (stairs,) = [p for p in ax.patches if type(p).__name__ == "StepPatch"]
    assert np.allclose(stairs.get_data().values, [0.0, 100 * 6 / 55])
    assert np.allclose(stairs.get_data().edges, [0.001, 0.00101, 0.00102])  # millions
    assert "%" in ax.get_ylabel()


def test_a_frame_of_another_kind_is_refused():
    with pytest.raises(TypeError, match="revenue_by_window"):
        plot_revenue_by_window(pd.DataFrame({"block_number": [1]}))
    with pytest.raises(TypeError, match="bundle columns"):
        plot_bundle_share(pd.DataFrame({"blocks": [1], "total_eth": [2.0]}))

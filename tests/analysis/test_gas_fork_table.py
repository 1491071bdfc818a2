"""`fork_gas_table` and its figure: the three example transactions, fork by fork."""

from __future__ import annotations

import numpy as np
import pytest

from feeslab.analysis import gas
from feeslab.plots.gas_rules import plot_fork_gas, plot_intrinsic_and_floor

POST = bytes([7]) * 100_000


def test_the_table_charges_the_floor_from_prague_and_prices_at_the_base_fee() -> None:
    table = gas.fork_gas_table({"transfer": {"value": 1}, "post": {"data": POST},
                                "call": {"data": b"\x01", "execution_gas": {"osaka": 5_000}}},
                               base_fee_wei=3 * 10**9)  # fmt: skip
    assert {c: str(t) for c, t in table.dtypes.items()} == gas.FORK_GAS_DTYPES
    assert len(table) == 3 * len(gas.GAS_FORKS)
    post = table[table["transaction"] == "post"].set_index("fork")
    assert post.loc["cancun", "gas"] == 21_000 + 16 * 100_000
    assert post["floor_gas"].isna().sum() == 3  # no floor before Prague
    assert post.loc["prague", "gas"] == 21_000 + 10 * 4 * 100_000  # the floor wins
    assert post.loc["amsterdam", "gas"] == 15_000 + 16 * 4 * 100_000
    assert post.loc["amsterdam", "cost_wei"] == post.loc["amsterdam", "gas"] * 3 * 10**9
    assert isinstance(post.loc["amsterdam", "cost_wei"], int)  # exact
    transfer = table[table["transaction"] == "transfer"]
    assert transfer["gas"].eq(21_000).all()
    call = table[table["transaction"] == "call"].set_index("fork")
    assert call.loc["osaka", "gas"] == 21_016 + 5_000  # intrinsic + execution over the floor
    assert call.loc["prague", "gas"] == 21_040  # no execution given: the floor of 4 tokens
    with pytest.raises(ValueError, match="base_fee_wei"):
        gas.fork_gas_table({"transfer": {}}, base_fee_wei=-1)


def test_the_figure_draws_one_bar_per_transaction_and_fork() -> None:
    import matplotlib.pyplot as plt

    table = gas.fork_gas_table({"transfer": {"value": 1}, "post": {"data": POST}},
                               base_fee_wei=10**10)  # fmt: skip
    ax = plot_fork_gas(table)
    assert [c.get_label() for c in ax.containers] == ["transfer", "post"]
    heights = [bar.get_height() for bar in ax.containers[1]]
    assert heights == table[table["transaction"] == "post"]["gas"].tolist()
    assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0 and "[gas]" in ax.get_ylabel()
    eth = plot_fork_gas(table, unit="ETH")
    assert "[ETH]" in eth.get_ylabel()
    with pytest.raises(ValueError, match="unit"):
        plot_fork_gas(table, unit="wei")
    with pytest.raises(TypeError, match="fork_gas_table"):
        plot_fork_gas(table.drop(columns="gas"))
    parts = plot_intrinsic_and_floor(table, "post")
    intrinsic, floor = parts.containers
    assert [bar.get_height() for bar in intrinsic] == table[table["transaction"] == "post"][
        "intrinsic_gas"].tolist()
    floors = [bar.get_height() for bar in floor]
    assert np.isnan(floors[0]) and floors[-1] == table["floor_gas"].iloc[-1]  # none at London
    assert parts.get_ylim()[0] == 0
    with pytest.raises(ValueError, match="no transaction 'swap'"):
        plot_intrinsic_and_floor(table, "swap")
    plt.close("all")

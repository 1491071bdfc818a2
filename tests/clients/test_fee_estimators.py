"""The estimators agree with the clients themselves: ethers 6's ``getFeeData``, viem's
``estimateFeesPerGas`` (run by node, ``fee_estimates.mjs``) and web3.py's fee defaults and
fee-history fallback ask one devnet; feeslab's functions compute the same suggestion from the
blocks that devnet serves (``Lab.fee_history``) and the node's own ``eth_maxPriorityFeePerGas``.
The expected values come from feeslab's functions, the observed ones from the clients.
"""

from __future__ import annotations

import pandas as pd
import pytest
from web3 import HTTPProvider, Web3
from web3._utils.fee_utils import fee_history_priority_fee
from web3._utils.transactions import fill_transaction_defaults

from feeslab.analysis import estimators
from feeslab.frames.base_fees import parse_fee_history

MULTIPLIER = 1.25  # a chain's own viem baseFeeMultiplier, beside the default 1.2


def _node_tip(rpc, head: int) -> pd.DataFrame:
    """The node's eth_maxPriorityFeePerGas at ``head``, as a suggestions frame."""
    tip = int(rpc("eth_maxPriorityFeePerGas"), 16)
    return pd.DataFrame({"block_number": [head], "max_fee_per_gas_wei": [tip],
                         "max_priority_fee_per_gas_wei": [tip]})  # fmt: skip


def _at(frame: pd.DataFrame, head: int) -> tuple[int, int]:
    row = frame.set_index("block_number").loc[head]
    return int(row["max_fee_per_gas_wei"]), int(row["max_priority_fee_per_gas_wei"])


def _pair(seen: dict) -> tuple[int, int]:
    return int(seen["maxFeePerGas"]), int(seen["maxPriorityFeePerGas"])


def test_ethers_and_viem_suggest_what_feeslab_computes(node_script, devnet, lab, rpc):
    seen = node_script("fee_estimates", url=f"{devnet.url}/v3/{devnet.api_key}",
                       multiplier=MULTIPLIER)  # fmt: skip
    head = int(seen["before"])
    assert int(seen["after"]) == head  # one head for every call
    history = lab.fee_history(head - 20, head + 1)
    tip = _node_tip(rpc, head)
    base = int(history["base_fee_wei"].iloc[-1])
    assert base > 0 and int(tip["max_priority_fee_per_gas_wei"].iloc[0]) > 0

    ethers = estimators.ethers_fee_data(history, priority_fee=tip)
    viem = estimators.viem_fees(history, priority_fee=tip)
    scaled = estimators.viem_fees(history, priority_fee=tip, base_fee_multiplier=MULTIPLIER)
    assert _pair(seen["ethers"]) == _at(ethers, head)
    assert _pair(seen["viem"]) == _at(viem, head)
    assert _pair(seen["viemScaled"]) == _at(scaled, head)
    # three different rules: 2x, 1.2x and 1.25x the base fee, floored where viem floors
    fees = {_at(f, head)[0] for f in (ethers, viem, scaled)}
    assert len(fees) == 3


@pytest.fixture
def w3(devnet) -> Web3:
    return Web3(HTTPProvider(f"{devnet.url}/v3/{devnet.api_key}"))


def test_web3py_fee_defaults_are_feeslabs(w3, lab, rpc):
    head = w3.eth.block_number
    filled = fill_transaction_defaults(w3, {
        "to": "0x000000000000000000000000000000000000dEaD", "value": 0, "gas": 21_000,
        "chainId": 1,
    })  # fmt: skip
    assert w3.eth.block_number == head
    history = lab.fee_history(head - 20, head + 1)
    # with eth_maxPriorityFeePerGas: the node's tip plus twice the latest base fee, as ethers
    ours = estimators.ethers_fee_data(history, priority_fee=_node_tip(rpc, head))
    assert (filled["maxFeePerGas"], filled["maxPriorityFeePerGas"]) == _at(ours, head)


def test_web3py_fee_history_fallback_is_feeslabs(w3, lab, rpc):
    head = w3.eth.block_number
    tip = fee_history_priority_fee(w3.eth)  # what max_priority_fee falls back to
    assert w3.eth.block_number == head
    # web3.py asks eth_feeHistory(10, "pending", [5]): the devnet has a pending block, so the
    # window is head - 8 .. head + 1; the pending block's row is what the node answers for it
    blocks = lab.fee_history(head - 30, head + 1, percentiles=[5])
    pending = parse_fee_history(rpc("eth_feeHistory", "0x1", "pending", [5.0]),
                                percentiles=[5]).iloc[:1]  # fmt: skip
    assert int(pending["block_number"].iloc[0]) == head + 1
    frame = pd.concat([blocks, pending], ignore_index=True)
    ours = estimators.web3py_fallback(frame, pending=True)
    expected_fee, expected_tip = _at(ours, head)
    assert tip == expected_tip
    assert expected_fee == expected_tip + 2 * int(blocks["base_fee_wei"].iloc[-1])
    # without the pending block the window shifts one block back, and so does the answer
    rewards = blocks["reward_p5_wei"].astype("int64").tolist()
    nonzero = [r for r in rewards[-10:] if r]
    mean = round(sum(nonzero) / max(len(nonzero), 1))
    assert _at(estimators.web3py_fallback(blocks), head)[1] == min(max(mean, 10**9), 15 * 10**8)

"""Exercises of Lesson 4, fee suggestions: which gets you in, and what it overpays.

The expected values come from the estimators' rules (:mod:`feeslab.analysis.estimators`) and
from the real mainnet blob sample (:func:`feeslab.samples.blob_market` with
:func:`feeslab.analysis.backtest.blob_multiples`), computed when first checked.
"""

from __future__ import annotations

import functools

import pandas as pd

from feeslab.analysis import backtest, estimators
from feeslab.course import _data
from feeslab.course._exercise import Choice, Exercise, Mistake, Number

__all__ = ["EXERCISES"]

#: Exercise 4.2's block: its base fee and the node's tip [wei]
_BASE_FEE_WEI = 23_456_789_123
_TIP_WEI = 1_500_000_000
#: Exercise 4.3's multiple of the current blob base fee [1]
_K = 1.05


def _viem_max_fee() -> int:
    """viem's ``maxFeePerGas`` after a block of base fee ``_BASE_FEE_WEI`` [wei]."""
    history = pd.DataFrame({"block_number": [1], "base_fee_wei": [_BASE_FEE_WEI]})
    tip = pd.DataFrame({"block_number": [1], "max_fee_per_gas_wei": [_TIP_WEI],
                        "max_priority_fee_per_gas_wei": [_TIP_WEI]})  # fmt: skip
    return int(estimators.viem_fees(history, priority_fee=tip)["max_fee_per_gas_wei"].iloc[0])


@functools.cache  # checked several times, computed once
def _bpo2_next_block_share() -> float:
    """Share of BPO2 blocks whose next block's blob base fee was at most ``_K`` times theirs."""
    market = _data.blob_market()
    needed = backtest.blob_multiples(market[["block_number", "blob_base_fee_wei", "fork"]],
                                     within=1)  # fmt: skip
    bpo2 = needed[needed["fork"] == "bpo2"]
    return float((bpo2["k_needed"] <= _K).mean())


EXERCISES = (
    Exercise(
        "4.1",
        "read a figure",
        "Read Figure 1's right panel: which estimator overpaid most, as a median share of the "
        "cheapest price that got into the same block? (a) geth `eth_gasPrice`; (b) ethers "
        "`getFeeData`; (c) the web3.py fallback; (d) MetaMask high.",
        Choice(
            {
                "a": "geth eth_gasPrice",
                "b": "ethers getFeeData",
                "c": "web3.py fallback",
                "d": "MetaMask high",
            },
            correct="d",
        ),
        hint="Find the longest bar in the right panel of Figure 1 (median overpayment [%]).",
        explanation="MetaMask high (and the Gas API's high level, the same rule) overpaid most, "
        "a median 12 %: a transaction pays the base fee plus its tip, so what it overpays is its "
        "tip over the block's lowest, and MetaMask high adds at least 2 gwei of tip.",
        mistakes=(
            Mistake(
                "c",
                "web3.py suggests the largest max fee (Table 1), but a transaction pays "
                "base fee + tip, not its max fee: the overpayment comes from the tip.",
            ),
            Mistake(
                "a",
                "geth's legacy price is its tip plus the base fee: a small tip. Compare "
                "the bars' lengths in the right panel again.",
            ),
        ),
    ),
    Exercise(
        "4.2",
        "compute and compare",
        "After a block whose base fee is 23,456,789,123 wei, a node answers "
        "`eth_maxPriorityFeePerGas` with 1,500,000,000 wei. What `maxFeePerGas` does viem's "
        "`estimateFeesPerGas` suggest [wei]?",
        Number(_viem_max_fee, unit="wei"),
        hint="viem multiplies the base fee by 1.2 in integers (`base * 12 // 10`, floored) and "
        "adds the node's tip; see the table at the top of the lesson.",
        explanation="23,456,789,123 x 12 // 10 = 28,148,146,947 plus the 1.5 gwei tip: "
        "29,648,146,947 wei. viem's 20 % margin covers one full block's 12.5 % rise of the base "
        "fee, not two; ethers' doubling covers about six.",
        mistakes=(
            Mistake(
                48_413_578_246,
                "that is ethers' rule (2 x base fee + tip); viem multiplies the base fee by 1.2.",
            ),
            Mistake(
                29_648_146_948,
                "viem floors the product (integer division), it does not round it up.",
            ),
            Mistake(28_148_146_947, "that is the base fee x 1.2 alone: add the tip."),
        ),
    ),
    Exercise(
        "4.3",
        "compute and compare",
        "From the mainnet sample: a blob transaction priced at k = 1.05 times the current blob "
        "base fee is included in the next block when that block's blob base fee is at most 1.05 "
        "times the current one. On what share of BPO2 blocks was it? Answer as a fraction "
        "between 0 and 1.",
        Number(_bpo2_next_block_share, rel=0.001),
        hint="Use `backtest.blob_multiples(frame, within=1)` on the sample (columns "
        "`block_number`, `blob_base_fee_wei`, `fork`), keep the BPO2 rows and take the share "
        "whose `k_needed` is at most 1.05.",
        explanation="96.1 % of BPO2 blocks: a 5 % margin covers most one-block rises, which "
        "reach 8.2 % at most; Table 4's 99 % needs 1.0696, and 3 blocks of waiting instead of 1.",
        mistakes=(
            Mistake(96.06, "that is a percentage: answer as a fraction (0 to 1)."),
            Mistake(
                0.9734,
                "that counts inclusion within 3 blocks (Table 4's window); the "
                "question asks about the next block (`within=1`).",
            ),
            Mistake(
                0.3188,
                "that is the share at k = 1 (the next fee no higher than the "
                "current); the question prices at 1.05 times it.",
            ),
        ),
    ),
)

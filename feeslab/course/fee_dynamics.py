"""Exercises of Lesson 2, "Fee dynamics: volatility, demand shocks and tips"
(``notebooks/02_fee_dynamics.ipynb``).

Expected values come from real mainnet transactions (:func:`feeslab.samples.post_merge_blocks`),
EIP-1559's integer rule with each chain's parameters (:mod:`feeslab.protocol.eip1559`) and
:mod:`feeslab.analysis.fees`; the one question on simulated chains is a choice about the
mechanism, whose answer does not depend on the simulator's numbers.
"""

from __future__ import annotations

from functools import cache

import pandas as pd

from feeslab import samples
from feeslab.analysis import fees
from feeslab.course._exercise import Choice, Exercise, Mistake, Number, Numbers
from feeslab.protocol import eip1559

__all__ = ["EXERCISES", "blocks_to_double", "median_tip_gwei"]

#: the real block of exercise 2.1
TIP_BLOCK = 22_869_878
#: exercise 2.2's starting fee [wei] and gas limit [gas] (a multiple of 2 and of 6)
START_FEE = 1_000_000_000
GAS_LIMIT = 60_000_000
MAINNET, BASE = 1, 8453


@cache
def _transactions() -> pd.DataFrame:
    _, transactions = samples.post_merge_blocks()
    return transactions


def median_tip_gwei(block_number: int, *, by_gas: bool = False) -> float:
    """The median tip [gwei] of a real block's transactions, each counted once (or weighted by
    gas, as ``eth_feeHistory``), by geth's rank."""
    tips = fees.tip_percentiles(_transactions(), [50], weight="gas_used" if by_gas else None)
    return int(tips.loc[block_number, "tip_p50_wei"]) / 1e9


def blocks_to_double(chain_id: int, start_fee: int = START_FEE, gas_limit: int = GAS_LIMIT) -> int:
    """Full blocks [blocks] the integer rule needs to take ``start_fee`` to twice it, with the
    chain's latest EIP-1559 parameters (``data/chains.json``)."""
    rule = eip1559.eip1559_schedule(chain_id)[-1]
    fee, blocks = int(start_fee), 0
    while fee < 2 * start_fee:
        fee = eip1559.next_base_fee(
            fee,
            gas_limit,
            gas_limit,
            rule.elasticity_multiplier or 2,
            rule.max_change_denominator,
            gas_target_percent=rule.gas_target_percent,
        )
        blocks += 1
    return blocks


def _linear_blocks(chain_id: int) -> int:
    """A likely wrong answer: 100 % over the first block's rise, as if rises did not compound."""
    rule = eip1559.eip1559_schedule(chain_id)[-1]
    return rule.max_change_denominator // ((rule.elasticity_multiplier or 2) - 1)


EXERCISES = (
    Exercise(
        number="2.1",
        kind="compute and compare",
        question=(
            "The lesson weighs tips by gas, as `eth_feeHistory` does. Count each transaction once "
            "instead: what is the median tip of mainnet block 22,869,878's transactions [gwei]? "
            "Use the `effective_tip_wei` column of `feeslab.samples.post_merge_blocks()`'s "
            "transactions, then compare with the gas-weighted median in the lesson's table."
        ),
        answer=Number(expected=lambda: median_tip_gwei(TIP_BLOCK), rel=0.01, unit="gwei"),
        hint=(
            "Select the block's rows, take the median of effective_tip_wei without weights "
            "(each transaction once) and divide by 1e9 for gwei."
        ),
        explanation=(
            "Counted per transaction the median tip is about half the gas-weighted one: in this "
            "block the many small transactions tip less than the few large ones, which carry "
            "most of the gas."
        ),
        mistakes=(
            Mistake(
                median_tip_gwei(TIP_BLOCK, by_gas=True),
                "That is the gas-weighted median from the table: count each transaction once.",
            ),
            Mistake(
                median_tip_gwei(TIP_BLOCK) * 1e9,
                "That is in wei: the question asks for gwei (1 gwei = 1e9 wei).",
            ),
        ),
    ),
    Exercise(
        number="2.2",
        kind="predict, then run",
        question=(
            "A demand shock fills every block. At the fastest, how many full blocks does it take "
            "to double the base fee (a) on mainnet (elasticity 2, denominator 8) and (b) on "
            "base-mainnet (elasticity 6, denominator 250)? Start from 1 gwei with a gas limit of "
            "60,000,000 gas and apply the integer rule. Predict first, then run; answer "
            "`[mainnet, base]` [blocks]."
        ),
        answer=Numbers(expected=lambda: [blocks_to_double(MAINNET), blocks_to_double(BASE)]),
        hint=(
            "A full block multiplies the fee by 1 + (elasticity - 1) / denominator: 9/8 on "
            "mainnet, 1.02 on Base. Count the blocks until the fee first reaches twice its "
            "start; the rises compound."
        ),
        explanation=(
            "ln 2 / ln 1.125 ≈ 5.9 and ln 2 / ln 1.02 ≈ 35.0, so it takes 6 and 36 whole blocks: "
            "Base's fee needs six times as many full blocks to double, which is why its fee line "
            "in Figure 5 is so smooth."
        ),
        mistakes=(
            Mistake(
                [_linear_blocks(MAINNET), _linear_blocks(BASE)],
                "That adds the first block's rise again and again: each full block adds a share "
                "of the fee it starts from, so the rises compound and doubling comes sooner.",
            ),
            Mistake(
                [blocks_to_double(MAINNET) - 1, blocks_to_double(BASE) - 1],
                "After that many blocks the fee is still just short of double: round the "
                "logarithm's ratio up, or count until the fee first reaches twice its start.",
            ),
        ),
    ),
    Exercise(
        number="2.3",
        kind="read a figure",
        question=(
            "In Figure 5, base-mainnet's simulated base fee drifts smoothly, yet its spread of gas "
            "used, in units of the gas target, is the largest of the four chains. Which reading of "
            "the figure explains both? Answer with a letter.\n\n"
            "- (a) Base's denominator of 250 lets a block move the fee by at most 2 %, so blocks "
            "that swing widely around their target move the fee only a little.\n"
            "- (b) Base's blocks are more often full than the other chains'.\n"
            "- (c) Base's demand is calmer, so its gas used swings less.\n"
            "- (d) Base's fee is so low that integer rounding hides its changes."
        ),
        answer=Choice(
            options={
                "a": "the denominator damps the fee",
                "b": "more full blocks",
                "c": "calmer demand",
                "d": "rounding hides changes",
            },
            correct="a",
        ),
        hint=(
            "Read the three lower panels of Figure 5 for base-mainnet, then recall what a log "
            "return times the denominator measures."
        ),
        explanation=(
            "The fee's swings are the gas swings divided by the denominator: 250 against mainnet's "
            "8 damps them thirtyfold, so a chain can have the widest swings of gas used and the "
            "smoothest fee."
        ),
        mistakes=(
            Mistake(
                "b",
                "Figure 5's full-block panel shows base-mainnet with among the fewest "
                "full blocks of the four.",
            ),
            Mistake(
                "c",
                "The spread panel shows the opposite: base-mainnet's gas used swings the "
                "most, in target units.",
            ),
            Mistake(
                "d",
                "At 0.02 gwei the fee is 20 million wei: rounding moves it by parts in "
                "ten million, far below what Figure 5 could show.",
            ),
        ),
    ),
)

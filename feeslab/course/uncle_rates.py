"""Exercises of Lesson 6, "Uncle rates: counting forks, with their uncertainty".

The lesson (``notebooks/06_uncle_rates.ipynb``) counts uncles per block with Wilson's interval,
shows how deep uncles sit and what they were paid, and who mined and went stale; these
exercises apply it to real mainnet blocks (:func:`feeslab.samples.frontier_blocks`) and to the
reward rule of the protocol (an uncle at depth *d* earns (8 - *d*)/8 of the block reward).
Expected values are computed here from the samples and :mod:`feeslab.analysis.uncles`, never
pasted.
"""

from __future__ import annotations

from feeslab.course._exercise import Exercise, Mistake, Number

__all__ = ["EXERCISES"]

_WEI_PER_ETH = 10**18


def _wilson_upper() -> float:
    """Upper end of the 95 % Wilson interval of Frontier's blocks 4,000-4,999 [uncles/block]."""
    from feeslab import samples
    from feeslab.analysis import uncles

    blocks = samples.frontier_blocks()
    window = blocks[blocks["block_number"].between(4_000, 4_999)]
    return float(uncles.uncle_rate(window)["upper"].iloc[0])


def _depth_two_byzantium_eth() -> float:
    """What an uncle at depth 2 earned in the Byzantium era (3 ETH blocks) [ETH]."""
    from feeslab.analysis import uncles

    schedule = uncles.reward_schedule("mainnet").set_index("era")
    block_reward = int(schedule.loc["byzantium", "block_reward_wei"])
    return (8 - 2) * block_reward // 8 / _WEI_PER_ETH


def _miners_stale_above_the_largest() -> int:
    """Frontier's miners (100 blocks or more) whose stale-rate interval lies wholly above the
    largest miner's."""
    from feeslab import samples
    from feeslab.analysis import uncles

    by_miner = uncles.miner_uncles(samples.frontier_blocks(), samples.frontier_uncles())
    large = by_miner[by_miner["blocks"] >= 100]
    largest = large["blocks"].idxmax()
    return int((large["stale_lower"] > large.loc[largest, "stale_upper"]).sum())


EXERCISES = (
    Exercise(
        number="6.1",
        kind="compute and compare",
        question=(
            "Take Frontier's blocks 4,000 to 4,999 (both included: 1,000 blocks) from "
            "`samples.frontier_blocks()`. What is the upper end of the 95 % Wilson interval "
            "of their uncle rate [uncles/block]? Compare it with the rate itself."
        ),
        answer=Number(expected=_wilson_upper, abs=0.0005, unit="uncles/block"),
        hint=(
            "select the rows with `blocks['block_number'].between(4_000, 4_999)` and pass them "
            "to `uncles.uncle_rate`; its `upper` column is the interval's upper end, as a "
            "fraction (uncles per block), not a percentage."
        ),
        explanation=(
            "167 uncles in 1,000 blocks give a rate of 0.167 and a Wilson interval of about "
            "0.145 to 0.191: with a thousand blocks the rate is known to within about +-0.02, "
            "and the interval is not symmetric around the rate (Wilson's is pulled towards 0.5)."
        ),
        mistakes=(
            Mistake(
                0.1943,
                'that is Garwood\'s interval (`method="garwood"`), the one for '
                "counts; this exercise asks for Wilson's, `uncle_rate`'s default.",
            ),
            Mistake(
                0.1901,
                "that is the textbook (Wald) interval rate +- 1.96 x sqrt(rate x "
                "(1 - rate) / blocks); Wilson's interval is not centred on the rate. Use "
                "`uncles.uncle_rate`.",
            ),
            Mistake(19.14, "the rate is a fraction (uncles per block), not a percentage."),
        ),
    ),
    Exercise(
        number="6.2",
        kind="predict, then run",
        question=(
            "Predict what an uncle at depth 2 was paid in the Byzantium era [ETH], from the "
            "era table and the rule that an uncle at depth *d* earns (8 - *d*)/8 of the block "
            "reward. Then check your prediction with `uncles.reward_schedule`."
        ),
        answer=Number(expected=_depth_two_byzantium_eth, abs=1e-9, unit="ETH"),
        hint=(
            "find Byzantium's block reward in the era table (`block_reward_wei`, divide by "
            "10**18 for ETH) and multiply it by (8 - 2) / 8."
        ),
        explanation=(
            "Byzantium (EIP-649) paid 3 ETH a block, so a depth-2 uncle earned 6/8 of it, "
            "2.25 ETH; the block that included it earned 3/32 ETH more."
        ),
        mistakes=(
            Mistake(3.75, "that is 6/8 of 5 ETH, the genesis era's reward; Byzantium paid 3 ETH."),
            Mistake(1.5, "that is 6/8 of 2 ETH, Constantinople's reward; Byzantium paid 3 ETH."),
            Mistake(
                0.75,
                "that is d/8 of the reward; an uncle earns (8 - d)/8: the shallower, the more.",
            ),
            Mistake(2.625, "that is depth 1 (7/8); at depth 2 the uncle earns 6/8."),
        ),
    ),
    Exercise(
        number="6.3",
        kind="read a figure",
        question=(
            "Read Figure 4's right-hand panel: of the other miners drawn there, how many have a "
            "stale-rate interval lying wholly above the largest miner's (the bottom of their "
            "error bar above the top of its bar)?"
        ),
        answer=Number(expected=_miners_stale_above_the_largest, unit="miners"),
        hint=(
            "the largest miner is the rightmost point; note the top of its error bar (about 0.09) "
            "and count the other error bars whose bottom end lies above it."
        ),
        explanation=(
            "Seven of the twelve other miners went stale more often than the largest beyond the "
            "uncertainty of either rate, and none went stale less beyond it: 'less than most' "
            "holds for the intervals, not only for the points."
        ),
        mistakes=(
            Mistake(
                9,
                "9 miners have a rate (the point) above the largest miner's interval, but "
                "for two of them the error bar reaches down into it: compare whole intervals.",
            ),
            Mistake(
                12,
                "that counts every other miner; some error bars overlap the largest "
                "miner's, so their stale rates are not known to be higher.",
            ),
        ),
    ),
)

"""Exercises of Lesson 7, "Why blocks fork: propagation, gas and real mainnet".

The lesson (``notebooks/07_why_blocks_fork.ipynb``) fits a propagation-delay model of forks
(``P(fork) = 1 - exp(-tau / T)``) by maximum likelihood, compares the devnet's London with real
mainnet (Frontier's first blocks, the 2016 attack, London in 2021) and counts uncles with
Garwood's interval. These exercises apply it to the real samples (:mod:`feeslab.samples`); the
expected values are computed here with :mod:`feeslab.analysis.uncles`, never pasted.
"""

from __future__ import annotations

from feeslab.course._exercise import Exercise, Mistake, Number

__all__ = ["EXERCISES"]

_WINDOW = 2_048  # Frontier's windows in the lesson [blocks]
_LAST_WINDOW = 6_144  # the first block of Frontier's last window


def _heaviest_decile_rate() -> float:
    """Uncles per block in the tenth of the 2016 attack's blocks with the most attack gas."""
    import pandas as pd

    from feeslab import samples
    from feeslab.analysis import uncles

    attack = samples.attack_gas_2016()
    bins = pd.qcut(attack["attack_gas"], 10, labels=range(1, 11))
    return float(uncles.uncle_rate(attack, by=bins, method="garwood").loc[10, "rate"])


def _implied_delay_last_window() -> float:
    """The delay [s] implied by the uncle rate of Frontier's blocks 6,144-8,191."""
    from feeslab import samples
    from feeslab.analysis import uncles

    frontier = samples.frontier_blocks()
    rates = uncles.uncle_rate_by_window(frontier, _WINDOW, method="garwood")
    # genesis is dated 1970: block times start at block 1's child
    block_time = uncles.mean_block_time_by_window(frontier.iloc[1:], _WINDOW)
    rate = float(rates.loc[_LAST_WINDOW, "rate"])
    return float(uncles.implied_delay(rate, float(block_time.loc[_LAST_WINDOW])))


def _highest_window_2021() -> float:
    """The highest uncle rate of the 25,000-block windows of 2021 [uncles/block]."""
    from feeslab import samples
    from feeslab.analysis import uncles

    windows = uncles.uncle_rate_by_window(samples.uncle_counts_2021(), 25_000, method="garwood")
    return float(windows["rate"].max())


EXERCISES = (
    Exercise(
        number="7.1",
        kind="compute and compare",
        question=(
            "Split the 2016 attack's blocks (`samples.attack_gas_2016()`) into ten bins by attack "
            'gas instead of five (`pd.qcut(attack["attack_gas"], 10, labels=range(1, 11))`). '
            "What is the uncle rate of the heaviest bin, bin 10 [uncles/block]? Compare it with "
            "the heaviest of the five bins in Figure 4."
        ),
        answer=Number(expected=_heaviest_decile_rate, abs=0.0005, unit="uncles/block"),
        hint=(
            "group the blocks by the ten bins with `uncles.uncle_rate(attack, by=bins, "
            'method="garwood")` and read the `rate` of bin 10, as a fraction (uncles per block).'
        ),
        explanation=(
            "The heaviest tenth forked at about 0.279 uncles per block, twice the lightest tenth's "
            "0.136, and above the heaviest fifth's 0.259, though their Garwood intervals overlap. "
            "The ten bins do not rise in order of gas either (bin 5 forked about as little as bin "
            "1): attack gas is one cause of delay among several."
        ),
        mistakes=(
            Mistake(
                0.2585,
                "that is the heaviest of the five bins (Figure 4); with ten bins, "
                "bin 10 holds only the heaviest tenth.",
            ),
            Mistake(0.1356, "that is bin 1, the lightest tenth; the question asks for bin 10."),
            Mistake(27.87, "the rate is a fraction (uncles per block), not a percentage."),
        ),
    ),
    Exercise(
        number="7.2",
        kind="predict, then run",
        question=(
            "Frontier's last window of 2,048 blocks (6,144-8,191) had a mean block time of about "
            "9.0 s and 0.097 uncles per block (the table of Figure 3). Predict the propagation "
            "delay τ [s] that this rate implies in the model P(fork) = 1 - exp(-τ/T), then "
            "compute it with `uncles.implied_delay`."
        ),
        answer=Number(expected=_implied_delay_last_window, abs=0.005, unit="s"),
        hint=(
            "solve the model for τ: τ = -T ln(1 - P), with P the window's rate and T its mean "
            "block time (`uncles.mean_block_time_by_window` over `frontier.iloc[1:]`, since "
            "genesis is dated 1970)."
        ),
        explanation=(
            "τ = -9.02 s x ln(1 - 0.0972) = 0.92 s: a block took about a second to reach the "
            "miners who could have found a rival. The first window's rate gives about 0.72 s: "
            "the implied delay is not constant, a hint that the model leaves something out."
        ),
        mistakes=(
            Mistake(
                0.874,
                "that is rate x block time, the model's approximation for small rates; "
                "solve 1 - exp(-τ/T) = P exactly: τ = -T ln(1 - P).",
            ),
            Mistake(
                0.718,
                "that is the first window (blocks 0-2,047); the question asks for the "
                "last one, 6,144-8,191.",
            ),
        ),
    ),
    Exercise(
        number="7.3",
        kind="read a figure",
        question=(
            "Read Figure 5: what is the highest uncle rate among the 2021 windows of 25,000 "
            "blocks [uncles/block], to within 0.002?"
        ),
        answer=Number(expected=_highest_window_2021, abs=0.002, unit="uncles/block"),
        hint=(
            "find the highest point of Figure 5 (the centre of its error bar, not the bar's top) "
            "and read it on the y axis, as a fraction."
        ),
        explanation=(
            "The highest window, 13,400,000-13,424,999, had about 0.060 uncles per "
            "block, a quarter more than the 0.048 before London: the rise came some 400,000 blocks "
            "after London, not at it."
        ),
        mistakes=(
            Mistake(
                0.063,
                "that is the top of the highest window's error bar (its interval's "
                "upper end); the rate is the point in the middle.",
            ),
            Mistake(6.0, "the rate is a fraction (uncles per block), not a percentage."),
        ),
    ),
)

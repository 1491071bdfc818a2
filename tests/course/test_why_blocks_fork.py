"""Lesson 7's exercises (``feeslab.course.why_blocks_fork``): each right answer, computed here
with raw pandas on the real samples and the model's formula written out, is accepted; each known
wrong answer is refused with its hint.
"""

from __future__ import annotations

import math

import pandas as pd

from feeslab import samples
from feeslab.course import exercise


def test_7_1_the_heaviest_tenth_of_the_attack_blocks_is_accepted_and_the_fifth_refused():
    attack = samples.attack_gas_2016()
    tenth = pd.qcut(attack["attack_gas"], 10, labels=False)
    per_bin = attack.groupby(tenth)["uncle_count"].agg(["sum", "size"])
    answer = per_bin.loc[9, "sum"] / per_bin.loc[9, "size"]  # the heaviest bin
    lightest = per_bin.loc[0, "sum"] / per_bin.loc[0, "size"]
    assert answer > 2 * lightest * 0.95  # about twice the lightest tenth
    assert exercise("7.1").check(float(answer))
    fifth = pd.qcut(attack["attack_gas"], 5, labels=False)
    heaviest_fifth = attack.loc[fifth == 4, "uncle_count"].mean()
    refused = exercise("7.1").check(round(float(heaviest_fifth), 4))
    assert not refused and "five bins" in repr(refused)
    assert "bin 1" in repr(exercise("7.1").check(round(float(lightest), 4)))
    assert "percentage" in repr(exercise("7.1").check(round(100 * float(answer), 2)))


def test_7_2_the_delay_implied_by_frontiers_last_window_solves_the_model_exactly():
    frontier = samples.frontier_blocks().set_index("block_number")
    window = frontier.loc[6_144:8_191]
    rate = window["uncle_count"].sum() / len(window)
    # intervals counted in the child's window: block 6,144's interval to 6,143 is the first
    block_time = (window["timestamp"].iloc[-1] - frontier.loc[6_143, "timestamp"]).total_seconds()
    block_time /= len(window)
    answer = -block_time * math.log(1 - rate)
    assert 0.9 < answer < 0.95
    assert exercise("7.2").check(answer)
    linear = exercise("7.2").check(round(rate * block_time, 3))  # the small-rate approximation
    assert not linear and "approximation" in repr(linear)
    first = frontier.loc[1:2_047]
    first_rate = frontier.loc[0:2_047, "uncle_count"].sum() / 2_048
    first_time = (first["timestamp"].iloc[-1] - first["timestamp"].iloc[0]).total_seconds() / 2_046
    first_delay = -first_time * math.log(1 - first_rate)
    assert "first window" in repr(exercise("7.2").check(round(first_delay, 3)))


def test_7_3_the_highest_2021_window_is_read_within_its_tolerance_and_its_bar_top_refused():
    counts = samples.uncle_counts_2021()
    rates = counts.groupby(counts["block_number"] // 25_000)["uncle_count"].mean()
    assert rates.idxmax() * 25_000 == 13_400_000
    answer = float(rates.max())
    assert exercise("7.3").check(answer)
    assert exercise("7.3").check(round(answer, 3))  # read off the figure
    assert not exercise("7.3").check(answer + 0.003)
    assert "upper end" in repr(exercise("7.3").check(0.063))
    assert "percentage" in repr(exercise("7.3").check(6.0))

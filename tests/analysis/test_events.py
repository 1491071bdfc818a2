"""feeslab.analysis.events: intervals calibrated on series with no break, breaks found where
they are, the block length where theory puts it, bad input refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.signal

from feeslab.analysis import events

BLOCKS = 2_000  # a side
REPLICATIONS = 2_000  # the coverage's binomial standard error: 0.5 percentage point


def _ar1(phi: float, innovations: np.ndarray, burn_in: int = 500) -> np.ndarray:
    """Rows of an AR(1), x[t] = phi x[t-1] + e[t], started far enough back to be stationary."""
    return scipy.signal.lfilter([1.0], [1.0, -phi], innovations, axis=1)[:, burn_in:]


def _coverage(series: np.ndarray, confidence: float = 0.95) -> float:
    """Share of rows whose interval of (mean after - mean before) holds the true 0."""
    rng = np.random.default_rng(0)
    held = 0
    for row in series:
        result = events._difference(row[:BLOCKS], row[BLOCKS:], "mean", confidence, 100, rng)
        held += result["lower"] <= 0.0 <= result["upper"]
    return held / len(series)


@pytest.mark.parametrize("kind", ["gaussian ar1", "student-t ar1", "pareto"])
def test_mean_intervals_cover_the_true_difference_95_percent_of_the_time(kind):
    """No break: both sides come from one stationary series, the true difference is 0."""
    rng = np.random.default_rng({"gaussian ar1": 1, "student-t ar1": 2, "pareto": 3}[kind])
    shape = (REPLICATIONS, 2 * BLOCKS + 500)
    if kind == "gaussian ar1":  # strongly autocorrelated: iid intervals would cover ~75 %
        series = _ar1(0.5, rng.standard_normal(shape))
    elif kind == "student-t ar1":  # heavy tails (3 degrees of freedom) and autocorrelation
        series = _ar1(0.3, rng.standard_t(3, shape))
    else:  # heavy right tail like fee income: Pareto with index 2.5 (finite variance)
        series = rng.pareto(2.5, (REPLICATIONS, 2 * BLOCKS)) + 1.0
    assert 0.93 <= _coverage(series) <= 0.97


def test_intervals_that_ignore_autocorrelation_would_fail_the_same_check():
    """The check has teeth: the iid standard error's interval misses on an AR(1)."""
    rng = np.random.default_rng(1)
    series = _ar1(0.5, rng.standard_normal((REPLICATIONS, 2 * BLOCKS + 500)))
    before, after = series[:, :BLOCKS], series[:, BLOCKS:]
    naive = 1.96 * np.sqrt(before.var(axis=1) / BLOCKS + after.var(axis=1) / BLOCKS)
    assert np.mean(np.abs(after.mean(axis=1) - before.mean(axis=1)) <= naive) < 0.8


def test_block_length_follows_politis_and_white_on_an_ar1():
    """For an AR(1) with phi = 0.5 the optimal mean block length is (G / g)**(2/3) n**(1/3),
    G = sum |k| R(k) = 16/3 and g = sum R(k) = 4 (unit innovations): 1.211 n**(1/3)."""
    rng = np.random.default_rng(4)
    n = 200_000
    x = _ar1(0.5, rng.standard_normal((1, n + 500)))[0]
    assert events.block_length(x) == pytest.approx((16 / 3 / 4) ** (2 / 3) * n ** (1 / 3),
                                                    rel=0.15)  # fmt: skip
    assert events.block_length(rng.standard_normal(n)) < 3.0  # no dependence: short blocks


def test_event_study_finds_a_real_break_and_its_size():
    rng = np.random.default_rng(5)
    x = _ar1(0.5, rng.standard_normal((1, 20_500)))[0]
    x[10_000:] += 0.5  # the break
    values = pd.Series(x, index=np.arange(1_000_000, 1_020_000))
    study = events.event_study(values, 1_010_000, resamples=300, seed=1)
    assert list(study.index) == ["mean", "median"]
    for statistic in ("mean", "median"):
        row = study.loc[statistic]
        assert row["lower"] <= 0.5 <= row["upper"]
        assert row["lower"] > 0.3  # far from 0: the break is found
        assert row["blocks_before"] == row["blocks_after"] == 10_000
    mean = study.loc["mean"]
    assert mean["before"] == pytest.approx(x[:10_000].mean())
    assert mean["difference"] == pytest.approx(x[10_000:].mean() - x[:10_000].mean())
    assert study.attrs["at"] == 1_010_000
    # the same seed gives the same bootstrap, another seed another one
    again = events.event_study(values, 1_010_000, resamples=300, seed=1)
    pd.testing.assert_frame_equal(study, again)
    windowed = events.event_study(values, 1_010_000, window=2_000, statistics=["mean"])
    assert windowed.loc["mean", "blocks_before"] == windowed.loc["mean", "blocks_after"] == 2_000


def test_placebos_find_few_breaks_where_none_happened():
    rng = np.random.default_rng(6)
    x = _ar1(0.5, rng.standard_normal((1, 200_500)))[0]
    values = pd.Series(x, index=np.arange(200_000))
    placebos = events.placebo_events(values, np.arange(10_000, 200_000, 10_000), window=5_000)
    assert len(placebos) == 19 and placebos.index.name == "at"
    assert placebos["break"].sum() <= 3  # about 1 in 20 by chance
    assert placebos.attrs["break_share"] == pytest.approx(placebos["break"].mean())
    shifted = values.copy()
    shifted.iloc[100_000:] += 1.0
    study = events.placebo_events(shifted, [100_000], window=5_000)
    assert bool(study["break"].iloc[0])


def test_bad_input_is_refused_with_what_was_wrong():
    values = pd.Series(np.arange(100.0), index=np.arange(100))
    with pytest.raises(TypeError, match="Series indexed by block number"):
        events.event_study(np.arange(100.0), 50)
    with pytest.raises(ValueError, match="at least 30"):
        events.event_study(values, 90)
    with pytest.raises(ValueError, match="statistics"):
        events.event_study(values, 50, statistics=["mode"])
    with pytest.raises(ValueError, match="confidence"):
        events.event_study(values, 50, confidence=95)
    with pytest.raises(ValueError, match="increase"):
        events.event_study(values[::-1], 50)
    with pytest.raises(ValueError, match="at least 10"):
        events.block_length(np.arange(5.0))


def test_stationary_bootstrap_resamples_runs_of_consecutive_blocks_around_the_circle():
    """Politis and Romano's scheme: each resample is n positions, in runs of consecutive
    positions (wrapping from n - 1 to 0) whose lengths are geometric with the mean asked."""
    n, mean_length = 1_000, 20.0
    rows = np.concatenate(list(events._resamples(n, mean_length, 300, np.random.default_rng(7))))
    assert rows.shape == (300, n) and rows.min() >= 0 and rows.max() < n
    continues = np.diff(rows, axis=1) % n == 1  # the next position follows on the circle
    # a new run starts where the next position does not follow (or, by chance, where a new
    # run starts right after the last one's end: 1 in n)
    runs = 1 + (~continues).sum(axis=1)
    assert np.mean(n / runs) == pytest.approx(mean_length, rel=0.1)
    assert continues.mean() > 0.9  # far from iid resampling (1 in n)
    # every position is about as likely: the circle has no ends
    counts = np.bincount(rows.ravel(), minlength=n)
    assert counts.min() > 0.5 * counts.mean() and counts.max() < 1.5 * counts.mean()


def test_exact_wei_and_flags_are_read_as_numbers():
    # past int64 and float precision alike (+1 wei), one block missing
    values = [10**21 + i * 10**18 + 1 for i in range(40)] + [None] + [3 * 10**21] * 40
    wei = pd.Series(values, dtype=object, index=np.arange(81))
    study = events.event_study(wei, 41, statistics=["median"], resamples=100)
    assert study.loc["median", "before"] == pytest.approx(1.0195e21)
    assert study.loc["median", "blocks_before"] == 40  # the missing value left out
    flags = pd.Series([False] * 40 + [True] * 40, index=np.arange(80))
    assert events.event_study(flags, 40, statistics=["mean"]).loc["mean", "difference"] == 1.0
    with pytest.raises(TypeError, match="must be numbers"):
        events.event_study(pd.Series(["a"] * 80, index=np.arange(80)), 40)

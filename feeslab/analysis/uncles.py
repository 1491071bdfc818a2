"""Uncle (ommer) statistics: rates with intervals, depth, rewards, miners, a delay model.

Pure functions on the frames :class:`feeslab.Lab` returns (or any frames with the same
columns); no I/O. The inputs are

* a *blocks* frame: one row per scanned block with ``block_number`` and ``uncle_count``
  (``UncleScan.blocks``), or the fuller :func:`feeslab.frames.parse_blocks` frame, which
  also has ``timestamp``, ``miner`` and ``gas_used`` for daily rates, miners and the model;
* an *uncles* frame: :func:`feeslab.frames.parse_uncles` (``UncleScan.uncles``), one row per
  uncle with its including ``block_number``, ``uncle_number``, ``depth`` and ``miner``.

What is here::

    rates       uncle_rate, uncle_rate_by_window, uncle_rate_by_day, uncle_rate_by_era
    depth       depth_distribution
    rewards     reward_schedule, reward_era, block_reward, uncle_rewards, rewards_by_era
    miners      miner_shares, herfindahl_index, miner_concentration, miner_uncles
    model       fork_heights, fit_propagation_delay (-> DelayFit), model_vs_data,
                stale_probability, implied_delay

Intervals: binomial proportions use Wilson's score interval or the exact Clopper-Pearson
interval; counts use Garwood's exact Poisson interval. A *rate* is uncles per block. In the
fork model each height either forks (a rival block is found before the first one has
propagated) or not, and a fork leaves a stale block that a later block includes, so uncles
over blocks reads as a binomial proportion. Where that reading breaks (more uncles than
blocks in a group) the binomial methods refuse; Garwood's interval holds regardless.

References
----------
.. [1] G. Wood, "Ethereum: a secure decentralised generalised transaction ledger" (Yellow
   Paper), section 11.3 "Reward Application" and 11.1 "Ommer Validation".
.. [2] EIP-649, "Metropolis Difficulty Bomb Delay and Block Reward Reduction" (3 ETH).
.. [3] EIP-1234, "Constantinople Difficulty Bomb Delay and Block Reward Adjustment" (2 ETH).
.. [4] EIP-3675, "Upgrade consensus to Proof-of-Stake" (no block or ommer rewards).
.. [5] go-ethereum, ``consensus/ethash/consensus.go``, ``accumulateRewards``.
.. [6] C. Decker and R. Wattenhofer, "Information propagation in the Bitcoin network",
   IEEE P2P 2013.
.. [7] A. Gervais, G. O. Karame, K. Wuest, V. Glykantzis, H. Ritzdorf and S. Capkun, "On the
   security and performance of proof of work blockchains", ACM CCS 2016.
.. [8] E. B. Wilson, "Probable inference, the law of succession, and statistical
   inference", JASA 22 (1927) 209-212.
.. [9] C. J. Clopper and E. S. Pearson, "The use of confidence or fiducial limits
   illustrated in the case of the binomial", Biometrika 26 (1934) 404-413.
.. [10] F. Garwood, "Fiducial limits for the Poisson distribution", Biometrika 28 (1936)
   437-442.
.. [11] O. C. Herfindahl, "Concentration in the steel industry", PhD thesis, Columbia
   University, 1950; A. O. Hirschman, "The paternity of an index", AER 54 (1964) 761.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from statistics import NormalDist
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
import scipy.stats

from feeslab.analysis._spec import takes_spec
from feeslab.protocol.chainspec import ChainSpec, resolve_spec

__all__ = [
    "DelayFit",
    "block_reward",
    "depth_distribution",
    "fit_propagation_delay",
    "fork_heights",
    "herfindahl_index",
    "implied_delay",
    "mean_block_time_by_window",
    "miner_concentration",
    "miner_shares",
    "miner_uncles",
    "model_vs_data",
    "reward_era",
    "reward_schedule",
    "rewards_by_era",
    "stale_probability",
    "uncle_rate",
    "uncle_rate_by_day",
    "uncle_rate_by_era",
    "uncle_rate_by_window",
    "uncle_rewards",
]

Method = Literal["wilson", "clopper-pearson", "garwood"]
_METHODS = ("wilson", "clopper-pearson", "garwood")
_WEI_PER_ETH = 10**18
# units of common covariates of the delay model (by column suffix), for labels
_KNOWN_UNITS = {("gas_used", 1_000_000): "Mgas", ("size_bytes", 1_000): "kB"}


# -- intervals -------------------------------------------------------------------------------


def _check_confidence(confidence: float) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise TypeError(f"confidence must be a number in (0, 1), not {confidence!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return float(confidence)


def _binomial_interval(
    successes: npt.ArrayLike, trials: npt.ArrayLike, confidence: float, method: str
) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided interval of a binomial proportion; NaN where ``trials`` is 0."""
    x = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    x, n = np.broadcast_arrays(x, n)
    alpha = 1.0 - confidence
    empty = n == 0
    n_safe = np.where(empty, 1.0, n)
    x_safe = np.where(empty, 0.0, x)
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    centre = (x_safe + z * z / 2.0) / (n_safe + z * z)
    spread = np.sqrt(x_safe * (n_safe - x_safe) / n_safe + z * z / 4.0)
    half = z / (n_safe + z * z) * spread
    # exact ends: no successes or no failures
    lower = np.where(x_safe == 0, 0.0, np.clip(centre - half, 0.0, 1.0))
    upper = np.where(x_safe == n_safe, 1.0, np.clip(centre + half, 0.0, 1.0))
    if method == "clopper-pearson":
        # quantiles of Beta(x, n - x + 1) and Beta(x + 1, n - x)
        some = x_safe > 0
        if some.any():
            a, b = x_safe[some], n_safe[some] - x_safe[some] + 1.0
            lower[some] = scipy.stats.beta.ppf(alpha / 2.0, a, b)
        short = x_safe < n_safe
        if short.any():
            a, b = x_safe[short] + 1.0, n_safe[short] - x_safe[short]
            upper[short] = scipy.stats.beta.isf(alpha / 2.0, a, b)
    return np.where(empty, np.nan, lower), np.where(empty, np.nan, upper)


def _poisson_interval(counts: npt.ArrayLike, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Garwood's exact interval of a Poisson mean from an observed count."""
    k = np.asarray(counts, dtype=float)
    alpha = 1.0 - confidence
    lower = np.zeros(k.shape)
    some = k > 0
    if some.any():
        lower[some] = scipy.stats.gamma.ppf(alpha / 2.0, k[some])
    upper = scipy.stats.gamma.isf(alpha / 2.0, k + 1.0)
    return lower, upper


# -- input checks ----------------------------------------------------------------------------


def _require(frame: object, columns: Sequence[str], name: str) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, not {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{name} has no {', '.join(repr(c) for c in missing)} column"
            f"{'s' if len(missing) > 1 else ''} (it has {', '.join(map(str, frame.columns))})"
        )
    return frame


def _unique_blocks(blocks: pd.DataFrame, name: str = "blocks") -> None:
    duplicated = blocks["block_number"].duplicated()
    if duplicated.any():
        first = int(blocks["block_number"][duplicated].iloc[0])
        raise ValueError(f"{name} lists block {first} twice")


def _check_method(method: str) -> str:
    if method not in _METHODS:
        raise ValueError(f"method must be one of {', '.join(_METHODS)}; got {method!r}")
    return method


def _check_binomial(method: str) -> str:
    if method not in ("wilson", "clopper-pearson"):
        raise ValueError(f"method must be 'wilson' or 'clopper-pearson', not {method!r}")
    return method


def _labels(
    blocks: pd.DataFrame, by: str | Sequence[object] | pd.Series | None
) -> tuple[np.ndarray, str]:
    """Group labels aligned with ``blocks``' rows, and the groups' name."""
    if by is None:
        return np.full(len(blocks), "all", dtype=object), "group"
    if isinstance(by, str):
        _require(blocks, [by], "blocks")
        return blocks[by].to_numpy(), by
    labels = by.to_numpy() if isinstance(by, pd.Series) else np.asarray(by, dtype=object)
    if len(labels) != len(blocks):
        raise ValueError(f"by has {len(labels)} labels for {len(blocks)} blocks")
    return labels, getattr(by, "name", None) or "group"


# -- rates -----------------------------------------------------------------------------------


def _rate_table(
    blocks: npt.ArrayLike, uncles: npt.ArrayLike, index: pd.Index, confidence: float, method: str
) -> pd.DataFrame:
    blocks = np.asarray(blocks, dtype=np.int64)
    uncles = np.asarray(uncles, dtype=np.int64)
    if method == "garwood":
        count_lower, count_upper = _poisson_interval(uncles, confidence)
        with np.errstate(invalid="ignore", divide="ignore"):
            lower = np.where(blocks > 0, count_lower / np.maximum(blocks, 1), np.nan)
            upper = np.where(blocks > 0, count_upper / np.maximum(blocks, 1), np.nan)
    else:
        over = uncles > blocks
        if over.any():
            where = index[np.flatnonzero(over)[0]]
            raise ValueError(
                f"{where!s}: {uncles[over][0]} uncles in {blocks[over][0]} blocks is not a "
                f"binomial proportion; use method='garwood' (a Poisson count per block)"
            )
        lower, upper = _binomial_interval(uncles, blocks, confidence, method)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(blocks > 0, uncles / np.maximum(blocks, 1), np.nan)
    return pd.DataFrame(
        {"blocks": blocks, "uncles": uncles, "rate": rate, "lower": lower, "upper": upper},
        index=index,
    )


def uncle_rate(
    blocks: pd.DataFrame,
    *,
    by: str | Sequence[object] | pd.Series | None = None,
    confidence: float = 0.95,
    method: Method = "wilson",
) -> pd.DataFrame:
    """Uncles per block, with a confidence interval, over the whole frame or per group.

    Parameters
    ----------
    blocks : pandas.DataFrame
        One row per scanned block: ``block_number`` and ``uncle_count`` [uncles] (zeros
        included), e.g. ``UncleScan.blocks`` or :func:`feeslab.frames.parse_blocks`.
    by : str or array-like, optional
        A column of ``blocks``, or labels aligned with its rows; one result row per label,
        in the order labels first appear along ``block_number``. ``None``: one row, ``"all"``.
    confidence : float
        Two-sided coverage of the interval, in (0, 1).
    method : {"wilson", "clopper-pearson", "garwood"}
        ``"wilson"``: Wilson's score interval [8]_ for uncles out of blocks;
        ``"clopper-pearson"``: the exact binomial interval [9]_; ``"garwood"``: the exact
        Poisson interval of the uncle count [10]_ divided by the blocks (valid whatever the
        uncles per block).

    Returns
    -------
    pandas.DataFrame
        Indexed by group (``by``'s name, or ``"group"``), columns ``blocks`` (int64),
        ``uncles`` (int64), ``rate`` [uncles/block] and its ``lower``, ``upper`` bounds
        [uncles/block] (float64; NaN for a group without blocks).

    Raises
    ------
    ValueError
        When a column is missing, a block is listed twice, ``confidence`` is outside (0, 1),
        or a binomial method meets more uncles than blocks.

    References
    ----------
    .. [8] E. B. Wilson, JASA 22 (1927) 209-212.
    .. [9] C. J. Clopper and E. S. Pearson, Biometrika 26 (1934) 404-413.
    .. [10] F. Garwood, Biometrika 28 (1936) 437-442.
    """
    _require(blocks, ["block_number", "uncle_count"], "blocks")
    _unique_blocks(blocks)
    confidence = _check_confidence(confidence)
    _check_method(method)
    counts = blocks["uncle_count"].to_numpy(dtype=np.int64)
    if (counts < 0).any():
        raise ValueError("blocks.uncle_count has negative values")
    if by is None:
        return _rate_table([len(counts)], [int(counts.sum())], pd.Index(["all"], name="group"),
                           confidence, method)
    labels, name = _labels(blocks, by)
    order = np.argsort(blocks["block_number"].to_numpy(), kind="stable")
    frame = pd.DataFrame({"label": labels[order], "uncles": counts[order]})
    grouped = frame.groupby("label", sort=False)["uncles"].agg(["size", "sum"])
    return _rate_table(grouped["size"], grouped["sum"], pd.Index(grouped.index, name=name),
                       confidence, method)


def uncle_rate_by_window(
    blocks: pd.DataFrame,
    window: int = 1_000,
    *,
    confidence: float = 0.95,
    method: Method = "wilson",
) -> pd.DataFrame:
    """Uncle rate in aligned windows of block numbers: ``[k * window, (k + 1) * window)``.

    Windows without scanned blocks are left out, so a scan of samples from several eras gives
    one row per window sampled. See :func:`uncle_rate` for ``confidence`` and ``method``.

    Parameters
    ----------
    blocks : pandas.DataFrame
        ``block_number`` and ``uncle_count`` per scanned block.
    window : int
        Window length [blocks], > 0.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``start_block`` (int64), columns ``stop_block`` (exclusive), ``blocks``
        (scanned blocks in the window), ``uncles``, ``rate``, ``lower``, ``upper``
        [uncles/block].
    """
    if isinstance(window, bool) or not isinstance(window, int | np.integer) or window <= 0:
        raise ValueError(f"window must be a positive number of blocks, not {window!r}")
    _require(blocks, ["block_number", "uncle_count"], "blocks")
    start = pd.Series(blocks["block_number"].to_numpy(dtype=np.int64) // window * window,
                      name="start_block")
    table = uncle_rate(blocks, by=start, confidence=confidence, method=method)
    table.index = table.index.astype(np.int64)
    table.insert(0, "stop_block", table.index.to_numpy() + int(window))
    return table


def uncle_rate_by_day(
    blocks: pd.DataFrame,
    *,
    confidence: float = 0.95,
    method: Method = "garwood",
) -> pd.DataFrame:
    """Uncles per UTC day, with Garwood's interval of the count and the rate per block.

    ``blocks`` needs ``timestamp`` (datetime64, UTC) besides ``block_number`` and
    ``uncle_count`` (:func:`feeslab.frames.parse_blocks`); days only partly scanned count
    only the blocks scanned. ``confidence`` and ``method`` (the rate's interval) are as for
    :func:`uncle_rate`; the count's interval (``uncles_lower``, ``uncles_upper``) is always
    Garwood's.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``day`` (datetime64[ns, UTC], midnight), columns ``blocks``, ``uncles``,
        ``uncles_lower``, ``uncles_upper`` [uncles/day, for the blocks scanned], ``rate``,
        ``lower``, ``upper`` [uncles/block].

    References
    ----------
    .. [10] F. Garwood, Biometrika 28 (1936) 437-442.
    """
    _require(blocks, ["block_number", "uncle_count", "timestamp"], "blocks")
    stamps = blocks["timestamp"]
    if not isinstance(stamps.dtype, pd.DatetimeTZDtype):
        raise TypeError(f"blocks.timestamp must be tz-aware datetime64 (UTC), not {stamps.dtype}")
    day = stamps.dt.tz_convert("UTC").dt.floor("D").rename("day").reset_index(drop=True)
    table = uncle_rate(blocks.reset_index(drop=True), by=day, confidence=confidence,
                       method=method)
    lower, upper = _poisson_interval(table["uncles"].to_numpy(), _check_confidence(confidence))
    table.insert(2, "uncles_lower", lower)
    table.insert(3, "uncles_upper", upper)
    table.index = pd.DatetimeIndex(table.index, name="day")
    return table.sort_index()


def mean_block_time_by_window(blocks: pd.DataFrame, window: int = 1_000) -> pd.Series:
    """Mean time between consecutive blocks in aligned windows, as :func:`uncle_rate_by_window`.

    An interval is counted in its child's window, and only between blocks numbered one apart
    (a scan of separate samples has no interval across its gaps). Pass blocks without a
    genesis dated at the Unix epoch (Frontier's block 0), whose interval to block 1 is not a
    block time.

    Parameters
    ----------
    blocks : pandas.DataFrame
        ``block_number`` and ``timestamp`` (tz-aware datetime64, UTC) per block.
    window : int
        Window length [blocks], > 0.

    Returns
    -------
    pandas.Series
        ``mean_block_time_s`` (float64) [s], indexed by ``start_block`` (int64) like
        :func:`uncle_rate_by_window`; windows without an interval are left out.

    Raises
    ------
    ValueError
        For a window that is not a positive integer.
    TypeError
        When ``timestamp`` is not tz-aware datetime64.

    References
    ----------
    .. [1] V. Buterin, "Toward a 12-second block time" (2014): the stale rate grows as the block
       time shrinks towards the propagation delay.
    """
    if isinstance(window, bool) or not isinstance(window, int | np.integer) or window <= 0:
        raise ValueError(f"window must be a positive number of blocks, not {window!r}")
    _require(blocks, ["block_number", "timestamp"], "blocks")
    if not isinstance(blocks["timestamp"].dtype, pd.DatetimeTZDtype):
        dtype = blocks["timestamp"].dtype
        raise TypeError(f"blocks.timestamp must be tz-aware datetime64 (UTC), not {dtype}")
    ordered = blocks.sort_values("block_number")
    numbers = ordered["block_number"].to_numpy(dtype=np.int64)
    seconds = ordered["timestamp"].diff().dt.total_seconds().to_numpy()
    consecutive = np.r_[False, np.diff(numbers) == 1]  # the first block has no parent here
    start = numbers[consecutive] // window * window
    means = pd.Series(seconds[consecutive]).groupby(start).mean()
    means.index = pd.Index(means.index.astype(np.int64), name="start_block")
    return means.rename("mean_block_time_s")


@takes_spec()
def uncle_rate_by_era(
    blocks: pd.DataFrame,
    *,
    spec: ChainSpec,
    confidence: float = 0.95,
    method: Method = "wilson",
) -> pd.DataFrame:
    """Uncle rate per block-reward era (see :func:`reward_schedule`).

    Parameters
    ----------
    blocks : pandas.DataFrame
        ``block_number`` and ``uncle_count`` per scanned block (``UncleScan.blocks``).
    spec, chain_id
        Whose eras: see :func:`uncle_rewards`.
    confidence, method
        As for :func:`uncle_rate`.

    Raises
    ------
    MissingChainSpec
        Neither ``spec``/``chain_id`` nor ``blocks.attrs`` say which chain it is.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``era`` in chain order (eras without scanned blocks left out), columns
        ``blocks``, ``uncles``, ``rate``, ``lower``, ``upper`` [uncles/block].
    """
    _require(blocks, ["block_number", "uncle_count"], "blocks")
    era = reward_era(blocks["block_number"], spec=spec)
    return uncle_rate(blocks, by=era.to_numpy(), confidence=confidence,
                      method=method).rename_axis("era")


# -- depth -----------------------------------------------------------------------------------


def depth_distribution(
    uncles: pd.DataFrame,
    *,
    max_depth: int = 6,
    confidence: float = 0.95,
    method: Literal["wilson", "clopper-pearson"] = "wilson",
) -> pd.DataFrame:
    """How far back uncles are included: counts and shares by depth, with intervals.

    Parameters
    ----------
    uncles : pandas.DataFrame
        :func:`feeslab.frames.parse_uncles`' frame (``depth`` [blocks] is used).
    max_depth : int
        The deepest uncle the protocol allows [blocks]: 6 on Ethereum (the Yellow Paper's
        ommer validity: the uncle's parent is one of the 7 ancestors before the including
        block's parent). Deeper uncles raise ``ValueError``.
    confidence : float
        Two-sided coverage of each share's interval, in (0, 1).
    method : {"wilson", "clopper-pearson"}
        Interval of each share, taken on its own (one depth against all others).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``depth`` 1..``max_depth`` (every depth, zeros included), columns
        ``uncles`` (int64), ``share`` of all uncles [1], its ``lower`` and ``upper`` bounds,
        and ``reward_fraction``: the uncle's share of the block reward, ``(8 - depth) / 8``
        (Yellow Paper 11.3; EIP-649, EIP-1234).

    References
    ----------
    .. [1] Yellow Paper, sections 11.1 and 11.3.
    """
    _require(uncles, ["depth"], "uncles")
    confidence = _check_confidence(confidence)
    _check_binomial(method)
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
        raise ValueError(f"max_depth must be a positive int, not {max_depth!r}")
    depth = uncles["depth"].to_numpy(dtype=np.int64)
    bad = (depth < 1) | (depth > max_depth)
    if bad.any():
        raise ValueError(
            f"uncle depth {int(depth[bad][0])} is outside 1..{max_depth} (row "
            f"{int(np.flatnonzero(bad)[0])})"
        )
    counts = np.bincount(depth, minlength=max_depth + 1)[1:]
    total = int(counts.sum())
    lower, upper = _binomial_interval(counts, np.full(max_depth, total), confidence, method)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = counts / total if total else np.full(max_depth, np.nan)
    index = pd.Index(np.arange(1, max_depth + 1, dtype=np.int64), name="depth")
    return pd.DataFrame(
        {
            "uncles": counts.astype(np.int64),
            "share": share,
            "lower": lower,
            "upper": upper,
            "reward_fraction": (8 - index.to_numpy()) / 8,
        },
        index=index,
    )


# -- rewards ---------------------------------------------------------------------------------


def reward_schedule(chain: ChainSpec | str | int) -> pd.DataFrame:
    """The block reward eras of a chain, from its spec (``data/chains.json``).

    Parameters
    ----------
    chain : ChainSpec, str or int
        A chain spec (or its label), or a chain id of ``data/chains.json`` (1, 11155111,
        137, 8453) for the real chain's fork blocks: mainnet pays 5 ETH from genesis, 3 ETH from
        Byzantium at 4,370,000, 2 ETH from Constantinople at 7,280,000, nothing from the
        merge at 15,537,394. A connection's ``Lab.chain_spec`` may compress the same sequence
        of rules into fewer blocks.

    Returns
    -------
    pandas.DataFrame
        One row per era, in chain order, columns ``era`` (str: the forks activated at its
        first block, ``"genesis"`` for block 0), ``from_block`` (int64), ``stop_block``
        (Int64, exclusive; ``<NA>`` for the last era), ``consensus`` (``ethash``,
        ``proof-of-stake``, ...), ``block_reward_wei`` (object: exact int) [wei],
        ``uncles_allowed`` (bool), ``max_uncles`` and ``max_depth`` (Int64; ``<NA>`` where
        there are no uncles) and ``source`` (the protocol fact's source).

    Raises
    ------
    ConfigError
        The chain (or label) is not in ``data/chains.json``.

    References
    ----------
    .. [1] EIP-649, EIP-1234, EIP-3675; go-ethereum ``consensus/ethash/consensus.go``.
    """
    return _schedule(ChainSpec.of(chain)).copy()


@cache
def _schedule(spec: ChainSpec) -> pd.DataFrame:
    """The spec's reward eras (cached: callers read it, never change it)."""
    rewards = spec.block_rewards_wei
    rows = []
    for i, (start, value) in enumerate(rewards):
        stop = rewards[i + 1][0] if i + 1 < len(rewards) else None
        kind = [k for b, k in spec.consensus if b <= start][-1]
        named = [f.name for f in spec.forks if f.block == start]
        allowed = spec.uncles is not None and kind == "ethash"
        rows.append(
            {
                "era": "/".join(named) if start > 0 and named else "genesis",
                "from_block": start,
                "stop_block": stop,
                "consensus": kind,
                "block_reward_wei": int(value),
                "uncles_allowed": allowed,
                "max_uncles": spec.uncles.max_per_block if allowed and spec.uncles else None,
                "max_depth": spec.uncles.max_depth if allowed and spec.uncles else None,
                # a compressed spec keeps the real chain's sequence of rules: same sources
                "source": spec.reward_sources[i] if i < len(spec.reward_sources) else "",
            }
        )
    frame = pd.DataFrame(rows)
    frame["from_block"] = frame["from_block"].astype(np.int64)
    for column in ("stop_block", "max_uncles", "max_depth"):
        frame[column] = frame[column].astype("Int64")
    frame["block_reward_wei"] = frame["block_reward_wei"].astype(object)
    frame.attrs.update(chain_id=spec.chain_id, chain_spec=spec.label)
    return frame


def _era_positions(numbers: np.ndarray, schedule: pd.DataFrame) -> np.ndarray:
    if (numbers < 0).any():
        raise ValueError(f"block number {int(numbers[numbers < 0][0])} is negative")
    return np.searchsorted(schedule["from_block"].to_numpy(), numbers, side="right") - 1


def _numbers(block_numbers: npt.ArrayLike) -> tuple[np.ndarray, pd.Index | None]:
    if isinstance(block_numbers, pd.Series):
        return block_numbers.to_numpy(dtype=np.int64), block_numbers.index
    values = np.asarray(block_numbers)
    if values.size and not np.issubdtype(values.dtype, np.integer):
        raise TypeError(f"block numbers must be integers, not {values.dtype}")
    return values.astype(np.int64).reshape(-1), None


@takes_spec()
def reward_era(
    block_numbers: npt.ArrayLike,
    *,
    spec: ChainSpec,
) -> pd.Series:
    """The reward era (see :func:`reward_schedule`) of each block number.

    Parameters
    ----------
    block_numbers : int array-like or Series
        A Series taken from a frame (``blocks["block_number"]``) keeps its attrs' spec.
    spec, chain_id
        Whose eras: see :func:`uncle_rewards`.

    Returns
    -------
    pandas.Series
        ``era`` labels (str), aligned with ``block_numbers`` (its index, if a Series).
    """
    numbers, index = _numbers(block_numbers)
    schedule = _schedule(spec)
    eras = schedule["era"].to_numpy()[_era_positions(numbers, schedule)]
    out = pd.Series(eras, index=index, name="era", dtype=object)
    out.attrs.update(schedule.attrs)
    return out


@takes_spec()
def block_reward(
    block_numbers: npt.ArrayLike,
    *,
    spec: ChainSpec,
) -> pd.Series:
    """The static block reward of each block number [wei], exact.

    ``spec`` and ``chain_id`` as for :func:`reward_era`.

    Returns
    -------
    pandas.Series
        ``block_reward_wei`` (object: Python int) [wei], aligned with ``block_numbers``.

    References
    ----------
    .. [1] EIP-649 (3 ETH), EIP-1234 (2 ETH), EIP-3675 (0); go-ethereum
       ``FrontierBlockReward``, ``ByzantiumBlockReward``, ``ConstantinopleBlockReward``.
    """
    numbers, index = _numbers(block_numbers)
    schedule = _schedule(spec)
    values = schedule["block_reward_wei"].to_numpy()[_era_positions(numbers, schedule)]
    out = np.empty(len(values), dtype=object)
    out[:] = [int(v) for v in values]
    return pd.Series(out, index=index, name="block_reward_wei", dtype=object)


@takes_spec()
def uncle_rewards(
    uncles: pd.DataFrame,
    *,
    spec: ChainSpec,
) -> pd.DataFrame:
    """What each uncle earned its miner, and what its including block earned for it.

    An uncle at depth ``d`` (including block ``N``, uncle ``U = N - d``) earns
    ``(U + 8 - N) * R / 8`` and the including block ``R / 32`` on top of its own reward, in
    integer wei, with ``R`` the block reward in force at the *including* block ``N`` — as
    geth's ``accumulateRewards`` computes it.

    Parameters
    ----------
    uncles : pandas.DataFrame
        :func:`feeslab.frames.parse_uncles`' frame (``block_number`` and ``depth`` used).
    spec : ChainSpec or str, optional
        The chain's rules (:class:`feeslab.protocol.chainspec.ChainSpec` or its label); default the
        frame's ``attrs["chain_spec"]`` (every ``Lab`` frame carries it).
    chain_id : int, optional
        Instead of ``spec``: the real chain's spec, or the frame's when its attrs say it is
        of this chain.

    Returns
    -------
    pandas.DataFrame
        ``uncles`` with ``era`` (str), ``block_reward_wei``, ``uncle_reward_wei`` and
        ``nephew_reward_wei`` (object: exact ints) [wei] added.

    Raises
    ------
    ValueError
        An uncle where the rules allow none (after the merge, on chains without uncles), or
        deeper than the chain's maximum depth.
    MissingChainSpec
        Neither ``spec``/``chain_id`` nor ``uncles.attrs`` say which chain it is.
    ChainSpecConflict
        ``spec``/``chain_id`` contradict ``uncles.attrs``.

    References
    ----------
    .. [1] Yellow Paper, section 11.3 "Reward Application".
    .. [2] EIP-649 and EIP-1234, "Specification" (uncle and nephew rewards).
    .. [3] go-ethereum ``consensus/ethash/consensus.go`` ``accumulateRewards``.
    """
    _require(uncles, ["block_number", "depth"], "uncles")
    chosen = spec
    schedule = _schedule(chosen)
    including = uncles["block_number"].to_numpy(dtype=np.int64)
    depth = uncles["depth"].to_numpy(dtype=np.int64)
    position = _era_positions(including, schedule)
    allowed = schedule["uncles_allowed"].to_numpy()[position]
    if (~allowed).any():
        i = int(np.flatnonzero(~allowed)[0])
        raise ValueError(
            f"block {including[i]:,} includes an uncle, but chain {chosen.chain_id} allows none "
            f"in its {schedule['era'].iloc[position[i]]} era ({chosen.label!r})"
        )
    limit = schedule["max_depth"].to_numpy(dtype="float64", na_value=np.nan)[position]
    bad = (depth < 1) | (depth > limit)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"block {including[i]:,} includes an uncle at depth {depth[i]}; chain "
            f"{chosen.chain_id} "
            f"allows 1..{int(limit[i])}"
        )
    reward = [int(r) for r in schedule["block_reward_wei"].to_numpy()[position]]
    out = uncles.copy()
    out.attrs.update(schedule.attrs)
    out["era"] = schedule["era"].to_numpy()[position]
    out["block_reward_wei"] = _exact(reward)
    out["uncle_reward_wei"] = _exact(
        [(8 - int(d)) * r // 8 for d, r in zip(depth, reward, strict=True)]
    )
    out["nephew_reward_wei"] = _exact([r // 32 for r in reward])
    return out


def _exact(values: Sequence[int]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


@takes_spec(required=False)
def rewards_by_era(
    blocks: pd.DataFrame,
    uncles: pd.DataFrame,
    *,
    spec: ChainSpec | None = None,
) -> pd.DataFrame:
    """Issuance of the scanned blocks per era: block rewards, nephew and uncle rewards.

    Transaction fees are not issuance and are left out.

    Parameters
    ----------
    blocks : pandas.DataFrame
        ``block_number`` and ``uncle_count`` per scanned block.
    uncles : pandas.DataFrame
        The uncles those blocks include (:func:`feeslab.frames.parse_uncles`).
    spec, chain_id
        As for :func:`uncle_rewards`; ``blocks`` and ``uncles`` must not disagree.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``era`` (chain order, eras without scanned blocks left out), columns
        ``blocks``, ``uncles`` (int64); ``block_rewards_wei``, ``nephew_rewards_wei``,
        ``uncle_rewards_wei``, ``issuance_wei`` (object: exact sums) [wei];
        ``block_reward_eth``, ``nephew_reward_eth``, ``uncle_reward_eth`` [ETH/block] (the
        average per scanned block, float) and ``uncle_share`` [1]: the part of issuance
        paid because of uncles (uncle plus nephew rewards).

    Raises
    ------
    ValueError
        When an uncle's including block is not in ``blocks``, or ``uncle_count`` disagrees
        with the uncles listed.
    """
    _require(blocks, ["block_number", "uncle_count"], "blocks")
    _unique_blocks(blocks)
    # either frame's attrs may say; where both do they must agree
    chosen = resolve_spec(uncles, spec, what="rewards_by_era")
    paid = uncle_rewards(uncles, spec=chosen)
    numbers = blocks["block_number"].to_numpy(dtype=np.int64)
    listed = pd.Series(paid["block_number"].to_numpy(dtype=np.int64)).value_counts()
    counts = pd.Series(blocks["uncle_count"].to_numpy(dtype=np.int64), index=numbers)
    outside = listed.index.difference(counts.index)
    if len(outside):
        raise ValueError(f"uncles of block {int(outside.min()):,}, which is not in blocks")
    differ = listed.ne(counts.reindex(listed.index))
    if differ.any():
        n = int(listed.index[differ.to_numpy()].min())
        raise ValueError(
            f"block {n:,}: uncle_count is {counts[n]} but uncles lists {listed[n]} uncles"
        )
    order = np.argsort(numbers, kind="stable")
    numbers = numbers[order]
    uncle_count = counts.to_numpy()[order]
    era = reward_era(numbers, spec=chosen).to_numpy()
    reward = [int(r) for r in block_reward(numbers, spec=chosen)]
    paid_era = paid["era"].to_numpy()
    paid_wei = [int(r) for r in paid["uncle_reward_wei"]]
    rows: dict[object, dict[str, int | float]] = {}
    for label in pd.unique(era):
        here = np.flatnonzero(era == label)
        blocks_here = len(here)
        block_wei = sum(reward[i] for i in here)
        nephew_wei = sum(reward[i] // 32 * int(uncle_count[i]) for i in here)
        uncle_wei = sum(w for e, w in zip(paid_era, paid_wei, strict=True) if e == label)
        issued = block_wei + nephew_wei + uncle_wei
        rows[label] = {
            "blocks": blocks_here,
            "uncles": int(uncle_count[here].sum()),
            "block_rewards_wei": block_wei,
            "nephew_rewards_wei": nephew_wei,
            "uncle_rewards_wei": uncle_wei,
            "issuance_wei": issued,
            "block_reward_eth": block_wei / _WEI_PER_ETH / blocks_here,
            "nephew_reward_eth": nephew_wei / _WEI_PER_ETH / blocks_here,
            "uncle_reward_eth": uncle_wei / _WEI_PER_ETH / blocks_here,
            "uncle_share": (nephew_wei + uncle_wei) / issued if issued else np.nan,
        }
    columns = ["blocks", "uncles", "block_rewards_wei", "nephew_rewards_wei",
               "uncle_rewards_wei", "issuance_wei", "block_reward_eth", "nephew_reward_eth",
               "uncle_reward_eth", "uncle_share"]
    table = pd.DataFrame(
        {
            c: _exact([int(r[c]) for r in rows.values()])
            if c.endswith("_wei")
            else np.array([r[c] for r in rows.values()], dtype=float)
            for c in columns
        },
        index=pd.Index(list(rows), dtype=object),
    )
    table = table.astype({"blocks": np.int64, "uncles": np.int64})
    table.index.name = "era"
    return table


# -- miners ----------------------------------------------------------------------------------


def miner_shares(
    blocks: pd.DataFrame,
    *,
    column: str = "miner",
    confidence: float = 0.95,
    method: Literal["wilson", "clopper-pearson"] = "wilson",
) -> pd.DataFrame:
    """Each miner's share of the blocks, with an interval.

    Parameters
    ----------
    blocks : pandas.DataFrame
        One row per block with the producer in ``column`` (:func:`feeslab.frames.parse_blocks`
        has ``miner``; pass ``column="miner"`` of an uncles frame for stale blocks).
    column : str
        The producer column.
    confidence : float
        Two-sided coverage, in (0, 1).
    method : {"wilson", "clopper-pearson"}
        Interval of each share, taken on its own.

    Returns
    -------
    pandas.DataFrame
        Indexed by miner (most blocks first; ties by address), columns ``blocks`` (int64),
        ``share`` [1], ``lower``, ``upper``.
    """
    _require(blocks, [column], "blocks")
    confidence = _check_confidence(confidence)
    _check_binomial(method)
    counts = blocks[column].value_counts()
    counts = counts.rename_axis(column).reset_index(name="blocks")
    counts = counts.sort_values(["blocks", column], ascending=[False, True]).set_index(column)
    total = int(counts["blocks"].sum())
    lower, upper = _binomial_interval(counts["blocks"], total, confidence, method)
    counts["blocks"] = counts["blocks"].astype(np.int64)
    counts["share"] = counts["blocks"] / total if total else np.nan
    counts["lower"], counts["upper"] = lower, upper
    return counts


def herfindahl_index(shares: npt.ArrayLike, *, unbiased: bool = False) -> float:
    """Herfindahl-Hirschman index of concentration: the sum of squared shares [1].

    Parameters
    ----------
    shares : array-like or pandas.Series
        Shares or counts per producer (normalised by their sum); e.g. ``miner_shares(...)
        ["blocks"]``.
    unbiased : bool
        With counts, ``(sum(n_i**2) - N) / (N * (N - 1))``: the probability that two blocks
        drawn without replacement share a producer, which removes the upward bias of the
        plain index on a finite sample (e.g. 1/N for N blocks by N miners, not 1/N + ...).

    Returns
    -------
    float
        In [1/k, 1] for k producers (multiply by 10,000 for the antitrust "points" scale);
        NaN for no blocks.

    References
    ----------
    .. [11] Herfindahl (1950); Hirschman, AER 54 (1964) 761.
    """
    values = np.asarray(shares, dtype=float)
    if (values < 0).any() or not np.isfinite(values).all():
        raise ValueError("shares must be finite and non-negative")
    total = values.sum()
    if total <= 0:
        return math.nan
    if unbiased:
        if not np.allclose(values, np.round(values)) or total < 2:
            raise ValueError("unbiased=True needs counts (integers) of at least 2 blocks")
        return float(((values**2).sum() - total) / (total * (total - 1)))
    return float(((values / total) ** 2).sum())


def miner_concentration(
    blocks: pd.DataFrame,
    *,
    by: str | Sequence[object] | pd.Series | None = None,
    column: str = "miner",
) -> pd.DataFrame:
    """Concentration of block production: HHI, top share and the Nakamoto coefficient.

    Parameters
    ----------
    blocks : pandas.DataFrame
        One row per block with its producer in ``column``.
    by : str or array-like, optional
        Groups (a column or labels aligned with rows), e.g. ``reward_era(...)`` or a
        window start; ``None``: one row, ``"all"``.
    column : str
        The producer column.

    Returns
    -------
    pandas.DataFrame
        Per group: ``blocks``, ``miners`` (int64), ``hhi`` and ``hhi_unbiased`` (see
        :func:`herfindahl_index`) [1], ``top_share`` [1] and ``nakamoto`` (int64: the fewest
        producers with more than half of the blocks).
    """
    _require(blocks, [column], "blocks")
    labels, name = _labels(blocks, by)
    frame = pd.DataFrame({"label": labels, "miner": blocks[column].to_numpy()})
    if "block_number" in blocks:
        frame = frame.iloc[np.argsort(blocks["block_number"].to_numpy(), kind="stable")]
    rows = {}
    for label, group in frame.groupby("label", sort=False):
        counts = np.sort(group["miner"].value_counts().to_numpy())[::-1]
        total = int(counts.sum())
        rows[label] = {
            "blocks": total,
            "miners": len(counts),
            "hhi": herfindahl_index(counts),
            "hhi_unbiased": herfindahl_index(counts, unbiased=True) if total > 1 else np.nan,
            "top_share": counts[0] / total,
            "nakamoto": int(np.searchsorted(np.cumsum(counts), total / 2, side="right") + 1),
        }
    columns = ["blocks", "miners", "hhi", "hhi_unbiased", "top_share", "nakamoto"]
    table = pd.DataFrame.from_dict(rows, orient="index", columns=columns)
    table.index.name = name
    return table.astype({"blocks": np.int64, "miners": np.int64, "nakamoto": np.int64})


def miner_uncles(
    blocks: pd.DataFrame,
    uncles: pd.DataFrame,
    *,
    confidence: float = 0.95,
    method: Literal["wilson", "clopper-pearson"] = "wilson",
) -> pd.DataFrame:
    """Per miner: how often its blocks went stale, and how often it includes uncles.

    Parameters
    ----------
    blocks : pandas.DataFrame
        :func:`feeslab.frames.parse_blocks`' frame (``block_number``, ``miner``,
        ``uncle_count``) of the scanned blocks.
    uncles : pandas.DataFrame
        The uncles those blocks include (``miner`` is the stale block's producer).
    confidence, method
        The intervals (see :func:`uncle_rate`).

    Returns
    -------
    pandas.DataFrame
        Indexed by miner (most blocks first), columns ``blocks`` (canonical blocks mined),
        ``share`` [1] of the canonical blocks, ``stale`` (its blocks that became uncles),
        ``stale_rate`` = stale / (blocks + stale) [1] with ``stale_lower``, ``stale_upper``;
        ``including`` (its blocks that include at least one uncle) and ``including_rate`` =
        including / blocks [1] with ``including_lower``, ``including_upper``. A miner whose
        blocks never include uncles shows ``including == 0`` with an upper bound that says
        how sure that is.

    References
    ----------
    .. [7] Gervais et al., CCS 2016 (stale rates and their dependence on the miner).
    """
    _require(blocks, ["block_number", "miner", "uncle_count"], "blocks")
    _require(uncles, ["block_number", "miner"], "uncles")
    _unique_blocks(blocks)
    confidence = _check_confidence(confidence)
    _check_binomial(method)
    outside = ~uncles["block_number"].isin(blocks["block_number"])
    if outside.any():
        first = int(uncles["block_number"][outside].min())
        raise ValueError(f"uncles of block {first:,}, which is not in blocks")
    mined = blocks["miner"].value_counts()
    stale = uncles["miner"].value_counts()
    including = blocks.loc[blocks["uncle_count"] > 0, "miner"].value_counts()
    miners = mined.index.union(stale.index)
    table = pd.DataFrame(
        {
            "blocks": mined.reindex(miners, fill_value=0).astype(np.int64),
            "stale": stale.reindex(miners, fill_value=0).astype(np.int64),
            "including": including.reindex(miners, fill_value=0).astype(np.int64),
        }
    )
    table.index.name = "miner"
    table = table.reset_index().sort_values(["blocks", "miner"], ascending=[False, True])
    table = table.set_index("miner")
    total = int(table["blocks"].sum())
    table.insert(1, "share", table["blocks"] / total if total else np.nan)
    produced = table["blocks"] + table["stale"]
    table["stale_rate"] = table["stale"] / produced.where(produced > 0)
    table["stale_lower"], table["stale_upper"] = _binomial_interval(
        table["stale"], produced, confidence, method
    )
    table = table[["blocks", "share", "stale", "stale_rate", "stale_lower", "stale_upper",
                   "including"]]
    table["including_rate"] = table["including"] / table["blocks"].where(table["blocks"] > 0)
    table["including_lower"], table["including_upper"] = _binomial_interval(
        table["including"], table["blocks"], confidence, method
    )
    return table


# -- the propagation-delay model -------------------------------------------------------------


def stale_probability(
    delay_s: npt.ArrayLike, block_time_s: npt.ArrayLike
) -> float | np.ndarray | pd.Series:
    """Chance that a rival block is found while a block propagates: ``1 - exp(-tau / T)``.

    Block discovery is a Poisson process with mean interval ``T``; a block that needs ``tau``
    to reach the other miners races any block found in that time (Decker and Wattenhofer
    2013; Gervais et al. 2016).

    Parameters
    ----------
    delay_s : float or array-like
        Propagation delay ``tau`` [s], >= 0.
    block_time_s : float or array-like
        Mean block interval ``T`` [s], > 0.

    Returns
    -------
    float, numpy.ndarray or pandas.Series
        Probability that the height forks [1], shaped like ``delay_s``.

    References
    ----------
    .. [6] Decker and Wattenhofer, IEEE P2P 2013, section V.
    .. [7] Gervais et al., CCS 2016, section 3.
    """
    tau = np.asarray(delay_s, dtype=float)
    interval = np.asarray(block_time_s, dtype=float)
    if (tau < 0).any() or (interval <= 0).any():
        raise ValueError("delay_s must be >= 0 and block_time_s > 0")
    return _like(delay_s, -np.expm1(-tau / interval), "stale_probability")


def _like(given: object, values: np.ndarray, name: str) -> float | np.ndarray | pd.Series:
    """``values`` shaped as ``given`` was: a float, an array, or a Series on its index."""
    if isinstance(given, pd.Series):
        return pd.Series(values, index=given.index, name=name)
    return float(values) if values.ndim == 0 else values


def implied_delay(
    rate: npt.ArrayLike, block_time_s: npt.ArrayLike
) -> float | np.ndarray | pd.Series:
    """The propagation delay that explains a fork rate: ``tau = -T log(1 - rate)`` [s].

    The inverse of :func:`stale_probability`; applied to an interval's bounds it gives an
    interval of the delay (the map is increasing).

    Parameters
    ----------
    rate : float or array-like
        Forks (uncles) per block [1], in [0, 1).
    block_time_s : float or array-like
        Mean block interval [s], > 0.

    Returns
    -------
    float, numpy.ndarray or pandas.Series
        Delay [s], shaped like ``rate`` (a Series keeps its index).
    """
    r = np.asarray(rate, dtype=float)
    interval = np.asarray(block_time_s, dtype=float)
    if ((r < 0) | (r >= 1)).any() or (interval <= 0).any():
        raise ValueError("rate must be in [0, 1) and block_time_s > 0")
    return _like(rate, -interval * np.log1p(-r), "delay_s")


def fork_heights(
    blocks: pd.DataFrame,
    uncles: pd.DataFrame,
    *,
    max_depth: int = 6,
    interval_window: int = 1024,
) -> pd.DataFrame:
    """One row per height whose fork outcome is fully observed: the data of the delay model.

    A fork at height ``h`` leaves a stale block numbered ``h`` that blocks ``h + 1`` ..
    ``h + max_depth`` may include; a height is kept only when all of them were scanned, so
    a fork there cannot have been missed (the last ``max_depth`` blocks of each scanned run
    drop out).

    Parameters
    ----------
    blocks : pandas.DataFrame
        :func:`feeslab.frames.parse_blocks`' frame (``block_number`` and ``timestamp``; every
        other column is carried along, e.g. ``gas_used`` as the model's covariate).
    uncles : pandas.DataFrame
        The uncles those blocks include (``uncle_number`` used).
    max_depth : int
        Deepest uncle allowed [blocks] (6 on Ethereum).
    interval_window : int
        Blocks in the centred moving average of block intervals that estimates the mean
        block time at each height (within a contiguous run of scanned blocks).

    Returns
    -------
    pandas.DataFrame
        ``blocks``' rows for the kept heights, sorted, plus ``forks`` (int64: uncles
        numbered ``h``), ``forked`` (bool) and ``block_time_s`` [s].
    """
    _require(blocks, ["block_number", "timestamp"], "blocks")
    _require(uncles, ["uncle_number"], "uncles")
    _unique_blocks(blocks)
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
        raise ValueError(f"max_depth must be a positive int, not {max_depth!r}")
    if (
        isinstance(interval_window, bool)
        or not isinstance(interval_window, int)
        or interval_window < 2
    ):
        raise ValueError(f"interval_window must be an int >= 2, not {interval_window!r}")
    frame = blocks.sort_values("block_number").reset_index(drop=True)
    if frame.empty:
        return frame.assign(block_time_s=pd.Series(dtype=float), forks=pd.Series(dtype=np.int64),
                            forked=pd.Series(dtype=bool))
    numbers = frame["block_number"].to_numpy(dtype=np.int64)
    stamps = frame["timestamp"]
    if not isinstance(stamps.dtype, pd.DatetimeTZDtype):
        raise TypeError(f"blocks.timestamp must be tz-aware datetime64 (UTC), not {stamps.dtype}")
    seconds = (stamps - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy()
    run = np.concatenate([[0], np.cumsum(np.diff(numbers) != 1)])
    gaps = pd.Series(np.diff(seconds, prepend=np.nan)).where(
        pd.Series(np.r_[False, run[1:] == run[:-1]])
    )
    frame["block_time_s"] = (
        gaps.groupby(run)
        .transform(lambda g: g.rolling(interval_window, center=True, min_periods=2).mean())
        .to_numpy()
    )
    scanned = set(numbers.tolist())
    complete = np.array(
        [all(h + k in scanned for k in range(1, max_depth + 1)) for h in numbers.tolist()],
        dtype=bool,
    )
    stale = uncles["uncle_number"].value_counts()
    frame["forks"] = stale.reindex(numbers, fill_value=0).to_numpy(dtype=np.int64)
    frame["forked"] = frame["forks"] > 0
    kept = frame[complete & frame["block_time_s"].notna().to_numpy()]
    return kept.reset_index(drop=True)


@dataclass(frozen=True)
class DelayFit:
    """A fitted propagation-delay model: ``P(fork) = 1 - exp(-tau / T)``, ``tau`` linear.

    ``tau = base + sum_k coef_k * x_k / per_k`` [s], with ``T`` each height's mean block
    time. Made by :func:`fit_propagation_delay`.

    Attributes
    ----------
    params : pandas.DataFrame
        Indexed by ``base`` and each covariate, columns ``estimate``, ``std_error``,
        ``lower``, ``upper`` ([s] for ``base``, [s per ``per`` units] for a covariate).
    covariance : numpy.ndarray
        Covariance of the estimates (inverse Fisher information).
    covariates : dict of str to float
        Covariate column -> ``per`` (the unit its coefficient is given per).
    block_time : str or float
        The block-time column used, or a constant [s].
    heights, forks : int
        Heights fitted and how many forked.
    log_likelihood : float
    confidence : float
    """

    params: pd.DataFrame
    covariance: np.ndarray
    covariates: dict[str, float]
    block_time: str | float
    heights: int
    forks: int
    log_likelihood: float
    confidence: float
    units: dict[str, str] = field(default_factory=dict)

    def delay(self, frame: pd.DataFrame) -> pd.Series:
        """The model's propagation delay at each row of ``frame`` [s]."""
        design = _design(frame, self.covariates)
        return pd.Series(design @ self.params["estimate"].to_numpy(), index=frame.index,
                         name="delay_s")

    def stale_probability(self, frame: pd.DataFrame) -> pd.Series:
        """The model's fork probability at each row of ``frame`` [1]."""
        interval = _block_times(frame, self.block_time)
        tau = np.maximum(self.delay(frame).to_numpy(), 0.0)
        return pd.Series(-np.expm1(-tau / interval), index=frame.index, name="stale_probability")


def _design(frame: pd.DataFrame, covariates: Mapping[str, float]) -> np.ndarray:
    _require(frame, list(covariates), "heights")
    columns = [np.ones(len(frame))]
    for name, per in covariates.items():
        values = frame[name].to_numpy(dtype=float)
        if not np.isfinite(values).all():
            raise ValueError(f"heights.{name} has missing or infinite values")
        columns.append(values / per)
    return np.column_stack(columns)


def _block_times(frame: pd.DataFrame, block_time: str | float) -> np.ndarray:
    if isinstance(block_time, str):
        _require(frame, [block_time], "heights")
        interval = frame[block_time].to_numpy(dtype=float)
    else:
        interval = np.full(len(frame), float(block_time))
    if not (np.isfinite(interval) & (interval > 0)).all():
        raise ValueError("block times must be finite and > 0 [s]")
    return np.asarray(interval)


def _unit(name: str, per: float) -> str:
    """How a covariate's coefficient is counted: ``Mgas`` for gas per million, ..."""
    for (suffix, scale), unit in _KNOWN_UNITS.items():
        if name.endswith(suffix) and per == scale:
            return unit
    if per == 1:
        return name
    return f"{per:,.0f} {name}" if float(per).is_integer() else f"{per:g} {name}"


def fit_propagation_delay(
    heights: pd.DataFrame,
    *,
    covariates: Mapping[str, float] | None = None,
    block_time: str | float = "block_time_s",
    confidence: float = 0.95,
) -> DelayFit:
    """Fit the propagation-delay model of forks to observed heights, by maximum likelihood.

    Each height ``i`` forks with probability ``p_i = 1 - exp(-tau_i / T_i)`` (a rival block
    is found, at rate ``1/T_i``, while the first propagates for ``tau_i``), with the delay
    linear in covariates such as the block's gas [6]_ [7]_::

        tau_i = base + sum_k coef_k * x_ik / per_k     [s]

    The likelihood is Bernoulli; it is maximised by Fisher scoring (step-halving keeps every
    ``tau_i`` positive), and the intervals are Wald intervals from the Fisher information.

    Parameters
    ----------
    heights : pandas.DataFrame
        :func:`fork_heights`' frame: ``forked`` (bool), the covariates and the block times.
    covariates : mapping of str to float, optional
        Column -> the unit its coefficient is per; default ``{"gas_used": 1_000_000}`` (the
        delay grows by ``coef`` seconds per million gas). ``{}`` fits a constant delay.
    block_time : str or float
        Column of mean block times [s], or one value for all heights.
    confidence : float
        Coverage of the parameters' intervals, in (0, 1).

    Returns
    -------
    DelayFit

    Raises
    ------
    ValueError
        Too few heights or forks to identify the parameters, or the fit does not converge.

    References
    ----------
    .. [6] Decker and Wattenhofer, IEEE P2P 2013: delay grows linearly with block size.
    .. [7] Gervais et al., CCS 2016: stale rate from block size, interval and propagation.
    """
    covariates = dict({"gas_used": 1_000_000} if covariates is None else covariates)
    confidence = _check_confidence(confidence)
    for name, per in covariates.items():
        if not isinstance(per, int | float) or isinstance(per, bool) or not per > 0:
            raise ValueError(f"covariates[{name!r}] must be a positive unit, not {per!r}")
    _require(heights, ["forked"], "heights")
    y = heights["forked"].to_numpy(dtype=bool).astype(float)
    design = _design(heights, covariates)
    interval = _block_times(heights, block_time)
    z = design / interval[:, None]
    k = design.shape[1]
    forks = int(y.sum())
    if forks < k or len(y) - forks < k:
        raise ValueError(f"{len(y):,} heights with {forks:,} forks cannot identify {k} parameters")
    if np.linalg.matrix_rank(design) < k:
        raise ValueError("the covariates are constant or collinear over these heights")

    def loglik(eta: np.ndarray) -> float:
        return float(np.sum(y * np.log(-np.expm1(-eta)) - (1.0 - y) * eta))

    # start: a constant delay matching the mean fork rate
    beta = np.zeros(k)
    beta[0] = float(np.mean(implied_delay(min(y.mean(), 0.99), interval)))
    eta = z @ beta
    current = loglik(eta)
    for _ in range(200):
        score = z.T @ (y / np.expm1(eta) - (1.0 - y))
        information = z.T @ (z / np.expm1(eta)[:, None])
        step = np.linalg.solve(information, score)
        scale = 1.0
        while True:
            trial = beta + scale * step
            eta_trial = z @ trial
            if (eta_trial > 0).all() and loglik(eta_trial) >= current - 1e-9:
                break
            scale /= 2.0
            if scale < 1e-10:
                raise ValueError("the delay model did not converge (a delay turned negative)")
        beta, eta = trial, eta_trial
        previous, current = current, loglik(eta)
        if np.max(np.abs(scale * step)) < 1e-10 * (1.0 + np.max(np.abs(beta))) or (
            abs(current - previous) < 1e-12 * abs(current)
        ):
            break
    else:
        raise ValueError("the delay model did not converge in 200 steps")
    information = z.T @ (z / np.expm1(eta)[:, None])
    covariance = np.linalg.inv(information)
    error = np.sqrt(np.diag(covariance))
    half = NormalDist().inv_cdf(0.5 + confidence / 2.0) * error
    names = ["base", *covariates]
    params = pd.DataFrame(
        {"estimate": beta, "std_error": error, "lower": beta - half, "upper": beta + half},
        index=pd.Index(names, name="parameter"),
    )
    units = {"base": "s"} | {n: f"s per {_unit(n, p)}" for n, p in covariates.items()}
    return DelayFit(
        params=params,
        covariance=covariance,
        covariates=covariates,
        block_time=block_time,
        heights=len(y),
        forks=forks,
        log_likelihood=current,
        confidence=confidence,
        units=units,
    )


def model_vs_data(
    heights: pd.DataFrame,
    fit: DelayFit,
    *,
    column: str | None = None,
    bins: int = 8,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Observed fork rate against the model's, in bins of one covariate.

    Parameters
    ----------
    heights : pandas.DataFrame
        :func:`fork_heights`' frame (the fitted one, or held-out heights).
    fit : DelayFit
        From :func:`fit_propagation_delay`.
    column : str, optional
        The covariate to bin by (default the fit's first covariate).
    bins : int
        Bins of equal counts (quantiles), >= 1; fewer when values repeat.
    confidence : float
        Coverage of the observed rate's Wilson interval.

    Returns
    -------
    pandas.DataFrame
        One row per bin: ``x`` (the mean of ``column`` in the bin, in the fit's unit for
        it), ``heights``, ``forks`` (int64), ``rate``, ``lower``, ``upper`` (observed)
        and ``predicted`` (the mean of the model's probabilities over the bin's heights)
        [forks/block]. ``attrs["x_label"]`` names ``x`` with its unit.
    """
    if not isinstance(fit, DelayFit):
        raise TypeError(f"fit must be a DelayFit, not {type(fit).__name__}")
    column = column or next(iter(fit.covariates), None)
    if column is None:
        raise ValueError("the fit has no covariate; name a column to bin by")
    _require(heights, [column, "forked"], "heights")
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise ValueError(f"bins must be a positive int, not {bins!r}")
    per = fit.covariates.get(column, 1.0)
    x = heights[column].to_numpy(dtype=float) / per
    labels = pd.qcut(x, bins, labels=False, duplicates="drop")
    frame = pd.DataFrame(
        {
            "bin": labels,
            "x": x,
            "forks": heights["forked"].to_numpy(dtype=bool).astype(np.int64),
            "predicted": fit.stale_probability(heights).to_numpy(),
        }
    )
    grouped = frame.groupby("bin")
    table = pd.DataFrame(
        {
            "x": grouped["x"].mean(),
            "heights": grouped.size().astype(np.int64),
            "forks": grouped["forks"].sum().astype(np.int64),
            "predicted": grouped["predicted"].mean(),
        }
    )
    rates = _rate_table(table["heights"], table["forks"], table.index,
                        _check_confidence(confidence), "wilson")
    table["rate"], table["lower"], table["upper"] = rates["rate"], rates["lower"], rates["upper"]
    table = table[["x", "heights", "forks", "rate", "lower", "upper", "predicted"]]
    table.index = pd.RangeIndex(len(table), name="bin")
    table.attrs["x_label"] = f"{column.replace('_', ' ')} [{_unit(column, per)}]"
    return table

"""EIP-4844 blob-fee arithmetic and blob schedules shared by the analysis and the devnet.

Exact integers, no pandas: scalar Python ints, and :func:`blob_base_fee_array` for numpy arrays
of them. :mod:`feeslab.analysis.blobs` applies these rules to frames, :mod:`feeslab.samples`
prices its blob market with them, and :mod:`feeslab.devnet.chain` builds its blob history with
them, so the simulated chain and the analysis of what it serves cannot drift apart.

The rules, as go-ethereum's ``consensus/misc/eip4844/eip4844.go`` applies them [1]_ [4]_:

* a block's blob base fee is ``fake_exponential(1, excess_blob_gas, update_fraction)`` with
  the update fraction of the block's *own* fork (``CalcBlobFee``);
* a block's excess blob gas comes from its parent's excess and blob gas used, with the target
  (and, from Osaka, the max) of the *child's* fork (``CalcExcessBlobGas(config, parent,
  child.Time)``); a parent without blob fields counts as 0 and 0;
* from Osaka, EIP-7918's reserve price: when ``BLOB_BASE_COST * parent.base_fee`` exceeds
  ``GAS_PER_BLOB * blob_base_fee(parent.excess)`` (the blob base fee priced with the child's
  update fraction), the excess only grows, by ``used * (max - target) / max`` [3]_.

References
----------
.. [1] EIP-4844: Shard Blob Transactions, Specification (``fake_exponential``,
   ``calc_excess_blob_gas``, ``GAS_PER_BLOB = 2**17``, ``MIN_BASE_FEE_PER_BLOB_GAS = 1``),
   https://eips.ethereum.org/EIPS/eip-4844
.. [2] EIP-7691: Blob throughput increase (Prague: target 6, max 9, fraction 5,007,716);
   EIP-7892: Blob Parameter Only Hardforks (``blobSchedule``).
.. [3] EIP-7918: Blob base fee bounded by execution cost (``BLOB_BASE_COST = 2**13``).
.. [4] ethereum/go-ethereum ``consensus/misc/eip4844/eip4844.go`` (``calcExcessBlobGas``,
   ``CalcBlobFee``, ``fakeExponential``) and ``params/config.go`` (``BlobScheduleConfig``,
   ``Default*BlobConfig``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from feeslab.protocol.chaindata import Heights, chain_half

GAS_PER_BLOB = 2**17
"""Blob gas of one blob (EIP-4844 ``GAS_PER_BLOB``) [gas]."""
MIN_BASE_FEE_PER_BLOB_GAS = 1
"""The blob base fee's floor (EIP-4844) [wei]."""
BLOB_BASE_COST = 2**13
"""EIP-7918's execution gas charged per blob for the reserve price [gas]."""


def fake_exponential(factor: int, numerator: int, denominator: int) -> int:
    """``factor * e ** (numerator / denominator)`` by EIP-4844's integer Taylor series.

    Exactly the specification's loop (and geth's ``fakeExponential``): no float anywhere.
    """
    if denominator <= 0:
        raise ValueError(f"denominator must be positive, got {denominator}")
    if numerator < 0 or factor < 0:
        raise ValueError("fake_exponential takes non-negative factor and numerator")
    i = 1
    output = 0
    accum = factor * denominator
    while accum > 0:
        output += accum
        accum = accum * numerator // (denominator * i)
        i += 1
    return output // denominator


def blob_base_fee(excess_blob_gas: int, update_fraction: int) -> int:
    """The blob base fee of a block with ``excess_blob_gas`` [wei per blob gas].

    ``fake_exponential(MIN_BASE_FEE_PER_BLOB_GAS, excess_blob_gas, update_fraction)`` with
    the block's own fork's ``update_fraction`` (3,338,477 at Cancun, 5,007,716 at Prague).
    """
    return fake_exponential(MIN_BASE_FEE_PER_BLOB_GAS, int(excess_blob_gas), int(update_fraction))


_INT64_MAX = 2**63 - 1
_INT64_SAFE = 2**61  # products below this stay exact in int64 with a 4x margin
_MAX_EXPONENT = 1000  # e**1000 wei per blob gas: the Taylor loop would run for many minutes


def _fake_exponential_int64(numerator: np.ndarray, denominator: int) -> np.ndarray:
    """``fake_exponential(1, numerator, denominator)`` in int64, rows known to be safe.

    The Taylor loop of EIP-4844 over all rows at once; ``accum * numerator // (d * i)`` is
    split as ``q * numerator + r * numerator // (d * i)`` with ``accum = q * d * i + r``, so
    no product exceeds the next term or ``d * i * numerator`` (checked by the caller). A row
    whose series has ended keeps ``accum == 0`` (so adds nothing); the working set sheds
    such rows once enough of them have gathered.
    """
    n = len(numerator)
    output = np.zeros(n, dtype=np.int64)
    num, pos = numerator.astype(np.int64), np.arange(n)
    accum = np.full(n, denominator, dtype=np.int64)
    total = np.zeros(n, dtype=np.int64)
    i = 1
    while len(pos):
        total += accum
        d = denominator * i
        q = accum // d
        accum = q * num + (accum - q * d) * num // d
        i += 1
        done = accum == 0
        finished = int(np.count_nonzero(done))
        if finished == len(pos) or finished * 8 > len(pos):
            output[pos[done]] = total[done]
            keep = ~done
            accum, num, pos, total = accum[keep], num[keep], pos[keep], total[keep]
    return output // denominator


def blob_base_fee_array(excess_blob_gas: np.ndarray, update_fraction: np.ndarray) -> np.ndarray:
    """:func:`blob_base_fee` of every row at once [wei per blob gas], exactly.

    ``fake_exponential(1, excess, fraction)`` row by row, in int64 where no sum can overflow
    and in Python ints (an ``object`` array) where a fee passes int64; the same integers as the
    scalar rule, a vectorised Taylor loop instead of one loop a row.

    Parameters
    ----------
    excess_blob_gas : numpy.ndarray of int
        Each block's ``excessBlobGas`` [gas], non-negative.
    update_fraction : numpy.ndarray of int
        Each block's own fork's ``BLOB_BASE_FEE_UPDATE_FRACTION``, positive.

    Returns
    -------
    numpy.ndarray
        int64, or ``object`` (Python ints) when a fee exceeds int64.

    Raises
    ------
    ValueError
        An excess so large that the fee would pass ``e**1000`` wei (not a real header value).

    Notes
    -----
    Excess blob gas is a multiple of 2**17 before Osaka (targets and uses are whole blobs), so
    the distinct values are few: those rows are answered from a table of ``k * 2**17``.
    """
    n = len(excess_blob_gas)
    result = np.zeros(n, dtype=object) if n else np.zeros(0, dtype=np.int64)
    if n == 0:
        return result
    num = np.asarray(excess_blob_gas).astype(np.int64, copy=False)
    den = np.asarray(update_fraction).astype(np.int64, copy=False)
    out = np.zeros(n, dtype=np.int64)
    big = np.zeros(n, dtype=bool)
    single = np.min(den) == np.max(den)  # one fork's fraction: no grouping needed
    for fraction in [den[0]] if single else np.unique(den):
        rows = slice(None) if single else np.flatnonzero(den == fraction)
        values = num[rows]
        if not (values & (GAS_PER_BLOB - 1)).any():  # whole blobs: a table of k * 2**17
            k = values >> 17
            top = int(np.max(k))
            if top <= 4 * len(values) + 1024:
                table, table_big = _exact_block(
                    np.arange(top + 1, dtype=np.int64) * GAS_PER_BLOB, int(fraction)
                )
                if table_big is None:
                    out[rows] = table[k]
                    continue
        uniq, inverse = np.unique(values, return_inverse=True)
        table, table_big = _exact_block(uniq, int(fraction))
        if table_big is None:
            out[rows] = table[inverse]
        else:
            big[rows] = True
            result[rows] = table_big[inverse]
    if not big.any():
        return out
    result[~big] = out[~big].tolist()
    return result


def _exact_block(excess: np.ndarray, fraction: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Fees of distinct ``excess`` values for one fraction: (int64, None) or (_, object)."""
    x = excess.astype(np.float64) / fraction
    if len(x) and np.max(x) > _MAX_EXPONENT:
        i = int(np.argmax(x))
        raise ValueError(
            f"excess_blob_gas {int(excess[i])} with update fraction {fraction} means a blob base "
            f"fee above e**{_MAX_EXPONENT} wei: not a real header value"
        )
    # the sum is about fraction * e**x and runs for about e * x + 40 terms
    with np.errstate(over="ignore"):
        bound = fraction * np.exp(np.minimum(x, 700.0)) * 4.0
    steps = fraction * (3.0 * x + 64.0) * np.maximum(excess, 1).astype(np.float64)
    safe = (bound < _INT64_SAFE) & (steps < _INT64_SAFE)
    fees = np.zeros(len(excess), dtype=np.int64)
    if safe.any():
        rows = np.flatnonzero(safe)
        fees[rows] = _fake_exponential_int64(excess[rows], fraction)
    if safe.all():
        return fees, None
    exact = fees.astype(object)
    fits = True
    for row in np.flatnonzero(~safe):
        exact[row] = value = blob_base_fee(int(excess[row]), fraction)
        fits = fits and value <= _INT64_MAX
    if fits:  # the loop's sums passed int64, its results did not
        return exact.astype(np.int64), None
    return fees, exact


def next_excess_blob_gas(
    parent_excess_blob_gas: int,
    parent_blob_gas_used: int,
    target_blobs: int,
    max_blobs: int,
    update_fraction: int,
    *,
    reserve_price: bool = False,
    parent_base_fee: int | None = None,
) -> int:
    """The excess blob gas of a child block [gas], with the child's fork's parameters.

    Parameters
    ----------
    parent_excess_blob_gas, parent_blob_gas_used : int
        The parent's header fields [gas] (0 and 0 for a parent before Cancun).
    target_blobs, max_blobs, update_fraction : int
        The child's fork's blob schedule.
    reserve_price : bool
        EIP-7918 (Osaka on): compare the blob price with the execution reserve price.
    parent_base_fee : int, optional
        The parent's base fee [wei]; needed with ``reserve_price``.
    """
    target_gas = target_blobs * GAS_PER_BLOB
    total = parent_excess_blob_gas + parent_blob_gas_used
    if total < target_gas:
        return 0
    if reserve_price:
        if parent_base_fee is None:
            raise ValueError("EIP-7918's reserve price needs the parent's base fee")
        if _reserve_binds(parent_excess_blob_gas, update_fraction, parent_base_fee):
            return (
                parent_excess_blob_gas
                + parent_blob_gas_used * (max_blobs - target_blobs) // max_blobs
            )
    return total - target_gas


def _reserve_binds(excess: int, update_fraction: int, base_fee: int) -> bool:
    """``BLOB_BASE_COST * base_fee > GAS_PER_BLOB * blob_base_fee(excess)``, exactly.

    ``fake_exponential`` lies in ``[e**x * (1 - 1e-8) - 1, e**x]``; when a float estimate
    decides with that margin to spare, the Taylor loop is skipped, else it runs.
    """
    x = excess / update_fraction
    reserve = BLOB_BASE_COST * base_fee
    if x < 150:  # where the bound above was measured (up to 4,000 blobs of excess)
        estimate = GAS_PER_BLOB * math.exp(x)
        if reserve > estimate * (1 + 1e-9):
            return True
        if reserve < (estimate * (1 - 1e-7) - GAS_PER_BLOB) * (1 - 1e-9):
            return False
    return reserve > GAS_PER_BLOB * blob_base_fee(excess, update_fraction)


@dataclass(frozen=True)
class BlobRule:
    """One fork's blob parameters, in force from ``start`` on.

    Attributes
    ----------
    fork : str
        The fork that sets them (``cancun``, ``prague``, ``osaka``, ``bpo1``, ``bpo2``).
    start : int
        The fork's activation: a Unix timestamp [s] on the real chains (``key ==
        "timestamp"``), a block number on the devnet (``key == "block"``).
    key : str
        ``"timestamp"`` or ``"block"``: what ``start`` counts.
    target_blobs, max_blobs : int
        Blobs per block the fee aims at and allows.
    update_fraction : int
        ``BLOB_BASE_FEE_UPDATE_FRACTION``: the fee changes by at most ``e ** ((max - target)
        * GAS_PER_BLOB / update_fraction)`` per block.
    reserve_price : bool
        EIP-7918 applies (Osaka and later).
    """

    fork: str
    start: int
    key: str
    target_blobs: int
    max_blobs: int
    update_fraction: int
    reserve_price: bool

    @property
    def max_blob_gas(self) -> int:
        """Blob gas of a full blob block [gas]."""
        return self.max_blobs * GAS_PER_BLOB

    @property
    def target_blob_gas(self) -> int:
        """The blob gas target per block [gas]."""
        return self.target_blobs * GAS_PER_BLOB


@cache
def blob_schedule(chain_id: int, heights: Heights = "protocol") -> tuple[BlobRule, ...]:
    """The chain's blob schedule from ``data/chains.json``, oldest first; () without blobs.

    The one place blob parameters are read: the devnet and the vectorised analysis both ask
    here. Real chains activate blob forks by timestamp (EIP-7892 ``blobSchedule``); the
    devnet's compressed chains by block number. ``KeyError`` or ``ValueError`` for an unknown
    chain or ``heights``, as :func:`feeslab.protocol.chaindata.chain_half` raises them.
    """
    rules = []
    for item in chain_half(chain_id, heights).get("blob_schedule", ()):
        key = "timestamp" if "from_timestamp" in item else "block"
        rules.append(
            BlobRule(
                fork=item["fork"],
                start=int(item["from_timestamp"] if key == "timestamp" else item["from_block"]),
                key=key,
                target_blobs=int(item["target"]),
                max_blobs=int(item["max"]),
                update_fraction=int(item["base_fee_update_fraction"]),
                reserve_price=bool(item.get("eip7918", False)),
            )
        )
    return tuple(sorted(rules, key=lambda r: r.start))


def blob_rule_at(rules: Sequence[BlobRule], at: int) -> BlobRule | None:
    """The rule in force at ``at`` (a timestamp or a block number, as the rules count)."""
    found = None
    for rule in rules:
        if at >= rule.start:
            found = rule
    return found

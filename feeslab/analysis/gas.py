"""Calls and gas: each fork's transaction gas rules, estimates against the gas a call needs,
costs over fee history.

The rules (:func:`gas_rules`, :func:`intrinsic_gas`, :func:`calldata_floor`,
:func:`check_gas_limit`, :func:`transaction_gas_used`, :func:`block_gas_used`) are exact for
every fork from London to Amsterdam (``docs/gas.md``); they live in :mod:`feeslab.protocol.gas`,
which the datasets use too, and are re-exported here. :func:`fork_gas_table` prices example
transactions fork by fork.

Pure functions on the frames :class:`feeslab.Lab` returns: :meth:`~feeslab.Lab.gas_needed`
(``eth_estimateGas`` beside the least gas with which ``eth_call`` succeeds) and
:meth:`~feeslab.Lab.fee_history` (base fees and tip percentiles per block).

Gas amounts are ints [gas]; wei amounts are exact Python ints in ``object`` columns, beside
float64 columns in gwei and ETH for reading and plotting.

References
----------
.. [1] G. Wood, "Ethereum: a secure decentralised generalised transaction ledger" (yellow
   paper), appendix G (fee schedule: G_transaction, G_txcreate).
.. [2] EIP-2028: Transaction data gas cost reduction, https://eips.ethereum.org/EIPS/eip-2028
.. [3] EIP-2930: Optional access lists, https://eips.ethereum.org/EIPS/eip-2930
.. [4] EIP-3860: Limit and meter initcode, https://eips.ethereum.org/EIPS/eip-3860
.. [5] EIP-1559: Fee market change for ETH 1.0 chain, https://eips.ethereum.org/EIPS/eip-1559
.. [6] EIP-150: Gas cost changes for IO-heavy operations (all but one 64th of the gas is
   passed to a call), https://eips.ethereum.org/EIPS/eip-150
.. [7] EIP-3529: Reduction in refunds, https://eips.ethereum.org/EIPS/eip-3529
.. [8] EIP-7623: Increase calldata cost; EIP-7702: Set code for EOAs; EIP-7825: Transaction gas
   limit cap; EIP-2780, EIP-7778, EIP-7954, EIP-7976, EIP-7981, EIP-8037, EIP-8038 (Amsterdam),
   https://eips.ethereum.org
.. [9] ethereum/execution-specs ``src/ethereum/forks/<fork>/transactions.py`` (the
   ``ethereum-execution`` package 2.20.0) for London to Osaka; go-ethereum
   ``core/state_transition.go``, ``core/gaspool.go`` and ``params/protocol_params.go`` at
   02b73d4ea7181464175e0a6cbecc0a3a2655a562 (2026-08-20) for Amsterdam.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any, SupportsIndex

import numpy as np
import pandas as pd

from feeslab.errors import TransactionGasCapExceeded
from feeslab.frames import reward_column, transaction_cost
from feeslab.frames.blocks import _empty, _object_series
from feeslab.protocol.gas import (  # the rules, re-exported beside the analyses built on them
    GAS_FORKS,
    GasRules,
    block_gas_used,
    calldata_floor,
    check_gas_limit,
    gas_rules,
    intrinsic_gas,
    least_gas_limit,
    transaction_gas_used,
)

__all__ = [
    "COST_HISTORY_DTYPES",
    "FORK_GAS_DTYPES",
    "GAS_FORKS",
    "GasRules",
    "TransactionGasCapExceeded",
    "block_gas_used",
    "calldata_floor",
    "check_gas_limit",
    "cost_over_history",
    "cost_summary",
    "estimate_accuracy",
    "fork_gas_table",
    "gas_rules",
    "intrinsic_gas",
    "least_gas_limit",
    "transaction_gas_used",
]

WEI_PER_GWEI = 10**9
WEI_PER_ETH = 10**18

#: Columns and dtypes of :func:`cost_over_history`'s frame, in order.
COST_HISTORY_DTYPES: dict[str, str] = {
    "block_number": "int64",
    "transaction": "str",
    "gas": "int64",
    "base_fee_wei": "int64",
    "priority_fee_wei": "int64",
    "cost_wei": "object",
    "cost_gwei": "float64",
    "cost_eth": "float64",
}


def estimate_accuracy(frame: pd.DataFrame, labels: Sequence[str] | None = None) -> pd.DataFrame:
    """How far ``eth_estimateGas`` is above the least gas each transaction needs.

    geth's estimator (and so Infura's) binary-searches the gas limit and stops once the
    interval is within 1.5 % of its upper end, always answering a limit that succeeds; the
    least gas that succeeds (``gas_needed``, found exactly by :meth:`feeslab.Lab.gas_needed`)
    is where that search converges. That limit is also the gas the transaction uses when its
    code runs straight through, without refunds: refunds (EIP-3529) make the gas used smaller,
    and a call to another contract keeps back a 64th of the gas (EIP-150), so it needs a
    limit above what it uses.

    Parameters
    ----------
    frame : pandas.DataFrame
        :meth:`feeslab.Lab.gas_needed`'s frame (``gas_estimate``, ``gas_needed``, ``error``).
    labels : sequence of str, optional
        A name per transaction (row); ``"tx 0"``, ``"tx 1"``... by default.

    Returns
    -------
    pandas.DataFrame
        One row per transaction, in order, RangeIndex. Columns (dtype):

        ``transaction`` (str)
        ``gas_estimate``, ``gas_needed`` (Int64, nullable) [gas]
        ``overshoot_gas`` (Int64, nullable) [gas]
            ``gas_estimate - gas_needed`` (never negative from geth's estimator).
        ``overshoot_ratio`` (float64)
            ``overshoot_gas / gas_needed``; below 0.015 from geth's estimator.
        ``error`` (str)
            Missing when both succeeded; else why (the decoded revert, for instance).

    References
    ----------
    .. [1] go-ethereum, ``eth/gasestimator``: the binary search and its 1.5 % error ratio.
    .. [2] EIP-150; EIP-3529.
    """
    if not isinstance(frame, pd.DataFrame) or not {"gas_estimate", "gas_needed"} <= set(
        frame.columns
    ):
        raise TypeError("frame must be Lab.gas_needed's frame ('gas_estimate', 'gas_needed')")
    n = len(frame)
    if labels is None:
        names = [f"tx {i}" for i in range(n)]
    else:
        if isinstance(labels, str):
            raise TypeError("labels must be a list of names, one per transaction")
        names = [str(label) for label in labels]
        if len(names) != n:
            raise ValueError(f"labels has {len(names)} names for {n} transactions")
    estimate = frame["gas_estimate"].astype("Int64").reset_index(drop=True)
    needed = frame["gas_needed"].astype("Int64").reset_index(drop=True)
    overshoot = estimate - needed
    errors = frame["error"] if "error" in frame.columns else pd.Series([None] * n)
    return pd.DataFrame(
        {
            "transaction": pd.Series(names, dtype="str"),
            "gas_estimate": estimate,
            "gas_needed": needed,
            "overshoot_gas": overshoot,
            "overshoot_ratio": (overshoot / needed).astype("float64").to_numpy(na_value=np.nan),
            "error": pd.Series(list(errors), dtype="str"),
        }
    )


def _gas_amounts(gas: object) -> dict[str, int]:
    items = list(gas.items()) if isinstance(gas, pd.Series | Mapping) else [("transaction", gas)]
    if not items:
        raise ValueError("gas names no transaction")
    out = {}
    for name, value in items:
        if isinstance(value, bool):
            raise TypeError(f"gas of {name!r} must be an int, not bool")
        if not isinstance(value, SupportsIndex):
            raise TypeError(f"gas of {name!r} must be an int [gas], not {value!r}")
        amount = operator.index(value)
        if amount < 0:
            raise ValueError(f"gas of {name!r} must be >= 0, got {amount}")
        out[str(name)] = amount
    return out


def cost_over_history(
    gas: int | Mapping[str, int] | pd.Series,
    fees: pd.DataFrame,
    *,
    priority_fee_wei: int = 0,
    reward_percentile: float | None = None,
) -> pd.DataFrame:
    """What transactions using ``gas`` would have cost in each block of a fee history.

    Under EIP-1559 a transaction pays ``gas_used * (base_fee + tip)``: the base fee is the
    block's, the tip is what the sender offers (the block's reward percentile shows what
    others paid to be included).

    Parameters
    ----------
    gas : int, dict or pandas.Series
        Gas used [gas]: one amount, or ``{name: amount}`` for several transactions.
    fees : pandas.DataFrame
        :meth:`feeslab.Lab.fee_history`'s frame (``block_number``, ``base_fee_wei`` and, for
        ``reward_percentile``, its ``reward_p<pct>_wei`` column).
    priority_fee_wei : int, default 0
        A fixed tip [wei/gas].
    reward_percentile : float, optional
        Tip the block's reward at this percentile instead (it must have been asked for in
        ``fee_history(percentiles=...)``); blocks without it are left out.

    Returns
    -------
    pandas.DataFrame
        One row per transaction and block, transactions in the order given, RangeIndex.
        Columns (dtype, see ``COST_HISTORY_DTYPES``): ``block_number`` (int64),
        ``transaction`` (str), ``gas`` (int64) [gas], ``base_fee_wei``,
        ``priority_fee_wei`` (int64) [wei/gas], ``cost_wei`` (object: exact Python int) [wei],
        ``cost_gwei`` [gwei] and ``cost_eth`` [ETH] (float64, correctly rounded).

    References
    ----------
    .. [1] EIP-1559: Fee market change for ETH 1.0 chain.
    """
    amounts = _gas_amounts(gas)
    if not isinstance(fees, pd.DataFrame) or not {"block_number", "base_fee_wei"} <= set(
        fees.columns
    ):
        raise TypeError("fees must be Lab.fee_history's frame ('block_number', 'base_fee_wei')")
    rows = fees[["block_number", "base_fee_wei"]].copy()
    if reward_percentile is not None:
        if priority_fee_wei:
            raise ValueError("give priority_fee_wei or reward_percentile, not both")
        column = reward_column(reward_percentile)
        if column not in fees.columns:
            raise ValueError(
                f"fees has no {column!r}: ask fee_history(percentiles=[..., {reward_percentile}])"
            )
        rows["priority_fee_wei"] = fees[column]
        rows = rows[rows["priority_fee_wei"].notna() & rows["base_fee_wei"].notna()]
    else:
        rows["priority_fee_wei"] = operator.index(priority_fee_wei)
        rows = rows[rows["base_fee_wei"].notna()]
    if rows.empty:
        return _empty(COST_HISTORY_DTYPES)
    base = [int(v) for v in rows["base_fee_wei"]]
    tips = [int(v) for v in rows["priority_fee_wei"]]
    parts = []
    for name, amount in amounts.items():
        costs = [transaction_cost(amount, b, t) for b, t in zip(base, tips, strict=True)]
        parts.append(
            pd.DataFrame(
                {
                    "block_number": rows["block_number"].to_numpy(np.int64),
                    "transaction": pd.Series([name] * len(costs), dtype="str"),
                    "gas": np.full(len(costs), amount, dtype=np.int64),
                    "base_fee_wei": np.array(base, dtype=np.int64),
                    "priority_fee_wei": np.array(tips, dtype=np.int64),
                    "cost_wei": _object_series(costs),
                    "cost_gwei": np.array([c / WEI_PER_GWEI for c in costs], dtype=np.float64),
                    "cost_eth": np.array([c / WEI_PER_ETH for c in costs], dtype=np.float64),
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def cost_summary(costs: pd.DataFrame) -> pd.DataFrame:
    """The spread of each transaction's cost over a fee history.

    Parameters
    ----------
    costs : pandas.DataFrame
        :func:`cost_over_history`'s frame.

    Returns
    -------
    pandas.DataFrame
        One row per transaction (index ``transaction``, in the order given). Columns (dtype):
        ``gas`` (int64) [gas]; ``blocks`` (int64); ``min_eth``, ``median_eth``,
        ``p90_eth``, ``max_eth`` (float64) [ETH]; ``cheapest_block``, ``dearest_block``
        (int64: the first block at the minimum and at the maximum cost); ``max_over_min``
        (float64: how many times more the dearest block cost than the cheapest).

    References
    ----------
    .. [1] EIP-1559: Fee market change for ETH 1.0 chain.
    """
    if not isinstance(costs, pd.DataFrame) or not {
        "transaction",
        "cost_wei",
        "cost_eth",
        "block_number",
        "gas",
    } <= set(costs.columns):
        raise TypeError("costs must be cost_over_history's frame")
    rows = []
    for name, part in costs.groupby("transaction", sort=False):
        exact = [int(c) for c in part["cost_wei"]]
        blocks = part["block_number"].to_numpy(np.int64)
        cheapest, dearest = min(exact), max(exact)
        eth = part["cost_eth"].to_numpy(np.float64)
        rows.append(
            {
                "transaction": str(name),
                "gas": int(part["gas"].iloc[0]),
                "blocks": len(part),
                "min_eth": cheapest / WEI_PER_ETH,
                "median_eth": float(np.median(eth)),
                "p90_eth": float(np.quantile(eth, 0.9)),
                "max_eth": dearest / WEI_PER_ETH,
                "cheapest_block": int(blocks[exact.index(cheapest)]),
                "dearest_block": int(blocks[exact.index(dearest)]),
                "max_over_min": dearest / cheapest if cheapest else np.nan,
            }
        )
    dtypes = {"gas": "int64", "blocks": "int64", "min_eth": "float64", "median_eth": "float64",
              "p90_eth": "float64", "max_eth": "float64", "cheapest_block": "int64",
              "dearest_block": "int64", "max_over_min": "float64"}
    if not rows:
        return _empty(dtypes).rename_axis("transaction")
    return pd.DataFrame(rows).set_index("transaction").astype(dtypes)


# -- what example transactions cost, fork by fork -----------------------------------------------

#: Columns and dtypes of :func:`fork_gas_table`'s frame, in order.
FORK_GAS_DTYPES: dict[str, str] = {
    "transaction": "str",
    "fork": "str",
    "intrinsic_gas": "int64",
    "floor_gas": "Int64",
    "execution_gas": "int64",
    "gas": "int64",
    "base_fee_wei": "object",
    "cost_wei": "object",
    "cost_eth": "float64",
}


def fork_gas_table(
    transactions: Mapping[str, Mapping[str, Any]],
    *,
    base_fee_wei: int,
    forks: Sequence[str] = GAS_FORKS,
) -> pd.DataFrame:
    """What each transaction costs under each fork's rules, in gas and in ETH at one base fee.

    ``gas`` is what the transaction is charged: ``max(intrinsic_gas + execution_gas,
    floor_gas)`` (EIP-7623's floor from Prague), with no refund. ``execution_gas`` is what the
    caller says its code costs under that fork (0 by default: a transfer, or calldata sent to
    an account without code, runs no code); feeslab does not price EVM execution, so a call
    into a contract is only its intrinsic part unless ``execution_gas`` is given.

    Parameters
    ----------
    transactions : mapping of str to mapping
        By name, the keyword arguments of :func:`intrinsic_gas` (``data``, ``create``,
        ``access_list``, ``authorizations``, ``value``, ``to_self``), and optionally
        ``execution_gas``: an int [gas], or a mapping of fork to int (a fork it leaves out
        counts 0).
    base_fee_wei : int
        The base fee to price them at [wei/gas]; no priority fee.
    forks : sequence of str
        The forks, in the order the rows take (default :data:`GAS_FORKS`, London to
        Amsterdam).

    Returns
    -------
    pandas.DataFrame
        One row per transaction and fork (transaction-major), RangeIndex, the columns of
        :data:`FORK_GAS_DTYPES`: ``intrinsic_gas``, ``floor_gas`` (``<NA>`` before Prague),
        ``execution_gas``, ``gas`` [gas]; ``base_fee_wei``, ``cost_wei`` [wei] exact ints;
        ``cost_eth`` [ETH] float64. ``attrs["source"]`` says the figures are computed from
        the rules, not read from a chain.

    Raises
    ------
    ValueError
        A negative base fee or execution gas.

    References
    ----------
    .. [1] EIP-1559 (the base fee), and the rules of :func:`intrinsic_gas` and
       :func:`calldata_floor`.
    """
    if isinstance(base_fee_wei, bool) or operator.index(base_fee_wei) < 0:
        raise ValueError(f"base_fee_wei must be a non-negative int [wei/gas], not {base_fee_wei!r}")
    if isinstance(transactions, str) or not isinstance(transactions, Mapping):
        raise TypeError("transactions must map names to intrinsic_gas's keyword arguments")
    rows: dict[str, list[object]] = {name: [] for name in FORK_GAS_DTYPES}
    for name, tx in transactions.items():
        kwargs = dict(tx)
        execution = kwargs.pop("execution_gas", 0)
        authorizations = kwargs.pop("authorizations", 0)
        data = kwargs.pop("data", b"")
        for fork in forks:
            rules = gas_rules(fork)
            run = execution.get(fork, 0) if isinstance(execution, Mapping) else execution
            run = operator.index(run)
            if run < 0:
                raise ValueError(f"execution_gas of {name!r} under {fork} is negative: {run}")
            intrinsic = intrinsic_gas(data, authorizations=authorizations, fork=rules, **kwargs)
            floor = calldata_floor(data, fork=rules, **kwargs)
            used = max(intrinsic + run, floor or 0)
            for column, value in (("transaction", name), ("fork", fork),
                                  ("intrinsic_gas", intrinsic), ("floor_gas", floor),
                                  ("execution_gas", run), ("gas", used),
                                  ("base_fee_wei", int(base_fee_wei)),
                                  ("cost_wei", used * int(base_fee_wei))):  # fmt: skip
                rows[column].append(value)
            rows["cost_eth"].append(used * int(base_fee_wei) / WEI_PER_ETH)
    frame = pd.DataFrame({
        name: (_object_series(values) if dtype == "object"
               else pd.array(values, dtype="Int64") if dtype == "Int64"
               else pd.Series(values, dtype=dtype))
        for (name, dtype), values in zip(FORK_GAS_DTYPES.items(), rows.values(), strict=True)
    })  # fmt: skip
    frame.attrs["source"] = "computed from each fork's gas rules (feeslab.analysis.gas)"
    return frame

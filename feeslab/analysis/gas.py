"""Calls and gas: intrinsic gas, estimates against the gas a call needs, costs over fee history.

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
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from feeslab.frames import reward_column, transaction_cost
from feeslab.frames.blocks import _empty, _object_series

__all__ = [
    "COST_HISTORY_DTYPES",
    "cost_over_history",
    "cost_summary",
    "estimate_accuracy",
    "intrinsic_gas",
]

TX_GAS = 21_000  # G_transaction [gas]
TX_CREATE_GAS = 53_000  # G_transaction + G_txcreate [gas]
TX_DATA_ZERO_GAS = 4  # per zero byte of calldata [gas]
TX_DATA_NONZERO_GAS = 16  # per non-zero byte since EIP-2028 [gas]
INITCODE_WORD_GAS = 2  # per 32-byte word of init code, EIP-3860 [gas]
ACCESS_LIST_ADDRESS_GAS = 2_400  # EIP-2930 [gas]
ACCESS_LIST_KEY_GAS = 1_900  # EIP-2930 [gas]
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


def _calldata(data: object) -> bytes:
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    if isinstance(data, str):
        text = data[2:] if data[:2] in ("0x", "0X") else None
        if text is None or len(text) % 2:
            raise ValueError(f"data must be 0x hex with whole bytes, got {data[:20]!r}")
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise ValueError(f"data is not hex: {data[:20]!r}") from None
    raise TypeError(f"data must be bytes or 0x hex, not {type(data).__name__}")


def intrinsic_gas(
    data: bytes | str = b"",
    *,
    create: bool = False,
    access_list: Sequence[tuple[str, Sequence[object]]] = (),
) -> int:
    """Gas a transaction is charged before any code runs [gas].

    ``21,000`` (``53,000`` for a contract creation), plus 4 per zero and 16 per non-zero
    byte of calldata (EIP-2028), plus 2 per 32-byte word of init code for a creation
    (EIP-3860), plus 2,400 per address and 1,900 per storage key of an access list
    (EIP-2930). A transaction given less gas is refused before it starts.

    Parameters
    ----------
    data : bytes or str
        The calldata (or init code), as bytes or 0x hex.
    create : bool, default False
        True for a contract creation (no ``to``).
    access_list : sequence of (address, storage keys)
        An EIP-2930 access list.

    Returns
    -------
    int
        The intrinsic gas [gas].

    References
    ----------
    .. [1] Yellow paper, appendix G; EIP-2028; EIP-2930; EIP-3860.
    """
    raw = _calldata(data)
    zeros = raw.count(0)
    gas = (TX_CREATE_GAS if create else TX_GAS) + zeros * TX_DATA_ZERO_GAS
    gas += (len(raw) - zeros) * TX_DATA_NONZERO_GAS
    if create:
        gas += INITCODE_WORD_GAS * ((len(raw) + 31) // 32)
    if isinstance(access_list, str | bytes | Mapping):
        raise TypeError("access_list must be a list of (address, storage keys) pairs")
    for entry in access_list:
        _, keys = entry
        gas += ACCESS_LIST_ADDRESS_GAS + ACCESS_LIST_KEY_GAS * len(keys)
    return gas


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


def _gas_amounts(gas: Any) -> dict[str, int]:
    one = not isinstance(gas, pd.Series | Mapping)
    items = [("transaction", gas)] if one else list(gas.items())
    if not items:
        raise ValueError("gas names no transaction")
    out = {}
    for name, value in items:
        if isinstance(value, bool):
            raise TypeError(f"gas of {name!r} must be an int, not bool")
        try:
            amount = operator.index(value)
        except TypeError:
            raise TypeError(f"gas of {name!r} must be an int [gas], not {value!r}") from None
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

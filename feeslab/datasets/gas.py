"""Gas: ``eth_estimateGas`` of transactions priced at a block's base fee, and the least gas
each one succeeds with, found exactly by finishing geth's binary search with ``eth_call``.

Both check the transactions under the gas rules of the fork of the block they are asked about
(:func:`feeslab.analysis.gas.gas_rules`): a transaction a node would refuse for the EIP-7825
gas cap (its gas limit from Osaka; its intrinsic gas or calldata floor from Amsterdam) raises
:class:`feeslab.analysis.gas.TransactionGasCapExceeded` before any estimate is sent.

References
----------
.. [1] EIP-150: Gas cost changes for IO-heavy operations (the 63/64 rule),
   https://eips.ethereum.org/EIPS/eip-150
.. [2] EIP-3529: Reduction in refunds, https://eips.ethereum.org/EIPS/eip-3529
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from feeslab.datasets import blocks as blocks_dataset
from feeslab.datasets._checks import block_number, rpc
from feeslab.datasets.registry import Dataset
from feeslab.errors import ConfigError, RevertError
from feeslab.fetch.credits import Budget, Plan
from feeslab.fetch.node import quantity
from feeslab.fetch.transport import RpcCall
from feeslab.frames import call_object, error_text, parse_cost_estimates
from feeslab.frames.calls import ZERO_ADDRESS, call_gas_inputs
from feeslab.protocol import gas as gas_rules
from feeslab.sources.rpc import RpcSource

__all__ = ["DATASETS", "get", "needed", "plan"]

NEVER_ENOUGH_GAS = 20_999  # below every transaction's intrinsic gas (21,000): always fails
Abi = Sequence[Mapping[str, Any]]


def _objects(transactions: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """The transactions as call objects, checked before anything is sent."""
    if isinstance(transactions, Mapping):
        raise TypeError("transactions must be a list of dicts (wrap a single one in [])")
    return [call_object(tx) for tx in transactions]


def _estimate_calls(objects: Sequence[dict[str, object]], number: int) -> list[RpcCall]:
    return [RpcCall("eth_estimateGas", [obj, quantity(number)]) for obj in objects]


def _number(node: RpcSource, block: int | str) -> int:
    if block == "latest":  # resolved first: estimates and base fee from the same block
        return int(node.head(refresh=True))
    if isinstance(block, str):
        raise ValueError(f'block must be a block number or "latest", not {block!r}')
    return block_number(block)


def _block_fork(node: RpcSource, number: int, header: Mapping[str, Any]) -> str | None:
    """The fork whose gas rules apply at the block (None: unknown chain, or before London)."""
    spec = node.chain_spec
    if spec is None:
        return None
    try:
        fork = spec.fork_at(number, timestamp=int(header["timestamp"], 16))
        gas_rules.gas_rules(fork)
    except ConfigError:
        return None
    return fork


def _check_cap(objects: Sequence[Mapping[str, object]], fork: str | None) -> None:
    """Refuse, as a node does, a transaction over the EIP-7825 cap under ``fork``'s rules
    (its ``gas``, or from Amsterdam its intrinsic gas or floor); None: no rules known."""
    if fork is None:
        return
    rules = gas_rules.gas_rules(fork)
    for i, obj in enumerate(objects):
        inputs = call_gas_inputs(obj)
        intrinsic = gas_rules.intrinsic_gas(fork=rules, **inputs)
        floor = gas_rules.calldata_floor(inputs["data"], create=inputs["create"],
                                         access_list=inputs["access_list"],
                                         value=inputs["value"], to_self=inputs["to_self"],
                                         fork=rules)  # fmt: skip
        least = max(intrinsic, floor or 0)
        gas = obj.get("gas")  # 0x hex in a call object
        limit = int(gas, 16) if isinstance(gas, str) else max(least, rules.tx_gas_cap or least)
        try:
            gas_rules.check_gas_limit(limit, intrinsic=intrinsic, floor=floor, fork=rules)
        except gas_rules.TransactionGasCapExceeded as exc:
            raise gas_rules.TransactionGasCapExceeded(
                f"transaction {i}: {exc} (the block is under {fork}'s rules)"
            ) from None
        except ValueError:
            pass  # too little gas: the node says so in that transaction's error


def plan(source: RpcSource, transactions: Sequence[Mapping[str, object]], *,
         block: int | str) -> Plan:  # fmt: skip
    """What :func:`get` costs: the estimates the cache cannot answer (300 credits each) and
    the block's header (``"latest"`` asks the head first)."""
    node = rpc(source, "eth_estimateGas")
    objects = _objects(transactions)
    return _plan(node, _estimate_calls(objects, _number(node, block)))


def _plan(node: RpcSource, batch: Sequence[RpcCall]) -> Plan:
    title = f"gas estimates of {len(batch):,} transactions"
    estimates: Plan = node.plan(batch, title)
    return estimates + Plan([(blocks_dataset.METHOD, 1)])


def get(
    source: RpcSource,
    transactions: Sequence[Mapping[str, object]],
    *,
    block: int | str = "latest",
    priority_fee_wei: int = 0,
    abi: Abi | None = None,
    budget: int | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """``eth_estimateGas`` of each transaction, and its cost at the block's base fee.

    Parameters
    ----------
    source : RpcSource
        A node.
    transactions : list of dict
        Each with ``from``, ``to``, ``data`` (or ``input``) and optionally ``value`` [wei]
        and ``gas`` (see ``feeslab.frames.call_object``).
    block : int or "latest"
        The block whose state the estimates run on and whose ``baseFeePerGas`` prices
        them; ``"latest"`` is resolved to the head's number first, so that estimates and
        base fee come from the same block (reported in ``block_number``).
    priority_fee_wei : int
        Tip per gas to add to the base fee [wei/gas].
    abi : list of dict, optional
        A contract ABI whose custom errors decode the reverts.
    budget : int, optional
        Refuse before sending if spending so far plus the calls would pass it [credits];
        ``eth_estimateGas`` is 300 credits.

    Returns
    -------
    pandas.DataFrame
        One row per transaction, in order: ``block_number``, ``gas_estimate`` (Int64)
        [gas], ``base_fee_wei``, ``priority_fee_wei`` [wei/gas] and ``cost_wei`` [wei]
        (exact Python ints, object), ``cost_gwei``, ``cost_eth`` (float64), ``error`` (the
        decoded revert or the node's error for that transaction; it does not raise). See
        ``feeslab.frames.parse_cost_estimates``.

    Raises
    ------
    feeslab.analysis.gas.TransactionGasCapExceeded
        A transaction over the fork's EIP-7825 cap, as a node refuses it, before the
        estimates are sent (the block's header is read first, to know its fork).
    """
    node = rpc(source, "eth_estimateGas")
    objects = _objects(transactions)
    number = _number(node, block)
    batch = _estimate_calls(objects, number)
    with node.budgeted(_plan(node, batch) if budget is not None else None, budget):
        (header,) = blocks_dataset.headers(node, [number], progress=False)
        if header is None:
            raise node.missing(number)
        _check_cap(objects, _block_fork(node, number, header))  # before the estimates
        results = node.run(batch, progress=progress, description="eth_estimateGas")
    base_fee = header.get("baseFeePerGas")
    answers: list[Any] = [a.result if a.ok else a.error for a in results]
    frame = parse_cost_estimates(
        answers,
        block_number=number,
        base_fee_wei=None if base_fee is None else int(base_fee, 16),
        priority_fee_wei=priority_fee_wei,
        abi=abi,
    )
    return node.tag(frame)


def needed(
    source: RpcSource,
    transactions: Sequence[Mapping[str, object]],
    *,
    block: int | str = "latest",
    abi: Abi | None = None,
    budget: int | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """The least gas each transaction succeeds with, found exactly, beside its estimate.

    ``eth_estimateGas`` binary-searches the gas limit and stops within 1.5 % of the least
    one that succeeds (geth's estimator). This runs :func:`get`, then the same search to the
    end: ``eth_call`` of the transaction at the same block with ``gas`` set, between 20,999
    (below any transaction's intrinsic gas, so failing) and the estimate (checked to
    succeed). Each step probes every transaction in one batch: 11 to 21 ``eth_call`` per
    transaction (80 credits each), settled successes cached.

    For code that runs straight through without refunds, the gas needed is the gas the
    transaction uses; refunds (EIP-3529) make the gas used smaller, and a call into another
    contract needs more than it uses, as a 64th of the gas is kept back (EIP-150).

    Parameters
    ----------
    source, transactions, block, abi, progress
        As for :func:`get` (a missing ``from`` is the zero address, as ``eth_estimateGas``
        assumes).
    budget : int, optional
        Refuse before sending if spending so far plus the estimates, and then plus the
        search's most ``eth_call``, would pass it [credits].

    Returns
    -------
    pandas.DataFrame
        :func:`get`'s frame with two more columns: ``gas_needed`` (Int64) [gas], missing
        where the estimate failed or the transaction fails with its own estimate (``error``
        says which); ``eth_calls`` (int64), the probes sent or read from the cache for it.
    """
    node = rpc(source, "eth_estimateGas")
    frame = get(node, transactions, block=block, abi=abi, budget=budget, progress=progress)
    if frame.empty:
        return frame.assign(gas_needed=pd.Series(dtype="Int64"),
                            eth_calls=pd.Series(dtype="int64"))
    requests = [{"from": ZERO_ADDRESS, **call_object(tx)} for tx in transactions]
    number = quantity(int(frame["block_number"].iloc[0]))
    # search state per transaction: lo fails, hi succeeds (once checked)
    search = {i: [NEVER_ENOUGH_GAS, int(g), False]
              for i, g in enumerate(frame["gas_estimate"]) if not pd.isna(g)}
    cap = None
    if budget is not None:  # checked against the most probes the search can take
        most = sum(1 + (hi - lo).bit_length() for lo, hi, _ in search.values())
        cap = Budget(budget)
        cap.check(Plan([("eth_call", most)], title="gas search"), node.credits)
    needed: list[int | None] = [None] * len(frame)
    calls = [0] * len(frame)
    errors = frame["error"].tolist()
    while search:
        probes = _probes(search)
        batch = [RpcCall("eth_call", [{**requests[i], "gas": quantity(gas)}, number])
                 for i, gas in probes]
        with node.budgeted(cap):  # each round's probes charged before they go
            answers = node.run(batch, progress=progress, description="gas search")
        for (i, gas), answer in zip(probes, answers, strict=True):
            calls[i] += 1
            if i not in search:
                continue
            failed = answer.error is not None
            if answer.error is not None and not (
                isinstance(answer.error, RevertError) or answer.error.code == -32000
            ):
                raise answer.error
            state = search[i]
            if gas == state[1] and not state[2]:
                if failed:
                    errors[i] = (f"fails in eth_call with its estimate of {gas:,} gas: "
                                 f"{error_text(answer.error or {}, abi)}")
                    del search[i]
                    continue
                state[2] = True
            elif failed:
                state[0] = max(state[0], gas)
            else:
                state[1] = min(state[1], gas)
        for i in [i for i, (lo, hi, checked) in search.items() if checked and hi - lo <= 1]:
            needed[i] = search.pop(i)[1]
    return frame.assign(
        gas_needed=pd.Series(needed, dtype="Int64"),
        eth_calls=pd.Series(calls, dtype="int64"),
        error=pd.Series(errors, dtype="str"),
    )


def _probes(search: dict[int, list[int]]) -> list[tuple[int, int]]:
    """The next gas limits to try (``search``: each transaction's [lo, hi, checked]): first
    the estimate itself and just under geth's 1.5 % stop, then the middle of what is left."""
    probes: list[tuple[int, int]] = []
    for i, (lo, hi, checked) in search.items():
        if not checked:
            probes.append((i, hi))
            guess = hi - -(-hi * 15 // 1000)
            if lo < guess < hi:
                probes.append((i, guess))
        else:
            probes.append((i, (lo + hi) // 2))
    return probes


DATASETS = (
    Dataset("estimate_costs", get, plan=plan,
            summary="eth_estimateGas of each transaction, priced at the block's base fee"),
    Dataset("gas_needed", needed, summary="the least gas each transaction succeeds with"),
)

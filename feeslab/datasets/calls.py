"""Contract calls: ``eth_call`` of one function, decoded, at one block or at many.

The ABI encoding and decoding are ``feeslab.frames.calls``'; a revert is data in a series
(its decoded reason in the row's ``error``) and an exception for a single call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from feeslab.datasets._checks import address, block_number, block_param, rpc
from feeslab.datasets.registry import BY_SERIES, Dataset
from feeslab.errors import RevertError
from feeslab.fetch.credits import Plan
from feeslab.fetch.node import quantity
from feeslab.fetch.transport import RpcCall
from feeslab.frames import decode_output, encode_call, function_spec, parse_call_series
from feeslab.frames.calls import ZERO_ADDRESS, FunctionSpec
from feeslab.sources.base import Source
from feeslab.sources.rpc import RpcSource

__all__ = ["DATASETS", "call", "get", "plan"]

Abi = Sequence[Mapping[str, object]]  # a contract's ABI: solc's JSON entries


def _request(spec: FunctionSpec, args: Sequence[object], to: str, sender: str) -> dict[str, str]:
    return {"from": address(sender, "sender"), "to": address(to, "to"),
            "data": encode_call(spec, args)}


def call(
    source: RpcSource,
    to: str,
    function: str | Mapping[str, object],
    args: Sequence[object] = (),
    *,
    block: int | str = "latest",
    sender: str = ZERO_ADDRESS,
    returns: Sequence[str] | None = None,
    abi: Abi | None = None,
) -> Any:
    """``eth_call`` of one function at one block, decoded.

    Parameters
    ----------
    source : RpcSource
        A node.
    to : str
        The contract's address.
    function : dict or str
        The function's ABI entry, a signature ``"balanceOf(address)"`` (with ``returns``,
        or ``"balanceOf(address)(uint256)"``), or its name in ``abi``.
    args : sequence
        The arguments, as Python values.
    block : int or str
        A block number (answers about settled blocks are cached) or a tag (``"latest"``).
    sender : str
        The call's ``from`` [address]; the zero address by default.
    returns : list of str, optional
        The return types, when ``function`` is a bare signature.
    abi : list of dict, optional
        The contract's ABI: looks up ``function`` by name and decodes custom errors.

    Returns
    -------
    Any
        The single return value itself, a tuple of them when the function returns several,
        None when it returns nothing. Ints are exact Python ints.

    Raises
    ------
    feeslab.errors.RevertError
        When the call reverts: ``.reason`` (``Error(string)`` or the panic text),
        ``.panic_code``, and ``.error_name``/``.error_args`` for a custom error in ``abi``.
    ValueError
        When the answer does not decode as the outputs (e.g. no code at ``to``).
    """
    node, spec = _prepared(source, function, returns, abi)
    request = _request(spec, args, to, sender)
    answer = node.run([RpcCall("eth_call", [request, block_param(block)])], progress=False)[0]
    if isinstance(answer.error, RevertError):
        raise RevertError.from_rpc(answer.error.raw, abi=abi) from None
    values = decode_output(spec, answer.unwrap())
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _prepared(source: Source, function: str | Mapping[str, object],
              returns: Sequence[str] | None, abi: Abi | None) -> tuple[RpcSource, FunctionSpec]:
    """The node (``SourceMismatch`` for a source without one) and the function to call."""
    return rpc(source, "eth_call"), function_spec(function, returns=returns, abi=abi)


def _series_calls(spec: FunctionSpec, args: Sequence[object], to: str, sender: str,
                  blocks: Sequence[int]) -> tuple[list[int], list[RpcCall]]:
    request = _request(spec, args, to, sender)
    numbers = [block_number(b) for b in blocks]
    return numbers, [RpcCall("eth_call", [request, quantity(n)]) for n in numbers]


def _title(spec: FunctionSpec, count: int) -> str:
    return f"{spec.name}() at {count:,} blocks"


def plan(
    source: RpcSource,
    to: str,
    function: str | Mapping[str, object],
    args: Sequence[object],
    blocks: Sequence[int],
    *,
    sender: str = ZERO_ADDRESS,
    returns: Sequence[str] | None = None,
    abi: Abi | None = None,
    less_cached: bool = True,
) -> Plan:
    """What :func:`get` costs: an ``eth_call`` (80 credits) per block the cache cannot
    answer (every block with ``less_cached=False``)."""
    node, spec = _prepared(source, function, returns, abi)
    _, batch = _series_calls(spec, args, to, sender, blocks)
    return node.plan(batch, _title(spec, len(batch)), less_cached=less_cached)


def get(
    source: RpcSource,
    to: str,
    function: str | Mapping[str, object],
    args: Sequence[object],
    blocks: Sequence[int],
    *,
    sender: str = ZERO_ADDRESS,
    returns: Sequence[str] | None = None,
    abi: Abi | None = None,
    budget: int | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """``eth_call`` of one function with the same arguments at each of ``blocks``, decoded.

    A revert is data, not an exception: its decoded reason goes in that row's ``error``
    column and the other rows are kept. Other node errors (e.g. a block beyond the head)
    raise. Answers about settled blocks are cached, so asking again costs nothing.

    Parameters
    ----------
    source, to, function, args, sender, returns, abi
        As for :func:`call`.
    blocks : sequence of int
        Block numbers (e.g. a ``range``).
    budget : int, optional
        Refuse (``BudgetExceeded``) before sending if spending so far plus the calls the
        cache cannot answer would pass it [credits]; ``eth_call`` is 80 credits.

    Returns
    -------
    pandas.DataFrame
        One row per block: ``block_number`` (int64), one column per output (named as in
        the ABI; ``uint256``/``int256`` and other ints wider than int64 as exact Python ints
        in ``object`` columns) and ``error`` (str, missing where the call succeeded). See
        ``feeslab.frames.parse_call_series``.
    """
    node, spec = _prepared(source, function, returns, abi)
    numbers, batch = _series_calls(spec, args, to, sender, blocks)
    with node.budgeted(node.plan(batch, _title(spec, len(batch))) if budget is not None
                       else None, budget):
        results = node.run(batch, progress=progress, description="eth_call")
    answers: dict[int, str | RevertError] = {}  # eth_call's 0x data, or its revert
    for n, answer in zip(numbers, results, strict=True):
        if answer.ok:
            answers[n] = answer.result
        elif isinstance(answer.error, RevertError):
            answers[n] = answer.error
        else:
            answer.unwrap()  # raises the node's error
    return node.tag(parse_call_series(spec, answers, abi=abi))


DATASETS = (
    Dataset("call", call, summary="eth_call of one function at one block, decoded"),
    Dataset("call_series", get, plan=plan, partitions=BY_SERIES,
            summary="eth_call of one function at each of a series of blocks, decoded"),
)

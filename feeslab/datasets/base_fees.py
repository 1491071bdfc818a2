"""Base fees from the Gas API: its last 500 values, exact, placed at block numbers.

The values are placed at the 500 blocks ending at the node's head when the newest value
equals that block's ``baseFeePerGas``, and the oldest is checked the same way; otherwise (the
head moved between the two requests) the frame keeps a positional index and
``block_number`` is absent. See ``feeslab.frames.parse_base_fee_history``.

References
----------
.. [1] EIP-1559: Fee market change for ETH 1.0 chain, https://eips.ethereum.org/EIPS/eip-1559
"""

from __future__ import annotations

import pandas as pd

from feeslab.datasets import blocks
from feeslab.datasets._checks import rpc
from feeslab.datasets.registry import Dataset, Option, block_arg
from feeslab.errors import ConfigError
from feeslab.fetch.credits import Plan, PlanLine
from feeslab.frames import parse_base_fee_history
from feeslab.sources.base import GAS_API
from feeslab.sources.rpc import RpcSource

__all__ = ["DATASETS", "get", "plan"]


def plan(source: RpcSource | None = None) -> Plan:
    """What :func:`get` costs: the Gas API call, the head and two headers."""
    return Plan(
        [
            PlanLine.of("baseFeeHistory", 1, kind="gas"),
            PlanLine.of("eth_blockNumber", 1),
            PlanLine.of(blocks.METHOD, 2, note="to place the values at blocks"),
        ],
        title="Gas API base fee history",
    )


def get(source: RpcSource, chain_id: int | None = None, *,
        budget: int | None = None) -> pd.DataFrame:  # fmt: skip
    """The Gas API's last 500 base fees of ``chain_id`` (default the node's).

    Parameters
    ----------
    source : RpcSource
        The service or a devnet (a node reached with ``connect(rpc_url=)`` has no Gas API).
    chain_id : int, optional
        Another chain of the same service: its values stay unplaced (positional index).
    budget : int, optional
        Refuse (``BudgetExceeded``) before sending if spending so far plus the plan would
        pass it [credits].

    Returns
    -------
    pandas.DataFrame
        See ``feeslab.frames.parse_base_fee_history``; ``attrs`` say its chain.
    """
    node = rpc(source, "the Gas API")
    if node.gas is None:
        raise ConfigError("this Lab has no Gas API (connected with rpc_url=)")
    with node.budgeted(plan(node), budget):  # checked, then each request charged
        own = node.chain_id()
        chain_id = own if chain_id is None else chain_id
        values = node.gas.base_fee_history(chain_id)
        frame = node.tag(parse_base_fee_history(values), chain_id)
        if chain_id != own or frame.empty:
            return frame
        head = node.head(refresh=True)
        ends = blocks.headers(node, [head - len(values) + 1, head], progress=False)
        fees = frame["base_fee_wei"]
        first, last = ends
        if first is not None and last is not None and "baseFeePerGas" in first and (
            "baseFeePerGas" in last
            and int(first["baseFeePerGas"], 16) == fees.iloc[0]
            and int(last["baseFeePerGas"], 16) == fees.iloc[-1]
        ):
            return node.tag(parse_base_fee_history(values, newest_block=head))
        return frame


DATASETS = (
    Dataset("base_fee_history", get, plan=plan, needs=(GAS_API,), cli="base-fees", options=(
        Option(("--chain-id",), "chain_id", "another chain of the service (default: the "
               "node's); its values stay unplaced", type=block_arg),
    ), summary="the Gas API's last 500 base fees, placed at block numbers"),
)

"""Fee history: base fees, gas used ratios and tip percentiles per block (``eth_feeHistory``).

One call answers up to 1,024 blocks for 80 credits, so months of fee history cost little.
The calls go out at once, :data:`GROUP` calls a request, as many requests in flight as the
transport allows; each settled group's frame is cached as Parquet, so a rerun reads frames
back without decoding an answer.
See ``feeslab.frames.parse_fee_history`` for the columns (blob columns included).

References
----------
.. [1] Ethereum execution APIs, ``eth_feeHistory``, https://github.com/ethereum/execution-apis
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from feeslab.datasets._checks import check_range
from feeslab.datasets.registry import START, STOP, Dataset, Option, Partitioning, percentiles_arg
from feeslab.fetch.cache import canonical_json
from feeslab.fetch.credits import Plan, PlanLine
from feeslab.fetch.node import quantity
from feeslab.fetch.transport import RpcCall
from feeslab.frames import parse_fee_history
from feeslab.sources.rpc import RpcSource

__all__ = ["DATASETS", "MAX_BLOCKS", "calls", "get", "plan"]

MAX_BLOCKS = 1024  # blocks per eth_feeHistory call (geth's and Infura's limit)
PERCENTILES = (10, 50, 90)
GROUP = 8  # calls a request, and a cached frame: 8,192 blocks
DATASET = "fee_history/v1"  # the cache's name for the groups' frames


def calls(start: int, stop: int, percentiles: Sequence[float] = PERCENTILES) -> list[RpcCall]:
    """The calls covering ``start`` .. ``stop - 1``, oldest first, each ending at its newest
    block and reaching back at most :data:`MAX_BLOCKS`."""
    newest = range(stop - 1, start - 1, -MAX_BLOCKS)
    return [
        RpcCall("eth_feeHistory",
                [quantity(min(MAX_BLOCKS, n - start + 1)), quantity(n), list(percentiles)])
        for n in reversed(newest)
    ]


def _title(start: int, stop: int) -> str:
    return f"fee history of blocks {start:,} to {stop - 1:,}"


def plan(source: RpcSource, start: int, stop: int) -> Plan:
    """What :func:`get` costs: a call per 1,024 blocks [credits]."""
    check_range(start, stop)
    return Plan([PlanLine.of("eth_feeHistory", len(calls(start, stop)))], title=_title(start, stop))


def get(
    source: RpcSource,
    start: int,
    stop: int,
    *,
    percentiles: Sequence[float] = PERCENTILES,
    budget: int | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Base fees, gas used ratios and tip percentiles of blocks ``start`` .. ``stop - 1``.

    Parameters
    ----------
    source : RpcSource
        The node (``lab.fee_history`` reads era1 files too, the tips computed from bodies and
        receipts as geth does: ``feeslab.datasets.registry``).
    start, stop : int
        The blocks, as ``range(start, stop)``.
    percentiles : sequence of float
        Tip percentiles, rising, each a ``reward_p<q>_wei`` column.
    budget : int, optional
        Refuse (``BudgetExceeded``) before sending if spending so far plus the plan would
        pass it [credits].
    progress : bool, optional
        A progress bar on long reads of files.

    Returns
    -------
    pandas.DataFrame
        See ``feeslab.frames.parse_fee_history``.
    """
    check_range(start, stop)
    with source.budgeted(plan(source, start, stop), budget):  # each request charged
        source.prepare()
        source.check_head(stop)
        wanted = calls(start, stop, percentiles)
        groups = [wanted[k : k + GROUP] for k in range(0, len(wanted), GROUP)]
        keys = [canonical_json([call.params for call in group]) for group in groups]
        frames = source.cached_frames(DATASET, keys)  # settled groups kept as frames
        todo = [g for g, frame in enumerate(frames) if frame is None]
        # every group at once, a request each (the node client keeps its connections busy)
        futures = [source.node.submit(groups[g]) for g in todo]
        keep = []
        try:
            for g, future in zip(todo, futures, strict=True):
                # each answer ends with the base fee of the block after its newest: drop it
                parts = [parse_fee_history(a.unwrap(), percentiles=percentiles).iloc[:-1]
                         for a in future.result()]
                frames[g] = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
                keep.append((keys[g], frames[g], int(groups[g][-1].params[1], 16)))
        finally:
            for future in futures:
                future.cancel()
            source.keep_frames(DATASET, keep)  # what came back is kept, even if a part failed
    settled = [f for f in frames if f is not None]  # every group, cached or fetched
    frame = pd.concat(settled, ignore_index=True) if len(settled) > 1 else settled[0]
    inside = (frame["block_number"] >= start) & (frame["block_number"] < stop)
    return source.tag(frame if inside.all() else frame[inside].reset_index(drop=True))


DATASETS = (
    Dataset("fee_history", get, plan=plan, cli="fee-history", options=(
        START, STOP,
        Option(("--percentiles",), "percentiles", "tip percentiles (default 10,50,90)",
               type=percentiles_arg, default=PERCENTILES),
    ), summary="base fees, gas used and tip percentiles of --start .. --stop - 1 "
               "(eth_feeHistory, 1,024 blocks a call)",
            # whole calls: the partitions send the very calls one process sends
            partitions=Partitioning("range", align=MAX_BLOCKS),
            # reward percentiles read each block's receipts, which history expiry drops
            bodies=lambda params: bool(params.get("percentiles", PERCENTILES))),
)

"""Uncles: every uncle included by a range of blocks, and each block's uncle count.

Headers first (``eth_getBlockByNumber``: their ``uncles`` list says which blocks have uncles
and how many), then ``eth_getUncleByBlockNumberAndIndex`` only for uncles that exist: about
80 x blocks + 150 x uncles credits, instead of 300 x blocks for probing both indexes
everywhere. The plan estimates the uncles from a sample of headers, which the scan reuses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from feeslab.datasets import blocks
from feeslab.datasets._checks import check_range, is_archive
from feeslab.fetch._gc import gc_paused
from feeslab.fetch.credits import Budget, Plan, PlanLine
from feeslab.fetch.node import quantity
from feeslab.fetch.transport import RpcCall
from feeslab.frames import parse_uncles, uncle_scan_frame

__all__ = ["SAMPLE", "UncleScan", "calls", "get", "plan"]

SAMPLE = 200  # headers read to estimate a scan's uncles (the scan reuses them)
METHOD = "eth_getUncleByBlockNumberAndIndex"


@dataclass(frozen=True, repr=False)
class UncleScan:
    """The result of an uncle scan (:func:`get`, ``Lab.uncles``).

    Attributes
    ----------
    uncles : pandas.DataFrame
        One row per uncle (see ``feeslab.frames.parse_uncles``).
    blocks : pandas.DataFrame
        One row per scanned block with its ``uncle_count``, zeros included, so that rates
        count blocks without uncles (see ``feeslab.frames.uncle_scan_frame``).
    plan : Plan
        The credits the scan was planned to cost before it ran.
    """

    uncles: pd.DataFrame
    blocks: pd.DataFrame
    plan: Plan

    def _summary(self) -> tuple[str, str]:
        if self.blocks.empty:
            return "no blocks", ""
        first, last = self.blocks["block_number"].iloc[[0, -1]]
        rate = len(self.uncles) / len(self.blocks)
        return (f"blocks {first:,} to {last:,}",
                f"{len(self.uncles):,} uncles in {len(self.blocks):,} blocks "
                f"({rate:.4f} a block), planned {self.plan.total:,} credits")

    def __repr__(self) -> str:
        span, counts = self._summary()
        return f"<UncleScan of {span}: {counts}>" if counts else f"<UncleScan of {span}>"

    def _repr_html_(self) -> str:
        import html

        span, counts = self._summary()
        table = self.uncles.head(5).to_html(index=False)
        return (f"<p><b>UncleScan</b> of {html.escape(span)}: {html.escape(counts)}</p>"
                f"{table}<p>first 5 uncles of {len(self.uncles):,}; "
                "<code>.uncles</code>, <code>.blocks</code>, <code>.plan</code></p>")


def calls(wanted: Sequence[tuple[int, int]]) -> list[RpcCall]:
    """The calls for the uncles at (block number, index) pairs, in order."""
    return [RpcCall(METHOD, [quantity(n), quantity(i)]) for n, i in wanted]


def _title(start: int, stop: int) -> str:
    return f"uncle scan of blocks {start:,} to {stop - 1:,}"


def plan(
    source: Any, start: int, stop: int, *, sample: int = SAMPLE, budget: int | None = None
) -> Plan:
    """What :func:`get` will cost, before it runs.

    The uncle count is estimated from ``sample`` headers spread over the range (fetched and
    cached, for the scan to reuse); nothing from archive files.

    Parameters
    ----------
    budget : int, optional
        Refuse (``BudgetExceeded``) before the sample is bought if the scan's headers alone
        (the sample among them) would pass it, and after it if the whole plan would [credits].
    """
    check_range(start, stop)
    if is_archive(source):  # files cost nothing
        return Plan([], title=_title(start, stop) + " (era1 files)")
    return _plan_and_sample(source, start, stop, sample, budget)[0]


def _plan_and_sample(
    source: Any, start: int, stop: int, sample: int, budget: int | None
) -> tuple[Plan, dict[int, Any]]:
    """The plan, and the sampled headers by number (the scan need not fetch them again)."""
    count = stop - start
    # against the spending before the plan: the sample is part of the plan's headers
    cap = None if budget is None else Budget(budget)
    if cap is not None:  # the headers alone, before the sample is bought
        cap.check(Plan([PlanLine.of(blocks.METHOD, count)]), source.credits)
    source.check_head(stop)
    step = max(1, count // sample)
    numbers = range(start, stop, step)
    probe = blocks.headers(source, numbers, progress=False)
    found = sum(len(b["uncles"]) for b in probe if b is not None)
    per_block = found / max(1, len(probe))
    lines = [
        PlanLine.of(blocks.METHOD, count),
        PlanLine.of(METHOD, round(per_block * count), estimated=step > 1),
    ]
    result = Plan(lines, title=_title(start, stop))
    if cap is not None:
        cap.check(result)
    return result, dict(zip(numbers, probe, strict=True))


def get(
    source: Any,
    start: int,
    stop: int,
    *,
    budget: int | None = None,
    progress: bool | None = None,
) -> UncleScan:
    """Every uncle included by blocks ``start`` .. ``stop - 1`` (like ``range``).

    Parameters
    ----------
    source : RpcSource or Era1Source
        Where the blocks come from.
    budget : int, optional
        Refuse (``BudgetExceeded``) before sending, the plan's sample included, if spending
        so far plus the plan would pass it [credits].
    progress : bool, optional
        A progress bar on long fetches.

    Returns
    -------
    UncleScan
        ``.uncles`` (one row per uncle), ``.blocks`` (uncle count per scanned block, zeros
        included) and ``.plan`` (the credits planned before running).
    """
    if is_archive(source):
        uncles, counts = source.uncle_rows(start, stop, progress=progress)
        return UncleScan(uncles=uncles, blocks=counts, plan=plan(source, start, stop))
    check_range(start, stop)
    with gc_paused():  # the decoded headers die before the collector resumes
        planned, sampled = _plan_and_sample(source, start, stop, SAMPLE, budget)
        rest = [n for n in range(start, stop) if n not in sampled]
        fetched = dict(zip(rest, blocks.headers(source, rest, progress=progress), strict=True))
        headers = [sampled[n] if n in sampled else fetched[n] for n in range(start, stop)]
        missing = [start + i for i, b in enumerate(headers) if b is None]
        if missing:
            raise source.missing(missing[0])
        wanted = [(int(b["number"], 16), i) for b in headers for i in range(len(b["uncles"]))]
        objects = source.results(calls(wanted), description="uncles", progress=progress)
        rows = [(n, i, u) for (n, i), u in zip(wanted, objects, strict=True) if u is not None]
        uncles = source.tag(parse_uncles(rows))
        return UncleScan(uncles=uncles, blocks=source.tag(uncle_scan_frame(range(start, stop),
                                                                          uncles)), plan=planned)

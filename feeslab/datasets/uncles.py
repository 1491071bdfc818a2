"""Uncles: every uncle included by a range of blocks, and each block's uncle count.

Uncle counts first (``eth_getUncleCountByBlockNumber``: which blocks have uncles and how
many; the same 80 credits as a header, whose ``uncles`` list says as much, in about a
thirtieth of the bytes), then ``eth_getUncleByBlockNumberAndIndex`` only for uncles that
exist: about 80 x blocks + 150 x uncles credits, instead of 300 x blocks for probing both
indexes everywhere. The plan estimates the uncles from a sample of counts, which the scan
reuses.

The scan is a staged extract on the engine (``feeslab.engine``): the range is cut into pieces
of :data:`PIECE` blocks (at multiples of it), a few pieces' counts are in flight while the
uncles of pieces whose counts are in are asked for, and memory stays flat however long the
range. The engine keeps the settled pieces' uncles frames as Parquet, a run of consecutive
pieces to a file, so a rerun reads frames back without decoding an answer; and the counts of
pieces in flight as notes, so a scan stopped part way buys none of them again.

What is the scan's own: the counts, the uncles they call for, the plan estimated from a
sample of counts (bought once, reused by the scan and, for a cluster job, handed to every
partition as ``known_counts``) and the result, an :class:`UncleScan`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from feeslab.datasets.registry import BY_RANGE, START, STOP, Dataset, Option, Params, PartsPlan
from feeslab.engine import Chunk, Chunked, Layout, MissingBlock, Notes, check_range, layout
from feeslab.engine import run as run_chunks
from feeslab.errors import ProtocolError
from feeslab.fetch._gc import gc_paused
from feeslab.fetch.credits import Budget, Plan, PlanLine
from feeslab.fetch.node import quantity
from feeslab.fetch.transport import RpcCall, RpcResult
from feeslab.frames import parse_uncles, uncle_scan_frame
from feeslab.protocol.costs import method_cost
from feeslab.sources.rpc import RpcSource

if TYPE_CHECKING:
    from feeslab.cluster import JobReport

__all__ = ["CHUNKS", "DATASETS", "PIECE", "SAMPLE", "UncleScan", "calls", "count_calls", "get",
           "plan", "plan_and_sample", "plan_parts"]

SAMPLE = 200  # uncle counts read to estimate a scan's uncles (the scan reuses them)
METHOD = "eth_getUncleByBlockNumberAndIndex"
COUNT_METHOD = "eth_getUncleCountByBlockNumber"
# blocks a piece: the unit streamed and cached; aligned, so that scans of other ranges share
# the inner pieces
PIECE = 4_000  # a multiple of connect()'s batches (1,000 counts): a piece sends only full ones
AHEAD = 3  # pieces whose counts are in flight while the one before is read (ints: cheap)
RUN = 25  # finished pieces at most in one cached file (a run: 100,000 blocks)
NOTE_AFTER = 1.0  # [s] a piece in flight, or a run held, this long is written as it goes
DATASET = "uncles/v1"  # the cache's name for the pieces' frames
NOTES = "uncle_counts/v1"  # and for the count batches of unfinished pieces


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
    report : JobReport or None
        What a cluster job did (``feeslab.cluster.JobReport``); None in one process.
    """

    uncles: pd.DataFrame
    blocks: pd.DataFrame
    plan: Plan
    report: JobReport | None = None

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


def count_calls(numbers: Sequence[int]) -> list[RpcCall]:
    """The calls for the uncle counts of blocks ``numbers``, in order."""
    return [RpcCall(COUNT_METHOD, [quantity(n)]) for n in numbers]


def _title(start: int, stop: int) -> str:
    return f"uncle scan of blocks {start:,} to {stop - 1:,}"


def _sample(todo: list[tuple[int, int]], sample: int) -> list[int]:
    """``sample`` block numbers spread over the pieces left to fetch."""
    count = sum(b - a for a, b in todo)
    if not count:
        return []
    blocks_left = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in todo])
    return [int(n) for n in blocks_left[:: max(1, count // sample)]]


def _plan_of(start: int, stop: int, todo: list[tuple[int, int]], sampled: dict[int, int],
             cached: Mapping[tuple[int, int], pd.DataFrame]) -> Plan:
    """The scan's plan: the pieces left to fetch estimated from ``sampled`` uncle counts, and
    the cached pieces' calls taken off."""
    count = stop - start
    left = sum(b - a for a, b in todo)
    per_block = sum(sampled.values()) / max(1, len(sampled))
    known = sum(len(f) for f in cached.values())
    lines = [PlanLine.of(COUNT_METHOD, count),
             PlanLine.of(METHOD, known + round(per_block * left),
                         estimated=left > len(sampled))]
    return Plan(lines, title=_title(start, stop)).minus_cached(
        {COUNT_METHOD: count - left, METHOD: known})


def _count_of(result: object) -> object:
    """An uncle count's answer as an int; anything but a hex quantity (a null, a malformed
    answer) as it is, for :func:`_checked` to raise."""
    if type(result) is str and result[:2] == "0x":
        with contextlib.suppress(ValueError):
            return int(result, 16)
    return result


def _uncle_count(answer: RpcResult) -> RpcResult:
    """A count's answer decoded as it arrives (an error answer stays as it is)."""
    if answer.error is not None:
        return answer
    return RpcResult(answer.call, result=_count_of(answer.result))


def _checked(number: int, count: object) -> int:
    """``count`` (as ``_uncle_count`` left it) if an int; else the error it stands for."""
    if type(count) is int:
        return count
    if count is None:
        raise MissingBlock(number)
    raise ProtocolError(f"{COUNT_METHOD} for block {number:,} answered {str(count)[:40]!r}, "
                        "not a hex quantity")


def _counts(numbers: Sequence[int], results: Sequence[RpcResult]) -> np.ndarray:
    """The uncle counts ``_uncle_count`` left of each answer (an error answer raises)."""
    out = np.empty(len(numbers), dtype=np.int64)
    for j, answer in enumerate(results):
        out[j] = _checked(numbers[j], answer.unwrap())
    return out


def _noted(answer: RpcResult) -> int | None:
    """The count a settled answer is noted as (``Notes``); None for anything else."""
    return answer.result if answer.error is None and type(answer.result) is int else None


def _extract(chunk: Chunk, params: Params
             ) -> Generator[Sequence[RpcCall], list[RpcResult], tuple[list[Any], list[Any]]]:
    """A piece's counts (those not known: the plan's sample, a stopped scan's notes), then
    its uncles; returns the (block, index) pairs wanted and the uncle objects answered."""
    a, b = chunk.start, chunk.stop
    given = cast(Mapping[int, int], params["known"])  # the sample, a cluster's context
    known = {**{n: given[n] for n in chunk.blocks if n in given}, **chunk.known}
    ask = [n for n in chunk.blocks if n not in known]
    answers = yield count_calls(ask)
    counts = np.zeros(b - a, dtype=np.int64)
    if answers:
        counts[np.asarray(ask, dtype=np.int64) - a] = _counts(ask, answers)
    for n, count in known.items():
        counts[n - a] = count
    where = np.flatnonzero(counts)
    wanted = [(a + int(j), i) for j in where for i in range(int(counts[j]))]
    found = yield calls(wanted)
    return wanted, [answer.unwrap() for answer in found]


def _transform(raw: tuple[list[Any], list[Any]], chunk: Chunk, params: Params) -> pd.DataFrame:
    wanted, objects = raw
    return parse_uncles([(n, i, u) for (n, i), u in zip(wanted, objects, strict=True)
                         if u is not None])  # fmt: skip


def _complete(raw: tuple[list[Any], list[Any]]) -> bool:
    """Not if a node answered null for an uncle its header lists: such a piece is not kept."""
    return all(u is not None for u in raw[1])


CHUNKS = Chunked("uncles", _extract, _transform, lambda params: parse_uncles([]), size=PIECE,
                 ahead=AHEAD, store=DATASET, reduce=_uncle_count, run=RUN,
                 run_seconds=NOTE_AFTER, notes=Notes(NOTES, _noted), complete=_complete,
                 cut_at_settled=True, bar_from=PIECE)


def plan(
    source: RpcSource, start: int, stop: int, *, sample: int = SAMPLE, budget: int | None = None,
    less_cached: bool = True,
) -> Plan:
    """What :func:`get` will cost, before it runs.

    The uncles are estimated from the uncle counts of ``sample`` blocks spread over those the
    cache does not hold yet (fetched and cached, for the scan to reuse).

    Parameters
    ----------
    budget : int, optional
        Refuse (``BudgetExceeded``) before the sample is bought if the scan's counts alone
        (the sample among them) would pass it, and after it if the whole plan would [credits].
    less_cached : bool, default True
        Leave out what the cache holds; False: the cost from scratch, the same on every run.
    """
    check_range(start, stop)
    return _plan_and_sample(source, start, stop, sample, budget, less_cached=less_cached)[0]


def _counts_alone(source: RpcSource, start: int, stop: int, budget: int | None) -> Budget | None:
    """The budget, checked against the scan's uncle counts alone before anything is sent."""
    cap = None if budget is None else Budget(budget)
    if cap is not None:
        cap.check(Plan([PlanLine.of(COUNT_METHOD, stop - start)]), source.credits)
    return cap


def _left(source: RpcSource, start: int, stop: int, sample: int, *, less_cached: bool = True
          ) -> tuple[Layout, list[int]]:
    """After the set-up round trip: the scan's pieces (cached ones looked up only if
    ``less_cached``) and the sample's block numbers among those left to fetch."""
    source.prepare()
    source.check_head(stop)
    laid = layout(CHUNKS, source, start, stop, less_cached=less_cached)
    return laid, _sample(laid.todo, sample)


def _plan_and_sample(source: RpcSource, start: int, stop: int, sample: int, budget: int | None,
                     *, less_cached: bool = True,
                     ) -> tuple[Plan, dict[int, int], Layout]:
    """The plan (its sample bought), the sampled uncle counts by number and the pieces."""
    cap = _counts_alone(source, start, stop, budget)
    laid, numbers = _left(source, start, stop, sample, less_cached=less_cached)
    with source.budgeted(cap):  # the sample charged like any request
        probe = source.results(count_calls(numbers), description="uncle counts",
                               progress=False) if numbers else []
    try:
        sampled = {n: _checked(n, _count_of(answer))
                   for n, answer in zip(numbers, probe, strict=True)}
    except MissingBlock as missing:
        raise source.missing(missing.number) from None
    result = _plan_of(start, stop, laid.todo, sampled, laid.cached)
    if cap is not None:
        cap.check(result)
    return result, sampled, laid


def plan_and_sample(source: RpcSource, start: int, stop: int, *, sample: int = SAMPLE,
                    budget: int | None = None) -> tuple[Plan, dict[int, int]]:  # fmt: skip
    """The scan's plan, its sample of ``sample`` uncle counts bought, and those counts
    by block number: what a caller that splits the scan (``feeslab.cluster``) hands each part
    as ``get(..., known_counts=)``, so that no count is bought twice.

    Raises
    ------
    BudgetExceeded
        Before the sample is bought, or after, when the plan would pass ``budget`` [credits].
    """
    result, sampled, _ = _plan_and_sample(source, start, stop, sample, budget)
    return result, sampled


def get(
    source: RpcSource,
    start: int,
    stop: int,
    *,
    budget: int | None = None,
    progress: bool | None = None,
    known_counts: Mapping[int, int] | None = None,
) -> UncleScan:
    """Every uncle included by blocks ``start`` .. ``stop - 1`` (like ``range``).

    Parameters
    ----------
    source : RpcSource
        The node (``lab.uncles`` reads era1 files too: ``feeslab.datasets.registry``).
    budget : int, optional
        Refuse (``BudgetExceeded``) before sending, the plan's sample included, if spending
        so far plus the plan would pass it [credits]. Without one the sample is not bought
        ahead: the scan reads the same counts and the plan is worked out from them.
    progress : bool, optional
        A progress bar on long fetches.
    known_counts : mapping of int to int, optional
        Uncle counts [uncles] of blocks already read elsewhere (a cluster job's plan sample):
        they are not asked for again.

    Returns
    -------
    UncleScan
        ``.uncles`` (one row per uncle), ``.blocks`` (uncle count per scanned block, zeros
        included) and ``.plan`` (the credits planned, less what the cache held).
    """
    check_range(start, stop)
    cap = None if budget is None else Budget(budget)
    if cap is not None:
        cap.check(0, source.credits)  # counts from what is spent already
    # only counts and frames outlive a piece: little left to collect after; every request,
    # the plan's sample included, charged against the budget before it goes
    with gc_paused(), source.budgeted(cap):
        if budget is not None:
            planned, known, laid = _plan_and_sample(source, start, stop, SAMPLE, budget)
            sampled = dict(known)
        else:
            laid, numbers = _left(source, start, stop, SAMPLE)
            known = _sample_cached(source, numbers)  # e.g. bought by plan_uncles before
            sampled = dict.fromkeys(numbers, 0) | known
        if known_counts:
            given = {n: int(c) for n, c in known_counts.items() if start <= n < stop}
            known, sampled = known | given, sampled | given
        if laid.cached:  # pieces kept as frames stand for their counts' and uncles' answers
            source.credits.record_cached(COUNT_METHOD, sum(b - a for a, b in laid.cached))
            source.credits.record_cached(METHOD, sum(len(f) for f in laid.cached.values()))
        uncles = run_chunks(CHUNKS, source, start, stop, {"known": known}, progress=progress,
                            laid=laid)  # fmt: skip
        if budget is None:  # the sample's counts, as the scan found them
            found = uncles["block_number"].value_counts()
            sampled = {n: known[n] if n in known else int(found.get(n, 0)) for n in sampled}
            planned = _plan_of(start, stop, laid.todo, sampled, laid.cached)
        counts = source.tag(uncle_scan_frame(np.arange(start, stop, dtype=np.int64), uncles))
        return UncleScan(uncles=uncles, blocks=counts, plan=planned)


def _sample_cached(source: RpcSource, numbers: Sequence[int]) -> dict[int, int]:
    """The sample's uncle counts the answer cache holds (none are asked for)."""
    cache = source.node.cache if numbers and source.node.caching else None
    if cache is None:
        return {}
    found = cache.get_many((c.method, c.params) for c in count_calls(numbers))
    return {n: c for n, c in zip(numbers, map(_count_of, found), strict=True)
            if type(c) is int}


def plan_parts(source: RpcSource, params: Params, cuts: Sequence[tuple[int, int]],
               budget: int | None) -> PartsPlan:  # fmt: skip
    """A cluster job's plan: the sample bought once, on the driver, each partition's share of
    the credits worked out from it, and the sampled counts, which each partition is handed
    (``known_counts``) so that no count is bought twice."""
    start, stop = BY_RANGE.span(params)
    whole, sampled = plan_and_sample(source, start, stop, budget=budget)
    per_block = (sum(line.credits for line in whole.lines if line.method != COUNT_METHOD)
                 / (stop - start))  # fmt: skip
    each = method_cost(COUNT_METHOD)
    credits = tuple(round(sum(1 for n in range(lo, hi) if n not in sampled) * each
                          + per_block * (hi - lo)) for lo, hi in cuts)  # fmt: skip
    return PartsPlan(whole, credits, sampled, bought=len(sampled) * each)


def _assemble(source: RpcSource, rows: pd.DataFrame, params: Params,
              planned: Plan) -> UncleScan:  # fmt: skip
    """The scan of every partition's (or era1 files') uncle rows."""
    uncles = source.tag(rows)
    numbers = np.arange(*BY_RANGE.span(params), dtype=np.int64)
    return UncleScan(uncles=uncles, blocks=source.tag(uncle_scan_frame(numbers, uncles)),
                     plan=planned)  # fmt: skip


def _written(scan: UncleScan, per_block: bool = False) -> pd.DataFrame:
    return scan.blocks if per_block else scan.uncles


DATASETS = (
    Dataset("uncles", get, plan=plan, cli="uncles", options=(
        START, STOP,
        Option(("--per-block",), "per_block", "one row per scanned block with its "
               "uncle_count instead", switch=True, written_only=True),
    ), summary="every uncle included by blocks --start .. --stop - 1", partitions=BY_RANGE,
            rows=lambda scan: scan.uncles, assemble=_assemble, plan_parts=plan_parts,
            context="known_counts", written=_written, bodies=True),
)

"""Blocks, fee history, storage and contract calls as cluster jobs (:mod:`feeslab.cluster.jobs`).

Each dataset is a small :class:`~feeslab.cluster.jobs.JobSpec`: its parameters, what one
partition costs (the dataset's own ``plan``), how a node job is cut, and how a partition is
computed (the dataset's own ``get`` over the partition's blocks). The runner
(:func:`~feeslab.cluster.jobs.run_job`) does the rest, the same for every dataset, and the
result is the frame one process gives, row for row, dtypes and ``attrs`` included.

==================  ==========================================  ============================
function            one process                                 a node job's partitions
==================  ==========================================  ============================
``blocks``          :func:`feeslab.datasets.blocks.get`         ``partition_blocks`` blocks
``fee_history``     :func:`feeslab.datasets.fee_history.get`    the same, in whole calls
``storage_series``  :func:`feeslab.datasets.storage.get`        ``partition_blocks`` of the
                                                                series' blocks
``call_series``     :func:`feeslab.datasets.calls.get`          the same
==================  ==========================================  ============================

Blocks and fee history read from era1 files too, a partition per file; storage and calls need
a node. The series are cut at block numbers (a partition holds the series' blocks of one
range, in the series' order), since their frames are sorted by block.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pandas as pd

from feeslab.cluster.jobs import JobResult, JobSpec, Partition, run_job
from feeslab.datasets import blocks as blocks_dataset
from feeslab.datasets import calls as calls_dataset
from feeslab.datasets import fee_history as fee_history_dataset
from feeslab.datasets import storage as storage_dataset
from feeslab.datasets._checks import address, block_number, check_range, is_archive
from feeslab.fetch.credits import Plan
from feeslab.fetch.node import quantity
from feeslab.frames import encode_call, function_spec
from feeslab.frames.calls import ZERO_ADDRESS

__all__ = [
    "BlocksJob",
    "CallsJob",
    "FeeHistoryJob",
    "StorageJob",
    "blocks",
    "call_series",
    "fee_history",
    "storage_series",
]

Abi = Sequence[Mapping[str, Any]]


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _check_head(source: Any, stop: int) -> None:
    """A range past the head is refused on the driver, as one process refuses it."""
    if not is_archive(source):
        source.check_head(stop)


@dataclass(frozen=True)
class _RangeJob(JobSpec):
    """A job over the blocks ``start`` .. ``stop - 1``."""

    start: int
    stop: int

    def __post_init__(self) -> None:
        check_range(self.start, self.stop)

    def span(self) -> Partition:
        return Partition(self.start, self.stop)


class _SeriesJob(JobSpec):
    """A job over a series of ``blocks`` (a tuple field of the subclass), cut by block."""

    blocks: tuple[int, ...]

    def span(self) -> Partition:
        return Partition(min(self.blocks), max(self.blocks) + 1, blocks=self.blocks)

    def cut(self, whole: Partition, size: int) -> list[Partition]:
        return _cut_series(whole, size)


@dataclass(frozen=True)
class BlocksJob(_RangeJob):
    """Block headers of ``start`` .. ``stop - 1`` (:func:`feeslab.datasets.blocks.get`)."""

    name: ClassVar[str] = "blocks"

    def plan(self, source: Any, part: Partition) -> Plan:
        _check_head(source, part.stop)
        return blocks_dataset.plan(source, part.start, part.stop)

    def compute(self, source: Any, part: Partition, context: Any) -> pd.DataFrame:
        return blocks_dataset.get(source, part.start, part.stop, progress=False)


@dataclass(frozen=True)
class FeeHistoryJob(_RangeJob):
    """Fee history of ``start`` .. ``stop - 1`` (:func:`feeslab.datasets.fee_history.get`).

    A node job's partitions are cut from ``stop`` down in whole calls (multiples of 1,024
    blocks, ``partition_blocks`` rounded up to one), so that they send the very calls one
    process sends.
    """

    percentiles: tuple[float, ...] = fee_history_dataset.PERCENTILES
    name: ClassVar[str] = "fee_history"

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "percentiles", tuple(self.percentiles))

    def key(self) -> str:
        return "percentiles=" + ",".join(repr(p) for p in self.percentiles)

    def plan(self, source: Any, part: Partition) -> Plan:
        _check_head(source, part.stop)
        return fee_history_dataset.plan(source, part.start, part.stop)

    def cut(self, whole: Partition, size: int) -> list[Partition]:
        calls = fee_history_dataset.MAX_BLOCKS
        size = -(-size // calls) * calls
        cuts = [*range(whole.stop, whole.start, -size), whole.start]
        return [Partition(lo, hi) for hi, lo in itertools.pairwise(cuts)][::-1]

    def compute(self, source: Any, part: Partition, context: Any) -> pd.DataFrame:
        return fee_history_dataset.get(source, part.start, part.stop,
                                       percentiles=self.percentiles, progress=False)  # fmt: skip


def _series(blocks: Sequence[int]) -> tuple[int, ...]:
    numbers = tuple(block_number(b) for b in blocks)
    if not numbers:
        raise ValueError("blocks is empty: a cluster job needs at least one block")
    return numbers


def _cut_series(whole: Partition, size: int) -> list[Partition]:
    """The series' distinct blocks, sorted, ``size`` a partition; each partition holds the
    series' blocks of its range in the series' order (repeats included, as one process
    sends them)."""
    assert whole.blocks is not None
    starts = sorted(set(whole.blocks))[::size]
    groups: list[list[int]] = [[] for _ in starts]
    for n in whole.blocks:
        groups[bisect.bisect_right(starts, n) - 1].append(n)
    return [Partition(lo, max(group) + 1, blocks=tuple(group))
            for lo, group in zip(starts, groups, strict=True)]  # fmt: skip


@dataclass(frozen=True)
class StorageJob(_SeriesJob):
    """The word at ``slot`` of ``address`` after each of ``blocks``
    (:func:`feeslab.datasets.storage.get`)."""

    address: str
    slot: int
    blocks: tuple[int, ...] = field(repr=False)
    name: ClassVar[str] = "storage"

    def __post_init__(self) -> None:
        address(self.address, "address")
        quantity(self.slot)  # a non-negative int, or a clear error
        object.__setattr__(self, "blocks", _series(self.blocks))

    def key(self) -> str:
        return _digest([self.address.lower(), self.slot, self.blocks])

    def plan(self, source: Any, part: Partition) -> Plan:
        # the workers read no cache: the plan is the cost from scratch
        return storage_dataset.plan(source, self.address, self.slot, part.blocks or (),
                                    less_cached=False)  # fmt: skip

    def compute(self, source: Any, part: Partition, context: Any) -> pd.DataFrame:
        return storage_dataset.get(source, self.address, self.slot, part.blocks or (),
                                   progress=False)  # fmt: skip


@dataclass(frozen=True)
class CallsJob(_SeriesJob):
    """``eth_call`` of one function at each of ``blocks``, decoded
    (:func:`feeslab.datasets.calls.get`; the arguments as there)."""

    to: str
    function: str | Mapping[str, Any]
    args: tuple[Any, ...]
    blocks: tuple[int, ...] = field(repr=False)
    sender: str = ZERO_ADDRESS
    returns: tuple[str, ...] | None = None
    abi: tuple[Mapping[str, Any], ...] | None = field(default=None, repr=False)
    name: ClassVar[str] = "calls"

    def __post_init__(self) -> None:
        for name in ("args", "returns", "abi"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, tuple(value))
        address(self.to, "to")
        address(self.sender, "sender")
        spec = function_spec(self.function, returns=self.returns, abi=self.abi)
        encode_call(spec, self.args)  # arguments that do not encode: refused here, not on workers
        object.__setattr__(self, "blocks", _series(self.blocks))

    def key(self) -> str:
        return _digest([self.to.lower(), self.function, self.args, self.sender.lower(),
                        self.returns, self.abi, self.blocks])  # fmt: skip

    def _options(self) -> dict[str, Any]:
        return {"sender": self.sender, "returns": self.returns, "abi": self.abi}

    def plan(self, source: Any, part: Partition) -> Plan:
        return calls_dataset.plan(source, self.to, self.function, self.args, part.blocks or (),
                                  less_cached=False, **self._options())  # fmt: skip

    def compute(self, source: Any, part: Partition, context: Any) -> pd.DataFrame:
        return calls_dataset.get(source, self.to, self.function, self.args, part.blocks or (),
                                 progress=False, **self._options())  # fmt: skip


# -- what the Lab calls ---------------------------------------------------------------------------


def blocks(source: Any, start: int, stop: int, *, client: Any, **options: Any) -> JobResult:
    """Block headers of ``start`` .. ``stop - 1`` on a dask cluster: ``.frame`` is
    :func:`feeslab.datasets.blocks.get`'s frame. ``options``: those of
    :func:`~feeslab.cluster.jobs.run_job` (``out``, ``budget``, ``progress``,
    ``partition_blocks``, ``keys``, ``planned``)."""
    return run_job(BlocksJob(start, stop), source, client=client, **options)


def fee_history(source: Any, start: int, stop: int, *, client: Any,
                percentiles: Sequence[float] = fee_history_dataset.PERCENTILES,
                **options: Any) -> JobResult:  # fmt: skip
    """Fee history of ``start`` .. ``stop - 1`` on a dask cluster: ``.frame`` is
    :func:`feeslab.datasets.fee_history.get`'s frame (a node job's partitions are whole
    calls: ``partition_blocks`` rounded up to a multiple of 1,024). ``options``: those of
    :func:`~feeslab.cluster.jobs.run_job`."""
    return run_job(FeeHistoryJob(start, stop, tuple(percentiles)), source, client=client,
                   **options)  # fmt: skip


def storage_series(source: Any, address: str, slot: int, blocks: Sequence[int], *,
                   client: Any, **options: Any) -> JobResult:  # fmt: skip
    """The word at ``slot`` of ``address`` after each of ``blocks`` on a dask cluster:
    ``.frame`` is :func:`feeslab.datasets.storage.get`'s frame. ``partition_blocks``: the
    series' blocks a partition; ``options``: those of :func:`~feeslab.cluster.jobs.run_job`.
    """
    return run_job(StorageJob(address, slot, tuple(blocks)), source, client=client, **options)


def call_series(source: Any, to: str, function: str | Mapping[str, Any], args: Sequence[Any],
                blocks: Sequence[int], *, client: Any, sender: str = ZERO_ADDRESS,
                returns: Sequence[str] | None = None, abi: Abi | None = None,
                **options: Any) -> JobResult:  # fmt: skip
    """``eth_call`` of one function at each of ``blocks`` on a dask cluster: ``.frame`` is
    :func:`feeslab.datasets.calls.get`'s frame (a revert in its row's ``error``; ``sender``,
    ``returns`` and ``abi`` as there). ``partition_blocks``: the series' blocks a partition;
    ``options``: those of :func:`~feeslab.cluster.jobs.run_job`."""
    spec = CallsJob(to, function, tuple(args), tuple(blocks), sender=sender,
                    returns=None if returns is None else tuple(returns),
                    abi=None if abi is None else tuple(abi))  # fmt: skip
    return run_job(spec, source, client=client, **options)

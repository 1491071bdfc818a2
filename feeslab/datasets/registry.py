"""Each dataset declared once: the :class:`Dataset` records that ``Lab``, ``feeslab fetch`` and
the cluster iterate, and the two ways any of them runs (:func:`get`, :func:`plan`).

A dataset module ends with its declaration(s)::

    DATASETS = (Dataset("blocks", get, plan=plan, cli="blocks", options=(START, STOP),
                        partitions=BY_RANGE, summary="block headers of --start .. --stop - 1"),)

and one line in :data:`feeslab.datasets.REGISTRY` adds it to ``Lab`` (a method named after it,
and ``plan_<name>``), to ``feeslab fetch`` (when it has a ``cli`` name) and to the cluster (when
it has ``partitions``). Which source serves it is the sources' business
(:mod:`feeslab.sources.base`): a source that holds the dataset's rows (era1 files, a folder
of partitions) is read; otherwise the dataset's own fetch asks the source for what it
``needs`` (a node's JSON-RPC, the Gas API).

Two checks and one join apply to every dataset alike, with no per-dataset branch:

- **History expiry (EIP-4444).** A dataset whose rows come from block bodies, uncles,
  receipts or logs (:attr:`Dataset.bodies`) is refused with ``HistoryPruned`` before any of
  its calls is sent when its range starts below the node's history cutoff (a node pruned as
  geth's ``--history.chain postmerge``). The source learns the cutoff once (a devnet says it;
  any other node is asked one small call, which :func:`plan` counts).
- **Joined sources.** On a :class:`~feeslab.sources.base.SplitSource` (era1 files beside a
  node) a dataset's range is cut where the source says, each part is run on its own source,
  and the rows are joined into one result, tagged with the source of each part.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import operator
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Self, SupportsIndex, TypeAlias, TypeGuard, TypeVar

import pandas as pd

from feeslab._hexbytes import is_address
from feeslab.errors import HistoryPruned
from feeslab.fetch.credits import Plan
from feeslab.sources.base import JSON_RPC, Source, SplitSource, require
from feeslab.sources.rpc import history_plan

__all__ = [
    "BY_RANGE",
    "BY_SERIES",
    "START",
    "STOP",
    "Dataset",
    "Option",
    "Partitioning",
    "PartsPlan",
    "Registry",
    "address_arg",
    "block_arg",
    "blocks_arg",
    "blocks_of",
    "get",
    "guarded_plan",
    "percentiles_arg",
    "plan",
    "rows",
]

#: A dataset's parameters by name (its fetch's bound arguments): handed on as they are
Params: TypeAlias = Mapping[str, object]

_Planned = TypeVar("_Planned")

FETCH_ONLY = frozenset({"budget"})  # what a source holding the rows is not asked


@dataclass(frozen=True)
class Option:
    """One ``feeslab fetch`` option of a dataset: argparse's ``flags`` and keywords, filling
    the parameter ``dest`` (``written_only``: it picks what is written, not what is fetched)."""

    flags: tuple[str, ...]
    dest: str
    help: str
    type: Callable[[str], object] | None = None
    required: bool = False
    default: object = None
    switch: bool = False  # a flag without a value (store_true)
    metavar: str | None = None
    written_only: bool = False

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """Add this option to ``parser``."""
        if self.switch:
            parser.add_argument(*self.flags, dest=self.dest, action="store_true", help=self.help)
            return
        parser.add_argument(*self.flags, dest=self.dest, type=self.type or str,
                            metavar=self.metavar, required=self.required, default=self.default,
                            help=self.help)  # fmt: skip


@dataclass(frozen=True)
class Partitioning:
    """How a cluster cuts a dataset's job.

    ``"range"``: blocks ``start`` .. ``stop - 1`` cut into ranges, each a multiple of
    ``align`` blocks counted from ``stop`` down when ``align`` > 1 (whole ``eth_feeHistory``
    calls, so the partitions send the very calls one process sends). ``"series"``: the
    ``blocks`` parameter, cut by block number (a partition holds the series' blocks of its
    range, in the series' order).
    """

    kind: Literal["range", "series"]
    align: int = 1

    def span(self, params: Params) -> tuple[int, int]:
        """The blocks the job covers, as (first, after the last)."""
        if self.kind == "range":
            return _block(params, "start"), _block(params, "stop")
        numbers = blocks_of(params["blocks"])
        if not len(numbers):
            raise ValueError("blocks is empty: a cluster job needs at least one block")
        return min(numbers), max(numbers) + 1

    def narrow(self, params: Params, start: int, stop: int,
               blocks: Sequence[int] | None) -> dict[str, object]:  # fmt: skip
        """``params`` of one partition."""
        if self.kind == "range":
            return {**params, "start": start, "stop": stop}
        return {**params, "blocks": tuple(blocks or ())}


def _block(params: Params, name: str) -> int:
    """Parameter ``name``, a block number (an int, numpy's included)."""
    value = params[name]
    if not isinstance(value, SupportsIndex):
        raise TypeError(f"{name} must be a block number (int), not {type(value).__name__}")
    return operator.index(value)


def blocks_of(numbers: object) -> list[int]:
    """The ``blocks`` parameter (a range, a sequence or an array of block numbers) as ints."""
    if not isinstance(numbers, Iterable):
        raise TypeError(f"blocks must be block numbers, not {type(numbers).__name__}")
    out = []
    for number in numbers:
        if not isinstance(number, SupportsIndex):
            raise TypeError(f"blocks must be block numbers (int), not {type(number).__name__}")
        out.append(operator.index(number))
    return out


BY_RANGE = Partitioning("range")
BY_SERIES = Partitioning("series")


@dataclass(frozen=True)
class PartsPlan:
    """A cluster job's plan made by the dataset itself (``Dataset.plan_parts``).

    Attributes
    ----------
    plan : Plan
        The whole job's credits, as one process would pay them.
    credits : tuple of int
        Each partition's share [credits].
    context : mapping of int to object
        What planning learnt, by block number (an uncle scan's sampled counts): each
        partition is handed its range's part as the dataset's ``context`` parameter.
    bought : int
        Credits spent while planning, which the workers do not spend again [credits].
    """

    plan: Plan
    credits: tuple[int, ...]
    context: Mapping[int, object] = field(default_factory=dict)
    bought: int = 0


def _identity(frame: pd.DataFrame) -> pd.DataFrame:
    return frame


@dataclass(frozen=True)
class Dataset:
    """One dataset, declared once.

    Parameters
    ----------
    name : str
        The registry's key and the ``Lab`` method's name (``lab.blocks``).
    fetch : callable
        ``fetch(source, *params, budget=, progress=)``: the dataset's own fetch from a source
        offering one of ``needs``; its signature is the ``Lab`` method's and its docstring the
        method's help.
    plan : callable, optional
        ``plan(source, *params)``: what ``fetch`` costs before anything is sent [credits]
        (``lab.plan_<name>``).
    needs : tuple of str
        What ``fetch`` asks of its source (``feeslab.sources.base``).
    summary : str
        One line for ``feeslab fetch --help``.
    cli : str, optional
        ``feeslab fetch`` KIND, with ``options``.
    partitions : Partitioning, optional
        How a cluster cuts it (``client=``); None: one process only.
    rows : callable
        The rows a partition writes from ``fetch``'s result (default: the result, a frame).
    assemble : callable, optional
        ``assemble(source, rows, params, plan)``: the result from the rows of every partition
        (or of a source holding them); default the rows.
    plan_parts : callable, optional
        ``plan_parts(source, params, cuts, budget) -> PartsPlan``: a cluster plan that cannot
        be each partition's ``plan`` (an uncle scan's sample, bought once).
    context : str, optional
        The ``fetch`` parameter a partition's share of ``PartsPlan.context`` is passed as.
    written : callable
        What ``feeslab fetch`` writes of the result, given the ``written_only`` options.
    bodies : bool or callable, default False
        Whether ``fetch`` reads block bodies, uncles, receipts or logs (``eth_getBlockBy*``,
        ``eth_getUncle*``, ``eth_getBlockReceipts``, ``eth_getLogs``), which a node with
        expired history (EIP-4444) no longer serves below its cutoff: such a dataset's range
        is checked against the cutoff before anything is sent. A callable decides from the
        parameters (``eth_feeHistory`` reads bodies and receipts only for reward
        percentiles). Headers by ``eth_getHeaderByNumber``, state and calls stay served.
    """

    name: str
    fetch: Callable[..., object]
    plan: Callable[..., Plan] | None = None
    needs: tuple[str, ...] = (JSON_RPC,)
    summary: str = ""
    cli: str | None = None
    options: tuple[Option, ...] = ()
    partitions: Partitioning | None = None
    rows: Callable[[Any], pd.DataFrame] = _identity
    assemble: Callable[..., object] | None = None
    plan_parts: Callable[..., PartsPlan] | None = None
    context: str | None = None
    written: Callable[..., pd.DataFrame] = _identity
    bodies: bool | Callable[[Params], bool] = False

    def reads_bodies(self, params: Params) -> bool:
        """Whether the dataset needs what history expiry drops (see ``bodies``)."""
        return bool(self.bodies(params)) if callable(self.bodies) else self.bodies

    def takes(self, parameter: str) -> bool:
        """Whether ``fetch`` has ``parameter``."""
        return parameter in inspect.signature(self.fetch).parameters

    def signature(self) -> inspect.Signature:
        """The ``Lab`` method's signature (``lab.<name>``), annotations evaluated: ``fetch``'s
        parameters less the source and ``context`` (which a cluster fills), then, with
        ``partitions``, ``Lab.fetch``'s keyword-only ``client``, ``out`` and ``keys``
        (``typing.Self``: the Lab), and ``fetch``'s return annotation."""
        signature = inspect.signature(self.fetch, eval_str=True)
        params = [p for p in list(signature.parameters.values())[1:] if p.name != self.context]
        if self.partitions is not None:  # Lab.fetch's: a run on a dask cluster
            keyword = inspect.Parameter.KEYWORD_ONLY
            params += [
                inspect.Parameter("client", keyword, default=None, annotation=object),
                inspect.Parameter("out", keyword, default=None,
                                  annotation=str | os.PathLike[str] | None),
                inspect.Parameter("keys", keyword, default=(),
                                  annotation=Sequence[Self]),  # Labs of other API keys
            ]
        return signature.replace(parameters=params)

    def plan_signature(self) -> inspect.Signature | None:
        """``lab.plan_<name>``'s signature, annotations evaluated: ``plan``'s parameters less
        the source, returning a ``Plan``; None without a plan."""
        if self.plan is None:
            return None
        signature = inspect.signature(self.plan, eval_str=True)
        return signature.replace(parameters=list(signature.parameters.values())[1:])

    def bind(self, *args: object, **kwargs: object) -> dict[str, object]:
        """``fetch``'s parameters from a call's arguments (defaults applied), without the
        source: a TypeError names a wrong or missing one, as the function would."""
        bound = inspect.signature(self.fetch).bind(None, *args, **kwargs)
        bound.apply_defaults()
        params = dict(bound.arguments)
        params.pop(next(iter(params)))  # the source
        return params


def _accepted(function: Callable[..., object], params: Params) -> dict[str, object]:
    """The items of ``params`` that ``function`` takes."""
    names = inspect.signature(function).parameters
    return {k: v for k, v in params.items() if k in names}


def holds(source: Source, dataset: Dataset) -> bool:
    """Whether ``source`` holds ``dataset``'s rows (is read, not asked)."""
    return dataset.name in source.offers()


def get(dataset: Dataset, source: Source, params: Params) -> object:
    """``dataset`` of ``params`` from ``source``: read where the source holds its rows,
    else fetched by the dataset from what the source offers (``SourceMismatch`` if neither);
    on a source of several, each part from its own and joined.

    Raises
    ------
    HistoryPruned
        Before anything is sent, when the dataset reads bodies (``Dataset.bodies``) of blocks
        below the node's history cutoff (EIP-4444).
    """
    return _get(dataset, source, params, check=True)


def _get(dataset: Dataset, source: Source, params: Params, *, check: bool) -> object:
    if _splits(source):
        return _joined(dataset, source, params, check=check)
    if holds(source, dataset):
        return assemble(dataset, source, _read(dataset, source, params), params,
                        Plan([], title=_title(dataset, source)))  # fmt: skip
    require(source, dataset.needs, f"the {dataset.name} dataset")
    try:
        with _history_guard(dataset, source, params) if check else contextlib.nullcontext():
            return dataset.fetch(source, **params)
    except HistoryPruned as pruned:  # a 4444 met on the way: it names the range asked
        span = _span(dataset, params)
        if span is not None:
            pruned.asked(*span, method=dataset.name)
        raise


def rows(dataset: Dataset, source: Source, params: Params) -> pd.DataFrame:
    """``dataset``'s rows of ``params`` (a partition's: what :func:`assemble` takes). The
    history cutoff is not checked again: the job's plan checked the whole range."""
    if holds(source, dataset) and not _splits(source):
        return _read(dataset, source, params)
    return dataset.rows(_get(dataset, source, params, check=False))


def _splits(source: Source) -> TypeGuard[SplitSource]:
    """Whether ``source`` is made of others (``SplitSource``: ``source.composite``)."""
    return source.composite


def _span(dataset: Dataset, params: Params) -> tuple[int, int] | None:
    """The blocks a call of ``dataset`` covers, (first, after the last), when it says."""
    if dataset.partitions is not None:
        return dataset.partitions.span(params)
    if "start" in params and "stop" in params:
        return _block(params, "start"), _block(params, "stop")
    return None


def _history_guard(dataset: Dataset, source: Source, params: Params, *,
                   at_exit: bool = False) -> contextlib.AbstractContextManager[None]:  # fmt: skip
    """A dataset reading bodies is refused (``HistoryPruned``) below the node's cutoff once
    its fetch sets up or enters its budget (``RpcSource.guard_history``): after a budget's
    refusal, which sends nothing, and before any call of its own."""
    span = _span(dataset, params)
    if span is None or not dataset.reads_bodies(params):
        return contextlib.nullcontext()
    return source.guard_history(*span, dataset.name, at_exit=at_exit)


def guarded_plan(dataset: Dataset, source: Source, params: Params,
                 make: Callable[[], _Planned]) -> tuple[_Planned, Plan]:  # fmt: skip
    """``make()`` (a plan, in process or a job's) under the one cutoff check (EIP-4444): a
    range below a pruned node's history raises ``HistoryPruned`` before anything is bought.
    Returns what ``make`` made and the plan of the probe the check sent (empty if none)."""
    probes = source.history_probes
    with _history_guard(dataset, source, params, at_exit=True):
        made = make()
    return made, history_plan(source.history_probes - probes)


def _joined(dataset: Dataset, source: SplitSource, params: Params, *,
            check: bool) -> object:  # fmt: skip
    """``dataset`` of ``params`` on a source of several: each part on its own source, the
    rows joined in block order, assembled and tagged by the joined source."""
    span = _span(dataset, params)
    ranged = dataset.partitions is not None and dataset.partitions.kind == "range"
    parts = source.split(dataset.name, span if ranged else None)
    if len(parts) == 1 and parts[0][1] == (span if ranged else None):
        return _get(dataset, parts[0][0], params, check=check)  # one source for all of it
    assert dataset.partitions is not None
    if params.get("progress", False) is None:  # the files show bars as the node's client does
        params = {**params, "progress": source.progress}
    frames, plans = [], []
    for part, (first, stop) in parts:
        result = _get(dataset, part, dataset.partitions.narrow(params, first, stop, None),
                      check=check)  # fmt: skip
        frames.append(dataset.rows(result))
        planned = getattr(result, "plan", None)
        if isinstance(planned, Plan):
            plans.append(planned)
    kept = [f for f in frames if len(f)] or frames[:1]
    joined = kept[0].copy(deep=False) if len(kept) == 1 else pd.concat(kept, ignore_index=True)
    joined.attrs = {}  # the joined source says where the rows come from, not one part
    title = f"{dataset.name} from " + " and ".join(p.label for p, _ in parts)
    whole = sum(plans, Plan([], title=title))
    whole.title = title
    result = assemble(dataset, source, joined, params, whole)
    if isinstance(result, pd.DataFrame):
        source.tag(result)
    return result


def _read(dataset: Dataset, source: Source, params: Params) -> pd.DataFrame:
    wanted = {k: v for k, v in params.items() if k not in FETCH_ONLY and k != dataset.context}
    return source.read(dataset.name, **wanted)


def plan(dataset: Dataset, source: Source, params: Params) -> Plan:
    """What :func:`get` of the same arguments costs [credits]: nothing where the source holds
    the rows; on a source of several, the parts' plans added up.

    Raises
    ------
    HistoryPruned
        Before anything of the dataset is sent (the node's cutoff learnt first, in one small
        call that the plan counts), when it reads bodies below the node's history cutoff.
    """
    if _splits(source):
        span = _span(dataset, params)
        ranged = dataset.partitions is not None and dataset.partitions.kind == "range"
        parts = source.split(dataset.name, span if ranged else None)
        if len(parts) == 1 and parts[0][1] == (span if ranged else None):
            return plan(dataset, parts[0][0], params)
        assert dataset.partitions is not None
        title = f"{dataset.name} from " + " and ".join(p.label for p, _ in parts)
        whole = Plan([], title=title)
        for part, (first, stop) in parts:
            whole = whole + plan(dataset, part, dataset.partitions.narrow(params, first, stop,
                                                                          None))  # fmt: skip
        whole.title = title
        return whole
    if holds(source, dataset):
        return Plan([], title=_title(dataset, source))
    if dataset.plan is None:
        raise TypeError(f"the {dataset.name} dataset has no plan")
    require(source, dataset.needs, f"the {dataset.name} dataset")
    fetch_plan = dataset.plan
    planned, spent = guarded_plan(dataset, source, params,
                                  lambda: fetch_plan(source, **_accepted(fetch_plan, params)))
    if not spent.lines:
        return planned
    with_probe = planned + spent  # the probe is spent: the plan says what it cost
    with_probe.title = planned.title
    return with_probe


def assemble(dataset: Dataset, source: Source, rows: pd.DataFrame, params: Params,
             planned: Plan) -> object:  # fmt: skip
    """The result of ``rows`` (every partition's, or a source's)."""
    if dataset.assemble is None:
        return rows
    return dataset.assemble(source, rows, params, planned)


def _title(dataset: Dataset, source: Source) -> str:
    return f"{dataset.name} read from {source.label} (no credits)"


class Registry(Mapping[str, Dataset]):
    """The datasets by name, in declaration order."""

    def __init__(self, datasets: Sequence[Dataset]) -> None:
        self._by_name: dict[str, Dataset] = {}
        for dataset in datasets:
            if dataset.name in self._by_name:
                raise ValueError(f"two datasets named {dataset.name!r}")
            self._by_name[dataset.name] = dataset

    def __getitem__(self, name: str) -> Dataset:
        try:
            return self._by_name[name]
        except KeyError:
            known = ", ".join(self._by_name)
            raise KeyError(f"no dataset {name!r}: the datasets are {known}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def register(self, *datasets: Dataset) -> None:
        """Add ``datasets`` (a module's ``DATASETS``): ``Lab``, ``feeslab fetch`` and the
        cluster reach them as they reach the shipped ones. The same declaration again is a
        no-op; another dataset of a name taken is refused (ValueError)."""
        for dataset in datasets:
            known = self._by_name.get(dataset.name)
            if known is not None and known != dataset:
                raise ValueError(f"two datasets named {dataset.name!r}")
            self._by_name[dataset.name] = dataset

    def on_command_line(self) -> list[Dataset]:
        """The datasets ``feeslab fetch`` offers."""
        return [d for d in self._by_name.values() if d.cli is not None]


# -- command-line values the datasets share ------------------------------------------------------


def blocks_arg(text: str) -> range:
    """``A:B[:STEP]`` as ``range(A, B, STEP)``; ``argparse.ArgumentTypeError`` otherwise."""
    parts = text.strip().split(":")
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        numbers = []
    if len(numbers) not in (2, 3) or any(n < 0 for n in numbers):
        raise argparse.ArgumentTypeError(
            f"must be A:B or A:B:STEP (non-negative ints), not {text!r}")
    start, stop, step = (*numbers, 1)[:3]
    if step <= 0:
        raise argparse.ArgumentTypeError(f"step must be positive, not {step}")
    if stop <= start:
        raise argparse.ArgumentTypeError(f"{text}: B ({stop}) must be greater than A ({start})")
    return range(start, stop, step)


def percentiles_arg(text: str) -> tuple[float, ...]:
    """Percentiles separated by commas, rising from 0 to 100."""
    try:
        values = tuple(float(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be numbers separated by commas, not {text!r}") from None
    if any(not 0 <= p <= 100 for p in values) or list(values) != sorted(values):
        raise argparse.ArgumentTypeError(f"must rise from 0 to 100, not {text!r}")
    return values


def address_arg(text: str) -> str:
    """0x and 40 hex digits."""
    if not is_address(text):
        raise argparse.ArgumentTypeError(f"must be 0x followed by 40 hex digits, not {text!r}")
    return text


def block_arg(text: str) -> int:
    """A non-negative int, decimal or 0x hex."""
    try:
        value = int(text, 0)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, not {text!r}")
    return value


START = Option(("--start",), "start", "first block", type=block_arg, required=True)
STOP = Option(("--stop",), "stop", "block after the last, as in range()", type=block_arg,
              required=True)  # fmt: skip

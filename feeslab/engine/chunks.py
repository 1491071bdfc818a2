"""What a dataset declares to the engine: how one chunk of blocks is read and becomes rows.

A chunked dataset is two functions and a few numbers (cryo's ``CollectByBlock``, in Python)::

    def extract(chunk, params):          # the calls for blocks chunk.start .. chunk.stop - 1
        return [RpcCall("eth_getBlockByNumber", [quantity(n), False]) for n in chunk.blocks]

    def transform(answers, chunk, params):  # their answers -> the chunk's rows
        return parse_blocks([a.unwrap() for a in answers])

    CHUNKS = Chunked("blocks", extract, transform, empty=..., size=1_000, ahead=4)

``extract`` may also be a generator, for a dataset whose later calls depend on earlier
answers (an uncle scan asks for uncles only where the counts say there are some): it yields
lists of calls, is sent each list's answers, and returns what ``transform`` takes::

    def extract(chunk, params):
        counts = yield count_calls(chunk.blocks)
        uncles = yield uncle_calls(counts)
        return uncles

Everything else is the engine's (:mod:`feeslab.engine.run`): chunking, what the cache holds,
the budget, the progress bar, how many chunks are in flight, writing settled chunks to the
cache on its one writing thread, and joining the chunks into one frame. A dataset module holds
no thread, file, progress bar or budget check.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

import pandas as pd

from feeslab.fetch.transport import RpcCall, RpcResult

__all__ = ["Chunk", "Chunked", "Extracted", "MissingBlock", "Notes", "Params", "Reduce",
           "aligned_chunks"]

#: A dataset's parameters by name, as its declaration takes them
Params: TypeAlias = Mapping[str, Any]
#: What ``extract`` gives: the chunk's calls, or a generator of call lists (see the module)
Extracted: TypeAlias = Sequence[RpcCall] | Generator[Sequence[RpcCall], list[RpcResult], Any]
#: An answer replaced by what is kept of it as it arrives (a header slimmed to its fee fields)
Reduce: TypeAlias = Callable[[RpcResult], RpcResult]


def aligned_chunks(start: int, stop: int, size: int) -> list[tuple[int, int]]:
    """``start`` .. ``stop - 1`` cut at the multiples of ``size``: a whole chunk is cached under
    its own name, so any later range that holds it reads it back."""
    first = start - start % size
    return [(max(start, a), min(stop, a + size)) for a in range(first, stop, size)]


@dataclass(frozen=True)
class Chunk:
    """Blocks ``start`` .. ``stop - 1`` of a fetch, as ``extract`` and ``transform`` get them.

    ``known``: first-stage answers an earlier run noted before it stopped (:class:`Notes`), by
    block number: not to be asked again."""

    start: int
    stop: int
    known: Mapping[int, int] = field(default_factory=dict)

    @property
    def blocks(self) -> range:
        """The chunk's block numbers."""
        return range(self.start, self.stop)


@dataclass(frozen=True)
class Notes:
    """A staged extract's first-stage answers kept while its chunk is in flight, so that a run
    stopped (out of credits, killed) before the chunk completes does not buy them again.

    Parameters
    ----------
    store : str
        The cache's name for the notes (``"uncle_counts/v1"``).
    value : callable
        ``value(answer) -> int | None``: the integer a first-stage answer is noted as (one a
        block: ``NodeClient.block_of`` its call); None: not noted (an error, a malformed
        answer, which the extract raises).
    """

    store: str
    value: Callable[[RpcResult], int | None]


@dataclass(frozen=True)
class Chunked:
    """How a dataset over a range of blocks reads one chunk, declared once.

    Parameters
    ----------
    name : str
        The dataset's name (the progress bar's label).
    extract : callable
        ``extract(chunk, params)``: the calls for the :class:`Chunk`'s blocks, or a generator
        of call lists (see the module). A block the node lacks raises :class:`MissingBlock`.
    transform : callable
        ``transform(raw, chunk, params) -> DataFrame``: the chunk's rows from the answers (or
        what the generator returned).
    empty : callable
        ``empty(params)``: the frame with no rows, its columns and dtypes.
    size : int
        Blocks a chunk [blocks], at multiples of it.
    ahead : int
        Chunks in flight at once.
    store : str or callable, optional
        The cache's name for settled chunks' rows (``"transactions/v1"``: bump the version
        when the rows change), or ``store(params)`` giving it for the parameters that change
        the rows (fee history's percentiles); None: rows are not kept (the answers may be). A
        later fetch of any range reads back the chunks a kept file covers.
    run : int
        Consecutive chunks kept at most in one file; a run is written when it is full, when
        it is ``run_seconds`` old, at a gap and at the end (one file a chunk made a fast first
        scan 1.16x slower). 1: each chunk written as it completes.
    run_seconds : float
        How long a run, or a chunk in flight with notes, is held before it is written [s].
    notes : Notes, optional
        Keep a staged extract's first-stage answers of chunks in flight (see :class:`Notes`).
    complete : callable, optional
        ``complete(raw) -> bool``: whether a chunk's rows may be kept (a node answered null
        for an uncle its header lists: not kept); default always.
    cut_at_settled : bool
        Cut a chunk where settled blocks end, so that the settled part is kept (it asks the
        node's head first).
    from_stop : bool
        Chunks counted from the range's stop down (``stop - size``, ``stop - 2 * size``, ...)
        rather than at multiples of ``size``: fee history's calls each end at their newest
        block, so a range's calls are the same whatever cuts it.
    reduce : callable, optional
        Applied to each answer as it arrives (``NodeClient.submit``'s ``reduce``).
    cached_answers : bool
        Whether the calls go through the answer cache (each answer kept), as headers do,
        rather than past it (rows kept per chunk, ``store``).
    unit : str
        What the progress bar counts (``"block"``).
    bar_from : int
        Blocks to fetch from which a bar is shown [blocks].
    """

    name: str
    extract: Callable[[Chunk, Params], Extracted]
    transform: Callable[[Any, Chunk, Params], pd.DataFrame]
    empty: Callable[[Params], pd.DataFrame]
    size: int
    ahead: int = 4
    store: str | Callable[[Params], str] | None = None
    reduce: Reduce | None = None
    cached_answers: bool = False
    unit: str = "block"
    bar_from: int = 64
    run: int = 1
    run_seconds: float = 1.0
    notes: Notes | None = None
    complete: Callable[[Any], bool] | None = None
    cut_at_settled: bool = False
    from_stop: bool = False

    @property
    def store_name(self) -> str | None:
        """The cache's name for the rows, once :meth:`bound` to the parameters."""
        if callable(self.store):
            raise TypeError(f"the {self.name} declaration is not bound to its parameters")
        return self.store

    def bound(self, params: Params) -> Chunked:
        """This declaration with its store named for ``params``."""
        if callable(self.store):
            return replace(self, store=self.store(params))
        return self


class MissingBlock(LookupError):
    """A node answered null for a block of the chunk (raised by ``extract`` or
    ``transform``; the engine turns it into the source's error, naming the head)."""

    def __init__(self, number: int) -> None:
        super().__init__(number)
        self.number = number

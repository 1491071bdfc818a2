"""Archive files and a node as one source: old blocks from the files, the rest from the node.

Since July 2025 nodes may expire the history before the merge (EIP-4444: geth's
``--history.chain postmerge``): they keep every header but answer a call for an old block's
body, uncles, receipts or logs with JSON-RPC error 4444. That history lives on in era1 files.
:class:`CombinedSource` reads the blocks the files hold from them (zero credits) and the
others from the node, cutting a dataset's range at the archive's end
(``connect(..., era1=DIR)`` beside a node)::

    lab = feeslab.connect(url=..., api_key=..., era1="~/era1/")
    scan = lab.uncles(150_000, 170_000)   # 150,000-164,999 from the files, the rest the node's

The registry (``feeslab.datasets.registry``) asks :meth:`CombinedSource.split` how to cut a
dataset's range, runs each part on its source, and joins the rows into one frame, tagged by
:meth:`CombinedSource.tag`: its ``attrs`` say the node's chain and label as a node's frames
do, and ``attrs["sources"]`` which blocks each source gave (``{"era1": [first, last],
"devnet": [first, last]}``). Datasets the files do not hold go to the node whole.

The archive may be of several formats, across the merge: era1 files below it, Ere
(``feeslab.sources.ere.EreSource``) or the beacon chain's Era files
(``feeslab.sources.era.EraSource``) above it, each format taking the blocks its files hold
that the formats before it did not, and the node (if any) what no file holds::

    lab = feeslab.connect(era1="~/era1/", ere="~/ere/")  # no node: one frame from the files
    lab.blocks(15_000_000, 16_000_000)                   # era1 below the merge, Ere above

References
----------
.. [1] EIP-4444, "Bound Historical Data in Execution Clients".
.. [2] The era1 format: ethereum/go-ethereum internal/era (``era1`` e2store files).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from feeslab.errors import ConfigError
from feeslab.sources.base import Source, SourceBase, SourceMismatch

if TYPE_CHECKING:
    from feeslab.protocol.chainspec import ChainSpec
    from feeslab.sources.rpc import RpcSource

__all__ = ["CombinedSource", "file_source"]


class CombinedSource(SourceBase):
    """Archive files (era1 below the merge, Ere or Era above it) and a node, as one source.

    Parameters
    ----------
    archive : file source or a sequence of them
        The files, in the order they are preferred where two hold the same block (era1 files
        first, then Ere or Era files): each has ``ranges()``, ``offers()``, ``read(dataset,
        **parameters)`` (``feeslab.sources.era1.Era1Source``, ``feeslab.sources.ere.EreSource``,
        ``feeslab.sources.era.EraSource``).
    node : RpcSource, optional
        The node (``feeslab.sources.rpc.RpcSource``): the datasets no file holds, the blocks
        past the files, and the frames' chain. Without one, the files are the whole source: a
        block no file holds raises the format's error naming it.

    Attributes
    ----------
    archives : tuple
        The files' sources, in order of preference.
    archive
        The first of them.
    node_source : RpcSource or None
        As given. Any other attribute is the node's (``source.credits``, ``source.gas``, ...),
        so that a ``Lab`` on both reaches the node as a ``Lab`` on the node does.
    """

    def __init__(self, archive: Any, node: RpcSource | None = None) -> None:
        archives = tuple(archive) if isinstance(archive, list | tuple) else (archive,)
        if not archives:
            raise ConfigError("a CombinedSource needs archive files")
        self.archives = archives
        self.archive = archives[0]
        self.node_source = node
        self._checked = False
        self._dataset = "blocks"  # the last dataset split: whose cuts tag() names

    def __repr__(self) -> str:
        parts = [repr(a) for a in self.archives]
        if self.node_source is not None:
            parts.append(repr(self.node_source))
        return f"<CombinedSource {' + '.join(parts)}>"

    def __getattr__(self, name: str) -> Any:
        # only called for what this class lacks: the node's client, ledger, head, ...
        if name.startswith("__") or name in ("archive", "archives", "node_source", "_checked",
                                             "_dataset"):
            raise AttributeError(name)
        if self.node_source is None:
            raise AttributeError(f"{self!r} has no node: no {name}")
        return getattr(self.node_source, name)

    composite = True  # the registry runs each part on its own source and joins the rows

    @property
    def credits(self) -> Any:
        """The node's ledger; files alone spend nothing (an empty ledger)."""
        if self.node_source is not None:
            return self.node_source.credits
        from feeslab.fetch.credits import CreditLedger

        if "_ledger" not in self.__dict__:
            self.__dict__["_ledger"] = CreditLedger()
        return self.__dict__["_ledger"]

    @property
    def progress(self) -> bool | None:
        """The node's setting: the files show bars as the node's client does."""
        return None if self.node_source is None else self.node_source.progress

    @property
    def identity(self) -> str:
        """The node's chain, else the files' labels."""
        if self.node_source is not None:
            return self.node_source.identity
        return "+".join(str(a.identity) for a in self.archives)

    def rpc(self) -> RpcSource | None:
        """The node beside the files (None: files alone)."""
        return self.node_source

    @property
    def history_probes(self) -> int:  # type: ignore[override]
        """The node's probes of its history cutoff."""
        return 0 if self.node_source is None else self.node_source.history_probes

    def guard_history(
        self, first: int, stop: int, what: str = "", *, at_exit: bool = False
    ) -> contextlib.AbstractContextManager[None]:
        """The node's cutoff check (the files hold what lies below it)."""
        if self.node_source is None:
            return contextlib.nullcontext()
        return self.node_source.guard_history(first, stop, what, at_exit=at_exit)

    @property
    def label(self) -> str:
        """The node's label: the frames are of its chain (``attrs["sources"]`` says more);
        files alone: their labels joined (``"era1+ere"``)."""
        if self.node_source is not None:
            return str(self.node_source.label)
        return "+".join(str(a.label) for a in self.archives)

    @property
    def chain_spec(self) -> ChainSpec | None:
        """The node's chain's spec, else the files'."""
        if self.node_source is not None:
            return self.node_source.chain_spec
        spec: ChainSpec | None = self.archive.chain_spec
        return spec

    def offers(self) -> frozenset[str]:
        """What the node offers, and the datasets the files hold."""
        offered = frozenset() if self.node_source is None else frozenset(self.node_source.offers())
        for archive in self.archives:
            offered |= frozenset(archive.offers())
        return offered

    def archive_span(self) -> tuple[int, int]:
        """The blocks the files hold: (first, block after the last), over every archive."""
        ranges = [r for a in self.archives for r in a.ranges()]
        if not ranges:
            raise ConfigError(f"{self!r} holds no archive file")
        return min(r[0] for r in ranges), max(r[1] for r in ranges)

    def _check_chain(self) -> None:
        """The files and the node must be of one chain at one set of heights (mainnet's
        files beside a devnet would mix two histories in one frame)."""
        if self._checked:
            return
        specs = [(str(a.label), a.chain_spec) for a in self.archives]
        if self.node_source is not None:
            specs.append(("node", self.node_source.chain_spec))
        label, first = specs[0]
        for other, spec in specs[1:]:
            if spec is None or spec.label != first.label:
                theirs = "an unknown chain" if spec is None else spec.label
                what = "the node serves" if other == "node" else f"the {other} files hold"
                raise ConfigError(f"the {label} files hold {first.label} but {what} "
                                  f"{theirs}: one frame cannot join the two")  # fmt: skip
        self._checked = True

    def _cuts(self, dataset: str, first: int, stop: int) -> list[tuple[int, int, Any]]:
        """(first, stop, source) of each run of blocks, in block order: each archive (in
        order of preference) takes the blocks its files hold that none before it took; the
        node the rest (without one, :class:`SourceMismatch` names the first blocks no file
        holds)."""
        free = [(first, stop)]
        taken: list[tuple[int, int, Any]] = []
        for archive in self.archives:
            if dataset not in archive.offers():
                continue
            for lo, hi, _ in archive.ranges():
                left = []
                for a, b in free:
                    x, y = max(a, lo), min(b, hi)
                    if x >= y:
                        left.append((a, b))
                        continue
                    taken.append((x, y, archive))
                    left += [(u, v) for u, v in ((a, x), (y, b)) if u < v]
                free = left
        if free and self.node_source is None:
            a, b = min(free)
            held = " or ".join(str(h.label) for h in self.archives if dataset in h.offers())
            raise SourceMismatch(f"blocks {a:,} .. {b - 1:,} of {dataset} are in no {held} "
                                 "file, and no node is given to ask (pass url=, rpc_url= or "
                                 "api_key= beside the files)")  # fmt: skip
        cuts = sorted(taken + [(a, b, self.node_source) for a, b in free], key=lambda c: c[0])
        joined: list[tuple[int, int, Any]] = []
        for a, b, source in cuts:  # one part per source per run
            if joined and joined[-1][2] is source and joined[-1][1] == a:
                joined[-1] = (joined[-1][0], b, source)
            else:
                joined.append((a, b, source))
        return joined

    def split(self, dataset: str, span: tuple[int, int] | None) -> list[tuple[Source, Any]]:
        """Where each part of ``dataset`` over blocks ``span`` (first, stop) comes from:
        ``(source, (first, stop))`` in block order; the node for all of a dataset no file
        holds, or with no range (``span`` None), given back as ``(node, span)``."""
        holders = [a for a in self.archives if dataset in a.offers()]
        self._dataset = dataset  # the registry tags the joined rows next
        if span is None or not holders:
            return [(self.node_source if self.node_source is not None else self.archive, span)]
        self._check_chain()
        return [(source, (a, b)) for a, b, source in self._cuts(dataset, *span)]

    def file_parts(self, start: int, stop: int) -> list[tuple[int, int, str]] | None:
        """Files alone: ``(first, stop, path)`` of each file the blocks' parts read (a
        cluster job's partitions: one a file), as :meth:`split` cuts ``blocks``; with a node,
        None (a job runs on the node)."""
        if self.node_source is not None:
            return None
        self._check_chain()
        parts: list[tuple[int, int, str]] = []
        for a, b, source in self._cuts("blocks", start, stop):
            parts += source.file_parts(a, b)
        return parts

    def _owner(self, path: str) -> Any:
        resolved = Path(path).resolve()
        for archive in self.archives:
            if any(Path(f).resolve() == resolved for f in archive.files):
                return archive
        raise ConfigError(f"{path} is not one of {self!r}'s files")

    def part(self, path: str) -> Source:
        """The source of one of the files (a worker's partition)."""
        part: Source = self._owner(path).part(path)
        return part

    def links(self, path: str) -> dict[str, str]:
        """What the read of ``path`` noted of its ends."""
        links: dict[str, str] = self._owner(path).links(path)
        return links

    def tag(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with the node's ``attrs`` (chain, spec, label; files alone, the first
        archive's, its ``source`` the labels joined) and ``attrs["sources"]``: by label, the
        first and last block whose rows came from that source (as :meth:`split` cut the last
        dataset it was asked about: the formats hold different datasets)."""
        if self.node_source is not None:
            self.node_source.tag(frame)
        else:
            self.archive.tag(frame)
            frame.attrs["source"] = self.label
        numbers = frame["block_number"] if "block_number" in frame.columns else None
        if numbers is None or not len(numbers):
            frame.attrs["sources"] = {}
            return frame
        sources: dict[str, list[int]] = {}
        values = numbers.to_numpy()
        first, stop = int(values.min()), int(values.max()) + 1
        for a, b, source in self._cuts(self._dataset, first, stop):
            rows = values[(values >= a) & (values < b)]
            if len(rows):
                span = sources.setdefault(str(source.label), [int(rows.min()), int(rows.max())])
                span[0], span[1] = min(span[0], int(rows.min())), max(span[1], int(rows.max()))
        frame.attrs["sources"] = sources
        return frame

    def close(self) -> None:
        """Close the node (the files hold nothing open)."""
        try:
            for archive in self.archives:
                archive.close()
        finally:
            if self.node_source is not None:
                self.node_source.close()


def file_source(path: str | Path) -> Source:
    """The source of one archive file, by its suffix (``.era1``, ``.ere``, ``.era``): what a
    cluster's worker opens for a partition of files (one a partition)."""
    from feeslab.sources.era import EraSource
    from feeslab.sources.era1 import Era1Source
    from feeslab.sources.ere import EreSource

    kinds: dict[str, type[Era1Source | EreSource | EraSource]] = {
        ".era1": Era1Source, ".ere": EreSource, ".era": EraSource}  # fmt: skip
    kind = kinds.get(Path(path).suffix)
    if kind is None:
        raise SourceMismatch(f"{path}: not an archive file (.era1, .ere or .era)")
    return kind(path)

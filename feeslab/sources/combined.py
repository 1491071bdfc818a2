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

References
----------
.. [1] EIP-4444, "Bound Historical Data in Execution Clients".
.. [2] The era1 format: ethereum/go-ethereum internal/era (``era1`` e2store files).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import pandas as pd

from feeslab.errors import ConfigError
from feeslab.sources.base import Source, SourceBase

if TYPE_CHECKING:
    from feeslab.protocol.chainspec import ChainSpec
    from feeslab.sources.era1 import Era1Source
    from feeslab.sources.rpc import RpcSource

__all__ = ["CombinedSource"]


class CombinedSource(SourceBase):
    """Era1 files below their end, a node for the rest and for everything else.

    Parameters
    ----------
    archive : Era1Source
        The files (``feeslab.sources.era1.Era1Source``): ``ranges()``, ``offers()``,
        ``read(dataset, **parameters)``.
    node : RpcSource
        The node (``feeslab.sources.rpc.RpcSource``): the datasets the files do not hold,
        the blocks past the files' end, and the frames' chain.

    Attributes
    ----------
    archive, node
        As given. Any other attribute is the node's (``source.credits``, ``source.gas``, ...),
        so that a ``Lab`` on both reaches the node as a ``Lab`` on the node does.
    """

    def __init__(self, archive: Era1Source, node: RpcSource) -> None:
        self.archive = archive
        self.node_source = node
        self._checked = False

    def __repr__(self) -> str:
        return f"<CombinedSource {self.archive!r} + {self.node_source!r}>"

    def __getattr__(self, name: str) -> Any:
        # only called for what this class lacks: the node's client, ledger, head, ...
        if name.startswith("__") or name in ("archive", "node_source", "_checked"):
            raise AttributeError(name)
        return getattr(self.node_source, name)

    composite = True  # the registry runs each part on its own source and joins the rows

    @property
    def progress(self) -> bool:
        """The node's setting: the files show bars as the node's client does."""
        return self.node_source.progress

    @property
    def history_probes(self) -> int:  # type: ignore[override]
        """The node's probes of its history cutoff."""
        return self.node_source.history_probes

    def guard_history(
        self, first: int, stop: int, what: str = "", *, at_exit: bool = False
    ) -> contextlib.AbstractContextManager[None]:
        """The node's cutoff check (the files hold what lies below it)."""
        return self.node_source.guard_history(first, stop, what, at_exit=at_exit)

    @property
    def label(self) -> str:
        """The node's label: the frames are of its chain (``attrs["sources"]`` says more)."""
        return str(self.node_source.label)

    @property
    def chain_spec(self) -> ChainSpec | None:
        """The node's chain's spec."""
        return self.node_source.chain_spec

    def offers(self) -> frozenset[str]:
        """What the node offers, and the datasets the files hold."""
        return frozenset(self.node_source.offers()) | frozenset(self.archive.offers())

    def archive_span(self) -> tuple[int, int]:
        """The blocks the files hold: (first, block after the last)."""
        ranges = self.archive.ranges()
        if not ranges:
            raise ConfigError(f"{self.archive!r} holds no era1 file")
        return ranges[0][0], max(after for _, after, _ in ranges)

    def _check_chain(self) -> None:
        """The files and the node must be of one chain at one set of heights (mainnet's
        files beside a devnet would mix two histories in one frame)."""
        if self._checked:
            return
        files, node = self.archive.chain_spec, self.node_source.chain_spec
        if node is None or files.label != node.label:
            theirs = "an unknown chain" if node is None else node.label
            raise ConfigError(f"the era1 files hold {files.label} but the node serves "
                              f"{theirs}: one frame cannot join the two")  # fmt: skip
        self._checked = True

    def split(self, dataset: str, span: tuple[int, int] | None) -> list[tuple[Source, Any]]:
        """Where each part of ``dataset`` over blocks ``span`` (first, stop) comes from:
        ``(source, (first, stop))`` in block order; the node for all of a dataset the files do
        not hold, or with no range (``span`` None), given back as ``(node, span)``."""
        if span is None or dataset not in self.archive.offers():
            return [(self.node_source, span)]
        self._check_chain()
        first, stop = span
        lo, hi = self.archive_span()
        cuts: list[tuple[int, int, Source]] = [(first, min(stop, lo), self.node_source),
                (max(first, lo), min(stop, hi), self.archive),
                (max(first, hi), stop, self.node_source)]  # fmt: skip
        return [(source, (a, b)) for a, b, source in cuts if a < b]

    def tag(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with the node's ``attrs`` (chain, spec, label) and ``attrs["sources"]``:
        by label, the first and last block whose rows came from that source."""
        self.node_source.tag(frame)
        numbers = frame["block_number"] if "block_number" in frame.columns else None
        if numbers is None or not len(numbers):
            frame.attrs["sources"] = {}
            return frame
        lo, hi = self.archive_span()
        sources: dict[str, list[int]] = {}
        for label, rows in ((self.node_source.label, numbers[(numbers < lo) | (numbers >= hi)]),
                            (self.archive.label, numbers[(numbers >= lo) & (numbers < hi)])):
            if len(rows):
                span = sources.setdefault(str(label), [int(rows.min()), int(rows.max())])
                span[0], span[1] = min(span[0], int(rows.min())), max(span[1], int(rows.max()))
        frame.attrs["sources"] = sources
        return frame

    def close(self) -> None:
        """Close the node (the files hold nothing open)."""
        try:
            self.archive.close()
        finally:
            self.node_source.close()

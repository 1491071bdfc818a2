"""What the post-merge archive sources share: files named by a path, each holding a run of
blocks, read file by file with the hash links between them checked.

:class:`FileArchive` is the part of ``feeslab.sources.ere.EreSource`` (Ere files) and
``feeslab.sources.era.EraSource`` (the beacon chain's Era files) that does not depend on
the format: finding the files (a file, a directory, a glob, or a sequence of them), the
blocks each holds, which files cover a range (a cluster job's partitions: one a file), the
links at the ends of the files read (each file's first ``parentHash`` and last hash), and the
frames' ``attrs``. Each format says how a file's span is read (:meth:`FileArchive.span_of`)
and what the rows are.

A frame these files cannot give raises a typed error rather than a wrong number:
:class:`NoReceipts` for tip percentiles of files that hold no receipts (Era files: the gas each
transaction used is in its receipt, which the beacon chain does not keep).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Self

import pandas as pd

from feeslab.errors import FeeslabError
from feeslab.sources.base import SourceBase, SourceMismatch, require
from feeslab.sources.era1 import archive_files

if TYPE_CHECKING:
    from feeslab.protocol.chainspec import ChainSpec

__all__ = ["FileArchive", "NoReceipts", "blob_columns"]


class NoReceipts(SourceMismatch):
    """What was asked needs each transaction's receipt (the gas it used), which the files do
    not hold: gas-weighted tip percentiles from Era files (the beacon chain keeps no receipts)
    or from Ere files of the ``noreceipts`` profile."""


class FileArchive(SourceBase):
    """Archive files of one format, each a run of consecutive blocks.

    Parameters
    ----------
    path : str, Path, or a sequence of them
        A file, a directory of ``*.<suffix>`` files, or a glob pattern.

    Attributes
    ----------
    files : list of Path
    network : str
        The network their names begin with (``mainnet``, ``devnet``).
    heights : str
        ``"devnet"`` for files the devnet exported, else ``"protocol"``.
    ends : dict of Path to dict of str
        For each file read so far, the hash links at its ends that the read reached
        (``first_parent``, ``last_hash``, 0x hex), as ``Era1Source.ends``.
    """

    chain_id = 1
    label: ClassVar[str] = ""
    suffix: ClassVar[str] = ""
    error: ClassVar[type[FeeslabError]] = FeeslabError

    def __init__(self, path: str | Path | Sequence[str | Path]) -> None:
        self.files = archive_files(path, self.suffix, self.error)
        names = {p.name.split("-")[0] for p in self.files}
        self.network = names.pop() if len(names) == 1 else "mixed"
        self.heights = "devnet" if self.network == "devnet" else "protocol"
        self._ranges: list[tuple[int, int, Path]] | None = None
        self.ends: dict[Path, dict[str, str]] = {}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.network}: {len(self.files)} files>"

    def span_of(self, path: Path) -> tuple[int, int] | None:
        """(first block, block after the last) that ``path`` holds; None: no block."""
        raise NotImplementedError

    def read(self, dataset: str, **parameters: object) -> pd.DataFrame:
        """``dataset``'s rows of blocks ``start`` .. ``stop - 1`` (the parameters of the
        method of the dataset's name)."""
        require(self, [dataset], f"the {dataset} dataset")
        frame: pd.DataFrame = getattr(self, dataset)(**parameters)
        return frame

    def close(self) -> None:
        """Nothing stays open between calls (each file is mapped while it is read)."""

    @property
    def chain_spec(self) -> ChainSpec:
        """Mainnet's spec, at the devnet's heights for files the devnet exported."""
        from feeslab.protocol.chainspec import ChainSpec

        return ChainSpec.from_chain(1, heights=self.heights)

    def ranges(self) -> list[tuple[int, int, Path]]:
        """(first block, block after the last, file) for every file holding blocks, in block
        order."""
        if self._ranges is None:
            spans = []
            for path in self.files:
                span = self.span_of(path)
                if span is not None:
                    spans.append((*span, path))
            self._ranges = sorted(spans)
        return self._ranges

    def file_parts(self, start: int, stop: int) -> list[tuple[int, int, str]]:
        """``(first, stop, path)`` of each file holding blocks of ``start`` .. ``stop - 1``
        (a cluster job's partitions: one a file); the format's error names a block no file
        holds."""
        return [(path_first, path_stop, str(path))
                for path, path_first, path_stop in self.covering(start, stop)]  # fmt: skip

    def part(self, path: str) -> Self:
        """The source of one of the files (a worker's partition)."""
        return type(self)(path)

    def links(self, path: str) -> dict[str, str]:
        """A read file's first parent hash and last hash (``first_parent``, ``last_hash``)."""
        return dict(self.ends.get(Path(path), {}))

    def covering(self, start: int, stop: int) -> list[tuple[Path, int, int]]:
        """(file, first block, block after the last) covering ``start`` .. ``stop - 1``.

        Raises
        ------
        FeeslabError
            The format's error, naming the first block no file holds.
        """
        if not 0 <= start < stop:
            raise ValueError(f"need 0 <= start < stop, got {start}, {stop}")
        out = []
        block = start
        for first, after, path in self.ranges():
            if after <= block or first >= stop:
                continue
            if first > block:
                break
            out.append((path, block, min(stop, after)))
            block = min(stop, after)
            if block >= stop:
                return out
        spans = ", ".join(f"{a:,}..{b - 1:,}" for a, b, _ in self.ranges()[:4])
        more = " ..." if len(self.ranges()) > 4 else ""
        raise self.error(f"no {self.suffix} file holds block {block:,} (the {len(self.files)} "
                         f"files hold {spans or 'no block'}{more})", path=None)  # type: ignore[call-arg]  # fmt: skip

    def note(self, path: Path, first_parent: bytes | None, last_hash: bytes | None,
             previous: bytes | None) -> None:  # fmt: skip
        """Note ``path``'s end links that a read reached (None: not reached), after checking
        its first parent against the ``previous`` file's last hash where both are known."""
        if first_parent is not None and previous is not None and first_parent != previous:
            raise self.error(f"{path.name}: its first block's parentHash is not the previous "
                             "file's last hash", path=path)  # type: ignore[call-arg]  # fmt: skip
        ends = {}
        if first_parent is not None:
            ends["first_parent"] = "0x" + first_parent.hex()
        if last_hash is not None:
            ends["last_hash"] = "0x" + last_hash.hex()
        self.ends[Path(path)] = ends

    def tag(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with ``attrs`` saying its chain, spec, source and network."""
        from feeslab.protocol.chainspec import ChainSpec

        spec = ChainSpec.from_chain(1, heights=self.heights)
        frame.attrs.update({"chain_id": 1, "chain_spec": spec.label, "source": self.label,
                            "network": self.network})  # fmt: skip
        return frame


def blob_columns(rows: Sequence[tuple[int, int, int | None, int | None]],
                 spec: ChainSpec) -> tuple[list[int | None], list[float]]:  # fmt: skip
    """The fee history's blob columns of blocks ``rows`` (number, timestamp [s], blob gas
    used [gas], excess blob gas [gas], None before Cancun): each block's blob base fee [wei]
    and blob gas used over the most a block may use, as geth's ``eth_feeHistory`` gives them
    (0 and 0.0 before Cancun, as geth answers).

    References
    ----------
    .. [1] EIP-4844 (``get_base_fee_per_blob_gas``); EIP-7691, EIP-7892 (the schedule).
    """
    from feeslab.protocol.blobs import GAS_PER_BLOB, blob_base_fee, blob_rule_at

    fees: list[int | None] = []
    ratios: list[float] = []
    for number, timestamp, used, excess in rows:
        rule = None
        if excess is not None:
            rule = blob_rule_at(spec.blob_schedule,
                                timestamp if spec.blob_schedule and spec.blob_schedule[0].key
                                == "timestamp" else number)  # fmt: skip
        if excess is None or used is None:  # geth's zeros before Cancun
            fees.append(0)
            ratios.append(0.0)
            continue
        if rule is None:
            raise SourceMismatch(f"block {number:,} has blob fields before the blob schedule of "
                                 f"{spec.label} begins: files of another chain?")
        fees.append(blob_base_fee(excess, rule.update_fraction))
        ratios.append(used / (rule.max_blobs * GAS_PER_BLOB))
    return fees, ratios


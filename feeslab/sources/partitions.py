"""A folder of partition files written by an earlier run, as a source of frames.

A cluster job (``feeslab.cluster.run``, ``lab.uncles(..., client=, out=DIR)``, ``feeslab fetch
--workers N``) leaves one Parquet file per partition in its folder, its manifest and, once it
finished, ``_job.json`` (the dataset, its parameters and the frames' ``attrs``). Read as a
source, the folder gives that dataset again, for the job's range or any range inside it, at
zero credits, through the same dataset code as a node::

    source = PartitionSource("/shared/uncles")
    scan = feeslab.datasets.get("uncles", source, 12_000_000, 12_100_000)
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from feeslab.errors import ConfigError
from feeslab.frames.partitions import JOB, MANIFEST, concat_partitions, read_partition
from feeslab.protocol.chainspec import ChainSpec
from feeslab.sources.base import SourceBase, require

__all__ = ["PartitionSource"]

RANGE = ("start", "stop", "blocks")  # what picks the rows, not what they are
RUN = ("progress", "budget")  # how a run went, not what it computed


class PartitionSource(SourceBase):
    """The partitions of one finished job's folder, read, not asked.

    Parameters
    ----------
    path : str or Path
        The job's folder (``out=``), holding ``_job.json``, ``_manifest.json`` and its
        ``part-*.parquet`` files.

    Raises
    ------
    ConfigError
        The folder holds no finished job (no ``_job.json``: the job was not run to its end).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        try:
            self.job = json.loads((self.path / JOB).read_text())
            self.manifest = json.loads((self.path / MANIFEST).read_text())
        except FileNotFoundError as exc:
            raise ConfigError(f"{self.path} holds no finished job ({Path(exc.filename).name} "
                              "is missing): run the job to its end first") from None  # fmt: skip
        self.dataset: str = self.job["dataset"]
        self.parameters: dict[str, Any] = self.job["parameters"]
        self.attrs: dict[str, Any] = self.job["attrs"]

    def __repr__(self) -> str:
        return (f"<PartitionSource {self.dataset} of blocks {self.manifest['start']:,} to "
                f"{self.manifest['stop'] - 1:,} in {self.path}>")  # fmt: skip

    @property
    def label(self) -> str:
        """The source the job read (``"devnet"``, ``"era1"``, ...): where the rows come from."""
        return str(self.attrs.get("source", "partitions"))

    @property
    def chain_spec(self) -> ChainSpec | None:
        """The rules of the chain the job read."""
        label = self.attrs.get("chain_spec")
        return None if label is None else ChainSpec.from_label(label)

    def offers(self) -> frozenset[str]:
        """The one dataset the folder holds."""
        return frozenset({self.dataset})

    def tag(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with the ``attrs`` the job's frames had."""
        frame.attrs.update(self.attrs)
        return frame

    def close(self) -> None:
        """Nothing is held open."""

    def read(self, dataset: str, **parameters: Any) -> pd.DataFrame:
        """``dataset``'s rows for ``parameters``: those of the job, over its range or a range
        inside it (a series: the job's own blocks)."""
        require(self, [dataset], f"the {dataset} dataset")
        asked = {k: v for k, v in parameters.items() if k not in RANGE + RUN}
        held = {k: v for k, v in self.parameters.items() if k not in RANGE}
        if json.loads(json.dumps(asked, default=list)) != held:
            raise ConfigError(f"{self!r} holds {dataset} of {held}, not of {asked}")
        if "blocks" in self.parameters:  # a series: the very blocks, in their order
            if list(parameters.get("blocks", ())) != self.parameters["blocks"]:
                raise ConfigError(f"{self!r} holds the series of its job's blocks only")
            start, stop = self.manifest["start"], self.manifest["stop"]
        else:
            start, stop = parameters["start"], parameters["stop"]
        if not self.manifest["start"] <= start < stop <= self.manifest["stop"]:
            raise ConfigError(f"{self!r} does not hold blocks {start:,} to {stop - 1:,}")
        parts = [p for p in self.manifest["partitions"] if p["start"] < stop and start < p["stop"]]
        missing = [p["file"] for p in parts if not (self.path / p["file"]).exists()]
        if missing:
            raise ConfigError(f"{self!r} lacks {len(missing)} partition files ({missing[0]}, "
                              "...): rerun its job to write them")  # fmt: skip
        frame = concat_partitions([read_partition(self.path / p["file"]) for p in parts])
        inside = frame["block_number"].between(start, stop - 1)
        return self.tag(frame if inside.all() else frame[inside].reset_index(drop=True))

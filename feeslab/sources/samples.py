"""The real mainnet samples shipped with feeslab (``feeslab.samples``) as a source of frames.

``SampleSource()`` holds mainnet blocks 0 .. 8,191 and their uncles (the first era1 file's,
July 2015): ``lab.blocks`` and ``lab.uncles`` over any range inside them, offline, at zero
credits, through the same datasets as a node or era1 files::

    scan = feeslab.datasets.get("uncles", SampleSource(), 0, 8_192)
    scan.blocks["uncle_count"].mean()
"""

from __future__ import annotations

from functools import cached_property

import pandas as pd

from feeslab.errors import ConfigError
from feeslab.protocol.chainspec import ChainSpec, with_chain
from feeslab.sources.base import SourceBase, require

__all__ = ["SampleSource"]


class SampleSource(SourceBase):
    """The shipped samples' blocks and uncles (mainnet blocks 0 .. 8,191), read, not asked.

    Attributes
    ----------
    start, stop : int
        The blocks held, as ``range(start, stop)``.
    """

    label = "samples"
    chain_id = 1
    start, stop = 0, 8_192

    def __repr__(self) -> str:
        return f"<SampleSource mainnet blocks {self.start:,} to {self.stop - 1:,}>"

    def offers(self) -> frozenset[str]:
        """The datasets the samples hold (``feeslab.sources.base``)."""
        return frozenset({"blocks", "uncles"})

    @property
    def chain_spec(self) -> ChainSpec:
        """Mainnet's rules at its real heights."""
        return ChainSpec.from_chain(1)

    def tag(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with ``attrs`` saying mainnet, its spec and this source."""
        out = with_chain(frame, chain_id=1, spec=self.chain_spec, source=self.label)
        out.attrs["reference"] = "mainnet-00000-5ec1ffb8.era1 (feeslab.samples)"
        return out

    def close(self) -> None:
        """Nothing is held open."""

    @cached_property
    def _frames(self) -> dict[str, pd.DataFrame]:
        from feeslab import samples  # read on first use: a Parquet file each

        return {"blocks": samples.frontier_blocks(), "uncles": samples.frontier_uncles()}

    def read(self, dataset: str, **parameters: object) -> pd.DataFrame:
        """``dataset``'s rows of blocks ``start`` .. ``stop - 1`` (within the samples')."""
        require(self, [dataset], f"the {dataset} dataset")
        start, stop = parameters["start"], parameters["stop"]
        if not isinstance(start, int) or not isinstance(stop, int):
            raise TypeError(f"start and stop must be block numbers, not {start!r} and {stop!r}")
        if not self.start <= start < stop <= self.stop:
            raise ConfigError(f"the samples hold blocks {self.start:,} to {self.stop - 1:,}, "
                              f"not {start:,} to {stop - 1:,}")  # fmt: skip
        frame = self._frames[dataset]
        inside = frame["block_number"].between(start, stop - 1)
        return self.tag(frame[inside].reset_index(drop=True))

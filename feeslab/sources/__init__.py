"""Where blocks come from besides the service: ``era1`` (pre-merge archive files)."""

from feeslab.sources.era1 import Era1Error, Era1Source

__all__ = ["Era1Error", "Era1Source"]

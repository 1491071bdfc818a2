"""Where blocks come from besides the service: ``era1`` (pre-merge archive files); the
readers of ``era`` (the beacon chain's archive, execution payloads since the merge) and ``ere``
(execution history on both sides of the merge) are imported from their modules."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names as mypy sees them; imported on first use below
    from feeslab.sources.era1 import Era1Error, Era1Source

__all__ = ["Era1Error", "Era1Source"]


def __getattr__(name: str) -> object:
    # lazy: the era1 reader pulls in rlp and cramjam, which a scan
    # over the service (it imports feeslab.sources.rpc) never needs
    if name in __all__:
        from feeslab.sources import era1

        return getattr(era1, name)
    raise AttributeError(f"module 'feeslab.sources' has no attribute {name!r}")

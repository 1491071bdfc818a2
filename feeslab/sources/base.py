"""What every source of frames is: a small protocol, and the check a dataset makes of it.

A *source* is where a dataset's rows come from. It says what it offers as a set of
capability names, and a dataset asks for one of them:

=================  ==================================================================
capability         meaning
=================  ==================================================================
``"json-rpc"``     a node's JSON-RPC (``RpcSource``): the dataset sends its own calls
``"gas-api"``      the service's Gas API (``RpcSource`` on the service or a devnet)
a dataset's name   the source holds that dataset's rows already (``"blocks"``,
                   ``"uncles"``, ``"fee_history"``: era1 files, a folder of partitions
                   written by an earlier run): ``source.read(name, **parameters)``
=================  ==================================================================

A pairing that cannot work raises :class:`SourceMismatch` naming what the source offers.

A :class:`SplitSource` joins sources: it says which of them gives which blocks of a
dataset's range (era1 files below their end, a node above: ``feeslab.sources.combined``), and
the registry runs each part on its source and joins the rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import pandas as pd

from feeslab.errors import ConfigError

if TYPE_CHECKING:
    from feeslab.fetch.gas import GasClient
    from feeslab.protocol.chainspec import ChainSpec

__all__ = ["GAS_API", "JSON_RPC", "FrameSource", "Source", "SourceBase", "SourceMismatch",
           "SplitSource", "require"]  # fmt: skip

JSON_RPC = "json-rpc"
GAS_API = "gas-api"


@runtime_checkable
class Source(Protocol):
    """Where frames come from."""

    @property
    def label(self) -> str:
        """What the frames' ``attrs["source"]`` say (``"devnet"``, ``"era1"``, ...)."""
        ...

    @property
    def chain_spec(self) -> ChainSpec | None:
        """The rules the source's chain follows (``feeslab.ChainSpec``), or None."""
        ...

    def offers(self) -> frozenset[str]:
        """The capabilities this source has (see the module's table)."""
        ...

    def tag(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with ``attrs`` saying its chain, spec and source."""
        ...

    def close(self) -> None:
        """Release what the source holds open."""
        ...

    # what callers use of every source (defaults in SourceBase): nothing outside this package
    # asks a source for an attribute by name or by class

    @property
    def composite(self) -> bool:
        """Whether the source is made of others (a :class:`SplitSource`)."""
        ...

    @property
    def progress(self) -> bool | None:
        """Whether long reads show a bar, as the connection says (None: unsaid)."""
        ...

    @property
    def history_probes(self) -> int:
        """Calls sent so far to learn the node's history cutoff (plans count them)."""
        ...

    def guard_history(
        self, first: int, stop: int, what: str = "", *, at_exit: bool = False
    ) -> contextlib.AbstractContextManager[None]:
        """Refuse (``HistoryPruned``) blocks ``first`` .. ``stop - 1`` whose bodies lie below
        the node's cutoff (EIP-4444), once the fetch inside sets up or at the latest when the
        block ends (``at_exit``); a source without a cutoff refuses nothing."""
        ...

    def read(self, dataset: str, **parameters: object) -> pd.DataFrame:
        """The rows of ``dataset`` the source holds (``dataset in source.offers()``)."""
        ...

    @property
    def gas(self) -> GasClient | None:
        """The Gas API's client where the source has one (``"gas-api"`` offered)."""
        ...


class SourceBase:
    """The defaults of :class:`Source`'s parts that most sources do not need: not made of
    others, no bars of their own, no history cutoff, no rows held."""

    composite = False
    history_probes = 0

    @property
    def gas(self) -> GasClient | None:
        """No Gas API."""
        return None

    @property
    def progress(self) -> bool | None:
        """No setting of its own."""
        return None

    def guard_history(
        self, first: int, stop: int, what: str = "", *, at_exit: bool = False
    ) -> contextlib.AbstractContextManager[None]:
        """Nothing to refuse: no history cutoff."""
        return contextlib.nullcontext()

    def read(self, dataset: str, **parameters: object) -> pd.DataFrame:
        """No rows held: :class:`SourceMismatch`."""
        raise SourceMismatch(f"{self!r} holds no rows of {dataset}: it offers "
                             f"{', '.join(sorted(self.offers())) or 'nothing'}")  # fmt: skip

    def offers(self) -> frozenset[str]:
        """Nothing (a source says what it offers)."""
        return frozenset()


@runtime_checkable
class FrameSource(Source, Protocol):
    """A source that holds datasets' rows (era1 files, partition files)."""

    def read(self, dataset: str, **parameters: object) -> pd.DataFrame:
        """The rows of ``dataset`` for ``parameters``, as the dataset's own fetch gives them."""
        ...


@runtime_checkable
class SplitSource(Source, Protocol):
    """A source made of others, each giving some blocks of a range."""

    def split(self, dataset: str, span: tuple[int, int] | None) -> list[tuple[Source, Any]]:
        """``(source, (first, stop))`` for each part of ``dataset``'s blocks ``span`` (first,
        block after the last), in block order; ``span`` None: one source for all of it."""
        ...


class SourceMismatch(ConfigError):
    """A dataset asked a source for something it does not offer."""


def require(source: Source, wanted: Iterable[str], what: str) -> str:
    """The first of ``wanted`` that ``source`` offers, else :class:`SourceMismatch` naming
    ``what`` needs and what the source offers."""
    wanted = tuple(wanted)
    offered = source.offers()
    for capability in wanted:
        if capability in offered:
            return capability
    needs = " or ".join(repr(w) for w in wanted)
    has = ", ".join(repr(o) for o in sorted(offered)) or "nothing"
    raise SourceMismatch(f"{what} needs {needs}, but {source!r} ({source.label}) offers {has}")

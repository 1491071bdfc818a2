"""Chain specifications: which rules a chain's blocks follow, from ``data/chains.json``.

A :class:`ChainSpec` is one chain's history of rules at one set of heights: its forks with
their blocks (or timestamps), the EIP-1559 parameters of each era, the initial base fee, the
consensus engine, block rewards and the uncle rules. ``ChainSpec.from_chain(1)`` is Ethereum
mainnet at its real heights; ``ChainSpec.from_chain(1, heights="devnet")`` is the embedded
devnet's compressed copy of it (the same sequence of rules, every era within a few hundred
thousand blocks), which a devnet connection supplies.

Frames carry where they came from in ``DataFrame.attrs`` (see :func:`with_chain`)::

    {"chain_id": 8453, "chain_spec": "base-mainnet@devnet", "source": "devnet"}

and the analysis reads the spec from there (:func:`resolve_spec`) when the caller does not
give ``spec=`` or ``chain_id=``. ``chain_spec`` is the spec's :attr:`ChainSpec.label`, a
string, so the attrs survive Parquet and ``copy.deepcopy``.

References
----------
.. [1] EIP-1559, EIP-649, EIP-1234, EIP-3675 and the chains' client configurations, each value
   with its source in ``data/chains.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import Literal, overload

import pandas as pd

from feeslab.errors import ChainSpecConflict, ConfigError, MissingChainSpec
from feeslab.protocol.blobs import BlobRule, blob_schedule
from feeslab.protocol.chaindata import (
    HEIGHTS,
    Heights,
    chain_entry,
    load_chains,
    load_upgrades,
    no_half,
)
from feeslab.protocol.eip1559 import Eip1559Rule, eip1559_schedule, initial_base_fee

__all__ = [
    "HEIGHTS",
    "SOURCES",
    "ChainSpec",
    "Fork",
    "UncleRules",
    "frame_spec",
    "resolve_spec",
    "upgrade_eips",
    "with_chain",
]

#: Where a frame's rows came from (``attrs["source"]``).
SOURCES: tuple[str, ...] = ("devnet", "service", "node", "era1")
_DEVNET_SUFFIX = "@devnet"


@dataclass(frozen=True)
class Fork:
    """A named upgrade and where it activates.

    Attributes
    ----------
    name : str
        As in ``data/chains.json`` (``london``, ``merge``, ``canyon``, ...).
    block : int or None
        The first block under its rules (None for a timestamp fork whose first block
        ``data/chains.json`` does not give).
    timestamp : int or None
        Its activation time [s since the epoch], for timestamp-scheduled forks (Shanghai and
        later, the OP stack's).
    """

    name: str
    block: int | None
    timestamp: int | None = None


@dataclass(frozen=True)
class UncleRules:
    """Ommer rules of the proof-of-work era: at most ``max_per_block`` uncles, each of depth
    1..``max_depth`` [blocks]; ``source`` cites them."""

    max_per_block: int
    max_depth: int
    source: str = ""


@dataclass(frozen=True)
class ChainSpec:
    """One chain's rules over its history, at one set of heights. Frozen; compare by value.

    Attributes
    ----------
    chain_id : int
    network : str
        The service's network name (``mainnet``, ``sepolia``, ``polygon-mainnet``,
        ``base-mainnet``).
    name : str
        A readable name (``Ethereum mainnet``).
    heights : {"protocol", "devnet"}
        The real chain's heights, or the embedded devnet's compressed ones.
    forks : tuple of Fork
        In activation order.
    eip1559 : tuple of Eip1559Rule
        The base-fee rules, oldest first; each applies from the block whose base fee it
        computes (see :mod:`feeslab.protocol.eip1559`). Empty: the chain never had EIP-1559.
    initial_base_fee_wei : int
        The London block's base fee [wei].
    consensus : tuple of (int, str)
        ``(from_block, kind)``: ``ethash``, ``proof-of-stake``, ``bor``, ``optimism``.
    block_rewards_wei : tuple of (int, int)
        ``(from_block, reward)`` [wei], exact.
    reward_sources : tuple of str
        The public source of each block reward (the real chain's, which the devnet copies).
    uncles : UncleRules or None
        None on chains that never allowed uncles.
    blob_schedule : tuple of feeslab.protocol.blobs.BlobRule
        The blob parameters of each fork from Cancun on, oldest first (EIP-4844, EIP-7691,
        EIP-7892, EIP-7918); each rule's ``key`` says whether its ``start`` counts
        timestamps (the real chains) or block numbers (the devnet). Empty: no blobs.
    unscheduled : tuple of str
        Forks announced for this chain but not scheduled on it (mainnet's ``amsterdam``):
        not in ``forks`` until :meth:`with_activation` gives one an activation.
    """

    chain_id: int
    network: str
    name: str
    heights: str
    forks: tuple[Fork, ...]
    eip1559: tuple[Eip1559Rule, ...]
    initial_base_fee_wei: int
    consensus: tuple[tuple[int, str], ...]
    block_rewards_wei: tuple[tuple[int, int], ...]
    reward_sources: tuple[str, ...]
    uncles: UncleRules | None
    blob_schedule: tuple[BlobRule, ...] = ()
    unscheduled: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"ChainSpec({self.label!r}: chain {self.chain_id}, {self.heights} heights)"

    @property
    def label(self) -> str:
        """A short name that identifies the spec: the network, ``@devnet`` for the devnet's
        heights (``"mainnet"``, ``"base-mainnet@devnet"``); :meth:`from_label` reads it."""
        return self.network + (_DEVNET_SUFFIX if self.heights == "devnet" else "")

    @classmethod
    def from_chain(cls, chain_id: int, *, heights: str = "protocol") -> ChainSpec:
        """The spec of a chain of ``data/chains.json``.

        Parameters
        ----------
        chain_id : int
            1, 11155111, 137 or 8453.
        heights : {"protocol", "devnet"}
            ``"protocol"``: the real chain's heights; ``"devnet"``: the embedded devnet's.

        Raises
        ------
        ConfigError
            An unknown chain or ``heights``.
        """
        if heights not in HEIGHTS:
            raise ConfigError(
                f"heights must be 'protocol' (the real chain's fork heights) or 'devnet' (the "
                f"embedded devnet's compressed heights), not {heights!r}"
            )
        if isinstance(chain_id, bool) or not isinstance(chain_id, int):
            try:
                chain_id = int(chain_id)
            except (TypeError, ValueError):
                raise ConfigError(f"chain_id must be an int, not {chain_id!r}") from None
        return _build(int(chain_id), "devnet" if heights == "devnet" else "protocol")

    @classmethod
    def of(cls, chain: ChainSpec | str | int) -> ChainSpec:
        """A spec as given, by its :attr:`label` (``"mainnet@devnet"``), or by chain id (the
        real chain's heights).

        Raises
        ------
        ConfigError
            An unknown chain or label.
        """
        if isinstance(chain, ChainSpec):
            return chain
        if isinstance(chain, str):
            return cls.from_label(chain)
        return cls.from_chain(chain)

    @classmethod
    def devnet(cls, chain_id: int) -> ChainSpec:
        """The embedded devnet's spec: ``from_chain(chain_id, heights="devnet")``."""
        return cls.from_chain(chain_id, heights="devnet")

    @classmethod
    def from_label(cls, label: str) -> ChainSpec:
        """The spec named by :attr:`label` (``"mainnet"``, ``"base-mainnet@devnet"``)."""
        if not isinstance(label, str):
            raise ConfigError(f"a chain spec label is a str, not {type(label).__name__}")
        network, devnet = label, False
        if label.endswith(_DEVNET_SUFFIX):
            network, devnet = label[: -len(_DEVNET_SUFFIX)], True
        for entry in load_chains():
            if entry["network"] == network:
                return cls.from_chain(entry["chain_id"], heights="devnet" if devnet else "protocol")
        known = ", ".join(e["network"] for e in load_chains())
        raise ConfigError(f"no chain spec is labelled {label!r} (networks: {known})")

    @classmethod
    def known(cls) -> tuple[int, ...]:
        """The chain ids ``data/chains.json`` describes."""
        return tuple(int(e["chain_id"]) for e in load_chains())

    def fork(self, name: str) -> Fork | None:
        """The fork called ``name``, or None."""
        return next((f for f in self.forks if f.name == name), None)

    def with_activation(
        self, fork: str, *, timestamp: int | None = None, block: int | None = None
    ) -> ChainSpec:
        """This spec with ``fork`` activated at ``timestamp`` (or ``block``): a what-if.

        The spec is frozen, so a new one is returned; it keeps this spec's :attr:`label`, so
        pass it as ``spec=`` (a frame's ``attrs`` name the published spec, not the what-if).

        Parameters
        ----------
        fork : str
            A fork of :attr:`unscheduled` (``"amsterdam"`` on mainnet), or one of
            :attr:`forks` to move.
        timestamp : int, optional
            Its activation time [s since the epoch], for a timestamp-scheduled fork.
        block : int, optional
            Its first block, when known (the devnet's heights count blocks).

        Raises
        ------
        ConfigError
            No activation given, an unknown fork, or one that would activate before a fork
            that precedes it (or after one that follows it).

        Examples
        --------
        >>> spec = ChainSpec.from_chain(1).with_activation("amsterdam", timestamp=1_800_000_000)
        >>> spec.fork_at(timestamp=1_800_000_000)
        'amsterdam'
        """
        if timestamp is None and block is None:
            raise ConfigError(f"with_activation({fork!r}) needs timestamp= or block=")
        for name, value in (("timestamp", timestamp), ("block", block)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):  # fmt: skip
                raise ConfigError(f"{name} must be a non-negative int, not {value!r}")
        known = [f.name for f in self.forks]
        if fork not in self.unscheduled and fork not in known:
            raise ConfigError(
                f"{self.label} has no fork {fork!r} to activate (unscheduled: "
                f"{', '.join(self.unscheduled) or 'none'}; scheduled: {', '.join(known)})"
            )
        forks = [f for f in self.forks if f.name != fork]
        new = Fork(fork, block, timestamp)
        before = [f for f in forks if _earlier(f, new)]
        after = [f for f in forks if _earlier(new, f)]
        order = known if fork in known else [*known, fork]  # an unscheduled fork comes last
        position = order.index(fork)
        if any(order.index(f.name) > position for f in before) or any(
            order.index(f.name) < position for f in after
        ):
            raise ConfigError(
                f"{fork!r} at {timestamp if timestamp is not None else block} would change "
                f"the order of {self.label}'s forks ({', '.join(order)})"
            )
        forks.insert(position, new)
        return replace(self, forks=tuple(forks),
                       unscheduled=tuple(n for n in self.unscheduled if n != fork))  # fmt: skip

    def fork_at(self, block_number: int | None = None, *, timestamp: int | None = None) -> str:
        """The name of the last fork active at a block, given its number and (for the forks
        scheduled by time) its timestamp [s since the epoch].

        Raises
        ------
        ConfigError
            Neither given, or a timestamp fork whose activation needs the ``timestamp``.
        """
        if block_number is None and timestamp is None:
            raise ConfigError("fork_at needs block_number= or timestamp=")
        found = "frontier"
        for fork in self.forks:  # in activation order: the first not yet active ends it
            if fork.timestamp is not None and timestamp is not None:
                active = timestamp >= fork.timestamp
            elif fork.block is not None and block_number is not None:
                active = block_number >= fork.block
            elif fork.block is not None:  # a block fork, only a time given: after it
                active = True
            else:
                raise ConfigError(
                    f"{self.label}: fork {fork.name!r} activates by time: pass timestamp="
                )
            if not active:
                break
            found = fork.name
        return found

    def eip1559_rule_at(self, block_number: int) -> Eip1559Rule | None:
        """The EIP-1559 rule that computes block ``block_number``'s base fee; None before."""
        found = None
        for rule in self.eip1559:
            if block_number >= rule.from_block:
                found = rule
        return found


def _earlier(a: Fork, b: Fork) -> bool:
    """Whether ``a`` activates strictly before ``b``, on the axis both have."""
    if a.timestamp is not None and b.timestamp is not None:
        return a.timestamp < b.timestamp
    if a.block is not None and b.block is not None:
        return a.block < b.block
    return a.timestamp is None and b.timestamp is not None  # block forks precede time forks


def upgrade_eips(name: str) -> tuple[dict[str, object], ...]:
    """An upgrade's EIPs from ``data/chains.json`` (``upgrades``): each with ``eip``,
    ``title``, ``parameters`` (None where feeslab does not use them) and ``source``.

    Raises
    ------
    ConfigError
        An upgrade the file does not describe.
    """
    upgrades = load_upgrades()
    if name not in upgrades:
        raise ConfigError(f"no upgrade {name!r} in data/chains.json (known: {', '.join(upgrades)})")
    return tuple(dict(e) for e in upgrades[name]["eips"])


@cache
def _build(chain_id: int, heights: Heights) -> ChainSpec:
    try:
        entry = chain_entry(chain_id)
    except KeyError as exc:
        raise ConfigError(str(exc.args[0])) from None
    if heights not in entry:
        raise ConfigError(no_half(chain_id, entry, heights))
    protocol, half = entry["protocol"], entry[heights]
    forks, unscheduled = [], []
    for name, value in half["forks"].items():
        if isinstance(value, Mapping):
            stamp = value.get("timestamp") if heights == "protocol" else None
            forks.append(Fork(name, int(value["block"]), None if stamp is None else int(stamp)))
        else:
            forks.append(Fork(name, int(value)))
    for name, value in (half.get("timestamp_forks") or {}).items():  # Shanghai and later
        if isinstance(value, Mapping):
            block, stamp = value.get("block"), value.get("timestamp")
            if block is None and stamp is None:  # announced, not scheduled on this chain
                unscheduled.append(name)
                continue
            forks.append(Fork(name, None if block is None else int(block),
                              None if stamp is None else int(stamp)))  # fmt: skip
    # in activation order (stable: forks at one block keep the file's order)
    forks.sort(key=lambda f: (f.block is None, f.block or 0, f.timestamp or 0))
    rules = protocol.get("uncles")
    uncles = None
    if rules is not None:
        uncles = UncleRules(int(rules["max_per_block"]), int(rules["max_depth"]),
                            rules.get("source", ""))  # fmt: skip
    return ChainSpec(
        chain_id=chain_id,
        network=entry["network"],
        name=entry["name"],
        heights=heights,
        forks=tuple(forks),
        eip1559=eip1559_schedule(chain_id, heights),
        initial_base_fee_wei=initial_base_fee(chain_id, heights),
        consensus=tuple((int(c["from_block"]), str(c["kind"])) for c in half["consensus"]),
        block_rewards_wei=tuple(
            (int(r["from_block"]), int(r["value"])) for r in half["block_rewards_wei"]
        ),
        reward_sources=tuple(r.get("source", "") for r in protocol["block_rewards_wei"]),
        uncles=uncles,
        blob_schedule=blob_schedule(chain_id, heights),
        unscheduled=tuple(unscheduled),
    )


# -- frame metadata ------------------------------------------------------------------------------


def with_chain(
    frame: pd.DataFrame,
    *,
    chain_id: int,
    spec: ChainSpec | None,
    source: str,
) -> pd.DataFrame:
    """Set ``frame.attrs`` to say where it came from (in place), and return it.

    Parameters
    ----------
    frame : pandas.DataFrame
    chain_id : int
        The chain the node answered for (``eth_chainId``).
    spec : ChainSpec or None
        Its rules; None for a chain ``data/chains.json`` does not describe (the analysis then
        needs explicit parameters).
    source : {"devnet", "service", "node", "era1"}
    """
    if spec is not None and spec.chain_id != chain_id:
        raise ChainSpecConflict(
            f"a frame of chain {chain_id} cannot follow the spec of chain {spec.chain_id}"
        )
    label = None if spec is None else spec.label
    frame.attrs.update({"chain_id": int(chain_id), "chain_spec": label, "source": source})
    return frame


def frame_spec(frame: object) -> tuple[int | None, ChainSpec | None]:
    """``(chain_id, spec)`` from a frame's (or Series') ``attrs``; Nones where it says nothing."""
    attrs = getattr(frame, "attrs", None) or {}
    chain_id = attrs.get("chain_id")
    label = attrs.get("chain_spec")
    spec = None
    if isinstance(label, ChainSpec):
        spec = label
    elif label is not None:
        spec = ChainSpec.from_label(label)
    if chain_id is None and spec is not None:
        chain_id = spec.chain_id
    return (None if chain_id is None else int(chain_id)), spec


@overload
def resolve_spec(
    frame: object,
    spec: ChainSpec | str | None = None,
    chain_id: int | None = None,
    *,
    what: str = "this function",
    required: Literal[True] = True,
    alternatives: str = "",
) -> ChainSpec: ...


@overload
def resolve_spec(
    frame: object,
    spec: ChainSpec | str | None = None,
    chain_id: int | None = None,
    *,
    what: str = "this function",
    required: bool,
    alternatives: str = "",
) -> ChainSpec | None: ...


def resolve_spec(
    frame: object,
    spec: ChainSpec | str | None = None,
    chain_id: int | None = None,
    *,
    what: str = "this function",
    required: bool = True,
    alternatives: str = "",
) -> ChainSpec | None:
    """The chain spec an analysis function works with: the arguments, else the frame's attrs.

    * ``spec=`` (a :class:`ChainSpec` or its label) wins, and must agree with the frame's
      attrs when they name one;
    * ``chain_id=`` alone means the real chain's spec, unless the frame says it is of that
      chain: then the frame's spec (e.g. a devnet's heights) is used;
    * nothing: the frame's ``attrs["chain_spec"]``.

    Parameters
    ----------
    frame : DataFrame, Series or None
        The analysed data, whose ``attrs`` may carry ``chain_id`` and ``chain_spec``.
    what : str
        The caller's name, for messages.
    required : bool
        Raise when no spec can be found (else return None: the caller falls back on explicit
        parameters).
    alternatives : str
        Other arguments that would do, named in the error (``"elasticity_multiplier="``).

    Raises
    ------
    MissingChainSpec
        Neither the arguments nor the frame say which chain the frame is of.
    ChainSpecConflict
        The arguments contradict each other or the frame's attrs.
    """
    if isinstance(spec, str):
        spec = ChainSpec.from_label(spec)
    elif spec is not None and not isinstance(spec, ChainSpec):
        raise TypeError(f"{what}: spec must be a ChainSpec or its label, not {type(spec).__name__}")
    frame_chain, frame_chain_spec = frame_spec(frame)
    if spec is not None:
        if chain_id is not None and int(chain_id) != spec.chain_id:
            raise ChainSpecConflict(
                f"{what}: chain_id={chain_id} contradicts spec={spec.label!r} (chain "
                f"{spec.chain_id})"
            )
        chosen = spec
    elif chain_id is not None:
        chain_id = int(chain_id)
        if frame_chain_spec is not None and frame_chain_spec.chain_id == chain_id:
            chosen = frame_chain_spec  # the frame knows whose heights its chain follows
        else:
            chosen = ChainSpec.from_chain(chain_id)
    else:
        if frame_chain_spec is not None:
            return frame_chain_spec
        if required:
            others = f", or {alternatives}" if alternatives else ""
            said = (f"chain {frame_chain}, which data/chains.json does not describe"
                    if frame_chain is not None else "nothing about its chain")  # fmt: skip
            raise MissingChainSpec(
                f"{what}: pass spec= (a feeslab.ChainSpec) or chain_id={others}: "
                f"the frame's attrs say {said}",
                argument="spec",
            )
        return None
    if frame_chain is not None and frame_chain != chosen.chain_id:
        raise ChainSpecConflict(
            f"{what}: the frame is of chain {frame_chain} (its attrs), but the arguments say "
            f"chain {chosen.chain_id}"
        )
    if frame_chain_spec is not None and frame_chain_spec != chosen:
        raise ChainSpecConflict(
            f"{what}: the frame follows {frame_chain_spec.label!r} ({frame_chain_spec.heights} "
            f"heights, its attrs), but the arguments say {chosen.label!r} ({chosen.heights} "
            "heights)"
        )
    return chosen

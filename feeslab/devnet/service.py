"""The devnet service object: everything one devnet serves, with no transport attached.

``Devnet`` owns the chains, the key, the ledger, the options and (made on first use) the
wallet; ``feeslab.devnet.app`` routes requests to it and ``feeslab.devnet.server`` serves it
with uvicorn. Neither of those is imported here, so the routes and the IPFS node can name this
type without an import cycle.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from feeslab.devnet import gasapi, rpc
from feeslab.devnet.auth import Credentials
from feeslab.devnet.credits import CreditLedger
from feeslab.devnet.jsonrpc import Dispatcher

__all__ = ["Devnet"]

_WALLET_LOCK = threading.Lock()


@dataclass(eq=False, repr=False)
class Devnet:
    """Everything one devnet serves: its chains, its key, its ledger and its options.

    Attributes
    ----------
    seed : int
        The seed the chains were built from.
    chains : ChainSet
        From ``feeslab.devnet.chain.build_chains``.
    credentials : Credentials
        The one API key and secret accepted.
    ledger : CreditLedger
        Credits spent with that key.
    block_time : float or None
        Seconds per new block in live mode; None for a chain that does not grow.
    height : int or None
        The mainnet chain's head block when lengthened (``build_chains(height=...)``), else
        None.
    latency_ms : float
        Delay added before answering each HTTP request and each WebSocket message.
    dispatch : callable
        ``dispatch(ctx, method, params)``; ``feeslab.devnet.rpc.dispatch_encoded`` (plain
        results, or cached encoded JSON for canonical blocks) unless replaced.
    format_new_head : callable
        ``format_new_head(block) -> dict``; ``feeslab.devnet.rpc.format_new_head``.
    gas : object
        Namespace with the Gas API functions: the module ``feeslab.devnet.gasapi``.
    wallet_user : WalletUser, optional
        Who approves the wallet's connection requests (``feeslab.devnet.wallet``); None: the
        default user (approves what is asked, one account per chain).
    ipfs : IpfsNode or None
        The storage API's node (``feeslab.devnet.ipfs``); ``serve`` opens the default one
        when None.
    wallet_allow_origins : tuple of str
        Browser origins besides loopback pages that may open ``WS /wallet`` (``"*"``: any).
    history : {"all", "postmerge"}
        Which history the node serves, as geth's ``--history.chain`` (EIP-4444): ``"all"``,
        or ``"postmerge"``: the bodies, uncles and receipts of the blocks before each chain's
        merge are answered with 4444 ``pruned history unavailable``, headers stay served
        (``feeslab.devnet.rpc.pruning``). Change it with :meth:`set_history`.
    """

    seed: int
    chains: Any
    credentials: Credentials
    ledger: CreditLedger
    block_time: float | None = None
    height: int | None = None
    latency_ms: float = 0.0
    dispatch: Dispatcher = rpc.dispatch_encoded
    format_new_head: Callable[[Any], dict] = rpc.format_new_head
    gas: Any = gasapi
    info_extra: dict[str, Any] = field(default_factory=dict)
    wallet_user: Any = None
    ipfs: Any = None
    wallet_allow_origins: tuple[str, ...] = ()
    history: str = "all"

    def __post_init__(self) -> None:
        self.set_history(self.history)

    def set_history(self, mode: str) -> None:
        """Serve history as geth's ``--history.chain mode`` does (``"all"`` or
        ``"postmerge"``): the dispatcher is wrapped (or unwrapped) at once, for the requests
        that come next. A ``ValueError`` names the modes for any other."""
        base = getattr(self.dispatch, "__wrapped__", self.dispatch)
        self.dispatch = rpc.pruning(base, mode)
        self.history = mode

    def history_cutoffs(self) -> dict[int, int]:
        """The first block each chain serves bodies of, by chain id (0: all)."""
        return {chain.chain_id: rpc.history_cutoff(chain, self.history) for chain in self.chains}

    @cached_property
    def wallet(self) -> Any:
        """The emulated multichain wallet (``feeslab.devnet.wallet.DevnetWallet``), made on
        first use."""
        from feeslab.devnet.wallet import DevnetWallet

        with _WALLET_LOCK:
            if "wallet" not in self.__dict__:  # another thread may have made it meanwhile
                self.__dict__["wallet"] = DevnetWallet(
                    self.chains,
                    self.seed,
                    user=self.wallet_user,
                    format_head=self.format_new_head,
                    ledger=self.ledger,  # metered like the key's other traffic
                )
            return self.__dict__["wallet"]

    def __repr__(self) -> str:
        networks = [chain.network for chain in self.chains]
        return f"Devnet(seed={self.seed}, networks={networks}, block_time={self.block_time})"

    def info(self) -> dict[str, Any]:
        """What ``GET /devnet/info`` answers."""
        return {
            "seed": self.seed,
            "chains": [
                {"chain_id": c.chain_id, "network": c.network, "head": c.head(),
                 "history_cutoff": rpc.history_cutoff(c, self.history)}
                for c in self.chains
            ],
            "block_time": self.block_time,
            "latency_ms": self.latency_ms,
            "daily_credits": self.ledger.daily_credits,
            "credits_per_second": self.ledger.credits_per_second,
            "history": self.history,
            **self.info_extra,
        }

    def contracts(self) -> dict[str, Any]:
        """What ``GET /devnet/contracts`` answers: the deployed contracts and their accounts.

        The same deployer and nonces give the same addresses on every chain; each chain
        deploys at its own height (``chains``).
        """
        states = [chain.state for chain in self.chains]
        for state in states:
            state.ensure(state.contracts_block)
        first = states[0]
        return {
            "chains": [
                {
                    "chain_id": s.chain_id,
                    "network": chain.network,
                    "contracts_block": s.contracts_block,
                    "upgrade_block": s.upgrade_block,
                }
                for chain, s in zip(self.chains, states, strict=True)
            ],
            "contracts": [
                {key: value for key, value in d.to_json().items() if key != "deployed_at_block"}
                for d in first.deployments.values()
            ],
            "accounts": first.accounts_json(),
        }

    def ipfs_block_file(self, cid: str) -> Path:
        """The file on this machine's disk that holds one block of the storage API's node.

        The node keeps kubo's flatfs layout, one file per block (a file's chunks and its root
        are blocks); damaging one shows what the node's integrity check does. The file may not
        exist: the node may not hold the block.

        Parameters
        ----------
        cid : str
            The block's CID (``Qm...`` or ``b...``), e.g. a link of ``object_get``.

        Raises
        ------
        feeslab.unixfs.CidError
            When ``cid`` is not a CID.
        """
        from feeslab.devnet.ipfs import IpfsNode
        from feeslab.unixfs import CID

        if self.ipfs is None:  # served devnets open one; a bare Devnet gets the default
            self.ipfs = IpfsNode.open()
        return self.ipfs.blocks.path(CID.parse(str(cid)))

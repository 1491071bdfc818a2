"""feeslab: study Ethereum fee markets and uncle rates from Jupyter.

``lab = feeslab.connect()`` gives a :class:`~feeslab.lab.Lab` on the real service when an API
key is configured, else on the embedded devnet; its methods return pandas frames.

Layers, in the order data flows: ``feeslab.fetch`` (clients, transports, credits, cache) ->
``feeslab.frames`` (answers to pandas) -> analysis -> plots; ``feeslab.datasets`` plan, fetch
and parse each dataset from a source (``feeslab.sources``: the service over JSON-RPC, era1
files), and ``feeslab.connection`` makes the ``Lab`` that binds them to one connection.
``feeslab.devnet`` stands beside them as a local stand-in for the service.

``import feeslab`` loads the exception tree alone; ``connect``, ``Lab`` and the other names
below load their modules (and pandas) when first used, and so do the subpackages named as
attributes (``feeslab.analysis``, ``feeslab.plots``, ...). A process that only handles
feeslab's errors, or starts a devnet, never pays for what it does not use.
"""

from typing import TYPE_CHECKING

from feeslab.errors import (
    AuthError,
    BudgetExceeded,
    CaipError,
    ChainSpecConflict,
    ChainSpecError,
    CidMismatchError,
    ConfigError,
    CreditsExhausted,
    FeeslabError,
    HistoryPruned,
    IpfsError,
    IpfsStreamError,
    MalformedWord,
    MissingChainSpec,
    NotificationTimeout,
    ProtocolError,
    RateLimited,
    RevertError,
    RpcError,
    TransactionGasCapExceeded,
    TransportError,
    UserRejected,
    WalletError,
    WalletUnauthorized,
)

if TYPE_CHECKING:  # what type checkers and editors see; at run time each loads on first use
    from feeslab.caip import AccountId, ChainId, Scope, Session
    from feeslab.connection import connect
    from feeslab.fetch.ipfs import AsyncIpfsClient, IpfsClient
    from feeslab.lab import Lab, UncleScan
    from feeslab.protocol.chainspec import ChainSpec

__all__ = [
    "AccountId",
    "AsyncIpfsClient",
    "AuthError",
    "BudgetExceeded",
    "CaipError",
    "ChainId",
    "ChainSpec",
    "ChainSpecConflict",
    "ChainSpecError",
    "CidMismatchError",
    "ConfigError",
    "CreditsExhausted",
    "FeeslabError",
    "HistoryPruned",
    "IpfsClient",
    "IpfsError",
    "IpfsStreamError",
    "Lab",
    "MalformedWord",
    "MissingChainSpec",
    "NotificationTimeout",
    "ProtocolError",
    "RateLimited",
    "RevertError",
    "RpcError",
    "Scope",
    "Session",
    "TransactionGasCapExceeded",
    "TransportError",
    "UncleScan",
    "UserRejected",
    "WalletError",
    "WalletUnauthorized",
    "connect",
]

__version__ = "0.1.0"

# where each lazily loaded name lives; errors are imported above (light, and needed to catch)
_LAZY_NAMES = {
    "AccountId": "feeslab.caip",
    "AsyncIpfsClient": "feeslab.fetch.ipfs",
    "ChainId": "feeslab.caip",
    "ChainSpec": "feeslab.protocol.chainspec",
    "IpfsClient": "feeslab.fetch.ipfs",
    "Lab": "feeslab.lab",
    "Scope": "feeslab.caip",
    "Session": "feeslab.caip",
    "UncleScan": "feeslab.lab",
    "connect": "feeslab.connection",
}
_SUBMODULES = frozenset({
    "analysis", "caip", "cli", "cluster", "connection", "datasets", "devnet", "display",
    "fetch", "frames", "lab", "plots", "protocol", "samples", "slots", "sources", "unixfs",
    "watch",
})  # fmt: skip

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name is still an error there

    def __getattr__(name: str) -> object:
        """Load a public name, or a subpackage, on first use (PEP 562)."""
        import importlib

        if name in _LAZY_NAMES:
            value = getattr(importlib.import_module(_LAZY_NAMES[name]), name)
        elif name in _SUBMODULES:
            value = importlib.import_module(f"feeslab.{name}")
        else:
            raise AttributeError(f"module 'feeslab' has no attribute {name!r}")
        globals()[name] = value  # later uses find it directly
        return value

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(__all__) | _SUBMODULES)

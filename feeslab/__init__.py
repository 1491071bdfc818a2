"""feeslab: study Ethereum fee markets and uncle rates from Jupyter.

``lab = feeslab.connect()`` gives a :class:`~feeslab.lab.Lab` on the real service when an API
key is configured, else on the embedded devnet; its methods return pandas frames.

Layers, in the order data flows: ``feeslab.fetch`` (clients, transports, credits, cache) ->
``feeslab.frames`` (answers to pandas) -> analysis -> plots; ``feeslab.datasets`` plan, fetch
and parse each dataset from a source (``feeslab.sources``: the service over JSON-RPC, era1
files), and ``feeslab.connection`` makes the ``Lab`` that binds them to one connection.
``feeslab.devnet`` stands beside them as a local stand-in for the service.
"""

from feeslab.caip import AccountId, ChainId, Scope, Session
from feeslab.connection import connect
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

"""The client-side fetch layer: JSON-RPC transports over HTTP and WebSocket, and their errors.

Every transport has one method, ``handle_request(calls) -> results``: a list of ``RpcCall`` in,
one ``RpcResult`` per call out, in call order::

    from feeslab.fetch import HTTPTransport, RpcCall

    with HTTPTransport(url=f"{devnet.url}/v3/{devnet.api_key}") as t:
        (head,) = t.handle_request([RpcCall("eth_blockNumber", [])])
        print(int(head.unwrap(), 16))

One core under every client: JSON-RPC is built and read in ``jsonrpc`` (no I/O); ``retry``
holds the one retry policy (``Retry``), its driver (``drive``) and the one status-to-error map
(``status_error``) that HTTP, WebSocket, the Gas API and IPFS share; ``core`` holds the limits
(``Limits``), the credit governor (the one place a budget is charged) and one batch's
attempts; the clients are async (``AsyncHTTPTransport``, ``AsyncWebSocketTransport``,
``AsyncIpfsClient``, ``AsyncGasClient``, ``AsyncWalletClient``) and each blocking client runs
its async twin on the one loop thread they all share (``loop``), so it works inside a running
Jupyter kernel.

``NodeClient`` puts the on-disk cache and the credit ledger over a transport (the calls are
built by ``feeslab.datasets``); ``IpfsClient`` speaks the storage API; the multichain wallet's
clients are in ``feeslab.fetch.wallet`` (they build on ``feeslab.caip``);
``feeslab.fetch.heads`` follows the chain's head on the shared loop (``lab.watch`` uses it).

Errors form one tree under ``FeeslabError``, in ``feeslab.errors``.
"""

from feeslab.fetch.core import CreditGovernor, Limits, Retry
from feeslab.fetch.ipfs import AsyncIpfsClient, IpfsClient
from feeslab.fetch.jsonrpc import RpcCall, RpcResult
from feeslab.fetch.node import NodeClient
from feeslab.fetch.transport import AsyncHTTPTransport, HTTPTransport
from feeslab.fetch.ws import (
    AsyncSubscription,
    AsyncWebSocketTransport,
    Subscription,
    WebSocketTransport,
)

__all__ = [
    "AsyncHTTPTransport",
    "AsyncIpfsClient",
    "AsyncSubscription",
    "AsyncWebSocketTransport",
    "CreditGovernor",
    "HTTPTransport",
    "IpfsClient",
    "Limits",
    "NodeClient",
    "Retry",
    "RpcCall",
    "RpcResult",
    "Subscription",
    "WebSocketTransport",
]

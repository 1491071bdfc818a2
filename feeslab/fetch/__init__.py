"""The client-side fetch layer: JSON-RPC transports over HTTP and WebSocket, and their errors.

Every transport has one method, ``handle_request(calls) -> results``: a list of ``RpcCall`` in,
one ``RpcResult`` per call out, in call order. The sync and async twins share their request
building, answer parsing, retry policy and credit governor::

    from feeslab.fetch import HTTPTransport, RpcCall

    with HTTPTransport(url=f"{devnet.url}/v3/{devnet.api_key}") as t:
        (head,) = t.handle_request([RpcCall("eth_blockNumber", [])])
        print(int(head.unwrap(), 16))

``NodeClient`` puts the on-disk cache and the credit ledger over a transport (the calls are
built by ``feeslab.datasets``);
``IpfsClient`` speaks the storage API (with an async twin); the multichain wallet's clients are
in ``feeslab.fetch.wallet`` (they build on ``feeslab.caip``, which builds on these errors).

Errors form one tree under ``FeeslabError``, in ``feeslab.errors``.
"""

from feeslab.fetch.ipfs import AsyncIpfsClient, IpfsClient
from feeslab.fetch.node import NodeClient
from feeslab.fetch.transport import (
    AsyncHTTPTransport,
    CreditGovernor,
    HTTPTransport,
    RpcCall,
    RpcResult,
)
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
    "NodeClient",
    "RpcCall",
    "RpcResult",
    "Subscription",
    "WebSocketTransport",
]

"""feeslab's wallet client reads both shapes of a ``wallet_invokeMethod`` answer.

MetaMask (and the devnet) answer the invoked method's bare result; the interface's table (§4.3)
shows it wrapped as ``{scope, result: {method, result}}``. A real WebSocket server on loopback
answers each shape in turn.
"""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from websockets.asyncio.server import serve

from feeslab.fetch.wallet import WalletClient

SESSION = {"sessionScopes": {"eip155:1": {"methods": ["eth_chainId"], "notifications": [],
                                          "accounts": []}}}


@pytest.fixture
def wrapped_wallet():
    """``ws://`` URL of a wallet answering in the interface's wrapped shape."""
    ready = threading.Event()
    state: dict = {}

    async def answer(ws) -> None:
        async for message in ws:
            body = json.loads(message)
            if body["method"] == "wallet_invokeMethod":
                scope = body["params"]["scope"]
                method = body["params"]["request"]["method"]
                result = {"scope": scope, "result": {"method": method, "result": "0x1"}}
            else:
                result = SESSION
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result}))

    async def main() -> None:
        async with serve(answer, "127.0.0.1", 0) as server:
            state["url"] = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
            state["stop"] = asyncio.get_running_loop().create_future()
            state["loop"] = asyncio.get_running_loop()
            ready.set()
            await state["stop"]

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(10)
    yield state["url"]
    state["loop"].call_soon_threadsafe(state["stop"].set_result, None)
    thread.join(10)


def test_the_wrapped_shape_gives_the_inner_result(wrapped_wallet):
    with WalletClient(url=wrapped_wallet) as client:
        client.create({"eip155:1": {"methods": ["eth_chainId"], "notifications": []}})
        assert client.invoke("eip155:1", "eth_chainId") == "0x1"


def test_the_bare_shape_gives_the_result(devnet):
    with WalletClient(url=f"{devnet.ws_url}/wallet") as client:
        client.create({"eip155:1": {"methods": ["eth_chainId"], "notifications": []}})
        assert client.invoke("eip155:1", "eth_chainId") == "0x1"

"""web3.py against the devnet, as a new user would use it: HTTPProvider, AsyncHTTPProvider and
WebSocketProvider, default reads (no ``from``), the pending block, reverts; and web3's own
module tests where they fit."""

from __future__ import annotations

import asyncio

import pytest
from web3 import AsyncHTTPProvider, AsyncWeb3, HTTPProvider, Web3, WebSocketProvider
from web3._utils.module_testing.eth_module import AsyncEthModuleTest, EthModuleTest
from web3.exceptions import ContractLogicError


@pytest.fixture
def w3(devnet) -> Web3:
    return Web3(HTTPProvider(f"{devnet.url}/v3/{devnet.api_key}"))


def test_http_contract_view_without_from(w3, token, stored_balance):
    contract = w3.eth.contract(address=Web3.to_checksum_address(token["address"]),
                               abi=token["abi"])
    holder = Web3.to_checksum_address(token["holder"])
    assert stored_balance > 0
    assert contract.functions.balanceOf(holder).call() == stored_balance
    data = contract.encode_abi("balanceOf", [holder])
    raw = w3.eth.call({"to": contract.address, "data": data})  # a bare eth_call, no from
    assert int.from_bytes(raw, "big") == stored_balance


def test_http_pending_block(w3):
    block = w3.eth.get_block("pending")
    assert block["number"] == w3.eth.block_number + 1
    assert block["hash"] is None and block["parentHash"] == w3.eth.get_block("latest")["hash"]
    EthModuleTest().test_eth_getBlockByNumber_pending(w3, None)  # web3's own check


def test_http_empty_revert_same_for_call_and_estimate(w3, token):
    reverter = w3.eth.contract(address=Web3.to_checksum_address(token["reverter"]),
                               abi=token["reverter_abi"])
    errors = []
    for run in (reverter.functions.emptyRevert().call,
                reverter.functions.emptyRevert().estimate_gas):
        with pytest.raises(ContractLogicError) as caught:
            run()
        errors.append((caught.value.message, caught.value.data))
    assert errors[0] == errors[1]
    assert errors[0][1] == "0x"


def test_async_http(devnet, token, stored_balance):
    async def run() -> None:
        w3 = AsyncWeb3(AsyncHTTPProvider(f"{devnet.url}/v3/{devnet.api_key}"))
        contract = w3.eth.contract(address=Web3.to_checksum_address(token["address"]),
                                   abi=token["abi"])
        holder = Web3.to_checksum_address(token["holder"])
        assert await contract.functions.balanceOf(holder).call() == stored_balance
        pending = await w3.eth.get_block("pending")
        assert pending["number"] == await w3.eth.block_number + 1
        await AsyncEthModuleTest().test_eth_getBlockByNumber_pending(w3, None)
        await w3.provider.disconnect()

    asyncio.run(run())


def test_websocket(devnet, token, stored_balance):
    async def run() -> None:
        url = f"{devnet.ws_url}/ws/v3/{devnet.api_key}"
        async with AsyncWeb3(WebSocketProvider(url)) as w3:
            contract = w3.eth.contract(address=Web3.to_checksum_address(token["address"]),
                                       abi=token["abi"])
            holder = Web3.to_checksum_address(token["holder"])
            assert await contract.functions.balanceOf(holder).call() == stored_balance
            pending = await w3.eth.get_block("pending")
            assert pending["number"] == await w3.eth.block_number + 1
            assert await w3.eth.chain_id == 1

    asyncio.run(run())

"""ethers 6, viem, kubo-rpc-client and MetaMask's multichain-api-client against a devnet on
loopback, run with ``node`` (scripts beside this file, packages pinned in package.json).

Each script prints what the client saw; the expected values come from the devnet's raw
answers (storage read with eth_getStorageAt, the head with eth_blockNumber) or from public
facts (kubo's CID of "hello world\\n"), never from the client's own output.
"""

from __future__ import annotations

from eth_abi import encode
from eth_hash.auto import keccak
from eth_keys import keys

HELLO_CID = "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o"  # `ipfs add` of "hello world\n"


def clients_args(devnet, token) -> dict:
    return {
        "url": f"{devnet.url}/v3/{devnet.api_key}",
        "wsUrl": f"{devnet.ws_url}/ws/v3/{devnet.api_key}",
        "token": token["address"],
        "abi": token["abi"],
        "holder": token["holder"],
        "reverter": token["reverter"],
        "reverterAbi": token["reverter_abi"],
    }


def test_ethers(node_script, devnet, token, stored_balance, rpc):
    seen = node_script("ethers", **clients_args(devnet, token))
    head = int(rpc("eth_blockNumber"), 16)
    latest = rpc("eth_getBlockByNumber", "latest", False)
    for transport in ("http", "ws"):
        out = seen[transport]
        assert int(out["callBalance"]) == stored_balance > 0  # provider.call, no from
        assert int(out["viewBalance"]) == stored_balance  # Contract view
        assert out["head"] == head
        assert out["pendingNumber"] == head + 1  # getBlock('pending') works
        assert out["pendingHash"] is None and out["pendingParent"] == latest["hash"]
        # an empty revert: the same CALL_EXCEPTION with data "0x" from call and estimateGas
        assert out["errors"]["call"] == out["errors"]["estimate"]
        assert out["errors"]["call"]["code"] == "CALL_EXCEPTION"
        assert out["errors"]["call"]["data"] == "0x"


def test_viem(node_script, devnet, token, stored_balance, rpc):
    seen = node_script("viem", **clients_args(devnet, token))
    head = int(rpc("eth_blockNumber"), 16)
    for transport in ("http", "ws"):
        out = seen[transport]
        assert int(out["balance"]) == stored_balance > 0  # readContract, no from
        assert int(out["head"]) == head
        assert int(out["pendingNumber"]) == head + 1
        assert out["revert"]["name"] == "ContractFunctionExecutionError"
        assert out["revert"]["cause"] == "ContractFunctionRevertedError"


def test_kubo_rpc_client(node_script, devnet):
    seen = node_script(
        "kubo", url=devnet.url, key=devnet.api_key, secret=devnet.api_key_secret,
        text="hello world\n",
    )
    assert seen["cid"] == HELLO_CID
    assert seen["text"] == "hello world\n"
    assert seen["pinned"] == [HELLO_CID]
    assert "path does not have enough components" in seen["emptyPath"]["message"]


def test_multichain_api_client(node_script, devnet, token, stored_balance, rpc):
    data = "0x" + (keccak(b"balanceOf(address)")[:4] + encode(["address"], [token["holder"]])).hex()
    seen = node_script(
        "multichain", url=f"{devnet.ws_url}/wallet", token=token["address"], balanceOfData=data
    )
    assert list(seen["session"]["sessionScopes"]) == ["eip155:1"]
    # invokeMethod gives the invoked method's bare result, as MetaMask answers
    assert seen["blockNumber"] == rpc("eth_blockNumber")
    assert int(seen["balance"], 16) == stored_balance
    signature = bytes.fromhex(seen["signature"][2:])
    message = b"hello"
    digest = keccak(b"\x19Ethereum Signed Message:\n5" + message)
    vrs = keys.Signature(signature[:64] + bytes([signature[64] - 27]))
    signer = vrs.recover_public_key_from_msg_hash(digest)
    assert signer.to_checksum_address().lower() == seen["account"].lower()
    assert seen["after"]["sessionScopes"] == seen["session"]["sessionScopes"]

"""The devnet's multichain wallet: CAIP-25 sessions in-process and over ``WS /wallet``.

In-process tests drive a wallet on chains with a hand-moved clock, so notifications are exact;
the WebSocket tests talk to real devnets on loopback.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import httpx
import pytest
import websockets

from feeslab.caip import ChainId
from feeslab.devnet import spawn, start
from feeslab.devnet.chain import build_chains
from feeslab.devnet.errors import RpcError
from feeslab.devnet.wallet import SOLANA_MAINNET, DevnetWallet, WalletUser
from feeslab.errors import CaipError

SOLANA = str(SOLANA_MAINNET)
BLOCK_TIME = 12.0
READS = ["eth_blockNumber", "eth_getStorageAt", "eth_feeHistory", "eth_getBlockByNumber"]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def blocks(self, n: int) -> None:
        self.now += n * BLOCK_TIME


@pytest.fixture(scope="module")
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="module")
def wallet(clock) -> DevnetWallet:
    return DevnetWallet(build_chains(7, block_time=BLOCK_TIME, clock=clock), 7)


@pytest.fixture
def conn(wallet):
    connection = wallet.connect()
    yield connection
    connection.close()
    wallet.user = WalletUser()


def scope(methods=READS, notifications=(), **extra) -> dict[str, Any]:
    return {"methods": list(methods), "notifications": list(notifications), **extra}


def create(conn, optional: dict | None = None, **params) -> dict:
    if optional is not None:
        params["optionalScopes"] = optional
    return conn.request("wallet_createSession", params)


def invoke(conn, chain: str, method: str, params: Any = None) -> Any:
    request: dict[str, Any] = {"method": method}
    if params is not None:
        request["params"] = params
    return conn.request("wallet_invokeMethod", {"scope": chain, "request": request})


def code_of(call, *args, **kwargs) -> int:
    with pytest.raises(RpcError) as caught:
        call(*args, **kwargs)
    return caught.value.code


def message_of(call, *args, **kwargs) -> str:
    with pytest.raises(RpcError) as caught:
        call(*args, **kwargs)
    return caught.value.message


def keys_anywhere(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys_anywhere(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys_anywhere(v)}
    return set()


# -- accounts ---------------------------------------------------------------------------------


def test_accounts_are_derived_from_the_seed(wallet):
    from eth_utils import is_checksum_address

    evm = [a.address for a in wallet.accounts[ChainId("eip155", "1")]]
    assert len(evm) == 3 and len(set(evm)) == 3 and all(map(is_checksum_address, evm))
    for chain in ("eip155:11155111", "eip155:137", "eip155:8453"):  # one key, every EVM chain
        assert [a.address for a in wallet.accounts[ChainId.parse(chain)]] == evm
    solana = [a.address for a in wallet.accounts[SOLANA_MAINNET]]
    assert len(solana) == 3 and all(len(b58decode(a)) == 32 for a in solana)
    again = DevnetWallet(build_chains(7), 7)
    other = DevnetWallet(build_chains(7), 8)
    assert again.accounts == wallet.accounts
    assert {a.address for a in other.accounts[SOLANA_MAINNET]}.isdisjoint(solana)
    assert {a.address for a in other.accounts[ChainId("eip155", "1")]}.isdisjoint(evm)


# -- wallet_createSession ------------------------------------------------------------------------


def test_lifecycle_create_get_invoke_revoke(conn, wallet):
    created = create(conn, {"eip155:1": scope(), "eip155:137": scope(["eth_blockNumber"])})
    assert list(created) == ["sessionScopes", "sessionProperties"]
    assert list(created["sessionScopes"]) == ["eip155:1", "eip155:137"]
    granted = created["sessionScopes"]["eip155:1"]
    assert granted["methods"] == READS and granted["notifications"] == []
    first = wallet.accounts[ChainId("eip155", "1")][0]
    assert granted["accounts"] == [str(first)]  # the user selects one account
    assert conn.request("wallet_getSession", {}) == {"sessionScopes": created["sessionScopes"]}
    answer = invoke(conn, "eip155:137", "eth_blockNumber")
    polygon = wallet.chain(ChainId("eip155", "137"))
    # the invoked method's bare result, as MetaMask's handler and its official client answer
    assert answer == hex(polygon.head())
    assert conn.request("wallet_revokeSession", {}) is True
    assert conn.request("wallet_getSession", {}) == {"sessionScopes": {}}
    assert code_of(invoke, conn, "eip155:137", "eth_blockNumber") == 4100
    assert conn.request("wallet_revokeSession", {}) is True  # also without a session


def test_no_session_ids_anywhere(conn):
    created = create(conn, {"eip155:1": scope()}, sessionId="0xdeadbeef")
    session = conn.request("wallet_getSession", {"sessionId": "0xdeadbeef"})
    assert "sessionId" not in keys_anywhere(created) | keys_anywhere(session)


def test_session_properties_5302_and_unknown_keys_dropped(conn):
    assert code_of(create, conn, {"eip155:1": scope()}, sessionProperties={}) == 5302
    assert message_of(create, conn, {"eip155:1": scope()}, sessionProperties={}) == (
        "Invalid sessionProperties requested"
    )
    assert code_of(create, conn, {"eip155:1": scope()}, sessionProperties=["expiry"]) == 5302
    props = {"expiry": "2030-01-01T00:00:00Z", "globalConfig": {"a": 1}, "sneaky": True}
    created = create(conn, {"eip155:1": scope()}, sessionProperties=props)
    assert created["sessionProperties"] == {
        "expiry": "2030-01-01T00:00:00Z",
        "globalConfig": {"a": 1},
    }


def test_params_must_be_an_object(conn):
    for params in ([], ["optionalScopes"], "x", None):
        with pytest.raises(RpcError) as caught:
            conn.dispatch(None, "wallet_createSession", params)
        assert caught.value.code == -32602
        assert caught.value.message == "Invalid method parameter(s)."


def test_5100_when_no_requested_network_is_supported(conn):
    for optional in (
        {"eip155:999": scope()},
        {"cosmos:cosmoshub-4": scope([])},
        {"eip155": scope(references=["10", "42161"])},
        {"eip155:1": {"methods": []}},  # invalid, so dropped: nothing left
        {},
    ):
        assert code_of(create, conn, optional) == 5100
        assert message_of(create, conn, optional) == "Requested networks are not supported"
    assert code_of(create, conn) == 5100  # no scopes at all


def test_invalid_scopes_are_dropped_silently(conn):
    created = create(
        conn,
        {
            "eip155:1": scope(),
            "eip155:137": {"methods": ["eth_blockNumber"]},  # no notifications
            "eip155:8453": scope(references=["8453"]),  # references on a chain key
            "eip155:11155111": scope(rpcEndpoints=["https://x"]),  # an unsupported member
            "not a key": scope(),
            "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp": "not an object",
        },
    )
    assert list(created["sessionScopes"]) == ["eip155:1"]


def test_required_scopes_are_treated_as_optional(conn):
    created = conn.request(
        "wallet_createSession",
        {
            "requiredScopes": {"eip155:999": scope(), "eip155:1": scope(["eth_blockNumber"])},
            "optionalScopes": {"eip155:1": scope(["eth_feeHistory"])},
        },
    )
    # the unsupported required chain does not fail the request; duplicates merge
    assert list(created["sessionScopes"]) == ["eip155:1"]
    assert created["sessionScopes"]["eip155:1"]["methods"] == ["eth_blockNumber", "eth_feeHistory"]


def test_unsupported_methods_notifications_and_accounts_are_filtered(conn, wallet):
    mine = wallet.accounts[ChainId("eip155", "1")][1]
    created = create(
        conn,
        {
            "eip155": scope(
                ["eth_blockNumber", "eth_sendTransaction", "wallet_nope"],
                ["eth_subscription", "accountsChanged"],
                references=["1", "137", "10"],
                accounts=[
                    "eip155:1:" + mine.address.lower(),  # ours, in another case: kept
                    "eip155:1:0x000000000000000000000000000000000000dEaD",  # not ours
                    "eip155:1:not/valid",  # malformed: dropped, not an error
                ],
            )
        },
    )
    scopes = created["sessionScopes"]
    assert list(scopes) == ["eip155:1", "eip155:137"]  # 10 is not a devnet chain
    assert scopes["eip155:1"] == {
        "methods": ["eth_blockNumber"],
        "notifications": ["eth_subscription"],
        "accounts": [str(mine)],  # preselected, in the wallet's checksum form
    }
    assert scopes["eip155:137"]["accounts"] == [str(wallet.accounts[ChainId("eip155", "137")][0])]


def test_a_new_session_replaces_the_old_one(conn):
    create(conn, {"eip155:1": scope()})
    create(conn, {"eip155:137": scope()})
    assert list(conn.request("wallet_getSession", {})["sessionScopes"]) == ["eip155:137"]
    assert code_of(invoke, conn, "eip155:1", "eth_blockNumber") == 4100


def test_the_non_evm_namespace(conn, wallet):
    created = create(conn, {SOLANA: scope(["signMessage", "signAndSendTransaction"])})
    assert created["sessionScopes"][SOLANA] == {
        "methods": ["signMessage"],
        "notifications": [],
        "accounts": [str(wallet.accounts[SOLANA_MAINNET][0])],
    }


# -- the user ----------------------------------------------------------------------------------


def test_the_user_narrows_the_grant(conn, wallet):
    wallet.user = WalletUser(
        chains=["eip155:1", SOLANA], deny_methods=["eth_feeHistory"], accounts_per_scope=0
    )
    created = create(conn, {"eip155:1": scope(), "eip155:137": scope(), SOLANA: scope([])})
    scopes = created["sessionScopes"]
    assert list(scopes) == ["eip155:1", SOLANA]
    assert scopes["eip155:1"]["methods"] == [m for m in READS if m != "eth_feeHistory"]
    assert scopes["eip155:1"]["accounts"] == [] and scopes[SOLANA]["accounts"] == []
    assert code_of(invoke, conn, "eip155:1", "eth_feeHistory", [1, "latest"]) == 4100


def test_the_user_may_grant_every_account(conn, wallet):
    wallet.user = WalletUser(accounts_per_scope=None)
    created = create(conn, {"eip155:8453": scope()})
    owned = wallet.accounts[ChainId("eip155", "8453")]
    assert created["sessionScopes"]["eip155:8453"]["accounts"] == [str(a) for a in owned]


def test_the_user_rejects_with_4001(conn, wallet):
    wallet.user = WalletUser(approve=False)
    assert code_of(create, conn, {"eip155:1": scope()}) == 4001
    wallet.user = WalletUser(chains=["eip155:8453"])  # declines every chain asked
    assert message_of(create, conn, {"eip155:1": scope()}) == "User rejected the request."
    assert conn.request("wallet_getSession", {}) == {"sessionScopes": {}}


def test_user_policy_input_is_checked():
    with pytest.raises(CaipError, match=r"chains\[0\]"):
        WalletUser(chains=["mainnet"])
    with pytest.raises(ValueError, match="accounts_per_scope"):
        WalletUser(accounts_per_scope=-1)


def test_5000_when_the_wallet_fails_unexpectedly(conn, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("approval screen crashed")

    monkeypatch.setattr(WalletUser, "decide", broken)
    assert code_of(create, conn, {"eip155:1": scope()}) == 5000
    assert message_of(create, conn, {"eip155:1": scope()}) == "Unknown error with request"
    monkeypatch.undo()
    create(conn, {"eip155:1": scope()})
    monkeypatch.setattr(type(conn), "_set_grant", broken)
    assert code_of(conn.request, "wallet_revokeSession", {}) == 5000


# -- wallet_invokeMethod and the permission rule (§4.3 rule 2) ------------------------------------


def test_only_a_granted_scope_and_method_may_be_invoked(conn):
    assert code_of(invoke, conn, "eip155:1", "eth_blockNumber") == 4100  # no session yet
    create(conn, {"eip155:1": scope(["eth_blockNumber"]), "eip155:137": scope(["eth_chainId"])})
    assert invoke(conn, "eip155:1", "eth_blockNumber") == hex(conn.wallet.chains.by_id[1].head())
    assert code_of(invoke, conn, "eip155:1", "eth_chainId") == 4100  # granted on 137 only
    assert code_of(invoke, conn, "eip155:8453", "eth_blockNumber") == 4100  # not granted
    assert code_of(invoke, conn, "eip155:1", "eth_getStorageAt") == 4100
    assert message_of(invoke, conn, "eip155:8453", "eth_blockNumber") == (
        "The requested account and/or method has not been authorized by the user."
    )
    for params in (
        {"scope": "eip155:1"},
        {"scope": "eip155:1", "request": {"params": []}},
        {"scope": "not a scope", "request": {"method": "eth_blockNumber"}},
        {"request": {"method": "eth_blockNumber"}},
        [],
    ):
        assert code_of(conn.request, "wallet_invokeMethod", params) == -32602


def test_invocations_reach_the_scopes_own_chain(conn, wallet):
    create(conn, {f"eip155:{n}": scope(["eth_chainId", "eth_blockNumber"]) for n in (1, 8453)})
    for n in (1, 8453):
        chain = wallet.chain(ChainId.eip155(n))
        assert invoke(conn, f"eip155:{n}", "eth_chainId", {}) == hex(n)
        assert invoke(conn, f"eip155:{n}", "eth_blockNumber") == hex(
            chain.head()
        )


def test_node_errors_pass_through(conn):
    create(conn, {"eip155:1": scope()})
    with pytest.raises(RpcError) as caught:
        invoke(conn, "eip155:1", "eth_getStorageAt", ["0x12", "0x0", "latest"])
    assert caught.value.code == -32602 and "invalid argument 0" in caught.value.message
    with pytest.raises(RpcError) as caught:  # an object of params is not positional
        invoke(conn, "eip155:1", "eth_getBlockByNumber", {"block": "latest"})
    assert caught.value.message == "non-array args"


def test_personal_sign_uses_a_granted_account(conn, wallet):
    from eth_account import Account
    from eth_account.messages import encode_defunct

    create(conn, {"eip155:1": scope(["personal_sign"])})
    account = wallet.accounts[ChainId("eip155", "1")][0]
    message = b"feeslab says hello"
    signature = invoke(conn, "eip155:1", "personal_sign", ["0x" + message.hex(), account.address])
    signature = signature
    assert len(signature) == 132 and int(signature[-2:], 16) in (27, 28)
    signer = Account.recover_message(encode_defunct(message), signature=signature)
    assert signer == account.address
    other = wallet.accounts[ChainId("eip155", "1")][1]  # the wallet's, but not granted
    assert code_of(invoke, conn, "eip155:1", "personal_sign", ["0x00", other.address]) == 4100
    assert code_of(invoke, conn, "eip155:1", "personal_sign", ["0x00"]) == -32602


_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def b58decode(text: str) -> bytes:
    number = 0
    for char in text:
        number = number * 58 + _B58.index(char)
    body = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return b"\0" * (len(text) - len(text.lstrip("1"))) + body


def test_solana_sign_message_verifies_against_the_address(conn, wallet):
    from Crypto.Signature import eddsa

    create(conn, {SOLANA: scope(["signMessage"])})
    account = wallet.accounts[SOLANA_MAINNET][0]
    message = b"sign in to feeslab"
    params = {
        "account": {"address": account.address},
        "message": base64.b64encode(message).decode(),
    }
    answer = invoke(conn, SOLANA, "signMessage", params)
    assert answer["signatureType"] == "ed25519"
    assert base64.b64decode(answer["signedMessage"]) == message
    key = eddsa.import_public_key(b58decode(account.address))
    eddsa.new(key, "rfc8032").verify(message, b58decode(answer["signature"]))  # raises if bad
    with pytest.raises(ValueError):
        eddsa.new(key, "rfc8032").verify(b"another message", b58decode(answer["signature"]))
    stranger = wallet.accounts[SOLANA_MAINNET][2]
    params["account"] = {"address": stranger.address}
    assert code_of(invoke, conn, SOLANA, "signMessage", params) == 4100
    assert code_of(invoke, conn, SOLANA, "signMessage", {"message": "!!"}) == -32602


# -- notifications ------------------------------------------------------------------------------


def heads(messages: list[dict]) -> list[int]:
    return [
        int(m["params"]["notification"]["params"]["result"]["number"], 16)
        for m in messages
        if m["method"] == "wallet_notify"
    ]


def test_new_heads_come_as_wallet_notify_in_order(conn, wallet, clock):
    create(
        conn,
        {
            "eip155:1": scope(
                ["eth_subscribe", "eth_unsubscribe", "eth_getBlockByNumber"], ["eth_subscription"]
            )
        },
    )
    mainnet = wallet.chain(ChainId("eip155", "1"))
    start_head = mainnet.head()
    sub = invoke(conn, "eip155:1", "eth_subscribe", ["newHeads"])
    assert conn.poll() == []
    clock.blocks(3)
    first = conn.poll()
    clock.blocks(2)
    second = conn.poll()
    assert heads(first) == [start_head + 1, start_head + 2, start_head + 3]
    assert heads(second) == [start_head + 4, start_head + 5]
    for message in first + second:
        assert "id" not in message and message["jsonrpc"] == "2.0"
        assert message["method"] == "wallet_notify"
        assert message["params"]["scope"] == "eip155:1"
        event = message["params"]["notification"]
        assert event["method"] == "eth_subscription"
        assert event["params"]["subscription"] == sub
        number = event["params"]["result"]["number"]
        block = invoke(conn, "eip155:1", "eth_getBlockByNumber", [number, False])
        assert event["params"]["result"]["hash"] == block["hash"]
    # and they stop with the subscription
    assert invoke(conn, "eip155:1", "eth_unsubscribe", [sub]) is True
    clock.blocks(2)
    assert conn.poll() == []


def test_subscribing_needs_the_notification_granted(conn, clock):
    create(conn, {"eip155:1": scope(["eth_subscribe"])})
    assert code_of(invoke, conn, "eip155:1", "eth_subscribe", ["newHeads"]) == 4100
    create(conn, {"eip155:1": scope(["eth_subscribe"], ["eth_subscription"])})
    assert code_of(invoke, conn, "eip155:1", "eth_subscribe", ["logs"]) == -32602


def test_revoking_ends_the_notifications(conn, clock):
    create(conn, {"eip155:1": scope(["eth_subscribe"], ["eth_subscription"])})
    invoke(conn, "eip155:1", "eth_subscribe", ["newHeads"])
    clock.blocks(1)
    assert len(heads(conn.poll())) == 1
    conn.request("wallet_revokeSession", {})
    clock.blocks(2)
    assert conn.poll() == []


def test_subscriptions_on_two_chains_stay_apart(conn, wallet, clock):
    both = {n: scope(["eth_subscribe"], ["eth_subscription"]) for n in ("eip155:1", "eip155:137")}
    create(conn, both)
    sub1 = invoke(conn, "eip155:1", "eth_subscribe", ["newHeads"])
    sub137 = invoke(conn, "eip155:137", "eth_subscribe", ["newHeads"])
    assert sub1 != sub137
    clock.blocks(2)
    messages = conn.poll()
    by_scope: dict[str, list] = {}
    for m in messages:
        by_scope.setdefault(m["params"]["scope"], []).append(m)
    assert {
        m["params"]["notification"]["params"]["subscription"] for m in by_scope["eip155:1"]
    } == {sub1}
    assert len(by_scope["eip155:1"]) == len(by_scope["eip155:137"]) == 2
    polygon = wallet.chain(ChainId("eip155", "137")).head()
    assert heads(by_scope["eip155:137"]) == [polygon - 1, polygon]


def test_user_changes_send_session_changed_with_the_full_scopes(conn, wallet, clock):
    owned = wallet.accounts[ChainId("eip155", "1")]
    create(
        conn,
        {
            "eip155:1": scope(["eth_subscribe", "eth_blockNumber"], ["eth_subscription"]),
            "eip155:137": scope(["eth_blockNumber"]),
        },
    )
    invoke(conn, "eip155:137", "eth_blockNumber")
    assert wallet.change_grant(remove_chains=["eip155:137"]) == 1
    (changed,) = conn.poll()
    assert "id" not in changed and changed["method"] == "wallet_sessionChanged"
    assert changed["params"] == {
        "sessionScopes": conn.request("wallet_getSession")["sessionScopes"]
    }
    assert list(changed["params"]["sessionScopes"]) == ["eip155:1"]
    assert code_of(invoke, conn, "eip155:137", "eth_blockNumber") == 4100

    assert wallet.change_grant(add_accounts=[str(owned[2])]) == 1
    assert wallet.change_grant(remove_accounts=[str(owned[0])], remove_methods=["eth_blockNumber"])
    added, removed = conn.poll()
    assert added["params"]["sessionScopes"]["eip155:1"]["accounts"] == [
        str(owned[0]),
        str(owned[2]),
    ]
    assert removed["params"]["sessionScopes"]["eip155:1"] == {
        "methods": ["eth_subscribe"],
        "notifications": ["eth_subscription"],
        "accounts": [str(owned[2])],
    }
    assert code_of(invoke, conn, "eip155:1", "eth_blockNumber") == 4100
    assert wallet.change_grant(remove_chains=["eip155:10"]) == 0  # nothing to change
    assert conn.poll() == []


def test_the_user_disconnecting_ends_session_and_subscriptions(conn, wallet, clock):
    create(conn, {"eip155:1": scope(["eth_subscribe"], ["eth_subscription"])})
    invoke(conn, "eip155:1", "eth_subscribe", ["newHeads"])
    clock.blocks(1)
    assert len(heads(conn.poll())) == 1
    assert wallet.change_grant(revoke=True) == 1
    clock.blocks(1)
    (changed,) = conn.poll()  # no head after the disconnection
    assert changed["method"] == "wallet_sessionChanged"
    assert changed["params"] == {"sessionScopes": {}}
    assert conn.request("wallet_getSession") == {"sessionScopes": {}}
    clock.blocks(1)
    assert conn.poll() == []


def test_change_grant_checks_its_input(wallet):
    with pytest.raises(CaipError, match=r"remove_chains\[0\]"):
        wallet.change_grant(remove_chains=["polygon"])
    with pytest.raises(CaipError, match=r"add_accounts\[0\].*not an account of this wallet"):
        wallet.change_grant(add_accounts=["eip155:1:0x000000000000000000000000000000000000dEaD"])
    with pytest.raises(CaipError, match="remove_chains"):
        wallet.change_grant(remove_chains="eip155:1")


def test_sessions_belong_to_their_connection(wallet):
    first, second = wallet.connect(), wallet.connect()
    try:
        create(first, {"eip155:1": scope()})
        assert second.request("wallet_getSession") == {"sessionScopes": {}}
        assert code_of(invoke, second, "eip155:1", "eth_blockNumber") == 4100
        assert first in wallet.connections
        first.close()
        assert first not in wallet.connections and second in wallet.connections
        assert first.request("wallet_getSession") == {"sessionScopes": {}}
    finally:
        first.close()
        second.close()


def test_the_wallet_keeps_its_own_tally_at_the_service_prices(conn, wallet, clock):
    before = wallet.usage().by_method
    create(conn, {"eip155:1": scope(["eth_getStorageAt", "eth_subscribe"], ["eth_subscription"])})
    invoke(conn, "eip155:1", "eth_getStorageAt", ["0x" + "00" * 20, "0x0", "latest"])
    invoke(conn, "eip155:1", "eth_subscribe", ["newHeads"])
    clock.blocks(2)
    assert len(heads(conn.poll())) == 2
    after = wallet.usage().by_method
    spent = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    assert spent == {"eth_getStorageAt": 80, "eth_subscribe": 5, "newHeads": 100}


# -- over WebSocket ------------------------------------------------------------------------------


def rpc(method: str, params: Any, id_: int = 1) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def test_websocket_lifecycle_and_batches(devnet):
    url = f"{devnet.ws_url}/wallet"

    async def run() -> list:
        async with websockets.connect(url) as ws:
            out = []
            for message in (
                rpc("wallet_createSession", {"optionalScopes": {"eip155:1": scope()}}),
                [rpc("wallet_getSession", {}, 2), rpc("eth_blockNumber", [], 3)],
                rpc(
                    "wallet_invokeMethod",
                    {"scope": "eip155:1", "request": {"method": "eth_blockNumber"}},
                    4,
                ),
                rpc("wallet_revokeSession", {}, 5),
                "not json",
            ):
                await ws.send(message if isinstance(message, str) else json.dumps(message))
                out.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
        return out

    created, batch, invoked, revoked, garbage = asyncio.run(run())
    assert list(created["result"]["sessionScopes"]) == ["eip155:1"]
    assert batch[0] == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {"sessionScopes": created["result"]["sessionScopes"]},
    }
    assert batch[1]["error"]["code"] == -32601  # node methods go through wallet_invokeMethod
    head = httpx.post(f"{devnet.url}/v3/{devnet.api_key}", json=rpc("eth_blockNumber", []))
    assert invoked["result"] == head.json()["result"]
    assert revoked == {"jsonrpc": "2.0", "id": 5, "result": True}
    assert garbage["error"]["code"] == -32700


def credits(handle) -> dict:
    auth = (handle.api_key, handle.api_key_secret)
    return httpx.get(f"{handle.url}/devnet/credits", auth=auth, timeout=60).json()


def test_websocket_traffic_is_charged_to_the_key(devnet):
    # the wallet's node traffic is metered like the key's other traffic, at the same prices
    before = credits(devnet)

    async def run() -> None:
        async with websockets.connect(f"{devnet.ws_url}/wallet") as ws:
            for message in (
                rpc("wallet_createSession", {"optionalScopes": {"eip155:1": scope()}}),
                rpc(
                    "wallet_invokeMethod",
                    {"scope": "eip155:1", "request": {"method": "eth_blockNumber"}},
                    2,
                ),
            ):
                await ws.send(json.dumps(message))
                assert "result" in json.loads(await asyncio.wait_for(ws.recv(), 30))

    asyncio.run(run())
    after = credits(devnet)
    assert after["spent"] - before["spent"] == 80  # eth_blockNumber; createSession is free
    spent = after["by_method"]["eth_blockNumber"] - before["by_method"].get("eth_blockNumber", 0)
    assert spent == 80


def test_websocket_traffic_stops_at_the_daily_balance():
    with start(seed=7, daily_credits=100, warm=False) as handle:

        async def run() -> list[dict]:
            async with websockets.connect(f"{handle.ws_url}/wallet") as ws:
                out = []
                invoke_head = {"scope": "eip155:1", "request": {"method": "eth_blockNumber"}}
                for message in (
                    rpc("wallet_createSession", {"optionalScopes": {"eip155:1": scope()}}),
                    rpc("wallet_invokeMethod", invoke_head, 2),
                    rpc("wallet_invokeMethod", invoke_head, 3),
                ):
                    await ws.send(json.dumps(message))
                    out.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
                return out

        _created, first, second = asyncio.run(run())
        assert first["result"] == hex(handle.chains.by_id[1].head())
        # 80 of 100 spent: the next 80 does not fit (the key's own 402 answer, as an error)
        assert second["error"]["code"] == 402
        assert second["error"]["message"] == "Payment Required"
        assert credits(handle)["spent"] == 80


@pytest.mark.parametrize(
    "origin",
    ["https://evil.example", "http://192.0.2.7:8000", "null", "http://localhost.evil.example"],
)
def test_websocket_refuses_pages_of_other_origins(devnet, origin):
    async def run() -> None:
        async with websockets.connect(f"{devnet.ws_url}/wallet", origin=origin) as ws:
            await ws.send(json.dumps(rpc("wallet_getSession", {})))
            await ws.recv()

    with pytest.raises(websockets.InvalidStatus) as info:
        asyncio.run(run())
    assert info.value.response.status_code == 403
    body = json.loads(info.value.response.body)
    assert origin in body["error"] and "wallet-allow-origin" in body["error"]


@pytest.mark.parametrize(
    "origin", [None, "http://localhost:8888", "http://127.0.0.1:5173", "http://[::1]:3000"]
)
def test_websocket_accepts_loopback_pages_and_non_browser_clients(devnet, origin):
    async def run() -> dict:
        async with websockets.connect(f"{devnet.ws_url}/wallet", origin=origin) as ws:
            await ws.send(json.dumps(rpc("wallet_getSession", {})))
            return json.loads(await asyncio.wait_for(ws.recv(), 30))

    assert asyncio.run(run())["result"] == {"sessionScopes": {}}


def test_an_allowed_origin_may_connect():
    page = "https://dapp.example"
    with start(seed=7, warm=False, wallet_allow_origin=[page]) as handle:

        async def run(origin: str) -> dict:
            async with websockets.connect(f"{handle.ws_url}/wallet", origin=origin) as ws:
                await ws.send(json.dumps(rpc("wallet_getSession", {})))
                return json.loads(await asyncio.wait_for(ws.recv(), 30))

        assert asyncio.run(run(page))["result"] == {"sessionScopes": {}}
        with pytest.raises(websockets.InvalidStatus):
            asyncio.run(run("https://other.example"))
    with pytest.raises(ValueError, match="wallet_allow_origin"):
        start(seed=7, warm=False, wallet_allow_origin=["dapp.example"])


def test_websocket_notifications_in_order_and_none_after_revoke():
    with start(seed=7, block_time=0.2, warm=False) as handle:
        url = f"{handle.ws_url}/wallet"

        async def run() -> tuple[list, list, list]:
            async with websockets.connect(url) as ws:
                create_params = {
                    "optionalScopes": {"eip155:1": scope(["eth_subscribe"], ["eth_subscription"])}
                }
                await ws.send(json.dumps(rpc("wallet_createSession", create_params)))
                await asyncio.wait_for(ws.recv(), 30)
                subscribe = {
                    "scope": "eip155:1",
                    "request": {"method": "eth_subscribe", "params": ["newHeads"]},
                }
                await ws.send(json.dumps(rpc("wallet_invokeMethod", subscribe, 2)))
                first = json.loads(await asyncio.wait_for(ws.recv(), 30))
                events = [json.loads(await asyncio.wait_for(ws.recv(), 30)) for _ in range(4)]
                await ws.send(json.dumps(rpc("wallet_revokeSession", {}, 3)))
                tail = []
                while True:  # events already on their way may come before the answer
                    message = json.loads(await asyncio.wait_for(ws.recv(), 30))
                    tail.append(message)
                    if message.get("id") == 3:
                        break
                with pytest.raises(TimeoutError):
                    tail.append(json.loads(await asyncio.wait_for(ws.recv(), 0.8)))
                return [first], events, tail

        (first,), events, tail = asyncio.run(run())
        sub = first["result"]
        numbers = heads(events + tail[:-1])
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
        assert all(e["params"]["notification"]["params"]["subscription"] == sub for e in events)
        assert tail[-1] == {"jsonrpc": "2.0", "id": 3, "result": True}
        assert handle.wallet.usage().by_method["newHeads"] >= 4 * 50


def test_playing_the_user_over_http_reaches_websocket_clients(devnet):
    url = f"{devnet.ws_url}/wallet"
    control = f"{devnet.url}/devnet/wallet"
    auth = (devnet.api_key, devnet.api_key_secret)
    assert httpx.post(control, json={"revoke": True}).status_code == 401
    assert httpx.get(control, auth=auth).status_code == 405
    refused = httpx.post(control, json={"drop": ["eip155:1"]}, auth=auth)
    assert refused.status_code == 400 and "drop" in refused.json()["error"]
    assert httpx.post(control, content=b"{", auth=auth).status_code == 400
    bad_id = httpx.post(control, json={"remove_chains": ["nope"]}, auth=auth)
    assert bad_id.status_code == 400 and "remove_chains[0]" in bad_id.json()["error"]
    assert httpx.post(control, json={"add_accounts": 5}, auth=auth).status_code == 400

    async def run() -> tuple[dict, dict]:
        async with websockets.connect(url) as ws:
            both = {"eip155:1": scope(), "eip155:137": scope()}
            await ws.send(json.dumps(rpc("wallet_createSession", {"optionalScopes": both})))
            await asyncio.wait_for(ws.recv(), 30)
            changed = await asyncio.to_thread(
                httpx.post, control, json={"remove_chains": ["eip155:137"]}, auth=auth
            )
            note = json.loads(await asyncio.wait_for(ws.recv(), 30))
            return changed.json(), note

    answer, note = asyncio.run(run())
    assert answer == {"changed": 1}
    assert note["method"] == "wallet_sessionChanged" and "id" not in note
    assert list(note["params"]["sessionScopes"]) == ["eip155:1"]


@pytest.mark.parametrize(
    ("edits", "field"),
    [
        ({"remove_methods": [[]]}, "remove_methods[0]"),
        ({"remove_methods": [{}]}, "remove_methods[0]"),
        ({"remove_chains": ["eip155:1", 7]}, "remove_chains[1]"),
        ({"remove_accounts": [None]}, "remove_accounts[0]"),
        ({"add_accounts": [["x"]]}, "add_accounts[0]"),
        ({"remove_methods": "eth_call"}, "remove_methods"),
        ({"revoke": "yes"}, "revoke"),
        ({"revoke": 1}, "revoke"),
    ],
)
def test_playing_the_user_checks_shapes(devnet, edits, field):
    auth = (devnet.api_key, devnet.api_key_secret)
    answer = httpx.post(f"{devnet.url}/devnet/wallet", json=edits, auth=auth, timeout=30)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"].startswith(f"{field}:")


def test_playing_the_user_caps_the_body(devnet):
    auth = (devnet.api_key, devnet.api_key_secret)
    body = b'{"remove_methods": ["' + b"x" * (6 * 1024 * 1024) + b'"]}'
    answer = httpx.post(f"{devnet.url}/devnet/wallet", content=body, auth=auth, timeout=60)
    assert answer.status_code == 413
    assert "5242880" in answer.json()["error"]


def test_closing_the_socket_ends_its_session(devnet):
    wallet = devnet.wallet

    async def run() -> int:
        async with websockets.connect(f"{devnet.ws_url}/wallet") as ws:
            params = {"optionalScopes": {"eip155:1": scope()}}
            await ws.send(json.dumps(rpc("wallet_createSession", params)))
            await asyncio.wait_for(ws.recv(), 30)
            return len(wallet.connections)

    during = asyncio.run(run())
    for _ in range(100):  # the server notices the close a moment later
        if len(wallet.connections) < during:
            break
        asyncio.run(asyncio.sleep(0.02))
    assert len(wallet.connections) == during - 1


def test_feeslab_serve_wallet_allow_origin():
    page = "https://dapp.example"
    with spawn(seed=7, wallet_allow_origin=page) as served:
        url = f"{served.ws_url}/wallet"

        async def run(origin: str) -> dict:
            async with websockets.connect(url, origin=origin) as ws:
                await ws.send(json.dumps(rpc("wallet_getSession", {})))
                return json.loads(await asyncio.wait_for(ws.recv(), 30))

        assert asyncio.run(run(page))["result"] == {"sessionScopes": {}}
        with pytest.raises(websockets.InvalidStatus) as info:
            asyncio.run(run("https://other.example"))
        assert info.value.response.status_code == 403
    with pytest.raises(RuntimeError, match=r"wallet_allow_origin: 'dapp\.example'"):
        spawn(seed=7, wallet_allow_origin="dapp.example")

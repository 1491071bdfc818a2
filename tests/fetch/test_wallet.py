"""The wallet client against the devnet's wallet, over real WebSockets on loopback."""

from __future__ import annotations

import asyncio
import threading

import pytest
from eth_hash.auto import keccak

import feeslab
from feeslab.caip import ChainId, Scope, Session
from feeslab.devnet import start
from feeslab.devnet.wallet import WalletUser
from feeslab.errors import (
    CaipError,
    ConfigError,
    NotificationTimeout,
    RevertError,
    RpcError,
    TransportError,
    UserRejected,
    WalletError,
    WalletUnauthorized,
)
from feeslab.fetch.wallet import AsyncWalletClient, WalletClient, WalletNotification

READS = Scope(methods=["eth_blockNumber", "eth_getStorageAt", "eth_call", "eth_chainId"])
LIVE = Scope(methods=["eth_subscribe", "eth_unsubscribe"], notifications=["eth_subscription"])


@pytest.fixture
def wallet(devnet):
    with WalletClient(url=f"{devnet.ws_url}/wallet") as client:
        yield client
    devnet.wallet.user = WalletUser()


@pytest.fixture(scope="module")
def live():
    """A devnet whose chains grow every 0.2 s, for notifications."""
    with start(seed=7, block_time=0.2, warm=False) as handle:
        yield handle


def test_lifecycle(wallet, devnet, rpc):
    session = wallet.create(
        {"eip155:1": READS, "eip155:137": {"methods": ["eth_chainId"], "notifications": []}}
    )
    assert isinstance(session, Session) and wallet.session == session
    assert session.chains == [ChainId("eip155", "1"), ChainId("eip155", "137")]
    assert session["eip155:1"].methods == READS.methods
    assert len(session.accounts("eip155:1")) == 1
    assert wallet.get() == Session(session.scopes)  # getSession has no sessionProperties
    assert wallet.invoke("eip155:137", "eth_chainId") == hex(137)
    assert wallet.invoke("eip155:1", "eth_blockNumber") == rpc("eth_blockNumber")
    assert wallet.revoke() is True
    assert not wallet.get() and not wallet.session
    with pytest.raises(WalletUnauthorized) as caught:
        wallet.invoke("eip155:1", "eth_blockNumber")
    assert caught.value.code == 4100


def test_session_properties_are_sent_and_filtered(wallet):
    session = wallet.create(
        {"eip155:1": READS}, properties={"expiry": "2030-01-01T00:00:00Z", "made_up": 1}
    )
    assert session.properties == {"expiry": "2030-01-01T00:00:00Z"}
    with pytest.raises(WalletError) as caught:
        wallet.create({"eip155:1": READS}, properties={})
    assert caught.value.code == 5302 and type(caught.value) is WalletError


def test_unsupported_networks_5100(wallet):
    with pytest.raises(WalletError) as caught:
        wallet.create({"eip155:10": READS})
    assert caught.value.code == 5100
    assert caught.value.message == "Requested networks are not supported"


def test_required_scopes_are_sent_too(wallet):
    session = wallet.create({"eip155:1": READS}, required={"eip155:8453": READS})
    assert set(session.chains) == {ChainId("eip155", "1"), ChainId("eip155", "8453")}


def test_user_rejection_is_its_own_error(wallet, devnet):
    devnet.wallet.user = WalletUser(approve=False)
    with pytest.raises(UserRejected) as caught:
        wallet.create({"eip155:1": READS})
    assert caught.value.code == 4001 and isinstance(caught.value, WalletError)


def test_narrowed_grants_show_in_the_session(wallet, devnet):
    devnet.wallet.user = WalletUser(deny_methods=["eth_call"], accounts_per_scope=0)
    session = wallet.create({"eip155:1": READS})
    assert "eth_call" not in session["eip155:1"].methods and session.accounts() == []
    assert not session.allows("eip155:1", "eth_call")
    with pytest.raises(WalletUnauthorized):
        wallet.invoke("eip155:1", "eth_call", [{"to": "0x" + "00" * 20}, "latest"])


def test_bad_requests_are_refused_before_sending(wallet, devnet):
    before = len(devnet.wallet.connections)
    with pytest.raises(CaipError) as caught:
        wallet.create({"eip155:1": {"methods": ["eth_call", ""], "notifications": []}})
    assert caught.value.field == "scopes['eip155:1'].methods[1]"
    with pytest.raises(CaipError, match="scopes"):
        wallet.create({"mainnet": READS})
    with pytest.raises(CaipError) as caught:
        wallet.invoke("mainnet", "eth_blockNumber")
    assert caught.value.field == "scope"
    with pytest.raises(CaipError, match="method"):
        wallet.invoke("eip155:1", "")
    with pytest.raises(CaipError, match="properties"):
        wallet.create({"eip155:1": READS}, properties=[("expiry", "x")])
    assert len(devnet.wallet.connections) == before  # nothing was sent: no connection yet


def test_errors_of_invoked_methods_are_the_nodes(wallet, devnet):
    wallet.create({"eip155:1": READS})
    info = devnet.contracts
    address = next(c["address"] for c in info["contracts"] if c["name"] == "Reverter")
    (chain,) = [c for c in info["chains"] if c["chain_id"] == 1]
    call = {
        "from": "0x" + "00" * 20,
        "to": address,
        "data": "0x" + keccak(b"reasonRevert()")[:4].hex(),
    }
    with pytest.raises(RevertError) as caught:
        wallet.invoke("eip155:1", "eth_call", [call, hex(chain["contracts_block"] + 1)])
    assert caught.value.reason == "feeslab: not allowed"
    assert not isinstance(caught.value, WalletError)
    with pytest.raises(RpcError) as caught:
        wallet.invoke("eip155:1", "eth_getStorageAt", ["0x12", "0x0", "latest"])
    assert caught.value.code == -32602 and not isinstance(caught.value, WalletError)


def test_raw_requests_reach_the_wallet_unchecked(wallet):
    with pytest.raises(WalletError) as caught:
        wallet.request("wallet_createSession", {"optionalScopes": {"eip155:1": {"methods": []}}})
    assert caught.value.code == 5100  # the invalid scope was dropped, as MetaMask does
    with pytest.raises(RpcError) as caught:
        wallet.request("eth_blockNumber", {})
    assert caught.value.code == -32601


def test_notifications_as_iterator_and_callback_in_order(live):
    with WalletClient(url=f"{live.ws_url}/wallet") as wallet:
        seen: list[WalletNotification] = []
        threads: set[str] = set()

        def remember(note: WalletNotification) -> None:
            seen.append(note)
            threads.add(threading.current_thread().name)

        remove = wallet.on_notification(remember)
        wallet.create({"eip155:1": LIVE})
        sub = wallet.subscribe("eip155:1")
        notes = list(wallet.notifications(count=5, timeout=10))
        numbers = [int(n.result["number"], 16) for n in notes]
        assert numbers == list(range(numbers[0], numbers[0] + 5))
        for note in notes:
            assert note.method == "wallet_notify" and note.scope == ChainId("eip155", "1")
            assert note.name == "eth_subscription" and note.subscription == sub
        assert seen[:5] == notes  # the callback saw the same, in the same order
        assert threads == {"feeslab-loop"}  # the shared loop thread, not the caller's
        remove()
        count = len(seen)
        wallet.unsubscribe("eip155:1", sub)
        with pytest.raises(NotificationTimeout):  # drain what was in flight, then silence
            while True:
                wallet.next_notification(timeout=0.8)
        assert len(seen) == count


def test_session_changes_arrive_and_update_the_session(live):
    with WalletClient(url=f"{live.ws_url}/wallet") as wallet:
        wallet.create({"eip155:1": READS, "eip155:137": READS})
        assert live.wallet.change_grant(remove_chains=["eip155:137"]) >= 1
        (note,) = wallet.notifications(count=1, timeout=10)
        assert note.method == "wallet_sessionChanged"
        assert note.session.chains == [ChainId("eip155", "1")]
        assert wallet.session == note.session
        with pytest.raises(WalletUnauthorized):
            wallet.invoke("eip155:137", "eth_blockNumber")


def test_waiting_for_nothing_times_out(wallet):
    wallet.create({"eip155:1": READS})
    with pytest.raises(NotificationTimeout) as caught:
        list(wallet.notifications(count=2, timeout=0.3))
    assert isinstance(caught.value, TimeoutError) and isinstance(caught.value, TransportError)
    assert "0.3 s" in str(caught.value)


def test_async_client(live):
    async def main() -> tuple[Session, str, list[int]]:
        async with AsyncWalletClient(url=f"{live.ws_url}/wallet") as wallet:
            session = await wallet.create({"eip155:8453": LIVE.merge(READS)})
            chain_id = await wallet.invoke("eip155:8453", "eth_chainId")
            await wallet.subscribe("eip155:8453")
            heads = [int(n.result["number"], 16) async for n in wallet.notifications(count=3)]
            await wallet.revoke()
            return session, chain_id, heads

    session, chain_id, heads = asyncio.run(main())
    assert session.chains == [ChainId("eip155", "8453")] and chain_id == hex(8453)
    assert heads == list(range(heads[0], heads[0] + 3))


def test_the_blocking_client_works_inside_a_running_event_loop(devnet):
    async def notebook_cell() -> str:  # Jupyter runs cells inside a loop
        with WalletClient(url=f"{devnet.ws_url}/wallet") as wallet:
            wallet.create({"eip155:1": READS})
            return wallet.invoke("eip155:1", "eth_chainId")

    assert asyncio.run(notebook_cell()) == "0x1"


def test_a_lost_connection_is_not_silently_replaced():
    handle = start(seed=7, warm=False)
    wallet = WalletClient(url=f"{handle.ws_url}/wallet", timeout=5)
    try:
        wallet.create({"eip155:1": READS})
        handle.stop()
        with pytest.raises(TransportError, match="session ended"):
            wallet.invoke("eip155:1", "eth_chainId")
        with pytest.raises(TransportError):
            wallet.next_notification(timeout=1)
    finally:
        wallet.close()
        handle.stop()
    with pytest.raises(TransportError, match="closed"):
        wallet.get()


def test_unreachable_wallet_is_a_transport_error():
    with (
        WalletClient(url="ws://127.0.0.1:9/wallet", timeout=2) as wallet,
        pytest.raises(TransportError, match="cannot open"),
    ):
        wallet.get()


# -- Lab.wallet ----------------------------------------------------------------------------------


def test_lab_wallet_on_a_devnet_url(lab, rpc):
    assert lab.wallet_url.endswith("/wallet") and lab.wallet_url.startswith("ws://")
    session = lab.wallet.create({"eip155:1": READS})
    assert lab.wallet is lab.wallet  # one client per Lab
    assert session.chains == [ChainId("eip155", "1")]
    assert lab.wallet.invoke("eip155:1", "eth_blockNumber") == rpc("eth_blockNumber")
    assert lab.credits.spent == 0  # the wallet's traffic is not the key's


def test_lab_on_the_service_has_no_wallet_but_explains(monkeypatch):
    monkeypatch.setenv("INFURA_API_KEY", "0123456789abcdef0123456789abcdef")
    lab = feeslab.connect(cache=False, progress=False)
    try:
        with pytest.raises(ConfigError, match="MetaMask's desktop extension"):
            lab.wallet  # noqa: B018
        assert "0123456789abcdef" not in repr(lab)
    finally:
        lab.close()
    with pytest.raises(ConfigError, match="block_time"):
        feeslab.connect(cache=False, block_time=1.0)
    explicit = feeslab.connect(cache=False, wallet_url="ws://127.0.0.1:1/wallet")
    assert explicit.wallet_url == "ws://127.0.0.1:1/wallet"
    explicit.close()


def test_wallet_errors_sit_in_the_one_tree():
    from feeslab import errors

    assert WalletError.__bases__ == (RpcError,)
    assert WalletUnauthorized.__bases__ == UserRejected.__bases__ == (WalletError,)
    assert CaipError.__mro__[1:3] == (errors.FeeslabError, ValueError)
    assert NotificationTimeout.__mro__[1:2] == (TransportError,)
    for name in (
        "CaipError",
        "NotificationTimeout",
        "WalletError",
        "WalletUnauthorized",
        "UserRejected",
    ):
        assert f"── {name}" in errors.__doc__
    assert isinstance(WalletError.from_wallet({"code": 4100, "message": "no"}), WalletUnauthorized)
    assert type(WalletError.from_wallet({"code": 5000, "message": "?"})) is WalletError
    revert = WalletError.from_wallet({"code": 3, "message": "execution reverted", "data": "0x"})
    assert isinstance(revert, RevertError)


def test_repr_names_the_client_and_where_it_connects(wallet, devnet):
    assert repr(wallet) == f"<WalletClient {devnet.ws_url}/wallet>"

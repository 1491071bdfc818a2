"""CAIP-2 chain IDs, CAIP-10 account IDs, CAIP-217 scopes and CAIP-25 sessions as values."""

from __future__ import annotations

import pytest

from feeslab.caip import (
    AccountId,
    ChainId,
    Scope,
    Session,
    normalize_scopes,
    parse_scope_key,
    parse_scopes,
)
from feeslab.errors import CaipError, FeeslabError

# examples from the CAIP-2 and CAIP-10 texts
CHAIN_IDS = [
    "eip155:1",
    "bip122:000000000019d6689c085ae165831e93",
    "cosmos:cosmoshub-3",
    "cosmos:Binance-Chain-Tigris",
    "starknet:SN_GOERLI",
    "chainstd:8c3444cf8970a9e41a706fab93e7a6c4",
    "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
]
ACCOUNT_IDS = [
    "eip155:1:0xab16a96D359eC26a11e2C2b3d8f8B8942d5Bfcdb",
    "bip122:000000000019d6689c085ae165831e93:128Lkh3S7CkDTBZ8W7BbpsN3YYizJMp8p6",
    "cosmos:cosmoshub-3:cosmos1t2uflqwqe0fsj0shcfkrvpukewcw40yjj6hdc0",
    "polkadot:b0a8d493285c2df73290dfb7e61f870f:5hmuyxw9xdgbpptgypokw4thfyoe3ryenebr381z9iaegmfy",
    "starknet:SN_GOERLI:0x02dd1b492765c064eac4039e3841aa5f382773b598097a40073bd8b48170ab57",
    "chainstd:8c3444cf8970a9e41a706fab93e7a6c4:6d9b0b4b9994e8a6afbd3dc3ed983cd51c755afb27cd1dc7825ef59c134a39f7",
    "hedera:mainnet:0.0.1234567890-zbhlt",
]


@pytest.mark.parametrize("text", CHAIN_IDS)
def test_chain_ids_round_trip(text):
    chain = ChainId.parse(text)
    assert str(chain) == text
    assert f"{chain.namespace}:{chain.reference}" == text
    assert ChainId.parse(chain) is chain


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("Eip155:1", "chain_id.namespace"),  # upper case
        ("ei:1", "chain_id.namespace"),  # too short
        ("eip155eip:1", "chain_id.namespace"),  # 9 characters
        ("eip155:", "chain_id.reference"),
        ("eip155:" + "1" * 33, "chain_id.reference"),
        ("eip155:1.5", "chain_id.reference"),
        ("eip155", "chain_id"),  # no colon
        (155, "chain_id"),
    ],
)
def test_bad_chain_ids_name_the_field(text, field):
    with pytest.raises(CaipError) as caught:
        ChainId.parse(text)
    assert caught.value.field == field
    assert str(caught.value).startswith(field + ":")
    # one tree, and a ValueError for code that catches those
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, FeeslabError)


def test_the_longest_legal_parts_pass_and_one_more_fails():
    assert str(ChainId.parse("abcdefgh:" + "x" * 32)).endswith("x" * 32)
    assert AccountId.parse("eip155:1:" + "a" * 128).address == "a" * 128
    with pytest.raises(CaipError, match=r"account\.address"):
        AccountId.parse("eip155:1:" + "a" * 129)


def test_eip155_constructor():
    assert ChainId.eip155(137) == ChainId.parse("eip155:137")
    with pytest.raises(CaipError):
        ChainId.eip155(-1)
    with pytest.raises(CaipError):
        ChainId.eip155(True)


@pytest.mark.parametrize("text", ACCOUNT_IDS)
def test_account_ids_round_trip(text):
    account = AccountId.parse(text)
    assert str(account) == text
    assert text.startswith(str(account.chain_id) + ":")
    assert account.namespace == text.split(":")[0]


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("eip155:1", "account"),  # no address
        ("0xab16a96D359eC26a11e2C2b3d8f8B8942d5Bfcdb", "account"),
        ("eip155:1:0xab/cd", "account.address"),
        ("EIP155:1:0xab", "account.chain_id.namespace"),
        (None, "account"),
    ],
)
def test_bad_account_ids_name_the_field(text, field):
    with pytest.raises(CaipError) as caught:
        AccountId.parse(text)
    assert caught.value.field == field


def test_accounts_compare_without_case_only_on_evm_chains():
    checksum = AccountId.parse("eip155:1:0xab16a96D359eC26a11e2C2b3d8f8B8942d5Bfcdb")
    assert checksum.same("eip155:1:0xab16a96d359ec26a11e2c2b3d8f8b8942d5bfcdb")
    assert not checksum.same("eip155:137:0xab16a96D359eC26a11e2C2b3d8f8B8942d5Bfcdb")
    sol = AccountId.parse("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp:9HFYJb4Kxf4rL1xM")
    assert sol.same("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp:9HFYJb4Kxf4rL1xM")
    assert not sol.same("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp:9hfyjb4kxf4rl1xm")


def test_scope_keys_are_chains_or_bare_namespaces():
    assert parse_scope_key("eip155:1") == ChainId("eip155", "1")
    assert parse_scope_key("eip155") == "eip155"
    with pytest.raises(CaipError, match="scope"):
        parse_scope_key("EIP155")


# -- CAIP-217 scope objects ------------------------------------------------------------------


def test_scope_object_round_trips_and_drops_repeats():
    obj = {
        "methods": ["eth_call", "eth_call", "eth_blockNumber"],
        "notifications": ["eth_subscription"],
        "accounts": ["eip155:1:0xab16a96D359eC26a11e2C2b3d8f8B8942d5Bfcdb"],
    }
    scope = Scope.from_json("eip155:1", obj)
    assert scope.methods == ("eth_call", "eth_blockNumber")
    assert scope.to_json() == {**obj, "methods": ["eth_call", "eth_blockNumber"]}
    assert Scope.from_json("eip155:1", scope.to_json()) == scope


@pytest.mark.parametrize(
    ("key", "obj", "field"),
    [
        ("eip155:1", {"notifications": []}, "s.methods"),
        ("eip155:1", {"methods": []}, "s.notifications"),
        ("eip155:1", {"methods": ["a", ""], "notifications": []}, "s.methods[1]"),
        ("eip155:1", {"methods": "eth_call", "notifications": []}, "s.methods"),
        ("eip155:1", {"methods": [], "notifications": [7]}, "s.notifications[0]"),
        ("eip155:1", {"methods": [], "notifications": [], "rpcEndpoints": []}, "s.rpcEndpoints"),
        ("eip155:1", {"methods": [], "notifications": [], "references": ["1"]}, "s.references"),
        ("eip155", {"methods": [], "notifications": []}, "s.references"),
        ("eip155", {"methods": [], "notifications": [], "references": []}, "s.references"),
        (
            "eip155",
            {"methods": [], "notifications": [], "references": ["1", "x.y"]},
            "s.references[1]",
        ),
        (
            "eip155:1",
            {"methods": [], "notifications": [], "accounts": ["eip155:137:0xab"]},
            "s.accounts[0]",
        ),
        ("eip155:1", {"methods": [], "notifications": [], "accounts": ["nope"]}, "s.accounts[0]"),
        (
            "eip155:1",
            {"methods": [], "notifications": [], "accounts": "eip155:1:0xab"},
            "s.accounts",
        ),
        (
            "eip155",
            {
                "methods": [],
                "notifications": [],
                "references": ["1"],
                "accounts": ["eip155:10:0xab"],
            },
            "s.accounts[0]",
        ),
        ("eip155:1", ["methods"], "s"),
    ],
)
def test_scope_rules_name_the_field(key, obj, field):
    with pytest.raises(CaipError) as caught:
        Scope.from_json(key, obj, field="s")
    assert caught.value.field == field


def test_the_wallet_namespace_needs_no_references():
    scope = Scope.from_json("wallet", {"methods": ["wallet_scanQRCode"], "notifications": []})
    assert scope.references is None


def test_scopes_object_names_the_scope_key_in_errors():
    with pytest.raises(CaipError) as caught:
        parse_scopes({"eip155:1": {"methods": ["x", ""], "notifications": []}})
    assert caught.value.field == "optionalScopes['eip155:1'].methods[1]"
    with pytest.raises(CaipError, match="optionalScopes"):
        parse_scopes(["eip155:1"])
    assert parse_scopes(None) == {}


def test_scope_values_accept_python_collections():
    scope = Scope(methods={"eth_call"}, accounts=["eip155:1:0xab"])
    assert scope.methods == ("eth_call",)
    assert scope.accounts == (AccountId.parse("eip155:1:0xab"),)
    with pytest.raises(CaipError, match=r"scope\.accounts\[0\]"):
        Scope(accounts=["0xab"])


def test_normalizing_flattens_references_and_merges_duplicates():
    scopes = parse_scopes(
        {
            "eip155": {
                "references": ["1", "137"],
                "methods": ["eth_call"],
                "notifications": [],
                "accounts": ["eip155:1:0xaa", "eip155:137:0xbb"],
            },
            "eip155:1": {"methods": ["eth_blockNumber", "eth_call"], "notifications": ["x"]},
        }
    )
    flat = normalize_scopes(scopes)
    assert list(flat) == [ChainId("eip155", "1"), ChainId("eip155", "137")]
    one, polygon = flat.values()
    assert one.methods == ("eth_call", "eth_blockNumber")
    assert one.notifications == ("x",)
    assert [str(a) for a in one.accounts] == ["eip155:1:0xaa"]
    assert [str(a) for a in polygon.accounts] == ["eip155:137:0xbb"]
    assert polygon.references is None


# -- sessions --------------------------------------------------------------------------------


def session_json() -> dict:
    return {
        "sessionScopes": {
            "eip155:1": {
                "methods": ["eth_getStorageAt"],
                "notifications": ["eth_subscription"],
                "accounts": ["eip155:1:0xab16a96D359eC26a11e2C2b3d8f8B8942d5Bfcdb"],
            },
            "eip155:137": {"methods": ["eth_feeHistory"], "notifications": [], "accounts": []},
        },
        "sessionProperties": {"expiry": "2030-01-01T00:00:00Z"},
    }


def test_session_reads_back_what_it_wrote():
    session = Session.from_json(session_json())
    assert session.to_json() == session_json()
    assert session.chains == [ChainId("eip155", "1"), ChainId("eip155", "137")]
    assert len(session) == 2 and "eip155:137" in session and "eip155:10" not in session
    assert "not a chain" not in session
    assert session["eip155:1"].methods == ("eth_getStorageAt",)
    assert [a.address for a in session.accounts()] == ["0xab16a96D359eC26a11e2C2b3d8f8B8942d5Bfcdb"]
    assert session.accounts("eip155:137") == [] and session.accounts("eip155:10") == []
    assert session.properties == {"expiry": "2030-01-01T00:00:00Z"}


def test_session_allows_only_granted_scope_and_method():
    session = Session.from_json(session_json())
    assert session.allows("eip155:1", "eth_getStorageAt")
    assert not session.allows("eip155:1", "eth_feeHistory")  # granted elsewhere only
    assert not session.allows("eip155:10", "eth_getStorageAt")


def test_empty_session_and_bad_sessions():
    assert not Session.from_json({"sessionScopes": {}})
    assert str(Session()) == "no session"
    with pytest.raises(CaipError, match=r"result\.sessionScopes\['eip155:1'\]\.methods"):
        Session.from_json({"sessionScopes": {"eip155:1": {"notifications": []}}})
    with pytest.raises(CaipError, match=r"result\.sessionProperties"):
        Session.from_json({"sessionScopes": {}, "sessionProperties": []})


def test_session_text_lists_chains_and_accounts():
    text = str(Session.from_json(session_json()))
    first, second = text.splitlines()
    assert first.startswith("eip155:1:") and "0xab16a96D359eC26a11e2C2b3d8f8B8942d5Bfcdb" in first
    assert second.startswith("eip155:137:") and second.endswith("accounts none")

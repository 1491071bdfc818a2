"""The fetch layer's exception tree: redaction everywhere, and reverts in every node's form."""

from __future__ import annotations

import base64

import pytest
from eth_abi import encode
from eth_hash.auto import keccak

from feeslab import errors as errors_module
from feeslab.errors import (
    AuthError,
    BudgetExceeded,
    ConfigError,
    CreditsExhausted,
    FeeslabError,
    ProtocolError,
    RateLimited,
    RevertError,
    RpcError,
    TransportError,
    redact,
)
from feeslab.fetch.transport import HTTPTransport, RpcCall

KEY = "0123456789abcdef0123456789abcdef"
SECRET = "fedcba9876543210fedcba9876543210"
BASIC = base64.b64encode(f"{KEY}:{SECRET}".encode()).decode()
LEAKY = (
    f"POST https://mainnet.infura.io/v3/{KEY} failed; Authorization: Basic {BASIC}; "
    f"https://{KEY}:{SECRET}@ipfs.infura.io:5001/api/v0/cat; key={KEY} secret={SECRET}"
)

ERROR_DATA = "0x08c379a0" + encode(["string"], ["feeslab: not allowed"]).hex()
UNAUTHORIZED_ABI = [
    {
        "type": "error",
        "name": "Unauthorized",
        "inputs": [{"name": "caller", "type": "address"}, {"name": "code", "type": "uint256"}],
    }
]
CALLER = "0x7718923578b117faa87307484d26dfb12d8029d3"


def panic_data(code: int) -> str:
    return "0x4e487b71" + encode(["uint256"], [code]).hex()


def custom_data(code: int) -> str:
    selector = keccak(b"Unauthorized(address,uint256)")[:4]
    return "0x" + selector.hex() + encode(["address", "uint256"], [CALLER, code]).hex()


# -- redaction ---------------------------------------------------------------------------------


def test_redact_hides_path_keys_basic_credentials_and_userinfo() -> None:
    text = redact(
        f"https://mainnet.infura.io/v3/{KEY}/ and wss://x/ws/v3/{KEY}?a=1 "
        f"Authorization: Basic {BASIC} https://u:p@host/path"
    )
    assert KEY not in text and BASIC not in text and "u:p@" not in text
    assert "/v3/***/" in text and "/ws/v3/***?a=1" in text
    assert "Basic ***" in text and "https://***@host/path" in text


def test_redact_hides_known_secrets_anywhere() -> None:
    text = redact(f"key={KEY} secret={SECRET} b64={BASIC}", [KEY, SECRET])
    assert text == "key=*** secret=*** b64=***"


def test_redact_leaves_ordinary_text_alone() -> None:
    text = "execution reverted: feeslab: not allowed (HTTP 500 from /v3)"
    assert redact(text, ["ab"]) == text  # a too-short "secret" is not applied


ALL_ERRORS = [
    lambda m, s: FeeslabError(m, secrets=s),
    lambda m, s: ConfigError(m, secrets=s),
    lambda m, s: TransportError(m, secrets=s),
    lambda m, s: ProtocolError(m, status=500, secrets=s),
    lambda m, s: AuthError(m, status=401, secrets=s),
    lambda m, s: RateLimited(m, retry_after=1.0, secrets=s),
    lambda m, s: CreditsExhausted(credits_spent=1, details=m, secrets=s),
    lambda m, s: RpcError(-32000, m, secrets=s),
    lambda m, s: RevertError(3, m, b"", secrets=s),
    lambda m, s: RpcError.from_object({"code": -32601, "message": m}, secrets=s),
    lambda m, s: RevertError.from_rpc({"code": 3, "message": m, "data": "0x"}, secrets=s),
]


@pytest.mark.parametrize("make", ALL_ERRORS)
@pytest.mark.parametrize("secrets", [(), (KEY, SECRET)])
def test_no_error_shows_a_key_or_secret(make, secrets) -> None:
    error = make(LEAKY, secrets)
    shown = f"{error} {error!r} {error.args}"
    # the URL, header and userinfo forms are recognised; a bare key needs secrets=
    assert f"/v3/{KEY}" not in shown and "/v3/***" in shown
    assert BASIC not in shown
    assert f"{KEY}:{SECRET}@" not in shown
    if secrets:
        assert KEY not in shown and SECRET not in shown


def test_budget_exceeded_redacts_and_reports_numbers() -> None:
    error = BudgetExceeded(planned=12_000, budget=10_000, spent=4_000)
    assert (error.planned, error.budget, error.spent) == (12_000, 10_000, 4_000)
    assert "12,000" in str(error) and "6,000" in str(error) and "budget=" in str(error)


def test_errors_raised_by_the_transport_never_show_the_key() -> None:
    url = f"http://127.0.0.1:9/v3/{KEY}"  # port 9 (discard): connection refused
    with HTTPTransport(url=url, retries=1, sleep=lambda s: None) as transport:
        assert KEY not in repr(transport)
        with pytest.raises(TransportError) as info:
            transport.handle_request([RpcCall("eth_chainId", [])])
    assert KEY not in str(info.value) and KEY not in repr(info.value)
    with pytest.raises(ConfigError) as config:
        HTTPTransport(url=f"ftp://host/v3/{KEY}")
    assert KEY not in str(config.value)


# -- the tree ------------------------------------------------------------------------------------


def test_one_tree_drawn_in_the_module_docstring() -> None:
    leaves = [ConfigError, TransportError, ProtocolError, AuthError, RateLimited]
    leaves += [CreditsExhausted, BudgetExceeded, RpcError]
    for cls in leaves:
        assert cls.__bases__ == (FeeslabError,)
        assert f"├── {cls.__name__}" in errors_module.__doc__ or (
            f"└── {cls.__name__}" in errors_module.__doc__
        )
    assert RevertError.__bases__ == (RpcError,)
    assert "└── RevertError" in errors_module.__doc__


def test_credits_exhausted_says_the_cache_is_kept_and_a_rerun_resumes() -> None:
    error = CreditsExhausted(credits_spent=2_400, details="You have reached your daily limit")
    assert error.credits_spent == 2_400
    text = str(error)
    assert "402" in text and "2,400" in text and "cache" in text and "resumes" in text
    assert "You have reached your daily limit" in text


# -- reverts -------------------------------------------------------------------------------------


def test_geth_error_string() -> None:
    error = RevertError.from_rpc(
        {"code": 3, "message": "execution reverted: feeslab: not allowed", "data": ERROR_DATA}
    )
    assert error.reason == "feeslab: not allowed"
    assert error.data == bytes.fromhex(ERROR_DATA[2:])
    assert error.panic_code is None and error.error_name is None
    assert error.code == 3


@pytest.mark.parametrize(
    ("code", "text"),
    [
        (0x01, "assert(false)"),
        (0x11, "arithmetic underflow or overflow"),
        (0x12, "division or modulo by zero"),
        (0x32, "out-of-bounds access of an array or bytesN"),
        (0x99, "unknown panic code: 0x99"),
    ],
)
def test_geth_panic(code: int, text: str) -> None:
    error = RevertError.from_rpc(
        {"code": 3, "message": f"execution reverted: {text}", "data": panic_data(code)}
    )
    assert error.panic_code == code
    assert error.reason == text


def test_custom_error_needs_the_abi() -> None:
    raw = {"code": 3, "message": "execution reverted", "data": custom_data(7)}
    plain = RevertError.from_rpc(raw)
    assert plain.error_name is None and plain.reason is None and len(plain.data) == 68
    decoded = RevertError.from_rpc(raw, abi=UNAUTHORIZED_ABI)
    assert decoded.error_name == "Unauthorized"
    assert decoded.error_args == (CALLER, 7)
    # also from an RpcError the transport handed back
    again = RevertError.from_rpc(RpcError.from_object(raw), abi=UNAUTHORIZED_ABI)
    assert again.error_args == (CALLER, 7)


def test_custom_error_with_a_tuple_argument() -> None:
    abi = [
        {
            "type": "error",
            "name": "Bad",
            "inputs": [
                {
                    "name": "p",
                    "type": "tuple[]",
                    "components": [{"type": "uint8"}, {"type": "bool"}],
                }
            ],
        }
    ]
    selector = keccak(b"Bad((uint8,bool)[])")[:4]
    data = "0x" + selector.hex() + encode(["(uint8,bool)[]"], [[(1, True), (2, False)]]).hex()
    error = RevertError.from_rpc({"code": 3, "message": "execution reverted", "data": data}, abi)
    assert error.error_name == "Bad"
    assert error.error_args == (((1, True), (2, False)),)


def test_empty_revert() -> None:
    error = RevertError.from_rpc({"code": 3, "message": "execution reverted"})
    assert error.data == b"" and error.reason is None and error.panic_code is None


def test_ganache7_with_hex_data() -> None:
    error = RevertError.from_rpc(
        {
            "code": -32000,
            "message": "VM Exception while processing transaction: revert feeslab: not allowed",
            "data": ERROR_DATA,
        }
    )
    assert error.reason == "feeslab: not allowed"
    assert error.code == -32000


def test_ganache7_with_an_object_holding_result() -> None:
    error = RevertError.from_rpc(
        {
            "code": -32000,
            "message": "VM Exception while processing transaction: revert",
            "data": {"message": "revert", "result": panic_data(0x11), "programCounter": 123},
        }
    )
    assert error.panic_code == 0x11
    assert error.reason == "arithmetic underflow or overflow"


def test_ganache6_and_hardhat_forms() -> None:
    ganache6 = RevertError.from_rpc(
        {
            "code": -32000,
            "message": "VM Exception while processing transaction: revert feeslab: not allowed",
            "data": {"0xabc": {"error": "revert", "return": ERROR_DATA}, "name": "RuntimeError"},
        }
    )
    assert ganache6.reason == "feeslab: not allowed"
    hardhat = RevertError.from_rpc(
        {
            "code": -32603,
            "message": "Error: VM Exception while processing transaction: reverted with "
            "reason string 'nope'",
        }
    )
    assert hardhat.reason == "nope" and hardhat.data == b""


def test_from_object_picks_revert_error_only_for_reverts() -> None:
    assert isinstance(
        RpcError.from_object({"code": 3, "message": "execution reverted"}), RevertError
    )
    ganache = {"code": -32000, "message": "VM Exception while processing transaction: revert x"}
    assert isinstance(RpcError.from_object(ganache), RevertError)
    plain = RpcError.from_object({"code": -32000, "message": "header not found", "data": 5})
    assert type(plain) is RpcError and plain.data == 5 and plain.raw["data"] == 5
    odd = RpcError.from_object("not an object")
    assert type(odd) is RpcError and odd.code is None


def test_reverts_from_the_devnet(devnet) -> None:
    contracts = devnet.contracts
    reverter = next(c for c in contracts["contracts"] if c["name"] == "Reverter")
    sender = contracts["accounts"]["deployer"]

    def call(signature: str, *args: int) -> RpcCall:
        data = keccak(signature.encode())[:4] + encode(["uint256"] * len(args), list(args))
        tx = {"from": sender, "to": reverter["address"], "data": "0x" + data.hex()}
        return RpcCall("eth_call", [tx, "latest"])

    url = f"{devnet.url}/v3/{devnet.api_key}"
    with HTTPTransport(url=url) as transport:
        reason, divide, custom, fine = transport.handle_request(
            [
                call("reasonRevert()"),
                call("divide(uint256,uint256)", 1, 0),
                call("customRevert(uint256)", 7),
                call("ok(uint256)", 21),
            ]
        )
    assert isinstance(reason.error, RevertError)
    assert reason.error.reason == "feeslab: not allowed"
    assert divide.error.panic_code == 0x12
    assert divide.error.reason == "division or modulo by zero"
    decoded = RevertError.from_rpc(custom.error, abi=reverter["abi"])
    assert decoded.error_name == "Unauthorized"
    assert decoded.error_args == (sender, 7)
    assert int(fine.unwrap(), 16) == 42

"""Every exception class feeslab defines crosses a process boundary (pickle, as dask sends a
worker's error to the driver) with its type, text and attributes, and with no secret in it.

The classes are found by walking feeslab's modules, so a class added later is checked too (and
fails here until it pickles, or until ``SAMPLES`` knows how to make one).
"""

from __future__ import annotations

import base64
import importlib
import inspect
import io
import pickle
import pkgutil
from collections.abc import Callable
from typing import Any

import pytest

import feeslab
from feeslab.errors import (
    BudgetExceeded,
    CaipError,
    CidMismatchError,
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
    TransportError,
    UserRejected,
    WalletError,
    WalletUnauthorized,
)

KEY = "0123456789abcdef0123456789abcdef"
SECRET = "fedcba9876543210fedcba9876543210"
BASIC = base64.b64encode(f"{KEY}:{SECRET}".encode()).decode()
LEAKY = (
    f"POST https://mainnet.infura.io/v3/{KEY} failed; Authorization: Basic {BASIC}; "
    f"key={KEY} secret={SECRET}"
)
SECRETS = (KEY, SECRET)
IN_URL = f"https://mainnet.infura.io/v3/{KEY} with Authorization: Basic {BASIC}"
"""Secrets in the forms recognised without being told them (for errors made without secrets=)."""
FORBIDDEN = (KEY, SECRET, BASIC)


def _feeslab_exceptions() -> list[type[BaseException]]:
    """Every exception class defined in feeslab's modules (the devnet's server aside: it
    needs the devnet extras and its errors never leave the server)."""
    found: set[type[BaseException]] = set()
    for info in pkgutil.walk_packages(feeslab.__path__, "feeslab."):
        if info.name.startswith("feeslab.devnet"):
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == info.name
            ):
                found.add(obj)
    return sorted(found, key=lambda cls: (cls.__module__, cls.__qualname__))


def _revert() -> RevertError:
    return RevertError(3, f"execution reverted: {LEAKY}", b"\x08\xc3\x79\xa0", reason="no",
                       panic_code=None, error_name="Unauthorized", error_args=(1, "x"),
                       secrets=SECRETS)  # fmt: skip


def _retryable() -> BaseException:
    from feeslab.fetch.retry import Retryable

    return Retryable(RateLimited(LEAKY, retry_after=2.5, attempts=3, secrets=SECRETS), 2.5)


# how to make one of each class whose __init__ is not (message, secrets=) or (message)
SAMPLES: dict[type[BaseException], Callable[[], BaseException]] = {
    CaipError: lambda: CaipError("optionalScopes", f"bad scope {IN_URL}", {"x": 1}),
    NotificationTimeout: lambda: NotificationTimeout(1.5, 2),
    MissingChainSpec: lambda: MissingChainSpec(f"say which chain {IN_URL}", argument="chain_id"),
    ProtocolError: lambda: ProtocolError(LEAKY, status=502, secrets=SECRETS),
    MalformedWord: lambda: MalformedWord("not a word", value="0xzz"),
    RateLimited: lambda: RateLimited(LEAKY, retry_after=1.5, attempts=4, secrets=SECRETS),
    CreditsExhausted: lambda: CreditsExhausted(credits_spent=2_400, details=LEAKY, secrets=SECRETS),
    BudgetExceeded: lambda: BudgetExceeded(planned=12_000, budget=10_000, spent=4_000),
    IpfsError: lambda: IpfsError(LEAKY, status=500, code=0, command="cat", secrets=SECRETS),
    IpfsStreamError: lambda: IpfsStreamError(LEAKY, code=1, command="add", secrets=SECRETS),
    CidMismatchError: lambda: CidMismatchError(
        expected="bafyexpected", actual="bafyactual", command="cat"
    ),
    RpcError: lambda: RpcError(-32000, LEAKY, {"more": [1, 2]}, secrets=SECRETS),
    WalletError: lambda: WalletError.from_wallet({"code": 5100, "message": LEAKY}, secrets=SECRETS),
    WalletUnauthorized: lambda: WalletError.from_wallet({"code": 4100, "message": "no"}),
    UserRejected: lambda: WalletError.from_wallet({"code": 4001, "message": "declined"}),
    RevertError: _revert,
    # reth's form, the range and earliest block read from its message; the key leaks nowhere
    HistoryPruned: lambda: HistoryPruned.from_rpc(
        {"code": 4444, "message": f"pruned history unavailable: requested 5, earliest "
         f"available 100 {LEAKY}"}, secrets=SECRETS).asked(5, method="eth_getBlockByNumber"),
}


def _sample(cls: type[BaseException]) -> BaseException:
    if cls in SAMPLES:
        return SAMPLES[cls]()
    if cls.__module__ == "feeslab.fetch.retry" and cls.__name__ == "Retryable":
        return _retryable()
    if cls.__module__ == "feeslab.sources.era1" and cls.__name__ == "Era1Error":
        return cls("damaged record", path="/data/mainnet-00001.era1", block=8_192)
    if cls.__module__ == "feeslab.sources.era" and cls.__name__ == "EraError":
        return cls("damaged record", path="/data/mainnet-01054-00000000.era", slot=8_626_176,
                   record="CompressedSignedBeaconBlock")  # fmt: skip
    if cls.__module__ == "feeslab.sources.ere" and cls.__name__ == "EreError":
        return cls("damaged record", path="/data/mainnet-02371-00000000.ere", block=19_426_587,
                   record="CompressedSlimReceipts")  # fmt: skip
    if issubclass(cls, FeeslabError):
        return cls(LEAKY, secrets=SECRETS)
    return cls("a plain message")


def _state(value: Any) -> Any:
    """What an attribute is, comparably: an exception held by another (``Retryable.error``)
    as its type, text and attributes."""
    if isinstance(value, BaseException):
        return type(value), str(value), value.args, {k: _state(v) for k, v in vars(value).items()}
    return value


def _plain_dumps(error: BaseException) -> bytes:
    """Pickled by the class's own ``__reduce__``, whatever reducers ``copyreg`` holds."""
    out = io.BytesIO()
    pickler = pickle.Pickler(out)
    pickler.dispatch_table = {}  # type: ignore[misc]
    pickler.dump(error)
    return out.getvalue()


CLASSES = _feeslab_exceptions()


def test_the_walk_finds_the_tree_and_the_fetch_layers_own() -> None:
    names = {f"{cls.__module__}.{cls.__qualname__}" for cls in CLASSES}
    assert {f"feeslab.errors.{name}" for name in feeslab.errors.__all__ if name[0].isupper()
            and not name.isupper()} <= names  # fmt: skip (constants aside: PANIC_REASONS, ...)
    assert {"feeslab.fetch.retry.Retryable", "feeslab.fetch.core.Stopped"} <= names
    assert not any(name.startswith("feeslab.devnet") for name in names)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_every_exception_class_pickles_with_its_type_text_and_attributes(cls) -> None:
    error = _sample(cls)
    assert type(error) is cls
    error.__notes__ = ["a note added on the way"]  # what callers add travels too
    # as this process pickles (dask's tblib reducer, installed once distributed is imported,
    # wraps the class's own) and as a plain pickler does
    for data in (pickle.dumps(error), _plain_dumps(error)):
        again = pickle.loads(data)
        assert type(again) is cls
        assert str(again) == str(error) and repr(again) == repr(error)
        assert again.args == error.args
        assert _state(again) == _state(error)  # every attribute, nested errors too
        # the secrets given when it was made are nowhere: not in its text, nor in the bytes
        for secret in FORBIDDEN:
            assert secret.encode() not in data
            assert secret not in f"{again} {again!r} {again.args} {vars(again)}"


def test_a_plain_pickler_leaves_the_chain_behind() -> None:
    # the error it was raised from stays in this process (dask's tblib, once imported, sends
    # the chain along: feeslab scrubs the chains it builds, tests/fetch/test_secrets.py)
    cause = ValueError("the httpx error, with its request")
    error = TransportError("the network failed", secrets=SECRETS)
    error.__cause__ = cause
    again = pickle.loads(_plain_dumps(error))
    assert type(again) is TransportError and again.__cause__ is None
    assert str(again) == "the network failed"


def test_a_pickled_error_can_be_raised_and_caught_as_its_bases() -> None:
    again = pickle.loads(pickle.dumps(NotificationTimeout(0.3)))
    with pytest.raises(TimeoutError) as caught:  # NotificationTimeout is also a TimeoutError
        raise again
    assert caught.value.timeout == 0.3 and "0.3 s" in str(caught.value)
    budget = pickle.loads(pickle.dumps(BudgetExceeded(planned=5, budget=3, spent=1)))
    assert (budget.planned, budget.budget, budget.spent) == (5, 3, 1)
    assert "needs 5 credits" in str(budget)

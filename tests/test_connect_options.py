"""connect()'s options: declared once (``Settings``), a real keyword-only signature, and
options that conflict refused by name; the one node builder (``open_node``) on the devnet."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import threading
from pathlib import Path

import pytest

import feeslab
from feeslab.connection import Connection, Environment, Settings, connect_with
from feeslab.fetch.core import CreditGovernor
from feeslab.fetch.transport import RpcCall
from feeslab.sources.rpc import NodeSpec, RpcSource, open_node

REAL = Path(__file__).parent / "data" / "era1" / "mainnet-00000-5ec1ffb8.era1"
KEY, SECRET = "conflictkey0123456789abcdef", "conflictsecret0123456789ab"


@pytest.fixture(autouse=True)
def _no_key_in_the_environment(monkeypatch):
    monkeypatch.delenv("INFURA_API_KEY", raising=False)
    monkeypatch.delenv("INFURA_API_KEY_SECRET", raising=False)


# -- declared once ------------------------------------------------------------------------------


def test_the_signature_is_the_settings_fields_keyword_only():
    signature = inspect.signature(feeslab.connect)
    declared = dataclasses.fields(Settings)
    assert list(signature.parameters) == [f.name for f in declared]
    for option in declared:
        parameter = signature.parameters[option.name]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
        assert parameter.default == option.default
    assert signature.parameters["credits_per_second"].annotation == float | str | None
    assert signature.return_annotation is feeslab.Lab


def test_the_docstring_documents_every_option_once():
    doc = feeslab.connect.__doc__
    head = doc.index("Parameters\n----------")
    assert head < doc.index("Returns\n-------") < doc.index("Raises\n------")
    for option in dataclasses.fields(Settings):
        assert doc.count(f"\n{option.name} : ") == 1, option.name
        first_words = " ".join(option.metadata["doc"].split()[:6])
        assert first_words in " ".join(doc.split()), option.name


def test_jupyter_completes_the_options():
    jedi = pytest.importorskip("jedi")  # what IPython completes with
    completions = jedi.Interpreter("feeslab.connect(api_", [{"feeslab": feeslab}]).complete()
    assert {c.name_with_symbols for c in completions} == {"api_key=", "api_key_secret="}
    (shown,) = jedi.Interpreter("feeslab.connect(", [{"feeslab": feeslab}]).get_signatures()
    assert [p.name for p in shown.params] == [f.name for f in dataclasses.fields(Settings)]


def test_an_unknown_keyword_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match=r"^connect\(\) got an unexpected keyword argument "
                       r"'api_kye' \(did you mean 'api_key'\?\)$"):  # fmt: skip
        feeslab.connect(api_kye=KEY)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'colour'$"):
        feeslab.connect(colour="blue")
    with pytest.raises(TypeError, match="positional"):
        feeslab.connect(KEY)  # type: ignore[misc]


def test_settings_show_no_key_secret_or_node_url():
    settings = Settings(api_key=KEY, api_key_secret=SECRET, rpc_url=f"http://h/v3/{KEY}")
    assert KEY not in repr(settings) and SECRET not in repr(settings)
    with pytest.raises(TypeError):
        Settings(KEY)  # type: ignore[misc]  # keyword-only, as connect()


# -- options that conflict ----------------------------------------------------------------------

# url=, rpc_url= and api_key= choose a node beside the files (tests/test_history_expiry.py)
NOT_WITH_ERA1 = [
    ("api_key_secret", SECRET), ("network", "sepolia"), ("seed", 3),
    ("websocket", True), ("block_time", 0.5), ("wallet_url", "ws://127.0.0.1:1/wallet"),
    ("credits_per_second", 100), ("max_batch", 10), ("max_concurrency", 2),
    ("history", "postmerge"),
]


@pytest.mark.parametrize(("name", "value"), NOT_WITH_ERA1)
def test_era1_with_an_option_for_a_node_is_refused_naming_both(name, value):
    with pytest.raises(feeslab.ConfigError, match=rf"^{name}=.* and era1= conflict: era1= reads "
                       "archive files") as refused:  # fmt: skip
        feeslab.connect(era1=REAL, **{name: value})
    assert "not both" in str(refused.value)
    assert KEY not in str(refused.value) and SECRET not in str(refused.value)


def test_era1_takes_cache_and_progress_as_a_script_passes_them():
    # the CLI passes both whatever the source: era1 reads need neither, and they are harmless
    with feeslab.connect(era1=REAL, cache=False, progress=False, network="mainnet") as lab:
        assert lab.data_source.label == "era1" and len(lab.blocks(0, 10)) == 10


@pytest.mark.parametrize(
    ("options", "pattern"),
    [
        ({"url": "http://127.0.0.1:1", "rpc_url": "http://127.0.0.1:2"},
         r"^url='http://127\.0\.0\.1:1' and rpc_url= conflict: rpc_url= reaches the one chain"),
        ({"rpc_url": "http://127.0.0.1:2", "api_key": KEY}, r"^api_key= and rpc_url= conflict"),
        ({"rpc_url": "http://127.0.0.1:2", "api_key_secret": SECRET},
         r"^api_key_secret= and rpc_url= conflict"),
        ({"rpc_url": "http://127.0.0.1:2", "network": "sepolia"},
         r"^network='sepolia' and rpc_url= conflict"),
        ({"rpc_url": "http://127.0.0.1:2", "seed": 3}, r"^seed=3 and rpc_url= conflict"),
        ({"rpc_url": "http://127.0.0.1:2", "block_time": 1.0},
         r"^block_time=1\.0 and rpc_url= conflict"),
        ({"url": "http://127.0.0.1:1", "api_key": KEY, "seed": 3},
         r"^seed=3 and url= conflict: url= is a running devnet's root"),
        ({"url": "http://127.0.0.1:1", "api_key": KEY, "block_time": 1.0},
         r"^block_time=1\.0 and url= conflict"),
        ({"api_key": KEY, "seed": 3},
         r"^seed=3 and api_key= conflict: api_key= reaches the real service"),
        ({"api_key": KEY, "block_time": 0.2}, r"^block_time=0\.2 and api_key= conflict"),
        ({"api_key_secret": SECRET},
         r"^api_key_secret= has no effect without api_key= \(or INFURA_API_KEY\)"),
        # the embedded devnet's history mode: a running devnet or node has its own
        ({"url": "http://127.0.0.1:1", "api_key": KEY, "history": "postmerge"},
         r"^history='postmerge' and url= conflict: url= is a running devnet's root"),
        ({"rpc_url": "http://127.0.0.1:2", "history": "postmerge"},
         r"^history='postmerge' and rpc_url= conflict"),
        ({"history": "prune"}, r"^history='prune': want one of 'all', 'postmerge'"),
    ],
)  # fmt: skip
def test_options_that_conflict_are_refused_naming_both(options, pattern):
    with pytest.raises(feeslab.ConfigError, match=pattern) as refused:
        feeslab.connect(**options)
    assert KEY not in str(refused.value) and SECRET not in str(refused.value)


def test_the_variables_key_chooses_the_service_and_is_named(monkeypatch):
    monkeypatch.setenv("INFURA_API_KEY", KEY)
    with pytest.raises(feeslab.ConfigError, match=r"^seed=5 and INFURA_API_KEY conflict: "
                       "INFURA_API_KEY reaches the real service") as refused:  # fmt: skip
        feeslab.connect(seed=5)
    assert KEY not in str(refused.value)
    monkeypatch.delenv("INFURA_API_KEY")
    with pytest.raises(feeslab.ConfigError, match="url= needs api_key="):
        feeslab.connect(url="http://127.0.0.1:1")


def test_the_variables_key_does_not_conflict_with_a_node_url(devnet, monkeypatch):
    # only options given conflict: a key in the environment stays unused by rpc_url=
    monkeypatch.setenv("INFURA_API_KEY", KEY)
    url = f"{devnet.url}/v3/{devnet.api_key}"
    with feeslab.connect(rpc_url=url, cache=False, progress=False, max_batch=50,
                         credits_per_second=10**6) as lab:  # fmt: skip
        assert lab.node.head() > 0 and lab.gas is None
        assert lab.node.transport.limits.max_batch == 50
        assert lab.node.transport.governor.ceiling == pytest.approx(10**6 * 0.95)


# -- resolved once -------------------------------------------------------------------------------


def test_the_environment_is_read_once_into_the_connection(monkeypatch):
    read = Environment.read({"INFURA_API_KEY": KEY, "INFURA_API_KEY_SECRET": SECRET,
                             "INFURA_API_KEYS": f"{KEY}:{SECRET}", "OTHER": "x"})  # fmt: skip
    assert (read.api_key, read.api_key_secret, read.api_keys) == (KEY, SECRET, f"{KEY}:{SECRET}")
    assert Environment.read({"INFURA_API_KEY": ""}).api_key is None  # empty: unset
    monkeypatch.setenv("INFURA_API_KEY", "not-read")  # the environment given is the one used
    service = Connection.of(Settings(), read)
    assert (service.route, service.chooser) == ("service", "INFURA_API_KEY")
    assert (service.api_key, service.api_key_secret) == (KEY, SECRET)
    given = Connection.of(Settings(api_key="mine"), read)  # an option before the variable
    assert (given.chooser, given.api_key, given.api_key_secret) == ("api_key=", "mine", SECRET)
    node = Connection.of(Settings(rpc_url="http://127.0.0.1:2"), read)  # any node: no key
    assert (node.route, node.api_key, node.api_key_secret) == ("node", None, None)
    files = Connection.of(Settings(era1=REAL), read)  # era1 alone: the variable chooses nothing
    assert (files.route, files.api_key) == ("era1", None)
    embedded = Connection.of(Settings(), Environment())
    assert (embedded.route, embedded.api_key) == ("embedded", None)
    for shown in (repr(read), repr(service), repr(given), repr(node)):
        assert KEY not in shown and SECRET not in shown and "mine" not in shown, shown
    assert repr(read) == ("<Environment INFURA_API_KEY, INFURA_API_KEY_SECRET, INFURA_API_KEYS "
                          "(values not shown)>")  # fmt: skip


def test_connect_with_takes_the_environment_given(devnet):
    environment = Environment(api_key=devnet.api_key, api_key_secret=devnet.api_key_secret)
    settings = Settings(url=devnet.url, cache=False, progress=False)  # the key: the variable's
    with connect_with(settings, environment) as lab:
        assert lab.node.head() > 0 and lab.ipfs is not None  # key and secret both reached it
    with pytest.raises(feeslab.ConfigError, match="url= needs api_key="):
        connect_with(settings, Environment())


def test_a_workers_node_spec_is_the_one_the_lab_was_opened_from(devnet):
    from feeslab.cluster.jobs import _node_spec

    with feeslab.connect(url=devnet.url, api_key=devnet.api_key,
                         api_key_secret=devnet.api_key_secret, cache=False, progress=False,
                         max_batch=77, max_concurrency=3) as lab:  # fmt: skip
        opened = lab.data_source.node_spec
        assert (opened.max_batch, opened.max_concurrency, opened.devnet_root) == (77, 3, devnet.url)
        worker = _node_spec(lab.data_source)
        # the Lab's URL and limits; the devnet's own rate (10**12 credits/s), told the driver
        assert worker == dataclasses.replace(
            opened, credits_per_second=10**12, devnet_root=None, api_key=None,
            api_key_secret=None, gas_url=None, cache=False, progress=False, devnet=True,
            chain_id=1, head=lab.node.head())
        assert devnet.api_key_secret not in repr(worker)
    hand_made = RpcSource(open_node(_spec(devnet)).node)  # no spec: not what a worker opens
    try:
        with pytest.raises(feeslab.ConfigError, match="opened by connect"):
            _node_spec(hand_made)
    finally:
        hand_made.close()


def test_on_network_keeps_the_options_of_a_running_devnet(devnet):
    with feeslab.connect(url=devnet.url, api_key=devnet.api_key,
                         api_key_secret=devnet.api_key_secret, cache=False, progress=False,
                         max_batch=77) as lab, lab.on_network("sepolia") as other:  # fmt: skip
        assert other.node.chain_id == 11155111 and other.network == "sepolia"
        assert other.node.transport.limits.max_batch == 77
        assert other.gas is not None and other.ipfs is not None


def test_an_idle_lab_holds_at_most_three_threads_of_its_own(devnet):
    before = set(threading.enumerate())

    def own() -> list[str]:
        for thread in set(threading.enumerate()) - before:
            if thread.name == "feeslab-devnet-limit":  # asks the devnet's rate once, then ends
                thread.join(10)
        return sorted(t.name for t in set(threading.enumerate()) - before
                      if t.name.startswith("feeslab"))  # not the in-process devnet's

    with feeslab.connect(url=devnet.url, api_key=devnet.api_key,
                         api_key_secret=devnet.api_key_secret, cache=False,
                         progress=False) as lab:  # fmt: skip
        assert lab.node.head() > 0
        lab.node.transport.governor.settle()
        assert len(own()) <= 3, own()
        assert len(lab.base_fee_history()) == 500  # the Gas API's client, made on first use
        assert len(own()) <= 3, own()  # it runs on the loop every blocking client shares
        assert set(own()) <= {"feeslab-loop"}, own()
    assert own() == []


# -- the one node builder ----------------------------------------------------------------------


def _spec(handle, **options) -> NodeSpec:
    return NodeSpec(url=f"{handle.url}/v3/{handle.api_key}", **options)


def test_a_node_spec_pickles_and_shows_no_key(devnet):
    spec = _spec(devnet, api_key=devnet.api_key, api_key_secret=devnet.api_key_secret,
                 gas_url=devnet.url, chain_id=1)  # fmt: skip
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert repr(spec) == f"<NodeSpec {devnet.url} chain 1>"
    assert devnet.api_key not in repr(spec) and devnet.api_key_secret not in repr(spec)
    hidden = NodeSpec(url=f"https://user:{SECRET}@node.example/v3/{KEY}?k={KEY}")
    assert repr(hidden) == "<NodeSpec https://node.example>"


def test_open_node_builds_the_stack_connect_builds(devnet):
    spec = _spec(devnet, api_key=devnet.api_key, api_key_secret=devnet.api_key_secret,
                 gas_url=devnet.url, credits_per_second=10**7, devnet_root=devnet.url)
    source = open_node(spec)
    try:
        assert isinstance(source, RpcSource) and source.gas is not None
        assert source.label == "devnet"  # asked: the spec did not say
        source.node.transport.governor.settle()
        assert source.node.transport.governor.ceiling == pytest.approx(10**12 * 0.95)  # told
        assert source.node.head() > 0
        assert source.credits.spent == source.node.transport.credits_spent > 0  # one ledger
    finally:
        source.close()


def test_what_the_spec_knows_is_not_asked(devnet):
    source = open_node(_spec(devnet, chain_id=1, head=1_234, devnet=False, any_node=True))
    try:
        assert (source.chain_id(), source.head(), source.label) == (1, 1_234, "node")
        source.prepare()
        assert source.credits.calls == 0  # nothing sent: the spec said it all
    finally:
        source.close()


class _Bucket(CreditGovernor):
    """A real governor that also keeps what it is charged (as a cluster's bucket is)."""

    def __init__(self, rate: float) -> None:
        super().__init__(rate)
        self.charged: list[tuple[int, int, int, dict[str, int]]] = []

    def charge(self, credits: int, booked: int, status: int, calls: dict[str, int]) -> None:
        self.charged.append((credits, booked, status, calls))


def test_a_shared_bucket_paces_and_is_charged_each_answer(devnet):
    bucket = _Bucket(10**6)
    source = open_node(_spec(devnet, credits_per_second=10**6, chain_id=1), bucket=bucket)
    try:
        assert source.node.transport.governor is bucket
        source.results([RpcCall("eth_blockNumber", []),
                        RpcCall("eth_getBlockByNumber", ["0x1", False])])
    finally:
        source.close()
    assert bucket.charged == [(80 + 80, 160, 200, {"eth_blockNumber": 1,
                                                    "eth_getBlockByNumber": 1})]  # fmt: skip
    assert source.credits.spent == 160


def test_a_shared_bucket_is_refused_over_a_websocket(devnet):
    spec = NodeSpec(url=f"{devnet.ws_url}/ws/v3/{devnet.api_key}", credits_per_second=10**6)
    before = {t.name for t in threading.enumerate()}
    with pytest.raises(feeslab.ConfigError, match="HTTP"):
        open_node(spec, bucket=_Bucket(10**6))
    assert "feeslab-ws" not in {t.name for t in threading.enumerate()} - before  # none built
    source = open_node(spec)  # without a bucket: the WebSocket transport, paced by its own
    try:
        assert "WebSocketTransport" in repr(source.node.transport)
        assert source.head() > 0
    finally:
        source.close()


def test_a_pace_that_is_no_rate_is_refused_before_a_devnet_starts():
    before = {t.name for t in threading.enumerate()}
    with pytest.raises(feeslab.ConfigError, match="credits_per_second must be a number"):
        feeslab.connect(seed=7, credits_per_second="fast")
    assert {t.name for t in threading.enumerate()} - before == set()  # no devnet's threads

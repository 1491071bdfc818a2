"""The storage API client against the devnet over loopback HTTP (httpx.MockTransport only to
inject faults: a stalled stream, a cut answer, a lying gateway)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from pathlib import Path

import httpx
import pandas as pd
import pytest

import feeslab
import feeslab.devnet
from feeslab.devnet._blockstore import Blockstore
from feeslab.errors import (
    AuthError,
    CidMismatchError,
    ConfigError,
    IpfsError,
    IpfsStreamError,
)
from feeslab.fetch.ipfs import (
    Added,
    AddProgress,
    AsyncIpfsClient,
    IpfsClient,
    TrailerTransport,
    _parse_tail,
)
from feeslab.frames.io import frame_from_bytes, frame_to_bytes
from feeslab.unixfs import CID

HELLO = "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o"  # kubo's "hello world\n"
VECTORS = json.loads((Path(__file__).parents[1] / "data" / "unixfs_vectors.json").read_text())
C = 262_144


def data(seed: int, size: int) -> bytes:
    return hashlib.shake_256(f"feeslab-unixfs-{seed}".encode()).digest(size)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("client-blockstore")


@pytest.fixture(scope="module")
def dev(store):
    with feeslab.devnet.start(seed=7, warm=False, blockstore=store) as handle:
        yield handle


@pytest.fixture(scope="module")
def ipfs(dev):
    with IpfsClient(base_url=dev.url, api_key=dev.api_key, api_key_secret=dev.api_key_secret) as c:
        yield c


def block_file(store: Path, cid: str) -> Path:
    """Where kubo's flatfs layout keeps a block: blocks/<next-to-last two>/<KEY>.data."""
    key = Blockstore.key(CID.parse(cid))
    return store / "blocks" / key[-3:-1] / f"{key}.data"


def client_with(dev, handler) -> IpfsClient:
    return IpfsClient(
        base_url=dev.url,
        api_key=dev.api_key,
        api_key_secret=dev.api_key_secret,
        transport=httpx.MockTransport(handler),
    )


class Tampering(httpx.BaseTransport):
    """A gateway that flips one byte of every ``cat`` and ``block/get`` answer."""

    def __init__(self) -> None:
        self.inner = TrailerTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self.inner.handle_request(request)
        if not request.url.path.endswith(("/cat", "/block/get")):
            return answer
        body = bytearray(answer.read())
        body[len(body) // 2] ^= 1
        return httpx.Response(answer.status_code, headers=answer.headers, content=bytes(body))

    def close(self) -> None:
        self.inner.close()


def liar(dev) -> IpfsClient:
    return IpfsClient(
        base_url=dev.url,
        api_key=dev.api_key,
        api_key_secret=dev.api_key_secret,
        transport=Tampering(),
    )


# -- commands -----------------------------------------------------------------------------------


def test_add_and_cat_as_kubo(ipfs):
    assert ipfs.add(b"hello world\n", name="hello.txt") == [Added("hello.txt", HELLO, 20)]
    assert ipfs.cat(HELLO) == b"hello world\n"
    assert ipfs.cat(f"/ipfs/{HELLO}", offset=6, length=5) == b"world"
    assert b"".join(ipfs.iter_cat(HELLO)) == b"hello world\n"
    assert ipfs.block_stat(HELLO) == {"Key": HELLO, "Size": 20}
    assert ipfs.object_get(HELLO)["Data"] == "\b\x02\x12\x0chello world\n\x18\x0c"
    assert ipfs.version()["Version"]


def test_add_files_and_directories_from_disk(ipfs, tmp_path):
    sizes = {f["seed"]: f["size"] for f in VECTORS["files"]}
    vector = VECTORS["directories"][0]  # kubo's defaults
    for name, seed in vector["files"]:
        (tmp_path / name).write_bytes(data(seed, sizes[seed]))
    paths = [tmp_path / name for name, _ in vector["files"]]
    added = ipfs.add(paths, wrap_with_directory=True)
    assert [(a.name, a.cid, a.size) for a in added] == [
        (e["path"], e["cid"], e["size"]) for e in vector["entries"]
    ]
    # a directory path brings everything under it
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "inner.txt").write_bytes(b"inner")
    added = ipfs.add(tmp_path / "sub")
    assert [a.name for a in added] == ["sub/inner.txt", "sub"]
    assert ipfs.cat(f"{added[-1].cid}/inner.txt") == b"inner"
    with open(tmp_path / "zeta.csv", "rb") as f:
        [entry] = ipfs.add(f)
    assert (entry.name, entry.cid) == ("zeta.csv", vector["entries"][0]["cid"])
    with pytest.raises(ConfigError, match="no such file"):
        ipfs.add(tmp_path / "missing.bin")
    with pytest.raises(TypeError, match="cannot add int"):
        ipfs.add(42)


def test_add_options_and_progress(ipfs):
    content = data(11, 3 * C + 1)
    v1 = next(
        v for v in VECTORS["files"] if v["size"] == 3 * C + 17 and v["options"] == "cid-version=1"
    )
    [entry] = ipfs.add(data(7, 3 * C + 17), cid_version=1)
    assert entry.cid == v1["cid"]
    events: list[AddProgress] = []
    [entry] = ipfs.add(content, name="p", progress=events.append, only_hash=True)
    assert events[-1] == AddProgress("p", len(content))
    assert [e.bytes for e in events] == sorted(e.bytes for e in events)
    with pytest.raises(IpfsError) as caught:
        ipfs.block_stat(entry.cid)  # only-hash stored nothing
    assert caught.value.status == 500 and caught.value.code == 0
    with pytest.raises(IpfsError) as caught:
        ipfs.add(b"x", chunker="rabin")
    assert caught.value.status == 400 and caught.value.code == 1


def test_pins(ipfs):
    [entry] = ipfs.add(data(12, 1000), pin=False)
    assert entry.cid not in ipfs.pin_ls()
    assert ipfs.pin_add(entry.cid) == [entry.cid]
    assert ipfs.pin_ls(entry.cid) == {entry.cid: "recursive"}
    assert ipfs.pin_ls(type="recursive")[entry.cid] == "recursive"
    assert ipfs.call("pin/ls", entry.cid, type="recursive") == {
        "Keys": {entry.cid: {"Type": "recursive"}}
    }
    assert ipfs.pin_rm(entry.cid) == [entry.cid]
    with pytest.raises(IpfsError, match="not pinned"):
        ipfs.pin_ls(entry.cid)


def test_replace_keeps_the_root_and_the_credentials(ipfs):
    # the blocking client names its keywords: what replace() passes on must reach the twin
    with ipfs.replace(retries=0, timeout=5.0) as other:
        assert (other.base_url, other.retries) == (ipfs.base_url, 0)
        [entry] = other.add(data(13, 100), name="replaced")
        assert other.cat(entry.cid) == data(13, 100)


def test_block_get_is_checked(ipfs, dev):
    [entry] = ipfs.add(b"block bytes", cid_version=1)
    assert ipfs.block_get(entry.cid) == b"block bytes"
    with liar(dev) as client, pytest.raises(CidMismatchError) as caught:
        client.block_get(entry.cid)
    assert caught.value.expected == entry.cid and caught.value.actual != entry.cid


# -- errors -------------------------------------------------------------------------------------


def test_errors_are_typed_and_keep_secrets(dev):
    with IpfsClient(base_url=dev.url, api_key=dev.api_key, api_key_secret="wrong-secret") as bad:
        with pytest.raises(AuthError) as caught:
            bad.version()
        assert "wrong-secret" not in str(caught.value) + repr(caught.value)
        assert dev.api_key not in str(caught.value) + repr(bad)
    with IpfsClient(base_url=dev.url, api_key=dev.api_key, api_key_secret=dev.api_key_secret) as c:
        missing = str(CID.of_block(b"nobody added this"))
        with pytest.raises(IpfsError) as caught:
            c.cat(missing)
        assert (caught.value.status, caught.value.code, caught.value.command) == (500, 0, "cat")
        assert "could not find" in str(caught.value)
        with pytest.raises(IpfsError) as caught:
            c.call("swarm/peers")
        assert caught.value.status == 403
        with pytest.raises(IpfsError) as caught:
            c.call("no/such/command")
        assert caught.value.status == 404
    with pytest.raises(ConfigError, match="secret"):
        IpfsClient(base_url=dev.url, api_key=dev.api_key, api_key_secret="")


def test_a_bad_cid_is_refused_before_sending(dev):
    sent = []
    client = client_with(dev, lambda request: sent.append(request) or httpx.Response(500))
    for bad in ("notacid", "Qm123", "/ipfs/"):
        with pytest.raises(ConfigError, match="not a CID"):
            client.cat(bad)
    assert sent == []


def test_an_unreachable_node_is_a_transport_error():
    client = IpfsClient(base_url="http://127.0.0.1:9", api_key="k", api_key_secret="s", retries=0)
    with pytest.raises(feeslab.TransportError):
        client.version()


def test_a_trailer_error_is_raised(ipfs, store):
    content = data(13, 6 * C)
    [entry] = ipfs.add(content)
    leaves = [link["Hash"] for link in ipfs.object_get(entry.cid)["Links"]]
    damaged = block_file(store, leaves[5])
    original = damaged.read_bytes()
    damaged.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    try:
        received = []
        with pytest.raises(IpfsStreamError, match="different hash than requested") as caught:
            for piece in ipfs.iter_cat(entry.cid):
                received.append(piece)
        assert caught.value.status is None
        assert b"".join(received) == content[: len(b"".join(received))]
        assert 0 < len(b"".join(received)) < len(content)
        with pytest.raises(IpfsStreamError):
            ipfs.load(entry.cid)
    finally:
        damaged.write_bytes(original)
    assert ipfs.cat(entry.cid) == content


def test_ndjson_is_consumed_as_it_arrives(dev):
    first_seen = threading.Event()
    waited: list[bool] = []

    def body():
        yield b'{"Name":"a","Hash":"%s","Size":"20"}\n' % HELLO.encode()
        # the next line exists only once the caller has the first one
        waited.append(first_seen.wait(10))
        yield b'{"Name":"b","Hash":"%s","Size":"20"}\n' % HELLO.encode()

    def handler(request):
        return httpx.Response(200, headers={"Trailer": "X-Stream-Error"}, content=body())

    stream = client_with(dev, handler).iter_add({"a": b"x", "b": b"y"})
    assert next(stream) == Added("a", HELLO, 20)
    first_seen.set()
    assert list(stream) == [Added("b", HELLO, 20)]
    assert waited == [True]


def test_an_error_object_in_the_stream_is_raised_after_what_came_before(dev):
    def handler(request):
        lines = b'{"Name":"a","Hash":"%s","Size":"20"}\n' % HELLO.encode()
        lines += b'{"Message":"disk full","Code":0,"Type":"error"}\n'
        return httpx.Response(200, content=lines)

    stream = client_with(dev, handler).iter_add(b"x")
    assert next(stream).name == "a"
    with pytest.raises(IpfsStreamError, match="disk full"):
        next(stream)


def test_a_cut_cat_is_an_error(dev):
    def handler(request):
        return httpx.Response(200, headers={"X-Content-Length": "100"}, content=b"x" * 60)

    with pytest.raises(IpfsStreamError, match="60 of 100 bytes"):
        client_with(dev, handler).cat(HELLO)


def test_trailer_parsing():
    assert _parse_tail(b"data\r\n0\r\n\r\n") == {}
    assert _parse_tail(b"abc\r\n0\r\nX-Stream-Error: it broke: badly\r\n\r\n") == {
        "x-stream-error": "it broke: badly"
    }
    # chunk data that looks like a trailer is not read as one
    assert _parse_tail(b"X-Stream-Error: fake\r\n\r\n0\r\n\r\n") == {}
    assert _parse_tail(b"no end") is None
    assert _parse_tail(b"junk\r\n\r\n") is None


# -- frames ---------------------------------------------------------------------------------------


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "block_number": [15_000_000, 15_000_001, 15_000_002],
            "base_fee_wei": [12_345_678_901, 10**9, 7],
            "word": [2**255 + 1, 0, None],
            "gas_used_ratio": [0.5, 1.0, 0.0],
            "miner": ["0xaa", "0xbb", "0xcc"],
            "timestamp": pd.to_datetime([1_700_000_000, 1_700_000_012, 1_700_000_024],
                                        unit="s", utc=True),
        }
    )


def test_publish_and_load_a_frame_checked_by_cid(ipfs, frame):
    data = frame_to_bytes(frame)
    cid = ipfs.publish(data, name="frame.parquet")
    assert cid.startswith("Qm") and ipfs.publish(data) == cid
    assert ipfs.pin_ls(cid) == {cid: "recursive"}
    assert ipfs.load(cid) == data
    pd.testing.assert_frame_equal(frame_from_bytes(ipfs.load(cid)), frame)
    v1 = ipfs.publish(frame_to_bytes(frame, "csv"), cid_version=1)
    assert v1.startswith("bafk") and frame_from_bytes(ipfs.load(v1))["miner"].tolist() == [
        "0xaa",
        "0xbb",
        "0xcc",
    ]


def test_load_refuses_tampered_bytes(ipfs, dev, frame):
    cid = ipfs.publish(frame_to_bytes(frame))
    with liar(dev) as client, pytest.raises(CidMismatchError) as caught:
        client.load(cid)
    assert caught.value.expected == cid
    assert caught.value.actual.startswith("Qm") and caught.value.actual != cid


# -- the async twin ------------------------------------------------------------------------------


def test_async_client(dev, frame, store):
    async def main():
        async with AsyncIpfsClient(
            base_url=dev.url, api_key=dev.api_key, api_key_secret=dev.api_key_secret
        ) as client:
            assert await client.add(b"hello world\n", name="h") == [Added("h", HELLO, 20)]
            assert await client.cat(HELLO, offset=6) == b"world\n"
            events = [e async for e in client.iter_add({"a": b"1", "b": b"2"}, progress=True)]
            assert [e.name for e in events if isinstance(e, Added)] == ["a", "b"]
            cid = await client.publish(frame_to_bytes(frame))
            pd.testing.assert_frame_equal(frame_from_bytes(await client.load(cid)), frame)
            assert (await client.pin_ls(cid)) == {cid: "recursive"}
            assert await client.pin_rm(cid) == [cid]
            block = await client.block_get(HELLO)
            assert hashlib.sha256(block).digest() == CID.parse(HELLO).digest
            # a trailer error, read by the async transport
            content = data(14, 4 * C)
            [entry] = await client.add(content)
            links = (await client.object_get(entry.cid))["Links"]
            damaged = block_file(store, links[3]["Hash"])
            original = damaged.read_bytes()
            damaged.write_bytes(bytes([original[0] ^ 1]) + original[1:])
            try:
                with pytest.raises(IpfsStreamError, match="different hash"):
                    await client.cat(entry.cid)
            finally:
                damaged.write_bytes(original)
            with pytest.raises(IpfsError) as caught:
                await client.call("repo/gc")
            assert caught.value.status == 403

    asyncio.run(main())


# -- the Lab --------------------------------------------------------------------------------------


def test_lab_wiring(dev, tmp_path, frame):
    with feeslab.connect(url=dev.url, api_key=dev.api_key, api_key_secret=dev.api_key_secret,
                         cache=tmp_path, progress=False) as lab:
        assert lab.ipfs.base_url == dev.url
        cid = lab.publish_frame(frame)
        pd.testing.assert_frame_equal(lab.load_frame(cid), frame)
    with feeslab.connect(rpc_url=f"{dev.url}/v3/{dev.api_key}", cache=False) as lab:
        assert lab.ipfs is None
        with pytest.raises(ConfigError, match="storage"):
            lab.publish_frame(frame)
    # the real service: its IPFS host with key and secret, none with a key alone
    with feeslab.connect(api_key="k" * 32, api_key_secret="s" * 32, cache=False) as lab:
        assert lab.ipfs.base_url == "https://ipfs.infura.io:5001"
        assert "s" * 32 not in repr(lab.ipfs)
    with feeslab.connect(api_key="k" * 32, cache=False) as lab:
        assert lab.ipfs is None

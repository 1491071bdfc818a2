"""The devnet's IPFS node over real HTTP: kubo's statuses and bodies, CIDs from independent
implementations, streaming with trailers, and a blockstore that survives a kill.

Answers are read with h11 on a plain socket here, so trailers and chunked bodies are seen as
sent, independently of feeslab's client.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path
from urllib.parse import quote_plus, urlencode, urlsplit

import h11
import pytest

import feeslab.devnet
from feeslab.devnet._blockstore import Blockstore, BlockWriter
from feeslab.devnet._multipart import MultipartError, MultipartParser, boundary_of
from feeslab.devnet.ipfs import FORBIDDEN, go_json
from feeslab.unixfs import CID

VECTORS = json.loads((Path(__file__).parents[1] / "data" / "unixfs_vectors.json").read_text())
C = 262_144
HELLO = "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o"  # kubo's "hello world\n"


def data(seed: int, size: int) -> bytes:
    return hashlib.shake_256(f"feeslab-unixfs-{seed}".encode()).digest(size)


class Answer:
    def __init__(self, status, headers, body, trailers, ended) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.trailers = trailers
        self.ended = ended  # the message ended properly (not a dropped connection)

    def json(self):
        return json.loads(self.body)

    def lines(self):
        return [json.loads(line) for line in self.body.splitlines() if line.strip()]


class Node:
    """POST (or any method) to /api/v0 on a plain socket, reading the answer with h11."""

    def __init__(self, handle) -> None:
        self.handle = handle
        self.host, self.port = urlsplit(handle.url).hostname, urlsplit(handle.url).port
        pair = f"{handle.api_key}:{handle.api_key_secret}".encode()
        self.auth = "Basic " + base64.b64encode(pair).decode()

    def request(self, command, params=(), body=b"", *, method="POST", auth=True,
                content_type=None, chunks=None) -> Answer:
        target = f"/api/v0/{command}" + (f"?{urlencode(list(params))}" if params else "")
        headers = [("Host", f"{self.host}:{self.port}")]
        if auth is True:
            headers.append(("Authorization", self.auth))
        elif auth:
            headers.append(("Authorization", auth))
        if content_type:
            headers.append(("Content-Type", content_type))
        pieces = chunks if chunks is not None else [body]
        headers.append(("Content-Length", str(sum(len(p) for p in pieces))))
        conn = h11.Connection(h11.CLIENT)
        with socket.create_connection((self.host, self.port), timeout=120) as sock:
            sock.sendall(conn.send(h11.Request(method=method, target=target, headers=headers)))
            for piece in pieces:
                sock.sendall(conn.send(h11.Data(data=piece)))
            sock.sendall(conn.send(h11.EndOfMessage()))
            status, got, body, trailers, ended = None, {}, bytearray(), {}, False
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    received = sock.recv(1 << 20)
                    conn.receive_data(received)
                    if not received:
                        break
                    continue
                if isinstance(event, h11.Response):
                    status = event.status_code
                    got = {k.decode().lower(): v.decode() for k, v in event.headers}
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    trailers = {k.decode().lower(): v.decode() for k, v in event.headers}
                    ended = True
                    break
                elif isinstance(event, h11.ConnectionClosed):
                    break
        return Answer(status, got, bytes(body), trailers, ended)

    def add(self, files, **flags) -> Answer:
        body, content_type = multipart(files)
        params = [(k.replace("_", "-"), str(v).lower()) for k, v in flags.items()]
        return self.request("add", params, body, content_type=content_type)


def multipart(files, boundary=None) -> tuple[bytes, str]:
    """A multipart/form-data body of ``(filename, content[, content type])`` parts."""
    boundary = boundary or uuid.uuid4().hex
    out = bytearray()
    for name, content, *kind in files:
        out += f"--{boundary}\r\n".encode()
        out += f'Content-Disposition: form-data; name="file"; filename="{name}"\r\n'.encode()
        out += f"Content-Type: {kind[0] if kind else 'application/octet-stream'}\r\n\r\n".encode()
        out += content + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return bytes(out), f"multipart/form-data; boundary={boundary}"


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("blockstore")


@pytest.fixture(scope="module")
def handle(store_dir):
    with feeslab.devnet.start(seed=7, warm=False, blockstore=store_dir) as running:
        yield running


@pytest.fixture(scope="module")
def node(handle) -> Node:
    return Node(handle)


def error_of(answer: Answer) -> str:
    body = answer.json()
    assert body["Type"] == "error" and set(body) == {"Message", "Code", "Type"}
    assert answer.headers["content-type"].startswith("application/json")
    return body["Message"]


# -- statuses -----------------------------------------------------------------------------------


def test_credentials_are_required(node):
    for auth in (False, "Basic " + base64.b64encode(b"nokey:nosecret").decode(),
                 "Basic " + base64.b64encode(f"{node.handle.api_key}:wrong".encode()).decode(),
                 "Basic " + base64.b64encode(node.handle.api_key.encode()).decode(),
                 "Bearer abc"):
        answer = node.request("version", auth=auth)
        assert answer.status == 401
        assert answer.headers["www-authenticate"].startswith("Basic")
        assert node.handle.api_key not in answer.body.decode()
    # the wrong method with wrong credentials is still a 401: nothing is told before auth
    assert node.request("version", method="GET", auth=False).status == 401


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH", "HEAD"])
def test_only_post(node, method):
    answer = node.request("version", method=method)
    assert answer.status == 405
    assert answer.headers["allow"] == "OPTIONS, POST"


def test_options_is_a_preflight(node):
    answer = node.request("cat", method="OPTIONS", auth=False)
    assert answer.status == 200 and answer.headers["allow"] == "OPTIONS, POST"


def test_unknown_commands_are_404_and_real_ones_outside_the_subset_403(node):
    for name in ("nope", "cat/extra", "pin", "block"):
        answer = node.request(name)
        assert answer.status == 404 and answer.body == b"404 page not found\n", name
    assert {"swarm/peers", "id", "dag/get", "repo/gc", "block/put"} <= FORBIDDEN
    for name in ("swarm/peers", "id", "dag/get", "repo/gc", "block/put", "shutdown"):
        answer = node.request(name)
        assert answer.status == 403, name
        assert name in error_of(answer)


@pytest.mark.parametrize(
    ("command", "params", "needle"),
    [
        ("add", [("cid-version", "x")], 'could not convert value "x" to type "int"'),
        ("add", [("pin", "maybe")], 'to type "bool" (for option "-pin")'),
        ("add", [("cid-version", "2")], "unknown CID version"),
        ("add", [("chunker", "rabin-262144")], "chunker"),
        ("add", [("chunker", "size-2000000")], "maximum chunk size"),
        ("add", [("hash", "blake2b-256")], "sha2-256"),
        ("add", [("trickle", "true")], "trickle"),
        ("add", [("pin", "true"), ("pin", "false")], "more than once"),
        ("cat", [("arg", HELLO), ("offset", "-1")], "negative offset"),
        ("cat", [("arg", HELLO), ("length", "-2")], "negative length"),
        ("cat", [("arg", HELLO), ("offset", "1.5")], 'type "int"'),
        ("cat", [("arg", "notacid")], 'invalid path "notacid"'),
        ("cat", [("arg", "/ipfs/QmNotReallyACidAtAll")], "invalid path"),
        ("object/get", [("arg", HELLO), ("data-encoding", "hex")], "data field encoding"),
        ("object/get", [("arg", HELLO), ("encoding", "xml")], "encoding"),
        ("pin/ls", [("type", "sideways")], "invalid type 'sideways'"),
        ("block/stat", [("arg", "bafyNOPE")], "invalid path"),
    ],
)
def test_malformed_flags_and_arguments_are_400(node, command, params, needle):
    answer = node.request(command, params)
    assert answer.status == 400, answer.body
    assert needle in error_of(answer)
    assert answer.json()["Code"] == 1


@pytest.mark.parametrize("path", ["", "/ipfs/", "/ipfs//", "/ipfs/%2F", "/", "//"])
@pytest.mark.parametrize(
    "command", ["cat", "block/stat", "block/get", "pin/add", "pin/rm", "pin/ls", "object/get"]
)
def test_an_empty_path_is_400_with_kubos_message(node, command, path):
    from urllib.parse import unquote

    answer = node.request(command, [("arg", unquote(path))])
    assert answer.status == 400, answer.body
    # boxo's path.ErrInsufficientComponents, in kubo's invalid-path wording
    message = error_of(answer)
    assert message.startswith("invalid path ") and message.endswith(
        ": path does not have enough components"
    ), message
    assert answer.json()["Code"] == 1


def test_add_without_files_is_400(node):
    answer = node.request("add")
    assert answer.status == 400 and "file argument 'path' is required" in error_of(answer)
    body, content_type = multipart([])
    answer = node.request("add", body=body, content_type=content_type)
    assert answer.status == 400 and "file argument 'path' is required" in error_of(answer)


@pytest.mark.parametrize(
    ("command", "name"),
    [("cat", "ipfs-path"), ("object/get", "key"), ("pin/add", "ipfs-path"),
     ("pin/rm", "ipfs-path"), ("block/get", "cid"), ("block/stat", "cid")],
)
def test_a_missing_argument_is_500(node, command, name):
    answer = node.request(command)
    assert answer.status == 500
    assert error_of(answer) == f'argument "{name}" is required'
    assert answer.json()["Code"] == 0


def test_a_failed_command_is_500_with_kubos_body(node):
    missing = str(CID.of_block(b"never added anywhere"))
    for command in ("cat", "block/get", "block/stat", "object/get", "pin/add"):
        answer = node.request(command, [("arg", missing)])
        assert answer.status == 500, command
        assert error_of(answer) == (
            f"block was not found locally (offline): ipld: could not find {missing}"
        )
    answer = node.request("pin/rm", [("arg", missing)])
    assert answer.status == 500 and "not pinned" in error_of(answer)


# -- add and cat --------------------------------------------------------------------------------


def test_add_hello_world_as_kubo(node):
    answer = node.add([("hello.txt", b"hello world\n")])
    assert answer.status == 200
    assert answer.headers["x-chunked-output"] == "1"
    assert answer.headers["trailer"] == "X-Stream-Error"
    assert answer.headers["transfer-encoding"] == "chunked"
    assert answer.body == (
        b'{"Name":"hello.txt","Hash":"QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o",'
        b'"Size":"20"}\n'
    )
    assert answer.trailers == {}
    cat = node.request("cat", [("arg", HELLO)])
    assert (cat.status, cat.body) == (200, b"hello world\n")
    assert cat.headers["x-stream-output"] == "1" and cat.headers["x-content-length"] == "12"
    assert cat.headers["content-type"].startswith("text/plain")
    assert cat.ended and cat.trailers == {}


OPTION_FLAGS = {
    "": {},
    "cid-version=1": {"cid_version": 1},
    "cid-version=1&raw-leaves=false": {"cid_version": 1, "raw_leaves": False},
    "raw-leaves=true": {"raw_leaves": True},
    "chunker=size-1024": {"chunker": "size-1024"},
    "cid-version=1&chunker=size-64": {"cid_version": 1, "chunker": "size-64"},
}
# every option up to a few chunks, and the link boundary with the defaults (tiny chunks make
# thousands of blocks: tests/test_unixfs.py covers them without a blockstore)
PICKED = [
    v
    for v in VECTORS["files"]
    if (v["size"] <= 3 * C + 17 and "size-64" not in v["options"])
    or (v["size"] == 174 * C + 1 and v["options"] in ("", "cid-version=1"))
]


@pytest.mark.parametrize("vector", PICKED, ids=lambda v: f"{v['size']}-{v['options'] or 'default'}")
def test_add_gives_the_js_importers_cids(node, vector):
    content = data(vector["seed"], vector["size"])
    answer = node.add([("f", content)], **OPTION_FLAGS[vector["options"]])
    assert answer.status == 200, answer.body
    [line] = answer.lines()
    assert line["Hash"] == vector["cid"]
    cat = node.request("cat", [("arg", vector["cid"])])
    assert cat.body == content


@pytest.mark.parametrize("size", [C - 1, C + 1, 173 * C + 9, 174 * C, 174 * C + 1])
def test_add_matches_debian_ipfs_cid(node, size, tmp_path, ipfs_cid):
    content = data(5000 + size % 991, size)
    (tmp_path / "f").write_bytes(content)
    out = subprocess.run([ipfs_cid, str(tmp_path / "f")], capture_output=True, check=True)
    [line] = node.add([("f", content)]).lines()
    assert line["Hash"] == json.loads(out.stdout)["CIDv0"]


def test_wrap_with_directory_as_js_importer(node):
    sizes = {f["seed"]: f["size"] for f in VECTORS["files"]}
    for vector in VECTORS["directories"]:
        # names query-escaped, as kubo's client sends them ("+" is "%2B", a space "+")
        files = [(quote_plus(name), data(seed, sizes[seed])) for name, seed in vector["files"]]
        answer = node.add(files, wrap_with_directory=True, **OPTION_FLAGS[vector["options"]])
        got = [(x["Name"], x["Hash"], int(x["Size"])) for x in answer.lines()]
        assert got == [(e["path"], e["cid"], e["size"]) for e in vector["entries"]]
        # the wrapping directory resolves names, and is the one pinned
        root = got[-1][1]
        cat = node.request("cat", [("arg", f"/ipfs/{root}/zeta.csv")])
        assert cat.body == data(2, sizes[2])
        pins = node.request("pin/ls", [("arg", root)]).json()["Keys"]
        assert pins == {root: {"Type": "recursive"}}


def test_nested_paths_make_directories(node):
    answer = node.add(
        [("docs", b"", "application/x-directory"), ("docs%2Fa.txt", b"A"),
         ("docs%2Fsub%2Fb.txt", b"B"), ("top.txt", b"T")]
    )
    lines = answer.lines()
    assert [x["Name"] for x in lines] == [
        "docs/a.txt",
        "docs/sub/b.txt",
        "top.txt",
        "docs/sub",
        "docs",
    ]
    docs = lines[-1]["Hash"]
    assert node.request("cat", [("arg", f"{docs}/sub/b.txt")]).body == b"B"
    listing = node.request("object/get", [("arg", docs)]).json()
    assert [link["Name"] for link in listing["Links"]] == ["a.txt", "sub"]
    answer = node.request("cat", [("arg", docs)])
    assert answer.status == 500 and error_of(answer) == "this dag node is a directory"
    answer = node.request("cat", [("arg", f"{docs}/nope")])
    assert answer.status == 500 and 'no link named "nope"' in error_of(answer)


def test_add_progress_only_hash_and_pin_flags(node):
    content = data(77, 3 * C + 100)
    lines = node.add([("p.bin", content)], progress=True, only_hash=True).lines()
    progress = [x["Bytes"] for x in lines if "Bytes" in x]
    assert progress == sorted(progress) and progress[-1] == len(content)
    assert all(x["Name"] == "p.bin" for x in lines)
    cid = lines[-1]["Hash"]
    # only-hash stored nothing
    assert node.request("block/stat", [("arg", cid)]).status == 500
    [line] = node.add([("p.bin", content)], pin=False).lines()
    assert line["Hash"] == cid
    assert node.request("block/stat", [("arg", cid)]).status == 200
    assert node.request("pin/ls", [("arg", cid)]).status == 500  # stored, not pinned


def test_cat_offset_length_and_several_paths(node):
    first, second = data(31, 2 * C + 5), data(32, 1000)
    a = node.add([("a", first)]).lines()[0]["Hash"]
    b = node.add([("b", second)]).lines()[0]["Hash"]
    both = first + second
    for offset, length in [(0, None), (5, 10), (C - 3, 7), (C, C), (len(first) - 1, 3),
                           (len(both) - 2, 100), (len(both) + 5, None), (3, 0)]:
        params = [("arg", a), ("arg", b), ("offset", str(offset))]
        if length is not None:
            params.append(("length", str(length)))
        answer = node.request("cat", params)
        want = both[offset:] if length is None else both[offset : offset + length]
        assert answer.status == 200 and answer.body == want, (offset, length)
        assert answer.headers["x-content-length"] == str(len(want))


def test_object_get_as_kubo(node):
    [line] = node.add([("mars", b"Hello Mars")]).lines()
    assert line["Hash"] == "QmWkHFpYBZ9mpPRreRbMhhYWXfUhBAue3JkbbpFqwowSRb"
    answer = node.request("object/get", [("arg", line["Hash"]), ("encoding", "json")])
    assert answer.body == b'{"Links":[],"Data":"\\u0008\\u0002\\u0012\\nHello Mars\\u0018\\n"}\n'
    as_base64 = node.request("object/get", [("arg", line["Hash"]), ("data-encoding", "base64")])
    assert base64.b64decode(as_base64.json()["Data"]) == b"\x08\x02\x12\nHello Mars\x18\n"
    big = node.add([("big", data(40, 3 * C))]).lines()[0]["Hash"]
    links = node.request("object/get", [("arg", big)]).json()["Links"]
    assert [link["Name"] for link in links] == ["", "", ""]
    for link in links:
        block = node.request("block/get", [("arg", link["Hash"])]).body
        assert link["Size"] == len(block)  # a leaf's cumulative size is its own
        assert hashlib.sha256(block).digest() == CID.parse(link["Hash"]).digest


def test_go_json_escapes_like_go():
    assert go_json({"Name": "a<b>&c\u2028\x7f", "N": 1}) == (
        b'{"Name":"a\\u003cb\\u003e\\u0026c\\u2028\x7f","N":1}\n'
    )
    assert go_json(["\b\f\x01", '\t\n\r"\\']) == b'["\\u0008\\u000c\\u0001","\\t\\n\\r\\"\\\\"]\n'


def test_object_get_turns_invalid_utf8_into_replacement_characters(node):
    [line] = node.add([("bin", b"ok\xff\xe2\x82Z")]).lines()
    data_ = node.request("object/get", [("arg", line["Hash"])]).json()["Data"]
    assert data_.endswith("ok\ufffd\ufffd\ufffdZ\u0018\u0006")  # 6 bytes


def test_block_get_and_stat(node):
    cid = node.add([("x", b"block me")], cid_version=1).lines()[0]["Hash"]
    block = node.request("block/get", [("arg", cid)])
    assert block.body == b"block me" and block.headers["x-stream-output"] == "1"
    assert node.request("block/stat", [("arg", cid)]).json() == {"Key": cid, "Size": 8}


def test_version(node):
    info = node.request("version").json()
    assert list(info) == ["Version", "Commit", "Repo", "System", "Golang"]
    assert info["Version"].count(".") == 2


# -- pins ---------------------------------------------------------------------------------------


def test_pins_add_list_and_remove(tmp_path):
    with feeslab.devnet.start(seed=7, warm=False, blockstore=tmp_path / "store") as dev:
        node = Node(dev)
        big = node.add([("big", data(50, 2 * C + 1))], pin=False).lines()[0]["Hash"]
        small = node.add([("small", b"small")], pin=False).lines()[0]["Hash"]
        assert node.request("pin/ls").json() == {"Keys": {}}
        assert node.request("pin/add", [("arg", big)]).json() == {"Pins": [big]}
        assert node.request("pin/add", [("arg", small), ("recursive", "false")]).json() == {
            "Pins": [small]
        }
        leaves = [x["Hash"] for x in node.request("object/get", [("arg", big)]).json()["Links"]]
        keys = node.request("pin/ls").json()["Keys"]
        assert keys == dict(sorted(
            {big: {"Type": "recursive"}, small: {"Type": "direct"},
             **{leaf: {"Type": "indirect"} for leaf in leaves}}.items()
        ))
        assert list(node.request("pin/ls", [("type", "direct")]).json()["Keys"]) == [small]
        assert set(node.request("pin/ls", [("type", "indirect")]).json()["Keys"]) == set(leaves)
        one = node.request("pin/ls", [("arg", leaves[1])]).json()
        assert one == {"Keys": {leaves[1]: {"Type": f"indirect through {big}"}}}
        streamed = node.request("pin/ls", [("stream", "true")])
        assert streamed.headers["x-chunked-output"] == "1"
        assert {x["Cid"]: x["Type"] for x in streamed.lines()} == {
            k: v["Type"] for k, v in keys.items()
        }
        # a recursive pin is not removed as a direct one
        answer = node.request("pin/rm", [("arg", big), ("recursive", "false")])
        assert answer.status == 500 and "pinned recursively" in error_of(answer)
        answer = node.request("pin/add", [("arg", big), ("recursive", "false")])
        assert answer.status == 500 and "already pinned recursively" in error_of(answer)
        # all or nothing: one unpinned argument leaves the others pinned
        answer = node.request("pin/rm", [("arg", small), ("arg", leaves[0])])
        assert answer.status == 500 and "not pinned or pinned indirectly" in error_of(answer)
        assert small in node.request("pin/ls").json()["Keys"]
        assert node.request("pin/rm", [("arg", big), ("arg", small)]).json() == {
            "Pins": [big, small]
        }
        assert node.request("pin/ls").json() == {"Keys": {}}
        answer = node.request("pin/ls", [("arg", big)])
        assert answer.status == 500 and "is not pinned" in error_of(answer)


# -- streaming errors ---------------------------------------------------------------------------


def _damage(store: Path, cid: str) -> None:
    path = Blockstore(store).path(CID.parse(cid))
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))


def test_a_damaged_block_mid_stream_goes_to_the_trailer(tmp_path):
    store = tmp_path / "store"
    with feeslab.devnet.start(seed=7, warm=False, blockstore=store) as dev:
        node = Node(dev)
        content = data(60, 10 * C)
        cid = node.add([("f", content)]).lines()[0]["Hash"]
        leaves = [x["Hash"] for x in node.request("object/get", [("arg", cid)]).json()["Links"]]
        _damage(store, leaves[6])
        answer = node.request("cat", [("arg", cid)])
        assert answer.status == 200 and answer.ended
        assert answer.body == content[: 6 * C]  # what came before the damage
        assert answer.trailers == {
            "x-stream-error": f"block in storage has different hash than requested: {leaves[6]}"
        }
        # damage in the first block: nothing streamed yet, so a plain 500
        _damage(store, leaves[0])
        answer = node.request("cat", [("arg", cid)])
        assert answer.status == 500 and "different hash" in error_of(answer)
        # adding the same bytes again repairs the store
        node.add([("f", content)])
        assert node.request("cat", [("arg", cid)]).body == content


def test_an_add_failing_after_its_first_line_keeps_200_and_uses_the_trailer(node):
    first, second = data(70, 3 * (1 << 20)), data(71, 3 * (1 << 20))
    answer = node.add([("same", first), ("same", second)])
    assert answer.status == 200 and answer.ended
    lines = answer.lines()
    assert lines[0]["Name"] == "same" and "Hash" in lines[0]
    assert lines[-1]["Type"] == "error" and "more than once" in lines[-1]["Message"]
    assert answer.trailers["x-stream-error"] == lines[-1]["Message"]


def test_a_cut_multipart_body_after_a_file_is_reported_in_the_trailer(node):
    body, content_type = multipart([("a", data(72, 3 << 20)), ("b", data(73, 1 << 21))])
    answer = node.request("add", body=body[:-200], content_type=content_type)
    assert answer.status == 200
    assert answer.lines()[0]["Name"] == "a"
    assert "unexpected end of the multipart body" in answer.trailers["x-stream-error"]


# -- durability ---------------------------------------------------------------------------------


def test_content_survives_a_restart(tmp_path):
    store = tmp_path / "store"
    with feeslab.devnet.start(seed=7, warm=False, blockstore=store) as dev:
        cid = Node(dev).add([("keep", data(80, C + 1))]).lines()[0]["Hash"]
    with feeslab.devnet.start(seed=7, warm=False, blockstore=store) as dev:
        node = Node(dev)
        assert node.request("cat", [("arg", cid)]).body == data(80, C + 1)
        assert node.request("pin/ls").json()["Keys"][cid] == {"Type": "recursive"}


@pytest.mark.slow
def test_acknowledged_content_survives_sigkill(tmp_path):
    store = tmp_path / "store"
    acknowledged = {}
    dev = feeslab.devnet.spawn(ipfs_dir=str(store))
    try:
        node = Node(dev)
        for seed in range(4):
            content = data(90 + seed, (seed + 1) * C + seed)
            acknowledged[node.add([(f"f{seed}", content)]).lines()[0]["Hash"]] = content
    finally:
        os.kill(dev._process.pid, signal.SIGKILL)  # no clean shutdown
        dev.stop()
    # the leftovers of a killed write are temporaries only, never a partial block
    for path in (store / "blocks").glob("*/*.data"):
        key = path.name.removesuffix(".data")
        assert (
            hashlib.sha256(path.read_bytes()).digest()
            == base64.b32decode(key + "=" * (-len(key) % 8))[2:]
        )
    with feeslab.devnet.spawn(ipfs_dir=str(store)) as again:
        node = Node(again)
        for cid, content in acknowledged.items():
            assert node.request("cat", [("arg", cid)]).body == content
        assert set(acknowledged) <= set(node.request("pin/ls").json()["Keys"])


def test_blockstore_layout_and_writer(tmp_path):
    store = Blockstore(tmp_path)
    try:
        assert (tmp_path / "blocks" / "SHARDING").read_text() == (
            "/repo/flatfs/shard/v1/next-to-last/2\n"
        )
        cid = CID.parse(HELLO)
        key = Blockstore.key(cid)
        assert key.startswith("CIQ")  # kubo's flatfs names: base32 of the multihash
        writer: BlockWriter = store.writer()
        writer.put(cid, b"not the block")  # a wrong block is stored...
        writer.flush()
        assert store.path(cid) == tmp_path / "blocks" / key[-3:-1] / f"{key}.data"
        with pytest.raises(OSError, match="different hash"):
            store.get(cid)  # ...but never served
        stale = store.path(cid).parent / ".put-x.tmp"
        stale.write_bytes(b"partial")
        old = time.time() - 7200
        os.utime(stale, (old, old))
    finally:
        store.close()
    Blockstore(tmp_path).close()
    assert not stale.exists()


# -- multipart ------------------------------------------------------------------------------------


def test_multipart_parser_any_split():
    body, content_type = multipart(
        [("a.txt", b"hello"), ("empty", b""), ("crlf", b"\r\n--not-the-boundary\r\n")]
    )
    boundary = boundary_of(content_type)
    for step in (1, 2, 3, 7, 64, len(body)):
        parser = MultipartParser(boundary)
        parts: list = []
        for start in range(0, len(body), step):
            for kind, value in parser.feed(body[start : start + step]):
                if kind == "part":
                    parts.append([value.filename, b""])
                elif kind == "data":
                    parts[-1][1] += value
        parser.close()
        assert parts == [
            ["a.txt", b"hello"],
            ["empty", b""],
            ["crlf", b"\r\n--not-the-boundary\r\n"],
        ]


def test_multipart_parser_skips_a_preamble_and_ignores_the_epilogue():
    body, content_type = multipart([("a.txt", b"hello")])
    parser = MultipartParser(boundary_of(content_type))
    events = []
    for piece in (b"a preamble (RFC 2046)\r\n", body[:9], body[9:], b"an epilogue"):
        events += parser.feed(piece)
    parser.close()
    assert [kind for kind, _ in events if kind != "data"] == ["part", "end"]
    assert b"".join(value for kind, value in events if kind == "data") == b"hello"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"--b\r\nno colon here\r\n\r\nabc\r\n--b--\r\n", "malformed multipart body"),
        (b"--b\r\nX: " + b"a" * 20_000 + b"\r\n\r\nabc\r\n--b--\r\n", "header size"),
    ],
)
def test_multipart_parser_refuses_bad_part_headers(body, problem):
    parser = MultipartParser("b")
    with pytest.raises(MultipartError, match=problem):
        for start in range(0, len(body), 1000):
            parser.feed(body[start : start + 1000])


def test_multipart_parser_refuses_a_cut_body():
    body, content_type = multipart([("a", b"abc")])
    parser = MultipartParser(boundary_of(content_type))
    parser.feed(body[:-5])
    with pytest.raises(MultipartError):
        parser.close()
    assert boundary_of("application/json") is None


def test_multipart_parser_reads_quoted_and_utf8_part_headers():
    assert boundary_of('Multipart/Form-Data; Boundary="a\\"b"') == 'a"b'
    body = (
        b'--b\r\nContent-Disposition: form-data; name="file"; filename="\xe6\x97\xa5 x;y.txt"\r\n'
        b"Content-Type: Text/Plain; charset=utf-8\r\n\r\nabc\r\n--b--\r\n"
    )
    parser = MultipartParser("b")
    (part,) = [value for kind, value in parser.feed(body) if kind == "part"]
    parser.close()
    assert (part.name, part.filename, part.content_type) == ("file", "日 x;y.txt", "text/plain")

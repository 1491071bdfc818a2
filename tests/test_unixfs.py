"""CIDs against independent implementations: kubo's published vectors, Debian's ``ipfs_cid``
(rust-cid-npm) and js-ipfs's importer (vectors in tests/data/unixfs_vectors.json).

Inputs are ``shake_256(b"feeslab-unixfs-<seed>")`` cut to the wanted size, so the JS vectors
were computed on the very bytes these tests rebuild.
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
from pathlib import Path

import pytest

from feeslab import unixfs
from feeslab.unixfs import (
    CHUNK_SIZE,
    CID,
    DAG_PB,
    MAX_LINKS,
    RAW,
    CidError,
    DagError,
    FileImporter,
    ImportOptions,
    Link,
    cid_of,
    import_bytes,
)

VECTORS = json.loads((Path(__file__).parent / "data" / "unixfs_vectors.json").read_text())
OPTIONS = {
    "": {},
    "cid-version=1": {"cid_version": 1},
    "cid-version=1&raw-leaves=false": {"cid_version": 1, "raw_leaves": False},
    "raw-leaves=true": {"raw_leaves": True},
    "chunker=size-1024": {"chunk_size": 1024},
    "cid-version=1&chunker=size-64": {"cid_version": 1, "chunk_size": 64},
}


def data(seed: int, size: int) -> bytes:
    return hashlib.shake_256(f"feeslab-unixfs-{seed}".encode()).digest(size)


# -- kubo's published vectors -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH"),
        (b"hello world\n", "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o"),
        (b"Hello Worlds!\n", "QmVr26fY1tKyspEJBniVhqxQeEjhF78XerGiqWAwraVLQH"),
        (b"Hello Mars", "QmWkHFpYBZ9mpPRreRbMhhYWXfUhBAue3JkbbpFqwowSRb"),
    ],
)
def test_kubo_vectors(content, expected):
    assert str(cid_of(content)) == expected


def test_kubo_vectors_cidv1_and_sizes():
    assert str(cid_of(b"", cid_version=1)) == (
        "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"
    )
    # kubo's add reports "Size": "20" for "hello world\n": its one block's bytes
    assert import_bytes(b"hello world\n").size == 20
    # object/get of "Hello Mars" shows this UnixFS data
    [block] = import_bytes(b"Hello Mars").blocks
    assert unixfs.decode_pbnode(block.data).data == b"\x08\x02\x12\nHello Mars\x18\n"


# -- js-ipfs's importer -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "vector", VECTORS["files"], ids=lambda v: f"{v['size']}-{v['options'] or 'default'}"
)
def test_js_importer_vectors(vector):
    content = data(vector["seed"], vector["size"])
    assert str(cid_of(content, **OPTIONS[vector["options"]])) == vector["cid"]


@pytest.mark.parametrize("vector", VECTORS["directories"], ids=lambda v: v["options"] or "v0")
def test_js_importer_directory_vectors(vector):
    options = ImportOptions(**OPTIONS[vector["options"]])
    sizes = {f["seed"]: f["size"] for f in VECTORS["files"]}
    entries = []
    for (name, seed), expected in zip(vector["files"], vector["entries"], strict=False):
        result = import_bytes(data(seed, sizes[seed]), options)
        assert (name, str(result.cid), result.size) == (
            expected["path"],
            expected["cid"],
            expected["size"],
        )
        entries.append((name, result.cid, result.size))
    block, size = unixfs.directory_block(entries, cid_version=options.cid_version)
    root = vector["entries"][-1]
    assert root["path"] == ""
    assert (str(block.cid), size) == (root["cid"], root["size"])


# -- Debian's ipfs_cid --------------------------------------------------------------------------


def _boundary_sizes() -> list[int]:
    rng = random.Random(6)
    sizes = {0, 1, CHUNK_SIZE - 1, CHUNK_SIZE, CHUNK_SIZE + 1}
    for k in (2, 3, 17, MAX_LINKS - 1, MAX_LINKS, MAX_LINKS + 1):
        sizes |= {k * CHUNK_SIZE + d for d in (-1, 0, 1, rng.randrange(1, CHUNK_SIZE))}
    sizes |= {rng.randrange(1, 3 * CHUNK_SIZE) for _ in range(6)}
    return sorted(sizes)


@pytest.mark.parametrize("size", _boundary_sizes())
def test_matches_debian_ipfs_cid(size, tmp_path, ipfs_cid):
    content = data(1000 + size % 997, size)
    path = tmp_path / "f"
    path.write_bytes(content)
    out = subprocess.run([ipfs_cid, str(path)], capture_output=True, check=True, timeout=120)
    theirs = json.loads(out.stdout)
    ours = cid_of(content)
    assert str(ours) == theirs["CIDv0"]
    # its CIDv1 names the same dag-pb root
    assert str(ours.to_v1()) == theirs["CIDv1"]


# -- the tree kubo builds -----------------------------------------------------------------------


def _root(content: bytes, **options) -> tuple[unixfs.PBNode, unixfs.UnixFSData]:
    result = import_bytes(content, ImportOptions(**options))
    block = {b.cid: b.data for b in result.blocks}[result.cid]
    node = unixfs.decode_pbnode(block)
    return node, unixfs.decode_unixfs(node.data)


def test_one_chunk_is_its_own_root():
    node, data_ = _root(data(1, CHUNK_SIZE))
    assert node.links == ()
    assert data_.type == unixfs.FILE
    assert data_.data == data(1, CHUNK_SIZE)
    assert cid_of(data(1, CHUNK_SIZE), cid_version=1).codec == RAW


def test_balanced_layout_fills_a_parent_then_adds_a_level():
    size = (MAX_LINKS + 1) * CHUNK_SIZE + 5
    node, meta = _root(data(2, size))
    assert meta.filesize == size
    # 176 leaves: a full parent of 174, and one holding the last two
    assert meta.blocksizes == (MAX_LINKS * CHUNK_SIZE, CHUNK_SIZE + 5)
    assert [link.name for link in node.links] == ["", ""]
    node, meta = _root(data(2, MAX_LINKS * CHUNK_SIZE))
    assert len(node.links) == MAX_LINKS and set(meta.blocksizes) == {CHUNK_SIZE}


def test_link_sizes_are_cumulative():
    result = import_bytes(data(3, 3 * CHUNK_SIZE + 10))
    blocks = {b.cid: b.data for b in result.blocks}
    root = unixfs.decode_pbnode(blocks[result.cid])
    assert [link.tsize for link in root.links] == [len(blocks[link.cid]) for link in root.links]
    assert result.size == len(blocks[result.cid]) + sum(link.tsize for link in root.links)
    assert result.size == sum(len(b) for b in blocks.values())


@pytest.mark.parametrize("options", [{}, {"cid_version": 1}, {"chunk_size": 100}])
def test_streaming_writes_give_the_same_dag(options):
    content = data(4, 5 * CHUNK_SIZE // 2 + 3)
    rng = random.Random(8)
    seen: list[unixfs.Block] = []
    importer = FileImporter(ImportOptions(**options), seen.append)
    position = 0
    while position < len(content):
        step = rng.choice([1, 7, 4096, CHUNK_SIZE - 1, CHUNK_SIZE, 3 * CHUNK_SIZE])
        importer.write(content[position : position + step])
        position += step
    result = importer.finish()
    whole = import_bytes(content, ImportOptions(**options))
    assert result.cid == whole.cid and result.size == whole.size
    assert [b.cid for b in seen] == [b.cid for b in whole.blocks]
    # a parent is emitted after all of its children
    order = {b.cid: i for i, b in enumerate(seen)}
    for block in seen:
        if block.cid.codec == DAG_PB:
            for link in unixfs.decode_pbnode(block.data).links:
                assert order[link.cid] < order[block.cid]


def test_importer_misuse_is_refused():
    importer = FileImporter()
    importer.finish()
    with pytest.raises(RuntimeError):
        importer.write(b"x")
    with pytest.raises(RuntimeError):
        importer.finish()
    with pytest.raises(ValueError, match="chunk_size"):
        ImportOptions(chunk_size=unixfs.MAX_CHUNK_SIZE + 1)
    with pytest.raises(ValueError, match="cid_version"):
        ImportOptions(cid_version=2)


# -- encodings ----------------------------------------------------------------------------------


def test_base58_known_values():
    assert unixfs.b58encode(b"hello world") == "StV1DL6CwTryKyV"
    assert unixfs.b58encode(b"\0\0\x01") == "112"
    assert unixfs.b58decode("112") == b"\0\0\x01"
    rng = random.Random(3)
    for _ in range(200):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        assert unixfs.b58decode(unixfs.b58encode(raw)) == raw
    with pytest.raises(CidError):
        unixfs.b58decode("0OIl")


def test_cid_text_forms():
    v0 = cid_of(b"hello world\n")
    assert CID.parse(str(v0)) == v0
    v1 = v0.to_v1()
    assert str(v1) == "bafybeicg2rebjoofv4kbyovkw7af3rpiitvnl6i7ckcywaq6xjcxnc2mby"
    assert CID.parse(str(v1)) == v1
    assert CID.parse("z" + unixfs.b58encode(bytes(v1))) == v1
    assert CID.parse("f" + bytes(v1).hex()) == v1
    assert CID.parse(str(v1).upper()) == v1
    assert CID.from_bytes(bytes(v0)) == v0


@pytest.mark.parametrize(
    "text",
    [
        "",
        "foo",
        "Qm123",
        "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5O",  # O is not base58
        "bafybeicg2rebjoofv4kbyovkw7af3rpiitvnl6i7ckcywaq6xjcxnc2mb",  # truncated
        "bciqa",  # a v0 multihash spelt in base32
        "mAXASIA",  # base64: not read here
    ],
)
def test_bad_cids_raise_cid_error(text):
    with pytest.raises(CidError):
        CID.parse(text)


def test_pbnode_round_trip_and_damage():
    child = cid_of(b"a")
    links = [Link(child, "", 9), Link(cid_of(b"b", cid_version=1), "named", 2**40)]
    data_ = unixfs.encode_unixfs(unixfs.FILE, None, 11, [9, 2])
    block = unixfs.encode_pbnode(links, data_)
    node = unixfs.decode_pbnode(block)
    assert node.links == tuple(links) and node.data == data_
    meta = unixfs.decode_unixfs(node.data)
    assert (meta.type, meta.filesize, meta.blocksizes, meta.data) == (unixfs.FILE, 11, (9, 2), b"")
    with pytest.raises(DagError):
        unixfs.decode_pbnode(block[:-3])
    with pytest.raises(DagError):
        unixfs.decode_pbnode(b"\x1a\x00")  # field 3 is not dag-pb
    with pytest.raises(DagError):
        unixfs.decode_unixfs(None)


def test_verify_reads_the_options_off_the_cid():
    content = data(9, 2 * CHUNK_SIZE + 1)
    for options in ({}, {"cid_version": 1}, {"cid_version": 1, "raw_leaves": False}):
        cid = cid_of(content, **options)
        assert unixfs.verify(content, cid)
        assert unixfs.verify(content, str(cid))
        tampered = bytearray(content)
        tampered[CHUNK_SIZE + 3] ^= 1
        assert not unixfs.verify(bytes(tampered), cid)
    assert unixfs.verify(b"x", cid_of(b"x", cid_version=1))  # a raw root

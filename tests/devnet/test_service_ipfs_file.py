"""`Devnet.ipfs_block_file`: the public way to the file that holds one block of the devnet's
IPFS node (what notebook 05 damages to show the node's integrity check)."""

from __future__ import annotations

import random

import pytest

import feeslab
import feeslab.devnet
from feeslab import unixfs


@pytest.fixture(scope="module")
def dev(tmp_path_factory):
    with feeslab.devnet.start(seed=7, warm=False, blockstore=tmp_path_factory.mktemp("store")) as d:
        yield d


def test_the_file_holds_the_blocks_bytes_and_damage_is_caught(dev) -> None:
    content = random.Random(5).randbytes(1 << 20)  # 1 MiB: four chunks under a root
    key = {"api_key": dev.api_key, "api_key_secret": dev.api_key_secret}
    with feeslab.connect(url=dev.url, **key) as lab:
        cid = lab.ipfs.publish(content)
        root = lab.ipfs.object_get(cid)
        chunk = root["Links"][2]["Hash"]
        path = dev.devnet.ipfs_block_file(chunk)
        stored = path.read_bytes()
        assert str(unixfs.cid_of(content[2 * unixfs.CHUNK_SIZE : 3 * unixfs.CHUNK_SIZE])) == chunk
        assert content[2 * unixfs.CHUNK_SIZE : 3 * unixfs.CHUNK_SIZE] in stored
        path.write_bytes(stored[:10] + bytes([stored[10] ^ 1]) + stored[11:])
        with pytest.raises(feeslab.IpfsStreamError, match="different hash"):
            lab.ipfs.cat(cid)


def test_a_block_the_node_never_had_has_no_file(dev) -> None:
    absent = unixfs.cid_of(b"never added to this node")
    assert not dev.devnet.ipfs_block_file(absent).exists()


def test_what_is_not_a_cid_is_refused(dev) -> None:
    with pytest.raises(unixfs.CidError):
        dev.devnet.ipfs_block_file("not-a-cid")

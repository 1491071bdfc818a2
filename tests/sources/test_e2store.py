"""The pieces the archive readers share (feeslab.protocol.e2store), against references."""

from __future__ import annotations

import random

import cramjam
import pytest
import rlp
from trie.hexary import HexaryTrie

from feeslab.protocol.e2store import first_chunk, framed, ordered_trie_root, snappy_frames


def hexary_root(values: list[bytes]) -> bytes:
    """The trie package's root of ``values`` keyed by ``rlp(index)``: the reference."""
    tree = HexaryTrie(db={})
    for i, value in enumerate(values):
        tree[rlp.encode(i)] = value
    return tree.root_hash


@pytest.mark.parametrize("count", [0, 1, 2, 3, 15, 16, 17, 127, 128, 129, 200, 256, 257, 600])
@pytest.mark.parametrize("sizes", [(1, 3), (1, 40), (20, 40), (50, 62), (200, 400), (250, 260)])
def test_the_ordered_trie_root_equals_the_trie_packages(count, sizes):
    """Counts across the key shapes (rlp(0) = 0x80, one byte to 127, 0x81 xx, 0x82 xx xx) and
    value sizes where nodes are inlined (under 32 bytes) or hashed, and across RLP's 56-byte
    string and list prefixes."""
    rng = random.Random(count * 1000 + sizes[0])
    values = [rng.randbytes(rng.randint(*sizes)) for _ in range(count)]
    assert ordered_trie_root(values) == hexary_root(values)


def test_snappy_frames_and_the_first_chunk():
    data = bytes(range(256)) * 1000  # more than one 64 KiB chunk
    stream = framed(data)
    assert snappy_frames(stream) == data == bytes(cramjam.snappy.decompress(stream))
    assert data.startswith(first_chunk(stream)) and len(first_chunk(stream)) == 65536
    with pytest.raises(ValueError):
        first_chunk(b"not snappy at all, not at all")

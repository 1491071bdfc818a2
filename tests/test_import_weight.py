"""What a fresh process loads: ``import feeslab`` only the exception tree, the client stack
nothing a scan never uses.

Structural, not timed (``benchmarks/import_weight.py`` measures the memory and the seconds):
each check runs in a fresh interpreter and reads its ``sys.modules``, so a top-level import of
a heavy package anywhere on the path fails here, naming the package.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import feeslab

# the packages each import must leave unloaded
NOT_AT_IMPORT = (
    "pandas", "numpy", "pyarrow", "scipy", "matplotlib", "httpx", "websockets", "eth_abi",
    "eth_utils", "rlp", "trie", "cramjam", "uvicorn", "starlette", "pyrevm", "IPython",
)  # fmt: skip
# what an uncle scan never uses: the statistics and plots, the ABI codec, RLP and tries (era1
# and header checks load them on use), the devnet's server and EVM
NOT_AT_CONNECT = (
    "scipy", "matplotlib", "eth_abi", "eth_utils", "rlp", "trie", "cramjam", "web3",
    "uvicorn", "starlette", "pyrevm", "feeslab.analysis", "feeslab.plots", "feeslab.devnet",
    "feeslab.cluster", "feeslab.watch", "feeslab.samples",
)  # fmt: skip


def _modules_after(statement: str) -> set[str]:
    """Every module a fresh interpreter holds in ``sys.modules`` after ``statement``."""
    script = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, timeout=240)  # fmt: skip
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def _loaded(statement: str, names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` a fresh interpreter holds after ``statement``."""
    modules = _modules_after(statement)
    return sorted(name for name in names if name in modules)


def test_import_feeslab_loads_no_heavy_package() -> None:
    assert _loaded("import feeslab", NOT_AT_IMPORT) == []


def test_import_feeslab_loads_only_the_exception_tree() -> None:
    ours = {name for name in _modules_after("import feeslab") if name.startswith("feeslab")}
    # errors.py's two helpers: redacting secrets and decoding Solidity reverts
    assert ours == {"feeslab", "feeslab.errors", "feeslab._redact", "feeslab._solidity"}


def test_the_client_stack_loads_nothing_a_scan_never_uses() -> None:
    assert _loaded("from feeslab import connect", NOT_AT_CONNECT) == []


@pytest.mark.parametrize("name", feeslab.__all__)
def test_every_public_name_resolves_to_its_module(name: str) -> None:
    value = getattr(feeslab, name)
    assert value.__module__.startswith("feeslab.")
    module = sys.modules[value.__module__]
    assert getattr(module, name) is value
    assert name in dir(feeslab)


def test_lazy_names_are_the_defining_modules_objects() -> None:
    from feeslab.connection import connect
    from feeslab.lab import Lab
    from feeslab.protocol.chainspec import ChainSpec

    assert feeslab.connect is connect
    assert feeslab.Lab is Lab
    assert feeslab.ChainSpec is ChainSpec


def test_a_subpackage_loads_as_an_attribute() -> None:
    import feeslab.analysis

    assert feeslab.analysis is sys.modules["feeslab.analysis"]


def test_a_misspelt_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="'conect'"):
        feeslab.conect  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(ImportError, match="Labb"):
        from feeslab import Labb  # type: ignore[attr-defined]  # noqa: F401

"""The datasets are declared once (feeslab.datasets.REGISTRY): Lab, feeslab fetch and the
cluster are made from the declarations, and a source that cannot serve a dataset says what it
offers."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import feeslab
from feeslab import datasets
from feeslab.cli import build_parser
from feeslab.cluster import DatasetJob
from feeslab.datasets import REGISTRY
from feeslab.datasets.registry import Registry
from feeslab.errors import ConfigError
from feeslab.fetch.credits import Plan
from feeslab.lab import Lab
from feeslab.sources.base import SourceMismatch
from feeslab.sources.era1 import Era1Source

REAL = Path(__file__).parent / "data" / "era1" / "mainnet-00000-5ec1ffb8.era1"


def _fetch_kinds() -> dict[str, object]:
    parser = build_parser()
    fetch = next(a for a in parser._subparsers._group_actions[0].choices.items()
                 if a[0] == "fetch")[1]  # fmt: skip
    return dict(fetch._subparsers._group_actions[0].choices)


def test_every_dataset_is_a_lab_method_with_its_fetchs_signature_and_help():
    for name, dataset in REGISTRY.items():
        method = getattr(Lab, name)
        fetch = list(inspect.signature(dataset.fetch).parameters)[1:]  # less the source
        own = list(inspect.signature(method).parameters)[1:]  # less self
        expected = [p for p in fetch if p != dataset.context]
        if dataset.partitions is not None:
            expected += ["client", "out", "keys"]
        assert own == expected, name
        # annotations, defaults and return as the declaration gives them (Dataset.signature)
        typed = inspect.signature(method, eval_str=True)
        assert typed.replace(parameters=list(typed.parameters.values())[1:]) == (
            dataset.signature()), name
        assert inspect.getdoc(dataset.fetch) in inspect.getdoc(method)
        if dataset.plan is not None:
            plan = list(inspect.signature(dataset.plan).parameters)[1:]
            assert list(inspect.signature(getattr(Lab, f"plan_{name}")).parameters)[1:] == plan
            assert inspect.signature(getattr(Lab, f"plan_{name}"), eval_str=True
                                     ).return_annotation is Plan  # fmt: skip
        else:
            assert not hasattr(Lab, f"plan_{name}")


def test_feeslab_fetch_has_a_kind_per_dataset_with_a_command_line_name():
    kinds = _fetch_kinds()
    declared = {d.cli: d for d in REGISTRY.values() if d.cli is not None}
    assert set(kinds) == set(declared)
    for cli, dataset in declared.items():
        flags = {flag for action in kinds[cli]._actions for flag in action.option_strings}
        assert {f for option in dataset.options for f in option.flags} <= flags


def test_a_cluster_job_exists_for_every_dataset_with_partitions_and_only_those():
    for name, dataset in REGISTRY.items():
        args = ([0, 10] if dataset.partitions is not None and dataset.partitions.kind == "range"
                else None)  # fmt: skip
        if dataset.partitions is None:
            with pytest.raises(ConfigError, match="one process"):
                DatasetJob.of(name)
        elif args is not None:
            job, options = DatasetJob.of(name, *args, budget=5)
            assert job.span().start == 0 and job.span().stop == 10
            assert options["budget"] == 5


def test_a_registry_refuses_two_datasets_of_one_name():
    blocks = REGISTRY["blocks"]
    with pytest.raises(ValueError, match="two datasets named 'blocks'"):
        Registry([blocks, blocks])
    with pytest.raises(KeyError, match="no dataset 'headers'"):
        REGISTRY["headers"]


def test_era1_files_serve_their_datasets_and_name_what_they_offer_for_others():
    source = Era1Source(REAL)
    frame = datasets.get("blocks", source, 0, 10, progress=False)
    assert frame["block_number"].tolist() == list(range(10))
    assert frame.attrs["source"] == "era1"
    scan = datasets.get("uncles", source, 0, 8_192, progress=False)
    assert len(scan.uncles) == 1_410 and len(scan.blocks) == 8_192  # the real Frontier uncles
    assert scan.plan.total == 0
    with pytest.raises(SourceMismatch) as raised:
        datasets.get("storage_series", source, "0x" + "11" * 20, 0, [1, 2])
    message = str(raised.value)
    assert "storage_series dataset needs 'json-rpc'" in message
    assert "offers 'blocks', 'fee_history', 'uncles'" in message


def test_an_era1_lab_has_no_node_and_says_so():
    with feeslab.connect(era1=REAL) as lab:
        assert not lab.has_node and lab.gas is None
        with pytest.raises(ConfigError, match="has no node"):
            lab.node  # noqa: B018
        with pytest.raises(SourceMismatch, match="gas-api"):
            lab.base_fee_history()
        assert lab.plan_blocks(0, 100).total == 0
        with pytest.raises(ConfigError, match="one process"):
            lab.fetch("storage", "0x" + "11" * 20, 0, 1, client=object())
        with pytest.raises(TypeError, match="'client'"):  # its method has no such parameter
            lab.storage("0x" + "11" * 20, 0, 1, client=object())


def test_the_shipped_samples_are_a_source_giving_the_era1_files_frames():
    from feeslab.sources.samples import SampleSource

    samples, files = SampleSource(), Era1Source(REAL)
    for name, args in (("blocks", (100, 300)), ("uncles", (0, 8_192))):
        shipped = datasets.get(name, samples, *args)
        read = datasets.get(name, files, *args, progress=False)
        pairs = ([(shipped, read)] if name == "blocks"
                 else [(shipped.uncles, read.uncles), (shipped.blocks, read.blocks)])
        for mine, theirs in pairs:
            assert mine.equals(theirs) and mine.dtypes.equals(theirs.dtypes)
            assert mine.attrs["source"] == "samples" and mine.attrs["chain_id"] == 1
    with pytest.raises(ConfigError, match="hold blocks 0 to 8,191, not 8,000 to 8,999"):
        datasets.get("blocks", samples, 8_000, 9_000)
    with pytest.raises(SourceMismatch, match="offers 'blocks', 'uncles'"):
        datasets.get("fee_history", samples, 0, 10)

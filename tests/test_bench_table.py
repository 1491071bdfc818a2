"""``make bench`` writes its table into docs/benchmarks.md between two markers, prose kept."""

from __future__ import annotations

import importlib.util
import os
import platform
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_table_module():
    # benchmarks/ is scripts, not a package: load the one module by path, leaving sys.path be
    spec = importlib.util.spec_from_file_location("bench_table", ROOT / "benchmarks" / "_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


table = _load_table_module()

FACTS = {"cpu": "Test CPU 9000", "cores": "3", "memory": "5 GiB", "load": "0.10 / 0.20 / 0.30",
         "python": "3.11.7", "pandas": "2.2.3", "system": "Linux 6.1", "commit": "abc1234",
         "date": "2026-11-27 03:00 UTC"}
AFTER = {**FACTS, "load": "1.50 / 0.90 / 0.40"}
ROWS = [
    ("generate chain 1 (210,000 blocks)", 6.5123, "32,246 blocks/s"),
    ("frames: parse_uncles (100,000 uncles)", 0.3456, "289,352 uncles/s; GOAL <= 2 s: PASS"),
    ("uncle scan, 50 ms: web3.py loop", 1156.3, "17 blocks/s | extrapolated"),
]
PROSE_BEFORE = "# Benchmarks\n\nWhat each goal means, in prose.\n\n"
PROSE_AFTER = "\n\n## Goals\n\nThe uncle scan at least 1.5x AsyncWeb3.\n"


def _document(tmp_path: Path, between: str) -> Path:
    start, end = table.markers()
    path = tmp_path / "benchmarks.md"
    path.write_text(f"{PROSE_BEFORE}{start}\n{between}\n{end}{PROSE_AFTER}", encoding="utf-8")
    return path


def test_the_table_replaces_what_lies_between_the_markers_and_keeps_the_prose(tmp_path):
    path = _document(tmp_path, "| old | 99 | stale figure of last week |")
    assert table.write(ROWS, FACTS, AFTER, path=path) == path
    text = path.read_text(encoding="utf-8")
    start, end = table.markers()
    assert text.startswith(PROSE_BEFORE + start + "\n")
    assert text.endswith("\n" + end + PROSE_AFTER)
    between = text[len(PROSE_BEFORE + start):-len(end + PROSE_AFTER)]
    assert "stale figure" not in between
    assert "2026-11-27 03:00 UTC" in between and "abc1234" in between
    assert "3 cores (Test CPU 9000)" in between
    assert "0.10 / 0.20 / 0.30 at the start, 1.50 / 0.90 / 0.40 at the end" in between
    assert "Python 3.11.7, pandas 2.2.3" in between
    rows = [line for line in between.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows == [
        "| benchmark | seconds | rate |",
        "| generate chain 1 (210,000 blocks) | 6.51 | 32,246 blocks/s |",
        "| frames: parse_uncles (100,000 uncles) | 0.346 | 289,352 uncles/s; GOAL <= 2 s: PASS |",
        "| uncle scan, 50 ms: web3.py loop | 1,156 | 17 blocks/s \\| extrapolated |",
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["benchmarks.md"]  # no temporary file left


def test_a_run_on_a_busy_machine_says_so(tmp_path):
    path = _document(tmp_path, "")
    table.write(ROWS, FACTS, AFTER, path=path)  # 1.50 at the end on 3 cores: not busy
    assert "under load" not in path.read_text(encoding="utf-8")
    table.write(ROWS, FACTS, {**AFTER, "load": "1.51 / 0.90 / 0.40"}, path=path)
    assert "**Measured under load:**" in path.read_text(encoding="utf-8")
    table.write(ROWS, {**FACTS, "load": "2.00 / 0.20 / 0.30"}, path=path)
    assert "**Measured under load:**" in path.read_text(encoding="utf-8")


def test_a_second_run_replaces_the_first_runs_table(tmp_path):
    path = _document(tmp_path, "")
    table.write(ROWS, FACTS, path=path)
    table.write(ROWS[:1], {**FACTS, "date": "2026-11-28 04:00 UTC"}, path=path)
    text = path.read_text(encoding="utf-8")
    assert "2026-11-28 04:00 UTC" in text and "2026-11-27" not in text
    assert "parse_uncles" not in text and text.count("generate chain 1") == 1
    assert text.startswith(PROSE_BEFORE) and text.endswith(PROSE_AFTER)


def test_the_file_keeps_its_permissions(tmp_path):
    path = _document(tmp_path, "")
    path.chmod(0o644)
    table.write(ROWS, FACTS, path=path)
    assert path.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("between_markers", [
    "no markers at all",
    "<!-- bench:start --> only the start",
    "<!-- bench:end --> end before start <!-- bench:start -->",
    "<!-- bench:start --> twice <!-- bench:start --> <!-- bench:end -->",
])
def test_a_document_without_a_marker_pair_is_refused_and_left_untouched(tmp_path, between_markers):
    path = tmp_path / "benchmarks.md"
    path.write_text(between_markers, encoding="utf-8")
    with pytest.raises(table.TableError, match="bench:"):
        table.write(ROWS, FACTS, path=path)
    assert path.read_text(encoding="utf-8") == between_markers
    assert [p.name for p in tmp_path.iterdir()] == ["benchmarks.md"]


def test_another_section_has_markers_of_its_own(tmp_path):
    path = tmp_path / "benchmarks.md"
    bench, cluster = table.markers(), table.markers("bench-cluster")
    path.write_text(f"{bench[0]}\nkept\n{bench[1]}\n{cluster[0]}\nold\n{cluster[1]}\n")
    table.write(ROWS[:1], FACTS, path=path, name="bench-cluster", script="benchmarks/cluster.py")
    text = path.read_text()
    assert f"{bench[0]}\nkept\n{bench[1]}" in text and "old" not in text
    assert "(benchmarks/cluster.py)" in text


def test_the_machine_facts_are_this_machines():
    facts = table.machine_facts()
    assert facts["cores"] == str(os.cpu_count())
    assert facts["python"] == platform.python_version()
    assert facts["pandas"] == pd.__version__
    assert len(facts["load"].split(" / ")) == 3
    assert facts["date"].endswith(" UTC") and facts["cpu"]
    assert facts["commit"] != ""


def test_the_repositorys_benchmarks_page_has_the_markers():
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    start, end = table.markers()
    assert text.count(start) == 1 and text.count(end) == 1 and text.index(start) < text.index(end)
    assert table.DOCS == ROOT / "docs" / "benchmarks.md"


def test_a_modules_rows_print_as_a_section_aligned_like_the_final_table():
    section = table.text(ROWS[:2], title="frames (benchmarks/frames.py): 3 s wall")
    lines = section.splitlines()
    assert lines[0] == "-- frames (benchmarks/frames.py): 3 s wall"
    width = len(ROWS[1][0])  # the longest name sets the name column
    assert lines[1] == f"{'benchmark':<{width}}  {'seconds':>10}  rate"
    assert lines[2] == f"{ROWS[0][0]:<{width}}  {'6.5123':>10}  32,246 blocks/s"
    assert lines[3].endswith("    0.3456  289,352 uncles/s; GOAL <= 2 s: PASS")
    assert len(lines) == 4
    # the final table: no title, every row, the same columns
    whole = table.text(ROWS).splitlines()
    assert whole[0].startswith("benchmark ") and len(whole) == 1 + len(ROWS)
    assert whole[3].split()[-5:] == ["1156.3000", "17", "blocks/s", "|", "extrapolated"]

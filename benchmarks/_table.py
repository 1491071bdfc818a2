"""The benchmark table as Markdown, written into ``docs/benchmarks.md`` between two markers.

``make bench`` (``benchmarks/run.py``) measures; this module records what it measured with the
machine it ran on: the CPU model and cores, the load average before and after the run, the
Python and pandas versions, the commit and the date. Only the text between
``<!-- bench:start -->`` and ``<!-- bench:end -->`` is replaced; the prose around it (what each
goal means) is kept. The file is replaced atomically (a temporary file in the same directory,
then a rename), so a run killed midway leaves the previous table whole.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

__all__ = [
    "TableError", "machine_facts", "markers", "render", "replace_between", "text", "write",
]  # fmt: skip

DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"

Row = tuple[str, float, str]


class TableError(ValueError):
    """The document has no well-formed pair of markers to write the table between."""


def markers(name: str = "bench") -> tuple[str, str]:
    """The start and end marker comments of section ``name``."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:  # not Linux: platform's word is the best there is
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _commit() -> str:
    """The checkout's commit, marked when files differ from it (figures of uncommitted code)."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                              capture_output=True, text=True, timeout=10, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):  # not a git checkout, or no git
        return "unknown"
    return head.stdout.strip() + (" with local changes" if dirty.stdout.strip() else "")


def machine_facts() -> dict[str, str]:
    """What the figures depend on, as they stand now (call it before the run, and keep it).

    Returns
    -------
    dict of str to str
        ``cpu`` (model), ``cores``, ``memory``, ``load`` (1, 5 and 15 minute load averages),
        ``python``, ``pandas``, ``system``, ``commit`` and ``date`` (UTC, to the minute).
    """
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {
        "cpu": _cpu_model(),
        "cores": str(os.cpu_count()),
        "memory": f"{memory:.0f} GiB",
        "load": " / ".join(f"{x:.2f}" for x in os.getloadavg()),
        "python": platform.python_version(),
        "pandas": pd.__version__,
        "system": f"{platform.system()} {platform.release()}",
        "commit": _commit(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _busy(facts: Mapping[str, str]) -> bool:
    """Whether the 1-minute load average was above half the cores."""
    return float(facts["load"].split(" / ")[0]) > int(facts["cores"]) / 2


def _seconds(value: float) -> str:
    if value != value:  # NaN: a row without a time
        return ""
    return f"{value:,.0f}" if value >= 1_000 else f"{value:.3g}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def text(rows: Iterable[Row], title: str | None = None, width: int | None = None) -> str:
    """Rows as ``benchmarks/run.py`` prints them: name, seconds, rate, aligned in columns.

    Parameters
    ----------
    rows : iterable of (str, float, str)
        (benchmark, seconds [s], rate and verdict).
    title : str, optional
        A heading line (the module that measured them), printed first.
    width : int, optional
        Width of the name column [characters]; the longest name's by default.
    """
    rows = list(rows)
    width = width or max([len("benchmark"), *(len(name) for name, _, _ in rows)])
    lines = [] if title is None else [f"-- {title}"]
    lines.append(f"{'benchmark':<{width}}  {'seconds':>10}  rate")
    lines += [f"{name:<{width}}  {seconds:>10.4f}  {rate}" for name, seconds, rate in rows]
    return "\n".join(lines)


def render(rows: Iterable[Row], before: Mapping[str, str], after: Mapping[str, str] | None = None,
           *, script: str = "benchmarks/run.py") -> str:
    """The Markdown between the markers: who measured what, then one row per benchmark.

    Parameters
    ----------
    rows : iterable of (str, float, str)
        (benchmark, seconds, rate and verdict), as ``benchmarks/run.py`` prints them.
    before : mapping
        :func:`machine_facts` taken before the run (its date and load are the run's start).
    after : mapping, optional
        :func:`machine_facts` taken after the run: its load is shown beside the first.
    script : str
        What wrote the table.
    """
    load = f"load average (1 / 5 / 15 min) {before['load']} at the start"
    if after is not None:
        load += f", {after['load']} at the end"
    lines = [
        f"Written by `make bench` ({script}) on {before['date']}, at commit {before['commit']}:",
        f"{before['cores']} cores ({before['cpu']}), {before['memory']}, {before['system']};",
        f"{load}; Python {before['python']}, pandas {before['pandas']}.",
        "",
    ]
    if _busy(before) or (after is not None and _busy(after)):
        lines += ["**Measured under load:** other processes used more than half of the cores, so",
                  "these figures are slower than an idle machine's.", ""]
    lines += [
        "| benchmark | seconds | rate |",
        "|---|---:|---|",
    ]
    lines += [f"| {_cell(name)} | {_seconds(seconds)} | {_cell(rate)} |"
              for name, seconds, rate in rows]
    return "\n".join(lines)


def replace_between(text: str, block: str, name: str = "bench") -> str:
    """``text`` with what lies between the markers of section ``name`` replaced by ``block``.

    Raises
    ------
    TableError
        When either marker is missing, appears twice, or the end comes before the start.
    """
    start, end = markers(name)
    if text.count(start) != 1 or text.count(end) != 1:
        raise TableError(f"expected {start} and {end} once each, found them "
                         f"{text.count(start)} and {text.count(end)} times")
    head, rest = text.split(start)
    if end not in rest:
        raise TableError(f"{end} comes before {start}")
    _, tail = rest.split(end)
    return f"{head}{start}\n{block.strip()}\n{end}{tail}"


def write(rows: Iterable[Row], before: Mapping[str, str], after: Mapping[str, str] | None = None,
          *, path: Path = DOCS, name: str = "bench", script: str = "benchmarks/run.py") -> Path:
    """Write the table into ``path`` between the markers of ``name``, atomically.

    Returns
    -------
    Path
        ``path``, rewritten; untouched when :class:`TableError` is raised.
    """
    path = Path(path)
    text = replace_between(path.read_text(encoding="utf-8"),
                           render(rows, before, after, script=script), name)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, path.stat().st_mode & 0o777)  # mkstemp's 0600 would stick
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    return path

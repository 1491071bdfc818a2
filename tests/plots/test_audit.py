"""The figure audit: each rule caught on a small figure that breaks it, a clean figure passes,
and in a notebook run by nbval (as ``make test`` runs them, with the ``IPYTHONDIR`` that
:func:`feeslab.plots.audit.write_profile` writes) a figure breaking a rule fails its cell naming
the rule while a clean notebook passes with its saved outputs unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from feeslab.plots.audit import FigureRuleError, load_ipython_extension, problems, write_profile


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _clean():
    fig, ax = plt.subplots(layout="constrained")
    ax.plot([0, 1, 2, 3], [1, 3, 2, 4], label="a line")
    ax.bar([0, 1, 2, 3], [1, 2, 3, 4], label="bars")
    ax.set_title("Figure 1. A clean figure")
    ax.set_ylabel("value [gwei]")
    ax.legend(loc="upper left", bbox_to_anchor=(1, 1))
    return fig, ax


def test_a_clean_figure_passes():
    fig, _ = _clean()
    assert problems(fig) == []


def test_a_clean_figure_of_panels_log_axes_and_an_outside_legend_passes():
    fig, (left, right) = plt.subplots(1, 2, sharey=True, layout="constrained")
    left.plot([1, 2, 3], [1, 10, 100], label="fee")
    left.set_yscale("log")
    left.set_ylabel("base fee [gwei] (log scale)")  # the right panel shares it
    right.scatter([1, 2, 3], [2, 20, 50])
    right.set_title("Panel titles carry no number")
    fig.suptitle("Figure 3. Two panels")
    fig.legend(loc="outside lower center")
    assert problems(fig) == []


@pytest.mark.parametrize(
    "title", ["Base fee per block", "Figure 1 Base fee", "figure 1. base fee", "Fig. 1. fee"]
)
def test_a_title_without_its_number_is_named(title):
    fig, ax = _clean()
    ax.set_title(title)
    assert problems(fig) == [
        f"title: the figure's title must start with 'Figure N. ' (it has {title!r})"
    ]


def test_a_figure_without_title_and_a_bad_suptitle_are_named():
    fig, ax = _clean()
    ax.set_title("")
    assert problems(fig)[0].startswith("title: ") and "no title" in problems(fig)[0]
    fig.suptitle("Fees")
    assert problems(fig) == ["title: the suptitle 'Fees' does not start with 'Figure N. '"]
    fig.suptitle("Figure 12. Fees")
    assert problems(fig) == []


def test_panels_need_a_numbered_suptitle_not_a_numbered_panel():
    fig, axes = plt.subplots(1, 2)
    axes[0].set_title("Figure 1. Left")
    (found,) = problems(fig)
    assert found.startswith("title: a figure of 2 panels needs a suptitle")


def test_a_twin_and_a_colorbar_are_not_panels():
    fig, ax = plt.subplots(layout="constrained")
    image = ax.imshow(np.arange(4).reshape(2, 2))
    fig.colorbar(image, ax=ax, label="count")
    ax.twinx().plot([0, 1], [0, 1])
    ax.set_title("Figure 2. A twin and a colorbar")
    assert problems(fig) == []


def test_vertical_bars_whose_axis_starts_above_zero_are_named():
    fig, ax = _clean()
    ax.set_ylim(0.5, 5)
    (found,) = problems(fig)
    assert found.startswith("bars: the value axis (y) of panel 1 ('Figure 1. A clean figure')")
    assert "starts at 0.5, above zero" in found


def test_horizontal_bars_whose_axis_starts_above_zero_are_named():
    fig, ax = plt.subplots()
    ax.barh(["a", "b"], [10, 20])
    ax.set_xlim(5, 25)
    ax.set_title("Figure 1. Horizontal bars")
    (found,) = problems(fig)
    assert found.startswith("bars: the value axis (x) of panel 1") and "starts at 5" in found


def test_negative_bars_whose_axis_ends_below_zero_are_named():
    fig, ax = plt.subplots()
    ax.bar(["a", "b"], [-10, -20])
    ax.set_ylim(-25, -5)
    ax.set_title("Figure 1. Losses")
    (found,) = problems(fig)
    assert found.startswith("bars: ") and "ends at -5, below zero" in found


@pytest.mark.parametrize("scale", ["log", "logit"])
def test_bars_on_a_log_or_logit_axis_are_named(scale):
    fig, ax = plt.subplots()
    ax.bar(["a", "b"], [0.2, 0.5])
    ax.set_yscale(scale)
    ax.set_ylabel(f"share ({scale} scale)")  # the label is right: the bars are not
    ax.set_title("Figure 1. Bars")
    assert problems(fig) == [
        f"bars: bars on the {scale} value axis (y) of panel 1 ('Figure 1. Bars'): a bar's "
        "length means nothing there; use points or lines, a linear axis, or show the difference"
    ]


def test_a_histogram_on_a_log_count_axis_is_named():
    fig, ax = plt.subplots()
    ax.hist([1, 1, 2, 3, 3, 3], log=True)
    ax.set_ylabel("blocks (log scale)")
    ax.set_title("Figure 1. A histogram")
    assert [p[:30] for p in problems(fig)] == ["bars: bars on the log value ax"]


@pytest.mark.parametrize(("scale", "word"), [("log", "log"), ("symlog", "log"), ("logit", "logit")])
def test_a_log_axis_whose_label_does_not_say_so_is_named(scale, word):
    fig, ax = plt.subplots()
    ax.plot([0.1, 0.5, 0.9], [0.1, 0.5, 0.9])
    ax.set_xscale(scale)
    ax.set_xlabel("share of blocks")
    ax.set_title("Figure 1. A share")
    assert problems(fig) == [
        f"log label: the x axis of panel 1 ('Figure 1. A share') is on a {scale} scale but its "
        f"label ('share of blocks') does not say {word!r}, e.g. '... ({word} scale)'"
    ]
    ax.set_xlabel(f"share of blocks ({word} scale)")
    assert problems(fig) == []


def test_a_logit_axis_labelled_only_log_is_named():
    fig, ax = plt.subplots()
    ax.plot([0.1, 0.9], [0.1, 0.9])
    ax.set_yscale("logit")
    ax.set_ylabel("rate (log scale)")
    ax.set_title("Figure 1. A rate")
    (found,) = problems(fig)
    assert found.startswith("log label: the y axis") and "'logit'" in found


def test_a_log_colorbar_must_say_so():
    from matplotlib.colors import LogNorm

    fig, ax = plt.subplots()
    image = ax.imshow([[1, 10], [100, 1000]], norm=LogNorm())
    fig.colorbar(image, ax=ax, label="blocks")
    ax.set_title("Figure 1. A heat map")
    (found,) = problems(fig)
    assert found.startswith("log label: the y axis of the colorbar ('blocks')")


@pytest.mark.parametrize("kind", ["line", "scatter", "errorbar"])
def test_a_legend_on_data_points_is_named(kind):
    fig, ax = plt.subplots()
    x = np.linspace(0, 1, 50)
    if kind == "line":
        ax.plot(x, np.full_like(x, 0.95), label="near the top")
    elif kind == "scatter":
        ax.scatter(x, np.full_like(x, 0.95), label="near the top")
    else:
        ax.errorbar(x, np.full_like(x, 0.95), yerr=0.01, fmt="none", label="near the top")
    ax.set_ylim(0, 1)
    ax.set_title("Figure 1. Data under the legend")
    ax.legend(loc="upper right")
    (found,) = problems(fig)
    assert found.startswith("legend: the legend of panel 1 ('Figure 1. Data under the legend') "
                            "covers ")  # fmt: skip
    assert "data points of panel 1" in found


def test_a_legend_on_bars_is_named():
    fig, ax = plt.subplots()
    ax.bar(range(10), [9] * 10, label="tall bars")
    ax.set_title("Figure 1. Bars under the legend")
    ax.legend(loc="upper left")
    (found,) = problems(fig)
    assert found.startswith("legend: the legend of panel 1") and " bars of panel 1" in found


def test_a_legend_in_empty_space_and_a_reference_line_under_it_pass():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 0.2], label="low")
    ax.axhline(0.9, color="grey")  # a reference line, not data
    ax.set_ylim(0, 1)
    ax.set_title("Figure 1. Room for the legend")
    ax.legend(loc="upper right")
    assert problems(fig) == []


def test_a_figure_legend_over_an_axes_is_named():
    fig, ax = plt.subplots()
    ax.scatter(np.linspace(0, 1, 20), np.linspace(0, 1, 20), label="diagonal")
    ax.set_title("Figure 1. A figure legend")
    fig.legend(loc="center")
    (found,) = problems(fig)
    assert found.startswith("legend: the figure's legend covers ")


def test_every_broken_rule_is_named_once_and_the_figure_is_unchanged():
    fig, ax = plt.subplots()
    ax.bar(range(5), [5] * 5, label="bars")
    ax.set_yscale("log")
    ax.legend(loc="lower center")
    fig.canvas.draw()
    before = np.asarray(fig.canvas.buffer_rgba()).copy()
    found = problems(fig)
    assert [rule.split(":")[0] for rule in found] == ["title", "bars", "log label", "legend"]
    fig.canvas.draw()
    assert np.array_equal(np.asarray(fig.canvas.buffer_rgba()), before)


# --- the hook, in a kernel: nbval as `make test` runs it -------------------------------------

CLEAN = """import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.plot([1, 2, 3], [1, 4, 9])
ax.set_title("Figure 1. Squares")
ax.set_ylabel("value (log scale)")
ax.set_yscale("log")"""
BROKEN = """import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.bar([1, 2, 3], [5, 6, 7])
ax.set_title("Bars from five")
ax.set_ylim(4, 8)
plt.show()"""
SHOWN = """fig"""  # the last expression: shown by the display formatter, not the inline flush


def _notebook(path: Path, sources: list[str]) -> Path:
    """A notebook of ``sources``, executed here (no audit) to save its outputs."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3", "display_name": "Python 3", "language": "python"
    }  # fmt: skip
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    NotebookClient(notebook, timeout=120, resources={"metadata": {"path": str(path.parent)}},
                   kernel_name="python3").execute()  # fmt: skip
    nbformat.write(notebook, path)
    return path


def _nbval(notebooks: list[Path], ipython_dir: Path) -> subprocess.CompletedProcess[str]:
    """``make test``'s nbval run (strict) of ``notebooks`` with ``IPYTHONDIR=ipython_dir``."""
    folder = notebooks[0].parent
    env = {**os.environ, "IPYTHONDIR": str(ipython_dir.resolve())}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-q", "-rf", "-W", "ignore", "--rootdir", str(folder), *map(str, notebooks)],
        capture_output=True, text=True, env=env, cwd=folder, timeout=240,
    )  # fmt: skip


def _outputs(notebook: Path) -> list[list[dict]]:
    return [cell["outputs"] for cell in json.loads(notebook.read_text())["cells"]]


@pytest.mark.slow
def test_under_nbval_a_figure_breaking_a_rule_fails_its_cell_and_a_clean_one_passes(
    tmp_path, monkeypatch
):
    profile = tmp_path / "ipython"
    config = write_profile(profile)
    assert "feeslab.plots.audit" in config.read_text()
    clean = _notebook(tmp_path / "clean.ipynb", [CLEAN, SHOWN])
    broken = _notebook(tmp_path / "broken.ipynb", [BROKEN, CLEAN])
    saved = clean.read_text()
    images = [o for outputs in _outputs(clean) for o in outputs if "image/png" in o["data"]]
    assert len(images) == 2  # the inline flush of cell 1, and the display of `fig`
    # without the audit the broken figure runs (and would pass nbval) as any other
    assert [o["output_type"] for o in _outputs(broken)[0]] == ["display_data"]

    run = _nbval([clean, broken], profile)
    assert run.returncode == 1, run.stdout[-3000:]
    failed = [line.split(" - ")[0] for line in run.stdout.splitlines() if line.startswith("FAILED")]
    assert failed == ["FAILED broken.ipynb::Cell 0"], run.stdout[-3000:]
    assert "3 passed" in run.stdout  # the clean notebook's 2 cells and the broken one's second
    assert "FigureRuleError" in run.stdout
    assert "bars: the value axis (y) of panel 1 ('Bars from five') starts at 4" in run.stdout
    assert "title: the figure's title must start with 'Figure N. '" in run.stdout
    assert clean.read_text() == saved

    # run with the audit, a clean notebook's outputs are the same to the byte (nbval skips
    # comparing images: here they are compared)
    monkeypatch.setenv("IPYTHONDIR", str(profile.resolve()))
    audited = _notebook(tmp_path / "audited.ipynb", [CLEAN, SHOWN])
    assert _outputs(audited) == _outputs(clean)


def test_the_extension_checks_the_figures_ipython_prints():
    from types import SimpleNamespace

    from IPython.core import pylabtools
    from IPython.core.formatters import DisplayFormatter

    shell = SimpleNamespace(display_formatter=DisplayFormatter())  # what the extension uses
    original = pylabtools.print_figure
    try:
        pylabtools.select_figure_formats(shell, {"png"})  # made before the extension: remade
        load_ipython_extension(shell)
        load_ipython_extension(shell)  # loading twice wraps once
        assert pylabtools.print_figure._feeslab_audited
        assert pylabtools.print_figure.__wrapped__ is original
        png = shell.display_formatter.formatters["image/png"]
        fig, _ = _clean()
        assert png.type_printers[type(fig)](fig)  # a clean figure prints
        fig.axes[0].set_title("no number")
        with pytest.raises(FigureRuleError, match="title: the figure's title must start"):
            png.type_printers[type(fig)](fig)
        assert png.type_printers[type(fig)](plt.figure()) is None  # empty: printed as nothing
    finally:
        pylabtools.print_figure = original

"""The course's figure rules, checked on a drawn figure: :func:`problems` names each one broken.

The rules (issue 41) every figure a notebook displays must meet:

- **title**: the figure's title (its suptitle, or its only panel's title) starts with
  ``"Figure N. "``;
- **bars**: bars start from zero on their value axis (its limits hold zero), and never stand on a
  log or logit value axis;
- **log label**: a log, symlog or logit axis says so in its label (``"... (log scale)"``);
- **legend**: no legend covers data: a line's or a scatter's data point, or a bar, inside the
  legend's box.

Under ``make test`` the notebooks' kernels load this module as an IPython extension
(:func:`load_ipython_extension`, through the kernel configuration that :func:`write_profile`
writes into the ``IPYTHONDIR`` the Makefile points at): every figure displayed is checked after
it is printed, and one that breaks a rule raises :class:`FigureRuleError` in its cell, which
fails nbval's run naming the rule. A figure that passes is displayed exactly as without it.

Examples
--------
>>> import matplotlib.pyplot as plt
>>> from feeslab.plots.audit import problems
>>> fig, ax = plt.subplots()
>>> _ = ax.bar(["a", "b"], [3, 4]); _ = ax.set_title("Figure 1. Two bars")
>>> problems(fig)
[]
>>> _ = ax.set_ylim(2, 5)
>>> print(*problems(fig))  # doctest: +ELLIPSIS
bars: the value axis (y) of panel 1 ('Figure 1. Two bars') starts at 2, above zero: bars start ...
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.transforms import Bbox

from feeslab.errors import FeeslabError

__all__ = [
    "FigureRuleError",
    "load_ipython_extension",
    "problems",
    "write_profile",
]

TITLE = re.compile(r"Figure \d+\. \S")
"""How a figure's title starts: ``"Figure N. "`` and the title's words."""
LOG_SCALES = {"log": "log", "symlog": "log", "logit": "logit"}
"""Each non-linear scale and the word its axis label must hold."""


class FigureRuleError(FeeslabError):
    """A displayed figure breaks the course's figure rules (:mod:`feeslab.plots.audit`)."""


def problems(fig: Figure) -> list[str]:
    """Name every figure rule ``fig`` breaks.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A figure with its artists; laid out (drawn without rendering) here when stale, so the
        legends and data have the places the reader sees.

    Returns
    -------
    list of str
        One sentence per violation, starting with the rule's name (``"title: "``, ``"bars: "``,
        ``"log label: "``, ``"legend: "``); empty when the figure keeps every rule.
    """
    if fig.stale:
        fig.draw_without_rendering()
    panels = _panels(fig)
    found = _title(fig, panels)
    for ax in _plotting_axes(fig):
        name = _name(ax, panels)
        found += _bars(ax, name)
        found += _log_labels(fig, ax, name)
    found += _legends(fig, panels)
    return found


def _plotting_axes(fig: Figure) -> list[Axes]:
    """The visible Axes of ``fig`` that show data (colorbars' Axes included, for their scale)."""
    return [ax for ax in fig.get_axes() if ax.get_visible()]


def _panels(fig: Figure) -> list[Axes]:
    """The panels a reader counts: visible Axes that are no colorbar, twins counted once."""
    panels: list[Axes] = []
    for ax in _plotting_axes(fig):
        if hasattr(ax, "_colorbar"):
            continue
        twins = getattr(ax, "_twinned_axes", None)
        if twins is not None and any(twins.joined(ax, other) for other in panels):
            continue
        panels.append(ax)
    return panels


def _name(ax: Axes, panels: list[Axes]) -> str:
    """``"panel k ('its title')"``, the way a message names an Axes."""
    for index, panel in enumerate(panels, start=1):
        twins = getattr(panel, "_twinned_axes", None)
        if ax is panel or (twins is not None and twins.joined(ax, panel)):
            titles = _titles(panel)
            return f"panel {index}" + (f" ({_short(titles[0])!r})" if titles else "")
    label = ax.get_ylabel() or ax.get_xlabel()
    return "the colorbar" + (f" ({label!r})" if label else "")


def _short(text: str, width: int = 48) -> str:
    """``text`` on one line, cut to ``width`` characters (a panel named by its title)."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _titles(ax: Axes) -> list[str]:
    return [text for loc in ("center", "left", "right") if (text := ax.get_title(loc).strip())]


def _title(fig: Figure, panels: list[Axes]) -> list[str]:
    suptitle = fig.get_suptitle().strip()
    if suptitle:
        if TITLE.match(suptitle):
            return []
        return [f"title: the suptitle {suptitle!r} does not start with 'Figure N. '"]
    if len(panels) != 1:
        return [
            f"title: a figure of {len(panels)} panels needs a suptitle starting with "
            "'Figure N. ' (fig.suptitle); panel titles carry no number"
        ]
    titles = _titles(panels[0])
    if any(TITLE.match(title) for title in titles):
        return []
    shown = repr(titles[0]) if titles else "no title"
    return [f"title: the figure's title must start with 'Figure N. ' (it has {shown})"]


def _bars(ax: Axes, name: str) -> list[str]:
    found: list[str] = []
    for container in ax.containers:
        if not isinstance(container, BarContainer) or not container.patches:
            continue
        vertical = container.orientation != "horizontal"
        which = "y" if vertical else "x"
        scale = ax.get_yscale() if vertical else ax.get_xscale()
        if scale in ("log", "symlog", "logit"):
            found.append(
                f"bars: bars on the {scale} value axis ({which}) of {name}: a bar's length means "
                "nothing there; use points or lines, a linear axis, or show the difference"
            )
            continue
        low, high = sorted(ax.get_ylim() if vertical else ax.get_xlim())
        sizes = np.array(
            [patch.get_height() if vertical else patch.get_width() for patch in container.patches],
            dtype=float,
        )
        if low > 0 and np.any(sizes > 0):
            found.append(
                f"bars: the value axis ({which}) of {name} starts at {low:g}, above zero: bars "
                f"start from zero (set_{which}lim(0, ...) or leave the limits to matplotlib)"
            )
        elif high < 0 and np.any(sizes < 0):
            found.append(
                f"bars: the value axis ({which}) of {name} ends at {high:g}, below zero: bars "
                "start from zero"
            )
    return found


def _log_labels(fig: Figure, ax: Axes, name: str) -> list[str]:
    found: list[str] = []
    for which in ("x", "y"):
        axis = ax.xaxis if which == "x" else ax.yaxis
        if not ax.axison or not axis.get_visible():
            continue
        scale = axis.get_scale()
        word = LOG_SCALES.get(scale)
        if word is None:
            continue
        label = axis.get_label_text().strip()
        if word in label.lower():
            continue
        if not label and _shared_label_says(fig, ax, which, word):
            continue  # an inner panel of shared axes: the outer panel's label says it
        shown = repr(label) if label else "no label"
        found.append(
            f"log label: the {which} axis of {name} is on a {scale} scale but its label "
            f"({shown}) does not say {word!r}, e.g. '... ({word} scale)'"
        )
    return found


def _shared_label_says(fig: Figure, ax: Axes, which: str, word: str) -> bool:
    shared = ax.get_shared_x_axes() if which == "x" else ax.get_shared_y_axes()
    labels = [
        (other.get_xlabel() if which == "x" else other.get_ylabel())
        for other in shared.get_siblings(ax)
    ]
    suplabel = getattr(fig, f"_sup{which}label", None)
    if suplabel is not None and not suplabel.get_text().startswith("Source:"):
        labels.append(suplabel.get_text())
    return any(word in label.lower() for label in labels)


def _legends(fig: Figure, panels: list[Axes]) -> list[str]:
    legends: list[tuple[Legend, str]] = [
        (legend, f"the legend of {_name(ax, panels)}")
        for ax in _plotting_axes(fig)
        if (legend := ax.get_legend()) is not None
    ]
    legends += [(legend, "the figure's legend") for legend in fig.legends]
    found: list[str] = []
    for legend, what in legends:
        if not legend.get_visible():
            continue
        box = legend.get_window_extent()
        for ax in _plotting_axes(fig):
            points, bars = _covered(ax, box)
            if points or bars:
                covered = ", ".join(
                    part
                    for part in (
                        f"{points} data point{'s' * (points != 1)}" if points else "",
                        f"{bars} bar{'s' * (bars != 1)}" if bars else "",
                    )
                    if part
                )
                found.append(
                    f"legend: {what} covers {covered} of {_name(ax, panels)}: place it outside "
                    "the axes (fig.legend(loc='outside lower center') with constrained layout, "
                    "or ax.legend(loc='upper left', bbox_to_anchor=(1, 1))) or label in empty space"
                )
    return found


def _covered(ax: Axes, box: Bbox) -> tuple[int, int]:
    """How many of ``ax``'s data points, and bars, lie inside ``box`` (display coordinates)."""
    shown = ax.get_window_extent()
    points = 0
    for xy in _data_points(ax):
        inside_axes = _inside(xy, shown)
        points += int(np.count_nonzero(inside_axes & _inside(xy, box)))
    bars = 0
    for container in ax.containers:
        if isinstance(container, BarContainer):
            for patch in container.patches:
                if not patch.get_visible():
                    continue
                extent = Bbox.intersection(patch.get_window_extent(), shown)
                if extent is not None and _overlaps(extent, box):
                    bars += 1
    return points, bars


def _data_points(ax: Axes) -> Iterator[np.ndarray]:
    """Display coordinates (n x 2) of the lines' vertices and the scatters' and segments'
    points; reference lines (axhline, axvline: not in data coordinates) are not data."""
    for line in ax.get_lines():
        if isinstance(line, Line2D) and line.get_visible() and line.get_transform() == ax.transData:
            xy = np.asarray(line.get_xydata(), dtype=float)
            if xy.size:
                yield line.get_transform().transform(xy)
    for collection in ax.collections:
        if not collection.get_visible():
            continue
        if isinstance(collection, PathCollection):
            offsets = np.asarray(collection.get_offsets(), dtype=float)
            if offsets.size:
                yield collection.get_offset_transform().transform(offsets)
        elif isinstance(collection, LineCollection):
            vertices = [np.asarray(path.vertices, dtype=float) for path in collection.get_paths()]
            vertices = [v for v in vertices if v.size]
            if vertices:
                yield collection.get_transform().transform(np.concatenate(vertices))


def _inside(xy: np.ndarray, box: Bbox) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.asarray(
            (xy[:, 0] > box.x0) & (xy[:, 0] < box.x1) & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1)
        )


def _overlaps(a: Bbox, b: Bbox) -> bool:
    """Whether two boxes share an area (touching edges do not count)."""
    return bool(a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1)


# --- the IPython extension: every displayed figure checked as it is printed -----------------


def _audited(print_figure: Callable[..., Any]) -> Callable[..., Any]:
    """``print_figure`` (IPython's, which the inline backend's formatters call) checking the
    figure after printing it: the image is unchanged when the figure passes."""
    if getattr(print_figure, "_feeslab_audited", False):
        return print_figure

    @functools.wraps(print_figure)
    def audited(fig: Figure, *args: Any, **kwargs: Any) -> Any:
        data = print_figure(fig, *args, **kwargs)
        if data is not None:  # an empty figure prints nothing, so shows nothing
            found = problems(fig)
            if found:
                title = fig.get_suptitle() or next(
                    (t for ax in fig.get_axes() for t in _titles(ax)), "untitled"
                )
                rules = "\n".join(f"- {problem}" for problem in found)
                raise FigureRuleError(
                    f"figure {title!r} breaks the figure rules (feeslab.plots.audit):\n{rules}"
                )
        return data

    audited._feeslab_audited = True  # type: ignore[attr-defined]
    return audited


def load_ipython_extension(ipython: Any) -> None:
    """Check every figure the IPython shell ``ipython`` displays (``%load_ext
    feeslab.plots.audit``, or the kernel configuration :func:`write_profile` writes).

    IPython's inline formatters are ``partial(IPython.core.pylabtools.print_figure, ...)``,
    made when matplotlib's inline backend starts (``retina_figure`` calls ``print_figure`` too):
    the module's ``print_figure`` is replaced by one that checks the printed figure, and the
    formatters made before (matplotlib imported first) are remade on it.
    """
    from IPython.core import pylabtools

    original = pylabtools.print_figure
    pylabtools.print_figure = _audited(original)
    if "matplotlib.figure" not in sys.modules:
        return
    for formatter in ipython.display_formatter.formatters.values():
        printer = formatter.type_printers.get(Figure)
        if isinstance(printer, functools.partial) and printer.func is original:
            formatter.for_type(
                Figure, functools.partial(pylabtools.print_figure, *printer.args,
                                          **printer.keywords)
            )  # fmt: skip


def write_profile(ipython_dir: Path) -> Path:
    """Write an IPython directory whose kernels load the audit (the ``IPYTHONDIR`` of
    ``make test``'s notebook run).

    Parameters
    ----------
    ipython_dir : pathlib.Path
        The directory (made if missing); ``IPYTHONDIR`` must name it by its absolute path, as
        each kernel starts in its notebook's folder.

    Returns
    -------
    pathlib.Path
        The kernel configuration written (``profile_default/ipython_kernel_config.py``).
    """
    config = Path(ipython_dir) / "profile_default" / "ipython_kernel_config.py"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "# written by feeslab.plots.audit.write_profile: every figure a kernel displays is\n"
        "# checked against the course's figure rules\n"
        "c.InteractiveShellApp.extensions = ['feeslab.plots.audit']\n"
        "c.InteractiveShellApp.reraise_ipython_extension_failures = True  # never silently off\n"
        "c.HistoryManager.enabled = False  # no history database in this directory\n",
        encoding="utf-8",
    )
    return config


def main(argv: list[str] | None = None) -> int:
    """``python -m feeslab.plots.audit DIR``: :func:`write_profile` into ``DIR``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m feeslab.plots.audit IPYTHONDIR", file=sys.stderr)
        return 2
    print(f"figure audit: {write_profile(Path(args[0]))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

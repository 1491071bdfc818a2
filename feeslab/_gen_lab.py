"""Write ``feeslab/_lab_datasets.py``: ``Lab``'s dataset methods, typed, from the registry.

``Lab`` has a method per dataset of :data:`feeslab.datasets.REGISTRY` and ``plan_<name>`` for
those with a plan. Made at import (``setattr``), type checkers and editors would not see them;
so they are written out, each with its full parameter list and return annotation
(``Dataset.signature()``, ``Dataset.plan_signature()``) and its dataset's docstring, into a
module checked in beside ``lab.py``, which ``Lab`` inherits from. Run after changing a
dataset's declaration or its fetch's signature::

    python -m feeslab._gen_lab          # rewrites feeslab/_lab_datasets.py
    python -m feeslab._gen_lab --check  # exit status 1 when the file is stale

``tests/test_lab_typed.py`` fails, naming this command, when the checked-in file is stale.
"""

from __future__ import annotations

import argparse
import ast
import collections.abc
import inspect
import sys
import textwrap
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from feeslab.datasets import REGISTRY
from feeslab.datasets.registry import Dataset
from feeslab.errors import FeeslabError
from feeslab.fetch.credits import Plan

__all__ = ["COMMAND", "TARGET", "main", "render"]

TARGET = Path(__file__).with_name("_lab_datasets.py")
COMMAND = "python -m feeslab._gen_lab"
_ALIASES = {"pandas": "pd", "numpy": "np"}  # imported as the house style does: pd.DataFrame


class GenerationError(FeeslabError):
    """A signature the generator cannot write out (an annotation or default it has no text
    for); raised while generating, never at import."""


@dataclass
class _Imports:
    """What the annotations name: ``from module import name``, and aliased modules."""

    names: dict[str, str] = field(default_factory=dict)  # name -> module
    modules: set[str] = field(default_factory=set)  # aliased (pandas as pd)

    def name(self, module: str, name: str) -> str:
        known = self.names.setdefault(name, module)
        if known != module:
            raise GenerationError(f"{name} is both {known}.{name} and {module}.{name}")
        return name

    def lines(self) -> Iterator[str]:
        by_module: dict[str, list[str]] = {}
        for name, module in self.names.items():
            by_module.setdefault(module, []).append(name)
        stdlib = sorted(m for m in by_module if m.partition(".")[0] in sys.stdlib_module_names)
        third = sorted(self.modules)
        ours = sorted(m for m in by_module if m.partition(".")[0] == "feeslab")
        yield "from __future__ import annotations"
        yield ""
        for module in stdlib:
            yield _from(module, by_module[module])
        if third:
            yield ""
            for module in third:
                yield f"import {module} as {_ALIASES[module]}"
        if ours:
            yield ""
            for module in ours:
                yield _from(module, by_module[module])


def _from(module: str, names: list[str]) -> str:
    return f"from {module} import {', '.join(sorted(names, key=lambda n: (not n.isupper(), n)))}"


def _public_home(cls: type) -> str:
    """The shortest module of ``cls.__module__``'s parents that exports it (``pandas`` for
    ``pandas.core.frame.DataFrame``)."""
    parts = cls.__module__.split(".")
    for end in range(1, len(parts) + 1):
        module = sys.modules.get(".".join(parts[:end]))
        if module is not None and getattr(module, cls.__qualname__, None) is cls:
            return ".".join(parts[:end])
    return cls.__module__


def _annotation(value: object, imports: _Imports) -> str:
    """``value`` (an evaluated annotation) as source text, noting what it imports."""
    if value is None or value is type(None):
        return "None"
    if value is typing.Any:
        return imports.name("typing", "Any")
    if value is typing.Self:
        return imports.name("typing", "Self")
    if value is Ellipsis:
        return "..."
    if isinstance(value, types.UnionType) or typing.get_origin(value) is typing.Union:
        return " | ".join(_annotation(a, imports) for a in typing.get_args(value))
    origin, args = typing.get_origin(value), typing.get_args(value)
    if origin is typing.Literal:
        return f"{imports.name('typing', 'Literal')}[{', '.join(map(repr, args))}]"
    if origin is collections.abc.Callable and args:  # Callable[[A, B], R]: a nested list
        *params, result = args
        inner = ("..." if params == [Ellipsis]
                 else f"[{', '.join(_annotation(p, imports) for p in params)}]")  # fmt: skip
        return f"{_annotation(origin, imports)}[{inner}, {_annotation(result, imports)}]"
    if origin is not None:
        return f"{_annotation(origin, imports)}[{', '.join(_annotation(a, imports) for a in args)}]"
    if isinstance(value, type):
        if value.__module__ == "builtins":
            return value.__qualname__
        if value.__module__.partition(".")[0] == "feeslab":  # its own module: no import cycle
            return imports.name(value.__module__, value.__qualname__)
        home = _public_home(value)
        root = home.partition(".")[0]
        if root in _ALIASES and home == root:
            imports.modules.add(root)
            return f"{_ALIASES[root]}.{value.__qualname__}"
        return imports.name(home, value.__qualname__)
    raise GenerationError(f"no source text for the annotation {value!r}")


def _default(value: object, where: str) -> str:
    text = repr(value)
    try:
        same = ast.literal_eval(text) == value
    except (ValueError, SyntaxError):
        same = False
    if not same:
        raise GenerationError(f"{where}: the default {text} is not a literal")
    return text


def _method(name: str, run: str, dataset: Dataset, signature: inspect.Signature, doc: str,
            imports: _Imports) -> list[str]:  # fmt: skip
    """One method's lines: ``def name(self, ...) -> R`` delegating to ``self.run``."""
    lines = [f"    def {name}(", "        self,"]
    args: list[str] = [f'"{dataset.name}"']
    star = False
    kinds = inspect.Parameter
    for param in signature.parameters.values():
        where = f"{name}({param.name})"
        if param.annotation is inspect.Parameter.empty:
            raise GenerationError(f"{where} has no annotation")
        text = _annotation(param.annotation, imports)
        if param.kind is kinds.KEYWORD_ONLY and not star:
            lines.append("        *,")
            star = True
        if param.kind is kinds.VAR_POSITIONAL:
            lines.append(f"        *{param.name}: {text},")
            args.append(f"*{param.name}")
            star = True
            continue
        if param.kind is kinds.VAR_KEYWORD:
            lines.append(f"        **{param.name}: {text},")
            args.append(f"**{param.name}")
            continue
        default = ("" if param.default is inspect.Parameter.empty
                   else f" = {_default(param.default, where)}")  # fmt: skip
        lines.append(f"        {param.name}: {text}{default},")
        args.append(f"{param.name}={param.name}" if param.kind is kinds.KEYWORD_ONLY
                    else param.name)  # fmt: skip
    returns = signature.return_annotation
    result = _annotation(returns, imports)
    if len(lines) == 2:  # no parameter but self
        lines = [f"    def {name}(self) -> {result}:"]
    else:
        lines.append(f"    ) -> {result}:")
    lines += _docstring(doc)
    given = textwrap.wrap(", ".join(args), 100 - 12, break_long_words=False,
                          break_on_hyphens=False)  # fmt: skip
    if returns is typing.Any or (run == "plan" and returns is Plan):  # what it runs returns
        opening = f"        return self.{run}("
    else:
        opening = f"        return {imports.name('typing', 'cast')}({result}, self.{run}("
        given[-1] += ")"
    if len(opening) + len(given[0]) + 1 <= 100 and len(given) == 1:
        lines.append(f"{opening}{given[0]})")
    else:
        given[-1] += ")"
        lines += [opening, *(f"            {part}" for part in given)]
    return lines


def _docstring(doc: str) -> list[str]:
    summary, _, rest = doc.strip().partition("\n\n")
    body = textwrap.wrap(" ".join(summary.split()), 100 - 8 - 3, break_long_words=False,
                         break_on_hyphens=False)  # fmt: skip
    body += ["", *(line.rstrip() for line in rest.splitlines())] if rest else []
    prefix = 'r"""' if "\\" in doc else '"""'
    if '"""' in doc:
        raise GenerationError(f"a docstring holds triple quotes: {body[0]}")
    lines = [f"        {prefix}{body[0]}"]
    lines += [f"        {line}" if line else "" for line in body[1:]]
    lines.append('        """')
    return lines


def _doc(dataset: Dataset, function: object) -> str:
    where = f"{getattr(function, '__module__', '')}.{getattr(function, '__qualname__', '')}"
    return f"{dataset.summary} (:func:`{where}`).\n\n{inspect.getdoc(function) or ''}"


def render() -> str:
    """The text of ``feeslab/_lab_datasets.py`` for the datasets of ``REGISTRY`` now."""
    imports = _Imports()
    imports.name("typing", "TYPE_CHECKING")
    plan_class = imports.name("feeslab.fetch.credits", "Plan")
    methods: list[str] = []
    for dataset in REGISTRY.values():
        methods += ["", *_method(dataset.name, "fetch", dataset, dataset.signature(),
                                 _doc(dataset, dataset.fetch), imports)]  # fmt: skip
        planned = dataset.plan_signature()
        if planned is not None:
            if planned.return_annotation is inspect.Signature.empty:
                planned = planned.replace(return_annotation=Plan)
            methods += ["", *_method(f"plan_{dataset.name}", "plan", dataset, planned,
                                     _doc(dataset, dataset.plan), imports)]  # fmt: skip
    any_ = imports.name("typing", "Any")
    head = [
        f'"""``Lab``\'s dataset methods, typed: GENERATED by ``{COMMAND}``; do not edit.',
        "",
        "One method per dataset of ``feeslab.datasets.REGISTRY`` (and ``plan_<name>`` for those",
        "with a plan), each with the Lab-facing signature its declaration gives",
        "(``Dataset.signature()``) and its docstring, running ``Lab.fetch``/``Lab.plan``. A",
        "dataset registered later, at run time, is reached as ``lab.fetch(name, ...)`` or",
        "``lab.<name>(...)`` (``Lab.__getattr__``, untyped).",
        '"""',
        "",
    ]
    body = [
        "",
        '__all__ = ["LabDatasets"]',
        "",
        "",
        "class LabDatasets:",
        '    """The dataset methods ``feeslab.lab.Lab`` inherits (generated from the registry)."""',
        "",
        "    if TYPE_CHECKING:  # Lab's: what each method below runs",
        "",
        f"        def fetch(self, name: str, /, *args: {any_}, **kwargs: {any_}) -> object: ...",
        "",
        f"        def plan(self, name: str, /, *args: {any_}, **kwargs: {any_})"
        f" -> {plan_class}: ...",
        *methods,
    ]
    return "\n".join([*head, *imports.lines(), *body]) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Rewrite the module, or with ``--check`` only say whether it is stale (status 1)."""
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args(argv)
    text = render()
    current = TARGET.read_text() if TARGET.exists() else ""
    if args.check:
        if current != text:
            print(f"{TARGET} is stale: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    if current != text:
        TARGET.write_text(text)
        print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

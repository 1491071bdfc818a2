"""A chunked dataset's fetch and plan, made from its declaration: the parameters are declared
once, as a function's signature and docstring, and the engine adds its own options.

::

    def blocks(start: int, stop: int) -> None:
        \"\"\"Block headers of ``start`` .. ``stop - 1``. ... numpydoc ...\"\"\"
        check_range(start, stop)           # the declaration checks its arguments

    get = fetcher(blocks, CHUNKS)      # get(source, start, stop, *, budget=None, progress=None)
    plan = planner(blocks, CHUNKS)     # plan(source, start, stop, *, less_cached=True)

``get`` checks the arguments with the declaration, then runs :func:`feeslab.engine.run.run`,
which returns a frame; its signature and help are the declaration's with
the engine's options (``budget``, ``progress``) added, and they are what ``Lab``, ``feeslab
fetch`` and the cluster read (``feeslab.datasets.registry.Dataset``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pandas as pd

from feeslab.engine.chunks import Chunked
from feeslab.engine.run import plan as plan_chunks
from feeslab.engine.run import run as run_chunks
from feeslab.fetch.credits import Plan

__all__ = ["ENGINE_OPTIONS", "fetcher", "planner"]

ENGINE_OPTIONS = """budget : int, optional
    Refuse (``BudgetExceeded``) before sending if spending so far plus
    the plan would pass it [credits]; every request is charged against
    it as it goes.
progress : bool, optional
    A progress bar over the blocks (default: the connection's setting)."""

_KW = inspect.Parameter.KEYWORD_ONLY
_SOURCE = inspect.Parameter("source", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Any)


def _with_options(doc: str) -> str:
    """``doc`` (numpydoc) with the engine's options at the end of its Parameters."""
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if line.strip() in ("Returns", "Raises", "Notes", "References") and i > 0 and set(
                lines[i + 1].strip()) == {"-"}:  # fmt: skip
            end = i - 1 if not lines[i - 1].strip() else i  # before the blank line
            return "\n".join([*lines[:end], *ENGINE_OPTIONS.splitlines(), *lines[end:]])
    return f"{doc}\n\nParameters\n----------\n{ENGINE_OPTIONS}"


def _named(function: Callable[..., Any], like: Callable[..., Any], name: str,
           signature: inspect.Signature, doc: str) -> Callable[..., Any]:  # fmt: skip
    function.__signature__ = signature  # type: ignore[attr-defined]
    function.__name__ = name
    function.__qualname__ = name
    function.__module__ = like.__module__
    function.__doc__ = doc
    return function


def fetcher(declared: Callable[..., Any], spec: Chunked) -> Callable[..., Any]:
    """``get(source, <declared parameters>, *, budget=None, progress=None)``: the dataset's
    fetch, run by the engine. The declaration's ``start`` and ``stop`` are the range; its
    other parameters go to ``extract`` and ``transform`` as ``params``."""
    signature = inspect.signature(declared, eval_str=True)  # what a type checker is told
    options = [inspect.Parameter("budget", _KW, default=None, annotation=int | None),
               inspect.Parameter("progress", _KW, default=None, annotation=bool | None)]
    whole = signature.replace(parameters=[_SOURCE, *signature.parameters.values(), *options],
                              return_annotation=pd.DataFrame)  # fmt: skip

    def get(source: Any, *args: Any, budget: int | None = None, progress: bool | None = None,
            **kwargs: Any) -> Any:
        declared(*args, **kwargs)  # its checks: a bad argument refused before anything
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        params = dict(bound.arguments)
        start, stop = params.pop("start"), params.pop("stop")
        return run_chunks(spec, source, start, stop, params, budget=budget, progress=progress)

    doc = _with_options(inspect.getdoc(declared) or "")
    return _named(get, declared, "get", whole, doc)


def planner(declared: Callable[..., Any], spec: Chunked) -> Callable[..., Any]:
    """``plan(source, <declared parameters>, *, less_cached=True)``: what the fetch costs
    before anything is sent [credits] (:func:`feeslab.engine.run.plan`)."""
    signature = inspect.signature(declared, eval_str=True)
    less = inspect.Parameter("less_cached", _KW, default=True, annotation=bool)
    whole = signature.replace(parameters=[_SOURCE, *signature.parameters.values(), less],
                              return_annotation=Plan)  # fmt: skip

    def plan(source: Any, *args: Any, less_cached: bool = True, **kwargs: Any) -> Any:
        declared(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        params = dict(bound.arguments)
        start, stop = params.pop("start"), params.pop("stop")
        return plan_chunks(spec, source, start, stop, params, less_cached=less_cached)

    doc = "What the fetch costs before anything is sent [credits]."
    return _named(plan, declared, "plan", whole, doc)

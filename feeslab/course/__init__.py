"""The course: feeslab's notebooks as lessons, in reading order, and their checked exercises.

Each lesson is one class session (about 45 minutes of reading and running), a notebook
``notebooks/NN_name.ipynb`` that opens with its goals and prerequisites and ends with exercises
checked here: ``exercise("1.2").check(answer)`` says whether an answer is right, and gives a hint
when it is not. The solutions are apart, in ``notebooks/solutions/``. The appendices are tours
and research-length material without exercises.

Examples
--------
>>> from feeslab.course import exercise
>>> exercise("1.1").check(...)   # doctest: +SKIP
Exercise 1.1: no answer yet. Replace ... with your answer and run the cell.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from feeslab.course._exercise import (
    Answer,
    Choice,
    Exercise,
    Function,
    Mistake,
    Number,
    Numbers,
    Verdict,
)
from feeslab.errors import ConfigError

__all__ = [
    "APPENDICES",
    "LESSONS",
    "Answer",
    "Appendix",
    "Choice",
    "Exercise",
    "Function",
    "Lesson",
    "Mistake",
    "Number",
    "Numbers",
    "Verdict",
    "exercise",
    "exercises",
]


@dataclass(frozen=True)
class Lesson:
    """One lesson: its number, notebook (without ``.ipynb``), title and exercises' module."""

    number: int
    notebook: str
    title: str
    module: str

    def exercises(self) -> tuple[Exercise, ...]:
        """The lesson's exercises, in order (its module's ``EXERCISES``)."""
        found: tuple[Exercise, ...] = importlib.import_module(
            f"feeslab.course.{self.module}"
        ).EXERCISES
        return found


@dataclass(frozen=True)
class Appendix:
    """A notebook read beside the lessons: a tour, or research-length material."""

    notebook: str
    title: str


LESSONS: tuple[Lesson, ...] = (
    Lesson(0, "00_getting_started", "Getting started: frames from a node, and what they cost",
           "getting_started"),
    Lesson(1, "01_base_fee", "The base fee: EIP-1559's rule, block by block", "base_fee"),
    Lesson(2, "02_fee_dynamics", "Fee dynamics: volatility, demand shocks and tips",
           "fee_dynamics"),
    Lesson(3, "03_blob_market", "The blob market, March 2024 to February 2026", "blob_market"),
    Lesson(4, "04_fee_suggestions", "Fee suggestions: which gets you in, and what it overpays",
           "fee_suggestions"),
    Lesson(5, "05_fork_gas_rules", "Each fork's gas rules: what a transaction costs",
           "fork_gas_rules"),
    Lesson(6, "06_uncle_rates", "Uncle rates: counting forks, with their uncertainty",
           "uncle_rates"),
    Lesson(7, "07_why_blocks_fork", "Why blocks fork: propagation, gas and real mainnet",
           "why_blocks_fork"),
    Lesson(8, "08_london_revenue", "London on 800,000 real blocks: what miners were paid",
           "london_revenue"),
    Lesson(9, "09_storage_layout", "Storage layout: where a contract keeps its state",
           "storage_layout"),
    Lesson(10, "10_calls_and_gas", "Calls and gas: what a transaction would do, need and cost",
           "calls_and_gas"),
    Lesson(11, "11_live", "Watching the fee market live", "live"),
)  # fmt: skip

APPENDICES: tuple[Appendix, ...] = (
    Appendix("90_tour_shared_datasets", "Tour: shared datasets you can verify by their CID"),
    Appendix("91_tour_multichain_wallet", "Tour: one connection, many chains"),
)


def exercises(lesson: int) -> tuple[Exercise, ...]:
    """Lesson ``lesson``'s exercises, in order."""
    for one in LESSONS:
        if one.number == lesson:
            return one.exercises()
    known = ", ".join(str(one.number) for one in LESSONS)
    raise ConfigError(f"there is no lesson {lesson!r}: the lessons are {known}")


def exercise(number: str) -> Exercise:
    """Exercise ``number`` (``"lesson.exercise"``, e.g. ``"1.2"``)."""
    lesson, _, _ = str(number).partition(".")
    if not lesson.isdigit():
        raise ConfigError(f"an exercise is named 'lesson.exercise', e.g. '1.2', not {number!r}")
    for one in exercises(int(lesson)):
        if one.number == str(number):
            return one
    raise ConfigError(f"lesson {lesson} has no exercise {number!r}")

"""Exercises a lesson ends with, checked by feeslab: a wrong answer gets a hint, a right one
says so.

An :class:`Exercise` holds its question, how an answer is checked (an :class:`Answer`), a general
hint, the mistakes a reader is likely to make (each with its own hint) and what to say when the
answer is right. ``exercise.check(answer)`` returns a :class:`Verdict`, which a notebook shows as
one line of text. Nothing here raises for a reader's answer, whatever its type: a string where a
number was asked gets a hint saying so, not a traceback.

Written by hand: the checking libraries for courses (nbgrader, otter-grader) grade submitted
notebooks afterwards, where these checks answer the reader in the cell, at once.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Answer",
    "Choice",
    "Exercise",
    "Function",
    "Mistake",
    "Number",
    "Numbers",
    "Verdict",
]

#: what a reader leaves in the cell before answering
_UNANSWERED = (None, Ellipsis)


@dataclass(frozen=True)
class Verdict:
    """What a check says: right or not, and the message the reader sees.

    ``bool(verdict)`` is whether the answer was right; ``repr`` is the message, so a cell ending
    with ``exercise.check(answer)`` shows it.
    """

    right: bool
    message: str
    answered: bool = True

    def __bool__(self) -> bool:
        return self.right

    def __repr__(self) -> str:
        return self.message


class Answer:
    """How an answer is checked.

    ``judge(answer)`` returns None when the answer is right, else a reason (shown before the
    hint) or the empty string when the hint alone should be shown.
    """

    def judge(self, answer: Any) -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def matches(self, answer: Any, wrong: Any) -> bool:
        """Whether ``answer`` is the known wrong answer ``wrong`` (for a mistake's hint)."""
        try:
            return bool(answer == wrong)
        except Exception:  # an answer whose == raises (an array) is not this mistake
            return False


def _number(value: Any) -> float | int | None:
    """The answer as a Python number, or None when it is not one (bools are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    return float(value)


@dataclass(frozen=True)
class Number(Answer):
    """A number, right within ``rel`` (a fraction) or ``abs`` of ``expected``; exact when both
are 0.

    ``expected`` may be a function of no arguments, computed when an answer is checked (a
    value the lesson's data gives). ``unit`` is named in the messages, e.g. ``"gwei"``.
    """

    expected: float | int | Callable[[], float | int]
    rel: float = 0.0
    abs: float = 0.0
    unit: str = ""

    def value(self) -> float | int:
        expected = self.expected() if callable(self.expected) else self.expected
        return expected

    def judge(self, answer: Any) -> str | None:
        got = _number(answer)
        if got is None:
            unit = f" [{self.unit}]" if self.unit else ""
            return f"expected a number{unit}, got {type(answer).__name__} {answer!r}."
        if isinstance(got, float) and not math.isfinite(got):
            return f"{got} is not a finite number."
        expected = self.value()
        tolerance = max(self.rel * abs(expected), self.abs)
        if tolerance == 0:
            if isinstance(got, float) and not got.is_integer():
                return "the answer is a whole number: the protocol's arithmetic is in integers."
            return None if int(got) == expected else ""
        return None if abs(got - expected) <= tolerance else ""

    def matches(self, answer: Any, wrong: Any) -> bool:
        got = _number(answer)
        if got is None:
            return False
        tolerance = max(self.rel * abs(wrong), self.abs)
        return bool(abs(got - wrong) <= tolerance if tolerance else got == wrong)


@dataclass(frozen=True)
class Numbers(Answer):
    """A sequence of numbers, each right within ``rel`` or ``abs`` of its expected value."""

    expected: Sequence[float | int] | Callable[[], Sequence[float | int]]
    rel: float = 0.0
    abs: float = 0.0
    unit: str = ""

    def value(self) -> list[float | int]:
        expected = self.expected() if callable(self.expected) else self.expected
        return list(expected)

    def judge(self, answer: Any) -> str | None:
        expected = self.value()
        try:
            got = [_number(item) for item in answer]
        except TypeError:
            return f"expected {len(expected)} numbers, got {type(answer).__name__} {answer!r}."
        if len(got) != len(expected):
            return f"expected {len(expected)} numbers, got {len(got)}."
        for position, (one, want) in enumerate(zip(got, expected, strict=True), start=1):
            if one is None:
                return f"item {position} is not a number."
            tolerance = max(self.rel * abs(want), self.abs)
            if abs(one - want) > tolerance:
                return f"item {position} is not right yet."
        return None

    def matches(self, answer: Any, wrong: Any) -> bool:
        try:
            return [_number(item) for item in answer] == [_number(item) for item in wrong]
        except TypeError:
            return False


@dataclass(frozen=True)
class Choice(Answer):
    """One of ``options`` (their keys, e.g. ``"a"``), of which ``correct`` is right.

    Answers are compared without case or surrounding blanks.
    """

    options: dict[str, str]
    correct: str

    def __post_init__(self) -> None:
        if self.correct not in self.options:
            raise ValueError(f"the correct choice {self.correct!r} is not among the options")

    def judge(self, answer: Any) -> str | None:
        key = answer.strip().lower() if isinstance(answer, str) else None
        if key not in self.options:
            keys = ", ".join(repr(key) for key in self.options)
            return f"answer with one of {keys}, not {answer!r}."
        return None if key == self.correct else ""

    def matches(self, answer: Any, wrong: Any) -> bool:
        return isinstance(answer, str) and answer.strip().lower() == wrong


@dataclass(frozen=True)
class Function(Answer):
    """A function the reader writes, right when it returns what ``reference`` does on every case.

    ``cases`` are argument tuples, or a function of no arguments giving them (cases drawn from
    the lesson's data). ``compare`` says whether two results agree (default: ``==``).
    """

    reference: Callable[..., Any]
    cases: Sequence[tuple[Any, ...]] | Callable[[], Sequence[tuple[Any, ...]]]
    compare: Callable[[Any, Any], bool] | None = None  # None: ==

    def judge(self, answer: Any) -> str | None:
        if not callable(answer):
            return f"expected a function, got {type(answer).__name__} {answer!r}."
        cases = self.cases() if callable(self.cases) else self.cases
        for arguments in cases:
            want = self.reference(*arguments)
            try:
                got = answer(*arguments)
            except Exception as error:  # the reader's code: say what it raised, do not re-raise
                shown = ", ".join(repr(argument) for argument in arguments)
                return f"your function raised {type(error).__name__}: {error} for ({shown})."
            same = self.compare(got, want) if self.compare else bool(got == want)
            if not same:
                shown = ", ".join(repr(argument) for argument in arguments)
                return f"for ({shown}) it returns {got!r}, not {want!r}."
        return None

    def matches(self, answer: Any, wrong: Any) -> bool:
        """Whether the reader's function behaves as the known wrong one on every case (to
        within 1e-9 for numbers: the same wrong formula written in another order)."""
        if answer is wrong:
            return True
        if not (callable(answer) and callable(wrong)):
            return False
        cases = self.cases() if callable(self.cases) else self.cases
        try:
            return all(_close(answer(*case), wrong(*case)) for case in cases)
        except Exception:  # the reader's code raised: not this mistake
            return False


def _close(got: Any, want: Any) -> bool:
    one, other = _number(got), _number(want)
    if one is None or other is None:
        return bool(got == want)
    return math.isclose(one, other, rel_tol=1e-9, abs_tol=0.0)


@dataclass(frozen=True)
class Mistake:
    """A wrong answer readers are likely to give, and the hint that answers it."""

    answer: Any
    hint: str


@dataclass(frozen=True)
class Exercise:
    """One exercise: its question, how its answer is checked and what the reader is told.

    Parameters
    ----------
    number : str
        Lesson and exercise, e.g. ``"1.2"``.
    kind : str
        ``"predict, then run"``, ``"compute and compare"`` or ``"read a figure"``.
    question : str
        The question as the lesson asks it (Markdown).
    answer : Answer
        How an answer is checked.
    hint : str
        What a wrong answer is told when it is none of the known mistakes.
    explanation : str
        What a right answer is told: why it is right.
    mistakes : tuple of Mistake
        Likely wrong answers, each with its own hint.
    """

    number: str
    kind: str
    question: str
    answer: Answer
    hint: str
    explanation: str
    mistakes: tuple[Mistake, ...] = ()

    KINDS = ("predict, then run", "compute and compare", "read a figure")

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise ValueError(
                f"exercise {self.number}: kind {self.kind!r} is not one of {self.KINDS}"
            )

    def check(self, answer: Any) -> Verdict:
        """Check ``answer``: right (and why), or not yet (and a hint)."""
        label = f"Exercise {self.number}"
        if any(answer is unanswered for unanswered in _UNANSWERED):
            return Verdict(
                False, f"{label}: no answer yet. Replace ... with your answer and run the cell.",
                answered=False,
            )
        try:
            reason = self.answer.judge(answer)
        except Exception as error:  # a reader's object that breaks a comparison: say so
            reason = f"your answer could not be compared ({type(error).__name__}: {error})."
        if reason is None:
            return Verdict(True, f"{label}: right. {self.explanation}")
        for mistake in self.mistakes:
            if self.answer.matches(answer, mistake.answer):
                return Verdict(False, f"{label}: not yet. Hint: {mistake.hint}")
        said = f"{reason[0].upper()}{reason[1:]} " if reason else ""
        return Verdict(False, f"{label}: not yet. {said}Hint: {self.hint}")

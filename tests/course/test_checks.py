"""The checks themselves: numbers exact or within a tolerance, choices, lists and functions, and
what a reader is told for each kind of wrong answer (never a traceback)."""

from __future__ import annotations

import numpy as np
import pytest

from feeslab.course import Choice, Exercise, Function, Mistake, Number, Numbers


def _exercise(answer, *mistakes):
    return Exercise("1.1", "compute and compare", "How much?", answer, hint="think again",
                    explanation="that is it.", mistakes=tuple(mistakes))  # fmt: skip


def test_an_exact_integer_takes_ints_numpy_ints_and_whole_floats_and_nothing_else():
    one = _exercise(Number(112_500_000_000, unit="wei"), Mistake(100_000_000_000, "it rises"))
    for right in (112_500_000_000, np.int64(112_500_000_000), 112_500_000_000.0):
        assert one.check(right), right
    assert repr(one.check(112_500_000_000)) == "Exercise 1.1: right. that is it."
    assert repr(one.check(100_000_000_000)) == "Exercise 1.1: not yet. Hint: it rises"
    assert repr(one.check(112_500_000_001)) == "Exercise 1.1: not yet. Hint: think again"
    half = one.check(112_500_000_000.5)
    assert not half and "whole number" in repr(half)
    text = one.check("112.5 gwei")
    assert not text and "Expected a number [wei], got str '112.5 gwei'" in repr(text)
    assert not one.check(True)  # a bool is not a number
    assert not one.check(float("nan"))


def test_a_tolerance_is_relative_or_absolute_and_a_callable_expectation_is_computed():
    calls = []

    def expected():
        calls.append(1)
        return 0.25

    one = _exercise(Number(expected, rel=0.02), Mistake(25, "a fraction, not a percentage"))
    assert one.check(0.2549) and not one.check(0.2551)
    assert repr(one.check(25.0)).endswith("Hint: a fraction, not a percentage")
    assert calls  # computed when checked
    absolute = _exercise(Number(10, abs=0.5))
    assert absolute.check(10.4) and not absolute.check(10.6)


def test_a_choice_ignores_case_and_blanks_and_names_the_options_when_the_answer_is_none():
    one = _exercise(Choice({"a": "rises", "b": "falls"}, correct="b"), Mistake("a", "look again"))
    assert one.check(" B ")
    assert repr(one.check("a")).endswith("Hint: look again")
    assert "Answer with one of 'a', 'b', not 'c'" in repr(one.check("c"))
    with pytest.raises(ValueError, match="not among the options"):
        Choice({"a": "x"}, correct="z")


def test_a_list_of_numbers_says_which_item_is_wrong():
    one = _exercise(Numbers([1, 2, 3], abs=0.01))
    assert one.check([1.001, 2, 3]) and one.check(np.array([1, 2, 3]))
    assert "Item 2 is not right yet" in repr(one.check([1, 2.5, 3]))
    assert "Expected 3 numbers, got 2" in repr(one.check([1, 2]))
    assert "Expected 3 numbers, got int 5" in repr(one.check(5))


def test_a_function_is_run_on_every_case_and_its_error_is_reported_not_raised():
    one = _exercise(Function(lambda a, b: a + b, cases=[(1, 2), (10, 20)]))
    assert one.check(lambda a, b: b + a)
    assert "For (10, 20) it returns 10, not 30" in repr(one.check(lambda a, b: a if a > 1 else 3))
    said = repr(one.check(lambda a, b: a / 0))
    assert "Your function raised ZeroDivisionError: division by zero for (1, 2)" in said
    assert "Expected a function, got int 3" in repr(one.check(3))


def test_an_unknown_kind_is_refused_when_the_exercise_is_written():
    with pytest.raises(ValueError, match="kind 'guess'"):
        Exercise("1.1", "guess", "?", Number(1), hint="", explanation="")


def test_a_function_that_behaves_as_a_known_mistake_gets_that_mistakes_hint():
    def floats(a, b):
        return (a + b) * 1.0 + 0.5

    one = _exercise(Function(lambda a, b: a + b, cases=[(1, 2), (10, 20)]),
                    Mistake(floats, "the half is extra"))  # fmt: skip
    said = repr(one.check(lambda a, b: 0.5 + b + a))  # the same mistake, written otherwise
    assert said.endswith("Hint: the half is extra")
    other = repr(one.check(lambda a, b: a * b))
    assert other.endswith("Hint: think again") and "For (1, 2) it returns 2, not 3" in other

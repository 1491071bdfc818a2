"""The course's structure: every lesson opens with goals and prerequisites and ends with two to
four exercises checked by feeslab; every exercise refuses its known wrong answers with their
hints and an empty answer with a request; every solution notebook's saved check says "right"
(``make test`` reruns the solutions under nbval strict, so the saved verdicts are what the
solutions compute now).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from feeslab.course import APPENDICES, LESSONS, Exercise, exercise, exercises
from feeslab.errors import ConfigError

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
CHECK = re.compile(r"""exercise\(\s*["'](\d+\.\d+)["']\s*\)\.check\(""")


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"])


def _text(cell: dict) -> str:
    """A code cell's saved output as text (streams and text/plain results)."""
    parts = []
    for output in cell.get("outputs", []):
        if output["output_type"] == "stream":
            parts.append("".join(output["text"]))
        elif "text/plain" in output.get("data", {}):
            parts.append("".join(output["data"]["text/plain"]))
    return "".join(parts)


def _checks(path: Path) -> dict[str, str]:
    """Exercise number -> the saved output of the cell that checks it."""
    found: dict[str, str] = {}
    for cell in _cells(path):
        if cell["cell_type"] == "code":
            for number in CHECK.findall(_source(cell)):
                assert number not in found, f"{path.name} checks exercise {number} twice"
                found[number] = _text(cell)
    return found


def test_the_lessons_are_numbered_in_reading_order_and_every_notebook_is_in_the_course():
    assert [lesson.number for lesson in LESSONS] == list(range(len(LESSONS)))
    for lesson in LESSONS:
        assert lesson.notebook.startswith(f"{lesson.number:02d}_")
    listed = {lesson.notebook for lesson in LESSONS} | {one.notebook for one in APPENDICES}
    on_disk = {path.stem for path in NOTEBOOKS.glob("*.ipynb")}
    assert on_disk == listed


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.notebook)
def test_a_lesson_opens_with_goals_and_prerequisites(lesson):
    first = _source(_cells(NOTEBOOKS / f"{lesson.notebook}.ipynb")[0])
    assert first.startswith(f"# Lesson {lesson.number} · "), first[:80]
    goals = first.split("### Goals", 1)[1].split("###", 1)[0]
    assert len(re.findall(r"^- ", goals, flags=re.M)) >= 2, "at least two goals, as a list"
    prerequisites = first.split("### Prerequisites", 1)[1]
    if lesson.number > 0:  # which earlier lesson supplies what it assumes
        assert re.search(r"Lesson \d+", prerequisites), prerequisites[:200]
    assert "minutes" in first


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.notebook)
def test_a_lesson_ends_with_its_exercises_unanswered(lesson):
    cells = _cells(NOTEBOOKS / f"{lesson.notebook}.ipynb")
    headings = [
        i for i, cell in enumerate(cells)
        if cell["cell_type"] == "markdown" and _source(cell).startswith("## Exercises")
    ]  # fmt: skip
    assert len(headings) == 1, "one '## Exercises' section"
    tail = cells[headings[0]:]
    assert not any(_source(cell).startswith("## ") for cell in tail[1:]), "exercises come last"
    numbers = [one.number for one in lesson.exercises()]
    assert 2 <= len(numbers) <= 4
    assert numbers == [f"{lesson.number}.{k}" for k in range(1, len(numbers) + 1)]
    checks = _checks(NOTEBOOKS / f"{lesson.notebook}.ipynb")
    assert list(checks) == numbers
    prose = "\n".join(_source(cell) for cell in tail if cell["cell_type"] == "markdown")
    for one in lesson.exercises():
        assert f"Exercise {one.number}" in prose
        assert one.question in prose, f"exercise {one.number}'s question is asked as checked"
        assert checks[one.number].startswith(f"Exercise {one.number}: no answer yet.")


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.notebook)
def test_the_solutions_are_apart_and_every_check_there_says_right(lesson):
    path = NOTEBOOKS / "solutions" / f"{lesson.notebook}.ipynb"
    checks = _checks(path)
    assert list(checks) == [one.number for one in lesson.exercises()]
    for number, said in checks.items():
        assert said.startswith(f"Exercise {number}: right."), said


def _all() -> list[Exercise]:
    return [one for lesson in LESSONS for one in lesson.exercises()]


@pytest.mark.parametrize("one", _all(), ids=lambda one: one.number)
def test_every_exercise_refuses_its_known_mistakes_with_their_hints(one):
    assert one.mistakes, f"exercise {one.number} names at least one likely wrong answer"
    for mistake in one.mistakes:
        verdict = one.check(mistake.answer)
        assert not verdict and verdict.answered
        assert repr(verdict) == f"Exercise {one.number}: not yet. Hint: {mistake.hint}"


@pytest.mark.parametrize("one", _all(), ids=lambda one: one.number)
def test_every_exercise_asks_for_an_answer_and_refuses_a_wrong_type_with_its_hint(one):
    empty = one.check(...)
    assert not empty and not empty.answered
    wrong = one.check(object())
    assert not wrong and wrong.answered
    assert repr(wrong).endswith(f"Hint: {one.hint}")


def test_exercises_are_found_by_number_and_an_unknown_one_is_a_typed_error():
    first = LESSONS[1].exercises()[0]
    assert exercise(first.number) is first
    assert exercises(1)[0] is first
    with pytest.raises(ConfigError, match="no lesson 99"):
        exercises(99)
    with pytest.raises(ConfigError, match=r"'lesson\.exercise'"):
        exercise("one")
    with pytest.raises(ConfigError, match=r"lesson 1 has no exercise '1\.9'"):
        exercise("1.9")

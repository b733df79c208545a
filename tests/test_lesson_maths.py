"""The lessons' typeset maths, read from their text (no browser): every lesson has some, and
every formula is well formed -- its dollars paired, its braces balanced, no space just inside
an inline ``$`` (JupyterLab, Colab and the website's MyST would print such a ``$`` as text).

tests/test_book.py checks the same formulas rendered by MathJax in a real browser.
"""

import re
import sys
from pathlib import Path

import nbformat
import pytest

from helpers import course

ROOT = Path(__file__).resolve().parents[1]
LESSONS = course.lessons()
#: Lessons whose text has no typeset maths yet (their engineers add it): expected to fail,
#: strictly, so that the day a lesson gains maths this test says to take it off the list.
WITHOUT_MATHS_YET = set()


def prose(lesson, folder="solutions"):
    """The lesson's markdown, with code blocks and inline code removed (code stays code)."""
    nb = nbformat.read(str(ROOT / folder / f"{lesson}.ipynb"), as_version=4)
    text = "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.sub(r"`[^`\n]*`", "", text)


#: ``$...$`` within one paragraph (a line break inside is fine for MyST, JupyterLab and Colab).
INLINE = r"\$((?:[^$\n]|\n(?!\s*\n))+?)\$"


def formulas(text):
    """``(display, inline, leftover)``: the ``$$...$$`` and ``$...$`` formulas of ``text`` and
    what is left of it (where a lone ``$`` would show)."""
    display = re.findall(r"\$\$(.+?)\$\$", text, flags=re.S)
    rest = re.sub(r"\$\$(.+?)\$\$", " ", text, flags=re.S)
    inline = re.findall(INLINE, rest)
    rest = re.sub(INLINE, " ", rest)
    return display, inline, rest


def balanced(formula):
    depth = 0
    for char in re.sub(r"\\[{}]", "", formula):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


@pytest.mark.parametrize("source, expected", [
    ("a $x$ b $$y = 1$$ c", (["y = 1"], ["x"], "a   b   c")),
    ("costs $n^2$ and $O(n)$", ([], ["n^2", "O(n)"], "costs   and  ")),
    ("a lone $ stays", ([], [], "a lone $ stays")),
    ("over $a +\nb$ two lines", ([], ["a +\nb"], "over   two lines")),
    ("not $a\n\nb$ two paragraphs", ([], [], "not $a\n\nb$ two paragraphs")),
])
def test_formulas_are_found_inline_and_displayed(source, expected):
    display, inline, rest = formulas(source)
    assert (display, inline, rest) == expected


def test_code_is_not_read_as_maths(tmp_path, monkeypatch):
    (tmp_path / "solutions").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("costs `$x` here, $n$ there\n\n```\nprint('$')\n```")]
    nbformat.write(nb, str(tmp_path / "solutions" / "01_x.ipynb"))
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert formulas(prose("01_x"))[1] == ["n"]


@pytest.mark.parametrize("formula, ok", [("\\frac{a}{b}", True), ("e^{s_j", False), ("a}{", False),
                                         ("\\{x\\}", True)])
def test_balanced_braces(formula, ok):
    assert balanced(formula) is ok


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_lesson_has_typeset_maths(lesson, request):
    if lesson in WITHOUT_MATHS_YET:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"{lesson}: no typeset maths yet"))
    display, inline, _ = formulas(prose(lesson))
    assert len(display) + len(inline) >= 5, f"{lesson}: {len(display) + len(inline)} formulas in its text"


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_dollar_of_a_lesson_pairs_up(lesson):
    _, _, rest = formulas(prose(lesson))
    lone = [rest[max(0, m.start() - 40):m.start() + 40] for m in re.finditer(r"\$", rest)]
    assert not lone, f"{lesson}: a $ without its partner (it would show as text): {lone}"


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_formula_of_a_lesson_is_well_formed(lesson):
    display, inline, _ = formulas(prose(lesson))
    unbalanced = [f for f in display + inline if not balanced(f)]
    assert not unbalanced, f"{lesson}: unbalanced braces in {unbalanced}"
    spaced = [f for f in inline if f != f.strip()]
    assert not spaced, f"{lesson}: a space just inside $...$ (MyST prints it as text): {spaced}"


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_student_lesson_has_the_same_maths_as_its_solution(lesson):
    assert formulas(prose(lesson, "notebooks"))[:2] == formulas(prose(lesson))[:2]

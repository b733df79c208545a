"""The exercise catalogue: for each lesson, its exercises (cases and known mistakes).

Each lesson with exercises has a module here called ``lessonNN`` (``lesson01``,
``lesson02``, ...) that declares two names:

- ``LESSON``: the lesson's file stem, e.g. ``"03_softmax_and_attention"``
  (its notebooks are ``solutions/LESSON.ipynb`` and ``notebooks/LESSON.ipynb``);
- ``EXERCISES``: its :class:`~helpers.checking.Exercise` objects, in the order
  the lesson asks for them.

The modules are found by their names, so adding a lesson needs no edit here.
From them this package builds:

- ``LESSONS``: lesson stem -> list of exercises, in lesson order;
- ``EXERCISES``: exercise (function) name -> :class:`~helpers.checking.Exercise`.

The notebook checks (:mod:`helpers.checks`) and the grader both read from here.
"""

import importlib
import pkgutil
import re

_LESSON_MODULE = re.compile(r"lesson\d\d")


def lesson_modules():
    """The ``lessonNN`` modules of this package, imported, in lesson order (01, 02, ...)."""
    names = sorted(module.name for module in pkgutil.iter_modules(__path__)
                   if _LESSON_MODULE.fullmatch(module.name))
    return [importlib.import_module(f"{__name__}.{name}") for name in names]


LESSONS = {module.LESSON: module.EXERCISES for module in lesson_modules()}

EXERCISES = {exercise.name: exercise for exercises in LESSONS.values() for exercise in exercises}

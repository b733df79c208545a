"""The exercise catalogue: for each lesson, its exercises (cases and known mistakes).

``LESSONS`` maps a lesson's file stem to its exercises, in the order they appear;
``EXERCISES`` maps each exercise's function name to its :class:`~helpers.checking.Exercise`.
The notebook checks (:mod:`helpers.checks`) and the grader both read from here.
"""

from . import lesson01, lesson02, lesson03, lesson04, lesson05, lesson06, lesson07, lesson08

LESSONS = {
    "01_qkv_projections": lesson01.EXERCISES,
    "02_scaled_scores": lesson02.EXERCISES,
    "03_softmax_and_attention": lesson03.EXERCISES,
    "04_multi_head": lesson04.EXERCISES,
    "05_complexity": lesson05.EXERCISES,
    "06_tiled_attention": lesson06.EXERCISES,
    lesson07.LESSON: lesson07.EXERCISES,
    lesson08.LESSON: lesson08.EXERCISES,
}

EXERCISES = {exercise.name: exercise for exercises in LESSONS.values() for exercise in exercises}

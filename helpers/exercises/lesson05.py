"""Exercises of this lesson: not written yet."""

EXERCISES = []

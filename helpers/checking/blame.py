"""Blaming a helper: "your attention is right, but the softmax it calls is not".

A learner's ``scaled_dot_product_attention`` calls their own ``softmax``. When the
attention fails its check, :func:`blame_helper` looks for another exercise's function
among the global names the learner's code uses, checks it on its own exercise, and if
it is wrong, runs the attention again with the reference in its place.

This is the one place in the check machinery that looks inside a function's code:
:func:`called_names` reads the names its bytecode uses, and :func:`with_global`
rebuilds it with one global swapped. Nothing else depends on how it works.
"""

import inspect
import types


def called_names(fn):
    """The global names ``fn``'s code uses (its nested functions' too), in order of first use."""
    names, todo = [], [getattr(fn, "__code__", None)]
    while todo:
        code = todo.pop(0)
        if code is None:
            continue
        names += [n for n in code.co_names if n not in names]
        todo += [c for c in code.co_consts if inspect.iscode(c)]
    return names


def with_global(fn, name, value):
    """A copy of the function ``fn`` that sees ``value`` under the global ``name``."""
    namespace = dict(fn.__globals__)
    namespace[name] = value
    copied = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__,
                                fn.__closure__)
    copied.__kwdefaults__ = fn.__kwdefaults__
    return copied


def blame_helper(exercise, fn, cases, catalogue, evaluate):
    """When ``fn`` calls another exercise's function that is wrong, a message naming it.

    Parameters
    ----------
    exercise : Exercise
        The exercise ``fn`` failed.
    fn : callable
        The learner's function.
    cases : list of Case
        The cases ``fn`` was checked on.
    catalogue : dict of str -> Exercise
        The exercises a helper may belong to (:data:`helpers.exercises.EXERCISES`).
    evaluate : callable
        :func:`helpers.checking.evaluate` (passed in: this module does not import
        the package it is part of).

    Returns
    -------
    str or None
        None when no helper ``fn`` calls is wrong.
    """
    namespace = getattr(fn, "__globals__", {})
    for name in called_names(fn):
        if name == exercise.name or name not in catalogue or name not in namespace:
            continue
        helper, other = namespace[name], catalogue[name]
        if not callable(helper) or helper is other.reference:
            continue
        own = evaluate(other, helper, stop_at_first_failure=True, blame_helpers=False)
        if own.ok or own.not_attempted:
            continue
        fixed = evaluate(exercise, with_global(fn, name, other.reference), cases,
                         stop_at_first_failure=True, blame_helpers=False)
        if fixed.ok:
            return (f"is right itself, but the {name} it calls is not: {name} {own.failures[0]} "
                    f"Fix {name} (and run its check cell), then run this check again.")
        return (f"{fixed.failures[0]} (Also, the {name} it calls fails its own check: fix "
                f"{name} first, then run this check again.)")
    return None

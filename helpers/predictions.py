"""Predict, then run: a learner writes a guess before a cell, the cell compares it with
what it measured.

The comparison never raises, so "Run All" on an untouched lesson still runs: with no
guess written yet it just shows the answer.
"""

import numbers


def same(guess, answer, rel_tol=0.1):
    """Whether ``guess`` matches ``answer``: numbers within ``rel_tol``, words ignoring case.

    Parameters
    ----------
    guess, answer : number, str, or bool
    rel_tol : float
        Relative tolerance for numbers: 0.1 means within 10 %.
    """
    if isinstance(answer, bool) or isinstance(guess, bool):
        return isinstance(guess, bool) and isinstance(answer, bool) and guess == answer
    if isinstance(answer, numbers.Number) and isinstance(guess, numbers.Number):
        return abs(guess - answer) <= rel_tol * max(abs(answer), 1e-12)
    return str(guess).strip().lower() == str(answer).strip().lower()


def reveal(guess, answer, why="", rel_tol=0.1):
    """Print how a prediction compares with the measured ``answer``.

    It returns nothing, so that a notebook cell ending with it shows only the message.

    Parameters
    ----------
    guess : number, str, bool or None
        The learner's prediction; None (or ``...``) when they have not written one.
    answer : number, str or bool
        What the notebook measured.
    why : str
        One sentence explaining the answer, shown in every case.
    rel_tol : float
        For numbers, how close counts as right (relative): 0.1 = within 10 %.
    """
    shown = f"{answer:.3g}" if isinstance(answer, float) else str(answer)
    if guess is None or guess is Ellipsis or (isinstance(guess, str) and not guess.strip()):
        print(f"○ No prediction written yet. The answer: {shown}. {why}".rstrip())
    elif same(guess, answer, rel_tol):
        print(f"✓ You predicted {guess!r}: right. The answer: {shown}. {why}".rstrip())
    else:
        print(f"✗ You predicted {guess!r}; the answer is {shown}. {why}".rstrip())

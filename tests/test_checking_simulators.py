"""The catalogue's simulators agree with the reference when no mistake is switched on.

Each lesson's catalogue reproduces its mistakes with one function whose keyword
switches turn one mistake on (``_attend(..., scale=False)``, ``_mha(..., use_mask=False)``).
With every switch at its default, such a simulator must give the reference's answer on
every visible and hidden case: otherwise a mistake's message could match a correct
function. One row per simulator; a row whose simulator disagrees is marked xfail with
the reason, and reported to the catalogue's owner.
"""

import copy
import inspect

import numpy as np
import pytest

from helpers.checking import Case
from helpers.checking.compare import difference
from helpers.exercises import EXERCISES, _lesson07_numerical, lesson02, lesson03, lesson04, lesson05, \
    lesson06, lesson07, lesson08, lesson09, lesson10, lesson11, lesson12

SIMULATORS = [   # (exercise, simulator with every mistake switched off)
    ("attention_scores", lambda Q, K: lesson02._scaled(Q, K, np.sqrt(Q.shape[-1]))),
    ("scaled_dot_product_attention", lesson03._attend),
    ("multi_head_attention", lesson04._mha),
    ("attention_flops", lesson05._flops),
    ("flops_crossing", lesson05._crossing),
    ("online_softmax_attention", lesson06._online),
    ("causal_online_softmax_attention", lesson06._causal_online),
    ("numerical_gradient", _lesson07_numerical._differences),
    ("attention_backward", lesson07._attention_grads),
    ("multi_head_attention_backward", lesson07._mha_grads),
    ("loss_gradient", lesson08._loss_grads),
    ("embedding_gradient", lesson08._embedding_grads),
    ("sinusoidal_encoding", lesson09._table),
    ("rope", lesson09._rope),
    ("rotary_attention", lesson09._rotary),
    ("residual_attention_backward", lesson10._residual_grads),
    ("ablated_stack", lesson10._stack),
    ("patched_stack", lesson10._patched),
    ("grouped_query_attention", lesson11._gqa),
    ("attention_decode_step", lesson11._decode),
    ("key_padding_mask", lesson11._padding),
    ("layer_norm_backward", lesson12._ln_backward),
    ("mlp_backward", lesson12._mlp_backward),
    ("next_token_probabilities", lesson12._ntp),
]

#: Simulators known to disagree, with the reason (reported to the lesson's engineer).
KNOWN = {}


def _rows():
    for name, simulator in SIMULATORS:
        for hidden in (False, True):
            known = KNOWN.get((name, hidden))
            marks = [pytest.mark.xfail(reason=known, strict=True)] if known else []
            yield pytest.param(name, simulator, hidden, marks=marks,
                               id=f"{name}-{'hidden' if hidden else 'visible'}")


def _copy(case):
    return Case(copy.deepcopy(case.args), copy.deepcopy(case.kwargs), case.label)


@pytest.mark.parametrize("name, simulator, hidden", list(_rows()))
def test_a_simulator_with_no_mistake_on_gives_the_reference(name, simulator, hidden):
    exercise = EXERCISES[name]
    wrong = []
    for case in exercise.cases(hidden):
        with np.errstate(all="ignore"):
            expected = exercise.reference(*_copy(case).args, **_copy(case).kwargs)
            got = simulator(*_copy(case).args, **_copy(case).kwargs)
        names = exercise.outputs if len(exercise.outputs) > 1 else exercise.outputs[0]
        diff = difference(got, expected, names, exercise.rtol, exercise.atol)
        if diff:
            wrong.append(f"{case.label}: {diff}")
    assert not wrong, "\n".join(wrong)


def test_every_simulator_with_keyword_switches_is_in_the_table():
    modules = [lesson02, lesson03, lesson04, lesson05, lesson06, _lesson07_numerical, lesson07, lesson08,
               lesson09, lesson10, lesson11, lesson12]
    switchable = [fn for module in modules for fn in vars(module).values()
                  if inspect.isfunction(fn) and fn.__module__ == module.__name__
                  and any(p.kind is p.KEYWORD_ONLY for p in inspect.signature(fn).parameters.values())]
    tabled = {getattr(simulator, "__name__", "") for _, simulator in SIMULATORS}
    missing = [f"{fn.__module__}.{fn.__name__}" for fn in switchable if fn.__name__ not in tabled]
    assert not missing, f"simulators with keyword switches not in SIMULATORS: {missing}"

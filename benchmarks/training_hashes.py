"""A sha256 of every training run lessons 08, 09 and 10 make: to prove a refactor changes no number.

One line per run: the call, then a hash of its losses, accuracies, attention figures and
parameters, bytes exactly (dtype, shape and every byte of every array; floats as IEEE
doubles). The calls are those of the solution notebooks, seeds loops included; lesson 10's
ablations are printed as numbers. Run it before and after a change and diff the outputs::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/training_hashes.py > after.txt

A stack's parameters are hashed under the names ``layers.<l - 1>.W_q`` ... so that the same
arrays give the same hash whatever their container. Runs outside the test cache (no
``COURSE_RUN_CACHE``): every run trains. About two minutes on one core.
"""

import hashlib
import os
import struct
import sys
from pathlib import Path

os.environ.pop("COURSE_RUN_CACHE", None)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from helpers.lessons import l08_training, l09_position, l10_two_layers  # noqa: E402

SHIFTS = (0, 1, 2, 4, 8)
KEYS = ("loss", "accuracy", "attention_to_targets", "attention", "accuracy_by_shift", "accuracy_by_length")


def named_arrays(params, prefix=""):
    """``{name: array}`` for a dict of arrays whose ``"layers"`` may be a list of dicts."""
    out = {}
    for name, value in params.items():
        if isinstance(value, list):
            for l, layer in enumerate(value):
                out.update(named_arrays(layer, f"{prefix}{name}.{l}."))
        else:
            out[prefix + name] = value
    return out


def feed(h, value):
    """Add ``value``'s exact bytes to the hash ``h`` (dicts by sorted key, floats as doubles)."""
    if isinstance(value, dict):
        for k in sorted(value, key=repr):
            h.update(repr(k).encode())
            feed(h, value[k])
    elif isinstance(value, (list, tuple)):
        h.update(b"[%d" % len(value))
        for v in value:
            feed(h, v)
    elif value is None:
        h.update(b"None")
    elif isinstance(value, (float, int, np.floating, np.integer)) and not isinstance(value, bool):
        h.update(struct.pack("<d", float(value)))
    else:
        a = np.ascontiguousarray(value)
        h.update(a.dtype.str.encode() + repr(a.shape).encode() + a.tobytes())


def line(call, result, skip=()):
    h = hashlib.sha256()
    for key in KEYS:
        if key in result and key not in skip:
            h.update(key.encode())
            feed(h, result[key])
    h.update(b"params")
    feed(h, named_arrays(result["params"]))
    print(f"{call}  {h.hexdigest()}", flush=True)


def lesson08():
    line("l08 train('coreference', seed=0)", l08_training.train("coreference", seed=0))
    line("l08 train('two_relations', num_heads=2)", l08_training.train("two_relations", num_heads=2))
    line("l08 train('two_relations', num_heads=1)", l08_training.train("two_relations", num_heads=1))
    for scale in (True, False):
        for seed in range(3):
            line(f"l08 train('coreference', d_model=128, scale={scale}, steps=300, seed={seed})",
                 l08_training.train("coreference", d_model=128, scale=scale, steps=300, seed=seed))


def lesson09():
    for seed, positions in ((0, ("none", "sinusoidal", "learned", "rope")),
                            (1, ("learned", "sinusoidal", "rope")), (2, ("learned", "sinusoidal", "rope"))):
        for position in positions:
            line(f"l09 train('two_relations', num_heads=2, position={position!r}, shifts={SHIFTS}, "
                 f"seed={seed})",
                 l09_position.train("two_relations", num_heads=2, position=position, shifts=SHIFTS,
                                    seed=seed))
    for position, seeds in (("learned", [0]), ("sinusoidal", [0, 1, 2]), ("rope", [0, 1, 2])):
        for seed in seeds:
            line(f"l09 train_two_back({position!r}, lengths=(16, 24, 64, 256), seed={seed})",
                 l09_position.train_two_back(position, lengths=(16, 24, 64, 256), seed=seed))


def lesson10():
    ablate = l10_two_layers.ablate
    line("l10 train('adjective', num_layers=1)", l10_two_layers.train("adjective", num_layers=1))
    for seed in range(10):
        r = l10_two_layers.train("adjective", num_layers=2, seed=seed)
        line(f"l10 train('adjective', num_layers=2, seed={seed})", r)
        print(f"l10 ablate(adjective seed {seed}, 1, pronoun/nouns; 2, pronoun)  "
              f"{ablate(r, 1, 'pronoun')!r} {ablate(r, 1, 'nouns')!r} {ablate(r, 2, 'pronoun')!r}",
              flush=True)
    for seed in range(3):   # its losses were not returned before the refactor: not hashed, to compare
        line(f"l10 train_word_readout('adjective', seed={seed})",
             l10_two_layers.train_word_readout("adjective", seed=seed), skip=("loss",))
    for L in (1, 2):
        r = l10_two_layers.train("induction", num_layers=L)
        line(f"l10 train('induction', num_layers={L})", r)
        print(f"l10 ablate(induction L={L}, 1, source)  {ablate(r, 1, 'source')!r}", flush=True)


if __name__ == "__main__":
    lesson08()
    lesson09()
    lesson10()

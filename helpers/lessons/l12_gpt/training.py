"""Lesson 12: train the GPT with lesson 08's ``fit``; the held-out loss; the shipped checkpoint.

``python -m helpers.lessons.l12_gpt.training`` (what ``make train-gpt`` runs) trains the
checkpoint's config from its seed and writes ``data/checkpoint.npz``: the same command gives the
same file's numbers (one BLAS thread, float32, batches drawn from the seed).
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from ...threads import blas_threads
from ..l08_training import fit
from . import model, text

CHECKPOINT = text.DATA / "checkpoint.npz"
COMMAND = "make train-gpt"
#: The checkpoint's run: the issue's model (2 blocks, d_model 64, 4 heads, context 64, batch 16).
CHECKPOINT_RUN = {"d_model": 64, "num_heads": 4, "num_layers": 2, "context": 64, "batch_size": 16,
                  "seed": 0, "steps": 6000}
EVAL_EVERY = 500              # the checkpoint's held-out loss curve: every this many steps


class _Stop(Exception):
    """Raised inside ``fit`` to end a run after ``stop_after`` steps."""


def train(*, steps, seed=0, d_model=64, num_heads=4, num_layers=2, context=64, batch_size=16,
          eval_every=None, held_out_windows=None, log=None, parts=None, stop_after=None):
    """Train a GPT on the first 90 % of the plays with lesson 08's ``fit`` (AdamW).

    ``fit`` sets the step size from ``d_model`` (5e-3 at d_model = 64, falling linearly to 0
    over the run) and decays every weight by ``lr * 0.1`` per step.

    Parameters
    ----------
    steps : int
    seed : int, the starting parameters and the batches
    eval_every : int, optional; with it, the held-out loss is measured every that many steps
        (on ``held_out_windows``, all the held-out text by default) and returned in ``"curve"``
    log : callable (str) -> None, optional, told each measurement
    parts : dict, optional: a learner's backward functions (:data:`model.PART_NAMES`)
    stop_after : int, optional: stop after that many steps of the ``steps``-step schedule
        (to repeat the start of a long run); ``"loss"`` then holds those steps only

    Returns
    -------
    dict with ``"params"``, ``"config"``, ``"loss"`` (one float per step: the training batch's
    loss before its update), ``"curve"`` (list of (step, held-out loss)), ``"seconds"``
    """
    train_text, held_text = text.corpus()
    config = model.make_config(text.vocabulary(), d_model=d_model, num_heads=num_heads,
                               num_layers=num_layers, context=context, seed=seed, steps=steps,
                               batch_size=batch_size)
    train_ids = text.encode(train_text, config)
    if held_out_windows is None:
        held_out_windows = text.held_out_windows(text.encode(held_text, config), context)
    rng = np.random.default_rng(seed)
    params = model.init_params(config, rng)
    curve, losses, start = [], [], time.perf_counter()

    def loss_and_grads(p, batch):
        if stop_after is not None and len(losses) == stop_after:
            raise _Stop
        loss, grads = model.loss_and_grads(p, config, batch, parts)
        losses.append(loss)
        return loss, grads

    def next_batch():
        return text.sample_windows(train_ids, context, batch_size, rng)

    chunk = steps if not eval_every else eval_every
    with blas_threads():
        # fit runs the whole schedule; to measure along the way, it is called once and the
        # measurements are taken by a batch function that counts steps.
        if eval_every:
            state = {"step": 0}

            def counting_batch():
                if state["step"] and state["step"] % chunk == 0:
                    held = model.loss_on(params, config, held_out_windows)
                    curve.append((state["step"], held))
                    if log:
                        log(f"step {state['step']:5d}  held-out {held:.3f} nats/char  "
                            f"({time.perf_counter() - start:.0f} s)")
                state["step"] += 1
                return next_batch()
            fit(params, loss_and_grads, counting_batch, steps, d_model)
        else:
            try:
                fit(params, loss_and_grads, next_batch, steps, d_model)
            except _Stop:
                pass
        if eval_every:
            curve.append((steps, model.loss_on(params, config, held_out_windows)))
            if log:
                log(f"step {steps:5d}  held-out {curve[-1][1]:.3f} nats/char  "
                    f"({time.perf_counter() - start:.0f} s)")
    return {"params": params, "config": config, "loss": np.asarray(losses), "curve": curve,
            "seconds": time.perf_counter() - start}


def held_out_loss(params, config, limit=None):
    """Nats per character on the held-out text (its first ``limit`` windows if given)."""
    windows = text.held_out_windows(text.encode(text.corpus()[1], config), config["context"])
    with blas_threads():
        return model.loss_on(params, config, windows if limit is None else windows[:limit])


# ------------------------------------------------------------------- the checkpoint
def _flatten(params):
    flat = {f"top/{k}": v for k, v in params.items() if k != "blocks"}
    for i, block in enumerate(params["blocks"]):
        flat.update({f"block{i}/{k}": v for k, v in block.items()})
    return flat


def save_checkpoint(result, path=CHECKPOINT, dtype="float16"):
    """Write a :func:`train` result: parameters (in ``dtype``), config, loss curve, command."""
    arrays = {k: v.astype(dtype) for k, v in _flatten(result["params"]).items()}
    meta = {"config": result["config"], "curve": result["curve"], "command": COMMAND,
            "seconds": round(result["seconds"], 1), "stored_as": dtype,
            "numpy": np.__version__, "python": sys.version.split()[0]}
    np.savez_compressed(path, loss=result["loss"].astype(np.float32),
                        meta=np.array(json.dumps(meta)), **arrays)


def load_checkpoint(path=CHECKPOINT, dtype="float32"):
    """The shipped model: ``(params, config)``; ``config["curve"]``, ``["loss"]`` and ``["command"]``
    say how it was trained (its held-out loss curve, its training losses, the command)."""
    with np.load(path) as f:
        meta = json.loads(str(f["meta"]))
        config = dict(meta["config"], curve=[tuple(c) for c in meta["curve"]], command=meta["command"],
                      loss=f["loss"].copy(), seconds=meta["seconds"])
        params = {"blocks": [{} for _ in range(config["num_layers"])]}
        for key in f.files:
            if "/" not in key:
                continue
            where, name = key.split("/")
            value = f[key].astype(dtype)
            if where == "top":
                params[name] = value
            else:
                params["blocks"][int(where[5:])][name] = value
    config["dtype"] = dtype
    return params, config


def main(argv=None):
    parser = argparse.ArgumentParser(description="Train lesson 12's GPT and write its checkpoint.")
    parser.add_argument("--steps", type=int, default=CHECKPOINT_RUN["steps"])
    parser.add_argument("--out", type=Path, default=CHECKPOINT)
    args = parser.parse_args(argv)
    run = dict(CHECKPOINT_RUN, steps=args.steps)
    result = train(**run, eval_every=EVAL_EVERY, log=lambda line: print(line, flush=True))
    save_checkpoint(result, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB) in {result['seconds']:.0f} s")


if __name__ == "__main__":
    main()

"""Reference implementations of every exercise in the course.

One function per exercise, with the exact name and signature the lessons use
(see the exercise contract in CONTRIBUTING.md). They are what the checks compare a
learner's function against, what the lessons fall back on before an exercise is
solved, and what the grader uses.

Unlike the learner's versions they also accept leading batch dimensions
(``(..., n, d)``), keep the input's floating dtype (float32 in, float32 out) and
raise a ``ValueError``/``TypeError`` that names the argument and its shape when
the input is wrong. There is no Python loop over heads or rows anywhere; the
online-softmax attention loops over key blocks only.

One module per topic, each readable top to bottom; import any function from here
(``from helpers.reference import softmax``):

==============  ==========================================================  =======
module          what it holds                                               lessons
==============  ==========================================================  =======
``attention``   Q/K/V projections, the score grid, softmax, masks,          01-03
                scaled dot-product attention
``multi_head``  split and merge heads, multi-head attention                 04
``cost``        FLOP counts and power-law fits                              05
``tiling``      the online softmax over key/value blocks                    06
``backward``    gradients by hand, and central differences to check them    07
``optimizer``   one Adam step                                               08
``training``    the model's backward glue: the loss at the pronoun, the       08
                embedding tables
``position``    sinusoidal encodings, rotary (RoPE) and its backward        09
``layers``      a residual layer's backward; an update removed or patched   10
``inference``   grouped-query attention, sliding windows, the KV cache,     11
                padding masks
``gpt``         LayerNorm's and the MLP's backward, the sampling step       12
==============  ==========================================================  =======

The input checks they call are in :mod:`helpers.validation`.
"""

from .attention import (
    attention_scores,
    causal_mask,
    causal_mask_for_new_tokens,
    cross_project_qkv,
    project_qkv,
    scaled_dot_product_attention,
    score_std,
    softmax,
)
from .backward import (
    attention_backward,
    multi_head_attention_backward,
    numerical_gradient,
    softmax_backward,
)
from .cost import attention_flops, fit_power_law, flops_crossing
from .inference import (
    attention_decode_step,
    empty_kv_cache,
    grouped_query_attention,
    key_padding_mask,
    mean_pool_kv_heads,
    sliding_window_attention,
    sliding_window_mask,
)
from .gpt import layer_norm_backward, mlp_backward, next_token_probabilities
from .layers import ablated_stack, patched_stack, residual_attention_backward
from .multi_head import merge_heads, multi_head_attention, split_heads, split_heads_batched
from .optimizer import adam_step
from .position import rope, rope_backward, rotary_attention, sinusoidal_encoding
from .tiling import causal_online_softmax_attention, online_softmax_attention
from .training import embedding_gradient, loss_gradient

__all__ = [
    "project_qkv",
    "cross_project_qkv",
    "attention_scores",
    "score_std",
    "softmax",
    "causal_mask",
    "causal_mask_for_new_tokens",
    "scaled_dot_product_attention",
    "split_heads",
    "split_heads_batched",
    "merge_heads",
    "multi_head_attention",
    "attention_flops",
    "fit_power_law",
    "flops_crossing",
    "online_softmax_attention",
    "causal_online_softmax_attention",
    "softmax_backward",
    "attention_backward",
    "numerical_gradient",
    "multi_head_attention_backward",
    "adam_step",
    "loss_gradient",
    "embedding_gradient",
    "sinusoidal_encoding",
    "rope",
    "rotary_attention",
    "rope_backward",
    "residual_attention_backward",
    "ablated_stack",
    "patched_stack",
    "grouped_query_attention",
    "sliding_window_mask",
    "key_padding_mask",
    "attention_decode_step",
    "empty_kv_cache",
    "sliding_window_attention",
    "mean_pool_kv_heads",
    "layer_norm_backward",
    "mlp_backward",
    "next_token_probabilities",
]

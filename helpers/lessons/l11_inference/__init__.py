"""Lesson 11's lab code: generating one token at a time, measured, and its figures.

- :mod:`.costs`: time per generated token (three ways), cache bytes, window costs, GQA's step;
- :mod:`.generate`: prefill then decode, RoPE under the cache, padded batches;
- :mod:`.widgets`: the kv-heads slider and the receptive field of stacked windows.
"""

"""Lesson 11's lab code: generating one token at a time, measured, and its figures.

- :mod:`.measure`: time per generated token (three ways), cache bytes, window costs, GQA's step;
- :mod:`.generate`: prefill then decode, RoPE under the cache, padded batches;
- :mod:`.widgets`: the kv-heads slider and the receptive field of stacked windows.
"""

#: Okabe and Ito's colour-blind-safe palette: black, orange, sky blue, green, yellow, blue,
#: vermillion, purple (the course's one palette; helpers.plots.OKABE_ITO once it is there).
OKABE_ITO = ["#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7"]

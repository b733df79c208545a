"""Lab code by lesson: one folder per lesson that has code of its own.

``lNN_topic/`` is named like ``solutions/NN_topic.ipynb`` and holds that lesson's models,
corpora, training, figures and widgets, readable top to bottom.

The dependency rule (``tests/test_dependencies.py`` enforces it):

- ``lessons/lNN_*`` imports the shared toolbox (``helpers.data``, ``helpers.plots``, ...),
  ``helpers.reference`` and earlier lessons (``lessons/lMM_*`` with MM < NN), never a later one;
- the toolbox, ``reference/``, ``checking/`` and ``exercises/`` never import ``lessons/``;
- nothing a learner uses imports ``helpers.instructor``;
- no module imports itself back through a circle.
"""

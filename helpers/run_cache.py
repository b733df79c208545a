"""Left for ``helpers/instructor/book.py`` alone, until it stops importing it: then delete this file.

The test run's training cache is ``tests/run_cache.py``; no lesson imports it.
"""

ENV = "COURSE_RUN_CACHE"

"""PYTHONSTARTUP of every notebook kernel the test run starts (``conftest.py`` sets it).

IPython runs this file in the kernel's namespace when the kernel starts; it leaves no name
behind. It installs ``tests/run_cache.py`` there: the lessons' training is computed once
per test run, whichever kernel or test process asks first.
"""


def _share_training_with_the_test_run():
    import importlib.util
    import os
    import sys

    path = os.path.join(os.path.dirname(os.environ["PYTHONSTARTUP"]), "run_cache.py")
    spec = importlib.util.spec_from_file_location("run_cache", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_cache"] = module
    spec.loader.exec_module(module)
    module.install()


_share_training_with_the_test_run()
del _share_training_with_the_test_run

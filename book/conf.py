"""Sphinx settings of the course's website (``make book``; see helpers/instructor/book.py).

Sphinx reads the staged copy that ``python -m helpers.instructor.book`` writes into
``_build/book/source``; this folder only holds the settings (``sphinx-build -c book``).
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))            # slider_figures
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))        # helpers

from helpers import course  # noqa: E402

project = "Self-Attention & Multi-Head"
author = "the course's contributors"
html_show_copyright = False           # the footer below says who and under which licence

extensions = ["myst_nb", "slider_figures", "sphinx.ext.githubpages"]   # githubpages: .nojekyll
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
# Maths in the lessons' text: $...$ inline, $$...$$ on its own line (as JupyterLab and Colab read it).
myst_enable_extensions = ["dollarmath", "amsmath"]

# Execute every lesson afresh, top to bottom, in its own kernel; any cell that raises stops
# the build with the cell's traceback (nothing is published with an error in it).
nb_execution_mode = "force"
nb_execution_timeout = 600            # seconds per cell: lesson 08 trains small models
nb_execution_allow_errors = False
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True
# A widget's JavaScript would be fetched from a CDN and render a slider that cannot move
# without a kernel: slider_figures shows its figure and a note instead.
nb_ipywidgets_js = {}

html_theme = "sphinx_book_theme"
html_title = project
html_favicon = "static/favicon.svg"
html_static_path = ["static"]
html_css_files = ["course.css"]
# Figures that enlarge on a tap, search snippets without TeX or buttons, the sliders' range inputs.
html_js_files = ["course.js"]
# MathJax from the site itself when helpers/instructor/book.py copied it (no CDN needed).
if os.environ.get("COURSE_BOOK_MATHJAX"):
    html_static_path.append(os.environ["COURSE_BOOK_MATHJAX"])
    mathjax_path = "mathjax/tex-chtml.js"
# The sliders' frames, rendered while the lessons ran (helpers/instructor/book.py, show_slider_frames).
if os.environ.get("COURSE_BOOK_FRAMES"):
    html_static_path.append(os.environ["COURSE_BOOK_FRAMES"])
templates_path = ["templates"]        # layout.html: the landing page's title said the name twice
html_theme_options = {
    "repository_url": course.REPOSITORY,
    "repository_branch": course.BRANCH,
    "path_to_docs": "",
    "use_repository_button": True,
    "use_download_button": True,
    # The rocket button on each lesson page: open this lesson in Colab or on Binder.
    "launch_buttons": {"colab_url": "https://colab.research.google.com",
                       "binderhub_url": "https://mybinder.org",
                       "notebook_interface": "jupyterlab"},
    "show_toc_level": 1,
    "logo": {"text": "Self-Attention & Multi\u2011Head"},   # a non-breaking hyphen: not "Multi- / Head"
    "extra_footer": (f'{project}, an open course. The code is under the MIT licence, the text and '
                     f'figures under <a href="https://creativecommons.org/licenses/by/4.0/">CC BY 4.0</a> '
                     f'(<a href="{course.REPOSITORY}/blob/{course.BRANCH}/LICENSE">LICENSE</a>). '
                     f'Source, issues and contributions: <a href="{course.REPOSITORY}">on GitHub</a>.'),
}
html_last_updated_fmt = None
smartquotes = False                  # the text as the notebook writes it (as in Colab)

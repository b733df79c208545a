"""A Sphinx extension for the course's website: a widget's output leaves the page.

A slider that ``helpers/instructor/book.py`` rendered as frames (``show_slider_frames``, run in
the lesson's kernel right after the slider's cell) moves on the page already: a plain range
input over images drawn at build time, by the slider's own code (``book/static/course.js``
flips them). Its widget output is dropped. Any other widget becomes its figure and a note, as
below.

On a static page a slider cannot redraw anything (there is no kernel). MyST-NB would
fetch the widgets' JavaScript from a CDN and draw a slider that moves without effect.
Instead, each widget output of an executed lesson is replaced by

- the figure(s) the widget showed when the lesson ran, as plain images (an ``Image``
  widget's PNG, or the images an ``Output`` widget captured), and
- a note: which slider lives here, its starting value, and where it moves (the lesson
  in Colab or on Binder).

The widgets' state is read from MyST-NB's per-page metadata, and dropped from the page.
"""

import base64
import html
import json
import re

from docutils import nodes

from helpers import course

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
OPENING = f'<script type="{WIDGET_VIEW}">'
NOTE_CLASS = "course-slider-note"


def _state(env, docname):
    """The page's widget models ``{model_id: model}``, removed from what the page loads."""
    js_files = getattr(env, "nb_metadata", {}).get(docname, {}).get("js_files", {})
    entry = js_files.pop("ipywidgets_state", None)
    if entry is None:
        return {}
    return json.loads(entry[1]["body"]).get("state", {})


def _children(model):
    kids = model.get("state", {}).get("children", [])
    return [kid.replace("IPY_MODEL_", "", 1) for kid in kids if isinstance(kid, str)]


def _walk(models, model_id, seen=None):
    """The models under ``model_id`` (itself included), depth first, in display order."""
    seen = set() if seen is None else seen
    if model_id in seen or model_id not in models:
        return []
    seen.add(model_id)
    found = [models[model_id]]
    for kid in _children(models[model_id]):
        found += _walk(models, kid, seen)
    return found


def _pngs(model):
    """The base64 PNGs a model shows: an Image widget's value, an Output widget's images."""
    if model.get("model_name") == "ImageModel":
        return [b["data"] if b.get("encoding") == "base64" else base64.b64encode(b["data"]).decode()
                for b in model.get("buffers", []) if b.get("path") == ["value"]]
    outputs = model.get("state", {}).get("outputs", [])
    return [out["data"]["image/png"] for out in outputs if "image/png" in out.get("data", {})]


def _slider_text(model):
    """``d_k = 64`` for a slider model, or None for another widget."""
    state = model.get("state", {})
    if not model.get("model_name", "").endswith("SliderModel"):
        return None
    name = state.get("description") or "the slider"
    if "_options_labels" in state and isinstance(state.get("index"), int):
        value = state["_options_labels"][state["index"]]
    else:
        value = state.get("value")
    return f"{name} = {value}"


def _note(docname, sliders):
    """"A slider lives here ... open it in Colab or on Binder", as a note."""
    path = f"{docname}.ipynb"
    para = nodes.paragraph()
    para += nodes.Text("A slider lives here. This page shows its figure at the starting value")
    for i, slider in enumerate(sliders):
        para += nodes.Text(" (" if i == 0 else ", ")
        para += nodes.literal(text=slider)
    para += nodes.Text("). " if sliders else ". ")
    para += nodes.Text("Run this notebook to move the slider: open it in ")
    para += nodes.reference("", "Colab", refuri=course.colab_url(path))
    para += nodes.Text(" or on ")
    para += nodes.reference("", "Binder", refuri=course.binder_url(path))
    para += nodes.Text(".")
    note = nodes.note(classes=[NOTE_CLASS])
    note += para
    return note


def _moving(doctree):
    """The widget models that the page shows as a moving slider already (``helpers.instructor.book``'s
    ``show_slider_frames``: a range input over frames rendered at build time)."""
    found = set()
    for node in doctree.findall(nodes.raw):
        found.update(re.findall(r'class="course-slider" data-model="([^"]+)"', node.astext()))
    return found


def replace_widgets(app, doctree):
    """``doctree-read``: each widget output becomes its figures and a note -- or nothing, where the
    page shows it as a moving slider already."""
    docname = app.env.docname
    views = [n for n in doctree.findall(nodes.raw) if n.astext().startswith(OPENING)]
    if not views:
        return
    models = _state(app.env, docname)
    moving = _moving(doctree)
    for view in views:
        body = view.astext()[len(OPENING):-len("</script>")].replace("<\\/", "</")
        model_id = json.loads(body).get("model_id", "")
        if model_id in moving:
            view.parent.remove(view)
            continue
        shown = _walk(models, model_id)
        sliders = [text for text in map(_slider_text, shown) if text]
        images = [png for model in shown for png in _pngs(model)]
        replacement = [_note(docname, sliders)]
        for png in images:
            replacement.append(nodes.raw("", f'<img class="course-slider-figure" alt="the figure at '
                                             f'{html.escape(", ".join(sliders))}" '
                                             f'src="data:image/png;base64,{png}">', format="html"))
        view.replace_self(replacement)


def setup(app):
    app.connect("doctree-read", replace_widgets)
    return {"parallel_read_safe": False, "parallel_write_safe": True}

"""nbgrader settings for this course: copy this file into your nbgrader course folder.

The solution notebooks are nbgrader source notebooks as they are (README, "Grading
with nbgrader"). This only keeps the cells tagged ``instructor`` out of the release,
as ``make student`` keeps them out of ``notebooks/``.
"""

c = get_config()  # noqa: F821 (nbgrader defines get_config when it reads this file)

c.GenerateAssignment.preprocessors.prepend(["nbconvert.preprocessors.TagRemovePreprocessor"])
c.TagRemovePreprocessor.enabled = True
c.TagRemovePreprocessor.remove_cell_tags = ["instructor"]

"""Sphinx configuration of arraykit's documentation site.

Build (warnings are errors, every example is run and its output compared):

    python -m sphinx -W --keep-going -n -b html docs docs/_build/html
"""

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))
sys.path.insert(0, str(DOCS / "_ext"))

project = "arraykit"
author = "the arraykit authors"
copyright = "2026, the arraykit authors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "checked_examples",
    "api_pages",
    "support_tables",
    "example_plots",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "_ext", "_data", "_generated", "_templates"]
templates_path = ["_templates"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"
autodoc_inherit_docstrings = True
add_module_names = False

nitpicky = True
nitpick_ignore_regex = [
    # Names from other projects, which are not documented on this site.
    ("py:(class|obj|func|meth|data)", r"(jax|jaxlib|numpy|np|torch|optax|sklearn|scipy)\..*"),
    # Docstrings may name arraykit's internal modules (arraykit.storage.Storage, ...);
    # the public names are arraykit.<name>, arraykit.Tensor.<name> and the subnamespaces.
    ("py:(class|obj|func|meth|mod|data)",
     r"arraykit\.(?!(nn|optim|autograd|linalg|fft|random)\b)[a-z_]+(\.[A-Za-z_]+)*"),
    ("py:mod", r"arraykit\..*"),  # internal modules a docstring points to
]

html_theme = "pydata_sphinx_theme"
html_title = "arraykit"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path = []

checked_examples_required = ["guide/*"]
checked_examples_exempt = ["guide/index"]

example_runs = [
    ("digits_loss", "examples/train_digits.py", ["--plot", "{plot}"]),
    ("gpt_loss", "examples/train_gpt.py",
     ["--preset", "tiny", "--steps", "60", "--plot", "{plot}", "--sample", "120"]),
]

import os

# SciPy reads this once, when first imported (the interop page uses it).
os.environ.setdefault("SCIPY_ARRAY_API", "1")

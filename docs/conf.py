"""Sphinx configuration: `make docs` builds the site into docs/_build/html with warnings as errors."""

import mlscale

project = "mlscale"
release = version = mlscale.__version__
extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
# Markdown headings get anchors, so pages can link to a section: [text](emulator.md#the-local-emulator)
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
exclude_patterns = ["_build", "examples"]
html_theme = "furo"
html_title = f"mlscale {release}"
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# the operators' many inherited Airflow arguments belong to Airflow's own reference
autodoc_default_options = {"members": True, "show-inheritance": True}
nitpicky = False

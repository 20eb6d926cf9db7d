"""Sphinx configuration of fastcal's documentation (``make docs``)."""

import os
from importlib.metadata import version as _version

# Pictures are drawn off screen. Set only for this build process, before any example imports
# matplotlib (sphinx-gallery runs the examples in this process).
os.environ.setdefault("MPLBACKEND", "Agg")

project = "fastcal"
author = "fastcal developers"
copyright = "fastcal developers"
release = _version("fastcal")
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "sphinx_design",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "examples/README.rst"]  # the gallery reads its README itself
templates_path = ["_templates"]

# The API reference: one page per public name, from its numpydoc docstring.
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types
numpydoc_show_class_members = False  # the class template documents the members
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3


sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "show_memory": False,
    "plot_gallery": "True",
    "doc_module": ("fastcal",),
    "backreferences_dir": "generated/backreferences",
}

html_theme = "pydata_sphinx_theme"
html_title = f"fastcal {release}"
html_theme_options = {
    "github_url": "https://github.com/fastcal/fastcal",
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {page: [] for page in ["index", "performance", "development", "policy", "references"]}  # no section to navigate
html_static_path = ["_static"]
html_css_files = ["fastcal.css"]


def _skip_sklearn_plumbing(app, what, name, obj, skip, options):
    """Leave out the members that scikit-learn's mixins define (``score``, ``get_metadata_routing``,
    the generated ``set_*_request``): their docstrings are scikit-learn's and point into its own
    documentation, which documents them."""
    module = getattr(obj, "__module__", None) or ""
    if module == "sklearn" or module.startswith("sklearn."):
        return True
    if name.startswith("set_") and name.endswith("_request") and "fastcal" not in module:
        return True
    return None


#: Pages that other tools write (``docs/scaling.md``: a benchmark's report); listed after the
#: performance page when they exist, so that the build passes with or without them.
OPTIONAL_PAGES = ["scaling"]


def _add_optional_pages(app, docname, source):
    if docname != "index":
        return
    here = os.path.dirname(os.path.abspath(__file__))
    extra = "".join(f"   {name}\n" for name in OPTIONAL_PAGES if os.path.exists(os.path.join(here, name + ".md")))
    source[0] = source[0].replace("   performance\n", "   performance\n" + extra, 1)


def setup(app):
    app.connect("autodoc-skip-member", _skip_sklearn_plumbing)
    app.connect("source-read", _add_optional_pages)
toc_object_entries_show_parents = "hide"  # the page outline lists "fit()", not "IsotonicRegression.fit()"

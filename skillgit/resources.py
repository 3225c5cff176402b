"""Where the shipped `templates/` and `hooks/` folders are, in a wheel and in an editable install alike.

They live at the top of the repository and are mapped by pyproject.toml to the packages
`skillgit._templates` and `skillgit._hooks`; `find_spec` resolves both layouts (and a plain source checkout
run with `python -m skillgit`, where we fall back to the folders next to the package).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def _locate(package: str, folder: str) -> Path:
    try:
        spec = importlib.util.find_spec(package)
    except ModuleNotFoundError:
        spec = None
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            path = Path(location)
            if path.is_dir():
                return path
    return Path(__file__).resolve().parent.parent / folder


def templates_dir() -> Path:
    return _locate("skillgit._templates", "templates")


def hooks_dir() -> Path:
    return _locate("skillgit._hooks", "hooks")


def example_dir(name: str) -> Path:
    """A shipped example project (`examples/<name>/`, in a wheel `skillgit._examples/<name>`)."""
    return _locate("skillgit._examples", "examples") / name

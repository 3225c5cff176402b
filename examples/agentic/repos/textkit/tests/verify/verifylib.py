"""Checks shared by this repository's verifier tests (tests/verify/: the agent never reads them).

Each check is one house convention; its assertion message says what is missing, as a reviewer would. The
verifier runs at the repository root (`python -m pytest -q tests/verify/test_verify_<task>.py`).
"""

import ast
import importlib
import importlib.util
import inspect
import logging
import re
from pathlib import Path

ROOT = Path.cwd()


def function(module, name):
    mod = importlib.import_module(module)
    fn = getattr(mod, name, None)
    assert callable(fn), f"{module} has no function {name}"
    return fn


def check_docstring(module, name):
    assert inspect.getdoc(function(module, name)), f"{name} has no docstring"


def check_type_hints(module, name):
    sig = inspect.signature(function(module, name))
    missing = [p.name for p in sig.parameters.values() if p.annotation is inspect.Parameter.empty]
    if sig.return_annotation is inspect.Signature.empty:
        missing.append("return")
    assert not missing, f"{name} has no type hints for: {', '.join(missing)}"


def check_exported(package, module, name):
    pkg = importlib.import_module(package)
    assert name in getattr(pkg, "__all__", ()), f"{name} is not in {package}.__all__"
    assert getattr(pkg, name, None) is function(module, name), f"{package}.{name} is not {module}.{name}"


def _unreleased():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    m = re.search(r"^## +Unreleased[^\n]*\n(.*?)(?=^## |\Z)", text, re.M | re.S | re.I)
    assert m is not None, "CHANGELOG.md has no '## Unreleased' section"
    return m.group(1)


def check_changelog(name):
    assert re.search(rf"\b{name}\b", _unreleased()), f"CHANGELOG.md has no entry for {name} under '## Unreleased'"


def check_changelog_format(name, heading):
    section = _unreleased()
    m = re.search(rf"^### +{heading} *\n(.*?)(?=^### |\Z)", section, re.M | re.S)
    bullets = [line for line in (m.group(1) if m else "").splitlines() if line.startswith("- ")]
    assert any(f"`{name}`" in line for line in bullets), (
        f"CHANGELOG.md entry for {name} is not a bullet naming `{name}` in backticks under '### {heading}' "
        f"in '## Unreleased' (Keep a Changelog)")


def check_unit_test(path, name, preexisting=()):
    file = ROOT / path
    assert file.is_file(), f"no unit test for {name}: {path} does not exist"
    spec = importlib.util.spec_from_file_location("agent_tests_" + file.stem, file)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    tests = [fn for key, fn in sorted(vars(mod).items())
             if key.startswith("test") and inspect.isfunction(fn) and key not in preexisting
             and not inspect.signature(fn).parameters and re.search(rf"\b{name}\b", inspect.getsource(fn))]
    assert tests, f"no unit test for {name} in {path}"
    for fn in tests:
        marks = [m.name for m in getattr(fn, "pytestmark", [])]
        assert not {"skip", "skipif", "xfail"} & set(marks), f"{fn.__name__} in {path} is marked skip"
        try:
            fn()
        except Exception as exc:
            raise AssertionError(f"{fn.__name__} in {path} fails: {exc!r}") from exc


def check_no_print(module):
    path = ROOT / (module.replace(".", "/") + ".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id == "print"]
    assert not calls, f"{path.relative_to(ROOT).as_posix()} calls print() (line {calls[0] if calls else 0})"


def check_reported(records, module, text):
    assert any(r.name == module and r.levelno >= logging.WARNING and text in r.getMessage() for r in records), (
        f"the skipped line {text!r} was not reported as a WARNING of the {module} logger")

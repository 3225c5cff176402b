"""`.ci/lazy_coverage.py`: in CI, a subprocess's coverage starts on its first import of skillgit — before the
package's own code runs — and never in a process that does not import it; the children of such a process are still
measured. Each child here starts like a CI process: our ``.pth`` first, then coverage's own ``a1_coverage.pth``
(``-S``, then ``site.addsitedir`` on a folder `install_into` filled and on this environment's site-packages)."""

from __future__ import annotations

import importlib.util
import json
import os
import site
import subprocess
import sys
from pathlib import Path

import coverage
import pytest

import skillgit

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "lazy_coverage.py"


def _hook():
    spec = importlib.util.spec_from_file_location("ci_lazy_coverage", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CIPython:
    """A Python that starts as CI's does, with coverage asked for by the environment (data files in `data`)."""

    def __init__(self, tmp_path: Path) -> None:
        self.hook = _hook()
        ours = tmp_path / "site"
        ours.mkdir()
        self.hook.install_into(str(ours))
        assert sorted(p.name for p in ours.iterdir()) == sorted([self.hook.PTH, self.hook.MODULE + ".py"])
        self.data = tmp_path / "data"
        self.data.mkdir()
        self.cwd = tmp_path
        config = coverage.Coverage(data_file=str(self.data / ".coverage"), config_file=str(ROOT / "pyproject.toml"))
        drop = (self.hook.CONFIG, self.hook.STASH, "COVERAGE_PROCESS_START")
        self.env = {k: v for k, v in os.environ.items() if k not in drop}
        self.env[self.hook.CONFIG] = config.config.serialize()
        # site's order: our .pth (a0_…), then this environment's site-packages (coverage's a1_coverage.pth)
        self.start = (f"import site; site.addsitedir({str(ours)!r}); "
                      + "; ".join(f"site.addsitedir({d!r})" for d in site.getsitepackages()) + "\n")
        self.argv = [sys.executable, "-S", "-c"]

    def run(self, code: str):
        """What `code` printed last, as JSON."""
        done = subprocess.run([*self.argv, self.start + code], env=self.env, cwd=self.cwd, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture
def ci_python(tmp_path) -> CIPython:
    return CIPython(tmp_path)


STATE = ("import json, os, sys; cov = sys.modules.get('coverage'); "
         "print(json.dumps({'coverage_imported': cov is not None, "
         "'running': bool(cov and cov.Coverage.current()), "
         "'config': 'COVERAGE_PROCESS_CONFIG' in os.environ, "
         "'stash': 'COVERAGE_LAZY_SKILLGIT_CONFIG' in os.environ}))")


def _measured(data: Path) -> dict[str, set[int]]:
    """Lines recorded per skillgit file (relative path) in the data files the children wrote."""
    lines: dict[str, set[int]] = {}
    for path in data.glob(".coverage.*"):
        found = coverage.CoverageData(str(path))
        found.read()
        for name in found.measured_files():
            rel = Path(name).resolve().relative_to(ROOT).as_posix() if Path(name).is_relative_to(ROOT) else name
            lines.setdefault(rel, set()).update(found.lines(name) or ())
    return lines


def test_a_process_that_never_imports_skillgit_starts_no_coverage_and_writes_no_data(ci_python):
    state = ci_python.run(STATE)
    assert state == {"coverage_imported": False, "running": False, "config": False, "stash": True}
    assert list(ci_python.data.iterdir()) == []


def test_coverage_starts_before_the_package_code_runs_and_passes_on_to_children(ci_python):
    state = ci_python.run("import skillgit.records\n" + STATE)
    assert state == {"coverage_imported": True, "running": True, "config": True, "stash": False}
    measured = _measured(ci_python.data)
    init = Path(skillgit.__file__).resolve().relative_to(ROOT).as_posix()
    statements = coverage.Coverage(data_file=None, config_file=False).analysis2(skillgit.__file__)[1]
    assert statements and set(statements) <= measured[init]  # every top-level line of skillgit/__init__.py
    assert measured.get("skillgit/records/__init__.py")


def test_a_grandchild_of_a_process_without_skillgit_is_measured(ci_python):
    grandchild = ci_python.start + "import skillgit.errors\n" + STATE
    code = ("import json, subprocess, sys; "
            f"done = subprocess.run({[*ci_python.argv, grandchild]!r}, capture_output=True, text=True); "
            "print(json.dumps([json.loads(done.stdout.splitlines()[-1]), 'coverage' in sys.modules]))")
    child_state, parent_imported_coverage = ci_python.run(code)
    assert parent_imported_coverage is False
    assert child_state == {"coverage_imported": True, "running": True, "config": True, "stash": False}
    assert "skillgit/errors.py" in _measured(ci_python.data)


def test_a_process_already_measured_is_not_measured_twice(ci_python):
    # pytest-cov starts its own coverage in an xdist worker: the first skillgit import must not start another
    code = ("import coverage; own = coverage.Coverage(data_file=None); own.start()\n"
            "import skillgit\n"
            "import json; print(json.dumps([coverage.Coverage.current() is own, "
            "getattr(coverage.process_startup, 'coverage', None) is None]))")
    assert ci_python.run(code) == [True, True]

"""`.ci/coverage_floors.py`: CI fails naming each package (or named file) covered under its floor, and the fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "coverage_floors.py"


def _entry(covered: int, statements: int) -> dict:
    return {"summary": {"covered_lines": covered, "num_statements": statements,
                        "percent_covered": 100.0 * covered / statements}}


def _report(prefix: str = "") -> dict:
    files = {
        f"{prefix}skillgit/__init__.py": _entry(99, 100),
        f"{prefix}skillgit/loop/run.py": _entry(99, 100),
        f"{prefix}skillgit/sleep/night.py": _entry(99, 100),
        # a subpackage is a package of its own: the well-covered parent must not lift it
        f"{prefix}skillgit/sleep/readers/codex.py": _entry(99, 100),
        f"{prefix}skillgit/store/lock.py": _entry(99, 100),
        f"{prefix}skillgit/store/sync.py": _entry(99, 100),
    }
    return {"meta": {}, "files": files, "totals": {}}


def _run(tmp_path: Path, report: dict) -> subprocess.CompletedProcess:
    path = tmp_path / "coverage.json"
    path.write_text(json.dumps(report))
    return subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True, text=True, timeout=60)


def test_every_floor_holding_passes(tmp_path):
    done = _run(tmp_path, _report())
    assert done.returncode == 0, done.stderr
    assert "under its floor" not in done.stderr


def test_a_package_under_its_floor_fails_named_with_the_fix(tmp_path):
    report = _report(prefix="/home/ci/clone/")  # absolute paths as coverage writes them without relative_files
    report["files"]["/home/ci/clone/skillgit/sleep/readers/codex.py"] = _entry(50, 100)
    done = _run(tmp_path, report)
    assert done.returncode == 1
    failing = [line for line in done.stderr.splitlines() if line.startswith("under its floor")]
    assert len(failing) == 1, done.stderr
    assert "skillgit.sleep.readers: 50.0 %" in failing[0]
    assert "coverage report -m --include='skillgit/sleep/readers/*'" in failing[0]


def test_a_named_file_is_held_even_when_its_package_is_not(tmp_path):
    report = _report()
    report["files"]["skillgit/store/git.py"] = _entry(1000, 1000)  # lifts the package average over its floor
    report["files"]["skillgit/store/lock.py"] = _entry(10, 100)
    done = _run(tmp_path, report)
    assert done.returncode == 1
    assert "skillgit/store/lock.py: 10.0 % covered" in done.stderr
    assert "skillgit.store:" not in done.stderr


def test_a_package_without_a_floor_of_its_own_is_held_to_90(tmp_path):
    report = _report()
    report["files"]["skillgit/newpkg/thing.py"] = _entry(89, 100)
    done = _run(tmp_path, report)
    assert done.returncode == 1
    assert "skillgit.newpkg: 89.0 %" in done.stderr and "floor 90 %" in done.stderr


def test_unreadable_json_is_a_clear_error(tmp_path):
    path = tmp_path / "coverage.json"
    path.write_text("{not json")
    done = subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "cannot read coverage JSON" in done.stderr and "hint:" in done.stderr


def test_ci_checks_the_floors_after_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.index("python -m pytest -q") < ci.index("python .ci/coverage_floors.py")

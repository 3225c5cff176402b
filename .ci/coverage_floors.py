"""Coverage floor per package: fails CI naming each package (or named file) covered below its floor, and the fix.

Usage: ``python .ci/coverage_floors.py COVERAGE.json`` where the JSON is what ``coverage json`` writes from the
data the test command left (`.ci/run` does both after the tests). A package is a folder of ``skillgit`` (its own
modules only, not its subpackages: ``skillgit.sleep`` and ``skillgit.sleep.readers`` are two packages); the
top-level modules are the package ``skillgit``. Exit 0 when every floor holds, 1 naming each one that does not,
2 when the JSON cannot be read.

The floors: issue 21 asks for at least 90 % per package, named files included. Each floor below was set just
under what the last clean-clone `.ci/run` measured (1 point under the whole percent, so the run-to-run noise of
subprocess coverage does not fail CI); where that measurement was under 90 the floor holds today's value and the
comment says so — raise it when tests are added, never lower one without a reason written here.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import PurePosixPath

DEFAULT_FLOOR = 90.0

# package (dotted) -> floor in percent of statements; measured by the clean-clone CI of 2026-11-26 in comments.
PACKAGE_FLOORS: dict[str, float] = {
    "skillgit": 92,  # 93.4
    "skillgit.agentic": 91,  # 92.0
    "skillgit.agents": 93,  # 94.2
    "skillgit.cli": 92,  # 93.1
    "skillgit.envs": 88,  # 89.4: under 90 today
    "skillgit.integrations": 87,  # 88.6: under 90 today (issue 21 names it)
    "skillgit.library": 91,  # 92.6
    "skillgit.llm": 93,  # 94.3
    "skillgit.loop": 96,  # 97.0
    "skillgit.records": 97,  # 98.2
    "skillgit.report": 98,  # 99.1
    "skillgit.review": 93,  # 94.9
    "skillgit.sleep": 94,  # 95.2
    "skillgit.sleep.readers": 87,  # 88.4: under 90 today
    "skillgit.store": 90,  # 91.6
    "skillgit.teacher": 90,  # 91.4
    "skillgit.ui": 88,  # 89.5: under 90 today
    "skillgit.world": 94,  # 95.6
}

# single files issue 21 names, held on their own (a package's average can hide one weak module)
FILE_FLOORS: dict[str, float] = {
    "skillgit/store/lock.py": 80,  # 81.2: under 90 today
    "skillgit/store/sync.py": 82,  # 83.3: under 90 today
}


def _relative(path: str) -> PurePosixPath | None:
    """``…/skillgit/loop/run.py`` -> ``skillgit/loop/run.py`` (absolute or relative paths in the JSON)."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if "skillgit" not in parts:
        return None
    last = len(parts) - 1 - parts[::-1].index("skillgit")
    return PurePosixPath(*parts[last:])


def measure(report: dict) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """(covered, statements) per package and per named file."""
    packages: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    files: dict[str, tuple[int, int]] = {}
    for path, entry in report.get("files", {}).items():
        rel = _relative(path)
        if rel is None:
            continue
        summary = entry["summary"]
        covered, statements = int(summary["covered_lines"]), int(summary["num_statements"])
        package = ".".join(rel.parent.parts)
        packages[package][0] += covered
        packages[package][1] += statements
        if str(rel) in FILE_FLOORS:
            files[str(rel)] = (covered, statements)
    return {k: (v[0], v[1]) for k, v in packages.items()}, files


def _percent(covered: int, statements: int) -> float:
    return 100.0 * covered / statements if statements else 100.0


def check(report: dict) -> list[str]:
    """One line per floor that does not hold, each naming the package or file, its coverage, its floor and the fix."""
    packages, files = measure(report)
    failures = []
    for package, (covered, statements) in sorted(packages.items()):
        floor = PACKAGE_FLOORS.get(package, DEFAULT_FLOOR)
        percent = _percent(covered, statements)
        if percent < floor:
            folder = package.replace(".", "/")
            failures.append(
                f"{package}: {percent:.1f} % of {statements} statements covered, floor {floor:g} % — fix: test the "
                f"lines `coverage report -m --include='{folder}/*'` lists as missed"
            )
    for path, floor in sorted(FILE_FLOORS.items()):
        if path not in files:
            failures.append(f"{path}: not in the coverage data (moved or renamed?) — fix: update FILE_FLOORS in "
                            f".ci/coverage_floors.py")
            continue
        percent = _percent(*files[path])
        if percent < floor:
            failures.append(
                f"{path}: {percent:.1f} % covered, floor {floor:g} % — fix: test the lines "
                f"`coverage report -m --include='{path}'` lists as missed"
            )
    return failures


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python .ci/coverage_floors.py COVERAGE.json", file=sys.stderr)
        return 2
    try:
        with open(argv[0], encoding="utf-8") as handle:
            report = json.load(handle)
    except (OSError, ValueError) as exc:
        print(f"error: cannot read coverage JSON {argv[0]}: {exc}", file=sys.stderr)
        print("hint: run the tests with --cov=skillgit, then `coverage json -o FILE`", file=sys.stderr)
        return 2
    failures = check(report)
    packages, _ = measure(report)
    print(f"coverage floors: {len(packages)} packages, {len(FILE_FLOORS)} named files checked", file=sys.stderr)
    for line in failures:
        print(f"under its floor: {line}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

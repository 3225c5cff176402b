"""The shipped data files (templates/, hooks/) must reach users: in an editable install and in the built wheel
(SkillOpt 0.2.0 shipped a wheel without its prompt files, so training from PyPI failed at once)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def shipped_files(folder: str) -> list[str]:
    base = ROOT / folder
    return sorted(p.relative_to(base).as_posix() for p in base.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith("."))


def test_editable_install_resolves_templates_and_hooks():
    from skillgit import resources

    templates, hooks = resources.templates_dir(), resources.hooks_dir()
    assert templates.resolve() == (ROOT / "templates").resolve()
    assert hooks.resolve() == (ROOT / "hooks").resolve()
    assert (templates / "skillgit.yaml").is_file() and (hooks / "pre-push").is_file()
    assert sorted((templates / "prompts").glob("*.md")), "no prompt templates found"


@pytest.mark.slow  # building the wheel takes about 10 s
def test_wheel_ships_every_template_and_hook(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
    for rel in shipped_files("templates"):
        assert f"skillgit/_templates/{rel}" in names, f"templates/{rel} is missing from the wheel"
    for rel in shipped_files("hooks"):
        assert f"skillgit/_hooks/{rel}" in names, f"hooks/{rel} is missing from the wheel"
    assert any(n.startswith("skillgit/_templates/prompts/") and n.endswith(".md") for n in names)
    assert modes["skillgit/_hooks/pre-push"] & 0o111, "the hook must stay executable"
    # `skillgit demo --agentic` works from a wheel: the example project (package, tasks, fixture repositories)
    for rel in ("agentic/skillgit.yaml", "agentic/tasks.jsonl", "agentic/skill/SKILL.md",
                "agentic/repos/textkit/textkit/strings.py"):
        assert f"skillgit/_examples/{rel}" in names, rel
    assert "skillgit/_templates/github/skillgit-check.yml" in names
    # `skillgit demo --sleep` works from a wheel: its shipped Claude Code sessions
    shipped = sorted(p.name for p in (ROOT / "examples" / "sleep-demo" / "sessions").glob("*.jsonl"))
    assert shipped and all(f"skillgit/_examples/sleep-demo/sessions/{name}" in names for name in shipped)
    # `skillgit demo --library` works from a wheel: its three skills and their trigger cases
    library = sorted(p.relative_to(ROOT / "examples").as_posix()
                     for p in (ROOT / "examples" / "library").rglob("*") if p.is_file())
    assert library and all(f"skillgit/_examples/{rel}" in names for rel in library), library
    # `skillgit init --env NAME` works from a wheel: every environment's shipped sample (DocVQA's page images too)
    samples = [p.relative_to(ROOT / "examples").as_posix() for p in (ROOT / "examples" / "envs").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts]
    assert samples and all(f"skillgit/_examples/{rel}" in names for rel in samples), samples
    # every module of the source tree is in the wheel (a package left out of pyproject's list breaks the install)
    for module in sorted((ROOT / "skillgit").rglob("*.py")):
        rel = module.relative_to(ROOT).as_posix()
        assert "__pycache__" in rel or rel in names, f"{rel} is missing from the wheel (pyproject packages)"


def test_every_package_of_the_source_tree_is_listed_for_the_wheel():
    """Fast half of the check above: setuptools ships only the packages pyproject lists."""
    tomllib = pytest.importorskip("tomllib")  # Python ≥ 3.11
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "skillgit").rglob("__init__.py")
             if "__pycache__" not in p.parts}
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


@pytest.mark.slow
def test_installed_wheel_finds_its_data_and_init_uses_it(wheel, tmp_path):
    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                           str(target), str(wheel)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    # -S: no site processing, so the editable install's finder cannot answer; dependencies come from the
    # current environment's site-packages, skillgit only from the installed wheel.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), sysconfig.get_paths()["purelib"]])}
    code = ("import skillgit, skillgit.resources as r; "
            "print(skillgit.__file__); print(r.templates_dir()); print(r.hooks_dir())")
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    module, templates, hooks = (Path(line) for line in proc.stdout.split("\n")[:3])
    assert target in module.parents and target in templates.parents and target in hooks.parents
    assert (templates / "skillgit.yaml").is_file() and sorted((templates / "prompts").glob("*.md"))
    assert (hooks / "pre-push").is_file()

    project = tmp_path / "project"
    proc = subprocess.run([sys.executable, "-S", "-m", "skillgit", "init", "--hooks", str(project)],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (project / "skillgit.yaml").read_text().startswith("# skillgit.yaml")
    assert (project / ".git" / "hooks" / "pre-push").read_bytes() == (ROOT / "hooks" / "pre-push").read_bytes()

"""Shared test fixtures. Every test runs hermetically: its own HOME, no system or global git config, fixed
author/committer dates and identity, and no API keys from the developer's environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXED_DATE = "2026-01-01T00:00:00+00:00"


@pytest.fixture(autouse=True)
def hermetic_env(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Author")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "author@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Committer")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "committer@example.com")
    monkeypatch.setenv("GIT_AUTHOR_DATE", FIXED_DATE)
    monkeypatch.setenv("GIT_COMMITTER_DATE", FIXED_DATE)
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    for name in list(os.environ):
        upper = name.upper()
        if any(s in upper for s in ("API_KEY", "OPENAI", "ANTHROPIC", "AZURE_")) or upper.startswith("SKILLGIT_"):
            if name not in ("SKILLGIT_LIVE_BASE_URL", "SKILLGIT_LIVE_MODEL", "SKILLGIT_LIVE_API_KEY"):
                monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "160")
    yield


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run real git in `cwd` and return stdout (stripped of the final newline)."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout.rstrip("\n")


@pytest.fixture
def make_repo(tmp_path):
    """Create a real git repository with `files` committed on main; returns its path."""

    def _make(files: dict[str, str] | None = None, name: str = "repo") -> Path:
        root = tmp_path / name
        root.mkdir()
        git(root, "init", "-q", "-b", "main")
        for rel, text in (files or {"SKILL.md": "# Skill\n\nBe helpful.\n"}).items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            git(root, "add", rel)
        git(root, "commit", "-q", "-m", "initial")
        return root

    return _make


def run_cli(*args: str, cwd: Path, input: str | None = None, env: dict | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
    """Invoke the real `skillgit` CLI in a subprocess (python -m skillgit), capturing stdout and stderr."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-m", "skillgit", *args], cwd=cwd, capture_output=True, text=True,
                          input=input, env=full_env, timeout=timeout)


@pytest.fixture
def cli():
    return run_cli

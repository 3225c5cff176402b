"""GitPython's import runs `git version` once, not twice (`skillgit/store/gitimport.py`): a fresh interpreter
imports the store with a `git` first on PATH that records its arguments and runs the real git."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import sys
import skillgit.store.git  # the store's git modules, as every command that opens a repository imports them
from skillgit.store.gitimport import gitpython
before = open(sys.argv[1]).read().splitlines()
print(len(before))
print(gitpython.Git().version_info >= (2, 0))  # after the import: GitPython asks git itself again
print(len(open(sys.argv[1]).read().splitlines()) - len(before))
"""


def recording_git(folder: Path, log: Path) -> Path:
    """A folder holding a `git` that appends its argv to `log` and runs the real git."""
    real = shutil.which("git")
    assert real
    folder.mkdir()
    shim = folder / "git"
    shim.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    return folder


def test_importing_the_store_runs_git_version_once_and_leaves_gitpython_as_it_was(tmp_path):
    log = tmp_path / "git.log"
    log.write_text("")
    env = {**os.environ, "PATH": f"{recording_git(tmp_path / 'bin', log)}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(ROOT)}
    env.pop("GIT_PYTHON_GIT_EXECUTABLE", None)
    done = subprocess.run([sys.executable, "-c", PROBE, str(log)], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    at_import, works, later = done.stdout.split()
    # before: GitPython's Git.refresh and FetchInfo.refresh each ran `git version` (2)
    assert int(at_import) == 1 and log.read_text().splitlines()[0] == "version"
    # the memo ends with the import: a version asked afterwards runs git again
    assert works == "True" and int(later) == 1

"""`skillgit demo` without `--dir` (README's first command) named its folder — `skillgit demo in
/tmp/skillgit-demo-…/project` — and removed it at the end without saying so: a newcomer who `cd`ed there to try
`skillgit log` found nothing (wave 13). Now the line says the folder is temporary and how to keep it."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import run_cli_inproc


def test_the_demo_says_its_folder_is_temporary_and_how_to_keep_it(tmp_path):
    proc = run_cli_inproc("demo", "--steps", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(x for x in proc.stderr.splitlines() if x.startswith("skillgit demo in "))
    assert "(a temporary folder, removed at the end: --dir PATH keeps the project)" in line, line
    folder = re.match(r"skillgit demo in (\S+)", line)
    assert folder and not Path(folder.group(1)).exists()  # as it says: removed
    kept = run_cli_inproc("demo", "--steps", "1", "--dir", str(tmp_path / "d"), cwd=tmp_path)
    assert kept.returncode == 0 and "temporary" not in kept.stderr and (tmp_path / "d" / "SKILL.md").exists()

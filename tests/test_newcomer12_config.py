"""What a newcomer met editing skillgit.yaml between `skillgit log` / `status` runs (wave 12: the parsed config is
kept in `.git/skillgit/cache/config.json`), through the real CLI on the demo project:

- an edit shows at once (found fine; kept here as the newcomer's walk);
- a YAML error named only where the parser gave up: an unclosed `{` on the last line was reported at the line
  after it (line 36 of a 35-line file), with nothing pointing at the `{`. Now the message also says where the
  construct that was never closed starts.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli_inproc
from tests.helpers import demo_project


def test_an_edit_shows_at_once_and_an_unclosed_brace_is_located(tmp_path):
    root = demo_project(tmp_path / "p")
    config = root / "skillgit.yaml"
    assert run_cli_inproc("log", cwd=root).returncode == 0  # fills the cache
    assert (root / ".git" / "skillgit" / "cache" / "config.json").is_file()
    text = config.read_text(encoding="utf-8")
    assert "branch: main" in text
    config.write_text(text.replace("branch: main", "branch: other", 1), encoding="utf-8")
    for command in ("log", "status"):
        moved = run_cli_inproc(command, cwd=root)
        assert moved.returncode != 0 and "skill branch 'other' does not exist" in moved.stderr, moved.stderr
    lines = text.splitlines()
    config.write_text(text + "train: {batch_size: 5\n", encoding="utf-8")  # the `{` is never closed
    for command in ("log", "status"):
        broken = run_cli_inproc(command, cwd=root)
        said = " ".join(broken.stderr.split())
        assert broken.returncode == 2, broken.stderr
        assert f"{Path(config)}:{len(lines) + 2}:1: not valid YAML" in said, said
        assert f"(while parsing a flow mapping that starts at line {len(lines) + 1}, column 8)" in said, said

"""A newcomer's first `sleep dry-run` found no session and did not say where it had looked."""

from __future__ import annotations

import json

from tests.conftest import run_cli_inproc
from tests.test_sleep_night import make_project


def test_a_dry_run_that_finds_no_session_says_where_it_looked(tmp_path):
    repo = make_project(tmp_path / "repo")
    home = tmp_path / "empty-home"
    home.mkdir()
    done = run_cli_inproc("sleep", "dry-run", "--home", str(home), "--sources", "claude,codex", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "harvest: 0 new session(s)" in done.stdout
    assert f"(looked in {home} for claude, codex sessions of this repository; `--home` and `--sources` choose " \
        "others)" in done.stdout, done.stdout
    plan = json.loads(run_cli_inproc("sleep", "dry-run", "--home", str(home), "--json", cwd=repo).stdout)
    assert plan["harvest"]["looked"]["home"] == str(home)
    assert "claude" in plan["harvest"]["looked"]["sources"]

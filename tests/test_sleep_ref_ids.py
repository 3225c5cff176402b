"""`refs/skillgit/sleep` names neither the user nor the project (issue 23, item 6): a session file under home is
keyed by a stable id (`source:home/<sha256 of its ~/… path>`), no longer by its path, whose project folder
(`~/.claude/projects/-home-<user>-src-app/`) spelt the user name. A state saved by an earlier version (`~/…` keys)
is read by hashing its keys the same way: nothing is harvested again."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from skillgit.sleep import HarvestState, harvest
from tests.test_sleep_harvest import REMOTE, ClaudeSession, make_repo

USER = "alice-q"  # the user name, as it would appear in a project folder's slug


def ref_text(repo: Path) -> str:
    """Every file on the sleep ref's newest commit, concatenated."""
    names = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "--name-only", "refs/skillgit/sleep"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert names
    return "".join(subprocess.run(["git", "-C", str(repo), "show", f"refs/skillgit/sleep:{n}"],
                                  capture_output=True, text=True, check=True).stdout for n in names)


def test_the_sleep_demo_saves_no_user_name_on_the_sleep_ref(tmp_path):
    from tests.conftest import run_cli_inproc

    folder = tmp_path / "home" / USER / "src" / "records"
    proc = run_cli_inproc("demo", "--sleep", "--dir", str(folder), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = ref_text(folder)
    state = json.loads(subprocess.run(["git", "-C", str(folder), "show", "refs/skillgit/sleep:state.json"],
                                      capture_output=True, text=True, check=True).stdout)
    assert state["files"] and all(k.startswith("claude:home/") for k in state["files"])
    assert USER not in text and "/home/" not in text and "-home-" not in text


def test_a_state_with_path_keys_is_read_without_harvesting_again(tmp_path):
    home = tmp_path / "home" / USER
    repo = make_repo(tmp_path / "home" / USER / "src" / "app", REMOTE)
    path = ClaudeSession("ffff0001", repo).user("fix the parser").say("done").write(home)
    first = harvest(["claude"], home, repo, [], HarvestState())
    assert len(first.sessions) == 1
    # the same state as version 1 wrote it: keyed by the `~/…` path, the project folder spelling the user name
    ((key, entry),) = first.state.to_dict()["files"].items()
    rel = "~/" + path.relative_to(home).as_posix()
    assert USER in rel and key == "claude:home/" + hashlib.sha256(rel.encode()).hexdigest()[:20]
    old = {"version": 1, "files": {f"claude:{rel}": entry}}
    again = harvest(["claude"], home, repo, [], HarvestState.from_json(json.dumps(old)))
    assert again.sessions == () and again.files_unchanged == 1
    assert list(again.state.files) == [key] and USER not in again.state.to_json()
    assert again.state.to_dict()["version"] == 2

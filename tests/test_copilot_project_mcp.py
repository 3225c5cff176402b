"""Issue 23, item 9: after `skillgit install copilot --project`, the Copilot CLI said "No MCP servers configured".

The cause, found with the real CLI (1.0.x): it reads a repository's MCP servers (`.github/mcp.json`, `.mcp.json`)
only in a folder the person trusts (`trustedFolders` in `$COPILOT_HOME/config.json`, written when they trust the
folder at copilot's start; `copilot -p --trust-folder` for one run). The file skillgit writes is the right one, in
the right shape: once the folder is trusted, copilot lists the workspace server and a session gets its tools.
Trusting a folder lets the agent read and run its files, so install does it only when the person asks
(`--trust-folder`: one `trustedFolders` entry, recorded, removed exactly by uninstall); otherwise it says how
(`Report.notes`), and stops saying it once the folder is trusted.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from skillgit.integrations.install import install, uninstall
from tests import agent_clis as ac
from tests.agent_server import AgentServer
from tests.agent_server import text as reply
from tests.conftest import run_cli_inproc


def _trust(home: Path, folder: Path, key: str = "trustedFolders") -> None:
    config = home / ".copilot" / "config.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({key: [str(folder)]}))


def _skillgit_env() -> dict[str, str]:
    env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    env.update({k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ})
    return env


def test_the_project_install_says_copilot_needs_the_folder_trusted(make_repo, tmp_path, monkeypatch):
    repo = make_repo()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("COPILOT_HOME", raising=False)
    proc = run_cli_inproc("install", "copilot", "--project", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stderr.split())
    assert "note: Copilot CLI loads this repository's MCP servers (.github/mcp.json) only in a folder you trust" \
        in said
    assert f"trustedFolders in {home / '.copilot' / 'config.json'}" in said and "--trust-folder" in said
    assert not (home / ".copilot").exists()  # install does not trust a folder unless asked
    as_json = json.loads(run_cli_inproc("install", "copilot", "--project", "--json", cwd=repo).stdout)
    assert as_json["notes"] and "trust" in as_json["notes"][0]
    # trusted (here: a folder above the repository, in the older key): nothing left to say
    _trust(home, repo.parent, key="trusted_folders")
    assert "note:" not in run_cli_inproc("install", "copilot", "--project", cwd=repo).stderr
    assert run_cli_inproc("uninstall", "copilot", "--project", cwd=repo).returncode == 0
    assert json.loads((home / ".copilot" / "config.json").read_text()) == {"trusted_folders": [str(repo.parent)]}


def test_other_agents_and_the_user_scope_have_no_trust_note(make_repo, tmp_path):
    repo = make_repo()
    home = tmp_path / "home"
    home.mkdir()
    assert install("copilot", "user", repo=repo, home=home, env={"HOME": str(home)}).notes == ()
    assert install("codex", "project", repo=repo, home=home, env={"HOME": str(home)}).notes == ()
    uninstall("copilot", "user", repo=repo, home=home, env={"HOME": str(home)})


@pytest.mark.agent_cli
def test_real_copilot_loads_the_project_mcp_server_once_the_folder_is_trusted(make_repo, tmp_path):
    copilot = ac.find_cli("copilot")
    if copilot is None:
        pytest.skip("copilot is not installed (.venv/bin/python -m tests.agent_clis install copilot)")
    repo = make_repo({"README.md": "# scratch\n"})
    home = tmp_path / "agent-home"
    home.mkdir()
    report = install("copilot", "project", repo=repo, home=home, env={"HOME": str(home)})
    assert report.notes  # not trusted yet
    env = ac.copilot_env(home, "http://127.0.0.1:9", extra=_skillgit_env())
    untrusted = ac.run_cli([str(copilot), "mcp", "list"], cwd=repo, env=env)
    assert "No MCP servers configured" in untrusted.stdout + untrusted.stderr  # what the issue saw
    # one prompt-mode run with --trust-folder: the session starts skillgit's MCP server and offers its tools
    with AgentServer([reply("ok")]) as server:
        argv = ac.copilot_prompt_argv(copilot, "Say ok.", extra=["--trust-folder"])
        proc = ac.run_cli(argv, cwd=repo, env=ac.copilot_env(home, server.base_url, extra=_skillgit_env()))
        first = server.agent_requests()[0]
    assert proc.returncode == 0, proc.stderr
    assert {"skillgit-log", "skillgit-show"} <= set(first.tool_names()), first.tool_names()
    # the person trusts the folder (what copilot's own start-up question records): `mcp list` names the server
    _trust(home, repo)
    listed = ac.run_cli([str(copilot), "mcp", "list"], cwd=repo, env=env)
    assert "Workspace servers:" in listed.stdout and "skillgit" in listed.stdout, listed.stdout + listed.stderr
    assert install("copilot", "project", repo=repo, home=home, env={"HOME": str(home)}).notes == ()


def test_trust_folder_adds_one_entry_and_uninstall_takes_exactly_it_out(make_repo, tmp_path, monkeypatch):
    repo = make_repo()
    home = tmp_path / "home"
    config = home / ".copilot" / "config.json"
    config.parent.mkdir(parents=True)
    theirs = '{\n  "banner": "never",\n  "trustedFolders": [\n    "/srv/other"\n  ]\n}\n'
    config.write_text(theirs)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("COPILOT_HOME", raising=False)
    proc = run_cli_inproc("install", "copilot", "--project", "--trust-folder", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(config.read_text()) == {"banner": "never", "trustedFolders": ["/srv/other", str(repo)]}
    assert "note:" not in proc.stderr  # trusted now: nothing left to do
    assert run_cli_inproc("uninstall", "copilot", "--project", cwd=repo).returncode == 0
    assert config.read_text() == theirs  # byte for byte
    # without a config yet: created, and removed again with the folder install made
    config.unlink()
    config.parent.rmdir()
    assert run_cli_inproc("install", "copilot", "--project", "--trust-folder", cwd=repo).returncode == 0
    assert json.loads(config.read_text()) == {"trustedFolders": [str(repo)]}
    assert run_cli_inproc("uninstall", "copilot", "--project", cwd=repo).returncode == 0
    assert not (home / ".copilot").exists()
    refused = run_cli_inproc("install", "claude", "--project", "--trust-folder", cwd=repo)
    assert refused.returncode == 2 and "--trust-folder is for `skillgit install copilot --project` only" in \
        refused.stderr


@pytest.mark.agent_cli
def test_real_copilot_lists_the_server_after_install_with_trust_folder(make_repo, tmp_path):
    copilot = ac.find_cli("copilot")
    if copilot is None:
        pytest.skip("copilot is not installed (.venv/bin/python -m tests.agent_clis install copilot)")
    repo = make_repo({"README.md": "# scratch\n"})
    home = tmp_path / "agent-home"
    home.mkdir()
    report = install("copilot", "project", repo=repo, home=home, env={"HOME": str(home)}, trust_folder=True)
    assert report.notes == ()
    env = ac.copilot_env(home, "http://127.0.0.1:9", extra=_skillgit_env())
    listed = ac.run_cli([str(copilot), "mcp", "list"], cwd=repo, env=env)
    assert "Workspace servers:" in listed.stdout and "skillgit" in listed.stdout, listed.stdout + listed.stderr
    uninstall("copilot", "project", repo=repo, home=home, env={"HOME": str(home)})
    gone = ac.run_cli([str(copilot), "mcp", "list"], cwd=repo, env=env)
    assert "No MCP servers configured" in gone.stdout + gone.stderr

"""`skillgit mcp` answers `initialize` light: the real entry point in a fresh interpreter, one `initialize` request
on stdin, and the *set of modules* loaded at the moment the answer is written (never a time: bench/mcp_start.py
measures that). An agent waits for this answer before it lists skillgit's tools; nothing of the command line,
the store, GitPython, YAML, rich or the model SDKs may be paid for before it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skillgit.entry import mcp_arguments
from tests.helpers import mcp_answer_and_modules, sdk_modules

pytest.importorskip("mcp")

# (what the SDK imports itself is its floor, not ours: mcp 2.x pulls in click through uvicorn)
HEAVY = ("skillgit.cli", "skillgit.store", "skillgit.project", "skillgit.config", "skillgit.llm", "skillgit.loop",
         "skillgit.session", "skillgit.world", "skillgit.sleep", "skillgit.report", "typer", "click", "rich", "git",
         "yaml", "openai", "anthropic")


def loaded(modules: set[str], prefix: str) -> bool:
    return any(m == prefix or m.startswith(prefix + ".") for m in modules)


def answer_and_modules(cwd: Path, tmp: Path, *args: str) -> tuple[dict, set[str]]:
    line, modules, err = mcp_answer_and_modules(cwd, tmp / "modules.json", *args)
    assert line, err[-3000:]
    return json.loads(line), set(modules)


def test_initialize_is_answered_before_anything_heavy_is_imported(make_repo, tmp_path):
    root = make_repo({"SKILL.md": "# Skill\n"})
    reply, modules = answer_and_modules(root, tmp_path)
    info = reply["result"]["serverInfo"]
    assert info["name"] == "skillgit"
    assert loaded(modules, "mcp") and "skillgit.integrations.mcp_server" in modules
    floor = set(sdk_modules())
    heavy = [h for h in HEAVY if loaded(modules - floor, h)]
    assert not loaded(floor, "skillgit")
    assert not heavy, f"imported before `initialize` was answered: {heavy}"


def test_repo_and_config_options_take_the_light_path(make_repo, tmp_path):
    root = make_repo({"SKILL.md": "# Skill\n"})
    reply, modules = answer_and_modules(tmp_path, tmp_path, "-C", str(root), "--config=skillgit.yaml")
    assert reply["result"]["serverInfo"]["name"] == "skillgit"
    assert not loaded(modules, "typer") and not loaded(modules, "skillgit.store")


@pytest.mark.parametrize("args, expected", [
    (["mcp"], {}),
    (["mcp", "--repo", "r", "--config", "c.yaml"], {"repo": Path("r"), "config": Path("c.yaml")}),
    (["mcp", "--repo=r", "--config=c"], {"repo": Path("r"), "config": Path("c")}),
    (["mcp", "-C", "r"], {"repo": Path("r")}),
])
def test_mcp_arguments_the_fast_path_serves(args, expected):
    assert mcp_arguments(args) == expected


@pytest.mark.parametrize("args", [[], ["log"], ["mcp", "--help"], ["mcp", "--repo"], ["mcp", "--repo", "--config"],
                                  ["mcp", "-C", "a", "-C", "b"], ["mcp", "--repo="], ["mcp", "extra"],
                                  ["mcp", "-C=a"], ["mcp", "--verbose"], ["mcp", "-c", "c.yaml"]])
def test_everything_else_goes_to_the_command_line(args):
    assert mcp_arguments(args) is None


def test_mcp_help_is_still_the_command_lines(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "skillgit", "mcp", "--help"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and "--repo" in proc.stdout and "MCP" in proc.stdout


def test_rich_is_importable_again_after_the_server_is_built(tmp_path):
    code = ("import sys\nfrom skillgit.integrations.mcp_server import build_server\nbuild_server()\n"
            "assert 'rich' not in sys.modules, sorted(m for m in sys.modules if m.startswith('rich'))\n"
            "import rich.console\nprint('ok', rich.console.Console.__name__)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("ok Console"), proc.stderr[-2000:]

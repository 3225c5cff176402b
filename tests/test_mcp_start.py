"""`skillgit mcp` answers `initialize` light: the real entry point in a fresh interpreter, one `initialize` request
on stdin, and the *set of modules* loaded at the moment the answer is written (never a time: bench/mcp_start.py
measures that). An agent waits for this answer before it lists skillgit's tools: with the SDK's answers recorded
(every start after an installation's first), nothing but the light front (integrations/mcp_front.py) is paid
for before it, not even the SDK; without, nothing of the command line, the store, GitPython, YAML, rich or the
model SDKs. tests/test_mcp_front.py checks that the front's answers are the SDK's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillgit.entry import mcp_arguments
from skillgit.integrations.mcp_front import HANDSHAKE_ENV
from tests.helpers import MCP_PROBE, initialize_request, mcp_answer_and_modules, sdk_modules

pytest.importorskip("mcp")

# (what the SDK imports itself is its floor, not ours: mcp 2.x pulls in click through uvicorn)
HEAVY = ("skillgit.cli", "skillgit.store", "skillgit.project", "skillgit.config", "skillgit.llm", "skillgit.loop",
         "skillgit.session", "skillgit.world", "skillgit.sleep", "skillgit.report", "typer", "click", "rich", "git",
         "yaml", "openai", "anthropic")


def loaded(modules: set[str], prefix: str) -> bool:
    return any(m == prefix or m.startswith(prefix + ".") for m in modules)


def answer_and_modules(cwd: Path, tmp: Path, *args: str, handshake: Path | None = None) -> tuple[dict, set[str]]:
    env = {**os.environ, HANDSHAKE_ENV: str(handshake)} if handshake else None
    line, modules, err = mcp_answer_and_modules(cwd, tmp / "modules.json", *args, env=env)
    assert line, err[-3000:]
    return json.loads(line), set(modules)


def waiting_answer_and_modules(cwd: Path, out: Path, handshake: Path) -> tuple[str, set[str]]:
    """As `mcp_answer_and_modules`, with the `initialize` line already waiting on stdin (then EOF) when the process
    starts, as it is when an agent spawns the server: (the answer line, the modules loaded when it was written)."""
    read, write = os.pipe()
    os.write(write, (json.dumps(initialize_request("test")) + "\n").encode())
    os.close(write)
    try:
        proc = subprocess.run([sys.executable, "-c", MCP_PROBE, str(out)], cwd=cwd, stdin=read, capture_output=True,
                              text=True, timeout=120, env={**os.environ, HANDSHAKE_ENV: str(handshake)})
    finally:
        os.close(read)
    assert proc.returncode == 0 and proc.stdout, proc.stderr[-3000:]
    return proc.stdout.splitlines()[0], set(json.loads(out.read_text()))


def test_initialize_is_answered_before_anything_heavy_is_imported(make_repo, tmp_path):
    root = make_repo({"SKILL.md": "# Skill\n"})
    handshake = tmp_path / "handshake.json"
    # the first start of an installation: the SDK answers (and its answers are recorded for the next start)
    first, first_modules = waiting_answer_and_modules(root, tmp_path / "first.json", handshake)
    assert loaded(first_modules, "mcp") and handshake.exists()
    line, modules = waiting_answer_and_modules(root, tmp_path / "modules.json", handshake)
    assert line == first  # the same answer, byte for byte
    assert json.loads(line)["result"]["serverInfo"]["name"] == "skillgit"
    assert "skillgit.integrations.mcp_front" in modules
    heavy = [h for h in (*HEAVY, "mcp", "mcp_types", "pydantic", "anyio", "skillgit.integrations.mcp_server",
                         "skillgit.integrations.tools", "subprocess") if loaded(modules, h)]
    assert not heavy, f"imported before `initialize` was answered: {heavy}"


def test_without_a_record_the_sdk_answers_and_nothing_of_skillgits_heavy_parts_comes_first(make_repo, tmp_path):
    root = make_repo({"SKILL.md": "# Skill\n"})
    reply, modules = answer_and_modules(root, tmp_path, handshake=tmp_path / "none-yet" / "handshake.json")
    assert reply["result"]["serverInfo"]["name"] == "skillgit" and loaded(modules, "mcp")
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

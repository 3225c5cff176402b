"""`skillgit mcp` driven by the official `mcp` SDK's own client over stdio: a real `python -m skillgit mcp`
subprocess in a repository trained by `skillgit demo --steps 2` (the offline simulated world).

Skipped when the `mcp` package is not installed (it is the optional extra `skillgit[mcp]`), except the test that
the server names the fix when the SDK is missing.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skillgit import provenance
from skillgit.cli import has_command as cli_has
from tests.conftest import FIXED_DATE, git

mcp = pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

READ_TOOLS = ("log", "show", "diff", "rejected", "status", "report", "review_summary")
ALL_TOOLS = {*READ_TOOLS, "train_dry_run", "train", "sleep_dry_run", "sleep_run", "pending_questions", "answer"}
FAKE_KEY = "sk-ant-api03-" + "Q" * 40  # a credential shape: must come back masked
FIXED_TIME = 1_800_000_000  # file times set by hand: the report order is the files' age, not the test's timing


def _git_env(home: Path) -> dict[str, str]:
    # built by hand: a module-scoped fixture runs before conftest's per-test hermetic environment
    secretish = ("API_KEY", "OPENAI", "ANTHROPIC", "AZURE_", "SKILLGIT_")
    env = {k: v for k, v in os.environ.items() if not any(part in k.upper() for part in secretish)}
    env.update({"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
                "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T",
                "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_AUTHOR_DATE": FIXED_DATE,
                "GIT_COMMITTER_DATE": FIXED_DATE, "NO_COLOR": "1"})
    return env


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A demo repository trained for two steps, and the environment to run skillgit in it."""
    home = tmp_path_factory.mktemp("mcp-home")
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    env = _git_env(home)
    repo = tmp_path_factory.mktemp("mcp") / "demo"
    proc = subprocess.run([sys.executable, "-m", "skillgit", "demo", "--dir", str(repo), "--steps", "2"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return repo, env


def _is_error(result: Any) -> bool:
    return bool(_field(result, "is_error", "isError"))


def _field(obj: Any, v2: str, v1: str) -> Any:
    """A field under its mcp 2.x (snake_case) or 1.x (camelCase) name."""
    return getattr(obj, v2, None) if hasattr(obj, v2) else getattr(obj, v1, None)


def _read_only(tool: Any) -> bool | None:
    return _field(tool.annotations, "read_only_hint", "readOnlyHint") if tool.annotations else None


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def _session(cwd: Path, env: dict[str, str], body, args: tuple[str, ...] = ()) -> Any:
    params = StdioServerParameters(command=sys.executable, args=["-m", "skillgit", "mcp", *args], env=env,
                                   cwd=str(cwd))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)


def run_session(cwd: Path, env: dict[str, str], body, args: tuple[str, ...] = ()) -> Any:
    return asyncio.run(asyncio.wait_for(_session(cwd, env, body, args), timeout=120))


def test_every_read_tool_answers_and_guarded_or_bad_calls_are_clear_errors(trained):
    repo, env = trained
    tip = git(repo, "rev-parse", "main")

    async def body(s: ClientSession) -> dict[str, Any]:
        listed = await s.list_tools()
        out: dict[str, Any] = {"tools": {t.name: t for t in listed.tools}}
        calls = {"log": {}, "log_run": ("log", {"run": "demo-seed0", "limit": 2}), "show": {"rev": "1"},
                 "show_full": ("show", {"rev": "demo-seed0/2", "full": True}), "diff": {"a": "0", "b": "2"},
                 "rejected": {"limit": 5}, "status": {}, "report": {}, "review_summary": {},
                 "train_no_budget": ("train", {"max_steps": 1}), "show_missing": ("show", {}),
                 "show_option": ("show", {"rev": "--output=/tmp/x"}), "show_unknown": ("show", {"rev": "nope-123"}),
                 "log_zero": ("log", {"limit": 0}), "train_negative": ("train", {"max_calls": -5}),
                 "status_unknown": ("status", {"run": "no-such-run"}), "sleep_no_budget": ("sleep_run", {}),
                 "sleep_dry_run": {}}
        for key, spec in calls.items():
            name, arguments = spec if isinstance(spec, tuple) else (key, spec)
            out[key] = await s.call_tool(name, arguments)
        out["resources"] = [str(r.uri) for r in (await s.list_resources()).resources]
        templates = _field(await s.list_resource_templates(), "resource_templates", "resourceTemplates")
        out["templates"] = [_field(t, "uri_template", "uriTemplate") for t in templates]
        out["skill"] = (await s.read_resource("skillgit://skill")).contents[0].text
        out["progress"] = (await s.read_resource("skillgit://runs/demo-seed0/progress")).contents[0].text
        out["run_report"] = (await s.read_resource("skillgit://runs/demo-seed0/report")).contents[0].text
        return out

    out = run_session(repo, env, body)
    assert set(out["tools"]) == ALL_TOOLS
    for name in ALL_TOOLS:
        assert _read_only(out["tools"][name]) is (name not in ("train", "sleep_run", "answer")), name
    schema = _field(out["tools"]["train"], "input_schema", "inputSchema")
    assert {"max_calls", "max_cost_usd", "max_steps", "review_branch"} <= set(schema["properties"])

    for key in ("log", "log_run", "show", "show_full", "diff", "rejected", "status", "report", "review_summary"):
        assert not _is_error(out[key]), (key, _text(out[key]))
    # the same history the command line reports (`skillgit log --json` is the reference)
    entries = json.loads(subprocess.run([sys.executable, "-m", "skillgit", "log", "--json"], cwd=repo, env=env,
                                        capture_output=True, text=True, timeout=120, check=True).stdout)
    verdicts = {e["label"]: e["verdict"] for e in entries}
    assert list(verdicts) == ["demo-seed0/0000", "demo-seed0/0001", "demo-seed0/0002"]
    log = _text(out["log"])
    assert "branch 'main'" in log and "the newest 3 of 3 entries" in log
    for label, verdict in verdicts.items():
        assert f"{label}  {verdict}" in log
    assert len(_text(out["log_run"]).splitlines()) == 3  # header + the newest 2 entries
    show = _text(out["show"])
    assert f"decision: {verdicts['demo-seed0/0001']} — val" in show and "full=true" in show
    assert "diff --git a/SKILL.md b/SKILL.md" in show
    assert '"kind": "decision"' in _text(out["show_full"])
    assert _text(out["diff"]).startswith("diff --git a/SKILL.md b/SKILL.md")
    rejected_labels = [label for label, verdict in verdicts.items() if verdict == "rejected"]
    rejected_text = _text(out["rejected"])
    if rejected_labels:
        assert rejected_text.startswith("rejected steps, newest first") and rejected_labels[-1] in rejected_text
    else:
        assert rejected_text == "no rejected steps"
    status = json.loads(_text(out["status"]))
    assert status["run"] == "demo-seed0" and status["status"] == "finished" and status["steps_done"] == 2
    assert "no report found" in _text(out["report"]) and "skillgit-report-*.html" in _text(out["report"])
    assert "## skillgit: learned changes to `SKILL.md`" in _text(out["review_summary"])

    # guarded and bad calls: MCP tool errors with skillgit's message and hint, never a traceback
    errors = {k: _text(out[k]) for k in ("train_no_budget", "show_missing", "show_option", "show_unknown",
                                         "log_zero", "train_negative", "status_unknown", "sleep_no_budget")}
    for key, message in errors.items():
        assert _is_error(out[key]), key
        assert "Traceback" not in message and 'File "' not in message, message
    assert "explicit budget" in errors["train_no_budget"] and "max_calls" in errors["train_no_budget"]
    assert "rev" in errors["show_missing"] and "required" in errors["show_missing"].lower()
    assert "invalid revision" in errors["show_option"] and "not starting with '-'" in errors["show_option"]
    assert "unknown revision 'nope-123'" in errors["show_unknown"] and "hint:" in errors["show_unknown"]
    assert "limit" in errors["log_zero"] and "greater than or equal to 1" in errors["log_zero"]
    assert "max_calls" in errors["train_negative"]
    assert "unknown run 'no-such-run'" in errors["status_unknown"]
    assert "explicit budget" in errors["sleep_no_budget"]
    if cli_has("sleep", "dry-run"):
        assert not _is_error(out["sleep_dry_run"]), _text(out["sleep_dry_run"])
    else:
        assert "`skillgit sleep dry-run` is not available in this version" in _text(out["sleep_dry_run"])

    assert {"skillgit://skill", "skillgit://status"} <= set(out["resources"])
    assert {"skillgit://runs/{run}/progress", "skillgit://runs/{run}/report"} <= set(out["templates"])
    assert out["skill"] == (repo / "SKILL.md").read_text()
    assert json.loads(out["progress"])["run"] == "demo-seed0"
    assert out["run_report"].startswith("# skillgit run demo-seed0")
    # nothing the agent did moved the skill branch or touched the working tree
    assert git(repo, "rev-parse", "main") == tip and git(repo, "status", "--porcelain") == ""


def test_train_with_a_budget_trains_onto_a_review_branch_and_never_moves_the_skill_branch(trained, tmp_path):
    source, env = trained
    repo = tmp_path / "copy"
    shutil.copytree(source, repo, symlinks=True)
    tip = git(repo, "rev-parse", "main")

    async def body(s: ClientSession) -> tuple[Any, Any, Any]:
        dry = await s.call_tool("train_dry_run", {"max_steps": 1})
        trained_result = await s.call_tool("train", {"max_calls": 400, "max_steps": 1,
                                                     "review_branch": "skillgit/review/t1"})
        summary = await s.call_tool("review_summary", {"branch": "skillgit/review/t1"})
        return dry, trained_result, summary

    dry, result, summary = run_session(repo, env, body, ("--repo", str(repo)))
    assert not _is_error(dry), _text(dry)
    assert "estimate (no model was called)" in _text(dry) and '"steps": 1' in _text(dry)
    assert not _is_error(result), _text(result)
    data = json.loads(_text(result))
    assert data["review_branch"] == "skillgit/review/t1" and data["review_branch_created"] is True
    assert data["steps"] == 1 and data["status"] in ("finished", "stopped")
    assert "merging the review branch is a person's decision" in data["adoption"]
    assert git(repo, "rev-parse", "main") == tip  # the skill branch did not move
    assert git(repo, "status", "--porcelain") == ""  # nor did the working tree change
    review_tip = git(repo, "rev-parse", "skillgit/review/t1")
    assert subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", tip, review_tip]).returncode == 0
    body_text = _text(summary)
    assert not _is_error(summary) and "git merge --ff-only skillgit/review/t1" in body_text
    assert "Adopting it is a person's decision" in body_text


def test_report_finds_the_html_skillgit_report_wrote_and_sleep_night_reports_newest_first(trained, tmp_path):
    source, env = trained
    repo = tmp_path / "copy"
    shutil.copytree(source, repo, symlinks=True)
    made = subprocess.run([sys.executable, "-m", "skillgit", "report", "--renderer", "builtin"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    html = Path(made.stdout.strip())
    assert html == repo / "skillgit-report-demo-seed0.html" and html.is_file()
    nights = repo / ".skillgit" / "sleep"  # `sleep.report_dir`'s default (docs/SLEEP.md)
    nights.mkdir(parents=True)
    (nights / "2026-01-30.md").write_text("# night of 2026-01-30\n")
    (nights / "2026-01-31.md").write_text("# night of 2026-01-31\n\nreplayed 4 tasks\n")
    (nights / "tasks.jsonl").write_text("{}\n")  # the mined tasks live there too: not a report
    for age, path in ((300, nights / "2026-01-30.md"), (200, html), (100, nights / "2026-01-31.md")):
        os.utime(path, (FIXED_TIME - age, FIXED_TIME - age))

    async def body(s: ClientSession) -> Any:
        return await s.call_tool("report", {})

    result = run_session(repo, env, body)
    text = _text(result)
    assert not _is_error(result), text
    listed = [line.split()[1] for line in text.splitlines() if line.startswith("- ")]
    assert listed == [str((nights / "2026-01-31.md").resolve()), str(html.resolve()),
                      str((nights / "2026-01-30.md").resolve())]
    assert "training report (HTML" in text and "sleep night report (Markdown)" in text
    assert "the newest sleep night report, 2026-01-31.md:" in text and "replayed 4 tasks" in text
    assert "tasks.jsonl" not in text


def test_the_server_names_skillgits_version_in_the_handshake(make_repo):
    from skillgit import __version__

    async def handshake() -> Any:
        params = StdioServerParameters(command=sys.executable, args=["-m", "skillgit", "mcp"], env=dict(os.environ),
                                       cwd=str(make_repo()))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                return await session.initialize()

    init = asyncio.run(asyncio.wait_for(handshake(), timeout=120))
    info = _field(init, "server_info", "serverInfo")
    assert info.name == "skillgit" and info.version == __version__ and __version__


def test_returned_text_is_redacted_and_control_characters_are_escaped(make_repo, tmp_path):
    skill = f"# Skill\n\nUse the key {FAKE_KEY} carefully.\n\x1b[31mred\x1b[0m and \u202eevil\n"
    repo = make_repo({"SKILL.md": "# Skill\n\nBe helpful.\n"})
    (repo / "SKILL.md").write_text(skill)
    git(repo, "commit", "-qam", "add a secret by mistake")

    async def body(s: ClientSession) -> tuple[str, str, str]:
        diff = _text(await s.call_tool("diff", {"a": "main~1", "b": "main"}))
        shown = _text(await s.call_tool("show", {"rev": "main"}))
        resource = (await s.read_resource("skillgit://skill")).contents[0].text
        return diff, shown, resource

    for text in run_session(tmp_path, dict(os.environ), body, ("--repo", str(repo))):
        assert FAKE_KEY not in text and "sk-***" in text
        assert "\x1b" not in text and "\\x1b[31m" in text
        assert "\u202e" not in text and "\\u202e" in text


def test_a_missing_sdk_is_a_clear_error_naming_the_extra(tmp_path, make_repo):
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "mcp.py").write_text("raise ImportError('the mcp SDK is blocked for this test')\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(blocker), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run([sys.executable, "-m", "skillgit", "mcp"], cwd=make_repo(), env=env, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    assert provenance.extra_hint("mcp") in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""  # stdout belongs to the protocol


# ---------------------------------------------------------------------------------------------- paths (issue 19.2)
def _key_material() -> tuple[str, str, str]:
    """An OpenSSH private key block and an AWS key id, built at run time (no key-shaped literal in the repo)."""
    from tests.secret_corpus import rand

    body = [rand(70, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(5)]
    block = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END OPENSSH PRIVATE KEY-----\n"
    aws = "AKIA" + rand(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
    return block, body[2][10:50], aws


def test_report_never_follows_a_committed_link_out_of_the_repository_and_masks_what_it_returns(make_repo, tmp_path):
    block, body, aws = _key_material()
    outside = tmp_path / "home" / ".ssh"
    outside.mkdir(parents=True)
    (outside / "id_ed25519").write_text(f"{block}aws_access_key_id = {aws}\n")
    repo = make_repo({"SKILL.md": "# Skill\n\nBe helpful.\n"})
    nights = repo / ".skillgit" / "sleep"
    nights.mkdir(parents=True)
    (nights / "2026-02-02.md").symlink_to(outside / "id_ed25519")  # committed by a careless or hostile collaborator
    (nights / "2026-02-01.md").write_text(f"# night of 2026-02-01\n\nthe agent printed {aws} and\n{block}")
    git(repo, "add", "-f", ".skillgit/sleep")
    git(repo, "commit", "-qm", "nights")
    os.utime(nights / "2026-02-01.md", (FIXED_TIME, FIXED_TIME))

    async def body_(s: ClientSession) -> Any:
        return await s.call_tool("report", {})

    result = run_session(tmp_path, dict(os.environ), body_, ("--repo", str(repo)))
    text = _text(result)
    assert not _is_error(result), text
    assert body not in text and aws not in text and "PRIVATE KEY" not in text.replace("sleep night report", "")
    assert f"skipped {nights / '2026-02-02.md'}" in text and "outside the repository" in text
    # the report inside the repository is shown, its secrets masked
    assert "the newest sleep night report, 2026-02-01.md:" in text and "the agent printed *** and" in text


def test_a_report_dir_outside_the_repository_is_refused_by_report_and_sleep(make_repo, tmp_path):
    block, body, aws = _key_material()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "2026-02-03.md").write_text(f"# night\n{aws}\n{block}")
    repo = make_repo({"SKILL.md": "# Skill\n\nBe helpful.\n",
                      "skillgit.yaml": f"skill: {{path: SKILL.md, branch: main}}\nsleep:\n  report_dir: {elsewhere}\n"})

    async def body_(s: ClientSession) -> tuple[Any, Any]:
        return await s.call_tool("report", {}), await s.call_tool("sleep_dry_run", {})

    report, dry = run_session(repo, dict(os.environ), body_)
    text = _text(report)
    assert body not in text and aws not in text and "2026-02-03.md" not in text
    assert f"refused: sleep.report_dir ({elsewhere})" in text and "outside the repository" in text
    if cli_has("sleep", "dry-run"):
        assert _is_error(dry) and "sleep.report_dir" in _text(dry) and "outside the repository" in _text(dry)

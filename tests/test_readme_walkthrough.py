"""A newcomer's walkthrough: the README's first-run command blocks, read from README.md and run in order, each line
as a shell would, through the `skillgit` entry point installed in this environment, on fresh temporary
repositories — asserting every command exits 0, as the README promises.

What is run (each block as the README writes it, found under its heading):
- the quick start's `skillgit demo` (the install commands before it are not run: this environment is installed);
- "The demo": `skillgit demo --dir D`, then in D the commands its text suggests (`skillgit log`, `skillgit show 2`,
  `skillgit rejected`, `skillgit train` to continue);
- "Review learned edits" and "Run the gate in CI" in a kept demo with a bare repository as `origin` (no GitHub CLI:
  the last line, `pr --push origin --gh`, must stop before pushing and say what to install);
- "Train your own skill" on a fresh repository: `cd`, `skillgit init --skill … --commit`, the `echo … >>
  tasks.jsonl` line, committing it, `export OPENAI_API_KEY=…`, `skillgit doctor`, `skillgit train --dry-run`,
  `skillgit train`, `skillgit log`. Offline stand-ins, said here because the README's block needs a provider:
  OPENAI_BASE_URL points the `openai` backends `init` configures at a scripted OpenAI-compatible server on
  127.0.0.1, and after the README's one example task line the test appends eleven more in the same shape (the
  block says "write tasks.jsonl: one task per line"; with one task there is no train or val split).
In the kept demos `train.max_steps: 3` is set in `skillgit.yaml` (the test's time budget), and commits get real
times (the suite's fixed dates would make every run equally "newest"). If the README's blocks change, this test
changes with them: a command it does not know how to run fails it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git
from tests.fake_servers import fake_server_fixture  # noqa: F401 (the fake_server fixture)

README = Path(__file__).resolve().parents[1] / "README.md"
pytestmark = pytest.mark.slow  # four trainings and ~25 CLI processes


def section(heading: str) -> str:
    text = README.read_text(encoding="utf-8")
    assert f"\n## {heading}\n" in text, f"README has no section '## {heading}'"
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def bash_lines(text: str) -> list[str]:
    """The command lines of the first ```bash block of `text`, comments and blank lines dropped."""
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "no ```bash block"
    lines = []
    for raw in block.group(1).splitlines():
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if line:
            lines.append(line)
    return lines


class Shell:
    """Runs README lines one by one: `cd` and `export` change its state, everything else is a real process whose
    `skillgit` is the entry point installed next to this interpreter."""

    def __init__(self, cwd: Path, env: dict[str, str]):
        self.cwd, self.env = cwd, env

    def run(self, line: str, timeout: float = 300) -> subprocess.CompletedProcess:
        words = shlex.split(line)
        if words[0] == "cd":
            self.cwd = (self.cwd / words[1]).resolve()
            assert self.cwd.is_dir(), line
            return subprocess.CompletedProcess(words, 0, "", "")
        if words[0] == "export":
            name, value = words[1].split("=", 1)
            self.env[name] = "sk-walkthrough-0123456789" if value == "…" else value
            return subprocess.CompletedProcess(words, 0, "", "")
        proc = subprocess.run(["bash", "-c", line], cwd=self.cwd, env=self.env, capture_output=True, text=True,
                              timeout=timeout)
        assert proc.returncode == 0, f"`{line}` exited {proc.returncode}:\n{proc.stderr[-3000:]}"
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
        return proc


def fewer_steps(project: Path, steps: int = 3) -> None:
    """A smaller run for the test's time budget: the kept demo's own config, edited as a user would."""
    config = project / "skillgit.yaml"
    text = config.read_text()
    assert "\ntrain:\n" in text
    config.write_text(text.replace("\ntrain:\n", f"\ntrain:\n  max_steps: {steps}\n", 1))


@pytest.fixture
def shell(tmp_path) -> Shell:
    entry = Path(sys.executable).parent / "skillgit"
    if not entry.exists():
        pytest.skip("no installed `skillgit` entry point next to this interpreter (pip install -e . first)")
    env = dict(os.environ, PATH=f"{entry.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    for frozen in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):  # a newcomer's commits have real times ("newest run")
        env.pop(frozen, None)
    assert shutil.which("skillgit", path=env["PATH"]) == str(entry)
    return Shell(tmp_path, env)


def test_the_quick_start_and_the_demo_section_run_as_written(shell, tmp_path):
    quick = bash_lines(README.read_text(encoding="utf-8").split("\n## ", 1)[0])[0]
    demo = quick.rsplit("&&", 1)[1].strip()  # after the install commands
    assert demo == "skillgit demo"
    out = shell.run(demo).stdout
    before, after = map(float, re.search(r"test hard: ([\d.]+) → ([\d.]+)", out).groups())
    assert after > before

    text = section("The demo")
    assert "`skillgit demo [--dir PATH]" in text
    shell.run("skillgit demo --dir kept --steps 3")
    suggested = re.search(r"`cd` there and try (.*?) to continue", text, re.S)
    assert suggested, "the demo section no longer suggests what to try in the kept folder"
    commands = re.findall(r"`(skillgit [^`]+)`", suggested.group(1))
    assert commands == ["skillgit log", "skillgit show 2", "skillgit rejected", "skillgit train"]
    shell.run("cd kept")
    fewer_steps(shell.cwd)
    runs_before = git(shell.cwd, "for-each-ref", "refs/skillgit/runs").splitlines()
    outputs = {line: shell.run(line) for line in commands}
    assert "step" in outputs["skillgit show 2"].stdout
    assert len(git(shell.cwd, "for-each-ref", "refs/skillgit/runs").splitlines()) == len(runs_before) + 1


def _scripted(body: dict) -> str:
    """The offline stand-in for OpenAI: JSON for the teacher (no edits), a plain answer for the student."""
    wants_json = "response_format" in body or "json" in json.dumps(body.get("messages", ""))[-400:].lower()
    return '{"status": "ok", "edits": [], "analysis": "nothing to add"}' if wants_json else "LGTM"


def test_train_your_own_skill_runs_as_written(shell, tmp_path, fake_server):
    fake_server.handler = _scripted
    lines = bash_lines(section("Train your own skill"))
    repo = tmp_path / lines[0].split()[1]  # `cd my-agent-repo`: any git repository
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("my agent\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-qm", "initial")
    shell.env["OPENAI_BASE_URL"] = fake_server.openai_base_url
    expected = ["cd", "skillgit init", "echo", "git add tasks.jsonl", "export OPENAI_API_KEY", "skillgit doctor",
                "skillgit train --dry-run", "skillgit train", "skillgit log"]
    assert [max((e for e in expected if line.startswith(e)), key=len, default=line) for line in lines] == expected, \
        lines
    for line in lines:
        proc = shell.run(line)
        if line.startswith("echo"):
            example = json.loads((shell.cwd / "tasks.jsonl").read_text().splitlines()[-1])
            with (shell.cwd / "tasks.jsonl").open("a") as f:
                for i in range(2, 13):
                    f.write(json.dumps({**example, "id": f"t{i}"}) + "\n")
        if line.startswith("skillgit doctor"):
            assert proc.stdout.count("ok (") == 2, proc.stdout
        if line == "skillgit train --dry-run":
            assert "estimated model calls" in proc.stdout
    log = subprocess.run(["skillgit", "log", "--json"], cwd=shell.cwd, env=shell.env, capture_output=True,
                         text=True)
    assert log.returncode == 0 and json.loads(log.stdout)[0]["verdict"] == "seed"
    assert {r.json.get("model") for r in fake_server.requests} == {"gpt-4.1", "gpt-4.1-mini"}  # init's models


def test_review_learned_edits_and_the_ci_gate_run_as_written(shell, tmp_path):
    """The "Review learned edits" and "Run the gate in CI" blocks in a kept demo project with a bare repository as
    `origin` and no GitHub CLI on PATH: every line exits 0, except `pr --push origin --gh`, which stops before
    pushing anything and says what to install, as the README says."""
    shell.run("skillgit demo --dir kept --steps 2")
    shell.run("cd kept")
    fewer_steps(shell.cwd)
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(shell.cwd, "remote", "add", "origin", str(bare))
    git(shell.cwd, "push", "-q", "origin", "main")
    shell.env["PATH"] = os.pathsep.join(p for p in shell.env["PATH"].split(os.pathsep)
                                        if not (Path(p) / "gh").exists())
    review = bash_lines(section("Review learned edits"))
    assert review[0].startswith("skillgit train --branch review/dates") and review[-1].endswith("--gh")
    for line in review[:-1]:
        proc = shell.run(line)
        if line.startswith("git log main..review/dates"):
            assert proc.stdout.strip(), "the review branch has no learned commit"
    assert "review/dates" in (shell.cwd / "pr.md").read_text()
    pushed = git(bare, "for-each-ref")
    gh = subprocess.run(["bash", "-c", review[-1]], cwd=shell.cwd, env=shell.env, capture_output=True, text=True)
    assert gh.returncode != 0 and "cli.github.com" in gh.stderr and "Traceback" not in gh.stderr, gh.stderr
    assert git(bare, "for-each-ref") == pushed  # it stopped before pushing anything

    gate = bash_lines(section("Run the gate in CI"))
    assert gate == ["skillgit check", "skillgit check --base origin/main --json"]
    for line in gate:  # on main, HEAD is the last accepted step: the gate does not call it a regression
        proc = subprocess.run(["bash", "-c", line], cwd=shell.cwd, env=shell.env, capture_output=True, text=True)
        assert proc.returncode == 0, f"`{line}` exited {proc.returncode}:\n{proc.stderr[-3000:]}"

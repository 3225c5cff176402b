"""What a newcomer meets first, through the real CLI on real repositories: `init` (a quiet `git log` right after it,
which skill file it finds, `--branch` on a kept config), `export` to stdout and into a new folder, the dollar
estimate of `train --dry-run`, and shell completion."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from skillgit.store import refs as R
from tests.conftest import git, run_cli, run_cli_inproc


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, proc.stderr
    return proc


def _quiet_git(root: Path) -> None:
    for args in (["log"], ["log", "-1", "--oneline"], ["show", "-s"]):
        shown = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
        assert shown.stderr == "", shown.stderr  # e.g. "notes ref refs/notes/skillgit-log is invalid"


# ---------------------------------------------------------------------------------------------- init: git log
def test_git_log_is_quiet_right_after_init_and_shows_the_note_after_a_decision(make_repo):
    """notes.displayRef is a glob matching the display notes ref: nothing to warn about before the first decision,
    the short note shown after it. A repository an older skillgit set up (the exact ref name) is moved to it."""
    from skillgit.store import Store
    from tests.test_review_report import _decide

    root = make_repo({"SKILL.md": "# Skill\n"})
    ok(run_cli("init", cwd=root))
    assert git(root, "config", "--get-all", "notes.displayRef") == "refs/notes/skillgit-log*"
    assert git(root, "for-each-ref", "refs/notes") == ""  # no decision yet: no notes ref
    _quiet_git(root)

    _decide(Store.open(root, "SKILL.md"), "# Skill\nUse ISO dates.\n", 1, 1, True, 0.2, 0.6, {"a": 1.0}, {},
            "Use ISO dates.")
    _quiet_git(root)
    log = git(root, "log", "-1")
    assert "Notes (skillgit-log):\n    skillgit: accepted r1/1 · val 0.2000 → 0.6000 (+40.0) · 1 edit(s)" in log
    assert '{"' not in log

    old = make_repo({"SKILL.md": "# Skill\n"}, name="old")
    git(old, "config", "--add", "notes.displayRef", R.NOTES_REF)  # what older versions configured
    git(old, "config", "--add", "notes.displayRef", R.DISPLAY_NOTES_REF)
    ok(run_cli("init", cwd=old))
    assert git(old, "config", "--get-all", "notes.displayRef") == "refs/notes/skillgit-log*"
    _quiet_git(old)


# ---------------------------------------------------------------------------------------------- init: discovery
@pytest.mark.parametrize("path", [".github/copilot-instructions.md", "GEMINI.md", ".cursor/rules/style.mdc",
                                  ".cursor/rules/team/backend/api.mdc", ".cursorrules"])
def test_init_finds_each_agent_instruction_file(make_repo, path):
    root = make_repo({path: "Use ISO dates.\n", "src/app.py": "x = 1\n"})
    proc = ok(run_cli_inproc("init", cwd=root))
    assert yaml.safe_load((root / "skillgit.yaml").read_text())["skill"]["path"] == path, proc.stderr
    assert f"adopted the skill {path}" in proc.stderr
    assert not (root / "SKILL.md").exists()


def test_init_lists_several_instruction_files_and_chooses_none(make_repo):
    files = {".cursorrules": "a\n", ".cursor/rules/team/api.mdc": "b\n", "GEMINI.md": "c\n",
             ".github/copilot-instructions.md": "d\n"}
    root = make_repo(files)
    proc = run_cli_inproc("init", cwd=root)
    assert proc.returncode == 2, proc.stderr
    for path in files:
        assert path in proc.stderr
    assert "--skill" in proc.stderr and not (root / "skillgit.yaml").exists()


# ---------------------------------------------------------------------------------------------- init: --branch
KEPT = """# our settings
skill:
    path: SKILL.md   # the trained file
    allow_front_matter_edits: false
train:
    seed: 3 # kept
"""


def test_init_branch_writes_skill_branch_into_a_kept_config_without_one(make_repo):
    root = make_repo({"SKILL.md": "# Skill\n", "skillgit.yaml": KEPT})
    git(root, "branch", "-m", "main", "master")
    warned = ok(run_cli_inproc("init", cwd=root))  # on master, no --branch: warns, changes nothing
    assert "has no skill.branch, so skillgit trains 'main', not 'master'" in warned.stderr
    assert "skillgit init --branch master" in warned.stderr
    assert (root / "skillgit.yaml").read_text() == KEPT

    fixed = ok(run_cli_inproc("init", "--branch", "master", cwd=root))
    text = (root / "skillgit.yaml").read_text()
    assert text.replace('    branch: "master"  # accepted skills land here (written by skillgit init)\n', "") == KEPT
    assert yaml.safe_load(text)["skill"] == {"path": "SKILL.md", "allow_front_matter_edits": False,
                                             "branch": "master"}
    assert "warning" not in fixed.stderr, fixed.stderr
    assert "set skill.branch: master in the kept skillgit.yaml" in fixed.stderr  # says what it changed
    resolved = yaml.safe_load(ok(run_cli_inproc("config", "show", cwd=root)).stdout)
    assert resolved["skill"]["branch"] == "master" and resolved["train"]["seed"] == 3


def test_init_branch_never_rewrites_a_skill_branch_that_is_set(make_repo):
    kept = "skill:\n  branch: trunk\n"
    root = make_repo({"SKILL.md": "# Skill\n", "skillgit.yaml": kept})
    proc = ok(run_cli_inproc("init", "--branch", "master", cwd=root))
    assert (root / "skillgit.yaml").read_text() == kept
    assert "uses skill.branch 'trunk', not 'master'" in proc.stderr


@pytest.mark.parametrize("kept, expected", [
    ("train:\n  seed: 3\n", "train:\n  seed: 3\n\nskill:\n  branch: \"master\"\n"),
    ("skill: {path: SKILL.md}\n", None),  # flow style: left alone (init warns instead)
])
def test_add_skill_branch_without_a_skill_block(tmp_path, kept, expected):
    from skillgit.store.initialize import add_skill_branch

    config = tmp_path / "skillgit.yaml"
    config.write_text(kept)
    assert add_skill_branch(config, "master") is (expected is not None)
    assert config.read_text() == (expected or kept)


# ---------------------------------------------------------------------------------------------- export
def test_export_to_stdout_and_into_a_new_folder(make_repo, tmp_path):
    old, new = "# Skill\n\nUse ISO dates.\n", "# Skill\n\nUse ISO dates.\nUppercase codes.\n"
    root = make_repo({"SKILL.md": old})
    first = git(root, "rev-parse", "HEAD")
    (root / "SKILL.md").write_text(new)
    git(root, "commit", "-qam", "edit")
    ok(run_cli_inproc("init", cwd=root))
    assert ok(run_cli_inproc("export", first, "-", cwd=root)).stdout == old  # the revision's text, nothing else
    assert ok(run_cli_inproc("export", "main", "-", cwd=root)).stdout == new

    folder = tmp_path / "new" / "deeper"
    proc = ok(run_cli_inproc("export", first, f"{folder}/", cwd=root))  # a trailing / names a folder, made when missing
    assert proc.stdout.strip() == str(folder / "SKILL.md")
    assert (folder / "SKILL.md").read_text() == old
    ok(run_cli_inproc("export", "main", str(folder), cwd=root))  # an existing folder gets the skill's file name
    assert (folder / "SKILL.md").read_text() == new
    file = tmp_path / "other" / "skill-v1.md"
    ok(run_cli_inproc("export", first, str(file), cwd=root))
    assert file.read_text() == old


# ---------------------------------------------------------------------------------------------- train --dry-run
PRICED = """model:
  teacher_backend: openai
  teacher_model: gpt-4.1
  student_backend: anthropic
  student_model: claude-haiku-4-5
prices:
  gpt-4.1: {{prompt: {tp}, completion: {tc}}}
  claude-haiku-4-5: {{prompt: {sp}, completion: {sc}}}
"""


def _dry_run(root: Path, **prices: float) -> dict:
    (root / "skillgit.yaml").write_text(PRICED.format(**prices))
    return json.loads(ok(run_cli_inproc("train", "--dry-run", "--json", cwd=root)).stdout)


def test_train_dry_run_estimates_dollars_from_the_price_table(make_repo):
    tasks = "".join(json.dumps({"id": f"i{n}", "input": f"q{n}", "expected": "a"}) + "\n" for n in range(30))
    root = make_repo({"SKILL.md": "# Skill\n", "tasks.jsonl": tasks})
    # one dollar per million prompt tokens (and nothing else): the estimate is the prompt tokens, in millions
    prompt_only = _dry_run(root, tp=1, tc=0, sp=1, sc=0)
    total = sum(prompt_only["cost_usd"].values())
    assert total == pytest.approx(prompt_only["tokens"]["prompt"] / 1e6, abs=2e-4)
    completion_only = _dry_run(root, tp=0, tc=1, sp=0, sc=1)
    assert sum(completion_only["cost_usd"].values()) == pytest.approx(completion_only["tokens"]["completion"] / 1e6,
                                                                      abs=2e-4)
    teacher_only = _dry_run(root, tp=3, tc=3, sp=0, sc=0)
    assert teacher_only["cost_usd"]["student"] == 0 and teacher_only["cost_usd"]["teacher"] > 0
    # the shipped table prices the default models; the text names the dollars
    (root / "skillgit.yaml").write_text("model:\n  teacher_backend: openai\n  teacher_model: gpt-4.1\n"
                                        "  student_backend: openai\n  student_model: gpt-4.1-mini\n")
    shipped = json.loads(ok(run_cli_inproc("train", "--dry-run", "--json", cwd=root)).stdout)
    assert shipped["cost_usd"]["teacher"] > shipped["cost_usd"]["student"] > 0
    line = next(x for x in shipped["text"].splitlines() if x.startswith("estimated cost"))
    assert f"total ${sum(shipped['cost_usd'].values()):.2f}" in line


# ---------------------------------------------------------------------------------------------- completion
def test_shell_completion_is_on(tmp_path):
    """The installed `skillgit` prints a bash completion script for itself, and the script's protocol completes
    a command name."""
    exe = Path(sys.executable).with_name("skillgit")
    if not exe.exists():
        pytest.skip("the skillgit console script is not installed next to this interpreter")
    # the script `--show-completion` prints, asked for by name: `--show-completion` itself guesses the shell from
    # the parent processes (shellingham), which a test run started outside a shell does not have
    proc = subprocess.run([str(exe)], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "_SKILLGIT_COMPLETE": "source_bash"})
    assert proc.returncode == 0, proc.stderr
    assert "complete -o default -F _skillgit_completion skillgit" in proc.stdout
    assert "_SKILLGIT_COMPLETE=complete_bash" in proc.stdout
    words = subprocess.run([str(exe)], cwd=tmp_path, capture_output=True, text=True,
                           env={**os.environ, "_SKILLGIT_COMPLETE": "complete_bash", "COMP_WORDS": "skillgit tr",
                                "COMP_CWORD": "1"})
    assert words.stdout.split() == ["train"], words.stderr
    assert "--install-completion" in ok(run_cli_inproc("--help", cwd=tmp_path)).stdout

"""The history commands as a user runs them, against real repositories. Repositories are prepared in-process with
the store (fast); the CLI is used for what the user sees: the real CLI in a subprocess (`run_cli`) once per command
as a smoke test, everything else through the same entry point in-process (`run_cli_inproc`)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from skillgit.config import load_config
from skillgit.store import Store
from skillgit.store.initialize import init_project
from tests.conftest import git, run_cli, run_cli_inproc

SEED = "# Skill\n\nBe helpful.\n"


def step(store: Store, text: str, n: int, accept: bool, before: float, after: float, run: str = "r1"):
    cand = store.propose(text, run=run, step=n, subject=f"skill: step {n}", body=f"- append: {text.splitlines()[-1]}",
                         trailers={}, note=[{"kind": "candidate",
                                             "edits": [{"op": "append", "content": text.splitlines()[-1]}]},
                                            {"kind": "reflect", "reflections": ["units were missing"]}])
    return store.decide(cand, accept=accept, reason="better" if accept else "worse", score_before=before,
                        score_after=after)


@pytest.fixture
def trained(make_repo) -> Path:
    root = make_repo({"SKILL.md": SEED})
    store = Store.open(root, "SKILL.md")
    step(store, SEED + "Check units.\n", 1, True, 0.5, 0.6)
    step(store, SEED + "Check units.\nShout.\n", 2, False, 0.6, 0.4)
    return root


def snapshot(root: Path) -> tuple:
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
             if p.is_file() and ".git" not in p.relative_to(root).parts}
    return (git(root, "for-each-ref", "--format=%(refname) %(objectname)"),
            git(root, "status", "--porcelain", "--untracked-files=all"), files)


def assert_one_line_error(proc, code: int, *needles: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code, proc.stderr
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("hint: "), proc.stderr
    for needle in needles:
        assert needle in proc.stderr


# ---------------------------------------------------------------------------------------------- init
def test_init_creates_repo_skill_and_config_and_commits_only_when_asked(tmp_path):
    folder = tmp_path / "fresh"
    proc = run_cli_inproc("init", str(folder), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (folder / ".git").is_dir()
    assert (folder / "SKILL.md").read_text().startswith("---\nname: ")
    cfg = load_config(folder / "skillgit.yaml")
    assert (cfg.skill.path, cfg.skill.branch) == ("SKILL.md", "main")
    assert git(folder, "config", "notes.displayRef") == "refs/notes/skillgit-log*"  # short human notes
    assert git(folder, "config", "--get-all", "notes.rewriteRef").split() == ["refs/notes/skillgit",
                                                                               "refs/notes/skillgit-log"]
    assert "git add SKILL.md skillgit.yaml .gitignore" in proc.stderr
    assert git(folder, "rev-parse", "--verify", "-q", "HEAD", check=False) == ""  # nothing committed

    proc = run_cli_inproc("init", "--commit", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    assert "kept the existing skillgit.yaml" in proc.stderr
    assert git(folder, "ls-tree", "--name-only", "HEAD").split() == [".gitignore", "SKILL.md", "skillgit.yaml"]
    assert git(folder, "status", "--porcelain") == ""
    assert Store.open(folder, "SKILL.md").read_skill() == (folder / "SKILL.md").read_text()
    assert git(folder, "config", "--get-all", "notes.displayRef") == "refs/notes/skillgit-log*"  # not duplicated


def test_init_adopts_an_existing_skill_and_refuses_to_guess(make_repo):
    root = make_repo({"AGENTS.md": "# Agents\n\nRun the tests.\n", "src/x.py": "x = 1\n"})
    proc = run_cli_inproc("init", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert load_config(root / "skillgit.yaml").skill.path == "AGENTS.md"
    assert (root / "AGENTS.md").read_text() == "# Agents\n\nRun the tests.\n"
    assert not (root / "SKILL.md").exists()

    (root / "CLAUDE.md").write_text("c\n")
    report = init_project(root, skill="CLAUDE.md")
    assert not report.config_written and report.todo[0] == "git add CLAUDE.md skillgit.yaml .gitignore"
    assert report.warnings == ["skillgit.yaml trains skill.path 'AGENTS.md'; set it to 'CLAUDE.md' to train this file"]

    both = make_repo({"AGENTS.md": "a\n", "CLAUDE.md": "c\n"}, name="both")
    before = snapshot(both)
    assert_one_line_error(run_cli_inproc("init", cwd=both), 2, "AGENTS.md, CLAUDE.md", "--skill")
    assert snapshot(both) == before
    assert_one_line_error(run_cli_inproc("init", "--skill", "AGENTS.md", "--branch", "skills", "--commit", cwd=both), 2,
                          "--commit needs branch 'skills' checked out", "git switch skills")
    assert snapshot(both) == before


def test_hooks_chain_an_existing_hook_and_block_candidates(make_repo, tmp_path):
    root = make_repo({"SKILL.md": SEED})
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    marker = tmp_path / "local-hook-ran"
    own = root / ".git/hooks/pre-push"
    own.write_text(f"#!/bin/sh\ncat > '{marker}'\nexit 0\n")
    own.chmod(own.stat().st_mode | stat.S_IXUSR)
    original = own.read_text()

    proc = run_cli_inproc("init", "--hooks", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert (root / ".git/hooks/pre-push.local").read_text() == original
    assert "skillgit-hook" in own.read_text() and os.access(own, os.X_OK)
    assert "already installed" in run_cli_inproc("init", "--hooks", cwd=root).stderr
    assert (root / ".git/hooks/pre-push.local").read_text() == original

    cand = Store.open(root, "SKILL.md").propose(SEED + "x\n", run="r1", step=1, subject="s", body="", trailers={},
                                                note=[])
    push = ["git", "push", "-q", str(remote)]
    blocked = subprocess.run([*push, cand.ref], cwd=root, capture_output=True, text=True)
    assert blocked.returncode != 0
    assert "refusing to push skillgit candidate branches" in blocked.stderr
    assert "SKILLGIT_ALLOW_CANDIDATES=1" in blocked.stderr and not marker.exists()
    assert git(remote, "for-each-ref") == ""

    ok = subprocess.run([*push, "main"], cwd=root, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "refs/heads/main" in marker.read_text()  # the chained hook ran with the same stdin
    forced = subprocess.run([*push, cand.ref], cwd=root, capture_output=True, text=True,
                            env={**os.environ, "SKILLGIT_ALLOW_CANDIDATES": "1"})
    assert forced.returncode == 0, forced.stderr
    assert git(remote, "rev-parse", cand.ref) == cand.sha


# ---------------------------------------------------------------------------------------------- reading
def test_log_show_diff_rejected_export(trained, tmp_path):
    log = run_cli("log", cwd=trained)
    assert log.returncode == 0, log.stderr
    rows = [line.split() for line in log.stdout.splitlines()[1:]]
    assert [(r[0], r[1], r[2]) for r in rows] == [("r1/0000", "seed", "0.5000"), ("r1/0001", "accepted", "0.6000"),
                                                  ("r1/0002", "rejected", "0.4000")]
    data = json.loads(run_cli("log", "--json", "-n", "1", "--repo", str(trained), cwd=tmp_path).stdout)
    assert [(e["label"], e["verdict"], e["delta"]) for e in data] == [("r1/0002", "rejected", pytest.approx(-0.2))]

    show = run_cli("show", "1", "--full", cwd=trained)
    assert show.returncode == 0, show.stderr
    assert "+Check units." in show.stdout and "--- a/SKILL.md" in show.stdout
    assert "[decision] accepted: val 0.5000 → 0.6000 (+0.1000) — better" in show.stdout
    assert "units were missing" in show.stdout  # the reflections in the note
    shown = json.loads(run_cli("show", "rejected/r1/2", "--json", cwd=trained).stdout)
    assert "+Shout." in shown["diff"]
    assert {r["kind"] for r in shown["notes"]} == {"candidate", "reflect", "decision"}

    rejected = json.loads(run_cli("rejected", "--json", cwd=trained).stdout)
    assert [(r["label"], r["reason"], r["edits"]) for r in rejected] == [("r1/0002", "worse", ["append: Shout."])]
    assert "+Check units." in run_cli("diff", "r1/0", "r1/1", cwd=trained).stdout
    out = tmp_path / "exported" / "skill.md"
    assert run_cli("export", "r1/2", str(out), cwd=trained).returncode == 0
    assert out.read_text() == SEED + "Check units.\nShout.\n"


def test_revert_via_cli(trained):
    proc = run_cli_inproc("revert", "--steps", "1", "--reason", "undo units", cwd=trained)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == git(trained, "rev-parse", "main")
    assert (trained / "SKILL.md").read_text() == SEED and git(trained, "status", "--porcelain") == ""
    assert "undo units" in git(trained, "log", "-1", "--format=%B")


# ---------------------------------------------------------------------------------------------- bad input
def test_errors_are_one_line_with_a_hint_and_write_nothing(trained, make_repo, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert_one_line_error(run_cli_inproc("log", cwd=plain), 3, "not a git repository", "skillgit init")

    no_skill = make_repo({"README.md": "x\n"}, name="noskill")
    before = snapshot(no_skill)
    assert_one_line_error(run_cli_inproc("log", cwd=no_skill), 3, "'SKILL.md' is not in branch 'main'")
    assert snapshot(no_skill) == before

    before = snapshot(trained)
    assert_one_line_error(run_cli_inproc("show", "r1/9", cwd=trained), 2, "unknown revision 'r1/9'", "skillgit log")
    (trained / "SKILL.md").write_text("my unsaved edit\n")
    before = snapshot(trained)
    assert_one_line_error(run_cli_inproc("revert", "--steps", "1", cwd=trained), 3,
                          f"SKILL.md has uncommitted changes in {trained}", "git stash pop")
    assert snapshot(trained) == before
    git(trained, "checkout", "--", "SKILL.md")

    tip = git(trained, "rev-parse", "main")
    git(trained, "notes", "--ref", "skillgit", "append", "-m", '{"kind": "broken"', tip)
    before = snapshot(trained)
    # a viewer shows what it can and names the bad line's place; it never fails on a note
    show = run_cli_inproc("show", "1", cwd=trained)
    assert show.returncode == 0 and "1 corrupt note line(s) skipped" in show.stdout
    assert f"git notes --ref skillgit show {tip[:12]}" in show.stdout
    log = run_cli_inproc("log", cwd=trained)
    assert log.returncode == 0 and "(corrupt note)" in log.stdout
    assert snapshot(trained) == before
    # a note whose numbers are not numbers does not crash `show` either
    git(trained, "notes", "--ref", "skillgit", "append", "-m",
        '{"v":1,"kind":"decision","verdict":"accepted","delta":"NaN-ish","score_before":"x"}', tip)
    show = run_cli_inproc("show", "1", cwd=trained)
    assert show.returncode == 0 and "Traceback" not in show.stderr


# ---------------------------------------------------------------------------------------------- sharing
def test_push_pull_share_branch_tags_and_merge_notes(trained, tmp_path):
    remote = tmp_path / "shared.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    assert run_cli_inproc("push", str(remote), cwd=trained).returncode == 0
    assert git(remote, "rev-parse", "main") == git(trained, "rev-parse", "main")
    assert git(remote, "tag", "-l") == "rejected/r1/0002"

    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    pulled = run_cli_inproc("pull", str(remote), cwd=other)
    assert pulled.returncode == 0, pulled.stderr
    tip = git(other, "rev-parse", "main")
    assert "better" in git(other, "notes", "--ref", "skillgit", "show", tip)

    # Both sides annotate the same commit; A also trains a new step. Nothing may be lost.
    mine, theirs = Store.open(trained, "SKILL.md"), Store.open(other, "SKILL.md")
    mine.add_note(tip, [{"kind": "comment", "by": "A"}])
    theirs.add_note(tip, [{"kind": "comment", "by": "B"}])
    step(mine, SEED + "Check units.\nCite sources.\n", 3, True, 0.6, 0.7)
    assert run_cli_inproc("push", str(remote), cwd=other).returncode == 0  # B first: only notes are new
    proc = run_cli_inproc("push", str(remote), cwd=trained)  # A must merge B's notes, not overwrite them
    assert proc.returncode == 0, proc.stderr
    proc = run_cli_inproc("pull", str(remote), cwd=other)
    assert proc.returncode == 0, proc.stderr

    for clone in (trained, other):
        by = sorted(r["by"] for r in Store.open(clone, "SKILL.md").read_notes(tip) if r["kind"] == "comment")
        assert by == ["A", "B"]
    assert git(other, "rev-parse", "main") == git(trained, "rev-parse", "main")
    assert (other / "SKILL.md").read_text() == SEED + "Check units.\nCite sources.\n"  # fast-forwarded, checked out
    assert git(other, "status", "--porcelain") == ""
    assert sorted(r["kind"] for r in theirs.read_notes(git(other, "rev-parse", "main"))) == ["candidate", "decision",
                                                                                           "reflect"]


def test_gc_via_cli_survives_git_gc(trained):
    store = Store.open(trained, "SKILL.md")
    for n in (3, 4):
        step(store, SEED + f"Check units.\nno {n}\n", n, False, 0.6, 0.3)
    proc = run_cli_inproc("gc", "--keep", "1", cwd=trained)
    assert proc.returncode == 0 and "folded 2" in proc.stderr
    git(trained, "reflog", "expire", "--expire=now", "--all")
    git(trained, "gc", "-q", "--prune=now")
    listed = json.loads(run_cli_inproc("rejected", "--json", cwd=trained).stdout)
    assert [(r["label"], r["archived"]) for r in listed] == [("r1/0004", False), ("r1/0003", True),
                                                             ("r1/0002", True)]
    assert "no 3" in run_cli_inproc("show", "rejected/r1/3", cwd=trained).stdout


def test_log_answers_from_its_cache_until_any_ref_moves(trained, monkeypatch):
    """`skillgit log` keeps what it read (.git/skillgit/cache/log.json.z) and answers the next `log` in the same
    ref state without reading the history; after a new step, a note written by hand, a deleted tag or with a
    damaged cache file it reads the history again and prints exactly what reading it afresh prints."""
    from skillgit.store import history as H

    reads: list[bool] = []
    real = H.history
    monkeypatch.setattr(H, "history", lambda *a, **k: reads.append(True) or real(*a, **k))
    cache = trained / ".git" / "skillgit" / "cache"

    def log(*args: str) -> tuple[str, bool]:
        reads.clear()
        out = run_cli_inproc("log", *args, cwd=trained)
        assert out.returncode == 0, out.stderr
        return out.stdout, bool(reads)

    def check(*args: str) -> str:
        """The first `log` of a ref state reads the history, the second answers from the cache, the same."""
        first, read_first = log(*args)
        again, read_again = log(*args)
        assert read_first and not read_again and again == first
        for name in ("log.json.z", "log-edits.json.z"):
            (cache / name).unlink(missing_ok=True)
        assert log(*args) == (first, True)  # what reading it afresh prints
        return first

    assert "r1/0002" in check() and '"r1/0002"' in check("--json")
    step(Store.open(trained, "SKILL.md"), SEED + "Check units.\nWhisper.\n", 3, True, 0.6, 0.7)
    assert "r1/0003" in check()
    git(trained, "notes", "--ref", "skillgit", "append", "-m", '{"kind":"decision","run":"r1","step":3,'
        '"verdict":"accepted","score_after":0.65,"reason":"by hand"}', git(trained, "rev-parse", "main"))
    assert check("--json") == log("--json")[0]
    git(trained, "tag", "-d", "rejected/r1/0002")
    assert "r1/0002" not in check()
    (cache / "log.json.z").write_bytes(b"\x78\x9c not zlib")
    out, read = log()
    assert read and log() == (out, False) and "r1/0003" in out  # ignored, then rewritten

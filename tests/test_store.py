"""The git store, in-process against real git: candidates, decisions, worktree consistency, notes, history,
negative buffer, revert, runs, locks and gc."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillgit.errors import ExitCode, GitStateError, SkillgitError
from skillgit.records import StepKind, Verdict
from skillgit.store import Store
from skillgit.store import notes as N
from skillgit.store import refs as R
from skillgit.types import Edit
from tests.conftest import git

SEED = "# Skill\n\nBe helpful.\n"


def snapshot(root: Path) -> dict:
    """Everything a store operation could change by mistake: all refs (notes and tags included), the status of
    the working tree, the index and the skill file's bytes."""
    return {
        "refs": git(root, "for-each-ref", "--format=%(refname) %(objectname)"),
        "status": git(root, "status", "--porcelain", "--untracked-files=all"),
        "index": git(root, "ls-files", "-s"),
        "skill": (root / "SKILL.md").read_bytes() if (root / "SKILL.md").exists() else None,
    }


def propose(store: Store, text: str, step, run: str = "r1", edits: list[dict] | None = None):
    edits = edits if edits is not None else [{"op": "append", "content": text.splitlines()[-1]}]
    body = "\n".join(f"- {e['op']}: {e['content']}" for e in edits)
    return store.propose(text, run=run, step=step, subject=f"skill: step {step}", body=body,
                         trailers={"Skillgit-Kind": "step"}, note=[{"kind": "candidate", "edits": edits}])


def accept(store: Store, text: str, step, run: str = "r1", before: float = 0.5, after: float = 0.6):
    cand = propose(store, text, step, run)
    return store.decide(cand, accept=True, reason="better on val", score_before=before, score_after=after)


def reject(store: Store, text: str, step, run: str = "r1", before: float = 0.6, after: float = 0.4,
           edits: list[dict] | None = None):
    cand = propose(store, text, step, run, edits)
    return store.decide(cand, accept=False, reason="worse on val", score_before=before, score_after=after)


@pytest.fixture
def repo(make_repo) -> Path:
    return make_repo({"SKILL.md": SEED, "README.md": "readme\n"})


@pytest.fixture
def store(repo) -> Store:
    return Store.open(repo, "SKILL.md", "main")


def candidate_refs(root: Path) -> str:
    return git(root, "for-each-ref", "refs/heads/candidates/")


# ---------------------------------------------------------------------------------------------- propose / decide
def test_propose_accept_reject_keep_status_and_leave_no_candidates(repo, store):
    (repo / "README.md").write_text("edited but not committed\n")  # unrelated dirty file
    (repo / "notes.txt").write_text("untracked\n")
    git(repo, "add", "notes.txt")
    (repo / "notes.txt").write_text("untracked, then changed\n")
    before = snapshot(repo)

    cand = propose(store, SEED + "Check units.\n", 1)
    assert git(repo, "rev-parse", cand.ref) == cand.sha
    assert git(repo, "rev-parse", f"{cand.sha}^") == cand.parent == git(repo, "rev-parse", "main")
    after_propose = snapshot(repo)
    assert after_propose["status"] == before["status"] and after_propose["index"] == before["index"]
    assert after_propose["skill"] == before["skill"]

    decision = store.decide(cand, accept=True, reason="better", score_before=0.5, score_after=0.6)
    assert decision.verdict == "accepted" and decision.tip == cand.sha
    assert git(repo, "rev-parse", "main") == cand.sha
    assert (repo / "SKILL.md").read_text() == SEED + "Check units.\n"  # checked out: file follows the branch
    assert snapshot(repo)["status"] == before["status"]  # no phantom staged revert of SKILL.md
    assert git(repo, "diff", "--cached", "--name-only", "--", "SKILL.md") == ""
    assert candidate_refs(repo) == ""

    cand2 = propose(store, SEED + "Check units.\nBe terse.\n", 2)
    d2 = store.decide(cand2, accept=False, reason="worse", score_before=0.6, score_after=0.55)
    assert d2.tag == "rejected/r1/0002" and git(repo, "rev-parse", "main") == cand.sha
    assert git(repo, "rev-parse", "rejected/r1/0002^{commit}") == cand2.sha
    message = git(repo, "tag", "-l", "--format=%(contents)", "rejected/r1/0002")
    assert "worse" in message and "0.6000 -> 0.5500 (-0.0500)" in message and "append: Be terse." in message
    assert candidate_refs(repo) == ""
    assert snapshot(repo)["status"] == before["status"]
    assert (repo / "SKILL.md").read_text() == SEED + "Check units.\n"
    assert (repo / "README.md").read_text() == "edited but not committed\n"

    decision_note = N.of_kind(store.read_notes(cand2.sha), "decision")[0]
    assert decision_note["verdict"] == "rejected" and decision_note["delta"] == pytest.approx(-0.05)
    assert N.of_kind(store.read_notes(cand2.sha), "candidate")[0]["edits"][0]["content"] == "Be terse."


def test_propose_and_decide_never_touch_a_worktree_without_the_branch(make_repo):
    root = make_repo({"skills/demo/SKILL.md": SEED, "src/app.py": "print(1)\n", "README.md": "r\n"})
    git(root, "switch", "-q", "-c", "work")  # the skill branch (main) is not checked out anywhere
    (root / "skills/demo/SKILL.md").write_text("my own local edit\n")
    git(root, "add", "skills/demo/SKILL.md")
    (root / "README.md").write_text("dirty\n")
    skill = root / "skills/demo/SKILL.md"
    before = git(root, "status", "--porcelain"), git(root, "ls-files", "-s"), skill.read_text()
    store = Store.open(root, "skills/demo/SKILL.md", "main")
    old_tip = store.tip()

    cand = propose(store, SEED + "Subfolder rule.\n", 1)
    store.decide(cand, accept=True, reason="better", score_before=0.1, score_after=0.2)

    assert (git(root, "status", "--porcelain"), git(root, "ls-files", "-s"), skill.read_text()) == before
    # Only the skill's blob changed in the new tree; every other file is the same object.
    changed = git(root, "diff-tree", "-r", "--name-only", "--no-commit-id", old_tip, "main")
    assert changed == "skills/demo/SKILL.md"
    assert store.read_skill() == SEED + "Subfolder rule.\n"


def test_decide_fails_with_nothing_changed_when_the_branch_moved(repo, store):
    cand_a = propose(store, SEED + "A\n", 1)
    cand_b = store.propose(SEED + "B\n", run="r2", step=1, subject="b", body="- append: B", trailers={},
                           note=[{"kind": "candidate", "edits": []}])
    git(repo, "commit", "-q", "--allow-empty", "-m", "someone else")  # main moves underneath
    before = snapshot(repo)
    for cand, accept_it in ((cand_a, True), (cand_b, False)):
        with pytest.raises(GitStateError) as err:
            store.decide(cand, accept=accept_it, reason="x", score_before=0.1, score_after=0.2)
        assert "skill branch 'main' moved while the step worked" in err.value.message
        assert err.value.hint and err.value.code == ExitCode.GIT
        assert snapshot(repo) == before  # refs (branch, candidates, notes, tags), status, index, file


@pytest.mark.parametrize("accept_it", [True, False])
def test_decide_cas_covers_the_race_after_the_check(repo, store, monkeypatch, accept_it):
    """The branch moves after decide's own check but before its transaction: the CAS must catch it."""
    cand = propose(store, SEED + "A\n", 1)
    real = store.repo.build_notes

    def build_then_race(*args, **kwargs):
        result = real(*args, **kwargs)
        git(repo, "commit", "-q", "--allow-empty", "-m", "race")
        return result

    monkeypatch.setattr(store.repo, "build_notes", build_then_race)
    refs_before_race = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/notes/",
                           "refs/tags/", "refs/heads/candidates/")
    with pytest.raises(GitStateError, match="moved while the step worked"):
        store.decide(cand, accept=accept_it, reason="x", score_before=0.1, score_after=0.2)
    assert git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/notes/", "refs/tags/",
               "refs/heads/candidates/") == refs_before_race
    assert git(repo, "log", "-1", "--format=%s", "main") == "race"


def test_leftover_candidate_can_be_decided_and_reproposed(repo, store):
    cand = propose(store, SEED + "A\n", 3)
    again = Store.open(repo, "SKILL.md", "main")  # a new process after a crash
    left = again.candidate("r1", 3)
    assert left == cand
    assert propose(again, SEED + "A\n", 3) == cand  # same content on the same parent: the same candidate
    with pytest.raises(GitStateError, match="already exists"):
        propose(again, SEED + "other\n", 3)
    again.decide(left, accept=True, reason="ok", score_before=0.1, score_after=0.3)
    assert again.tip() == cand.sha and again.pending() == []
    with pytest.raises(GitStateError, match="not pending"):
        again.decide(left, accept=False, reason="twice", score_before=0.1, score_after=0.3)


def test_step_record_and_discard(repo, store):
    assert store.step_record("r1", 1) is None
    accept(store, SEED + "A\n", 1)
    reject(store, SEED + "A\nB\n", 2)
    rec = store.step_record("r1", 1)
    assert rec is not None and rec.verdict is Verdict.ACCEPTED and rec.kind is StepKind.STEP
    candidate = store.step_notes(rec.sha).candidate
    assert candidate is not None and candidate.edits == (Edit("append", "A"),)
    assert rec.delta == pytest.approx(0.1) and rec.sha == git(repo, "rev-parse", "main")
    assert store.step_record("r1", 2).verdict is Verdict.REJECTED
    assert store.step_record("r1", 12) is None  # "Step: 1" must not match step 12 or vice versa
    named = propose(store, SEED + "A\nslow\n", "e1-slow-update")
    assert store.discard_candidate("r1", "e1-slow-update") is True
    assert store.discard_candidate("r1", "e1-slow-update") is False
    assert git(repo, "cat-file", "-t", named.sha) == "commit" and candidate_refs(repo) == ""


# ---------------------------------------------------------------------------------------------- worktrees
def test_dirty_skill_file_refuses_accept_and_changes_nothing(repo, store):
    for staged in (False, True):
        cand = propose(store, SEED + f"rule {staged}\n", 1 if not staged else 2)
        (repo / "SKILL.md").write_text(SEED + "my unsaved work\n")
        if staged:
            git(repo, "add", "SKILL.md")
            (repo / "SKILL.md").write_text(SEED)  # staged change, working file equal to HEAD
        before = snapshot(repo)
        with pytest.raises(GitStateError) as err:
            store.decide(cand, accept=True, reason="x", score_before=0.1, score_after=0.2)
        assert err.value.message == f"SKILL.md has uncommitted changes in {repo}"
        assert "git -C" in err.value.hint and "stash" in err.value.hint and "commit" not in err.value.hint
        assert snapshot(repo) == before
        git(repo, "reset", "-q", "--hard")
    # Rejecting does not touch the worktree, so a dirty skill file does not block it.
    (repo / "SKILL.md").write_text("dirty again\n")
    store.decide(store.candidate("r1", 1), accept=False, reason="x", score_before=0.2, score_after=0.1)
    assert (repo / "SKILL.md").read_text() == "dirty again\n"


def test_accept_updates_a_linked_worktree(repo, store, tmp_path):
    git(repo, "switch", "-q", "-c", "work")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked), "main")
    (linked / "other.txt").write_text("untracked in the linked worktree\n")
    status_linked = git(linked, "status", "--porcelain")
    status_main = git(repo, "status", "--porcelain")

    accept(store, SEED + "From a linked worktree.\n", 1)
    assert (linked / "SKILL.md").read_text() == SEED + "From a linked worktree.\n"
    assert git(linked, "status", "--porcelain") == status_linked
    assert git(repo, "status", "--porcelain") == status_main
    assert (repo / "SKILL.md").read_text() == SEED  # the other worktree is on `work`

    (linked / "SKILL.md").write_text("dirty in linked\n")
    cand = propose(store, SEED + "second\n", 2)
    with pytest.raises(GitStateError, match=f"uncommitted changes in {linked}"):
        store.decide(cand, accept=True, reason="x", score_before=0.1, score_after=0.2)


# ---------------------------------------------------------------------------------------------- reading
def test_blob_id_read_skill_and_resolve(repo, store):
    proc = subprocess.run(["git", "hash-object", "--stdin"], input="héllo\n".encode(), capture_output=True, cwd=repo)
    assert store.blob_id("héllo\n") == proc.stdout.decode().strip()
    assert git(repo, "cat-file", "-t", proc.stdout.decode().strip(), check=False) == ""  # not written

    seed = store.tip()
    a = accept(store, SEED + "A\n", 1)
    r = reject(store, SEED + "A\nB\n", 2)
    named = reject(store, SEED + "A\nslow\n", "e1-slow-update")
    b = accept(store, SEED + "A\nC\n", 1, run="r2")
    assert store.resolve("r1/1") == store.resolve("r1/0001") == a.commit
    assert store.resolve("rejected/r1/2") == store.resolve("r1/2") == r.commit
    assert store.resolve("r1/e1-slow-update") == named.commit
    assert store.resolve("1") == b.commit  # bare N: the newest run (r2)
    assert store.resolve("r1/0") == seed and store.resolve("r2/0") == a.commit  # seeds
    assert store.resolve("main") == store.resolve("HEAD") == b.commit
    assert store.resolve(seed[:10]) == seed
    assert store.read_skill("r1/1") == SEED + "A\n" and store.read_skill() == SEED + "A\nC\n"
    for bad in ("nope", "r1/7", "rejected/r1/1", "99"):
        with pytest.raises(GitStateError) as err:
            store.resolve(bad)
        assert err.value.message == f"unknown revision '{bad}'" and "skillgit log" in err.value.hint


def test_open_errors_have_hints(tmp_path, make_repo):
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(GitStateError, match="not a git repository") as err:
        Store.open(plain, "SKILL.md")
    assert "skillgit init" in err.value.hint
    root = make_repo({"README.md": "x\n"})
    with pytest.raises(GitStateError, match="skill file 'SKILL.md' is not in branch 'main'"):
        Store.open(root, "SKILL.md")
    (root / "SKILL.md").write_text("uncommitted\n")
    with pytest.raises(GitStateError) as err:
        Store.open(root, "SKILL.md")
    assert "git add SKILL.md" in err.value.hint
    with pytest.raises(GitStateError, match="skill branch 'trunk' does not exist") as err:
        Store.open(root, "README.md", "trunk")
    assert "main" in err.value.hint
    with pytest.raises(GitStateError, match="invalid skill path"):
        Store.open(root, "../x.md")


# ---------------------------------------------------------------------------------------------- notes
def test_notes_roundtrip_and_corrupt_note(repo, store):
    tip = store.tip()
    before = snapshot(repo)
    store.add_note(tip, [{"kind": "custom", "value": 1, "future_key": [1, 2]}])
    assert {k: v for k, v in snapshot(repo).items() if k != "refs"} == {k: v for k, v in before.items() if k != "refs"}
    store.add_note(tip, [{"kind": "other"}])
    assert [r["kind"] for r in store.read_notes(tip)] == ["custom", "other"]
    assert all(r["v"] == 1 for r in store.read_notes(tip))
    with pytest.raises(ValueError):
        store.add_note(tip, [{"no": "kind"}])

    cand = accept(store, SEED + "A\n", 1)
    git(repo, "notes", "--ref", "skillgit", "append", "-m", "{not json", cand.commit)
    with pytest.raises(GitStateError) as err:
        store.read_notes(cand.commit)
    assert cand.commit[:12] in err.value.message
    assert err.value.hint == f"repair or remove that line: git notes --ref skillgit edit {cand.commit}"
    entries = store.history()  # the log degrades instead of failing
    assert [e.note for e in entries if e.sha == cand.commit and e.verdict == "accepted"] == ["corrupt"]
    assert [e.score for e in entries if e.verdict == "accepted"] == [0.6]  # the valid lines still count


def test_note_codec():
    line = N.encode_record({"kind": "x", "b": 2, "a": float("nan")})
    assert line == '{"a":null,"b":2,"kind":"x","v":1}'
    text = N.encode([{"kind": "x"}, {"kind": "y", "z": "é"}]) + "\n" + '{"kind":"z","v":1,"new":true}\n'
    assert [r["kind"] for r in N.decode(text, "abc")] == ["x", "y", "z"]
    assert N.decode_lenient('{"kind":"x","v":1}\nnope\n{"v":1}\n') == ([{"kind": "x", "v": 1}], 2)
    # Line separators other than "\n" stay raw inside JSON strings: a record holding them is one record.
    odd = N.encode([{"kind": "x", "text": "a\u2028b\x85c\x0cd\u2029e"}])
    assert N.decode(odd) == N.decode_lenient(odd)[0] == N.decode_selected(odd, ["x"])[0]
    assert N.decode_lenient(odd) == ([{"kind": "x", "text": "a\u2028b\x85c\x0cd\u2029e", "v": 1}], 0)
    subject, body, trailers = N.parse_message(N.format_message("s\nx", "- a: b\n\nmore", {"Skillgit-Run": "r 1"}))
    assert (subject, body, trailers) == ("s x", "- a: b\n\nmore", {"Skillgit-Run": "r 1"})
    assert R.parse_step_spec("main") is None and R.parse_step_spec("r1/3") == (False, "r1", 3)
    assert R.parse_step_spec("rejected/r1/e1-slow") == (True, "r1", "e1-slow")
    for bad in ("", "a/b", "-x", "a..b", "x.lock", "a b"):
        with pytest.raises(SkillgitError):
            R.validate_run(bad)


# ---------------------------------------------------------------------------------------------- history
def test_history_order_scores_and_seeds(repo, store):
    accept(store, SEED + "A\n", 1, before=0.5, after=0.6)
    reject(store, SEED + "A\nB\n", 2, before=0.6, after=0.5)
    reject(store, SEED + "A\nC\n", 3, before=0.6, after=0.55)
    accept(store, SEED + "A\nD\n", 4, before=0.6, after=0.7)
    accept(store, SEED + "A\nD\nE\n", 1, run="a-second-run", before=0.7, after=0.8)  # name sorts before r1
    store.revert(steps=1, reason="oops")
    entries = store.history()
    assert [(e.run, e.step, e.verdict) for e in entries] == [
        ("r1", 0, "seed"), ("r1", 1, "accepted"), ("r1", 2, "rejected"), ("r1", 3, "rejected"),
        ("r1", 4, "accepted"), ("a-second-run", 0, "seed"), ("a-second-run", 1, "accepted"), ("", 0, "revert")]
    assert [e.score for e in entries[:5]] == [0.5, 0.6, 0.5, 0.55, 0.7]
    assert entries[2].delta == pytest.approx(-0.1) and entries[2].reason == "worse on val"
    assert entries[2].edits == ("append: B",) and entries[-1].reason == "oops"
    assert [e.step for e in store.history("r1")] == [0, 1, 2, 3, 4]


def test_negative_buffer_newest_first_with_limit(repo, store):
    accept(store, SEED + "A\n", 1)
    reject(store, SEED + "A\nB\n", 2, after=0.5, edits=[{"op": "append", "content": "B"}])
    reject(store, SEED + "A\nC\nD\n", 3, after=0.3, edits=[{"op": "append", "content": "C"},
                                                            {"op": "append", "content": "D"}])
    buf = store.negative_buffer(10)
    assert [(b.step, b.edit.content) for b in buf] == [(3, "C"), (3, "D"), (2, "B")]
    assert buf[0].delta == pytest.approx(-0.3) and buf[0].reason == "worse on val" and buf[0].run == "r1"
    assert [b.edit.content for b in store.negative_buffer(2)] == ["C", "D"]
    assert store.negative_buffer(0) == []


# ---------------------------------------------------------------------------------------------- revert
def test_revert_all_three_forms_round_trip(make_repo):
    base = "# Skill\n\nline1\nline2\nline3\nline4\nline5\n"
    root = make_repo({"SKILL.md": base})
    store = Store.open(root, "SKILL.md")
    with_a = base.replace("line1\n", "line1\nA\n")
    texts = [base, with_a, with_a + "B\n", with_a + "B\nC\n"]
    for i, text in enumerate(texts[1:], 1):
        accept(store, text, i)
    (root / "untracked.txt").write_text("x\n")
    before = snapshot(root)["status"]

    store.revert(rev="r1/3", reason="tip")  # the tip: its parent's text
    assert store.read_skill() == texts[2] == (root / "SKILL.md").read_text()
    store.revert(to="r1/3", reason="back")
    assert store.read_skill() == texts[3]
    store.revert(rev="r1/1", reason="drop A only")  # not the tip: a 3-way revert of just that step
    assert store.read_skill() == base + "B\nC\n"
    store.revert(steps=2, reason="two back")  # before the last two accepted steps (r1/2, r1/3)
    assert store.read_skill() == texts[1] == (root / "SKILL.md").read_text()
    assert snapshot(root)["status"] == before
    reverts = [e for e in store.history() if e.verdict == "revert"]
    assert [e.reason for e in reverts] == ["tip", "back", "drop A only", "two back"]
    assert N.of_kind(store.read_notes(store.tip()), "revert")[0]["mode"] == "steps"
    assert git(root, "rev-list", "--count", "main") == "8"  # history only grows

    with pytest.raises(SkillgitError, match="nothing to revert"):
        store.revert(to="r1/1", reason="same")
    with pytest.raises(SkillgitError, match="exactly one"):
        store.revert(rev="r1/1", steps=1, reason="x")


def test_revert_conflict_and_dirty_refusal(repo, store):
    accept(store, SEED + "A\n", 1)
    accept(store, SEED + "A changed\n", 2)  # touches the line step 1 added
    tip = store.tip()
    with pytest.raises(GitStateError) as err:
        store.revert(rev="r1/1", reason="x")
    assert "conflicts" in err.value.message and "--to" in err.value.hint
    (repo / "SKILL.md").write_text("dirty\n")
    before = snapshot(repo)
    with pytest.raises(GitStateError, match="uncommitted changes"):
        store.revert(steps=1, reason="x")
    assert snapshot(repo) == before and store.tip() == tip
    reject(store, SEED + "X\n", 3)
    with pytest.raises(GitStateError, match="not on branch"):
        store.revert(rev="rejected/r1/3", reason="x")


# ---------------------------------------------------------------------------------------------- runs / lock
def test_runs_save_load_list(repo, store):
    assert store.list_runs() == [] and store.load_run("r1") is None
    first = store.save_run("r1", {"progress.json": "{}", "sub/meta.md": "m"}, "start")
    second = store.save_run("r1", {"progress.json": '{"step": 2}'}, "step 2")
    store.save_run("r2", {"progress.json": "{}"}, "start")
    assert git(repo, "rev-parse", f"{second}^") == first
    assert store.load_run("r1") == {"progress.json": '{"step": 2}'}
    assert store.list_runs() == ["r2", "r1"]
    assert snapshot(repo)["status"] == ""
    with pytest.raises(SkillgitError, match="invalid run id"):
        store.save_run("bad/run", {}, "x")


def test_lock_is_exclusive_and_stale_locks_are_taken_over(repo, store):
    with store.lock("main") as path:
        assert path == store.git_dir / "skillgit" / "locks" / "main.lock" and path.exists()
        with pytest.raises(SkillgitError) as err:
            with store.lock("main"):
                pass
        assert err.value.code == ExitCode.LOCKED and str(os.getpid()) in err.value.hint
    assert not path.exists()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    path.write_text('{"pid": %d, "host": "%s", "time": "then", "token": "old"}' % (dead.pid, os.uname().nodename))
    with store.lock("feature/x"):  # names with '/' are fine
        pass
    with store.lock("main"):
        assert '"token": "old"' not in path.read_text()
    assert not path.exists()


# ---------------------------------------------------------------------------------------------- gc
def test_gc_folds_tags_and_keeps_commits_and_notes_after_prune(repo, store):
    accept(store, SEED + "A\n", 1)
    rejected = [reject(store, SEED + f"A\nR{i}\n", i, after=0.5 - i / 100,
                       edits=[{"op": "append", "content": f"R{i}"}]) for i in range(2, 7)]
    # A scratch notes ref left by a killed process (dead pid) is cleaned up by gc; one of a live process is not.
    git(repo, "update-ref", "refs/notes/skillgit-tmp/999999999-dead", store.tip())
    git(repo, "update-ref", f"refs/notes/skillgit-tmp/{os.getpid()}-live", store.tip())
    report = store.gc(keep=2)
    assert (report.folded, report.kept) == (3, 2)
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/notes/skillgit-tmp/") == \
        f"refs/notes/skillgit-tmp/{os.getpid()}-live"
    assert git(repo, "tag", "-l", "rejected/*").split() == ["rejected/r1/0005", "rejected/r1/0006"]
    assert not (repo / ".git/refs/tags/rejected").exists() or not any((repo / ".git/refs/tags/rejected").rglob("*0*"))
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    for d in rejected:
        assert git(repo, "cat-file", "-t", d.commit) == "commit"
        assert N.of_kind(store.read_notes(d.commit), "candidate")
    assert [b.edit.content for b in store.negative_buffer(10)] == ["R6", "R5", "R4", "R3", "R2"]
    listed = [(e.step, e.archived) for e in store.history() if e.verdict == "rejected"]
    assert listed == [(2, True), (3, True), (4, True), (5, False), (6, False)]
    assert store.resolve("rejected/r1/3") == rejected[1].commit
    assert store.step_record("r1", 2).verdict is Verdict.REJECTED
    assert git(repo, "status", "--porcelain") == ""
    assert store.gc(keep=0).folded == 2 and git(repo, "tag", "-l") == ""
    assert len(store.negative_buffer(10)) == 5


# ---------------------------------------------------------------------------------------------- sharing / identity
def test_diverged_branches_are_never_overwritten(repo, store, tmp_path):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    store.push(str(remote))
    other_root = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other_root))
    other = Store.open(other_root, "SKILL.md")
    accept(other, SEED + "theirs\n", 1, run="b")
    other.push(str(remote))
    accept(store, SEED + "mine\n", 1, run="a")
    remote_before = git(remote, "for-each-ref", "--format=%(refname) %(objectname)")

    with pytest.raises(GitStateError) as err:
        store.push(str(remote))
    assert "refused" in err.value.message and "skillgit pull" in err.value.hint
    assert git(remote, "for-each-ref", "--format=%(refname) %(objectname)") == remote_before  # atomic: nothing

    local_before = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/", "refs/tags/",
                       "refs/notes/skillgit", "refs/skillgit/runs/")
    with pytest.raises(GitStateError, match="has diverged"):
        store.pull(str(remote))
    assert git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/", "refs/tags/",
               "refs/notes/skillgit", "refs/skillgit/runs/") == local_before
    assert (repo / "SKILL.md").read_text() == SEED + "mine\n"


def test_missing_identity_fails_with_a_hint_and_changes_nothing(repo, store, monkeypatch):
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(name)
    git(repo, "config", "user.useConfigOnly", "true")
    before = snapshot(repo)
    with pytest.raises(GitStateError) as err:
        propose(store, SEED + "x\n", 1)
    assert "git config user.name" in err.value.hint
    assert snapshot(repo) == before


# ---------------------------------------------------------------------------------------------- git plumbing
def _fast_import_notes(root: Path, commits: int, ref: str) -> list[str]:
    """`commits` commits on refs/heads/many, each with a note under `ref`, in one `git fast-import` (which fans a
    notes tree of this size out into 2-hex-digit folders, as `git notes` does). Returns the commit ids."""
    stream = []
    for i in range(1, commits + 1):
        msg = f"c{i}\n"
        stream.append(f"commit refs/heads/many\nmark :{i}\ncommitter t <t@x> {i} +0000\ndata {len(msg)}\n{msg}\n")
    stream.append("commit " + ref + "\ncommitter t <t@x> 0 +0000\ndata 6\nnotes\n")
    for i in range(1, commits + 1):
        text = f"note {i}\n"
        stream.append(f"N inline :{i}\ndata {len(text)}\n{text}")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input="".join(stream) + "\n", text=True,
                   check=True, capture_output=True)
    return git(root, "rev-list", "--reverse", "refs/heads/many").split()


@pytest.mark.parametrize("fanned_out", [False, True])
def test_notes_built_as_trees_equal_git_notes_append(repo, store, fanned_out):
    # build_notes computes the notes tree itself (no scratch ref, no `git notes append` per note): the notes it
    # writes must be byte for byte what `git notes append` would write, in a flat and in a fanned-out tree.
    theirs, ours = "refs/notes/theirs", "refs/notes/ours"
    if fanned_out:
        commits = _fast_import_notes(repo, 300, theirs)
        assert any(line.split()[1] == "tree" for line in git(repo, "ls-tree", theirs).splitlines())
        git(repo, "update-ref", ours, theirs)
        targets = commits[::29]
    else:
        targets = [git(repo, "rev-parse", "HEAD")] * 3 + [git(repo, "rev-parse", "HEAD:SKILL.md")]
    texts = ["{\"kind\": \"decision\"}\n", "  \n\nline one  \n\n\n\n line two\t\n\n", "", "no newline"]
    for i, obj in enumerate(targets):
        text = texts[i % len(texts)]
        subprocess.run(["git", "notes", "--ref", theirs, "append", "-F", "-", obj], cwd=repo, input=text,
                       text=True, check=True, capture_output=True)
        old, new = store.repo.build_notes({obj: text}, ours)
        assert old == store.repo.ref(ours) and new is not None
        git(repo, "update-ref", ours, new)
    for obj in set(targets) | ({commits[1], commits[-1]} if fanned_out else set()):
        assert git(repo, "notes", "--ref", ours, "show", obj) == git(repo, "notes", "--ref", theirs, "show", obj)
    assert git(repo, "notes", "--ref", ours, "list") == git(repo, "notes", "--ref", theirs, "list")
    assert git(repo, "for-each-ref", "refs/notes/").count("\n") == 1  # no scratch ref left behind
    if fanned_out:  # the fan-out is kept: the changed notes went into their folders
        assert git(repo, "ls-tree", "--name-only", ours) == git(repo, "ls-tree", "--name-only", theirs)


def test_reads_go_through_one_reader_that_survives_its_death_and_sees_new_refs(repo, store):
    head = git(repo, "rev-parse", "HEAD")
    assert store.repo.ref("refs/heads/main") == head
    assert store.repo.blob_at(head, "SKILL.md") == SEED.encode()
    assert store.repo.ref("refs/heads/nope") is None and store.repo.blob_at(head, "nope.md") is None
    # another process moves the branch and writes objects: the long-lived reader sees both at once
    (repo / "SKILL.md").write_text(SEED + "more\n")
    git(repo, "commit", "-qam", "second")
    new = git(repo, "rev-parse", "HEAD")
    assert store.repo.ref("refs/heads/main") == new != head
    assert store.repo.commit_message(new) == "second" and store.repo.parents(new) == [head]
    assert store.repo.blob_at(new, "SKILL.md") == (SEED + "more\n").encode()
    entry = store.repo.tree_entry(new, "SKILL.md")
    assert entry is not None and (entry.mode, entry.type, entry.name) == ("100644", "blob", "SKILL.md")
    assert [e.name for e in store.repo.ls_tree(new)] == git(repo, "ls-tree", "--name-only", new).split()
    # the reader process dies (killed, OOM): the next read starts a new one and answers
    proc = store.repo._reader._proc
    assert proc is not None
    proc.kill()
    proc.wait()
    assert store.repo.ref("refs/heads/main") == new
    assert store.repo._reader._proc is not proc
    store.repo.close()
    assert store.repo.cat(f"{new}:SKILL.md") == (SEED + "more\n").encode()

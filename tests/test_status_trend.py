"""`skillgit status` draws its val trend from the run's own commits, tags and notes (issue 22 item 4: `status` read the
whole history and parsed every note, so it grew with the history). `history.run_scores` must give exactly what the
whole history gives for the run, read only the run's notes, and hand back to the whole history when the skill
branch does not hold the run's accepted steps."""

from __future__ import annotations

import json

import pytest

from skillgit.store import Store, read
from skillgit.store import history as H
from tests.conftest import git, run_cli_inproc
from tests.test_cli_history import SEED, step


def _full(store: Store, run: str) -> list[float | None]:
    return [e.score for e in store.history(run) if e.verdict in ("seed", "accepted")]


@pytest.fixture
def two_runs(make_repo):
    """r1: its first decision a rejection (the seed's score is its baseline), accepted and rejected steps after;
    r2 interleaved with r1 on the same branch."""
    root = make_repo({"SKILL.md": SEED})
    store = Store.open(root, "SKILL.md")
    text = SEED
    plan = [("r1", 1, False, 0.30, 0.20), ("r1", 2, True, 0.30, 0.40), ("r2", 1, True, 0.40, 0.45),
            ("r1", 3, False, 0.45, 0.41), ("r1", 4, True, 0.45, 0.55), ("r2", 2, False, 0.55, 0.50),
            ("r2", 3, True, 0.55, 0.70)]
    for run, n, accept, before, after in plan:
        candidate = text + f"Rule {run}.{n}.\n"
        step(store, candidate, n, accept, before, after, run=run)
        if accept:
            text = candidate
    return root


def test_the_runs_own_reads_give_the_whole_historys_trend(two_runs):
    store = Store.open(two_runs, "SKILL.md")
    assert _full(store, "r1") == [0.30, 0.40, 0.55]
    assert H.run_scores(store, "r1", 2) == _full(store, "r1")
    assert H.run_scores(store, "r2", 2) == _full(store, "r2") == [0.40, 0.45, 0.70]
    # after gc folded the rejected tags into the archive (r1's first decision among them)
    store.gc(keep=0)
    store = Store.open(two_runs, "SKILL.md")
    assert H.run_scores(store, "r1", 2) == _full(store, "r1") == [0.30, 0.40, 0.55]


def test_a_run_whose_accepted_steps_are_not_on_the_branch_reads_the_whole_history(two_runs):
    store = Store.open(two_runs, "SKILL.md")
    assert H.run_scores(store, "r1", 3) is None  # the run's progress counts a step the branch does not hold


def test_the_trend_parses_only_the_runs_notes(make_repo, monkeypatch):
    root = make_repo({"SKILL.md": SEED})
    store = Store.open(root, "SKILL.md")
    text = SEED
    for n in range(1, 25):  # a long earlier run
        step(store, text + f"Old {n}.\n", n, n % 4 == 0, 0.3, 0.35 if n % 4 == 0 else 0.2, run="old")
        text = text + f"Old {n}.\n" if n % 4 == 0 else text
    step(store, text + "New.\n", 1, True, 0.35, 0.5, run="new")
    decoded: list[str | None] = []
    real = H._decode
    monkeypatch.setattr(H, "_decode", lambda note, kinds: decoded.append(note) or real(note, kinds))
    assert H.run_scores(store, "new", 1) == [0.35, 0.5]
    assert 1 <= len(decoded) <= 2  # the accepted step's note (and the first decision's: the same one)
    decoded.clear()
    _full(store, "new")
    assert len(decoded) >= 25  # what `status` parsed before: every note of the history


def test_status_shows_the_same_trend(two_runs, monkeypatch):
    store = Store.open(two_runs, "SKILL.md")
    store.save_run("r1", {"progress.json": '{"run": "r1", "status": "finished", "accepted": 2, "rejected": 2}'},
                   "progress")
    progress = read.run_progress(store, "r1")
    assert read.val_trend(store, progress) == _full(store, "r1")
    shown = run_cli_inproc("status", "--json", "--run", "r1", cwd=two_runs)
    assert shown.returncode == 0, shown.stderr
    monkeypatch.setattr(H, "run_scores", lambda *a: None)  # the whole-history path draws the same line
    (two_runs / ".git" / "skillgit" / "cache" / "status.json.z").unlink()  # (not what the last status kept)
    again = run_cli_inproc("status", "--json", "--run", "r1", cwd=two_runs)
    assert again.stdout == shown.stdout and '"val_trend"' in shown.stdout


def test_status_keeps_its_trend_until_a_ref_moves(two_runs, monkeypatch):
    """`status` keeps the trend it read (.git/skillgit/cache/status.json.z): the next `status` in the same ref
    state reads no commit, tag or note of the run; a new step of the run draws the new line, as a fresh read does."""
    store = Store.open(two_runs, "SKILL.md")
    store.save_run("r1", {"progress.json": '{"run": "r1", "status": "finished", "accepted": 2, "rejected": 2}'},
                   "progress")
    reads: list[str] = []
    real = H.run_scores
    monkeypatch.setattr(H, "run_scores", lambda *a: reads.append(a[1]) or real(*a))

    def trend() -> list:
        out = run_cli_inproc("status", "--json", "--run", "r1", cwd=two_runs)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["val_trend"]

    first = trend()
    assert reads == ["r1"] and trend() == first and reads == ["r1"]  # the second status: from the cache
    step(store, SEED + "Rule r1.1.\nRule r1.2.\nRule r2.1.\nRule r1.4.\nRule r2.3.\nRule r1.5.\n", 5, True,
         0.70, 0.80, run="r1")
    store.save_run("r1", {"progress.json": '{"run": "r1", "status": "finished", "accepted": 3, "rejected": 2}'},
                   "progress")
    moved = trend()
    assert reads == ["r1", "r1"] and moved[:-1] == first and moved != first
    (two_runs / ".git" / "skillgit" / "cache" / "status.json.z").write_bytes(b"damaged")
    assert trend() == moved and len(reads) == 3


def test_the_history_scan_reads_only_the_commits_added_since_the_last_one(make_repo, monkeypatch):
    """The loop scans the history at every step (the negative buffer): a store reads only the branch's new commits
    (before: the whole first-parent chain and every step commit's message, every step), and gives what a fresh
    store reads — also after the branch was reset behind what it had read."""
    root = make_repo({"SKILL.md": SEED})
    store = Store.open(root, "SKILL.md")
    text = SEED
    for n in range(1, 9):
        text += f"Rule {n}.\n"
        step(store, text, n, n % 3 != 0, 0.3 + n / 100, 0.31 + n / 100)
    assert H.scan(store) == H.scan(Store.open(root, "SKILL.md"))
    read_rows: list[int] = []
    real = store.repo.grep_first_parent
    monkeypatch.setattr(store.repo, "grep_first_parent",
                        lambda *a, **k: read_rows.append(len(rows := real(*a, **k))) or rows)
    text += "Rule 9.\n"
    step(store, text, 9, True, 0.4, 0.5)
    assert H.scan(store) == H.scan(Store.open(root, "SKILL.md"))
    assert read_rows == [1]  # the one new step commit, not the nine
    middle = git(root, "rev-parse", "main~4")
    git(root, "update-ref", "refs/heads/main", middle)  # reset behind what the store had read
    assert H.scan(store) == H.scan(Store.open(root, "SKILL.md"))


def test_the_rejected_tags_are_parsed_once_per_repository(two_runs, monkeypatch):
    """`log` and `status` list the rejected tags each time but parse a tag's messages once per repository (the
    tag cache in .git/skillgit/cache): a new process reads the same entries without parsing them again, a tag
    re-made over another commit is parsed again, and a damaged cache is ignored and rewritten."""
    first = Store.open(two_runs, "SKILL.md")
    expected = first.history()
    assert H.tag_cache_path(first.repo).is_file()
    parsed: list[str] = []
    original = H._tag_entry

    def counted(row):
        parsed.append(row[0])
        return original(row)

    monkeypatch.setattr(H, "_tag_entry", counted)
    assert Store.open(two_runs, "SKILL.md").history() == expected and parsed == []
    assert H.run_scores(Store.open(two_runs, "SKILL.md"), "r1", 2) == [0.30, 0.40, 0.55] and parsed == []
    # the same tag name over another commit (a hand-made rejection): only it is parsed again, and shown as it is now
    tip = git(two_runs, "rev-parse", "HEAD")
    git(two_runs, "tag", "-f", "-a", "-m", "rejected r2/2 by hand: not wanted", "rejected/r2/0002", tip)
    again = Store.open(two_runs, "SKILL.md").history()
    assert parsed == ["refs/tags/rejected/r2/0002"]
    assert [(e.label, e.reason) for e in again if e.verdict == "rejected"] == [
        ("r1/0001", "worse"), ("r1/0003", "worse"), ("r2/0002", "not wanted")]
    parsed.clear()
    H.tag_cache_path(first.repo).write_text('{"v": 1, "tags": [["refs/tags/rejected/r1/0001", "x", {"run": 5}]]}')
    assert Store.open(two_runs, "SKILL.md").history() == again and len(parsed) == 3  # every tag, once
    parsed.clear()
    assert Store.open(two_runs, "SKILL.md").history() == again and parsed == []


def test_the_tag_cache_keeps_a_rejected_step_in_few_bytes_and_replaces_the_old_file(two_runs):
    """At 1,000 steps version 1 of the cache (every field by name, uncompressed) held ~480 bytes a tag, 0.5 MB of
    .git; version 2 keeps what the ref does not say, compressed. Entries come back equal, including odd ones."""
    store = Store.open(two_runs, "SKILL.md")
    store.history()
    legacy = H.tag_cache_path(store.repo).with_name("rejected-tags.json")
    legacy.write_text('{"v": 1, "tags": []}')  # what an earlier skillgit left
    entries: dict[tuple[str, str], H.LogEntry | None] = {}
    for n in range(1, 1001):
        step_id: int | str = n if n % 50 else f"e{n // 50}-slow-update"
        tag = f"rejected/2026-11-26-scale/{step_id if isinstance(step_id, str) else f'{n:04d}'}"
        edits = tuple(f"append: Rule {(n * k) % 17} of the house style." for k in range(1 + n % 3))
        entries[(f"refs/tags/{tag}", f"{n * 7919:040x}")] = H.LogEntry(
            "2026-11-26-scale", step_id, "rejected", f"{n * 104729:040x}",
            f"skill: {edits[0]} (+{len(edits) - 1} more) (-{n % 40}.5 val)", score=(n % 8) / 8,
            delta=-(n % 5) / 8 if n % 7 else None, edits=edits,
            reason=f"significance: -0.{n % 9}750 on val hard (8 items × 3 repeats): worse; broke {n % 4}",
            parent=f"{n // 100:040x}" if n % 11 else None, date=1795686464 + n, tag=tag, seq=n if n % 13 else None)
    entries[("refs/tags/rejected/by-hand", "ab" * 20)] = None  # a tag under the prefix that is not a step's
    H.write_tag_cache(store.repo, entries)
    assert not legacy.exists()
    assert H.read_tag_cache(store.repo) == entries
    assert H.tag_cache_path(store.repo).stat().st_size / len(entries) <= 150  # version 1: ~480 here


def test_status_usage_table_escapes_control_characters_in_stage_names():
    """The stage and role names come from a run's saved progress (a collaborator's, after `skillgit pull`): the
    plain-columns table that replaced rich's escapes them, as every other `status` line does."""
    from skillgit.cli.train import usage_table

    usage = {"calls": 1, "prompt_tokens": 2, "completion_tokens": 3, "cost_usd": 0.0}
    table = usage_table({"reflect\x1b]52;c;ZXZpbA==\x07": usage}, {"teacher\x1b[2J": usage})
    assert "\x1b" not in table and "\x07" not in table
    assert "reflect" in table and "teacher" in table and len(table.splitlines()) == 4  # header, role, rule, stage

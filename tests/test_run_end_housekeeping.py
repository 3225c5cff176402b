"""What a run leaves behind as it ends, for the commands that follow it: its loose objects packed as it goes
(`Store.maintain`), and the `log` and `status` caches written (`store/logcache.warm`), so that the first `log` and
`status` after a run read no history and print what reading it afresh prints."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from skillgit.store import Store
from skillgit.store import history as H
from skillgit.store.core import LOOSE_LIMIT
from tests.conftest import git, run_cli_inproc
from tests.helpers import demo_project


def loose(repo: Path) -> int:
    return int(git(repo, "count-objects").split()[0])


def loose_ref_files(repo: Path) -> list[str]:
    return sorted(str(p.relative_to(repo / ".git")) for p in (repo / ".git" / "refs").rglob("*") if p.is_file())


def add_loose_blobs(repo: Path, n: int) -> None:
    """`n` new loose blobs (and a tree and a commit), reachable from a new tag: what a run's steps write."""
    folder = repo.parent / f"blobs-{n}"
    folder.mkdir()
    for i in range(n):
        (folder / str(i)).write_text(f"blob {i} of {n}\n")
    shas = subprocess.run(["git", "hash-object", "-w", "--stdin-paths"], cwd=repo, check=True, capture_output=True,
                          text=True, input="".join(f"{folder / str(i)}\n" for i in range(n))).stdout.split()
    tree = subprocess.run(["git", "mktree"], cwd=repo, check=True, capture_output=True, text=True,
                          input="".join(f"100644 blob {sha}\t{i}\n" for i, sha in enumerate(shas))).stdout.strip()
    git(repo, "tag", f"blobs-{n}", git(repo, "commit-tree", tree, "-m", f"{n} blobs"))


@pytest.fixture
def repo(make_repo) -> Path:
    root = make_repo({"SKILL.md": "# skill\n"})
    for i in range(5):
        git(root, "tag", f"t{i}")
    return root


def test_maintain_packs_loose_objects_and_refs_from_the_limit_on(repo):
    store = Store.open(repo, "SKILL.md")
    add_loose_blobs(repo, LOOSE_LIMIT - 40)
    before = loose(repo)
    assert before < LOOSE_LIMIT and loose_ref_files(repo)
    store.maintain()
    assert loose(repo) == before  # below the limit: nothing is touched
    add_loose_blobs(repo, 60)
    store.maintain()
    assert loose(repo) == 0 and loose_ref_files(repo) == []  # packed, objects and refs
    assert git(repo, "show", "blobs-60:7") == "blob 7 of 60"
    assert git(repo, "rev-parse", "t3") == git(repo, "rev-parse", "main")


def test_the_repositorys_own_gc_auto_rules_the_packing(repo):
    store = Store.open(repo, "SKILL.md")
    git(repo, "config", "gc.auto", "0")  # housekeeping turned off: nothing, however many
    add_loose_blobs(repo, LOOSE_LIMIT + 50)
    store.maintain()
    assert loose(repo) >= LOOSE_LIMIT + 50 and loose_ref_files(repo)
    store.maintain(pack_now=True)  # `skillgit gc` still packs when asked
    assert loose(repo) == 0
    git(repo, "config", "gc.auto", "20")  # its own limit, below ours
    add_loose_blobs(repo, 30)
    store.maintain()
    assert loose(repo) == 0


def test_log_and_status_after_a_run_read_no_history_and_print_what_a_fresh_read_prints(tmp_path, monkeypatch):
    folder = demo_project(tmp_path / "demo", seed=4)
    proc = run_cli_inproc("train", "--set", "train.max_steps=3", cwd=folder)
    assert proc.returncode == 0, proc.stderr[-2000:]
    reads: list[str] = []
    for name in ("history", "run_scores"):
        real = getattr(H, name)
        monkeypatch.setattr(H, name, lambda *a, _real=real, _name=name, **k: reads.append(_name) or _real(*a, **k))

    def out(*args: str) -> str:
        done = run_cli_inproc(*args, cwd=folder)
        assert done.returncode == 0, done.stderr
        return done.stdout

    log, status = out("log"), out("status")
    assert reads == [] and "seed" in log and "val trend" in status
    for cache in (folder / ".git" / "skillgit" / "cache").glob("*.json.z"):
        if cache.name in ("log.json.z", "status.json.z"):
            cache.unlink()
    assert out("log") == log and out("status") == status  # read afresh: the same
    assert reads == ["history", "run_scores"]


def test_packs_are_merged_as_they_accumulate(repo):
    """Each packing adds a pack; `--geometric=2` merges the small ones, so many packings leave a few packs."""
    store = Store.open(repo, "SKILL.md")
    for round_ in range(6):
        add_loose_blobs(repo, LOOSE_LIMIT + round_)
        store.maintain()
    packs = int(next(line.split()[1] for line in git(repo, "count-objects", "-v").splitlines()
                     if line.startswith("packs:")))
    assert loose(repo) == 0 and packs <= 3

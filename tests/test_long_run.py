"""Long runs stay flat: the memos that save repeated work (the blobs a repository wrote, the journal's keys already
tagged with the bound run) keep only their newest entries, and forgetting one costs only the saved work — the blob
is written again to the same id, the key tagged again — never a wrong answer. (Memory per step is measured by
bench/scale.py, not asserted here.)"""

from __future__ import annotations

import gc
import threading

import pytest

from skillgit.cli.demo import create_project
from skillgit.llm import cache as cache_mod
from skillgit.llm.base import Reply
from skillgit.llm.cache import CallCache
from skillgit.loop.run import Trainer
from skillgit.project import open_project
from skillgit.recent import Recent
from skillgit.session import build_trainer, open_session
from skillgit.store import gitproc as git_mod
from skillgit.store.git import GitRepo
from skillgit.types import Trajectory
from skillgit.world import rules
from tests.conftest import git


def test_recent_keeps_the_newest_keys_and_a_hit_counts_as_new():
    memo = Recent(3)
    memo.update(["a", "b", "c"])
    assert "a" in memo  # a hit: now the newest
    memo.add("d")  # drops the oldest, which is b now
    assert [k in memo for k in ("a", "b", "c", "d")] == [True, False, True, True]
    assert len(memo) == 3
    memo.discard("a")
    memo.discard("zz")
    assert len(memo) == 2 and "a" not in memo
    memo.clear()
    assert len(memo) == 0
    with pytest.raises(ValueError):
        Recent(0)


def test_recent_under_threads_never_exceeds_its_limit():
    memo = Recent(50)

    def work(n: int) -> None:
        for i in range(2000):
            memo.add((n, i))
            _ = (n, i - 1) in memo

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(memo) == 50


def test_the_journal_remembers_few_tagged_keys_and_still_tags_the_ones_it_forgot(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_mod, "MARKED_MEMO", 8)
    cache = CallCache(tmp_path / "calls.sqlite")
    cache.bind_run("r1")
    keys = [f"k{i}" for i in range(30)]
    for key in keys:
        cache.put(key, Reply(f"answer {key}"))
    assert len(cache._marked) <= 8  # a key per call would grow with the run
    cache.bind_run("r2")
    for _ in range(2):  # the second pass hits keys the memo forgot: tagged again, harmlessly
        for key in keys:
            reply = cache.get(key)
            assert reply is not None and reply.text == f"answer {key}" and reply.cached
    assert len(cache._marked) <= 8
    assert cache.prune({"r2"}).entries_kept == 30  # every hit was tagged with r2, forgotten or not
    cache.close()


def test_a_repository_remembers_few_written_blobs_and_rewrites_a_forgotten_one_to_the_same_id(make_repo,
                                                                                                monkeypatch):
    monkeypatch.setattr(git_mod, "WRITTEN_MEMO", 4)
    root = make_repo()
    repo = GitRepo.open(root)
    try:
        datas = [f"blob {i}\n".encode() for i in range(20)]
        shas = [repo.write_blob(d) for d in datas]
        assert len(repo._written) <= 4
        assert repo.write_blob(datas[0]) == shas[0] == repo.blob_id(datas[0])  # forgotten: written again
        assert repo.write_blob(datas[-1]) == shas[-1]  # remembered: no process asked
        assert [git(root, "cat-file", "-p", s) + "\n" for s in (shas[0], shas[-1])] == ["blob 0\n", "blob 19\n"]
        assert repo.write_blobs([b"x\n", b"y\n"]) == [repo.blob_id(b"x\n"), repo.blob_id(b"y\n")]
    finally:
        repo.close()


def _live(kind: type) -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is kind)


def _train(folder, steps: int):
    """An in-process run of `steps` steps on the simulated world; (the trainer, still alive, and its session)."""
    session = open_session(open_project(folder, None, [f"train.max_steps={steps}", "train.batch_size=2",
                                                        "train.num_epochs=50", "evaluation.eval_test=false"]))
    trainer = build_trainer(session, run_id=f"long{steps}", resume=False)
    trainer.train()
    return trainer, session


def test_a_run_keeps_no_trajectories_of_the_steps_it_finished(tmp_path):
    """What a run keeps for later stages is bounded: the scorings `latest` answers from keep per-item means, not
    their trajectories (before: every scored text's trajectories stayed alive for the whole run, ~5 a step here),
    and the simulated world's readings are a small LRU."""
    counts = {}
    for steps in (3, 12):
        folder = tmp_path / f"p{steps}"
        create_project(folder, 0)
        trainer, session = _train(folder, steps)
        counts[steps] = _live(Trajectory)
        kept = list(trainer.evaluator._latest.values())
        assert kept and all(not s.trajectories and not s.samples for s in kept)
        del trainer, session
    assert counts[12] <= counts[3] + 4, counts  # not a handful more per step
    assert rules.read_skill.cache_info().maxsize <= 256


# ---------------------------------------------------------------------------------------------- the negative buffer
SMALL = ["train.batch_size=2", "train.num_epochs=50", "evaluation.eval_test=false", "optimizer.proposals=2",
         "optimizer.negative_buffer_size=3"]


def _trainer(folder, steps: int, run: str, resume: bool = False, on_event=None):
    session = open_session(open_project(folder, None, [f"train.max_steps={steps}", *SMALL]))
    return build_trainer(session, run_id=run, resume=resume, **({"on_event": on_event} if on_event else {}))


def _recording_teacher(monkeypatch) -> list[tuple[int | None, list, dict, list]]:
    """Wrap `Trainer.teacher`: each call's (step, negative buffer shown, blocked set, what git holds now)."""
    seen: list[tuple[int | None, list, dict, list]] = []
    original = Trainer.teacher

    def teacher(self, step=None):
        made = original(self, step)
        running = self.teaching.negative
        assert running is not None
        seen.append((step, list(made.negative), dict(made.blocked),
                     [running.newest(running.keep), self.store.negative_buffer(running.keep)]))
        return made

    monkeypatch.setattr(Trainer, "teacher", teacher)
    return seen


def test_the_running_negative_buffer_is_what_git_holds_at_every_step(tmp_path, monkeypatch):
    """The loop reads the negative buffer from git once and then adds the rejections it decides (two proposals a
    step, epoch ends, an earlier run's rejections in the same repository): at every teacher call it equals a fresh
    read of the whole history."""
    folder = tmp_path / "p"
    create_project(folder, 0)
    _trainer(folder, 4, "earlier").train()
    seen = _recording_teacher(monkeypatch)
    trainer = _trainer(folder, 14, "later")
    trainer.train()
    assert len(seen) >= 14
    for step, _, _, (running, read) in seen:
        assert running == read, step
    assert any(r.run == "later" for r in seen[-1][3][0]) and any(r.run == "earlier" for r in seen[0][3][0])
    assert all(len(shown) <= 3 for _, shown, _, _ in seen) and any(shown for _, shown, _, _ in seen[-4:])


def test_a_resumed_run_shows_the_teacher_the_buffer_an_uninterrupted_run_showed(tmp_path, monkeypatch):
    """A run stopped at step 7 and resumed by a new process (which reads the buffer from git) gives every later
    step's teacher the same negative buffer and blocked set as a run that never stopped."""
    whole = tmp_path / "whole"
    create_project(whole, 3)
    seen = _recording_teacher(monkeypatch)
    _trainer(whole, 12, "r1").train()
    uninterrupted = {step: (shown, blocked) for step, shown, blocked, _ in seen if step is not None}

    cut = tmp_path / "cut"
    create_project(cut, 3)
    seen.clear()
    original = Trainer.teacher

    def stop_at_7(self, step=None):
        if step == 7:
            raise KeyboardInterrupt
        return original(self, step)

    monkeypatch.setattr(Trainer, "teacher", stop_at_7)
    with pytest.raises(KeyboardInterrupt):
        _trainer(cut, 12, "r1").train()
    monkeypatch.setattr(Trainer, "teacher", original)
    seen = _recording_teacher(monkeypatch)
    _trainer(cut, 12, "r1", resume=True).train()
    resumed = {step: (shown, blocked) for step, shown, blocked, _ in seen if step is not None}
    assert min(resumed) == 7 and max(resumed) == 12
    assert any(shown for shown, _ in resumed.values())
    for step in resumed:
        assert resumed[step] == uninterrupted[step], step


def test_a_step_lists_no_tags_notes_or_history(tmp_path, monkeypatch):
    """A step's git reads do not grow with the history: after the first step, no step inside an epoch runs
    `git for-each-ref` (every rejected tag), `git notes list` or `git log` (before: two to three a step, whose
    output grows with every decided step)."""
    folder = tmp_path / "p"
    create_project(folder, 0)
    calls: list[str] = []
    original = GitRepo._exec

    def counted(g, args, stdin=None, env=None):
        calls.append(git_mod._subcommand(args))
        return original(g, args, stdin, env)

    monkeypatch.setattr(GitRepo, "_exec", staticmethod(counted))
    marks: list[tuple[str, int]] = []

    def on_event(event):
        if event.kind == "step_start":
            marks.append((event.step, len(calls)))

    trainer = _trainer(folder, 10, "r1", on_event=on_event)
    trainer.train()
    marks.append(("end", len(calls)))
    per_step = {step: calls[a:b] for (step, a), (_, b) in zip(marks, marks[1:])}
    inside = [s for s in per_step if s.isdigit() and 1 < int(s) < 10 and int(s) % trainer.batches_per_epoch != 1]
    assert len(inside) >= 5
    for step in inside:
        listed = [c for c in per_step[step] if c in ("for-each-ref", "notes", "log")]
        assert listed == [], (step, listed)

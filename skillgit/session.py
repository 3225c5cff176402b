"""The composition root: from a project (repository + config) to a ready `Trainer` or `Evaluator`.

This is the one place that wires the outside worlds together — the store (git), the backends (SDKs,
subprocesses or the simulated world), the call cache and the ledger — so that the loop itself stays pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from skillgit import envs
from skillgit.envs.base import Env, EnvScorer, EnvStudent
from skillgit.errors import SkillgitError
from skillgit.executor import Executor, StudentSpec, build_executor
from skillgit.llm import factory
from skillgit.llm.base import LLM, Student
from skillgit.llm.cache import CachedLLM, CachedStudent, CallCache
from skillgit.llm.metering import MeteredLLM, MeteredStudent
from skillgit.loop.events import EventSink, ignore
from skillgit.loop.ledger import Ledger
from skillgit.loop.stages import Scorer
from skillgit.project import Project
from skillgit.scorers import build_scorer
from skillgit.store import Store
from skillgit.tasks import Splits, load_splits


@dataclass
class Session:
    project: Project
    store: Store
    splits: Splits
    scorer: Scorer
    ledger: Ledger
    cache: CallCache
    raw_teacher: LLM | None = None  # injected backends (tests, embedding programs); None: built from the config
    raw_student: Student | None = None
    executor_: Executor | None = None  # where rollouts run (env.executor); built on first use
    env: Env | None = None  # the environment adapter (env.name): it runs each item with the student

    @property
    def executor(self) -> Executor:
        if self.executor_ is None:
            self.executor_ = build_executor(self.project.config, self.project.root)
        return self.executor_

    @property
    def prompts_dir(self) -> Path | None:
        d = self.project.config.prompts.dir
        return (self.project.root / d) if d else None

    def student(self) -> Student:
        """Journal and ledger stay here in the driver; the executor decides where the runs themselves execute
        (an injected student always runs in this process). With an environment, each of its calls (every turn of
        an episode) is journaled and metered: the environment wraps the metered student."""
        def build() -> Student:
            return factory.build_student(self.project.config, self.project.root, on_retry=self.ledger.record_retry)

        inner = self.raw_student or self.executor.student(
            StudentSpec(self.project.config, str(self.project.root)), build)
        metered = MeteredStudent(CachedStudent(inner, self.cache), self.ledger)
        return metered if self.env is None else EnvStudent(self.env, metered)

    def teacher(self) -> MeteredLLM:
        inner = self.raw_teacher or factory.build_teacher(self.project.config, self.project.root,
                                                          on_retry=self.ledger.record_retry)
        return MeteredLLM(CachedLLM(inner, self.cache), self.ledger, "teacher")


def open_session(project: Project, *, cache: bool = True, teacher: LLM | None = None, student: Student | None = None,
                 splits: Splits | None = None, scorer: Scorer | None = None) -> Session:
    """Wire a project. `teacher`, `student`, `splits` and `scorer` replace what the config would build (they are
    still journaled and metered like built ones); the simulated student refuses tasks of the real world."""
    cfg = project.config
    store = Store.open(project.root, cfg.skill.path, cfg.skill.branch)
    env = envs.get(cfg.env.name, cfg.env.options) if cfg.env.name else None  # the one seam of environments
    if splits is None:
        splits = load_splits(cfg.env, project.root, env.load) if env else load_splits(cfg.env, project.root)
    if cfg.model.student_backend == "simulated" and student is None:
        _check_simulated_tasks(splits)
    if scorer is None:
        scorer = EnvScorer(env) if env else build_scorer(cfg.env.scorer, project.root)
    return Session(project, store, splits, scorer, Ledger(),
                   CallCache(journal_path(store) if cache else None, max_reply_chars=cfg.env.max_reply_chars),
                   teacher, student, env=env)


def journal_path(store: Store) -> Path:
    """The call journal of a repository (shared by its worktrees)."""
    return store.git_dir / "skillgit" / "cache" / "calls.sqlite"


def _check_simulated_tasks(splits: Splits) -> None:
    """The simulated student only understands the simulated world's own records; running it on real tasks would
    produce meaningless scores, so refuse instead of training on noise."""
    foreign = [i.id for i in (*splits.train, *splits.val, *splits.test) if i.metadata.get("world") != "simulated"]
    if foreign:
        raise SkillgitError(
            f"model.student_backend is 'simulated' but {len(foreign)} task(s) (e.g. '{foreign[0]}') are not "
            "simulated-world tasks",
            "set model.student_backend and model.teacher_backend to openai, azure, anthropic or command for real "
            "tasks (`skillgit demo` shows the simulated world)")


def build_trainer(session: Session, *, run_id: str | None = None, resume: bool = True,
                  on_event: EventSink = ignore):
    from skillgit.loop.run import Trainer

    trainer = Trainer(session.project.config, session.store, session.splits, session.student(), session.teacher(),
                      session.scorer, ledger=session.ledger, run_id=run_id, resume=resume, on_event=on_event,
                      prompts_dir=session.prompts_dir,
                      executor=None if session.raw_student is not None else session.executor)
    session.cache.bind_run(trainer.run_id)  # journal entries remember their run, so `skillgit gc` can prune
    return trainer

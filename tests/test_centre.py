"""The centre's promises: an acyclic package, git spelled in one module, determinism, and the losses a probe found
(each test here failed on the code before the centre was rebuilt)."""

from __future__ import annotations

import ast
import functools
import json
import threading
from pathlib import Path

import pytest

from skillgit.cli.demo import create_project
from skillgit.config import EvaluationCfg, SimulatedCfg
from skillgit.llm.base import LLMError, Reply, Request
from skillgit.loop import gate
from skillgit.project import open_project
from skillgit.session import build_trainer, open_session
from skillgit.store.core import BranchMoved
from skillgit.world import SimulatedTeacher
from tests.conftest import git, run_cli, run_cli_inproc

PACKAGE = Path(__file__).resolve().parent.parent / "skillgit"


# ---------------------------------------------------------------------------------------------- architecture
@functools.lru_cache(maxsize=None)
def _parsed(path: Path, mtime_ns: int) -> ast.Module:
    """A source file's syntax tree, parsed once per worker for every check of this module that walks the package
    (six of them parsed all ~260 files again: 17.8 CPU-s for the nine checks, 10.0 now). Keyed by the file's mtime
    too, so an edited file is read again. The trees are shared: the checks only read them."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _tree(path: Path) -> ast.Module:
    return _parsed(path, path.stat().st_mtime_ns)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """module → the skillgit modules it imports anywhere (top level, functions, TYPE_CHECKING blocks alike)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    deps.add(target if target in modules else base)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert "skillgit.loop.run" in graph and "skillgit.store.core" in graph
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, stack + [dep])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


# ---------------------------------------------------------------------------------------------- package level
# A unit is a sub-package (`skillgit.store`) or a top-level module (`skillgit.config`). Units form a layering only
# if no two of them import each other, however indirectly: module-level acyclicity is not enough (store/core →
# package → prompts → llm.base once made the git layer depend on the model layer without any module cycle).
def _unit(module: str) -> str:
    return ".".join(module.split(".")[:2])


def package_graph() -> dict[str, dict[str, list[str]]]:
    """unit → the units it imports → the module imports that make each edge ("a → b")."""
    units: dict[str, dict[str, list[str]]] = {}
    for module, deps in import_graph().items():
        edges = units.setdefault(_unit(module), {})
        for dep in sorted(deps):
            if _unit(dep) != _unit(module):
                edges.setdefault(_unit(dep), []).append(f"{module} → {dep}")
    return units


def _strongly_connected(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """Tarjan's components with more than one unit (each is a cycle or several)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for dep in sorted(graph.get(node, {})):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_package_level_cycle():
    graph = package_graph()
    assert {"skillgit.store", "skillgit.llm", "skillgit.config", "skillgit.cli"} <= set(graph)
    assert "skillgit.store" in graph["skillgit.cli"]  # the graph sees real edges
    report = [(component, [edge for a in component for b in component for edge in graph[a].get(b, [])])
              for component in _strongly_connected(graph)]
    assert report == []


def test_the_check_finds_a_package_level_cycle_that_no_module_cycle_shows():
    graph = {"a": {"b": ["a.x → b.y"]}, "b": {"c": ["b.z → c.w"]}, "c": {"a": ["c.v → a.u"]}, "d": {"a": []}}
    assert _strongly_connected(graph) == [["a", "b", "c"]]
    assert _strongly_connected({"a": {"b": []}, "b": {}}) == []


def test_the_git_layer_does_not_reach_the_model_layer():
    """The measured chain store/core → package → prompts → llm.base is gone, and no other path replaced it."""
    graph = package_graph()
    seen, todo = set(), ["skillgit.store"]
    while todo:
        unit = todo.pop()
        if unit not in seen:
            seen.add(unit)
            todo.extend(graph.get(unit, {}))
    assert not {"skillgit.llm", "skillgit.prompts", "skillgit.loop", "skillgit.cli"} & seen, sorted(seen)


def test_closed_vocabularies_come_from_their_registries():
    """Config validation accepts exactly what the registries implement: backend names and scorer types are the
    registries' own tuples; the gate's checks (whose registry reads the config) agree with the listed modes."""
    from skillgit import backend_table, config_validate, scorers
    from skillgit.llm import registry

    # read when a value is checked: installed packages add backends by entry point (skillgit.backends)
    assert config_validate.allowed_values("model.teacher_backend") == registry.names_for("teacher")
    assert config_validate.allowed_values("model.student_backend") == registry.names_for("student")
    assert registry.names_for is backend_table.names_for
    assert config_validate.allowed_values("env.scorer.type") is scorers.SCORER_TYPES == tuple(scorers._REGISTRY)
    assert set(gate._CHECKS) == set(config_validate.GATE_MODES)
    assert EvaluationCfg(gate="two_split+strict").gate == ("two_split", "strict")


def test_every_default_is_one_of_its_allowed_values():
    """`check_field` skips the allowed-values lookup for a value equal to its field's default (so `log` and
    `status` do not import a registry for a config that keeps the defaults): that is sound only while every default
    is allowed."""
    from skillgit import config_validate
    from skillgit.config import Config

    defaults = Config()
    checked = []
    for generic in sorted({*config_validate.ENUMS, *config_validate.DYNAMIC_ENUMS}):
        for dotted in ([generic.replace("*", role) for role in ("teacher", "student")] if "*" in generic
                       else [generic]):
            value: object = defaults
            for part in dotted.split("."):
                value = getattr(value, part)
            if value is not None:
                assert value in config_validate.allowed_values(generic), (dotted, value)
                checked.append(dotted)
    assert {"env.scorer.type", "model.teacher_backend", "optimizer.lr_scheduler"} <= set(checked), checked


@pytest.mark.parametrize("package", ["skillgit.records", "skillgit.world"])
def test_a_lazy_package_table_names_each_name_where_it_lives_and_the_type_checker_sees_the_same(package):
    """A package that imports its names on first use (`skillgit.lazy.exports`) has one table, `_HOME`; the eager
    imports a type checker reads list the same names from the same modules, every name resolves to its module's
    object, and `__all__` is the table's names."""
    import importlib

    module = importlib.import_module(package)
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    checked: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{package}."):
            checked.setdefault(node.module.rpartition(".")[2], set()).update(a.name for a in node.names)
    table: dict[str, set[str]] = {}
    for name, home in module._HOME.items():
        table.setdefault(home, set()).add(name)
        assert getattr(module, name) is getattr(importlib.import_module(f"{package}.{home}"), name)
    assert checked == table
    assert sorted(module.__all__) == sorted(module._HOME) and set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        module.Nope  # noqa: B018


def test_modes_and_epoch_do_not_know_the_trainer():
    graph = import_graph()
    for module in ("skillgit.loop.modes", "skillgit.loop.epoch", "skillgit.loop.decide", "skillgit.loop.stages",
                   "skillgit.loop.resume", "skillgit.loop.background", "skillgit.loop.field", "skillgit.loop.final"):
        assert "skillgit.loop.run" not in graph[module], module


# `GitRepo` and the modules it is assembled from, and GitPython's one import: the only ones that import it or run git
GIT_MODULES = ("git.py", "gitproc.py", "gitobjects.py", "gitnotes.py", "gitwork.py", "gitimport.py")


def test_git_is_spelled_only_in_the_git_module():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.parent == PACKAGE / "store" and path.name in GIT_MODULES:
            continue
        tree = _tree(path)
        for node in ast.walk(tree):
            # a GitRepo's raw runners called from outside: `repo._run(...)`, `self.repo._call(...)` …
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("_run", "_call", "_run_bytes", "_in_worktree", "_exec") \
                    and ast.unparse(node.func.value).split(".")[-1] in ("repo", "git", "_git", "GitRepo"):
                offenders.append(f"{path.name}:{node.lineno} .{node.func.attr}")
            # git run as a subprocess: ["git", …] handed to subprocess/os
            if isinstance(node, ast.List) and node.elts and isinstance(node.elts[0], ast.Constant) \
                    and node.elts[0].value == "git":
                offenders.append(f"{path.name}:{node.lineno} runs git as a subprocess")
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(n == "git" or n.startswith("git.") for n in names):
                    offenders.append(f"{path.name}:{node.lineno} imports GitPython")
    assert offenders == []


# ---------------------------------------------------------------------------------------------- determinism
def _log_without_times(folder: Path) -> list[dict]:
    proc = run_cli_inproc("log", "--json", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return [{k: v for k, v in e.items() if k not in ("date", "sha", "parent")} for e in json.loads(proc.stdout)]


def test_the_demo_is_the_same_run_every_time(tmp_path):
    # Real processes: each has its own hash seed, so an order that depends on set iteration shows up here.
    runs = []
    for name in ("a", "b"):
        proc = run_cli("demo", "--dir", str(tmp_path / name), "--seed", "0", "--steps", "4", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        runs.append((_log_without_times(tmp_path / name), (tmp_path / name / "SKILL.md").read_text(),
                     [line for line in proc.stdout.splitlines() if line.startswith("test ")]))
    assert runs[0] == runs[1]
    assert any(e["verdict"] == "accepted" for e in runs[0][0])


def test_the_run_id_never_seeds_anything(tmp_path):
    """Two runs with automatic (time + random) run ids on the same project and seed are the same run."""
    logs = []
    for name in ("a", "b"):
        create_project(tmp_path / name, 0)
        proc = run_cli_inproc("train", "--set", "train.max_steps=3", cwd=tmp_path / name)
        assert proc.returncode == 0, proc.stderr
        log = _log_without_times(tmp_path / name)
        logs.append([{k: v for k, v in e.items() if k not in ("run", "tag", "label")} for e in log])
    runs = {e["run"] for e in json.loads(run_cli_inproc("log", "--json", cwd=tmp_path / "a").stdout)}
    assert not any(r.startswith("demo-") for r in runs if r)  # automatic ids, not the demo's fixed one
    assert logs[0] == logs[1] and len(logs[0]) >= 4
    assert (tmp_path / "a" / "SKILL.md").read_text() == (tmp_path / "b" / "SKILL.md").read_text()


def test_the_readme_sample_output_is_what_the_demo_prints(tmp_path):
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    block = readme.split("## The demo", 1)[1].split("```", 2)[1]
    sample = [line for line in block.splitlines() if line.strip() and line.strip() != "…"]
    proc = run_cli_inproc("demo", "--dir", str(tmp_path / "d"), "--seed", "0", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    printed = (proc.stderr + proc.stdout).splitlines()
    at = 0
    for line in sample:  # in order; the README elides the middle with "…"
        assert line in printed[at:], line
        at = printed.index(line, at) + 1


# ---------------------------------------------------------------------------------------------- losses
@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "proj"
    create_project(folder, 0)
    return folder


def _trainer(folder: Path, *sets: str, teacher=None, student=None, run_id: str = "r1"):
    session = open_session(open_project(folder, None, list(sets)), teacher=teacher, student=student,
                           cache=teacher is None and student is None)
    return build_trainer(session, run_id=run_id, resume=True), session


class CommitsDuringReflect:
    """A teacher that, while a step reflects, lets the user commit a change to the skill branch."""

    def __init__(self, folder: Path):
        self.inner = SimulatedTeacher(SimulatedCfg(seed=0))
        self.folder = folder
        self.lock = threading.Lock()
        self.done = False

    @property
    def id(self) -> str:
        return self.inner.id

    def complete(self, request: Request) -> Reply:
        with self.lock:
            if request.stage == "reflect" and not self.done:
                self.done = True
                skill = self.folder / "SKILL.md"
                skill.write_text(skill.read_text() + "\nUser rule: sign every answer.\n")
                git(self.folder, "commit", "-qam", "my own edit")
        return self.inner.complete(request)


def test_a_user_commit_during_a_run_is_never_built_over(project):
    trainer, session = _trainer(project, "train.max_steps=3", teacher=CommitsDuringReflect(project))
    with pytest.raises(BranchMoved) as stop:
        trainer.train()
    assert "my own edit" in stop.value.message and stop.value.code == 3
    assert git(project, "log", "-1", "--format=%s", "main") == "my own edit"
    assert git(project, "for-each-ref", "refs/heads/candidates") == ""  # nothing left pending
    assert git(project, "status", "--porcelain") == ""
    # the next `train` continues from the user's commit, which stays in every later skill
    trainer, session = _trainer(project, "train.max_steps=3")
    result = trainer.train()
    assert result.steps == 3
    assert "User rule: sign every answer." in session.store.read_skill()
    chain = git(project, "log", "--first-parent", "--format=%s", "main").splitlines()
    assert "my own edit" in chain


def test_revert_and_pull_wait_for_a_running_train(project):
    # Real processes: the lock is held by this process and must stop another one.
    session = open_session(open_project(project, None, []))
    with session.store.lock("main"):
        proc = run_cli("revert", "--to", "HEAD~1", cwd=project)
        assert proc.returncode == 6 and "lock" in proc.stderr.lower()
        proc = run_cli("pull", str(project), cwd=project)
        assert proc.returncode == 6


class WritesControlCharacters:
    """A teacher whose edits carry a NUL, terminal escapes and a bidi override."""

    def __init__(self):
        self.inner = SimulatedTeacher(SimulatedCfg(seed=0))

    @property
    def id(self) -> str:
        return self.inner.id

    def complete(self, request: Request) -> Reply:
        reply = self.inner.complete(request)
        if request.stage not in ("reflect", "merge"):
            return reply
        try:
            obj = json.loads(reply.text)
        except ValueError:
            return reply
        for edit in obj.get("edits", []):
            edit["content"] = "\x1b[2J\x07" + str(edit.get("content", "")) + "\x00\u202e"
        return Reply(json.dumps(obj), reply.usage, reply.model)


def test_control_characters_from_the_teacher_never_reach_git_or_the_terminal(project):
    trainer, session = _trainer(project, "train.max_steps=3", teacher=WritesControlCharacters())
    result = trainer.train()
    assert result.steps == 3 and result.accepted >= 1
    messages = git(project, "log", "--format=%B", "main")
    notes = git(project, "log", "--format=%N", "--notes=skillgit", "main")
    for text in (messages, notes, session.store.read_skill()):
        assert not any(c in text for c in "\x00\x1b\x07\u202e")
    # a note pulled from elsewhere may still hold them: the CLI shows them escaped, never raw
    tip = git(project, "rev-parse", "main")
    git(project, "notes", "--ref", "skillgit", "append", "-m",
        json.dumps({"v": 1, "kind": "decision", "verdict": "accepted", "reason": "\x1b[31mred\x07"}), tip)
    for args in (["log"], ["show", tip], ["rejected"]):
        proc = run_cli_inproc(*args, cwd=project)
        assert proc.returncode == 0, proc.stderr
        assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    # a person's text too: a revert reason reaches plain `git log` (which prints messages raw) without escapes
    reverted = run_cli_inproc("revert", "--steps", "1", "--reason", "bad\x1b[31mred\x07\u202e", cwd=project)
    assert reverted.returncode == 0, reverted.stderr
    for text in (git(project, "log", "-1", "--format=%B%n%N", "main"),
                 git(project, "log", "-1", "main")):  # the display notes too
        assert "badred" in text.replace("[31m", "") and not any(c in text for c in "\x00\x1b\x07\u202e")


class RefusesLongPrompts:
    """A teacher whose merge and rank calls the server refuses (400: the prompt is over the context length), as
    after a reply so large that the next prompt cannot fit."""

    def __init__(self):
        self.inner = SimulatedTeacher(SimulatedCfg(seed=0))
        self.refused = 0

    @property
    def id(self) -> str:
        return self.inner.id

    def complete(self, request: Request) -> Reply:
        if request.stage in ("merge", "rank"):
            self.refused += 1
            raise LLMError("teacher: 400 maximum context length is 128000 tokens", kind="bad_request", status=400)
        return self.inner.complete(request)


def test_a_teacher_call_the_server_refuses_is_recorded_and_the_run_goes_on(project):
    """Loss 3b: a refused call (non-retryable, not an auth or config error) skips its stage with a fallback and
    says so in the candidate's note; it never stops or wedges the run."""
    teacher = RefusesLongPrompts()
    trainer, session = _trainer(project, "train.max_steps=2", teacher=teacher)
    result = trainer.train()
    assert result.status == "finished" and result.steps == 2 and teacher.refused >= 2
    step = next(e for e in session.store.history("r1") if e.verdict in ("accepted", "rejected"))
    merge = next(r for r in session.store.read_notes(step.sha) if r["kind"] == "candidate")["merge"]
    assert merge and all(m["fallback"] and m["reason"].startswith("teacher call refused: ") for m in merge)


def test_edits_per_reply_and_their_size_are_capped(project):
    from skillgit import patch

    many = {"edits": [{"op": "append", "content": f"Rule {i}."} for i in range(20)]}
    edits, problems = patch.parse_edits(many, max_edits=16)
    assert [e.content for e in edits] == [f"Rule {i}." for i in range(16)]
    assert any("edits 17–20: dropped" in p and "max_edits_per_reply" in p for p in problems)
    edits, problems = patch.parse_edits({"edits": [{"op": "append", "content": "x" * 201},
                                                   {"op": "append", "content": "Short."}]}, max_chars=200)
    assert [e.content for e in edits] == ["Short."] and "longer than 200 characters" in problems[0]
    # the config keys reach the teacher: a cap of 1 edit per reply leaves at most one edit per reflection
    trainer, session = _trainer(project, "train.max_steps=1", "optimizer.max_edits_per_reply=1",
                                teacher=SimulatedTeacher(SimulatedCfg(seed=0)))
    assert trainer.teacher(1).max_edits == 1


def _split(scores: dict[str, tuple[float, float]], errors: dict[str, str]) -> gate.SplitScore:
    return gate.SplitScore("val", "x", dict(scores), dict(errors))


def test_the_gate_refuses_to_judge_on_a_thin_val_set_and_says_so():
    items = [f"v{i}" for i in range(30)]
    before = _split({i: (0.0, 0.0) for i in items}, {})
    # 14 of 30 items unscored for the candidate: a mean over the other 16 is not a verdict
    after = _split({i: (1.0, 1.0) for i in items[:16]}, {i: "student: 500" for i in items[16:]})
    result = gate.decide(EvaluationCfg(), before, after, items=items)
    assert not result.accept
    assert result.reason.startswith("cannot judge") and "16/30 val items, 16/30 samples scored" in result.reason
    assert result.coverage is not None and result.coverage.unscored == tuple(items[16:])
    # above the floor it decides, and the reason still names what was left out
    after = _split({i: (1.0, 1.0) for i in items[:29]}, {items[29]: "student: 500"})
    result = gate.decide(EvaluationCfg(gate="significance"), before, after, items=items)
    assert result.accept and "(29/30 val items, 29/30 samples scored)" in result.reason
    # the default's per_item guard cannot vouch for an item it could not score again: it says so
    guarded = gate.decide(EvaluationCfg(), before, after, items=items)
    assert not guarded.accept and "v29 unknown now (student: 500)" in guarded.reason


class FlakyStudent:
    """Fails (retryably) the first time it sees each val item, then answers like the simulated student."""

    def __init__(self):
        from skillgit.llm.base import ChatStudent
        from skillgit.world import SimulatedStudentLLM

        self.inner = ChatStudent(SimulatedStudentLLM(SimulatedCfg(seed=0)))
        self.seen: set[tuple[str, str]] = set()
        self.lock = threading.Lock()

    @property
    def id(self) -> str:
        return "flaky"

    def run(self, skill, item, sample=0):
        from skillgit.llm.base import LLMError

        with self.lock:
            first = (item.id, skill) not in self.seen
            self.seen.add((item.id, skill))
        if first and item.id.endswith(("1", "3")):
            raise LLMError("scripted 503", kind="server", retryable=True, status=503)
        return self.inner.run(skill, item, sample)


def test_unscored_val_items_are_retried_before_the_gate_decides(project):
    trainer, session = _trainer(project, "train.max_steps=2", student=FlakyStudent())
    result = trainer.train()
    assert result.steps == 2
    progress = json.loads(git(project, "show", "refs/skillgit/runs/r1:progress.json"))
    assert progress["retries"] > 0 and progress["unscored"] == 0
    assert progress["last"]["coverage"]["scored"] == progress["last"]["coverage"]["total"]
    status = run_cli_inproc("status", "--json", cwd=project)
    info = json.loads(status.stdout)
    assert info["retries"] == progress["retries"] and info["unscored"] == 0 and "errors" in info


# ---------------------------------------------------------------------------------------------- small ones
def test_dry_run_with_an_absurd_number_of_epochs_answers_at_once(project):
    # A real process: the timeout must be able to kill it if it does not answer.
    proc = run_cli("train", "--dry-run", "--set", "train.num_epochs=1000000000", cwd=project, timeout=20)
    assert proc.returncode == 0, proc.stderr
    assert "…" in proc.stdout


def test_init_refuses_a_branch_name_git_would_read_as_an_option(tmp_path):
    proc = run_cli_inproc("init", str(tmp_path / "new"), "--branch", "-x", cwd=tmp_path)
    assert proc.returncode == 2 and "invalid branch name '-x'" in proc.stderr
    assert not (tmp_path / "new" / "skillgit.yaml").exists()


def test_init_keeps_dotenv_out_of_git(tmp_path):
    proc = run_cli_inproc("init", str(tmp_path / "new"), "--commit", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "new" / ".env").write_text("OPENAI_API_KEY=sk-test-1234567890abcdef\n")
    assert git(tmp_path / "new", "status", "--porcelain") == ""
    assert ".gitignore" in git(tmp_path / "new", "ls-tree", "--name-only", "HEAD").split()


def test_eval_fails_when_no_item_could_be_scored(project):
    (project / "tasks.jsonl").write_text("")  # nothing to score would be a config error; make every run fail:
    create = json.dumps({"id": "x1", "input": "not a simulated record", "expected": "?",
                         "metadata": {"world": "simulated"}})
    (project / "tasks.jsonl").write_text("".join(create.replace("x1", f"x{i}") + "\n" for i in range(10)))
    proc = run_cli_inproc("eval", "--split", "val", "--set", "model.simulated.malformed_rate=0",
                          "--set", "env.scorer.type=python", "--set", "env.scorer.callable=os:nonexistent",
                          cwd=project)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr


def test_a_shell_command_template_never_runs_task_text_as_shell_code():
    from skillgit.config import config_from_dict
    from skillgit.errors import ConfigError

    unsafe = {"model": {"student_backend": "command",
                        "student": {"command": {"argv": ["/bin/sh", "-c", "my-agent {prompt}"]}}}}
    with pytest.raises(ConfigError, match="would run the task's text as shell code") as err:
        config_from_dict(unsafe)
    assert "{prompt_file}" in err.value.hint
    safe = {"model": {"student_backend": "command", "student": {"command": {"argv": ["my-agent", "{prompt}"]}}}}
    assert config_from_dict(safe).model.student.command.argv == ("my-agent", "{prompt}")


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_ctrl_c_says_how_to_resume_and_the_run_resumes(project, sig):
    """Ctrl-C, `kill` (TERM: a CI job cancelled, `timeout`) and kill -9 all leave a run that `status` calls
    interrupted and `train` resumes; the first two also say so on the way out."""
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "skillgit", "train", "--events", "--set", "train.max_steps=4"],
                            cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if '"event": "step_start"' in line:
            break
    proc.send_signal(getattr(signal, sig))
    rest = proc.stderr.read()
    if sig == "SIGKILL":
        assert proc.wait(timeout=120) == -signal.SIGKILL
    else:
        assert proc.wait(timeout=120) == (130 if sig == "SIGINT" else 143)  # 128 + the signal's number
        said = "interrupted" if sig == "SIGINT" else "stopped by SIGTERM"
        assert f"error: {said}" in rest and "run the same command again to resume" in rest
        assert "Aborted" not in rest and "Traceback" not in rest
    status = json.loads(run_cli_inproc("status", "--json", cwd=project).stdout)
    assert status["status"] == "interrupted"  # after kill -9 too: nobody holds the run's lock any more
    again = run_cli_inproc("train", "--set", "train.max_steps=4", cwd=project)
    assert again.returncode == 0, again.stderr
    assert json.loads(run_cli_inproc("status", "--json", cwd=project).stdout)["status"] == "finished"


def test_a_fresh_clone_on_another_branch_gets_the_right_hint_and_pull_sets_the_notes_display(project, tmp_path):
    git(project, "branch", "docs")
    bare = tmp_path / "shared.git"
    git(tmp_path, "clone", "-q", "--mirror", str(project), str(bare))
    git(bare, "symbolic-ref", "HEAD", "refs/heads/docs")  # the remote's default branch is not the skill branch
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(bare), str(clone))
    proc = run_cli_inproc("log", cwd=clone)
    assert proc.returncode == 3 and "it is on origin/main: git switch main" in proc.stderr
    git(clone, "switch", "-q", "main")
    assert run_cli_inproc("pull", "origin", cwd=clone).returncode == 0
    assert git(clone, "config", "--get-all", "notes.displayRef") == "refs/notes/skillgit-log*"


def test_gc_prunes_the_call_journal_of_finished_runs_only(project):
    import re

    def gc() -> tuple[int, int]:
        proc = run_cli_inproc("gc", cwd=project)
        assert proc.returncode == 0, proc.stderr
        m = re.search(r"call journal: dropped (\d+) call\(s\) of finished runs, kept (\d+)", proc.stderr)
        assert m, proc.stderr
        return int(m.group(1)), int(m.group(2))

    stopped = run_cli_inproc("train", "--set", "train.max_steps=2", "--set", "budget.max_calls=120", cwd=project)
    assert stopped.returncode == 5, stopped.stderr
    dropped, kept = gc()
    assert dropped == 0 and kept >= 100  # a stopped run resumes from its journal for free
    done = run_cli_inproc("train", "--set", "train.max_steps=2", cwd=project)
    assert done.returncode == 0, done.stderr
    dropped, kept = gc()
    assert dropped >= 100 and kept == 0


class TimedStudent:
    """The simulated student, reporting agentic phase times (1 s setup, 2 s agent, 3 s verify) for every run."""

    def __init__(self):
        from skillgit.llm.base import ChatStudent
        from skillgit.world import SimulatedStudentLLM

        self.inner = ChatStudent(SimulatedStudentLLM(SimulatedCfg(seed=0)))
        self.runs = 0
        self.lock = threading.Lock()

    @property
    def id(self) -> str:
        return "timed"

    def run(self, skill, item, sample=0):
        import dataclasses

        with self.lock:
            self.runs += 1
        reply = self.inner.run(skill, item, sample)
        return dataclasses.replace(reply, timings={"setup": 1.0, "agent": 2.0, "verify": 3.0})


def test_rollout_seconds_count_every_rollout_train_val_and_test(project):
    """Time accounting covers the val and test rollouts too (most of a run's time), in `status` and the notes."""
    student = TimedStudent()
    trainer, session = _trainer(project, "train.max_steps=2", student=student)
    result = trainer.train()
    assert result.status == "finished"
    progress = json.loads(session.store.load_run("r1")["progress.json"])
    assert progress["rollout_seconds"] == {"agent": 2.0 * student.runs, "setup": 1.0 * student.runs,
                                           "verify": 3.0 * student.runs}
    step = next(e for e in session.store.history("r1") if e.verdict in ("accepted", "rejected"))
    gate_note = next(r for r in session.store.read_notes(step.sha) if r["kind"] == "gate")
    assert gate_note["val"]["seconds"]["verify"] > 0


def test_the_gated_commit_path_works_without_a_trainer(project):
    """`decide.gated_commit` is the path sleep and `check` reuse: a StepContext, a Store and a Proposal are all it
    needs. A better candidate fast-forwards the branch with its notes; a worse one becomes a rejected tag; a
    proposal built on a tip that moved meanwhile is refused (CAS on its base) and changes nothing."""
    from skillgit.loop import decide
    from skillgit.loop.context import StepContext
    from skillgit.records import StepKind, UpdateRecord

    session = open_session(open_project(project, None, ["evaluation.gate_repeats=1"]))
    cfg, store = session.project.config, session.store
    student = session.student()
    evaluator = gate.Evaluator(student, session.scorer, {"val": list(session.splits.val)}, workers=4)
    events: list = []
    ctx = StepContext(cfg, student, session.scorer, evaluator, session.ledger, events.append,
                      tuple(session.splits.train))
    base, before = store.tip(), store.read_skill()
    current = evaluator.score(before, "val")
    good = before + ("\nJoin the fields with ' | ' instead of commas.\nWrite codes in uppercase letters (AB-12).\n"
                     "Write names as 'Last, First' (Lovelace, Ada).\nAlways give prices with 2 decimal places.\n"
                     "Use metric units: weights in kg with two decimals.\n")
    record = UpdateRecord("patch")
    outcome, now = decide.gated_commit(ctx, store, "solo", 1, decide.Proposal(1, 0, StepKind.STEP, base, before,
                                                                               good, record), current,
                                       session.ledger.snapshot())
    assert outcome.verdict.value == "accepted", outcome.reason
    assert store.tip() == outcome.sha and store.read_skill() == good and now.mean("hard") > current.mean("hard")
    assert any(r["kind"] == "decision" for r in store.read_notes(outcome.sha))

    bad = good.replace("Join the fields with ' | ' instead of commas.\n", "")
    outcome2, _ = decide.gated_commit(ctx, store, "solo", 2, decide.Proposal(2, 0, StepKind.STEP, outcome.sha, good,
                                                                              bad, record), now,
                                      session.ledger.snapshot())
    assert outcome2.verdict.value == "rejected" and store.tip() == outcome.sha
    assert git(project, "tag", "--list", "rejected/solo/*") == "rejected/solo/0002"

    stale = decide.Proposal(3, 0, StepKind.STEP, base, before, good + "More.\n", record)  # built on the old tip
    with pytest.raises(BranchMoved):
        decide.gated_commit(ctx, store, "solo", 3, stale, current, session.ledger.snapshot())
    assert store.tip() == outcome.sha and git(project, "for-each-ref", "refs/heads/candidates") == ""


def test_a_stop_whose_raise_was_swallowed_is_raised_at_the_next_safe_point(project, monkeypatch):
    """A signal can land in a weakref callback or __del__, where Python ignores the handler's exception (seen: a
    Ctrl-C lost and the run finished with exit 0). The request is recorded and the loop raises it at its next
    safe point; the swallowed traceback is not printed."""
    import sys as _sys

    from skillgit.errors import Interrupted, clear_stop, raise_if_stop_requested, request_stop

    class Swallowed:
        def __del__(self):
            exc = Interrupted("interrupted", "run the same command again to resume where it stopped")
            request_stop(exc)
            raise exc  # what the signal handler does, here where Python ignores it

    from skillgit.loop.context import StepContext

    trainer, _ = _trainer(project, "train.max_steps=3")
    calls = []
    real_stage = StepContext.stage

    def stage(self, step, name):
        if name == "reflect" and not calls:  # inside step 1, after the run was saved
            calls.append(name)
            Swallowed()  # collected at once: its exception is "ignored", as a signal's would be
        real_stage(self, step, name)

    monkeypatch.setattr(_sys, "unraisablehook", lambda info: None)
    monkeypatch.setattr(StepContext, "stage", stage)
    try:
        with pytest.raises(Interrupted):
            trainer.train()
    finally:
        clear_stop()
    raise_if_stop_requested()  # cleared: a no-op
    shown = run_cli_inproc("status", "--json", cwd=project)
    assert shown.returncode == 0, shown.stderr
    status = json.loads(shown.stdout)
    assert status["status"] == "interrupted" and status["step"] < 3


def test_what_a_stop_signal_leaves_in_other_threads_is_not_reported_as_an_error():
    """A stop landing in Thread.start() makes CPython's started thread report a KeyError from `_bootstrap_inner`
    (seen in CI under load); only while a stop is requested is that noise dropped."""
    import threading
    import types

    from skillgit.cli import is_stop_noise
    from skillgit.errors import Interrupted, clear_stop, request_stop

    thread = threading.Thread(target=lambda: None)
    noise = types.SimpleNamespace(exc_value=KeyError(thread), object=thread._bootstrap)
    other = types.SimpleNamespace(exc_value=ValueError("x"), object=thread._bootstrap)
    assert not is_stop_noise(noise)  # no stop asked for: a real error, reported
    request_stop(Interrupted())
    try:
        assert is_stop_noise(noise) and not is_stop_noise(other)
        assert is_stop_noise(types.SimpleNamespace(exc_value=Interrupted(), object=None))
    finally:
        clear_stop()


# ---------------------------------------------------------------------------------------------- one shape, one owner
# (issue 21: typed notes everywhere, one of each helper, `Store` owns every ref it writes)
def _sources(folder: str = "") -> dict[str, ast.Module]:
    return {p.relative_to(PACKAGE).as_posix(): _tree(p) for p in (PACKAGE / folder).rglob("*.py")}


def test_store_git_is_imported_only_inside_the_store():
    """Outside `store/`, git is reached through `Store`, `store.read` and the documented repository API
    (`store.repository`), never by importing `store.git` (GitRepo, RefUpdate, …) itself."""
    offenders = []
    for name, tree in _sources().items():
        if name.startswith("store/"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in [f"skillgit.store.{m[:-3]}"
                                                                     for m in GIT_MODULES]:
                offenders.append(f"{name}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and node.module == "skillgit.store" \
                    and any(f"{a.name}.py" in GIT_MODULES for a in node.names):
                offenders.append(f"{name}:{node.lineno}")
    assert offenders == []
    documented = (PACKAGE / "store" / "repository.py").read_text(encoding="utf-8")
    assert "class Repository(Protocol)" in documented and "no ref transaction" in documented


def test_only_the_store_writes_refs():
    """No ref transaction, ref deletion or worktree fast-forward outside `store/`: the sleep ref, review and
    night branches and adoption go through `Store` (and `store.fileref`)."""
    writes = {"transaction", "delete_ref", "ff_merge", "build_notes", "checkout_path"}
    offenders = [f"{name}:{node.lineno} .{node.func.attr}" for name, tree in _sources().items()
                 if not name.startswith("store/") for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in writes]
    assert offenders == []
    sync = (PACKAGE / "store" / "sync.py").read_text(encoding="utf-8")
    assert "store._" not in sync  # public Store methods only
    private = [f"{name}:{node.lineno}" for name, tree in _sources("store").items() for node in ast.walk(tree)
               if isinstance(node, ast.Attribute) and node.attr == "__dict__"]
    assert private == []  # no cache hidden in an object's __dict__


def _field_types(module: str) -> dict[str, str]:
    import dataclasses
    import importlib

    mod = importlib.import_module(module)
    return {f"{cls.__name__}.{f.name}": str(f.type) for cls in vars(mod).values()
            if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == module
            for f in dataclasses.fields(cls)}


def test_note_and_night_records_have_no_untyped_fields():
    fields = {**_field_types("skillgit.records.notes"), **_field_types("skillgit.records.core"),
              **_field_types("skillgit.sleep.state")}
    assert {"CandidateNote.update", "GateNote.controls", "GateNote.noise_floor", "NightRecord.usage",
            "NightRecord.scores", "NightRecord.edits"} <= set(fields)
    untyped = {name: kind for name, kind in fields.items() if "Any" in kind or kind.startswith("dict")}
    assert untyped == {}
    assert fields["NightRecord.edits"] == "tuple[StepOutcome, ...]" and fields["NightRecord.usage"] == "Usage"


def test_one_of_each_helper_and_one_vocabulary():
    defs: dict[str, list[str]] = {}
    for name, tree in _sources().items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                defs.setdefault(node.name, []).append(name)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript) \
                    and ast.unparse(node.value.value) == "Literal":
                for target in node.targets:  # the vocabularies are records' enums, never re-declared as Literals
                    assert ast.unparse(target) not in ("StepKind", "Verdict"), name
    assert len(defs["Decision"]) == 1 and len(defs["StepKind"]) == 1 and len(defs["Verdict"]) == 1
    # one of each helper (there were two `_first`, three `_known` and three float parsers)
    assert len(defs.get("_first", [])) <= 1 and len(defs.get("_known", [])) <= 1
    assert defs["known_fields"] == ["types.py"]
    assert defs["to_float"] == ["records/core.py"] and "_float" not in defs
    from skillgit.report.model import STEP_KINDS, VERDICTS

    assert STEP_KINDS == ("step", "slow_update", "meta_reflect") and VERDICTS == ("accepted", "rejected")


def test_the_step_kind_has_one_spelling_in_notes_trailers_and_json(project):
    trainer, session = _trainer(project, "train.max_steps=1")
    trainer.train()
    store = session.store
    step = next(e for e in store.history("r1") if e.verdict in ("accepted", "rejected"))
    records = {r["kind"]: r for r in store.read_notes(step.sha)}
    assert records["candidate"]["step_kind"] == records["decision"]["step_kind"] == "step"
    assert "type" not in records["candidate"]
    trailers = git(project, "log", "-1", "--format=%(trailers:only)", step.sha)
    assert "Skillgit-Step-Kind: step" in trailers and "Skillgit-Kind:" not in trailers
    status = json.loads(run_cli_inproc("status", "--json", cwd=project).stdout)
    assert status["last"]["kind"] == "step"  # a StepOutcome's JSON (docs/JSON.md): `kind`


def test_the_slow_update_orders_pairs_as_the_prompt_shows_them():
    """loop/epoch kept its own order (persistent failures before improvements), contradicting prompts.KIND_ORDER."""
    from skillgit import prompts
    from skillgit.loop import epoch

    assert tuple(epoch.counts([])) == prompts.KIND_ORDER

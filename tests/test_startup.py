"""Start-up: `skillgit --help` and `skillgit log` import only what they need.

Each test runs the real entry point in a fresh interpreter and asserts the *set of modules* it imported (never a
time: tests do not time things). `--help` must not pay for git, the store, the training loop, the simulated world,
YAML or any model SDK; `log` needs the store (and GitPython) but nothing of training.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git

PROBE = """
import json, sys
{first}
sys.argv = ["skillgit", *json.loads(sys.argv[1])]
from skillgit.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
sys.stderr.write("\\nMODULES " + json.dumps({"code": code, "modules": sorted(sys.modules)}) + "\\n")
"""

# Never needed to print help or the log: the training loop, the world, the model SDKs and their HTTP stack.
# (The config reads the backend names from the leaf `skillgit.backend_table`, never a backend.)
TRAINING = ("skillgit.loop", "skillgit.world", "skillgit.session", "skillgit.llm.openai_backend",
            "skillgit.llm.anthropic_backend", "skillgit.llm.command", "skillgit.llm.cache", "openai", "anthropic",
            "httpx", "rich.progress", "skillgit.report", "skillgit.sleep")


# What the probe must not inherit: CI's coverage of subprocesses (coverage imports `socket` and more of its own
# when it starts, eagerly or on the first import of skillgit: .ci/lazy_coverage.py). The modules asserted are
# skillgit's, not the measuring tool's.
COVERAGE_VARIABLES = ("COVERAGE_PROCESS_START", "COVERAGE_PROCESS_CONFIG", "COVERAGE_LAZY_SKILLGIT_CONFIG")


def imported(args: list[str], cwd: Path, first: str = "") -> tuple[int, set[str], str]:
    """(exit code, modules imported, stdout) of `skillgit ARGS` in a fresh interpreter that ran `first` before."""
    env = {k: v for k, v in os.environ.items() if k not in COVERAGE_VARIABLES}
    proc = subprocess.run([sys.executable, "-c", PROBE.replace("{first}", first), json.dumps(args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env={**env, "COLUMNS": "100"})
    head, _, tail = proc.stderr.rpartition("\nMODULES ")
    assert tail, proc.stderr
    data = json.loads(tail)
    return data["code"], set(data["modules"]), proc.stdout


def loaded(modules: set[str], prefix: str) -> bool:
    return any(m == prefix or m.startswith(prefix + ".") for m in modules)


def test_help_imports_no_git_store_loop_yaml_or_sdk(tmp_path):
    code, modules, out = imported(["--help"], tmp_path)
    assert code == 0 and "log" in out and "train" in out  # every command is still listed
    for heavy in (*TRAINING, "skillgit.llm", "git", "yaml", "pydantic", "skillgit.store", "skillgit.project",
                  "skillgit.config"):
        assert not loaded(modules, heavy), f"`skillgit --help` imported {heavy}"
    assert loaded(modules, "typer")


# typer's help renderer imports these at its top; skillgit's help uses none of them (cli/usage.py)
RICH_UNUSED = ("rich.markdown", "markdown_it", "rich.traceback", "pygments")


@pytest.mark.parametrize("args", [["--help"], ["train", "--help"], ["sleep"], ["sleep", "run", "--help"]])
def test_help_reads_the_same_without_importing_richs_markdown_and_traceback(tmp_path, args):
    code, modules, out = imported(args, tmp_path)
    for unused in RICH_UNUSED:
        assert not loaded(modules, unused), f"`skillgit {' '.join(args)}` imported {unused}"
    # byte for byte what typer prints with the real classes imported beforehand
    code_real, modules_real, out_real = imported(args, tmp_path, first="import rich.markdown, rich.traceback")
    assert loaded(modules_real, "markdown_it")  # (the comparison is with the real classes)
    assert (code, out) == (code_real, out_real) and "Usage: skillgit" in out


def test_every_commands_annotations_are_objects_not_strings():
    """typer reads the type hints of every command it builds (`--help` builds them all); under `from __future__
    import annotations` each would be a string that `typing.get_type_hints` compiles at every start."""
    import skillgit.cli

    def callbacks(app):
        found = [app.registered_callback.callback] if app.registered_callback else []
        found += [c.callback for c in app.registered_commands]
        for group in app.registered_groups:
            found += callbacks(group.typer_instance)
        return [f for f in found if f is not None]

    everything = callbacks(skillgit.cli.app)
    assert len(everything) > 30
    strings = [f"{f.__module__}.{f.__name__}: {k}" for f in everything for k, v in f.__annotations__.items()
               if isinstance(v, str)]
    assert strings == []


STAND_INS = """
from skillgit.cli import usage
usage.import_help_renderer()
import rich.markdown, rich.traceback, typer.rich_utils as r
assert r.Markdown is not rich.markdown.Markdown and r.Traceback is not rich.traceback.Traceback  # stand-ins
md = r._make_rich_text(text="**bold**", style="", markup_mode="markdown")
assert type(md) is rich.markdown.Markdown and isinstance(md, r.Markdown), md
try:
    1 / 0
except ZeroDivisionError as exc:
    tb = r.Traceback.from_exception(type(exc), exc, exc.__traceback__)
assert type(tb) is rich.traceback.Traceback and isinstance(tb, r.Traceback)
print("ok")
"""


def test_the_help_renderers_stand_ins_do_the_real_classes_work_when_used(tmp_path):
    """A typer feature skillgit does not use (markdown help, pretty tracebacks) still works: it gets the real
    classes, and any later import of those modules gets the real module."""
    env = {k: v for k, v in os.environ.items() if k not in COVERAGE_VARIABLES}
    proc = subprocess.run([sys.executable, "-c", STAND_INS], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.stdout.strip() == "ok", proc.stderr


def test_version_imports_as_little_as_help(tmp_path):
    code, modules, out = imported(["--version"], tmp_path)
    assert code == 0 and out.startswith("skillgit ")
    assert not loaded(modules, "git") and not loaded(modules, "skillgit.store")


@pytest.mark.parametrize("args", [["log"], ["log", "--json"]])
def test_log_imports_the_store_but_nothing_of_training(make_repo, args):
    root = make_repo({"SKILL.md": "# Skill\n\nBe helpful.\n"})
    (root / "skillgit.yaml").write_text("skill:\n  path: SKILL.md\n")
    git(root, "add", "skillgit.yaml")
    git(root, "commit", "-qm", "config")
    code, modules, out = imported(args, root)
    assert code == 0, out
    assert loaded(modules, "skillgit.store") and loaded(modules, "git")
    for heavy in TRAINING + NOT_READ + NOT_READ_BY_LOG:
        assert not loaded(modules, heavy), f"`skillgit {' '.join(args)}` imported {heavy}"
    # the first run parsed skillgit.yaml and kept it (config_yaml.load_cached): the next one imports no YAML
    code, modules, again = imported(args, root)
    assert code == 0 and again == out
    for heavy in TRAINING + NOT_READ + NOT_READ_BY_LOG + UNCHANGED_CONFIG:
        assert not loaded(modules, heavy), f"`skillgit {' '.join(args)}` imported {heavy} the second time"


# Read by neither `log` nor `status`: the agent registry (only a config naming an agent needs it checked), the
# installed backend plugins' entry points (a built-in backend name is valid without them) and the scorers (a config
# keeping the default scorer type needs no registry lookup).
NOT_READ = ("skillgit.agents", "importlib.metadata", "skillgit.scorers")
# Nor by `log` of a single-file skill without `skills:`: the library's config, skill packages, the lock's host name,
# the note records and a run's progress (`skillgit.records` imports its modules on first use: log's cache holds
# plain entries).
NOT_READ_BY_LOG = ("skillgit.library.config", "skillgit.package", "socket", "skillgit.records.notes",
                   "skillgit.records.progress")
# Nor by either of them when skillgit.yaml is as the last command read it: PyYAML (importing it compiles its
# reader's character class, ~59 M instructions; the parsed file is kept in .git/skillgit/cache/config.json).
UNCHANGED_CONFIG = ("yaml",)


def test_status_imports_its_sparkline_but_not_the_report_page(tmp_path):
    from skillgit.cli.demo import create_project
    from skillgit.project import open_project
    from skillgit.session import build_trainer, open_session

    create_project(tmp_path / "p", 0)
    session = open_session(open_project(tmp_path / "p", None, ["train.max_steps=2", "evaluation.eval_test=false"]))
    build_trainer(session, run_id="r1", resume=False).train()
    code, modules, out = imported(["status"], tmp_path / "p")
    assert code == 0 and "r1" in out, out
    assert loaded(modules, "skillgit.report.sparkline") and loaded(modules, "skillgit.store")
    assert "usage by stage and role" in out and "completion tok" in out  # its usage table, in plain columns
    # nor rich (status prints plain lines and columns, as `log` does), the library's runs (a run id without a dot is
    # no library skill's) or the note records
    for heavy in ("skillgit.report.charts", "skillgit.report.html", "skillgit.report.svg", *NOT_READ, *UNCHANGED_CONFIG,
                  *(m for m in TRAINING if m != "skillgit.report"), "rich", "skillgit.library.all",
                  "skillgit.records.notes"):
        assert not loaded(modules, heavy), f"`skillgit status` imported {heavy}"


def test_log_and_status_ask_git_where_the_repository_is_once(tmp_path, cli):
    """Finding the project's top folder and opening its repository is one `git rev-parse` (it was two: the
    project's `--show-toplevel`, then the store's own), from the top folder or below it."""
    from skillgit.cli.demo import create_project
    from skillgit.project import open_project
    from skillgit.session import build_trainer, open_session

    create_project(tmp_path / "p", 0)
    session = open_session(open_project(tmp_path / "p", None, ["train.max_steps=1", "evaluation.eval_test=false"]))
    build_trainer(session, run_id="r1", resume=False).train()
    (tmp_path / "p" / "docs").mkdir()
    for args in (["log"], ["status"], ["log", "--json"], ["status", "--json"]):
        for cwd in (tmp_path / "p", tmp_path / "p" / "docs"):
            trace = tmp_path / f"trace-{'-'.join(args)}-{cwd.name}"
            done = cli(*args, cwd=cwd, env={"GIT_TRACE": str(trace)})
            assert done.returncode == 0 and "r1" in done.stdout, done.stderr
            ran = [line.split("built-in: ", 1)[1] for line in trace.read_text().splitlines() if "built-in: " in line]
            assert [c for c in ran if c.startswith("git rev-parse")] == [
                "git rev-parse --path-format=absolute --git-common-dir --absolute-git-dir --is-bare-repository "
                "--show-object-format --show-toplevel"], (args, cwd, ran)


# `python -m skillgit.world.agent` as a rollout runs it; its stream-json goes to stdout, the modules to stderr.
AGENT_PROBE = """
import json, runpy, sys
sys.argv = ["skillgit.world.agent", *json.loads(sys.argv[1])]
try:
    runpy.run_module("skillgit.world.agent", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
sys.stderr.write("\\nMODULES " + json.dumps({"code": code, "modules": sorted(sys.modules)}) + "\\n")
"""


def test_the_simulated_coding_agent_imports_only_the_coding_world(tmp_path):
    """The simulated coding agent starts once per rollout of every agentic run on the simulated world (the
    `--agentic` demo: 112 starts in 3 steps): it needs the coding world, not the text world's student, teacher,
    probes and benchmark table, which `import skillgit.world` loaded eagerly (~11 ms of CPU a start)."""
    import shutil

    from skillgit.resources import example_dir

    example = example_dir("agentic")
    shutil.copytree(example / "repos" / "textkit", tmp_path / "ws")
    shutil.copytree(example / "reference_skill", tmp_path / "ws" / ".claude" / "skills" / "house")
    prompt = json.loads((example / "tasks.jsonl").read_text().splitlines()[0])["prompt"]
    env = {k: v for k, v in os.environ.items() if k not in COVERAGE_VARIABLES}
    args = ["--seed", "0", "--sample", "0", "--output-format", "stream-json", prompt]
    proc = subprocess.run([sys.executable, "-c", AGENT_PROBE, json.dumps(args)], cwd=tmp_path / "ws",
                          capture_output=True, text=True, timeout=120, env=env)
    data = json.loads(proc.stderr.rpartition("\nMODULES ")[2] or "{}")
    assert data.get("code") in (0, None), proc.stderr[-2000:]
    assert json.loads(proc.stdout.splitlines()[-1])["type"] == "result"  # it really worked on the task
    assert "def slugify" in (tmp_path / "ws" / "textkit" / "strings.py").read_text()
    modules = set(data["modules"])
    assert loaded(modules, "skillgit.world.coding")
    for other in ("skillgit.world.climb", "skillgit.world.student", "skillgit.world.teacher",
                  "skillgit.world.probing", "skillgit.world.tasks", "skillgit.llm"):
        assert not loaded(modules, other), f"the simulated coding agent imported {other}"

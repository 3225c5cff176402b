"""Shared test fixtures. Every test runs hermetically: its own HOME, no system or global git config, fixed
author/committer dates and identity, and no API keys from the developer's environment."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from typing import Iterator

import pytest

FIXED_DATE = "2026-01-01T00:00:00+00:00"
_ROOT = Path(__file__).resolve().parents[1]


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto` (pyproject's addopts): one worker more than the cores. Many tests wait on child processes (the
    CLI, git, the agent CLIs, pytest verifiers, a simulated model's latency), and with a worker per core the cores
    idle meanwhile: on 2 cores, 3 workers ran a 362-test sample under CI's coverage in 139 s against 154–159 s for
    2 (4 workers: 149 s)."""
    return (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1) + 1


# Markers that say a test takes seconds, not milliseconds (pyproject.toml's markers): a real agent CLI, a Ray
# cluster, a browser, or `slow` itself.
HEAVY_MARKERS = ("slow", "ray", "browser", "agent_cli")


def pytest_collection_modifyitems(config, items) -> None:
    """Heavy modules first: every module holding a test with a HEAVY_MARKERS marker runs before the modules that hold
    none, each module whole and in its own order (a module-scoped fixture is still built once per worker), the
    rest of the order unchanged. xdist hands tests out in this order as workers free up, so the last tests of a
    run are short ones: in alphabetical order the run ended on test_world_coding's climbs and test_ui's dashboard
    runs (20-45 s each) with the other core idle. Every xdist worker sorts the same collection the same way."""
    heavy = {item.path for item in items if any(item.get_closest_marker(m) for m in HEAVY_MARKERS)}
    items.sort(key=lambda item: item.path not in heavy)


@pytest.fixture(autouse=True)
def hermetic_env(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Author")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "author@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Committer")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "committer@example.com")
    monkeypatch.setenv("GIT_AUTHOR_DATE", FIXED_DATE)
    monkeypatch.setenv("GIT_COMMITTER_DATE", FIXED_DATE)
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    for name in list(os.environ):
        upper = name.upper()
        if any(s in upper for s in ("API_KEY", "OPENAI", "ANTHROPIC", "AZURE_")) or upper.startswith("SKILLGIT_"):
            if name not in ("SKILLGIT_LIVE_BASE_URL", "SKILLGIT_LIVE_MODEL", "SKILLGIT_LIVE_API_KEY"):
                monkeypatch.delenv(name, raising=False)
    # `skillgit sleep schedule` never reaches the machine's real crontab from a test: a test that means to schedule
    # passes its own fake (tests/test_sleep_schedule.py)
    monkeypatch.setenv("SKILLGIT_CRONTAB", str(home / "no-real-crontab-in-tests"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "160")
    # A nested pytest (an agentic task's verifier, run hundreds of times by the suite) sees neither this run's
    # options (CI's `--cov`, whose plugin would combine and delete other processes' data files) nor the plugins
    # this environment happens to have: autoloading them (hypothesis above all) cost 1.25 s of CPU per verifier
    # against 0.24 s without, and no verifier here uses one. Coverage of skillgit's own subprocesses does not
    # depend on either (coverage's `patch = ["subprocess"]` in pyproject.toml).
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    yield


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the source (the build must not write into the working tree), once per test
    run: tests/test_packaging.py and tests/test_provenance.py only read it (a module fixture of one, imported by
    the other, built it twice; then one build per xdist worker). Under xdist the first worker to need it builds it
    in the run's shared temporary folder while holding a lock there; the others wait for it and read the same
    file."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return _build_wheel(tmp_path_factory.mktemp("wheel"))
    shared = tmp_path_factory.getbasetemp().parent  # pytest-N/, whose popen-gwN/ folders are the workers' own
    with open(shared / "wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if the build fails
        built = sorted((shared / "wheel" / "dist").glob("skillgit-*.whl"))
        if len(built) == 1:
            return built[0]
        shutil.rmtree(shared / "wheel", ignore_errors=True)  # a failed build's leftovers
        return _build_wheel(shared / "wheel")


def _build_wheel(tmp: Path) -> Path:
    src, dist = tmp / "src", tmp / "dist"
    src.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".*")
    for name in ("pyproject.toml", "README.md", "LICENSE", "skillgit", "templates", "hooks", "examples"):
        path = _ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        elif path.is_file():
            shutil.copy2(path, src / name)
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        # No index reachable for the isolated build's setuptools: build with what this environment has.
        retry = subprocess.run([*cmd, "--no-build-isolation"], capture_output=True, text=True, timeout=600)
        assert retry.returncode == 0, f"wheel build failed:\n{proc.stderr}\n--- without isolation:\n{retry.stderr}"
    wheels = sorted(dist.glob("skillgit-*.whl"))
    assert len(wheels) == 1
    return wheels[0]


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run real git in `cwd` and return stdout (stripped of the final newline)."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout.rstrip("\n")


def approve_configuration(repo: Path) -> int:
    """Approve on this machine what `repo`'s skillgit.yaml would have a night run or send somewhere (its commands,
    endpoints, a `confine: off`: `skillgit.sleep.approval`), as `sleep schedule` does; how many approvals changed."""
    from skillgit.config import load_config
    from skillgit.sleep import approval

    configured = approval.config_commands(load_config(repo / "skillgit.yaml"), repo)  # (and the files they run)
    return approval.record(repo / ".git", (), approve=True, config=configured)


@pytest.fixture
def make_repo(tmp_path):
    """Create a real git repository with `files` committed on main; returns its path."""

    def _make(files: dict[str, str] | None = None, name: str = "repo") -> Path:
        root = tmp_path / name
        root.mkdir()
        git(root, "init", "-q", "-b", "main")
        for rel, text in (files or {"SKILL.md": "# Skill\n\nBe helpful.\n"}).items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            git(root, "add", rel)
        git(root, "commit", "-q", "-m", "initial")
        return root

    return _make


def run_cli(*args: str, cwd: Path, input: str | None = None, env: dict | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
    """Invoke the real `skillgit` CLI in a subprocess (python -m skillgit), capturing stdout and stderr."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-m", "skillgit", *args], cwd=cwd, capture_output=True, text=True,
                          input=input, env=full_env, timeout=timeout)


@pytest.fixture
def cli():
    return run_cli


# The working directory is per process; xdist runs tests in separate processes, so only threads of this process
# could race on it. The lock keeps a chdir/restore pair atomic for them.
_CWD_LOCK = threading.RLock()


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    with _CWD_LOCK:
        previous = os.getcwd()
        os.chdir(folder)
        try:
            yield
        finally:
            os.chdir(previous)


def _exit_code(code: object) -> int:
    """What the interpreter makes of `SystemExit(code)`: None is 0, an int itself, anything else 1."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def _text(data: bytes) -> str:
    """Bytes as `subprocess.run(..., text=True)` returns them: UTF-8 with universal newlines."""
    return data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")


def run_cli_inproc(*args: str, cwd: Path, input: str | None = None,
                   env: dict | None = None) -> subprocess.CompletedProcess:
    """Invoke the same entry point as `run_cli` (`skillgit.cli.main`, which turns a SkillgitError into
    `error:`/`hint:` lines and its exit code) in this process, in folder `cwd`, with stdin `input`, `env`
    overrides and stdout/stderr captured apart by typer's CliRunner. Returns what `run_cli` returns. An
    exception that is not a SkillgitError ends like in the interpreter: a traceback on stderr and exit code 1.

    The process is left as it was: cwd, os.environ, the SIGINT handler, sys.excepthook, the process-wide secret
    registry, and sys.path together with the modules imported from folders the run added to it (a python scorer's
    project root) — all of which a real CLI process would drop when it exits."""
    from typer.testing import CliRunner

    from skillgit import cli, console, redact

    runner = CliRunner()
    # a process makes its rich consoles on first use, reading COLUMNS then: a run here gets its own, as a real CLI
    # process would (one made earlier, e.g. in a module fixture outside the COLUMNS=160 environment, kept its width)
    saved_consoles = dict(console._consoles)
    console._consoles.clear()
    saved_env = dict(os.environ)
    saved_sigint = signal.getsignal(signal.SIGINT)
    saved_excepthook = sys.excepthook
    saved_secrets = redact.registered()
    saved_path, saved_modules = list(sys.path), set(sys.modules)
    code = 0
    try:
        with _inside(cwd), runner.isolation(input=input, env=env, color=False) as (out, err, _):
            try:
                cli.main(list(args), prog_name="skillgit")
            except SystemExit as exc:
                code = _exit_code(exc.code)
                if not isinstance(exc.code, (int, type(None))):
                    print(exc.code, file=sys.stderr)
            except Exception:
                traceback.print_exc()
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                stdout, stderr = _text(out.getvalue()), _text(err.getvalue())
    finally:
        console._consoles.clear()
        console._consoles.update(saved_consoles)
        signal.signal(signal.SIGINT, saved_sigint)
        sys.excepthook = saved_excepthook
        with redact._registry_lock:
            redact._registered = saved_secrets
        for name in set(os.environ) - set(saved_env):
            del os.environ[name]
        os.environ.update(saved_env)
        added = [os.path.join(p, "") for p in sys.path if p and p not in saved_path]
        sys.path[:] = saved_path
        for name in set(sys.modules) - saved_modules:
            if (getattr(sys.modules[name], "__file__", None) or "").startswith(tuple(added)):
                del sys.modules[name]
    return subprocess.CompletedProcess(["skillgit", *args], code, stdout, stderr)


@pytest.fixture
def cli_inproc():
    return run_cli_inproc

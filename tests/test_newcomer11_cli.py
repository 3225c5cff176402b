"""What a newcomer hit following README.md in a fresh clone, fresh venv and fresh HOME (wave 11), each through the
real CLI on real git repositories in temporary folders:

- `skillgit show 2` (the README's first command after the demo) crashed with a traceback in a plain
  `pip install .`: typer ≥ 0.2x vendors click and no longer installs the click package, and `show` imported it for
  its pager. The test environment has click (uvicorn, from the `mcp` extra, pulls it in), so these tests run the
  CLI in a subprocess where `import click` fails, as it does in a newcomer's environment.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.helpers import demo_project

try:  # typer's vendored click: a typer that still depends on the click package makes the point moot
    import typer._click  # noqa: F401
    VENDORED = True
except ImportError:  # pragma: no cover - an older typer
    VENDORED = False


def _no_click(tmp: Path) -> dict[str, str]:
    """An environment whose `import click` fails, as in a fresh `pip install .` (no package depends on click)."""
    shadow = tmp / "no-click"
    (shadow / "click").mkdir(parents=True, exist_ok=True)
    (shadow / "click" / "__init__.py").write_text(
        "raise ImportError('click is not installed (a fresh `pip install .` has none)')\n", encoding="utf-8")
    path = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(shadow), path) if p)}


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    root = demo_project(tmp_path_factory.mktemp("nc11") / "p")
    proc = run_cli("train", "--set", "train.max_steps=2", cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return root


@pytest.mark.skipif(not VENDORED, reason="typer depends on the click package")
def test_show_works_without_the_click_package(trained, tmp_path):
    env = _no_click(tmp_path)
    probe = subprocess.run([sys.executable, "-c", "import click"], env={**os.environ, **env}, capture_output=True)
    assert probe.returncode != 0  # the shadow works: click cannot be imported in these subprocesses
    for args in (("show", "2"), ("show", "2", "--full")):
        proc = run_cli(*args, cwd=trained, env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr
        assert "val" in proc.stdout and "@@" in proc.stdout  # the summary with its diff


@pytest.mark.skipif(not VENDORED, reason="typer depends on the click package")
def test_show_on_a_terminal_pages_through_the_users_pager_without_click(trained, tmp_path):
    """On a terminal `show` pages like `git show`: through $PAGER (here `cat`, which marks nothing), never a crash."""
    env = {**os.environ, **_no_click(tmp_path), "PAGER": "cat", "MANPAGER": "cat", "TERM": "dumb-but-not-dumb"}
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdin and stdout are the terminal
        os.chdir(trained)
        os.execve(sys.executable, [sys.executable, "-m", "skillgit", "show", "2"], env)
    out = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 120)
        if not ready:
            os.kill(pid, 9)
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    text = out.decode("utf-8", "replace")
    assert os.waitstatus_to_exitcode(status) == 0, text[-2000:]
    assert "Traceback" not in text and "@@" in text


# ---------------------------------------------------------------------------------------------- init's config
# The keys `skillgit init` writes with a value of its own choosing (the rest repeat the defaults for the reader).
INIT_CHOICES = {"skill.path", "skill.branch", "model.teacher_backend", "model.teacher_model",
                "model.student_backend", "model.student_model"}


def _leaves(data: object, prefix: str = "") -> dict[str, object]:
    if isinstance(data, dict):
        out: dict[str, object] = {}
        for key, value in data.items():
            out.update(_leaves(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: data}


def test_init_writes_the_defaults_it_shows_not_a_weaker_gate(make_repo):
    """`skillgit init`'s skillgit.yaml wrote `gate: significance`, dropping the default's `per_item` guard (a
    newcomer's first run accepted candidates that broke an item), under a comment describing the stderr test
    that is not the default. Every key it writes, other than the ones it chooses, must be the default."""
    import yaml

    root = make_repo({"SKILL.md": "# Skill\n\nBe helpful.\n"})
    proc = run_cli("init", cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    written = _leaves(yaml.safe_load((root / "skillgit.yaml").read_text(encoding="utf-8")))
    (root / "empty.yaml").write_text("{}\n", encoding="utf-8")
    shown = run_cli("config", "show", "--json", cwd=root)
    default = run_cli("config", "show", "--json", "--config", "empty.yaml", cwd=root)
    assert shown.returncode == 0 and default.returncode == 0, shown.stderr + default.stderr
    got, want = _leaves(__import__("json").loads(shown.stdout)), _leaves(__import__("json").loads(default.stdout))
    assert got["evaluation.gate"] == want["evaluation.gate"] == ["significance", "per_item"]
    differ = {key for key in written if key not in INIT_CHOICES and got.get(key) != want.get(key)}
    assert not differ, {key: (got.get(key), want.get(key)) for key in differ}


# ---------------------------------------------------------------------------------------------- config mistakes
def _merged(text: str, extra: str) -> str:
    """The config `text` with the sections of `extra` merged in, key by key (a key of `extra` wins)."""
    import yaml

    data, more = yaml.safe_load(text), yaml.safe_load(extra)
    for section, keys in more.items():
        data[section] = {**data[section], **keys} if isinstance(keys, dict) else keys
    return yaml.safe_dump(data, sort_keys=False)


@pytest.mark.parametrize(("yaml_text", "overrides", "named", "fix"), [
    # a misspelled key in the file: the error names the file (it named only the key), and the fix
    ("train:\n  epochs: 3\n", (), "skillgit.yaml: unknown config key 'train.epochs'", "'train.num_epochs'"),
    # `lr` was answered "did you mean 'optimizer'?", the section the key already sat in
    ("optimizer:\n  lr: 3\n", (), "unknown config key 'optimizer.lr'", "'optimizer.learning_rate'"),
    ("train:\n  lr: 3\n", (), "unknown config key 'train.lr'", "'optimizer.learning_rate'"),
    # a role's model and backend sit beside its settings section: answered "did you mean 'model'?"
    ("", ("-c", "model.student.model=gpt-4.1"), "unknown config key 'model.student.model'", "'model.student_model'"),
    ("", ("-c", "model.teacher_base_url=http://127.0.0.1:1/v1"), "model.teacher_base_url",
     "'model.teacher.base_url'"),
    # the backend written as the role's section: "write it as `key: value` lines" did not say where it goes
    ("model:\n  teacher: openai\n", (), "model.teacher: expected a mapping", "`model.teacher_backend: openai`"),
])
def test_config_mistakes_name_the_key_and_the_fix(tmp_path, yaml_text, overrides, named, fix):
    root = demo_project(tmp_path / "p")
    config = root / "skillgit.yaml"
    if yaml_text:
        config.write_text(_merged(config.read_text(encoding="utf-8"), yaml_text), encoding="utf-8")
    proc = run_cli("train", "--dry-run", *overrides, cwd=root)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    error, hint = proc.stderr.strip().splitlines()[-2:]
    assert error.startswith("error: ") and named in error, proc.stderr
    assert hint.startswith("hint: ") and fix in hint, proc.stderr


# ---------------------------------------------------------------------------------------------- revert
def test_revert_in_a_fresh_project_says_there_is_nothing_to_revert(make_repo):
    """`skillgit revert` before any training said "'<40 hex digits>' is the first commit … use --to REV"."""
    import re

    from tests.conftest import git

    root = make_repo({"SKILL.md": "# Skill\n\nBe helpful.\n"})
    before = git(root, "rev-parse", "main")
    proc = run_cli("revert", cwd=root)
    assert proc.returncode == 3, proc.stderr
    assert "error: nothing to revert: 'main' has one commit" in proc.stderr
    assert "skillgit train" in proc.stderr and not re.search(r"[0-9a-f]{40}", proc.stderr)
    assert git(root, "rev-parse", "main") == before and git(root, "status", "--porcelain") == ""


# ---------------------------------------------------------------------------------------------- --help
def _leaf_commands() -> dict[str, object]:
    import typer.main

    from skillgit.cli import app

    out: dict[str, object] = {}

    def walk(command: object, path: tuple[str, ...]) -> None:
        subs = getattr(command, "commands", None)
        if isinstance(subs, dict) and subs:
            for name, sub in subs.items():
                walk(sub, (*path, name))
        else:
            out[" ".join(path)] = command

    walk(typer.main.get_command(app), ())
    return out


def test_every_command_help_ends_with_examples_the_command_accepts(tmp_path):
    """No command's --help had an example (the README's command table had them). Every example must parse with
    the command's own options, so the help never shows a line that fails as written."""
    import shlex

    from skillgit.cli.examples import EXAMPLES

    leaves = _leaf_commands()
    assert set(EXAMPLES) == set(leaves), "every command has examples, and no example names a command that is gone"
    for path, command in leaves.items():
        for line in EXAMPLES[path]:
            words = shlex.split(line.split("  #")[0].split(" > ")[0])
            assert words[:1 + len(path.split())] == ["skillgit", *path.split()], line
            ctx = command.make_context(path, words[1 + len(path.split()):])  # type: ignore[attr-defined]
            ctx.close()
    for path in ("train", "revert", "sleep adopt", "config show", ""):
        proc = run_cli(*path.split(), "--help", cwd=tmp_path, env={"COLUMNS": "200"})
        assert proc.returncode == 0, proc.stderr
        text = " ".join(proc.stdout.split())
        want = EXAMPLES.get(path, ("skillgit demo", "skillgit COMMAND --help"))
        assert ("Examples:" if path else "Start here:") in text and all(" ".join(w.split()) in text for w in want)


def test_the_command_listing_keeps_each_summary_on_its_own_lines(tmp_path):
    """`skillgit --help` broke `show`'s summary where its docstring's source line ended ("(--full:" / "every" /
    "note record)"), however wide the terminal."""
    proc = run_cli("--help", cwd=tmp_path, env={"COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if " show " in line)
    assert "(--full: every note record)" in row


# ---------------------------------------------------------------------------------------------- init --env
def test_init_env_commits_the_sample_it_copied(tmp_path):
    """`init --env textgame --commit` committed SKILL.md and skillgit.yaml but left the copied sample (what
    env.tasks names) untracked, and without --commit the printed `git add` line left it out: a clone, or CI's
    `skillgit check`, had no tasks."""
    from tests.conftest import git

    root = tmp_path / "bench"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    proc = run_cli("init", "--env", "textgame", "--commit", cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert "data/textgame/games.jsonl" in git(root, "ls-files").splitlines()
    other = tmp_path / "advised"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    proc = run_cli("init", "--env", "textgame", cwd=other)
    assert proc.returncode == 0, proc.stderr[-2000:]
    add = next(line for line in proc.stderr.splitlines() if line.strip().startswith("git add"))
    assert "data/textgame" in add.split()


def test_init_commit_without_a_git_identity_writes_and_stages_nothing(make_repo, tmp_path):
    """In a fresh HOME `init --commit` wrote skillgit.yaml and .gitignore, staged them and the skill, then failed
    at the commit: the user's index was left changed. Now the identity is checked before anything is written."""
    from tests.conftest import git

    root = make_repo({"AGENTS.md": "# Agents\n\nBe helpful.\n"})
    nobody = tmp_path / "nobody.gitconfig"
    nobody.write_text("[user]\n\tuseConfigOnly = true\n", encoding="utf-8")  # never guess from the host name
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_")) and k != "EMAIL"}
    env["GIT_CONFIG_GLOBAL"] = str(nobody)
    proc = subprocess.run([sys.executable, "-m", "skillgit", "init", "--commit"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert "git config user.name" in proc.stderr and "Traceback" not in proc.stderr
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""  # nothing written, nothing staged


@pytest.mark.parametrize("extra", [(), ("--sleep",), ("--library",)])
def test_demo_steps_zero_is_refused_not_run_as_eight(tmp_path, extra):
    """`skillgit demo --steps 0` trained the default 8 steps (`steps or 8`)."""
    proc = run_cli("demo", "--dir", str(tmp_path / "d"), "--steps", "0", *extra, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "error: --steps must be at least 1, got 0" in proc.stderr
    assert not (tmp_path / "d").exists()


# ---------------------------------------------------------------------------------------------- runs by name
def test_a_mistyped_run_is_named_not_taken_for_an_empty_history(trained):
    """`log --run <typo>` said "no training steps yet (run `skillgit train`)" with exit 0; `log -n -1` the same."""
    proc = run_cli("log", "--run", "no-such-run", cwd=trained)
    assert proc.returncode == 2 and "error: unknown run 'no-such-run'" in proc.stderr, proc.stderr
    assert "hint: known runs: " in proc.stderr
    for args in (("log", "-n", "-1"), ("rejected", "-n", "-2")):
        proc = run_cli(*args, cwd=trained)
        assert proc.returncode == 2 and "must be 0 or more" in proc.stderr, proc.stderr
    proc = run_cli("log", "-n", "0", cwd=trained)
    assert proc.returncode == 0 and proc.stdout == "" and "no training steps" not in proc.stderr


def test_train_run_with_an_id_no_run_has_says_it_starts_a_new_run(tmp_path):
    """`train --run <typo>` silently started (and paid for) a new run of that name."""
    root = demo_project(tmp_path / "p")
    proc = run_cli("train", "--run", "2026112-typo", "--set", "train.max_steps=1", cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "note: there is no run '2026112-typo': starting a new run of that name" in proc.stderr
    again = run_cli("train", "--run", "2026112-typo", "--set", "train.max_steps=1", cwd=root)
    assert again.returncode == 0 and "there is no run" not in again.stderr


# ---------------------------------------------------------------------------------------------- demo --agentic
def test_agentic_demo_without_pytest_says_so_before_any_rollout(tmp_path):
    """After the README's `pip install .` (no pytest), `skillgit demo --agentic` ran every rollout, each verifier
    failed with "No module named pytest", and the demo stopped at step 1 with exit 4 pointing at the student."""
    shadow = tmp_path / "no-pytest"
    (shadow / "pytest").mkdir(parents=True)
    (shadow / "pytest" / "__init__.py").write_text("raise ImportError('no pytest here')\n", encoding="utf-8")
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(shadow), os.environ.get("PYTHONPATH", "")) if p)}
    proc = run_cli("demo", "--agentic", "--steps", "1", "--dir", str(tmp_path / "d"), cwd=tmp_path, env=env)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "pytest is not installed in skillgit's environment" in proc.stderr
    assert "-m pip install pytest" in proc.stderr and "starting run" not in proc.stderr
    assert not (tmp_path / "d").exists()


def test_a_verifier_that_cannot_run_is_not_blamed_on_the_student(tmp_path):
    """Every rollout's verifier failing ("No module named pytest") stopped the run with the hint "check the student
    backend with `skillgit doctor`", which passes: the hint now points at the verify command."""
    from skillgit.cli.demo import create_agentic_project

    root = tmp_path / "agentic"
    root.mkdir()
    create_agentic_project(root, 0)
    shadow = tmp_path / "no-pytest"
    (shadow / "pytest").mkdir(parents=True)
    (shadow / "pytest" / "__init__.py").write_text("raise ImportError('no pytest here')\n", encoding="utf-8")
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(shadow), os.environ.get("PYTHONPATH", "")) if p)}
    proc = run_cli("train", "--set", "train.max_steps=1", "--set", "train.batch_size=2", cwd=root, env=env)
    assert proc.returncode == 4, proc.stderr[-2000:]
    assert "every rollout failed" in proc.stderr and "no pytest here" in proc.stderr
    assert "hint: run the task's verify command by hand" in proc.stderr and "skillgit doctor" not in proc.stderr


def test_the_commands_init_prints_work_from_where_it_ran(make_repo):
    """Run from a sub-folder, `init` printed `git add skillgit.yaml .gitignore` (paths of the repository root), which
    fails there; following the printed lines as written must commit the setup."""
    from tests.conftest import git

    root = make_repo({"docs/AGENTS.md": "# Agents\n\nBe helpful.\n"})
    proc = run_cli("init", "--skill", "AGENTS.md", cwd=root / "docs")
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    todo = [line.strip() for line in lines[lines.index("to start training, commit them:") + 1:]]
    assert todo and todo[0].startswith("cd "), todo
    done = subprocess.run(" && ".join(todo), shell=True, cwd=root / "docs", capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert git(root, "status", "--porcelain") == "" and "skillgit.yaml" in git(root, "ls-files").splitlines()


def test_a_missing_task_file_says_how_to_write_one(make_repo):
    """Right after `skillgit init`, `train --dry-run` said only "point env.tasks at a .jsonl/.yaml file"."""
    root = make_repo({"SKILL.md": "# Skill\n\nBe helpful.\n"})
    assert run_cli("init", "--commit", cwd=root).returncode == 0
    proc = run_cli("train", "--dry-run", cwd=root)
    assert proc.returncode == 2, proc.stderr
    assert "error: env.tasks: task file not found:" in proc.stderr
    assert 'hint: write it, one JSON task per line: {"id": "t1", "input": "…", "expected": "…"}' in proc.stderr


@pytest.mark.parametrize("extra", [(), ("--sleep",), ("--library",)])
def test_demo_dir_that_is_a_file_is_an_error_not_a_traceback(tmp_path, extra):
    target = tmp_path / "notes.txt"
    target.write_text("mine\n", encoding="utf-8")
    proc = run_cli("demo", "--dir", str(target), *extra, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and f"error: {target} is a file, not a folder" in proc.stderr
    assert target.read_text(encoding="utf-8") == "mine\n"


def test_init_on_a_file_is_an_error_not_a_traceback(make_repo):
    """`skillgit init AGENTS.md` (the skill file where the folder goes) was a FileExistsError traceback."""
    root = make_repo({"AGENTS.md": "# Agents\n"})
    proc = run_cli("init", "AGENTS.md", cwd=root)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "is a file, not a folder" in proc.stderr
    assert "--skill AGENTS.md" in proc.stderr and not (root / "skillgit.yaml").exists()


@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_install_with_both_scopes_is_refused_not_one_silently_dropped(make_repo, command):
    """`install claude --project --user` installed into the home folder only (the flag pair keeps the last)."""
    root = make_repo({"SKILL.md": "# Skill\n"})
    proc = run_cli(command, "claude", "--project", "--user", cwd=root)
    assert proc.returncode == 2, proc.stderr
    assert "error: --project and --user exclude each other" in proc.stderr
    assert not (Path(os.environ["HOME"]) / ".claude").exists() and not (root / ".claude").exists()


# ---------------------------------------------------------------------------------------------- Ctrl-C in the demo
def test_ctrl_c_in_demo_dir_says_how_to_resume_and_that_works(tmp_path):
    """Ctrl-C in `skillgit demo --dir D` said "run the same command again to resume", which then refused D as not
    empty. The hint now names the command that resumes the run, and that command ends where an uninterrupted demo
    does."""
    import shlex
    import signal

    slow = tmp_path / "user.yaml"  # the user config slows the simulated model so that the signal lands mid-run
    slow.write_text("model:\n  simulated:\n    latency_s: 0.01\n", encoding="utf-8")
    env = {**os.environ, "SKILLGIT_USER_CONFIG": str(slow)}
    folder = tmp_path / "d"
    proc = subprocess.Popen([sys.executable, "-m", "skillgit", "demo", "--dir", str(folder), "--steps", "2"],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("step "):  # a step is decided and saved
            proc.send_signal(signal.SIGINT)
            break
    rest = proc.stderr.read()
    assert proc.wait(timeout=120) == 130, "".join(seen) + rest
    hint = next(line for line in rest.splitlines() if line.startswith("hint: "))
    command = hint.split("`")[1]
    assert command.startswith(f"cd {shlex.quote(str(folder))} && skillgit train --run demo-seed0"), hint
    done = subprocess.run(command.replace("skillgit train", f"{shlex.quote(sys.executable)} -m skillgit train"),
                          shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "run demo-seed0: finished" in done.stdout + done.stderr and "there is no run" not in done.stderr


def test_init_checks_a_kept_config_now_not_at_the_first_train(make_repo):
    """`init` kept an existing skillgit.yaml without reading it: a misspelled key surfaced only at `train`."""
    root = make_repo({"SKILL.md": "# Skill\n", "skillgit.yaml": "train:\n  epochs: 3\n"})
    proc = run_cli("init", cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "kept the existing skillgit.yaml" in proc.stderr
    assert "warning: the kept skillgit.yaml does not load: unknown config key 'train.epochs'" in proc.stderr
    assert "fix: did you mean 'train.num_epochs'?" in proc.stderr
    assert (root / "skillgit.yaml").read_text(encoding="utf-8") == "train:\n  epochs: 3\n"  # kept as it was

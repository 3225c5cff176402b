"""Credentials under ordinary names never reach an agent or the commands it runs.

The hole: `llm.command.agent_env` dropped a variable only by the look of its *name* (KEY, TOKEN, SECRET, …), so
`DATABASE_URL=postgres://u:pw@h/db`, `MY_SERVICE=ghp_…` or an AWS session token in `AWS_SESSION` reached every
agent student, its setup and verify commands, and the agent teacher. Now a variable whose *value* looks like a
credential (`redact.is_secret_value`: the detector table, `secret_rules.VALUE_RULES`, a known secret value copied
under another name) is withheld too — `keep` (the preset's own key, `env_passthrough`) still wins — and the run's
gate notes name what was withheld (names only) in the student's fingerprint.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from skillgit.agentic.student import AgentStudent
from skillgit.config import CommandCfg
from skillgit.llm.command import agent_env
from skillgit.redact import is_secret_value
from skillgit.types import Item
from tests.conftest import git, run_cli
from tests.helpers import agentic_repo, agentic_tasks

SKILL = "---\nname: demo\ndescription: d\n---\n# Demo\n"
GHP = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2  # a GitHub token's shape (not a real one)
AWS_SESSION = "FwoGZXIvYXdzE" + "Ab3dE5fG7hJ9kL1mN2pQ" * 10  # an AWS STS session token's shape
CREDENTIALS = {"DATABASE_URL": "postgres://app:pw-4f9a2c71@db.internal/prod", "MY_SERVICE": GHP,
               "AWS_SESSION": AWS_SESSION, "COPIED": "copied-teacher-cred-0123456789"}
ORDINARY = {"MY_SETTING": "kept", "INVOCATION_ID": "0123456789abcdef0123456789abcdef",
            "REQUEST_ID": "123e4567-e89b-12d3-a456-426614174000", "LANG": "en_US.UTF-8",
            "JAVA_HOME": "/usr/lib/jvm/Java-17-OpenJDK/jre", "TERM": "xterm-256color"}


def test_values_that_look_like_credentials_are_withheld_whatever_the_name():
    base = {**ORDINARY, **CREDENTIALS, "TEACHER_API_KEY": "copied-teacher-cred-0123456789"}
    env = agent_env(base, keep=("MY_SERVICE",))
    assert env.withheld == ("AWS_SESSION", "COPIED", "DATABASE_URL")  # names only
    assert "TEACHER_API_KEY" not in env  # by its name, as before (not listed: its name says what it is)
    assert env["MY_SERVICE"] == GHP  # `keep` (a preset's own key, env_passthrough) wins
    assert {k: env[k] for k in ORDINARY} == ORDINARY  # ids, paths, locales stay
    assert not is_secret_value("short") and is_secret_value("https://x-access-token:abc123def456@github.com/o/r")


def test_an_agent_its_setup_and_verify_never_see_a_credential_under_an_ordinary_name(tmp_path):
    root = agentic_repo(tmp_path / "proj", {"app/a.txt": "x\n"}, SKILL)
    dump = "import json, os, sys; open(sys.argv[1], 'w').write(json.dumps(dict(os.environ)))"
    env = {**os.environ, **CREDENTIALS, **ORDINARY}

    def argv(name: str) -> str:
        return f"{shlex.quote(sys.executable)} -c {shlex.quote(dump)} {shlex.quote(str(tmp_path / name))}"

    student = AgentStudent(CommandCfg(preset="generic", argv=(sys.executable, "-c", dump, str(tmp_path / "agent")),
                                      output="text", timeout_s=60, env_passthrough=("DATABASE_URL",),
                                      confine="off"),  # (its fakes report into the test's folder)
                           project_root=root, model=None, env=env, skill_path="skill", skill_branch="main")
    item = Item("t1", "p", metadata={"workspace": {"fixture": "app"}, "task_dir": str(root), "setup": [argv("setup")],
                                     "verify": {"command": argv("verify"), "result": "exit_code", "timeout_s": 30}})
    student.run(SKILL, item)
    for name in ("agent", "setup", "verify"):
        seen = json.loads((tmp_path / name).read_text())
        assert not {"MY_SERVICE", "AWS_SESSION"} & set(seen), name
        assert seen["DATABASE_URL"] == CREDENTIALS["DATABASE_URL"], name  # passed through on purpose
        assert seen["MY_SETTING"] == "kept" and seen["INVOCATION_ID"] == ORDINARY["INVOCATION_ID"], name
    fingerprint = student.fingerprint()
    assert fingerprint["withheld"] == "AWS_SESSION, MY_SERVICE"
    assert GHP not in json.dumps(fingerprint) and AWS_SESSION not in json.dumps(fingerprint)


def test_the_runs_gate_notes_name_what_was_withheld_and_hold_no_value(tmp_path):
    project = agentic_repo(tmp_path / "proj", {"repos/app/a.txt": "x\n"}, SKILL)
    seen = tmp_path / "agent-env.jsonl"
    agent = ("import json, os, sys; open(sys.argv[1], 'a').write(json.dumps(sorted(os.environ)) + chr(10)); "
             "open('done.txt', 'w').write('ok')")
    rows = [{"id": f"t{i}", "prompt": "make done.txt", "workspace": {"fixture": "repos/app"},
             "verify": {"command": "test -f done.txt", "result": "exit_code"}} for i in range(2)]
    argv = json.dumps([sys.executable, "-c", agent, str(seen)])
    agentic_tasks(project, rows, f"{{preset: generic, output: text, confine: off, argv: {argv}}}", workers=1)
    done = run_cli("train", "--new", "--set", "evaluation.gate_repeats=1", "--set", "evaluation.eval_test=false",
                   cwd=project, env={**CREDENTIALS, "SERVICE_TOKEN": CREDENTIALS["COPIED"], "MY_SETTING": "kept"},
                   timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    names = [set(json.loads(line)) for line in seen.read_text().splitlines()]
    assert names and all("MY_SETTING" in n and not set(CREDENTIALS) & n for n in names)
    notes = [git(project, "notes", "--ref=refs/notes/skillgit", "show", line.split()[1])
             for line in git(project, "notes", "--ref=refs/notes/skillgit", "list").splitlines()]
    fingerprints = [(json.loads(r).get(k) or {}).get("fingerprint") for note in notes for r in note.splitlines()
                    if json.loads(r).get("kind") == "gate" for k in ("val", "base")
                    if isinstance((json.loads(r).get(k) or {}).get("fingerprint"), dict)]
    assert fingerprints and all(f["withheld"] == "AWS_SESSION, COPIED, DATABASE_URL, MY_SERVICE"
                                for f in fingerprints), fingerprints
    assert not any(v in "".join(notes) for v in CREDENTIALS.values())


def test_a_refresh_of_the_vendored_rules_keeps_our_hand_kept_value_rules(tmp_path):
    """`scripts/refresh_secret_rules.py` rewrites skillgit/secret_rules.py from gitleaks' toml; the part from the
    `# ---- hand-kept:` line on (`VALUE_RULES`) is ours and survives the refresh as it is."""
    import importlib.util
    import shutil

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("refresh_secret_rules", root / "scripts" / "refresh_secret_rules.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "secret_rules.py"
    shutil.copy(root / "skillgit" / "secret_rules.py", out)
    toml = tmp_path / "gitleaks.toml"
    toml.write_text('[[rules]]\nid = "demo-token"\nregex = \'\'\'\\bdemo_[a-z0-9]{20}\\b\'\'\'\nkeywords = ["demo_"]\n')
    assert module.main([str(toml), "--commit", "0" * 40, "--out", str(out)]) == 0
    text = out.read_text()
    assert "('demo-token'," in text and "('1password-secret-key'," not in text
    namespace: dict = {}
    exec(compile(text, str(out), "exec"), namespace)  # noqa: S102 - the generated module, as Python reads it
    assert [rule[0] for rule in namespace["VALUE_RULES"]] == ["aws-session-token", "random-token-value"]

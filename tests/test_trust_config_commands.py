"""A pulled `skillgit.yaml` is not trusted like code by unattended nights.

The hole: a teammate commits a `skillgit.yaml` whose scorer command, agent command or `env_passthrough` changed; the
user pulls; the nightly `skillgit sleep run` (cron, systemd, the MCP server's `sleep_run`, the plugin's /sleep)
runs it with nobody looking. Now a night runs a command of the configuration only when that exact text was approved
on this machine (`sleep/approval.py`: `ConfigGate`); else it leaves out what needs it — the text tasks an
unapproved scorer would score, everything for an unapproved agent command — says why on stderr and in its report,
`sleep review` shows the command to approve and `sleep status` counts what waits. `sleep schedule` approves what it
shows. (`train` and `demo`, typed by the person in their repository, run its configuration as `make` would.)
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from skillgit.sleep import approval
from skillgit.world import generate_tasks
from tests.conftest import git, run_cli, run_cli_inproc
from tests.fake_servers import fake_server_fixture  # noqa: F401 (the fake_server fixture)
from tests.test_probe12_commands import _night as probe_night
from tests.test_probe12_commands import _project as probe_project
from tests.test_sleep_night import WORLD, make_project, write_sessions

CHECK = """\
import json, sys
data = json.load(sys.stdin)
with open(sys.argv[1], "a") as out:
    out.write(sys.argv[2] + "\\n")
print(1 if data["output"].strip() == str(data["item"]["expected"]).strip() else 0)
"""


def _project(tmp_path: Path, config: str) -> tuple[Path, Path]:
    """A simulated-world project whose skillgit.yaml gets `config`, committed, and a HOME whose sessions mine
    about a dozen recurring text tasks (accepted answers)."""
    repo = make_project(tmp_path / "repo", steps=1, extra=config)
    (repo / "check.py").write_text(CHECK)
    git(repo, "add", "check.py")
    git(repo, "commit", "-qm", "scorer")
    home = tmp_path / "home"
    write_sessions(home, repo, generate_tasks(WORLD, 12))
    return repo, home


def _scorer(canary: Path, tag: str) -> str:
    return f"{shlex.quote(sys.executable)} check.py {shlex.quote(str(canary))} {tag}"


def _pull(repo: Path, old: str, new: str) -> None:
    """A teammate's commit that changes skillgit.yaml, as a pull brings it."""
    path = repo / "skillgit.yaml"
    path.write_text(path.read_text().replace(old, new))
    git(repo, "commit", "-qam", "teammate: tweak the scorer")


def _run(repo: Path, home: Path, date: str, *extra: str):
    return run_cli("sleep", "run", "--home", str(home), "--sources", "claude,codex", "--date", date, "--json",
                   *extra, cwd=repo, timeout=600)


def test_a_pulled_scorer_command_runs_in_a_night_only_once_approved_here(tmp_path):
    canary = tmp_path / "canary"
    repo, home = _project(tmp_path, "")
    path = repo / "skillgit.yaml"
    path.write_text(path.read_text().replace("scorer: {type: exact}",
                                             f"scorer: {{type: command, command: {json.dumps(_scorer(canary, 'A'))}}}"))
    git(repo, "commit", "-qam", "a command scorer")
    assert run_cli_inproc("sleep", "mine", "--home", str(home), "--sources", "claude,codex", cwd=repo).returncode == 0
    shown = run_cli_inproc("sleep", "review", cwd=repo)
    assert f"skillgit.yaml env.scorer.command (not approved): $ {_scorer(canary, 'A')}" in shown.stdout, shown.stdout
    assert run_cli_inproc("sleep", "review", "--approve", cwd=repo).returncode == 0

    _pull(repo, _scorer(canary, "A"), _scorer(canary, "B") + "; true")  # the teammate's text, never approved here
    done = _run(repo, home, "2026-01-10")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert not canary.exists()  # the pulled command never ran
    n = record["tasks"]["in_file"]
    assert n >= 2 and record["status"] == "nothing" and record["tasks"]["excluded"] == {
        approval.SCORER_NOT_APPROVED: n}
    assert f"{n} text task(s) left out: nobody approved the configuration's scorer command" in done.stderr
    report = (repo / ".skillgit" / "sleep" / "2026-01-10.md").read_text()
    assert f"{n} × text task scored by the configuration's scorer (env.scorer)" in report
    status = run_cli_inproc("sleep", "status", cwd=repo)
    assert "skillgit.yaml: env.scorer.command not approved here" in status.stdout, status.stdout
    assert f"{n} left out (not approved)" in status.stdout and "skillgit sleep review" in status.stderr
    shown = run_cli_inproc("sleep", "review", cwd=repo)
    assert f"(not approved): $ {_scorer(canary, 'B')}; true" in shown.stdout

    assert run_cli_inproc("sleep", "review", "--approve", cwd=repo).returncode == 0  # read, then approved
    done = _run(repo, home, "2026-01-11")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["tasks"]["excluded"] == {} and record["tasks"]["used"] == n, record["tasks"]
    assert set(canary.read_text().split()) == {"B"}


def test_an_unapproved_agent_command_runs_nothing_and_schedule_approves_what_it_shows(tmp_path):
    canary = tmp_path / "agent-ran"
    agent = tmp_path / "agent.py"
    agent.write_text(f"import sys\nopen({str(canary)!r}, 'a').write('x')\nprint('no idea')\n")
    argv = json.dumps([sys.executable, str(agent), "{prompt_file}"])
    repo, home = _project(tmp_path, "")
    path = repo / "skillgit.yaml"
    path.write_text(path.read_text().replace(
        "  student_backend: simulated\n",
        f"  student_backend: command\n  student:\n    command: {{preset: generic, argv: {argv}, timeout_s: 60, "
        "confine: off}\n"))  # (the canary outside the rollout shows the agent ran)
    git(repo, "commit", "-qam", "a command student")

    done = _run(repo, home, "2026-01-10", "--yes")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert not canary.exists()
    assert record["status"] == "nothing" and "model.student.command.argv" in record["reason"], record["reason"]
    n = record["tasks"]["in_file"]
    assert n >= 2 and record["tasks"]["excluded"] == {approval.CONFIG_NOT_APPROVED: n}
    assert f"{n} task(s) left out, nothing ran: nobody approved the configuration's agent command" in done.stderr
    plan = json.loads(run_cli_inproc("sleep", "dry-run", "--home", str(home), "--json", cwd=repo).stdout)
    assert "model.student.command.argv" in plan["reason"]

    crontab = tmp_path / "sleep.crontab"
    scheduled = run_cli("sleep", "schedule", "--yes", "--max-cost", "1", "--crontab-file", str(crontab), cwd=repo)
    assert scheduled.returncode == 0, scheduled.stderr
    assert f"the nightly job runs skillgit.yaml model.student.command.argv: {shlex.join(json.loads(argv))}" \
        in scheduled.stderr
    done = _run(repo, home, "2026-01-11", "--yes")  # what the job runs
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tasks"]["excluded"] == {} and canary.exists()

    # a teammate's edit of the command after the night started: resuming it stops before anything runs
    ran = canary.read_text()
    _pull(repo, '"{prompt_file}"]', '"{prompt_file}", "--more"]')
    again = _run(repo, home, "2026-01-11", "--yes")
    assert again.returncode == 2, again.stderr
    assert "the night of 2026-01-11 was started, and now model.student.command.argv" in again.stderr
    assert canary.read_text() == ran


def test_status_counts_the_mined_tasks_waiting_for_an_approval(tmp_path):
    repo, home, _ = probe_project(tmp_path)
    record = probe_night(repo, home, "2025-10-10", "--yes")
    assert record["tasks"]["excluded"] == {approval.NOT_APPROVED: 2}
    status = run_cli_inproc("sleep", "status", cwd=repo)
    assert "2 agentic task(s) run commands nobody approved here" in status.stdout, status.stdout
    assert "2 left out (not approved)" in status.stdout
    assert "`skillgit sleep review --approve`" in status.stderr
    info = json.loads(run_cli_inproc("sleep", "status", "--json", cwd=repo).stdout)
    assert info["tasks"]["unapproved"] == 2 and info["nights"][0]["left_out_unapproved"] == 2
    assert run_cli_inproc("sleep", "review", "--approve", cwd=repo).returncode == 0
    info = json.loads(run_cli_inproc("sleep", "status", "--json", cwd=repo).stdout)
    assert info["tasks"]["unapproved"] == 0


def test_which_keys_of_the_configuration_need_an_approval():
    from skillgit.config import BackendCfg, CommandCfg, Config, EnvCfg, ModelCfg, ScorerCfg

    secret = "Bearer abcdef1234567890XYZabc"
    cfg = Config(env=EnvCfg(scorer=ScorerCfg(type="command", command=f"curl -H 'Authorization: {secret}' x")),
                 model=ModelCfg(student_backend="openai", student=BackendCfg(command=CommandCfg(argv=("ignored",))),
                                teacher_backend="agent",
                                teacher=BackendCfg(command=CommandCfg(argv=("my-agent", "{prompt_file}"),
                                                                      env_passthrough=("A", "B")))))
    found = {c.key: c for c in approval.config_commands(cfg)}
    assert set(found) == {"env.scorer.command", "model.teacher.command.argv", "model.teacher.command.env_passthrough"}
    assert found["model.teacher.command.argv"].text == "my-agent '{prompt_file}'"
    assert found["model.teacher.command.env_passthrough"].needs == approval.NIGHT
    scorer = found["env.scorer.command"]
    assert scorer.needs == approval.SCORER and "abcdef1234567890XYZabc" not in scorer.shown_text
    gate = approval.config_gate(cfg, frozenset({scorer.approval_key}))
    assert not gate.scorer_blocked and "model.teacher.command.argv" in gate.night_reason
    edited = approval.ConfigCommand(scorer.key, scorer.text + " ", scorer.needs)
    assert edited.approval_key != scorer.approval_key  # any edit of the text needs approving again
    assert approval.config_commands(Config()) == ()  # the demo's simulated world runs no command of its config


def test_a_pulled_endpoint_gets_no_call_and_no_key_until_approved_here(tmp_path, fake_server):
    """A teammate's `model.student.base_url` (with the variable whose value is sent as the key) would send the
    user's key and the mined task text to a server of their choosing in an unattended night: until the endpoint is
    approved here, that server receives nothing."""
    repo, home = _project(tmp_path, "")
    url = f"{fake_server.url}/v1"
    _pull(repo, "  student_backend: simulated\n",
          f"  student_backend: openai\n  student: {{base_url: {json.dumps(url)}, api_key_env: MY_KEY}}\n")
    env = {"MY_KEY": "sk-test-not-a-real-key-0123456789"}
    done = run_cli("sleep", "run", "--home", str(home), "--sources", "claude,codex", "--date", "2026-01-10",
                   "--json", "--yes", cwd=repo, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert fake_server.requests == []  # no call, no key
    assert record["status"] == "nothing"
    assert "model.student.base_url" in record["reason"] and "model.student.api_key_env" in record["reason"]
    shown = run_cli_inproc("sleep", "review", cwd=repo)
    assert f"skillgit.yaml model.student.base_url (not approved): $ {url}" in shown.stdout, shown.stdout

    assert run_cli_inproc("sleep", "review", "--approve", cwd=repo).returncode == 0  # read, then approved
    done = run_cli("sleep", "run", "--home", str(home), "--sources", "claude,codex", "--date", "2026-01-11",
                   "--json", "--yes", cwd=repo, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert fake_server.requests, done.stderr  # approved: the night calls the server
    assert json.loads(done.stdout)["tasks"]["excluded"] == {}


def test_an_endpoint_and_a_switched_off_confinement_need_an_approval():
    from skillgit.config import BackendCfg, CommandCfg, Config, ModelCfg

    cfg = Config(model=ModelCfg(
        student_backend="agent", student=BackendCfg(command=CommandCfg(argv=("my-agent",), confine="off")),
        teacher_backend="anthropic", teacher=BackendCfg(base_url="http://127.0.0.1:9/", api_key_env="T_KEY")))
    found = {c.key: c.text for c in approval.config_commands(cfg)}
    assert found == {"model.student.command.argv": "my-agent", "model.student.command.confine": "off",
                     "model.teacher.base_url": "http://127.0.0.1:9/", "model.teacher.api_key_env": "T_KEY"}
    landlock = Config(model=ModelCfg(student_backend="agent",
                                     student=BackendCfg(command=CommandCfg(argv=("a",), confine="landlock"))))
    assert [c.key for c in approval.config_commands(landlock)] == ["model.student.command.argv"]

"""`skillgit sleep schedule | unschedule` through the real CLI, against a fake `crontab` on PATH (it records its
arguments and keeps the crontab in a file, answering `-l` like the real one) and a fake `systemctl` with a scratch
$XDG_CONFIG_HOME — the real cron and systemd are never touched. The installed cron line is also run, for real."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.conftest import git, run_cli, run_cli_inproc
from tests.test_sleep_night import make_project

FAKE_CRONTAB = """\
#!/bin/sh
echo "$@" >> "$FAKE_CRON_DIR/calls"
if [ "$1" = "-l" ]; then
  if [ -f "$FAKE_CRON_DIR/crontab" ]; then cat "$FAKE_CRON_DIR/crontab"; exit 0; fi
  echo "no crontab for tester" >&2; exit 1
fi
if [ "$1" = "-" ]; then cat > "$FAKE_CRON_DIR/crontab"; exit 0; fi
echo "fake crontab: unexpected arguments $*" >&2; exit 2
"""
FAKE_SYSTEMCTL = """\
#!/bin/sh
echo "$@" >> "$FAKE_CRON_DIR/systemctl"
"""
THEIRS = "MAILTO=ops@example.invalid\n# nightly backup\n0 1 * * * /usr/local/bin/backup --all\n"


@pytest.fixture
def fakes(tmp_path):
    bin_dir, state = tmp_path / "bin", tmp_path / "cron"
    bin_dir.mkdir()
    state.mkdir()
    for name, text in (("crontab", FAKE_CRONTAB), ("systemctl", FAKE_SYSTEMCTL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_CRON_DIR": str(state),
           "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "SKILLGIT_CRONTAB": str(bin_dir / "crontab")}
    return env, state, bin_dir


def test_schedule_adds_one_block_keeps_other_lines_and_unschedule_removes_exactly_it(tmp_path, fakes):
    env, state, _ = fakes
    repo = make_project(tmp_path / "my repo")
    (state / "crontab").write_text(THEIRS)

    first = run_cli("sleep", "schedule", cwd=repo, env=env)
    assert first.returncode == 0, first.stderr
    text = (state / "crontab").read_text()
    assert text.startswith(THEIRS)
    block = text[len(THEIRS):]
    lines = block.splitlines()
    assert lines[0] == f"# skillgit sleep {repo}" and lines[-1] == f"# end skillgit sleep {repo}" and len(lines) == 3
    assert lines[1].startswith("0 3 * * * cd " + shlex.quote(str(repo)) + " && ")
    assert "-m skillgit sleep run >> " in lines[1] and lines[1].endswith("2>&1")  # --yes only when asked for
    assert "unschedule" in first.stderr and "reviewed task file" in first.stderr

    # again, at another time: the block is replaced in place, never duplicated
    second = run_cli("sleep", "schedule", "--at", "04:30", cwd=repo, env=env)
    assert second.returncode == 0, second.stderr
    text = (state / "crontab").read_text()
    assert text.count("# skillgit sleep") == 1 and "\n30 4 * * * cd " in text and text.startswith(THEIRS)

    # another repository gets its own block; removing one leaves the other alone
    other = make_project(tmp_path / "other")
    assert run_cli("sleep", "schedule", cwd=other, env=env).returncode == 0
    assert run_cli("sleep", "unschedule", cwd=repo, env=env).stdout.strip() == "removed the crontab entry"
    text = (state / "crontab").read_text()
    assert str(repo) not in text and f"# skillgit sleep {other}" in text
    assert run_cli("sleep", "unschedule", cwd=other, env=env).returncode == 0
    assert (state / "crontab").read_text() == THEIRS  # byte for byte what was there before
    assert run_cli("sleep", "unschedule", cwd=other, env=env).stdout.strip() == "no crontab entry was installed"
    calls = (state / "calls").read_text().splitlines()
    assert set(calls) == {"-l", "-"} and calls.count("-") == 5  # the last unschedule wrote nothing


def test_the_installed_cron_line_runs_a_night_in_the_repository(tmp_path, fakes):
    env, state, _ = fakes
    repo = make_project(tmp_path / "repo")
    assert run_cli_inproc("sleep", "schedule", cwd=repo, env=env).returncode == 0
    line = (state / "crontab").read_text().splitlines()[1]
    command = line.split(" ", 5)[5]  # after the five time fields
    proc = subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    log = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir")) / "skillgit/sleep/cron.log"
    assert "night " in log.read_text() and "nothing" in log.read_text()  # no session yet: nothing to train on


def test_no_crontab_yet_and_a_broken_block_are_handled(tmp_path, fakes):
    env, state, _ = fakes
    repo = make_project(tmp_path / "repo")
    assert run_cli_inproc("sleep", "schedule", "--at", "23:59", cwd=repo, env=env).returncode == 0
    assert (state / "crontab").read_text().splitlines()[0] == f"# skillgit sleep {repo}"
    (state / "crontab").write_text(f"# skillgit sleep {repo}\n0 3 * * * something\n")  # end marker lost
    broken = run_cli_inproc("sleep", "schedule", cwd=repo, env=env)
    assert broken.returncode == 2 and "no `# end skillgit sleep" in broken.stderr
    bad_time = run_cli_inproc("sleep", "schedule", "--at", "25:00", cwd=repo, env=env)
    assert bad_time.returncode == 2 and "--at: '25:00'" in bad_time.stderr
    printed = run_cli_inproc("sleep", "schedule", "--print", "--at", "02:15", cwd=repo, env=env)
    assert printed.stdout.splitlines()[1].startswith("15 2 * * * cd ")
    assert (state / "crontab").read_text().count("something") == 1  # --print installed nothing


def test_systemd_timer_is_written_enabled_and_removed_exactly(tmp_path, fakes):
    env, state, bin_dir = fakes
    repo = make_project(tmp_path / "repo")
    systemctl = str(bin_dir / "systemctl")
    proc = run_cli_inproc("sleep", "schedule", "--systemd", "--systemctl", systemctl, "--at", "05:10", cwd=repo,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    units = tmp_path / "xdg" / "systemd" / "user"
    timer, service = sorted(units.glob("*.timer")), sorted(units.glob("*.service"))
    assert len(timer) == len(service) == 1 and timer[0].stem == service[0].stem
    assert timer[0].stem.startswith("skillgit-sleep-repo-")
    assert "OnCalendar=*-*-* 05:10:00" in timer[0].read_text() and "Persistent=true" in timer[0].read_text()
    body = service[0].read_text()
    assert f"WorkingDirectory={repo}" in body and "-m skillgit sleep run >> " in body
    assert (state / "systemctl").read_text().splitlines() == [
        "--user daemon-reload", f"--user enable --now {timer[0].name}"]
    mine = {p.name for p in units.iterdir()}
    (units / "unrelated.service").write_text("[Service]\nExecStart=/bin/true\n")

    removed = run_cli_inproc("sleep", "unschedule", "--systemd", "--systemctl", systemctl, cwd=repo, env=env)
    assert removed.returncode == 0 and "removed" in removed.stdout
    assert {p.name for p in units.iterdir()} == {"unrelated.service"} and mine
    assert (state / "systemctl").read_text().splitlines()[-2:] == [
        f"--user disable --now {timer[0].name}", "--user daemon-reload"]
    assert not (state / "crontab").exists()  # cron was never touched

    # a unit of the same name that skillgit did not write is never overwritten
    service[0].write_text("[Service]\nExecStart=/bin/mine\n")
    clash = run_cli_inproc("sleep", "schedule", "--systemd", "--systemctl", systemctl, cwd=repo, env=env)
    assert clash.returncode == 2 and "was not written by skillgit" in clash.stderr
    assert service[0].read_text() == "[Service]\nExecStart=/bin/mine\n"


def test_an_unattended_night_sends_unreviewed_tasks_only_by_explicit_choice_and_a_real_backend_needs_a_cap(
        tmp_path, fakes):
    env, state, _ = fakes
    repo = make_project(tmp_path / "repo")
    chosen = run_cli_inproc("sleep", "schedule", "--yes", cwd=repo, env=env)
    assert chosen.returncode == 0, chosen.stderr
    assert "-m skillgit sleep run --yes >> " in (state / "crontab").read_text() and "unreviewed" in chosen.stderr

    config = (repo / "skillgit.yaml").read_text()
    (repo / "skillgit.yaml").write_text(config.replace("teacher_backend: simulated", "teacher_backend: openai")
                                        .replace("student_backend: simulated", "student_backend: openai"))
    before = (state / "crontab").read_text()
    refused = run_cli_inproc("sleep", "schedule", cwd=repo, env=env)
    assert refused.returncode != 0 and "no dollar cap" in refused.stderr and "--max-cost" in refused.stderr
    assert (state / "crontab").read_text() == before  # nothing was installed
    capped = run_cli_inproc("sleep", "schedule", "--max-cost", "2.5", cwd=repo, env=env)
    assert capped.returncode == 0, capped.stderr
    line = (state / "crontab").read_text().splitlines()[1]
    assert "sleep run --max-cost 2.5 >> " in line  # and without --yes: it was not asked for this time
    (repo / "skillgit.yaml").write_text((repo / "skillgit.yaml").read_text() + "  max_cost_usd: 1.0\n")
    assert run_cli_inproc("sleep", "schedule", cwd=repo, env=env).returncode == 0  # the config's cap is enough


def test_the_real_crontab_is_out_of_reach_of_every_test(tmp_path):
    """conftest points SKILLGIT_CRONTAB at a program that does not exist: a test that forgets its fake fails
    instead of editing the machine's crontab."""
    repo = make_project(tmp_path / "repo")
    proc = run_cli_inproc("sleep", "schedule", cwd=repo)
    assert proc.returncode == 2 and "is not installed or not on PATH" in proc.stderr


def test_schedule_says_whose_crontab_it_wrote_and_warns_when_home_is_not_that_users(tmp_path, fakes):
    import pwd

    env, state, _ = fakes
    repo = make_project(tmp_path / "repo")
    user = pwd.getpwuid(os.getuid())
    proc = run_cli_inproc("sleep", "schedule", cwd=repo, env=env)  # HOME is the test's own folder, not the user's home
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stderr.split())
    assert f"installed in the crontab of user {user.pw_name}" in said
    assert f"HOME is {os.environ['HOME']} but crontab(1) picks the crontab by user id" in said
    assert "--crontab-file FILE" in said
    same_home = run_cli_inproc("sleep", "schedule", cwd=repo, env={**env, "HOME": user.pw_dir})
    assert same_home.returncode == 0 and "note: HOME" not in same_home.stderr


def test_a_configured_crontab_file_is_honoured_and_crontab_never_runs(tmp_path, fakes):
    env, state, _ = fakes
    repo = make_project(tmp_path / "repo")
    cron_file = tmp_path / "cron" / "skillgit.crontab"
    cron_file.parent.mkdir(exist_ok=True)
    cron_file.write_text(THEIRS)
    proc = run_cli_inproc("sleep", "schedule", "--crontab-file", str(cron_file), "--at", "02:30", cwd=repo, env=env)
    assert proc.returncode == 0, proc.stderr
    text = cron_file.read_text()
    assert text.startswith(THEIRS) and f"# skillgit sleep {repo}" in text and "\n30 2 * * * cd " in text
    assert f"installed in {cron_file}" in " ".join(proc.stderr.split())
    status = json.loads(run_cli_inproc("sleep", "status", "--json", "--crontab-file", str(cron_file), cwd=repo,
                                       env=env).stdout)
    assert status["schedule"]["cron"] is True
    removed = run_cli_inproc("sleep", "unschedule", "--crontab-file", str(cron_file), cwd=repo, env=env)
    assert removed.stdout.strip() == "removed the crontab entry"
    assert cron_file.read_text() == THEIRS  # byte for byte
    # the same from skillgit.yaml (sleep.crontab_file, `~` expanded)
    cfg = repo / "skillgit.yaml"
    cfg.write_text(cfg.read_text().replace("sleep:\n", "sleep:\n  crontab_file: ~/my.crontab\n", 1))
    assert "crontab_file" in cfg.read_text()
    assert run_cli_inproc("sleep", "schedule", cwd=repo, env=env).returncode == 0
    assert f"# skillgit sleep {repo}" in (Path(os.environ["HOME"]) / "my.crontab").read_text()
    assert not (state / "calls").exists()  # the crontab program never ran


def test_status_says_why_it_cannot_tell_whether_cron_runs_the_nights(tmp_path):
    """Without a `crontab` program `sleep status` said "cron unknown" and no more; it now names the cause and the
    JSON carries it (`schedule.cron_error`)."""
    repo = make_project(tmp_path / "repo")
    env = {"SKILLGIT_CRONTAB": str(tmp_path / "no-such-crontab")}
    shown = run_cli_inproc("sleep", "status", cwd=repo, env=env)
    assert shown.returncode == 0, shown.stderr
    assert f"schedule: cron unknown (`{tmp_path / 'no-such-crontab'}` is not installed or not on PATH)" \
        in shown.stdout, shown.stdout
    info = json.loads(run_cli_inproc("sleep", "status", "--json", cwd=repo, env=env).stdout)
    assert info["schedule"]["cron"] is None and "is not installed" in info["schedule"]["cron_error"]

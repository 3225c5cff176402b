"""`skillgit sleep schedule | unschedule`: a nightly `skillgit sleep run` for one repository.

Two mechanisms, both removable exactly:
- **cron** (default): a block in the user's crontab between `# skillgit sleep <repo>` and
  `# end skillgit sleep <repo>`. `install_cron` reads the crontab (`crontab -l`; "no crontab" is an empty one),
  replaces this repository's block (or appends it) and writes the result back (`crontab -`); every other line is
  kept byte for byte. `remove_cron` takes out exactly that block and nothing else.
- **systemd user timer** (`--systemd`): `skillgit-sleep-<slug>-<hash>.service` and `.timer` under
  `$XDG_CONFIG_HOME/systemd/user` (default `~/.config`), each marked as skillgit's, then `systemctl --user
  daemon-reload` and `enable --now` of the timer; `remove_systemd` disables the timer and deletes exactly those
  two files (only when they carry the marker).

Whose crontab: `crontab` (the program) edits the crontab of the user whose id runs it — `HOME` does not change
that (under `sudo -E`, in a container, or with HOME pointed elsewhere it is still that user's). `crontab_owner()`
names that user, and the CLI says so and warns when HOME is not that user's home. A **crontab file**
(`sleep.crontab_file` / `schedule --crontab-file FILE`) is honoured instead: the same block is kept in that file
(created when missing, written atomically, every other line kept), and cron runs it once you install it
(`crontab FILE`, or a system `cron.d` drop-in with a user field of your own) — `crontab` is never run then.

The `crontab` and `systemctl` programs are parameters (tests pass fakes; the real ones are never needed to test
this). The job runs `<python> -m skillgit sleep run` in the repository with the python that runs this skillgit,
appending its output to `<git-common-dir>/skillgit/sleep/cron.log`; API keys come from the repository's `.env` as
for any skillgit command (cron starts with an almost empty environment). It passes `--yes` (send unreviewed mined
tasks to the models) only when the person asked for it (`Job.yes`, `schedule --yes`), and `--max-cost` when given:
an unattended night never decides either by itself. (The CLI refuses to schedule a real backend without a dollar
cap: see `skillgit.cli.sleep.schedule_cmd`.)
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from skillgit.errors import SkillgitError

Runner = Callable[..., "subprocess.CompletedProcess[str]"]
MARKER = "# skillgit sleep"
UNIT_MARKER = "# managed by skillgit sleep schedule"


@dataclass(frozen=True)
class Job:
    repo: Path  # the repository's root
    at: str  # HH:MM, local time
    log: Path
    python: str = sys.executable
    yes: bool = False  # pass --yes: unreviewed mined tasks reach the models (only when the person chose it)
    max_cost_usd: float | None = None  # pass --max-cost (None: the config's sleep.max_cost_usd / budget applies)

    @property
    def argv(self) -> list[str]:
        return [self.python, "-m", "skillgit", "sleep", "run", *(["--yes"] if self.yes else []),
                *(["--max-cost", f"{self.max_cost_usd:g}"] if self.max_cost_usd is not None else [])]

    @property
    def hour_minute(self) -> tuple[int, int]:
        hour, minute = self.at.split(":")
        return int(hour), int(minute)


def begin_marker(repo: Path) -> str:
    return f"{MARKER} {repo}"


def end_marker(repo: Path) -> str:
    return f"# end skillgit sleep {repo}"


def cron_block(job: Job) -> str:
    hour, minute = job.hour_minute
    command = " ".join(shlex.quote(a) for a in job.argv)
    line = f"cd {shlex.quote(str(job.repo))} && {command} >> {shlex.quote(str(job.log))} 2>&1"
    line = line.replace("%", "\\%")  # cron turns a bare % into a newline
    return f"{begin_marker(job.repo)}\n{minute} {hour} * * * {line}\n{end_marker(job.repo)}\n"


def split_block(text: str, repo: Path) -> tuple[str, str, str]:
    """(before, this repository's block, after) of a crontab; the block is "" when there is none."""
    begin, end = begin_marker(repo), end_marker(repo)
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.rstrip("\r\n") == begin:
            for j in range(i + 1, len(lines)):
                if lines[j].rstrip("\r\n") == end:
                    return "".join(lines[:i]), "".join(lines[i:j + 1]), "".join(lines[j + 1:])
            raise SkillgitError(f"the crontab has `{begin}` but no `{end}` line",
                                "fix the crontab by hand (crontab -e): add the end line or remove the block")
    return text, "", ""


def _run(runner: Runner, argv: Sequence[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return runner(list(argv), input=stdin, capture_output=True, text=True, timeout=30, check=False)
    except FileNotFoundError:
        raise SkillgitError(f"`{argv[0]}` is not installed or not on PATH",
                            "install cron, or use `skillgit sleep schedule --systemd` for a systemd user timer"
                            if "crontab" in argv[0] else "install systemd, or use cron (without --systemd)") from None
    except subprocess.TimeoutExpired:
        raise SkillgitError(f"`{' '.join(argv)}` did not finish in 30 s", "try again") from None


def crontab_owner() -> tuple[str, str]:
    """(user name, home) of the user whose crontab `crontab` edits: this process's real user id, whatever HOME
    says; ("uid N", "") when the system cannot name it."""
    try:
        import pwd

        entry = pwd.getpwuid(os.getuid())
        return entry.pw_name, entry.pw_dir
    except (ImportError, KeyError, AttributeError):  # no pwd module (Windows) or an id without an entry
        return f"uid {os.getuid() if hasattr(os, 'getuid') else '?'}", ""


def read_crontab(crontab: str = "crontab", runner: Runner = subprocess.run, file: Path | None = None) -> str:
    """The crontab's text ("" when there is none); `file`: that crontab file's instead of the user's."""
    if file is not None:
        try:
            return file.read_text(encoding="utf-8") if file.exists() else ""
        except (OSError, UnicodeDecodeError) as exc:
            raise SkillgitError(f"cannot read the crontab file {file}: {exc}",
                                "check the file (sleep.crontab_file / --crontab-file)") from None
    proc = _run(runner, [crontab, "-l"])
    if proc.returncode != 0:
        if re.search(r"no crontab", proc.stderr or "", re.I):
            return ""
        raise SkillgitError(f"`{crontab} -l` failed: {(proc.stderr or '').strip()[:200]}",
                            "check that cron works for your user (crontab -l)")
    return proc.stdout


def write_crontab(text: str, crontab: str = "crontab", runner: Runner = subprocess.run,
                  file: Path | None = None) -> None:
    if file is not None:
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            tmp = file.with_name(f".{file.name}.skillgit-{os.getpid()}")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, file)
        except OSError as exc:
            raise SkillgitError(f"cannot write the crontab file {file}: {exc}", "nothing was changed") from None
        return
    proc = _run(runner, [crontab, "-"], text)
    if proc.returncode != 0:
        raise SkillgitError(f"`{crontab} -` refused the new crontab: {(proc.stderr or '').strip()[:200]}",
                            "nothing was changed; check the crontab with `crontab -l`")


def install_cron(job: Job, crontab: str = "crontab", runner: Runner = subprocess.run,
                 file: Path | None = None) -> str:
    """Install (or replace) this repository's block (in `file` when given); returns the block."""
    before, _, after = split_block(read_crontab(crontab, runner, file), job.repo)
    if before and not before.endswith("\n"):
        before += "\n"
    block = cron_block(job)
    write_crontab(before + block + after, crontab, runner, file)
    return block


def remove_cron(repo: Path, crontab: str = "crontab", runner: Runner = subprocess.run,
                file: Path | None = None) -> bool:
    """Remove this repository's block (from `file` when given); False when there was none (nothing is written)."""
    before, block, after = split_block(read_crontab(crontab, runner, file), repo)
    if not block:
        return False
    write_crontab(before + after, crontab, runner, file)
    return True


# ---------------------------------------------------------------------------------------------- systemd
def unit_name(repo: Path) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", repo.name).strip("-")[:30] or "repo"
    return f"skillgit-sleep-{slug}-{hashlib.sha256(str(repo).encode()).hexdigest()[:8]}"


def unit_dir(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "systemd" / "user"


def unit_files(job: Job) -> dict[str, str]:
    name = unit_name(job.repo)
    hour, minute = job.hour_minute
    command = " ".join(shlex.quote(a) for a in job.argv)
    service = (f"{UNIT_MARKER} for {job.repo}\n[Unit]\nDescription=skillgit sleep: learn from the day's agent "
               f"sessions in {job.repo}\n\n[Service]\nType=oneshot\nWorkingDirectory={job.repo}\n"
               f"ExecStart=/bin/sh -c {shlex.quote(command + ' >> ' + shlex.quote(str(job.log)) + ' 2>&1')}\n")
    timer = (f"{UNIT_MARKER} for {job.repo}\n[Unit]\nDescription=nightly skillgit sleep in {job.repo}\n\n"
             f"[Timer]\nOnCalendar=*-*-* {hour:02d}:{minute:02d}:00\nPersistent=true\nUnit={name}.service\n\n"
             "[Install]\nWantedBy=timers.target\n")
    return {f"{name}.service": service, f"{name}.timer": timer}


def install_systemd(job: Job, systemctl: Sequence[str] = ("systemctl",), runner: Runner = subprocess.run,
                    environ: dict[str, str] | None = None) -> list[Path]:
    folder = unit_dir(environ)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in unit_files(job).items():
        path = folder / name
        if path.exists() and UNIT_MARKER not in path.read_text(encoding="utf-8", errors="replace"):
            raise SkillgitError(f"{path} exists and was not written by skillgit", "remove or rename it first")
        path.write_text(text, encoding="utf-8")
        written.append(path)
    timer = f"{unit_name(job.repo)}.timer"
    for args in (["--user", "daemon-reload"], ["--user", "enable", "--now", timer]):
        proc = _run(runner, [*systemctl, *args])
        if proc.returncode != 0:
            raise SkillgitError(f"`systemctl {' '.join(args)}` failed: {(proc.stderr or '').strip()[:200]}",
                                f"the unit files are in {folder}; enable the timer by hand: systemctl --user "
                                f"enable --now {timer}")
    return written


def remove_systemd(repo: Path, systemctl: Sequence[str] = ("systemctl",), runner: Runner = subprocess.run,
                   environ: dict[str, str] | None = None) -> list[Path]:
    folder = unit_dir(environ)
    name = unit_name(repo)
    ours = [folder / f"{name}.{kind}" for kind in ("timer", "service")]
    ours = [p for p in ours if p.is_file() and UNIT_MARKER in p.read_text(encoding="utf-8", errors="replace")]
    if not ours:
        return []
    _run(runner, [*systemctl, "--user", "disable", "--now", f"{name}.timer"])  # a stopped timer is fine too
    for path in ours:
        path.unlink()
    _run(runner, [*systemctl, "--user", "daemon-reload"])
    return ours

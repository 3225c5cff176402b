"""A command that leaves a daemon behind: double fork + setsid (the daemon leaves the command's process group and
session), its stdio on /dev/null, ignoring SIGTERM, sleeping 300 s.

usage: daemonize.py PID_DIR ROLE [--touch FILE] [--sleep SECONDS] [--scrub-env]
The daemon writes PID_DIR/ROLE-daemon-<command's pid>-<pid>.pid, the command itself PID_DIR/ROLE-leader-<pid>.pid
once the daemon's file exists; then the command creates FILE (when given), prints "done" and exits after SECONDS
(default 0). `--scrub-env` starts the daemon with an empty environment (as `env -i` does)."""

import os
import signal
import sys
import time
from pathlib import Path

pid_dir, role = Path(sys.argv[1]), sys.argv[2]
args = sys.argv[3:]


def option(name: str, default: str = "") -> str:
    return args[args.index(name) + 1] if name in args else default


leader = os.getpid()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        code = (f"import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                f"open({str(pid_dir / f'{role}-daemon-{leader}-')!r} + '%d.pid' % os.getpid(), 'w').write('x'); "
                "time.sleep(300)")
        os.execve(sys.executable, [sys.executable, "-c", code], {} if "--scrub-env" in args else dict(os.environ))
    os._exit(0)
os.wait()
deadline = time.monotonic() + 30
while not list(pid_dir.glob(f"{role}-daemon-{leader}-*.pid")) and time.monotonic() < deadline:
    time.sleep(0.02)
(pid_dir / f"{role}-leader-{os.getpid()}.pid").write_text("x")
if option("--touch"):
    Path(option("--touch")).write_text("ok\n")
print("done", flush=True)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
time.sleep(float(option("--sleep", "0")))

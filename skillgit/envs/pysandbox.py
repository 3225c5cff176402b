"""Running a student's Python code on one input file, in a child process that leaves nothing behind.

`run_code(code, files, timeout_s)` — the contract:
- A fresh temporary folder is the child's cwd and its HOME (`home/`) and TMPDIR (`tmp/`); `files` (name → source
  path) are copied into it; the code is `solution.py` there. It runs as `python -I -B runner.py` with the running
  interpreter (`sys.executable`: the one skillgit is installed in, so openpyxl is importable), isolated mode
  (no PYTHON* variables, no user site, the cwd not on sys.path), and a runner that sets `input_path` and
  `output_path` as globals, caps the address space at `MEMORY_BYTES`, CPU time at the timeout + 5 s and wall time
  at the same (SIGALRM; where the system allows: a runaway or a sleeper dies even when skillgit was killed before
  its timeout) and runs the code.
- The child's environment is built from nothing: PATH, HOME, TMPDIR, LANG and the process-scope id — never the
  caller's credentials or configuration. It gets no network: where the system allows (`unshare` present and a
  probe of `unshare -rn` succeeds: root, or unprivileged user namespaces) it runs in a network namespace of its
  own with no interface up, so neither it nor anything it starts reaches any address, loopback included
  (`network_isolation()` says which); in every case the runner refuses socket `connect`, `connect_ex`, `bind` and
  `sendto` in Python before the code runs. It is not a jail otherwise: a process group, a timeout and a temp
  folder, as `skillgit.process` documents.
- `skillgit.process.run` runs it: its own process group (and the scope/cgroup nets); at `timeout_s` it is killed
  with everything it started. The folder is removed afterwards; what the caller needs (the output workbook) is
  read by `inspect(folder)` before that.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, TypeVar

from skillgit import process

OUTPUT = "output.xlsx"
MEMORY_BYTES = 2 * 1024**3
T = TypeVar("T")

RUNNER = """import runpy, signal, socket, sys
signal.alarm({cpu})  # wall clock: SIGALRM ends a child that sleeps or waits, when nobody is left to kill it
def _no_network(*args, **kwargs):
    raise PermissionError("network access is disabled in skillgit's code sandbox")
for _name in ("connect", "connect_ex", "bind", "sendto"):
    setattr(socket.socket, _name, _no_network)
try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))
    resource.setrlimit(resource.RLIMIT_CPU, ({cpu}, {cpu}))
except Exception:
    pass
sys.argv = ["solution.py"]
runpy.run_path("solution.py", init_globals={{"input_path": "input.xlsx", "output_path": "{output}"}},
               run_name="__main__")
"""


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool


_NETNS: list[str] | None = None  # the argv prefix that gives the child a network namespace ([] where none can)


def network_isolation() -> list[str]:
    """`["/usr/bin/unshare", "-rn", "--"]` when a probe of it succeeds on this system, else [] (probed once)."""
    global _NETNS
    if _NETNS is None:
        found = shutil.which("unshare")
        prefix = [found, "-rn", "--"] if found else []
        if prefix:
            try:
                probe = process.run([*prefix, sys.executable, "-c", "pass"], cwd=Path(tempfile.gettempdir()),
                                    env={"PATH": os.defpath}, timeout_s=15)
                prefix = prefix if probe.returncode == 0 and not probe.timed_out else []
            except OSError:
                prefix = []
        _NETNS = prefix
    return _NETNS


def child_env(folder: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(folder / "home"), "TMPDIR": str(folder / "tmp"),
            "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}


def run_code(code: str, files: Mapping[str, Path], timeout_s: float,
             inspect: Callable[[Path], T]) -> tuple[Ran, T]:
    """Run `code` with `files` copied in; returns how it ended and `inspect(folder)` (called before cleanup)."""
    folder = Path(tempfile.mkdtemp(prefix="skillgit-code-"))
    try:
        for sub in ("home", "tmp"):
            (folder / sub).mkdir()
        for name, source in files.items():
            shutil.copyfile(source, folder / name)
        (folder / "solution.py").write_text(code, encoding="utf-8")
        cpu = int(timeout_s) + 5  # the kernel stops a runaway even if skillgit itself was killed meanwhile
        (folder / "runner.py").write_text(RUNNER.format(memory=MEMORY_BYTES, cpu=cpu, output=OUTPUT),
                                          encoding="utf-8")
        done = process.run([*network_isolation(), sys.executable, "-I", "-B", "runner.py"], cwd=folder,
                           env=child_env(folder), timeout_s=timeout_s)
        ran = Ran(done.returncode, done.stdout[-20_000:], done.stderr[-20_000:], done.timed_out)
        return ran, inspect(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def error_summary(ran: Ran, limit: int = 400) -> str:
    """The end of a failed run's traceback: its last line (the exception) and the solution.py line it came from."""
    lines = [line.rstrip() for line in ran.stderr.splitlines() if line.strip()]
    where = next((line.strip() for line in reversed(lines) if 'File "solution.py"' in line), "")
    last = lines[-1].strip() if lines else f"exit status {ran.returncode}"
    text = f"{last} ({where.split(', in ')[0].replace('File ', '')})" if where else last
    return text if len(text) <= limit else text[: limit - 1] + "…"

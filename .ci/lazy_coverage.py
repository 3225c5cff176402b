"""Coverage of a subprocess starts when it first imports skillgit, not at interpreter start-up.

CI measures every process (pyproject's ``[tool.coverage.run] patch = ["subprocess"]``: coverage puts its
configuration in ``COVERAGE_PROCESS_CONFIG`` and the ``a1_coverage.pth`` it ships starts coverage in each Python
process that sees it). Half the processes the suite starts never import skillgit — an agentic task's verifier (a
nested pytest), ``python -c`` helpers, scorers, the agent CLIs' tools: 575 of 1,204 on a full run — and each paid
for a coverage that could measure nothing (``source = ["skillgit"]``): ``python -c pass`` 107 ms of CPU instead
of 22, a nested pytest 306 instead of 181, and an 80 KB data file for the final combine to read.

``.ci/run`` installs this module into CI's virtual environment (``python .ci/lazy_coverage.py``) with a ``.pth``
file that sorts before coverage's (``a0_…`` < ``a1_…``; ``site`` runs them in sorted order) and calls
:func:`install` when either variable below is set. The contract:

- :func:`install` moves ``COVERAGE_PROCESS_CONFIG`` to ``STASH`` (so coverage's ``.pth`` right after finds
  nothing to start) and puts a finder first on ``sys.meta_path``. The children of a process that never imports
  skillgit inherit ``STASH`` and do the same, so a grandchild that does import it is still measured.
- The finder acts on the first import of ``skillgit`` or any of its modules, *before* that module is found and
  executed — the package's ``__init__`` and every module after it run under coverage, like they did when coverage
  started with the interpreter. It removes itself, puts ``COVERAGE_PROCESS_CONFIG`` back (for this process's
  children) and calls ``coverage.process_startup()``, unless a coverage already measures this process (pytest-cov
  starts its own in an xdist worker). It finds nothing itself: the import goes on through the usual finders.
- It imports nothing Python's start-up has not imported already (``typing`` alone cost 3.5 ms a process).
- Code of ``skillgit`` only ever runs by being imported as ``skillgit…`` (``python -m skillgit…`` included), so
  the measured lines are the same; a process that never imports skillgit writes no data file at all.

This is CI plumbing, not part of skillgit: the package never imports it, and the tests pass without it (the
README's test command on a developer's machine measures nothing). tests/test_lazy_coverage.py holds it to the
contract above.
"""

import os
import sys

PACKAGE = "skillgit"
CONFIG = "COVERAGE_PROCESS_CONFIG"
STASH = "COVERAGE_LAZY_SKILLGIT_CONFIG"
MODULE = "_skillgit_lazy_coverage"
PTH = "a0_skillgit_lazy_coverage.pth"
PTH_LINE = (f"import os; (os.environ.get({CONFIG!r}) or os.environ.get({STASH!r})) "
            f"and __import__({MODULE!r}).install()\n")


class StartOnFirstImport:
    """A meta path finder that starts coverage on the first import of ``PACKAGE`` and then steps aside."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        if fullname == PACKAGE or fullname.startswith(PACKAGE + "."):
            start()
        return None


_FINDER = StartOnFirstImport()


def install() -> None:
    """At start-up (from the ``.pth`` file): defer coverage to the first import of skillgit, if it was asked for."""
    config = os.environ.pop(CONFIG, None)
    if config is not None:
        os.environ[STASH] = config
    if STASH in os.environ and _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def start() -> None:
    """Start the coverage this process deferred (once), with the configuration it was started with."""
    try:
        sys.meta_path.remove(_FINDER)
    except ValueError:  # already removed (another thread's first import)
        pass
    config = os.environ.pop(STASH, None)
    if config is None:
        return
    os.environ.setdefault(CONFIG, config)
    try:
        import coverage

        if coverage.Coverage.current() is None:
            coverage.process_startup()
    except Exception as exc:  # the import of skillgit goes on; CI's floors show what went unmeasured
        print(f"lazy_coverage: coverage did not start in this process: {exc!r}", file=sys.stderr)


def install_into(site_packages: str) -> None:
    """Copy this module into `site_packages` as ``MODULE`` and write the ``.pth`` that runs :func:`install`."""
    import shutil

    shutil.copyfile(__file__, os.path.join(site_packages, MODULE + ".py"))
    with open(os.path.join(site_packages, PTH), "w", encoding="utf-8") as handle:
        handle.write(PTH_LINE)


if __name__ == "__main__":
    # `python .ci/lazy_coverage.py`: into the running interpreter's environment (CI's venv)
    import sysconfig

    install_into(sysconfig.get_paths()["purelib"])
    print(f"coverage of subprocesses starts on their first import of {PACKAGE} ({PTH})", file=sys.stderr)

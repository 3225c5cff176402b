"""GitPython, imported with one `git version` instead of the two its import runs.

At import GitPython checks the git executable (`git.refresh` → `Git.refresh`: `git version`) and then asks the
version again (`FetchInfo.refresh`: `Git().version_info`, a new instance, so another `git version`): two processes
on every command that opens a repository (`log`'s five git processes were these two and three of its own).

Contract:
- `gitpython` is the `git` package (the store's git modules import it, and `GitCommandNotFound`, from here, never
  from `git` directly: any `from git… import` would import the package first, without the memo). If nothing
  imported GitPython before, the import runs `git version` once: while it runs, `Git._call_process("version")`
  without arguments is answered by the first such call's output (the same executable, the same moment: the same
  answer); the memo is dropped and the method restored when the import ends. A failed probe (no git) is not
  remembered: GitPython reports it as it always did.
- Nothing else changes: the executable GitPython found, its checks and errors, and `gitenv.py`'s rule (no child
  inherits the repository variables) — the probe runs as GitPython ran it, in the folder skillgit started in.
"""

from __future__ import annotations

import importlib.machinery
import sys
from types import ModuleType
from typing import Any, Sequence

_MODULE = "git.cmd"


class _OneProbe:
    """A meta path finder (importlib.abc's protocol, without importing it: it costs more than the probe) that finds
    `git.cmd` as Python would and, once it is loaded, memoizes its `git version` call until `restore`."""

    def __init__(self) -> None:
        self.patched: Any = None  # the `Git` class whose `_call_process` is wrapped
        self.original: Any = None

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            self._wrap(getattr(module, "Git", None))

        loader.exec_module = exec_module  # type: ignore[method-assign]  # this spec's own loader
        return spec

    def _wrap(self, cls: Any) -> None:
        if cls is None or not callable(getattr(cls, "_call_process", None)):
            return
        original = cls._call_process
        said: dict[str, Any] = {}

        def _call_process(git: Any, method: str, *args: Any, **kwargs: Any) -> Any:
            if method != "version" or args or kwargs:
                return original(git, method, *args, **kwargs)
            executable = str(type(git).GIT_PYTHON_GIT_EXECUTABLE)
            if executable not in said:
                said[executable] = original(git, method)  # raises (not remembered) when git cannot run
            return said[executable]

        self.patched, self.original = cls, original
        cls._call_process = _call_process

    def restore(self) -> None:
        if self.patched is not None:
            self.patched._call_process = self.original
            self.patched = self.original = None


_probe = _OneProbe()
sys.meta_path.insert(0, _probe)
try:
    import git as gitpython  # noqa: E402  (the one import of GitPython: see the module contract)
finally:
    sys.meta_path.remove(_probe)
    _probe.restore()

GitCommandNotFound = gitpython.exc.GitCommandNotFound

__all__ = ["GitCommandNotFound", "gitpython"]

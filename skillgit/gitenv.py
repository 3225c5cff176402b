"""The environment variables that point git at a repository, index or objects other than those of the folder it
runs in, and the rule that no child process of skillgit inherits them.

They are git's own list (`git rev-parse --local-env-vars`, git 2.39: what git clears when it crosses into a
submodule) but the user's `git -c` settings (GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT), and GIT_NAMESPACE (git's
transport honours it: a push or fetch between local repositories would read and write `refs/namespaces/…`). git
sets them for hooks (GIT_DIR, GIT_INDEX_FILE) and shell aliases (GIT_PREFIX). skillgit run from one must still act
on the repository its folder is in and never write the index a `git commit` in progress is building; nor may an
agent, a verifier, a setup command or a scorer started in a workspace: their git would act on the user's repository
instead of the workspace.
- store/gitproc.py runs skillgit's own git commands without them (a command that needs one sets it itself);
- process.py's `run` (every other child) drops them from the environment it is given.
"""

from __future__ import annotations

from typing import Mapping

LOCAL_ENV_VARS = ("GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_OBJECT_DIRECTORY", "GIT_DIR",
                  "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE", "GIT_INDEX_FILE",
                  "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_INTERNAL_SUPER_PREFIX",
                  "GIT_SHALLOW_FILE", "GIT_COMMON_DIR", "GIT_NAMESPACE")


def without_repository_vars(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without `LOCAL_ENV_VARS`."""
    return {k: v for k, v in env.items() if k not in LOCAL_ENV_VARS}

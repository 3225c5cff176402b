"""Coding-agent tasks: a prompt, a workspace (a fixture folder or a repository at a revision), setup commands and a
verifier that scores the workspace *after the agent worked*.

- `spec.py`    `AgenticSpec.from_item(item)`: the typed task row (errors name the task and the key).
- `skillgit/process.py` running a command with a timeout; nothing it started outlives it (its process group, and
               on Linux a scope id in the environment and a cgroup v2 also find children that left by setsid).
- `workspace.py` a throwaway workspace per rollout (a copy of a fixture with its own git history, or a
               `git worktree` of the user's repository at the task's revision), the skill package installed where
               the agent loads skills, removed afterwards — also after a kill (the next run sweeps leftovers).
- `guard.py`   the verifier's files (tests, conftest.py, pytest settings, the verify script, `verify.files`) kept
               aside before the agent starts and put back before the verifier runs; what the agent changed is
               told to the teacher.
- `verify.py`  the verifier: exit code, pytest counts, JUnit XML or JSON → `Score`; a setup failure, a verifier
               crash or a timeout is `Unknown` (never a task failure).
- `trace.py`   what the agent did, from its event stream, shortened for the teacher (each format's parser lives
               with its agent in `skillgit/agents/`).
- `student.py` `AgentStudent`: the `agent` student backend (the presets of `skillgit.agents.registry`: claude,
               codex, copilot, opencode, the simulated coding agent, a generic template), hermetic rollouts.
"""

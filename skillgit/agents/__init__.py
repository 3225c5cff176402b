"""The coding agents skillgit knows: one module per agent, one `Agent` record each, one registry.

- `base.py`      the `Agent` record and its presets (`StudentPreset`, `AnswerPreset`).
- `registry.py`  the one table of agents (lazy imports; the lists config validation, `doctor`, sleep and
                 `install` use; `register` for an agent added at run time).
- `trace.py`     `AgentTrace` (what an agent did) and the helpers every output parser uses.
- `profile.py`   hermetic rollouts: a fresh config home per run, the agent's isolation switches, the login copy.
- `version.py`   the cached version probe.
- `launch.py`    what both agent students share: the argv template's expansion and the agent's fingerprint.
- `claude.py`, `codex.py`, `copilot.py`, `opencode.py`, `simulated.py`, `generic.py`: agents skillgit runs;
  `copilot_vscode.py`, `cursor.py`: agents skillgit only reads sessions of.

A new agent is one module defining `AGENT` (plus its fixtures) and one line in `registry._TABLE`, or
`registry.register(name, "module:AGENT")` from outside the package. Importing this package imports no agent module.
"""

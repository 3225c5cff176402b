"""skillgit inside the agents: the MCP server (`skillgit mcp`), `skillgit install|uninstall <agent>` and the texts
shipped to agents (skill, slash commands, the SessionEnd hook that writes the sleep inbox, snippets).

Modules: `assets` (every text; the one source of plugins/claude-code and integrations/codex), `artifacts` (what
goes where per agent and scope), `install` (plan, write, exact uninstall), `manifest` (what was installed; atomic
file writes), `jsonedit` (insert into JSON/JSONC without reformatting it), `locations` (paths), `tools` (the
agent-facing operations, SDK-free), `commands` (the subprocesses behind guarded actions), `mcp_server` (the `mcp`
SDK wiring). The inbox's format is the leaf `skillgit/inbox.py` (sleep reads it too).

Layering: `cli/` imports this package, never the reverse. What the server needs to know of the command line (which
commands this installation has) is handed over by `cli/` when it starts the server (`commands.use_cli`).
"""

"""skillgit inside the agents: the MCP server (`skillgit mcp`), `skillgit install|uninstall <agent>`, the texts
shipped to agents (skill, slash commands, SessionEnd hook, snippets) and the sleep inbox the hook writes.

Modules: `assets` (every text; the one source of plugins/claude-code and integrations/codex), `artifacts` (what
goes where per agent and scope), `install` (plan, write, exact uninstall), `manifest` (what was installed; atomic
file writes), `jsonedit` (insert into JSON/JSONC without reformatting it), `locations` (paths), `inbox` (the sleep
inbox), `tools` (the agent-facing operations, SDK-free), `commands` (the subprocesses behind guarded actions),
`mcp_server` (the `mcp` SDK wiring).
"""

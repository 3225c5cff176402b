"""GitHub Copilot in VS Code: skillgit reads its chat sessions (sleep) but does not run it as a student (there is
no headless mode). `skillgit install copilot` covers its project MCP file (`.vscode/mcp.json`)."""

from __future__ import annotations

from skillgit.agents.base import Agent

AGENT = Agent(name="copilot-vscode", title="GitHub Copilot in VS Code", reader="skillgit.sleep.readers.copilot_vscode",
              version_args=())

__all__ = ["AGENT"]

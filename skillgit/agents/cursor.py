"""Cursor: skillgit reads its sessions (sleep) but does not run it as a student (no headless CLI is installed
here) and installs nothing into it."""

from __future__ import annotations

from skillgit.agents.base import Agent

AGENT = Agent(name="cursor", title="Cursor", reader="skillgit.sleep.readers.cursor", version_args=())

__all__ = ["AGENT"]

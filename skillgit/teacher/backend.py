"""The `agent` backend (the backend table's entry for coding agents): a student or a teacher.

Contract: `BACKEND.build` returns the `AgentStudent` of `model.student.command` for the student
(`agentic.student.build`) and the `AgentTeacher` of `model.teacher.command` for the teacher (`agent.build`); both
check that their program exists (a missing one is `LLMError(kind="config")` naming what to install).
`BACKEND.describe` names the argv or the preset.
"""

from __future__ import annotations

from typing import Any, Mapping

from skillgit.agentic import student
from skillgit.config import BackendCfg, Config
from skillgit.llm.registry import Backend
from skillgit.redact import SecretSet
from skillgit.teacher import agent


def _build(role: str, model: str, bcfg: BackendCfg, cfg: Config, env: Mapping[str, str], *, secrets: SecretSet,
           dotenv_keys: frozenset[str]) -> Any:
    if role == "teacher":
        return agent.build(model, bcfg, cfg, env, secrets=secrets, dotenv_keys=dotenv_keys)
    return student.build(model, bcfg, cfg, env, secrets=secrets, dotenv_keys=dotenv_keys)


def _describe(role: str, model: str, bcfg: BackendCfg, env: Mapping[str, str]) -> str:
    what = " ".join(bcfg.command.argv) if bcfg.command.argv else f"agent preset {bcfg.command.preset}"
    return f"{what} (agent teacher: edits the skill package per step)" if role == "teacher" else what


BACKEND = Backend("agent", frozenset({"teacher", "student"}), _build, _describe,
                  "a coding agent (claude, codex, copilot, opencode, the simulated agent): as the student run per "
                  "task in a throwaway workspace and verified; as the teacher it edits a copy of the skill package "
                  "from the step's evidence (skillgit/teacher)", agent=True)

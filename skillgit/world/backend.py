"""The simulated world as a model backend: the registry entry `simulated` (skillgit.llm.registry names this
module's `BACKEND` by string and imports it only when a config asks for the simulation).

Contract: `BACKEND.build` returns the offline `SimulatedTeacher` for the teacher and the `SimulatedStudentLLM`
(a chat model: the factory makes it a `ChatStudent`) for the student, both from `cfg.model.simulated`. No
credentials, no network; it is never built unless the config names it.
"""

from __future__ import annotations

from typing import Any, Mapping

from skillgit.config import BackendCfg, Config
from skillgit.llm.registry import Backend
from skillgit.redact import SecretSet


def _build(role: str, model: str, bcfg: BackendCfg, cfg: Config, env: Mapping[str, str], *, secrets: SecretSet,
           dotenv_keys: frozenset[str]) -> Any:
    from skillgit.world import SimulatedStudentLLM, SimulatedTeacher

    if role == "teacher":
        return SimulatedTeacher(cfg.model.simulated, model=model)
    return SimulatedStudentLLM(cfg.model.simulated, model=model)


def _describe(role: str, model: str, bcfg: BackendCfg, env: Mapping[str, str]) -> str:
    return "offline simulation"


BACKEND = Backend("simulated", frozenset({"teacher", "student"}), _build, _describe,
                  "the offline simulated world (skillgit demo, tests): no model is called, no credentials needed")

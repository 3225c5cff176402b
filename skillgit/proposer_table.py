"""The proposer table: who turns a step's trajectories into candidate skills (`optimizer.proposers`).

The one list of proposer names (a leaf, like `backend_table.py`: config validation reads it; the loop's
`loop/proposing.py` maps each name to the function that builds its candidate; tests/test_proposers.py checks
that both lists agree):
- `reflect`: the chat teacher's procedure of `optimizer.skill_update_mode` (reflect → aggregate → select →
  update, or a rewrite);
- `agent`: a coding agent edits a copy of the package (`loop/agent_step.py`); it needs
  `model.teacher_backend: agent`, whose chat side (the agent run on a question, or under the `simulated` preset
  the simulated chat teacher) then answers `reflect`'s questions too: both proposers share the one teacher.

Contract of the resolution (pure, on the config's values):
- `configured(proposers, teacher_backend)`: the step's proposers when the schedule has not switched:
  `optimizer.proposers`, or when empty the teacher backend's own (`agent` for the agent teacher, else `reflect`);
- a step makes `optimizer.proposals` proposals per proposer, gated together (`loop/field.py`: the gate's bar
  rises with their number); `field_size` is the most a step can make (the schedule may shrink a later field);
- `optimizer.proposer_schedule` `{switch_to: NAME, after_rejected: N}`: once N numbered steps in a row were
  rejected, every later step uses `NAME` alone (the switch is recorded in the run's progress and never undone).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProposerScheduleCfg:
    """`optimizer.proposer_schedule` (a config section, here beside the names it uses)."""

    switch_to: str = ""  # a proposer used alone once `after_rejected` numbered steps in a row were rejected; "": off
    after_rejected: int = 3


@dataclass(frozen=True)
class Proposer:
    name: str
    summary: str
    needs_teacher_backend: str | None = None  # the model.teacher_backend it requires (None: any)


TABLE: dict[str, Proposer] = {
    "reflect": Proposer("reflect", "the chat teacher reflects on minibatches and edits by optimizer.skill_update_mode"),
    "agent": Proposer("agent", "a coding agent edits a copy of the skill package (skillgit/teacher)", "agent"),
}


def names() -> tuple[str, ...]:
    return tuple(TABLE)


def configured(proposers: tuple[str, ...], teacher_backend: str) -> tuple[str, ...]:
    """The step's proposers before any switch (see the module contract)."""
    if proposers:
        return tuple(proposers)
    return ("agent",) if teacher_backend == "agent" else ("reflect",)


def field_size(proposers: tuple[str, ...], teacher_backend: str, proposals: int) -> int:
    """The most candidates one step can make: `proposals` per configured proposer."""
    return proposals * len(configured(proposers, teacher_backend))

"""The simulated world: an offline, seeded stand-in for a student model, a teacher model and a task set, so that
`skillgit demo` and the tests show real training without an API key. It is a *simulation*, and says so
(`describe(cfg)`); it is never a silent fallback for a real backend.

The task: rewrite short records (`date 3/5/2024; weight 12.5 lb; code ab-12; price 4.2 USD; name Ada Lovelace`)
in a hidden house style (`2024-03-05 | 5.67 kg | AB-12 | $4.20 | Lovelace, Ada`). `num_rules` of eight rules are
active, chosen by `seed` (rules.py); topics without an active rule keep the student's natural rendering.

Why it is not tautological (the lesson of SkillOpt's offline mode, DESIGN.md §5):
- the student (student.py) sees only the skill and the task input; it behaves according to the *concepts* the
  skill conveys, matched loosely so that paraphrases work, with seeded slips, so validation scores wobble;
  harmful phrases break answers and very long skills slip more;
- the teacher (teacher.py) sees only its prompt: it diagnoses failures from output vs expected text by surface
  shape (diagnose.py) and proposes fixes from a repertoire of good, vague and harmful ideas (lexicon.py); it knows
  nothing of the hidden rules and repeats rejected ideas unless `<rejected_edits>` lists them;
- so the gate and the negative buffer have measurable effects (climb.py: gate off → harmful edits get in and
  test accuracy drops; buffer off → rejected edits come back).

Public API:
- `SimulatedStudentLLM(cfg, model="sim-student")`, `SimulatedTeacher(cfg, model="sim-teacher")`: `LLM`s.
- `generate_tasks(cfg, n) -> list[Item]`, `write_tasks(path, cfg, n)`, `SIMULATED_MODEL`, `default_skill()`,
  `all_rules_skill(cfg)`, `describe(cfg)`, `hidden_rules(cfg)` (tests/docs only), `reference_score(item, output)`,
  `read_skill(text)`, `hurtful_concepts(cfg, skill)`, `hill_climb(cfg, ...)`.
`cfg` is a `skillgit.config.SimulatedCfg` (seed, num_rules, noise, malformed_rate, latency_s, lucky_rate,
min_fields, max_fields, dilution_lines, dilution_per_line, vague_rate, harmful_rate, off_target_rate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillgit.lazy import exports

if TYPE_CHECKING:
    from skillgit.world.climb import ClimbResult, hill_climb
    from skillgit.world.rules import RULES, read_skill
    from skillgit.world.student import SimulatedStudentLLM
    from skillgit.world.tasks import (
                                      SIMULATED_MODEL,
                                      all_rules_skill,
                                      default_skill,
                                      describe,
                                      generate_tasks,
                                      hidden_rules,
                                      hurtful_concepts,
                                      reference_score,
                                      write_tasks,
    )
    from skillgit.world.teacher import SimulatedTeacher

# Each public name and the module it lives in, imported on first use: the simulated coding agent
# (`python -m skillgit.world.agent`, started once per rollout) and the agent teacher import this package first, and
# need none of these (the benchmark table alone, climb.py, imports the student, the teacher and the probes).
_HOME = {"ClimbResult": "climb", "hill_climb": "climb", "RULES": "rules", "read_skill": "rules",
          "SimulatedStudentLLM": "student", "SimulatedTeacher": "teacher",
          **dict.fromkeys(("SIMULATED_MODEL", "all_rules_skill", "default_skill", "describe", "generate_tasks",
                           "hidden_rules", "hurtful_concepts", "reference_score", "write_tasks"), "tasks")}

__all__ = ["SimulatedStudentLLM", "SimulatedTeacher", "generate_tasks", "default_skill", "all_rules_skill",
           "describe", "hidden_rules", "hurtful_concepts", "reference_score", "read_skill", "RULES", "hill_climb",
           "ClimbResult", "write_tasks", "SIMULATED_MODEL"]


__getattr__, __dir__ = exports(__name__, _HOME)

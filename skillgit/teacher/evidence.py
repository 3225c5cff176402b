"""The evidence of one agent-teacher step, as the files the agent reads, and as the call the journal keys.

Contract:
- `Evidence.build(...)` takes only what a chat teacher's reflect stage may see: the skill at the step's base, the
  step's train trajectories rendered as the chat teacher reads them (`prompts.block_trajectories`: the scorer's
  neutral feedback and `teacher_reference`, never a val or test item, an expected answer the scorer keeps to
  itself, a pattern, a rubric or verifier internals — `skillgit.judging`), the negative buffer with each edit's
  delta, the meta skill, and the step's limits (edit budget, size budget, the files it may create, the protected
  regions and whether front matter may change).
- `files()` lays it out for the agent: `skill/…` (the package, main file first) and `evidence/…`
  (`README.md` the task and the rules, `limits.json`, one `trajectories/NN-<id>.md` per trajectory, failures first,
  `rejected_edits.md`, `meta_skill.md`).
- `request()` is the one teacher call of the step (stage `agent`): the same evidence gives the same request, so the
  call journal answers a resumed step without running the agent again; `from_request` reads it back (the
  backend writes the files from it, nothing else).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from skillgit import package, prompts
from skillgit.errors import SkillgitError
from skillgit.llm.base import Message, Request
from skillgit.types import RejectedEdit, Trajectory, is_failure

STAGE = "agent"
SKILL_DIR = "skill"
EVIDENCE_DIR = "evidence"
_REGION = re.compile(r"<!--\s*skillgit:([\w.-]+)\s*-->")
_SAFE_ID = re.compile(r"[^A-Za-z0-9_.-]+")

TASK = """\
You are the teacher of a skill package for a coding agent. The package is in ./skill (its main file is
./skill/{main}); what the agent did with it on training tasks is in ./evidence. Read ./evidence/README.md first.
Improve the package so that the agent does better on tasks like these: edit the files in ./skill (you may add
files where ./evidence/limits.json allows). Then answer with a short summary of what you changed and why.
"""

README = """\
# One teaching step

The skill package you improve is in `../skill/`. An agent worked on the training tasks below with it; each
`trajectories/NN-<id>.md` holds one task: its input, the agent's answer, what a reviewer said was wrong
(`<feedback>`), and for coding tasks the agent's tool calls and diff (`<trace>`). Failures come first.

Rules of this step (also in `limits.json`):
- change at most {max_edits} places (each changed hunk of a file, and each new file, counts as one);
- keep the main file under about {max_tokens} tokens;
- you may create new files only under: {new_files};
- never change the front matter{front_matter} or the protected regions ({protected});
- `rejected_edits.md` lists edits the gate rejected before, with the score change each caused: do not repeat them;
- `meta_skill.md` holds notes on what worked and what did not in earlier epochs.

Only training tasks are shown, and only training tasks can be tried: `skillgit-try ITEM_ID` runs the agent with the
package as it is now in `../skill/` on training task ITEM_ID (an id from `trajectories/`) and prints the verdict
and the reviewer's feedback. Every try is counted.

Your change is measured afterwards on tasks you do not see; it is kept only if it helps there.
"""


@dataclass(frozen=True)
class Evidence:
    skill: str
    trajectories: tuple[tuple[str, str], ...]  # (item id, rendered <trajectory> block), failures first
    rejected: str = ""
    meta_skill: str = ""
    limits: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def build(cls, skill: str, trajs: list[Trajectory], *, negative: list[RejectedEdit], meta_skill: str,
              budget: int, max_tokens: int, new_files: tuple[str, ...], allow_front_matter: bool) -> Evidence:
        usable = [t for t in trajs if t.ok]
        ordered = [t for t in usable if is_failure(t.score)] + [t for t in usable if not is_failure(t.score)]
        shown = tuple((t.item_id, prompts.block_trajectories([t], "auto")) for t in ordered)
        protected = sorted({m.group(1) for _, text in package.parse(skill).files for m in _REGION.finditer(text)})
        limits = {"max_edits": int(budget), "max_skill_tokens": int(max_tokens), "new_files": list(new_files),
                  "protected_regions": protected, "front_matter_editable": bool(allow_front_matter)}
        return cls(skill, shown, prompts.block_rejected(negative) if negative else "",
                   meta_skill or "", limits)

    def files(self) -> dict[str, str]:
        pkg = package.parse(self.skill)
        out = {f"{SKILL_DIR}/{path}": text for path, text in pkg.files}
        limits = self.limits
        out[f"{EVIDENCE_DIR}/README.md"] = README.format(
            max_edits=limits.get("max_edits", 4), max_tokens=limits.get("max_skill_tokens", 5000),
            new_files=", ".join(limits.get("new_files") or []) or "nowhere",
            front_matter=" (it may change in this project)" if limits.get("front_matter_editable") else "",
            protected=", ".join(limits.get("protected_regions") or []) or "none in this package")
        out[f"{EVIDENCE_DIR}/limits.json"] = json.dumps(dict(limits), indent=2, sort_keys=True) + "\n"
        for n, (item_id, block) in enumerate(self.trajectories, 1):
            out[f"{EVIDENCE_DIR}/trajectories/{n:02d}-{_SAFE_ID.sub('_', item_id)[:60]}.md"] = block + "\n"
        out[f"{EVIDENCE_DIR}/rejected_edits.md"] = (self.rejected or "(none yet)") + "\n"
        out[f"{EVIDENCE_DIR}/meta_skill.md"] = (self.meta_skill or "(none yet)") + "\n"
        return out

    def request(self) -> Request:
        main = package.parse(self.skill).main
        body = {"skill": self.skill, "trajectories": [list(t) for t in self.trajectories], "rejected": self.rejected,
                "meta_skill": self.meta_skill, "limits": dict(self.limits)}
        return Request((Message("system", TASK.format(main=main)),
                        Message("user", json.dumps(body, sort_keys=True, ensure_ascii=False))), stage=STAGE)

    @classmethod
    def from_request(cls, request: Request) -> Evidence:
        users = [m.content for m in request.messages if m.role == "user"]
        try:
            body = json.loads(users[-1])
            return cls(str(body["skill"]), tuple((str(i), str(b)) for i, b in body["trajectories"]),
                       str(body.get("rejected", "")), str(body.get("meta_skill", "")), dict(body.get("limits", {})))
        except (IndexError, KeyError, TypeError, ValueError) as exc:
            raise SkillgitError(f"agent teacher: the step request is malformed ({exc})",
                                "build it with skillgit.teacher.evidence.Evidence.request") from None

    def task(self) -> str:
        """The prompt the agent is started with."""
        return TASK.format(main=package.parse(self.skill).main)

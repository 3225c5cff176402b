"""The coding agent as teacher (`model.teacher_backend: agent`).

- `evidence`: the step's evidence as files and as the one journaled teacher call of stage `agent`;
- `agent`: `AgentTeacher`, the backend (an `LLM`): runs the agent on a throwaway copy of the package;
- `trying`: `skillgit-try ITEM_ID` on the agent's PATH, served on 127.0.0.1 for train items only;
- `diff`: the agent's package → `Edit` records per file;
- `backend`: the `agent` entry of the backend table: the student (`agentic.student`) or the teacher (`agent`);
the loop's side (evidence → call → edits → select (budget, negative buffer) → update → the gate) is
`skillgit/loop/agent_step.py`, so that this package never imports the loop.
"""

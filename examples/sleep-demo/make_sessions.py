"""Regenerate the shipped Claude Code sessions of `skillgit demo --sleep` (examples/sleep-demo/sessions/).

Six interactive Claude Code sessions (the on-disk JSONL shape of Claude Code 2.1, see
skillgit/sleep/readers/claude.py) in which a person keeps asking the agent to normalise records to the team's
house style, corrects it when it answers in its own style ("no, …") and accepts the fixed answer ("thanks"). The
records and the accepted answers are those of skillgit's offline simulated world with seed 0 (`generate_tasks`):
the demo replays them against the simulated student, so a night can learn the house style from them.

The sessions were recorded in `/home/dev/records-app` (`PROJECT` below); the demo relocates them to its own
throwaway project. Run from the repository root: `python examples/sleep-demo/make_sessions.py`
(tests/test_sleep_demo.py checks the shipped files still match the world).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from skillgit.config import SimulatedCfg
from skillgit.world import generate_tasks

PROJECT = "/home/dev/records-app"
SEED = 0
SESSIONS = 6
PER_SESSION = 6
VERSION = "2.1.30"
MODEL = "claude-sonnet-4-5-20250929"
CORRECTIONS = (
    "no, that's not our house style, fix the fields",
    "no, use the house style for every field, like the last ones",
    "that's wrong again: house style please",
)


def natural(item) -> str:
    """What an agent without the house style answers: the record's values as they came."""
    return " | ".join(part.split(" ", 1)[1] for part in item.input.split(": ", 1)[1].split("; "))


class Session:
    def __init__(self, number: int) -> None:
        self.number = number
        self.id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"skillgit-sleep-demo/{number}"))
        self.day = f"2026-01-{5 + number:02d}"
        self.tick = 9 * 3600 + number * 7 * 60
        self.parent: str | None = None
        self.records: list[dict] = [
            {"type": "permission-mode", "permissionMode": "default", "sessionId": self.id}]

    def _ts(self, step: int) -> str:
        self.tick += step
        return f"{self.day}T{self.tick // 3600:02d}:{self.tick // 60 % 60:02d}:{self.tick % 60:02d}.{self.tick % 997:03d}Z"

    def _record(self, kind: str, message: dict, step: int) -> dict:
        uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.id}/{len(self.records)}"))
        rec = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": PROJECT,
               "sessionId": self.id, "version": VERSION, "gitBranch": "main", "type": kind, "message": message,
               "uuid": uid, "timestamp": self._ts(step), "entrypoint": "cli"}
        self.parent = uid
        return rec

    def user(self, text: str) -> None:
        self.records.append({"type": "file-history-snapshot", "messageId": f"snap-{len(self.records)}",
                             "snapshot": {"trackedFileBackups": {}}, "isSnapshotUpdate": False})
        rec = self._record("user", {"role": "user", "content": text}, 25)
        rec["permissionMode"] = "default"
        self.records.append(rec)

    def say(self, text: str) -> None:
        n = len(self.records)
        self.records.append({**self._record("assistant", {
            "id": f"msg_demo{self.number:02d}{n:04d}", "type": "message", "role": "assistant", "model": MODEL,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1200 + 40 * n, "output_tokens": 12 + len(text) // 4}}, 6),
            "requestId": f"req_demo{self.number:02d}{n:04d}"})

    def text(self) -> str:
        return "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in self.records)


def build() -> dict[str, str]:
    """file name → content of every shipped session."""
    items = generate_tasks(SimulatedCfg(seed=SEED), SESSIONS * PER_SESSION)
    files = {}
    for s in range(SESSIONS):
        session = Session(s)
        for k, item in enumerate(items[s * PER_SESSION:(s + 1) * PER_SESSION]):
            session.user(item.input)
            if (s + k) % 2:
                session.say(natural(item))
                session.user(CORRECTIONS[(s + k) % len(CORRECTIONS)])
            session.say(item.expected)
            session.user("thanks")
        files[f"{session.id}.jsonl"] = session.text()
    return files


def main() -> None:
    folder = Path(__file__).resolve().parent / "sessions"
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.jsonl"):
        old.unlink()
    for name, text in build().items():
        (folder / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(list(folder.glob('*.jsonl')))} sessions to {folder}")


if __name__ == "__main__":
    main()

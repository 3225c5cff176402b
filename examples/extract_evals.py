"""Rebuild the example task sets from the MIT-licensed `evals` package (OpenAI Evals), for reproducibility.

Not run by the tests; the generated files are committed. Usage:

    pip download --no-deps evals==3.0.1.post1 -d /tmp/evals
    python examples/extract_evals.py /tmp/evals/evals-3.0.1.post1-py3-none-any.whl

The wheel (sha256 0abcb2051303500784b1641a6e4f6b813ed43ad64f879a37d344a6774eb8eb78) ships the samples as plain
JSONL, not as git-LFS pointers. Each sample is `{"input": [system, user], "ideal": str}`. Every set uses a single
system prompt for all of its samples; that prompt is the eval's instruction, so it becomes the starter SKILL.md
(written once, only if missing) and each item keeps just the user message as `input`, the `ideal` as `expected`,
and its provenance in `metadata`. The script checks the single-system-prompt assumption and fails otherwise.
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

VERSION = "3.0.1.post1"
SETS = {  # example folder → path inside the wheel
    "sort-numeric": "evals/registry/data/sort_numeric/samples.jsonl",
    "first-letters": "evals/registry/data/first-letters/samples.jsonl",
    "regex-match": "evals/registry/data/regex-match/samples.jsonl",
}
HERE = Path(__file__).resolve().parent


def convert(name: str, member: str, text: str) -> tuple[list[dict], str]:
    """Samples of one set → (our items, the shared system prompt)."""
    items, systems = [], set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        messages = row["input"]
        systems.update(m["content"] for m in messages if m["role"] == "system")
        users = [m["content"] for m in messages if m["role"] == "user"]
        if len(users) != 1 or len(messages) != 2:
            raise SystemExit(f"{member}:{number}: expected one system and one user message")
        items.append({
            "id": f"{name}-{number:03d}",
            "input": users[0],
            "expected": row["ideal"],
            "metadata": {"source": f"evals {VERSION}: {member}", "line": number, "license": "MIT"},
        })
    if len(systems) != 1:
        raise SystemExit(f"{member}: expected one shared system prompt, found {len(systems)}")
    return items, systems.pop()


def main(wheel: str) -> None:
    with zipfile.ZipFile(wheel) as archive:
        for name, member in SETS.items():
            items, system = convert(name, member, archive.read(member).decode("utf-8"))
            folder = HERE / name
            folder.mkdir(exist_ok=True)
            with open(folder / "tasks.jsonl", "w", encoding="utf-8", newline="\n") as out:
                for item in items:
                    out.write(json.dumps(item, ensure_ascii=False) + "\n")
            skill = folder / "SKILL.md"
            if not skill.exists():
                skill.write_text(f"# {name}\n\n{system}\n", encoding="utf-8")
            sys.stderr.write(f"{name}: {len(items)} items\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])

"""Stands in for `claude -p --output-format json|text [--model M] [--strict-mcp-config] [--setting-sources S]
[--] PROMPT` in tests (as in the real CLI, `-p` is a flag and the prompt an operand).

Checks that the skill was installed at .claude/skills/<name>/SKILL.md in its working directory and answers with
the prompt and the skill's RULE line, so a test can see that the agent read the installed skill. Reports the
credentials it can see on stderr (to test environment filtering and trace redaction), and its isolation switches
and config home. FAKE_CLAUDE_ERROR=1 makes
it print an error result (is_error: true) instead.
"""

import argparse
import glob
import json
import os
import sys

parser = argparse.ArgumentParser()
parser.add_argument("-p", dest="print_", action="store_true", required=True)
parser.add_argument("prompt")
parser.add_argument("--output-format", default="text")
parser.add_argument("--model", default="")
parser.add_argument("--strict-mcp-config", action="store_true")
parser.add_argument("--setting-sources", default="")
args = parser.parse_args()

skills = sorted(glob.glob(".claude/skills/*/SKILL.md"))
if not skills:
    print("fake claude: no skill installed under .claude/skills/", file=sys.stderr)
    sys.exit(2)
text = open(skills[0], encoding="utf-8").read()
rule = next((line for line in text.splitlines() if line.startswith("RULE:")), "RULE: none")
for name in ("ANTHROPIC_API_KEY", "GITHUB_TOKEN", "MY_PASSTHROUGH_SECRET"):
    if name in os.environ:
        print(f"saw {name}={os.environ[name]}", file=sys.stderr)
print(f"skill file: {skills[0]}", file=sys.stderr)
print(f"front matter: {text.startswith('---')}", file=sys.stderr)
print(f"strict mcp: {args.strict_mcp_config}; setting sources: {args.setting_sources or 'all'}", file=sys.stderr)
print(f"config home: {os.environ.get('CLAUDE_CONFIG_DIR', '~/.claude')}", file=sys.stderr)
answer = f"{args.prompt} -> {rule} (model={args.model or 'default'})"
if args.output_format == "json":
    if os.environ.get("FAKE_CLAUDE_ERROR"):
        print(json.dumps({"type": "result", "subtype": "error_during_execution", "is_error": True,
                          "result": "API Error: 529 overloaded"}))
        sys.exit(0)
    print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": answer,
                      "num_turns": 2, "duration_ms": 1234, "total_cost_usd": 0.0123, "session_id": "sess-1",
                      "usage": {"input_tokens": 100, "cache_read_input_tokens": 50, "output_tokens": 20}}))
else:
    print(answer)

"""Stands in for `codex exec [-m M] --skip-git-repo-check --output-last-message FILE PROMPT` in tests.

Checks that the skill was installed as AGENTS.md in its working directory, prints progress on stdout and stderr,
and writes the final answer (prompt + the skill's RULE line) to FILE, as codex does.
"""

import argparse
import os
import sys

parser = argparse.ArgumentParser()
parser.add_argument("command")
parser.add_argument("prompt")
parser.add_argument("-m", dest="model", default="")
parser.add_argument("--skip-git-repo-check", action="store_true")
parser.add_argument("--output-last-message", required=True)
args = parser.parse_args()

assert args.command == "exec", args.command
if not os.path.isfile("AGENTS.md"):
    print("fake codex: AGENTS.md missing", file=sys.stderr)
    sys.exit(2)
if not args.skip_git_repo_check:
    print("Not inside a trusted directory and --skip-git-repo-check was not specified.", file=sys.stderr)
    sys.exit(1)
rule = next((line for line in open("AGENTS.md", encoding="utf-8") if line.startswith("RULE:")), "RULE: none").strip()
print("thinking... running tools...")
print("tokens used: 1234", file=sys.stderr)
with open(args.output_last_message, "w", encoding="utf-8") as f:
    f.write(f"{args.prompt} -> {rule} (model={args.model or 'default'})\n")

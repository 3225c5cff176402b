"""A generic agent for tests: `generic_agent.py PROMPT_FILE SKILL_FILE WORKSPACE`.

Prints a JSON object describing what it was given (prompt text, skill text, whether the skill file lies inside the
workspace, its working directory), so a test can check every placeholder.
"""

import json
import os
import sys

prompt_file, skill_file, workspace = sys.argv[1:4]
print(json.dumps({
    "prompt": open(prompt_file, encoding="utf-8").read(),
    "skill": open(skill_file, encoding="utf-8").read(),
    "skill_in_workspace": os.path.realpath(skill_file).startswith(os.path.realpath(workspace) + os.sep),
    "cwd_is_workspace": os.path.realpath(os.getcwd()) == os.path.realpath(workspace),
    "sample": os.environ.get("SKILLGIT_SAMPLE"),
}))

"""An agent that fails: prints a few lines on stderr (the last one naming the problem) and exits with status 3.
With `--transient` the last line looks like a rate limit, which a retry can cure."""

import sys

print("starting", file=sys.stderr)
print("loading skill", file=sys.stderr)
if "--transient" in sys.argv:
    print("Error: 429 rate limit exceeded", file=sys.stderr)
else:
    print("fatal: could not parse the task", file=sys.stderr)
sys.exit(3)

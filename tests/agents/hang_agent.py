"""An agent that never answers: starts a child process (same process group), writes the child's pid to the file
named by argv[1], then sleeps. With `--ignore-term` it also ignores SIGTERM, so only SIGKILL stops it."""

import signal
import subprocess
import sys
import time

pid_file = sys.argv[1]
if "--ignore-term" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                          "time.sleep(120)"])
with open(pid_file, "w") as f:
    f.write(str(child.pid))
print("working...", flush=True)
time.sleep(120)

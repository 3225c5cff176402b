"""What a newcomer met with `skillgit ui --open` (README "Live dashboard") on a machine without a browser — a server,
a container, CI (wave 12): the dashboard served, printed its URL and said nothing of the browser it had been asked
to open and could not, so the person waited for a window. Now it says so, and what to do. The real CLI in a
subprocess, with BROWSER naming a program that does not exist (Python's `webbrowser` then finds no browser)."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading

import pytest

from tests.helpers import demo_project

pytest.importorskip("aiohttp")


def test_open_without_a_browser_says_so(tmp_path):
    root = demo_project(tmp_path / "p")
    env = {**os.environ, "BROWSER": str(tmp_path / "no-such-browser")}
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    proc = subprocess.Popen([sys.executable, "-m", "skillgit", "ui", "-C", str(root), "--open"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in proc.stderr or ():
            lines.put(line)
        lines.put("")

    threading.Thread(target=read, daemon=True).start()
    said: list[str] = []
    try:
        while not any("--open:" in line for line in said):
            line = lines.get(timeout=60)
            if not line:
                break
            said.append(line)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    text = " ".join("".join(said).split())
    assert "skillgit ui: serving" in text, text
    assert "--open: no web browser could be started here; open the URL above in yours" in text, text

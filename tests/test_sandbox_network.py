"""The spreadsheet code sandbox gets no network: the student's code, and anything it starts, reaches no address —
a listening server on 127.0.0.1 in the test's own network is never connected to."""

from __future__ import annotations

import socket
import threading

from skillgit.envs import pysandbox


def _listener() -> tuple[socket.socket, list[str]]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    accepted: list[str] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            accepted.append("connected")
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return server, accepted


def test_the_students_code_and_its_children_reach_no_address(tmp_path):
    server, accepted = _listener()
    port = server.getsockname()[1]
    child = f"import socket; s = socket.socket(); s.settimeout(2); print('child', s.connect_ex(('127.0.0.1', {port})))"
    code = f"""
import socket, subprocess, sys
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2)
    print("python: connected")
except OSError as exc:
    print("python: refused", type(exc).__name__)
print(subprocess.run([sys.executable, "-c", {child!r}], capture_output=True, text=True).stdout)
"""
    try:
        ran, _ = pysandbox.run_code(code, {}, 30, lambda folder: None)
    finally:
        server.close()
    assert ran.returncode == 0, ran.stderr
    assert "python: refused PermissionError" in ran.stdout  # the runner's guard, always
    if pysandbox.network_isolation():  # a namespace of its own: a child process without the guard is cut off too
        assert "child 0" not in ran.stdout, ran.stdout
        assert accepted == []
    else:
        assert "child" in ran.stdout, ran.stdout  # (a system without namespaces: the Python guard only)

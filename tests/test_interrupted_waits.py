"""Ctrl-C while the run waits for a background write (a progress save, a step's decision) cuts the wait short, not
the write: the write stays pending, and the interrupted run's own last save waits for it. Before, the wait forgot
the write, and the run's "interrupted" save raced it on the run ref: `skillgit demo --dir D`, interrupted right
after a step, ended in "refs/skillgit/runs/demo-seed0 changed while this command ran" (exit 3) instead of exit 130.
"""

from __future__ import annotations

import signal
import threading

import pytest

from skillgit.loop.background import Saves


class _SlowStore:
    """A store whose first `save_run` blocks until released; it records how many saves ran at once."""

    def __init__(self) -> None:
        self.started, self.release = threading.Event(), threading.Event()
        self.active, self.most = 0, 0
        self.lock = threading.Lock()

    def save_run(self, run_id: str, files: dict[str, str], message: str) -> None:
        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
        self.started.set()
        if message == "step 1":
            assert self.release.wait(30)
        with self.lock:
            self.active -= 1


def _interrupt_main_after(seconds: float) -> None:
    """SIGINT to the main thread (as Ctrl-C delivers it) while it waits."""
    main = threading.main_thread().ident
    assert main is not None
    threading.Timer(seconds, lambda: signal.pthread_kill(main, signal.SIGINT)).start()


def test_ctrl_c_while_waiting_for_a_save_leaves_it_pending_and_the_next_save_waits_for_it():
    store = _SlowStore()
    saves = Saves(store, "r1")  # type: ignore[arg-type]
    saves.save({"progress.json": "{}"}, "step 1", background=True)
    assert store.started.wait(10)
    _interrupt_main_after(0.2)
    with pytest.raises(KeyboardInterrupt):
        saves.settle(quiet=True)  # the wait is cut short; the save is not
    threading.Timer(0.3, store.release.set).start()
    saves.save({"progress.json": '{"status": "interrupted"}'}, "interrupted")  # waits for "step 1" first
    assert store.most == 1 and store.active == 0

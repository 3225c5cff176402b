"""bench/proposers.py counts waves from when the loop released a parallel batch, not from when a (loaded) worker
thread picked each call up: one batch whose pick-ups spread over more than a call's latency is still one wave."""

from __future__ import annotations

import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _bench():
    sys.path.insert(0, str(BENCH))
    try:
        import proposals
        import proposers
    finally:
        sys.path.remove(str(BENCH))
    return proposers, proposals


def test_one_batch_picked_up_late_is_one_wave_and_a_dependent_batch_the_next():
    proposers, proposals = _bench()
    timeline = proposers.Timeline()
    executor = proposers.ReleasingExecutor()

    def call(i: int) -> int:
        time.sleep(0.03 * i)  # the worker thread picks the call up late (a loaded machine)
        return timeline.timed("student", lambda: time.sleep(0.02) or i)

    assert executor.map(call, list(range(8)), workers=8) == list(range(8))
    assert max(w for _, w in proposals.wave_levels(timeline.calls)) == 1  # from pick-ups: 4 waves
    assert proposals.overlapping_waves(timeline.calls) == 0
    executor.map(call, list(range(3)), workers=8)  # released after the first batch ended: it depends on it
    assert max(w for _, w in proposals.wave_levels(timeline.calls)) == 2
    assert proposers.in_flight(timeline.calls) <= 8  # in flight from when calls began, not from the release


def test_a_batch_larger_than_the_pool_or_sequential_is_timed_from_each_call():
    proposers, _ = _bench()
    timeline = proposers.Timeline()
    executor = proposers.ReleasingExecutor()
    executor.map(lambda i: timeline.timed("student", lambda: time.sleep(0.01)), list(range(4)), workers=2)
    executor.map(lambda i: timeline.timed("student", lambda: time.sleep(0.01)), list(range(2)), workers=1)
    assert all(c["start"] == c["began"] for c in timeline.calls)  # queued calls wait for others: not released


def test_split_waves_counts_late_pick_ups_not_two_released_batches_side_by_side():
    import threading

    proposers, _ = _bench()
    late = proposers.Timeline()  # no executor marks: one batch picked up late splits into waves
    def call(i: int) -> None:
        time.sleep(0.03 * i)
        late.timed("student", lambda: time.sleep(0.05))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert proposers.split_waves(late.calls) >= 1

    side = proposers.Timeline()  # two proposers' batches released side by side, one later than the other
    executor = proposers.ReleasingExecutor()
    runner = threading.Thread(target=lambda: executor.map(
        lambda i: side.timed("student", lambda: time.sleep(0.2)), list(range(4)), workers=8))
    runner.start()
    time.sleep(0.1)
    executor.map(lambda i: side.timed("student", lambda: time.sleep(0.2)), list(range(4)), workers=8)
    runner.join()
    assert proposers.split_waves(side.calls) == 0

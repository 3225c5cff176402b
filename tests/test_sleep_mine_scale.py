"""Mining at the size of a real history (issue 22 item 2): `skillgit.sleep.cluster` gives the clusters of the
pairwise algorithm mining used before (tests/sleep_reference.py) without the n² matrix, on synthetic histories,
on the shipped transcript fixtures and on units without features; the caps that bound memory say when they bound;
the streaming `Miner` gives what `mine` gives whatever order sessions arrive in. Speed is measured in
bench/sleep_scale.py, never asserted here."""

from __future__ import annotations

import importlib
import tracemalloc
from collections import Counter

import pytest

from skillgit.sleep import mine, split_units
from skillgit.sleep.cluster import Stats, cluster
from skillgit.sleep.mine import DEFAULT_THRESHOLD, Miner, unit_features
from skillgit.sleep.readers import get_reader
from tests.sleep_reference import assert_same
from tests.sleep_synthetic import History
from tests.test_sleep_harvest import FIXTURES


def synthetic_docs(n: int, seed: int) -> list[Counter[str]]:
    return [unit_features(u) for s in History(seed).units(n) for u in split_units(s) if u.request]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("threshold", [DEFAULT_THRESHOLD, 0.55])
def test_clusters_are_the_pairwise_ones_on_a_synthetic_history(seed, threshold):
    docs = synthetic_docs(160, seed)
    stats = Stats()
    found = cluster(docs, threshold, stats=stats)
    assert stats.exact and stats.merges > 20  # recurring families did merge, and no cap bound
    assert stats.nodes < len(docs)  # identical requests were one node
    assert_same(docs, threshold, found)


def test_units_without_features_stay_alone_like_in_the_pairwise_algorithm():
    # "yes" and "ok do it" normalize to nothing: identical empty feature sets are not one node (cosine 0, not 1)
    docs = [Counter(), Counter({"parse": 1, "date": 1}), Counter(), Counter({"parse": 1, "date": 1}), Counter()]
    found = cluster(docs, DEFAULT_THRESHOLD)
    assert [c.members for c in found] == [(0,), (1, 3), (2,), (4,)]
    assert_same(docs, DEFAULT_THRESHOLD, found)


def test_clusters_are_the_pairwise_ones_on_the_shipped_transcripts():
    sessions = []
    for source, pattern in (("claude", "claude/*.jsonl"), ("codex", "codex/*.jsonl")):
        for path in sorted(FIXTURES.glob(pattern)):
            sessions.extend(get_reader(source).read(path))
    # each session twice under another key and a day later: the same requests recur across sessions
    docs = [unit_features(u) for s in sessions for u in split_units(s) if u.request]
    assert len(docs) >= 5
    found = cluster(docs + docs, DEFAULT_THRESHOLD)
    assert_same(docs + docs, DEFAULT_THRESHOLD, found)
    assert any(len(c.members) >= 2 for c in found)


def test_the_caps_bound_the_work_and_say_so():
    docs = synthetic_docs(400, 3)
    exact = cluster(docs, 0.2)
    stats = Stats()
    capped = cluster(docs, 0.2, stats=stats, walk=5, keep=2, neighbours=2)
    assert not stats.exact and stats.capped_pairs and stats.capped_clusters
    assert sorted(i for c in capped for i in c.members) == list(range(len(docs)))  # every unit, once
    assert [c.members for c in capped] != [c.members for c in exact]


def test_memory_grows_with_the_similar_pairs_not_with_every_pair():
    def peak(n: int) -> int:
        docs = synthetic_docs(n, 4)
        tracemalloc.start()
        try:
            cluster(docs, DEFAULT_THRESHOLD)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(600), peak(2400)
    # 4× the units: the pairwise matrix would hold 16× the pairs; allow for what is linear and for noise
    assert large < 8 * small


def test_the_streaming_miner_gives_what_mine_gives_in_any_order():
    sessions = list(History(5).units(300))
    whole = mine(sessions, min_sessions=2)
    miner = Miner(min_sessions=2)
    for session in reversed(sessions):
        miner.add(session)
    streamed = miner.result()
    assert streamed.tasks == whole.tasks and streamed.units == whole.units
    assert whole.summary()["capped"] == 0 and whole.summary()["recurring"] >= 3


def test_the_default_neighbour_cap_groups_a_capped_history_as_the_wider_one_did():
    # 1,500 synthetic requests: the caps bind (stats.exact False). The agglomeration keeps 32 neighbours per
    # cluster (it kept 128): the clusters and their mean similarities stay the ones 128 gave
    docs = synthetic_docs(1500, 0)
    stats = Stats()
    found = cluster(docs, DEFAULT_THRESHOLD, stats=stats)
    wide = cluster(docs, DEFAULT_THRESHOLD, neighbours=128)
    assert not stats.exact and stats.capped_clusters  # the cap did bind
    assert [c.members for c in found] == [c.members for c in wide]
    assert [s for c in found for s in c.mean_sims] == pytest.approx([s for c in wide for s in c.mean_sims])


def test_weighted_nodes_out_of_order_merge_like_the_pairwise_algorithm():
    # identical requests (one weighted node) whose first unit comes after other nodes' units: clusters are named
    # by node, and the tie order must stay the one of the lowest unit indices
    base = synthetic_docs(120, 6)
    docs = base[40:] + base + base[:40] + base[::-1]
    found = cluster(docs, DEFAULT_THRESHOLD)
    assert_same(docs, DEFAULT_THRESHOLD, found)


def test_a_capped_merge_skips_the_one_sided_dots_that_cannot_make_the_cap(monkeypatch):
    # a merge keeps the `neighbours` best; a neighbour known on one side only gets the exact dot of the sums,
    # unless its bound (the missing side below the threshold) cannot outrank the weakest kept: same grouping,
    # fewer dots than computing every one
    from skillgit.sleep import cluster as module

    docs = synthetic_docs(1500, 0)
    dots = {"on": False, "count": 0}
    real_dot, real_run, real_two_sided = module._dot, module._Agglomeration.run, module._Agglomeration._two_sided

    def counting_dot(a, b):
        dots["count"] += dots["on"]
        return real_dot(a, b)

    def counting_run(self):
        dots["on"] = True
        real_run(self)
        dots["on"] = False

    def every_dot(self, *args):  # the bounds lifted: every one-sided neighbour is computed, as before the cap
        merged, one_sided = real_two_sided(self, *args)
        return merged, [(float("inf"), k) for _, k in one_sided]

    monkeypatch.setattr(module, "_dot", counting_dot)
    monkeypatch.setattr(module._Agglomeration, "run", counting_run)
    found = cluster(docs, DEFAULT_THRESHOLD)
    pruned, dots["count"] = dots["count"], 0
    monkeypatch.setattr(module._Agglomeration, "_two_sided", every_dot)
    full = cluster(docs, DEFAULT_THRESHOLD)
    assert [c.members for c in found] == [c.members for c in full]
    assert [s for c in found for s in c.mean_sims] == pytest.approx([s for c in full for s in c.mean_sims])
    assert pruned < 0.9 * dots["count"]


def test_the_miner_normalises_each_request_once(monkeypatch):
    # the resume fingerprint, the features and the task id read the same normalised words: one `normalize` of a
    # request per unit (it was three: fingerprint, features, task id), and the same result
    module = importlib.import_module("skillgit.sleep.mine")  # `skillgit.sleep.mine` the attribute is the function
    sessions = list(History(7).units(200))
    expected = mine(sessions, min_sessions=2)
    calls: Counter[str] = Counter()
    real_normalize = module.normalize

    def counting(text):
        calls[text] += 1
        return real_normalize(text)

    monkeypatch.setattr(module, "normalize", counting)
    miner = Miner(min_sessions=2)
    for session in sessions:
        miner.add(session)
    result = miner.result()
    assert result.tasks == expected.tasks and result.units == expected.units
    assert len(result.tasks) > 10 and result.groups[0].words
    requests = Counter(u.request for u in result.units)
    assert len(requests) > 50
    assert all(calls[request] == count for request, count in requests.items())

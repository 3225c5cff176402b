"""The grouping `skillgit.sleep.mine` used before it scaled (commit 63713d6, verbatim in what it computes): the full
cosine matrix and average-linkage agglomeration over every pair, O(n²) memory and O(n³) time. Kept as the
reference the new grouping must agree with (tests/test_sleep_mine_scale.py) and as the baseline of
bench/sleep_scale.py. Not for use at any real size."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

import pytest


def _tfidf(docs: list[Counter[str]]) -> list[dict[str, float]]:
    n = len(docs)
    df: Counter[str] = Counter()
    for doc in docs:
        df.update(doc.keys())
    vectors = []
    for doc in docs:
        vec = {t: (1.0 + math.log(c)) * (math.log((1 + n) / (1 + df[t])) + 1.0) for t, c in doc.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        vectors.append({t: v / norm for t, v in vec.items()})
    return vectors


def _cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(t, 0.0) for t, v in a.items())


def similarity_matrix(docs: Sequence[Counter[str]]) -> list[list[float]]:
    vectors = _tfidf(list(docs))
    n = len(docs)
    return [[_cosine(vectors[i], vectors[j]) if i != j else 1.0 for j in range(n)] for i in range(n)]


def group(docs: Sequence[Counter[str]], threshold: float) -> list[tuple[list[int], list[float]]]:
    """(members, each member's mean similarity to the others) per cluster, ordered by first member."""
    sim = similarity_matrix(docs)
    clusters: dict[int, list[int]] = {i: [i] for i in range(len(docs))}
    link: dict[tuple[int, int], float] = {(i, j): sim[i][j] for i in clusters for j in clusters if i < j}
    while link:
        (a, b), best = max(link.items(), key=lambda kv: (kv[1], -kv[0][0], -kv[0][1]))
        if best < threshold:
            break
        size_a, size_b = len(clusters[a]), len(clusters[b])
        clusters[a] = sorted(clusters[a] + clusters.pop(b))
        for k in list(clusters):
            if k in (a, b):
                continue
            ka, kb = (min(k, a), max(k, a)), (min(k, b), max(k, b))
            link[ka] = (size_a * link[ka] + size_b * link.pop(kb)) / (size_a + size_b)
        link = {key: v for key, v in link.items() if b not in key}
    out = []
    for members in sorted(clusters.values(), key=lambda c: c[0]):
        means = []
        for i in members:
            others = [sim[i][j] for j in members if j != i]
            means.append(sum(others) / len(others) if others else 1.0)
        out.append((members, means))
    return out


def assert_same(docs: Sequence[Counter[str]], threshold: float, found: Sequence[object]) -> None:
    """`found` (skillgit.sleep.cluster.Cluster list) is the pairwise algorithm's result on `docs`."""
    expected = group(docs, threshold)
    got = [(list(c.members), list(c.mean_sims)) for c in found]  # type: ignore[attr-defined]
    assert [m for m, _ in got] == [m for m, _ in expected]
    for (_, means), (_, ref_means) in zip(got, expected):
        assert means == pytest.approx(ref_means, abs=1e-9)


def checking(cluster: Callable[..., list]) -> Callable[..., list]:
    """`cluster` that also checks its result against the pairwise algorithm's (for tests on small data)."""

    def checked(docs: Iterable[Counter[str]], threshold: float, **kwargs: object) -> list:
        docs = list(docs)
        found = cluster(docs, threshold, **kwargs)
        assert_same(docs, threshold, found)
        checked.calls += 1  # type: ignore[attr-defined]
        return found

    checked.calls = 0  # type: ignore[attr-defined]
    return checked

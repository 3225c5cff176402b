"""Grouping task units without a model: TF-IDF cosine over their features, average-linkage agglomeration stopped
at a threshold — in time and memory that grow with the similar pairs, not with every pair.

Contracts:
- `normalize(text)`: lower-cased, stemmed content words (snake_case names also give their parts); `test_key`: a
  test command without wrappers and noise flags. Both are part of mined task ids: changing them changes ids.
- `cluster(docs, threshold)` takes one feature Counter per unit (in unit order) and returns the clusters of
  average-linkage agglomeration over the cosine of their TF-IDF vectors (weight (1 + ln tf) · (ln((1 + n) /
  (1 + df)) + 1), unit length), merging the most similar pair of clusters — ties to the lowest unit indices —
  while their linkage is at least `threshold` (> 0). Each `Cluster` has its members (ascending) and, per member,
  its mean cosine to the other members (1.0 alone); clusters come ordered by their first member. The result is
  the one the full pairwise algorithm gives (see `tests/sleep_reference.py` and tests/test_sleep_mine_scale.py),
  up to floating-point rounding in the last digits, as long as no cap bound: `walk`, `keep` and `neighbours`
  bound the work on huge histories (a word in thousands of requests, a family of hundreds of variants), and
  `stats` says when one did (`exact` False, `capped_*` counts; `MineResult.capped`).

Why it is the same result without the matrix:
1. Units with identical (non-empty) features have cosine 1 to each other: they are one weighted node from the
   start. A unit without features has cosine 0 with every unit and stays alone, as in the pairwise algorithm.
2. The mean cosine between two clusters of unit vectors is the dot product of their *sum* vectors divided by
   |A|·|B| (the dot product is bilinear), so a cluster keeps its sum vector and the dot products with its
   neighbours, and a merge adds them (D(A∪B, K) = D(A, K) + D(B, K)); nothing is averaged approximately.
3. A mean is at most its largest term: two clusters whose linkage reaches the threshold hold two nodes whose
   cosine does. So the clusters that may ever merge are exactly those joined by a node pair of cosine ≥
   threshold, and only those pairs are looked for: an inverted index (feature → the earlier nodes holding it,
   ids and weights in flat lists) accumulates each node's dot products with the earlier nodes it shares a
   feature with — the exact cosines when no cap cuts. A lookup walks its rarest features first and their latest
   entries first, at most `walk` entries in all: on a huge history the long postings of common words are what
   the cap cuts, and then the likeliest candidates (largest partial dot) get their exact cosine (the partial dot
   plus the products of the features the walk did not read for them).
4. Average linkage is reducible (merging two clusters never brings a third closer than the nearer of the two), so
   merging identical nodes first (1.) gives the same clusters as merging pairs in the global order.
5. The agglomeration keeps one heap entry per cluster, its best neighbour's rank; a merge re-ranks the merged
   cluster only. A neighbour whose best was one of the two merged keeps its entry, whose rank can only be too good
   (a merge into a new best is offered at once): when it comes up, its linkage is checked and, when stale, the
   neighbour looks again (lazy evaluation, so a large cluster's merges do not rescan all its neighbours).
Cost: near-linear in the units when few pairs are similar; the work and memory grow with the pairs at cosine ≥
threshold (a lower threshold costs more) and are bounded per unit by the caps, never with n². Once the pairs are
found, the node vectors are held packed (`_Packed`: two arrays) through the agglomeration.
"""

from __future__ import annotations

import heapq
import math
import operator
import re
from array import array
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import compress, repeat

_STOP = frozenset("""a an and are as at be but by can could do does for from have how i if in into is it its
just let me my no not now of on or our please should so some that the their them then there these this to up us
we what when where which while will with would you your also again make sure want need get got one more use using
like see run running fix""".split())  # noqa: SIM905
_WORD = re.compile(r"[a-z][a-z0-9_]+")
_WRAPPER = re.compile(r"^(?:\w+=\S*\s+)*(?:(?:uv|poetry|pdm|hatch|pipenv)\s+run\s+|npx\s+)?(?:python[\d.]*\s+-m\s+)?")
_NOISE_FLAG = re.compile(r"-[qxsv]+|--tb=\w+|--color=\w+")
_EPS = 1e-9  # slack on the threshold when looking for pairs: a pair found in excess costs one exact check
_DIGITS = 12  # linkages compare rounded: the same mean computed two ways is the same number
_TIE = 1e-11  # a linkage this far under the best may round to the same number (rounding to _DIGITS moves 5e-13)
WALK = 1000  # a lookup walks at most this many posting entries (rarest features first, latest entries first)
KEEP = 64  # a unit keeps at most this many similar earlier units
_STEM_CACHE = 200_000  # words whose stem is remembered (a history's vocabulary; bounded)
_STEMS: dict[str, str] = {}
NEIGHBOURS = 32  # a cluster keeps at most this many neighbours it may merge with (bench/README.md, sleep_scale: 128
# cost a quarter more agglomeration time for the same grouping at 4,000 requests, 0.1 % fewer groups at 20,000)


def _stem(word: str) -> str:
    """`_stem_of(word)`, remembered for the first `_STEM_CACHE` distinct words (mining stems every request twice)."""
    stem = _STEMS.get(word)
    if stem is None:
        stem = _stem_of(word)
        if len(_STEMS) < _STEM_CACHE:
            _STEMS[word] = stem
    return stem


def _stem_of(word: str) -> str:
    for suffix in ("ations", "ation", "ings", "ing", "ers", "er", "ies", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def normalize(text: str) -> list[str]:
    """Lower-cased, stemmed content words of `text`; snake_case names also give their parts."""
    words: list[str] = []
    for word in _WORD.findall(text.lower()):
        parts = [word] + ([p for p in word.split("_") if p] if "_" in word else [])
        words.extend(_stem(p) for p in parts if p not in _STOP and len(p) > 1)
    return [w for w in words if w not in _STOP]


def test_key(command: str) -> str:
    """A test command without wrappers (`python -m`, `uv run`, env assignments) and noise flags (`-q`, `-x`, `-v`,
    `--tb=short`), so runs of the same tests compare equal."""
    core = _WRAPPER.sub("", command.strip())
    return " ".join(t for t in core.split() if not _NOISE_FLAG.fullmatch(t))


test_key.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


@dataclass(frozen=True)
class Cluster:
    """Units judged to be the same task: `members` (unit indices, ascending) and each one's mean cosine to the
    others (`mean_sims`, in the same order; 1.0 for a unit alone)."""

    members: tuple[int, ...]
    mean_sims: tuple[float, ...]

    @property
    def cohesion(self) -> float:
        return sum(self.mean_sims) / len(self.mean_sims)


Vector = dict[int, float]


class _Packed:
    """A node's unit vector once the similar pairs are found: its terms and weights in two arrays, in the dict's
    order (~0.5 KB where the dict and its floats took ~1.5 KB: 100,000 requests hold 67,000 of them through the
    agglomeration). Read like a dict by `_dot` and `_Agglomeration._merge` (len, iteration, values, items)."""

    __slots__ = ("terms", "weights")

    def __init__(self, vec: Vector) -> None:
        self.terms = array("q", vec)
        self.weights = array("d", vec.values())

    def __len__(self) -> int:
        return len(self.terms)

    def __iter__(self) -> Iterator[int]:
        return iter(self.terms)

    def values(self) -> array:
        return self.weights

    def items(self) -> Iterator[tuple[int, float]]:
        return zip(self.terms, self.weights)


AnyVector = Vector | _Packed


def _dot(a: AnyVector, b: AnyVector) -> float:
    """Σ a[t]·b[t] over the smaller one's terms, in its order (C maps: the same products summed in the same order
    as a Python loop)."""
    if len(a) > len(b):
        a, b = b, a
    get = (b.get if isinstance(b, dict) else dict(b.items()).get)
    return sum(map(operator.mul, a.values(), map(get, a, repeat(0.0))))


def _nodes(docs: Iterable[Counter[str]]) -> tuple[list[Vector], list[list[int]], int]:
    """Distinct feature sets as unit TF-IDF vectors over term ids, the units of each, and the vocabulary size.
    Until the document frequencies are known, a node is its term ids then their counts in one flat `array` (the
    first unit's order: the sums below add in it) and is looked up by the bytes of its sorted pairs: a few hundred
    bytes a node where tuples of pairs took ~1.5 KB (100,000 requests: 82 MB less once the nodes are built)."""
    vocab: dict[str, int] = {}
    node_of: dict[bytes, int] = {}
    counts: list[array | None] = []
    units: list[list[int]] = []
    df: list[int] = []
    n = 0
    for i, doc in enumerate(docs):
        n += 1
        flat = array("q", bytes(8 * 2 * len(doc)))
        half = len(doc)
        for j, (term, count) in enumerate(doc.items()):
            tid = vocab.get(term)
            if tid is None:
                tid = vocab[term] = len(vocab)
                df.append(0)
            df[tid] += 1
            flat[j], flat[half + j] = tid, count
        # a unit without features is similar to nothing, not even to another without features
        key = array("q", [x for pair in sorted(zip(flat[:half], flat[half:])) for x in pair]).tobytes()
        node = node_of.get(key) if half else None
        if node is None:
            node = len(counts)
            if half:
                node_of[key] = node
            counts.append(flat)
            units.append([])
        units[node].append(i)
    del node_of
    idf = [math.log((1 + n) / (1 + d)) + 1.0 for d in df]
    vectors = []
    for x, pairs in enumerate(counts):
        assert pairs is not None
        counts[x] = None  # its memory serves the vectors
        half = len(pairs) // 2
        vec = {t: (1.0 + math.log(c)) * idf[t] for t, c in zip(pairs[:half], pairs[half:])}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        vectors.append({t: v / norm for t, v in vec.items()})
    return vectors, units, len(vocab)


@dataclass
class Stats:
    """What a clustering did: whether a cap bound (then the result may differ from the pairwise algorithm's),
    the nodes (distinct feature sets), the similar pairs found and the merges made."""

    exact: bool = True
    nodes: int = 0
    pairs: int = 0
    merges: int = 0
    capped_pairs: int = 0  # nodes whose similar pairs were cut to the `keep` most similar (or a posting walk cut)
    capped_clusters: int = 0  # merges after which a cluster kept only its `neighbours` most similar neighbours


def _feature_stats(vectors: Sequence[Vector], vocabulary: int) -> tuple[list[int], list[float]]:
    """Per feature: in how many vectors it is (df) and its largest weight in any vector (peak)."""
    df = [0] * vocabulary
    peak = [0.0] * vocabulary
    for vec in vectors:
        for t, w in vec.items():
            df[t] += 1
            if w > peak[t]:
                peak[t] = w
    return df, peak


class _Postings:
    """The inverted index of the vectors seen so far: per feature, their ids and weights (two flat lists, no
    tuple per entry), latest last."""

    def __init__(self, vocabulary: int) -> None:
        self.ids: list[list[int]] = [[] for _ in range(vocabulary)]
        self.weights: list[list[float]] = [[] for _ in range(vocabulary)]

    def add(self, x: int, vec: Vector) -> None:
        for t, w in vec.items():
            self.ids[t].append(x)
            self.weights[t].append(w)

    def accumulate(self, ordered: list[tuple[int, float]], peak: list[float], walk: int
                   ) -> tuple[dict[int, float], float, int, int | None]:
        """(partial dot products with the earlier vectors met, a bound on what the entries not walked could add,
        the position in `ordered` of the first feature not walked through, the first id walked in that feature or
        None when none was): the postings of `ordered` (rarest feature first), latest entries first, `walk`
        entries in all. The features after the first one cut were not walked at all."""
        partial: dict[int, float] = {}
        get = partial.get
        budget, rest, cut, since = walk, 0.0, len(ordered), None
        for i, (t, w) in enumerate(ordered):
            ids = self.ids[t]
            n = len(ids)
            take = min(n, budget)
            if take < n:
                rest += w * peak[t]
                if cut == len(ordered):
                    cut, since = i, (ids[n - take] if take else None)
            if take:
                for y, wy in zip(ids[n - take:], self.weights[t][n - take:]):
                    partial[y] = get(y, 0.0) + w * wy
                budget -= take
        return partial, rest, cut, since


def _largest(partial: dict[int, float], keep: int, floor: float) -> list[tuple[float, int]]:
    """`heapq.nlargest(keep, (part, y) for y, part in partial.items() if part >= floor)`, with the cut value found
    by a C sort of the floats (the Python heap over ~1,000 tuples: −7 % of the candidate search at 20,000)."""
    parts = [part for part in partial.values() if part >= floor]
    if len(parts) > keep:
        parts.sort()
        floor = parts[-keep]
    return sorted(((part, y) for y, part in partial.items() if part >= floor), reverse=True)[:keep]


def _candidates(ordered: list[tuple[int, float]], vectors: Sequence[Vector], walked: tuple[dict[int, float], float,
                int, int | None], limit: float, keep: int) -> tuple[list[tuple[float, int]], bool]:
    """(the earlier vectors at cosine ≥ `limit`, at most `keep` of them, most similar first; whether a cap cut).
    Without a cut walk (`rest` 0) the partial dot products are the exact cosines; after one, the likeliest
    candidates get their exact cosine: the partial dot plus the features the walk did not read for them (those
    after the cut, and the cut one for the ids under the first one walked in it): a third of a whole dot's
    lookups at 100,000 requests (6.4 of 18.4 features walked)."""
    partial, rest, cut, since = walked
    if not rest:
        found = [(cos, y) for y, cos in partial.items() if cos >= limit]
        if len(found) <= keep:
            return found, False
        return heapq.nlargest(keep, found), True
    likely = _largest(partial, keep, limit - rest)
    first_t, first_w = ordered[cut]
    unread = ordered[cut if since is None else cut + 1:]
    terms, weights, zeros = [t for t, _ in unread], [w for _, w in unread], [0.0] * len(unread)
    found = []
    for part, y in likely:  # the unread products, in C loops: map over x's terms, y's weights looked up
        get = vectors[y].get
        cos = part + sum(map(operator.mul, weights, map(get, terms, zeros)))
        if since is not None and y < since:
            cos += first_w * get(first_t, 0.0)
        if cos >= limit:
            found.append((cos, y))
    return found, True


def similar_pairs(vectors: Sequence[Vector], threshold: float, vocabulary: int, *, walk: int = WALK,
                  keep: int = KEEP, stats: Stats | None = None) -> list[dict[int, float]]:
    """Symmetric adjacency (index → cosine) of the vectors whose cosine is at least `threshold`, by inverted index
    (module docstring, 3.). Bounded: a vector's lookup walks at most `walk` posting entries (its rarest features
    first, their latest entries first) and keeps at most its `keep` most similar earlier vectors; `stats.exact`
    is False when either cut."""
    stats = stats if stats is not None else Stats()
    df, peak = _feature_stats(vectors, vocabulary)
    postings = _Postings(vocabulary)
    adjacency: list[dict[int, float]] = [{} for _ in vectors]
    limit = threshold - _EPS
    rank = [0] * vocabulary  # rarest first: (df, term id) order, as one number a C sort can key on
    for r, t in enumerate(sorted(range(vocabulary), key=lambda t: (df[t], t))):
        rank[t] = r
    for x, vec in enumerate(vectors):
        terms = sorted(vec, key=rank.__getitem__)
        ordered = list(zip(terms, map(vec.__getitem__, terms)))
        found, cut = _candidates(ordered, vectors, postings.accumulate(ordered, peak, walk), limit, keep)
        stats.capped_pairs += cut
        for cos, y in found:
            adjacency[x][y] = adjacency[y][x] = cos
        postings.add(x, vec)
    stats.pairs = sum(map(len, adjacency)) // 2
    stats.exact = stats.exact and not stats.capped_pairs
    return adjacency


class _Agglomeration:
    """Average linkage over weighted nodes, driven by each cluster's best neighbour (Müllner's generic algorithm):
    the heap holds one live entry per cluster; a cluster's neighbours are those at linkage ≥ threshold (exactly
    the ones it may still merge with, module docstring 3.), at most `neighbours` of them. A cluster is named by
    its lowest node, and nodes are numbered in the order of their first unit: ties go to the lowest unit indices,
    as in the pairwise algorithm. The adjacency becomes the dot products in place (no second copy)."""

    def __init__(self, vectors: Sequence[AnyVector], units: list[list[int]], adjacency: list[dict[int, float]],
                 threshold: float, neighbours: int, stats: Stats) -> None:
        self.threshold, self.cap, self.stats = threshold, neighbours, stats
        self.size = {x: len(u) for x, u in enumerate(units)}
        self.sums: dict[int, AnyVector] = {}
        self.owned: set[int] = set()  # ids of the sum dicts built here (not a node's vector)
        for x, vec in enumerate(vectors):
            weight = len(units[x])
            self.sums[x] = vec if weight == 1 else {t: w * weight for t, w in vec.items()}
            if weight > 1:
                self.owned.add(id(self.sums[x]))
        self.nodes = {x: [x] for x in range(len(units))}
        # dot products of sum vectors with each neighbour: cos · |x| · |y| (1 for single units: left as they are)
        self.dots: dict[int, dict[int, float]] = dict(enumerate(adjacency))
        for x, near in self.dots.items():
            if any(len(units[y]) > 1 for y in near) or len(units[x]) > 1:
                for y, cos in near.items():
                    near[y] = cos * len(units[x]) * len(units[y])
        self.stamp = dict.fromkeys(self.nodes, 0)
        self.best: dict[int, tuple[float, int, int]] = {}
        self.heap: list[tuple[float, int, int, int, int]] = []
        for c in self.dots:
            self._find_best(c)

    def link(self, a: int, b: int, dot: float) -> float:
        return round(dot / (self.size[a] * self.size[b]), _DIGITS)

    def _rank(self, c: int, k: int, dot: float) -> tuple[float, int, int]:
        """The order in which pairs merge: higher linkage first, then the lower pair of names."""
        lo, hi = (c, k) if c < k else (k, c)
        return (-self.link(c, k, dot), lo, hi)

    def _find_best(self, c: int) -> None:
        self.stamp[c] += 1
        near = self.dots[c]
        if not near:
            self.best.pop(c, None)
            return
        size, own = self.size, self.size[c]
        # the agglomeration's inner loop: every neighbour's linkage in C maps, then `_rank` only for those whose
        # linkage rounds to the best one's (rounding is monotonic: the best rank is among them)
        links = list(map(operator.truediv, near.values(), map(operator.mul, repeat(own), map(size.__getitem__, near))))
        floor = round(max(links), _DIGITS) - _TIE
        rank = min((-round(near[k] / (own * size[k]), _DIGITS), *((c, k) if c < k else (k, c)))
                   for k in compress(near, map(floor.__le__, links)))
        self.best[c] = rank
        heapq.heappush(self.heap, (*rank, c, self.stamp[c]))

    def _offer(self, c: int, k: int, dot: float) -> None:
        """Cluster k (new) is a neighbour of c: it becomes c's best when it ranks first."""
        rank = self._rank(c, k, dot)
        if c not in self.best or rank < self.best[c]:
            self.stamp[c] += 1
            self.best[c] = rank
            heapq.heappush(self.heap, (*rank, c, self.stamp[c]))

    def run(self) -> None:
        while self.heap:
            rank, a, b, c, stamp = heapq.heappop(self.heap)
            if self.stamp.get(c) != stamp:
                continue  # c merged or found another best since
            other = b if c == a else a
            dot = self.dots[c].get(other)
            if dot is None or self._rank(c, other, dot) != (rank, a, b):
                self._find_best(c)  # a stale entry (its partner merged since): look again
                continue
            self._merge(a, b)
            if len(self.heap) > 2 * len(self.best) + 1024:
                self._compact()

    def _compact(self) -> None:
        """The heap without its superseded entries (a cluster's live entry is its best rank and stamp): ~940,000
        entries were pushed at 100,000 requests. The order of the live entries is unchanged (they are unique)."""
        self.heap = [(*rank, c, self.stamp[c]) for c, rank in self.best.items()]
        heapq.heapify(self.heap)

    def _two_sided(self, a: int, b: int, near_a: dict[int, float], near_b: dict[int, float], size: int,
                   size_b: int) -> tuple[dict[int, float], list[tuple[float, int]]]:
        """The merged cluster's neighbours known on both sides (their dot is the sum: module docstring 2.) at
        linkage ≥ threshold, and the one-sided ones as (the bound of their rank key, name), most promising first.
        Every neighbour forgets a and b."""
        dots, sizes, threshold = self.dots, self.size, self.threshold
        size_a = size - size_b
        merged: dict[int, float] = {}
        one_sided: list[tuple[float, int]] = []
        # every neighbour forgets a and b (C maps over their dicts)
        deque(map(dict.pop, map(dots.__getitem__, near_a), repeat(a), repeat(None)), 0)
        deque(map(dict.pop, map(dots.__getitem__, near_b), repeat(b), repeat(None)), 0)
        for k in near_a.keys() | near_b.keys():
            da = near_a.get(k)
            db = near_b.get(k)
            size_k = sizes[k]
            if da is not None and db is not None:
                if round((da + db) / (size * size_k), _DIGITS) >= threshold:
                    merged[k] = da + db
            else:  # the missing side was under the threshold (unless a cap dropped it): dot < threshold · size · |k|
                known, missing = (da, size_b) if db is None else (db, size_a)
                one_sided.append((known / size_k + (threshold + _EPS) * missing, k))  # type: ignore[operator]
        one_sided.sort(reverse=True)
        return merged, one_sided

    def _add_one_sided(self, merged: dict[int, float], one_sided: list[tuple[float, int]], total: Vector,
                       size: int) -> bool:
        """Adds the one-sided neighbours at linkage ≥ threshold, each with the exact dot of the sums; once
        `neighbours` are kept, one whose bound cannot outrank the weakest kept is not computed (the per-family cap
        of one-sided dots: a large cluster's merges would otherwise dot its sum with every weak neighbour). True
        when that cut a candidate."""
        sums, sizes, threshold, cap = self.sums, self.size, self.threshold, self.cap
        capping = len(merged) + len(one_sided) > cap
        # the `cap` largest rank keys so far (a min-heap: the weakest kept first); the key is the cap's below
        weakest = heapq.nlargest(cap, [dot / sizes[k] for k, dot in merged.items()])[::-1] if capping else []
        for bound, k in one_sided:
            if len(weakest) >= cap and bound < weakest[0]:
                return True
            dot = _dot(total, sums[k])
            if round(dot / (size * sizes[k]), _DIGITS) >= threshold:
                merged[k] = dot
                if capping:
                    (heapq.heappushpop if len(weakest) >= cap else heapq.heappush)(weakest, dot / sizes[k])
        return False

    def _merge(self, a: int, b: int) -> None:
        """Cluster `b` joins cluster `a` (a < b)."""
        sums, dots = self.sums, self.dots
        near_a, near_b = dots.pop(a), dots.pop(b)
        near_a.pop(b, None)
        near_b.pop(a, None)
        small, large = sorted((sums.pop(a), sums.pop(b)), key=len)
        # a merged sum is ours to grow in place; a single unit's is its vector (read again at the end): copy it
        total: Vector = large if isinstance(large, dict) and id(large) in self.owned else dict(large.items())
        self.owned.discard(id(small))
        self.owned.add(id(total))
        for t, w in small.items():
            total[t] = total.get(t, 0.0) + w
        size_b = self.size.pop(b)
        size = self.size[a] + size_b
        merged, one_sided = self._two_sided(a, b, near_a, near_b, size, size_b)
        cut = self._add_one_sided(merged, one_sided, total, size)
        if len(merged) > self.cap:
            merged = dict(heapq.nlargest(self.cap, merged.items(), key=lambda kv: kv[1] / self.size[kv[0]]))
            cut = True
        if cut:
            self.stats.capped_clusters += 1
            self.stats.exact = False
        sums[a], self.size[a] = total, size
        self.nodes[a] += self.nodes.pop(b)
        dots[a] = merged
        del self.stamp[b]
        self.best.pop(b, None)
        self.stats.merges += 1
        for k, dot in merged.items():
            dots[k][a] = dot
        self._find_best(a)
        for k in merged:
            # a neighbour whose best was a or b keeps that entry: its rank can only have been too good, and `run`
            # looks again when it comes up (lazy: no rescan of every neighbour of a large cluster at each merge)
            self._offer(k, a, merged[k])


def cluster(docs: Iterable[Counter[str]], threshold: float, *, stats: Stats | None = None, walk: int = WALK,
            keep: int = KEEP, neighbours: int = NEIGHBOURS) -> list[Cluster]:
    """See the module contract."""
    if threshold <= 0:
        raise ValueError("the clustering threshold must be above 0")
    stats = stats if stats is not None else Stats()
    vectors, units, vocabulary = _nodes(docs)
    stats.nodes = len(vectors)
    adjacency = similar_pairs(vectors, threshold, vocabulary, walk=walk, keep=keep, stats=stats)
    packed: list[AnyVector] = list(vectors)
    del vectors
    for x, vec in enumerate(packed):  # one at a time: each dict is freed as its arrays replace it
        packed[x] = _Packed(vec)  # type: ignore[arg-type]
    run = _Agglomeration(packed, units, adjacency, threshold, neighbours, stats)
    del adjacency
    run.run()
    out = []
    for k in sorted(run.nodes):  # node order is the order of first units
        total = run.sums[k]
        n = run.size[k]
        sims: dict[int, float] = {}
        for x in run.nodes[k]:
            vec = packed[x]
            mean = (_dot(total, vec) - _dot(vec, vec)) / (n - 1) if n > 1 else 1.0
            for i in units[x]:
                sims[i] = mean
        members = tuple(sorted(sims))
        out.append(Cluster(members, tuple(sims[i] for i in members)))
    return out

"""Bisimilarity distances of labelled Markov chains: hand cases, the exact rational reference
(``tests/lmc_reference.py``), random chains, Storm's bisimulation, the distance-1 graph test, bad input."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import lmc_reference as ref
import numpy as np
import pytest
from hypothesis import given, strategies as st

from bisimkit.errors import InputError
from bisimkit.lmc import (
    LabelledChain,
    bisimulation_quotient,
    check_bisimulation,
    exact_rows,
    lmc_distances,
    refine,
    refine_exact,
)

F = Fraction


def chain(rows, labels) -> LabelledChain:
    """A LabelledChain from rows ``{successor: probability}`` (Fractions or floats)."""
    ptr, cols, probs = [0], [], []
    for row in rows:
        for u in sorted(row):
            cols.append(u)
            probs.append(float(row[u]))
        ptr.append(len(cols))
    return LabelledChain(np.array(ptr), np.array(cols), np.array(probs), np.asarray(labels, dtype=np.int64))


def assert_brackets(result, exact):
    """``lower <= exact <= upper`` for every pair, compared exactly (floats as Fractions)."""
    n = len(exact)
    for s in range(n):
        for t in range(n):
            assert F(float(result.lower[s, t])) <= exact[s][t] <= F(float(result.upper[s, t])), (s, t)


# ------------------------------------------------------------------------------ hand cases
# s, t: half back to themselves, half to a state labelled A (resp. B) that loops.
SAME_LABEL_ONE = [{0: F(1, 2), 2: F(1, 2)}, {1: F(1, 2), 3: F(1, 2)}, {2: F(1)}, {3: F(1)}]
SAME_LABEL_ONE_LABELS = [0, 0, 1, 2]


def test_same_labels_at_distance_one_when_undiscounted():
    r = lmc_distances(chain(SAME_LABEL_ONE, SAME_LABEL_ONE_LABELS), 1.0)
    assert r.distances[0, 1] == 1.0 and r.lower[0, 1] == 1.0  # decided by the graph test, no numerics
    assert r.certified_error == 0.0
    assert r.one_pairs == 6  # every pair of the four states


def test_same_labels_discounted_closed_form():
    # d = c (d/2 + 1/2)  =>  d = c / (2 - c)
    for c in (0.5, 0.9, 0.99):
        r = lmc_distances(chain(SAME_LABEL_ONE, SAME_LABEL_ONE_LABELS), c)
        assert r.lower[0, 1] <= c / (2 - c) <= r.upper[0, 1]
        assert r.certified_error < 1e-9


# u -> s, x;  v -> t, y (halves); s, t loop unlabelled (bisimilar); x labelled A, y labelled B.
LEAST_NOT_GREATEST = [{2: F(1, 2), 4: F(1, 2)}, {3: F(1, 2), 5: F(1, 2)}, {2: F(1)}, {3: F(1)}, {4: F(1)}, {5: F(1)}]
LEAST_NOT_GREATEST_LABELS = [0, 0, 0, 0, 1, 2]


def test_least_fixed_point_not_the_one_from_above():
    rows, labels = LEAST_NOT_GREATEST, LEAST_NOT_GREATEST_LABELS
    r = lmc_distances(chain(rows, labels), 1.0)
    assert r.lower[0, 1] <= 0.5 <= r.upper[0, 1] and r.certified_error < 1e-12
    assert r.distances[2, 3] == 0.0  # bisimilar self-loops
    # value iteration from 1 stays at another fixed point: s, t at 1 and u, v at 1
    from_above = ref.value_iteration(rows, ref.label_ground(labels), 1.0, start=1.0, sweeps=5)
    assert from_above[0, 1] == pytest.approx(1.0) and from_above[2, 3] == pytest.approx(1.0)
    exact = ref.distances(rows, ref.label_ground(labels), F(1))
    assert exact[0][1] == F(1, 2)
    assert_brackets(r, exact)


def test_exactly_zero_with_masses_that_do_not_add_up_in_floats():
    # state 0 reaches the class {2, 3} with 0.1 + 0.2, state 1 with one 0.3 entry: not equal in floats
    rows = [{2: F(1, 10), 3: F(2, 10), 4: F(7, 10)}, {2: F(3, 10), 4: F(7, 10)}, {2: F(1)}, {3: F(1)}, {4: F(1)}]
    labels = [0, 0, 1, 1, 2]
    assert 0.1 + 0.2 != 0.3
    r = lmc_distances(chain(rows, labels), 1.0)
    assert r.distances[0, 1] == 0.0 and r.upper[0, 1] == 0.0
    assert r.classes[0] == r.classes[1] and r.classes[2] == r.classes[3]
    assert r.zero_pairs == 2
    assert r.model_defect < 1e-15


def test_a_nontrivial_undiscounted_value_against_the_reference():
    # three states with the same label mixing towards two absorbing labels
    rows = [
        {0: F(1, 3), 1: F(1, 3), 3: F(1, 3)},
        {0: F(1, 4), 2: F(1, 4), 4: F(1, 2)},
        {1: F(1, 2), 3: F(1, 6), 4: F(1, 3)},
        {3: F(1)},
        {4: F(1)},
    ]
    labels = [0, 0, 0, 1, 2]
    exact = ref.distances(rows, ref.label_ground(labels), F(1))
    assert all(0 < exact[s][t] < 1 for s, t in [(0, 1), (0, 2), (1, 2)])
    r = lmc_distances(chain(rows, labels), 1.0)
    assert_brackets(r, exact)
    assert r.certified_error < 1e-10
    # the exact distances are a fixed point of the operator
    assert ref.operator(rows, ref.label_ground(labels), F(1), exact) == exact


# ------------------------------------------------------------------------------ random chains
@st.composite
def small_chains(draw, max_states=5):
    n = draw(st.integers(2, max_states))
    rows = []
    for _ in range(n):
        k = draw(st.integers(1, min(3, n)))
        succ = draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k, unique=True))
        den = draw(st.sampled_from([1, 2, 3, 4, 5, 6, 7, 10]))
        if den < k:
            den = k
        cuts = (
            sorted(draw(st.lists(st.integers(1, den - 1), min_size=k - 1, max_size=k - 1, unique=True)))
            if k > 1
            else []
        )
        parts = np.diff([0, *cuts, den])
        rows.append({u: F(int(p), den) for u, p in zip(succ, parts)})
    labels = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    return rows, labels


@given(small_chains(), st.sampled_from([F(1), F(1, 2), F(9, 10)]))
def test_random_chains_within_the_certificate_of_the_reference(data, c):
    rows, labels = data
    ground = ref.label_ground(labels)
    exact = ref.distances(rows, ground, c)
    r = lmc_distances(chain(rows, labels), float(c))
    assert r.certified
    assert_brackets(r, exact)
    assert r.certified_error <= 1e-9
    n = len(rows)
    zero = {(s, t) for s in range(n) for t in range(s + 1, n) if exact[s][t] == 0}
    one = {(s, t) for s in range(n) for t in range(s + 1, n) if exact[s][t] == 1}
    assert zero == {(s, t) for s in range(n) for t in range(s + 1, n) if r.upper[s, t] == 0}
    assert r.zero_pairs == len(zero)
    if c == 1:
        assert one == ref.distance_one_pairs(rows, ground)
        assert one == {(s, t) for s in range(n) for t in range(s + 1, n) if r.lower[s, t] == 1}
        assert r.one_pairs == len(one)


@given(small_chains(max_states=6), st.sampled_from([1.0, 0.8]), st.data())
def test_queries_agree_with_all_pairs(data, c, draw):
    rows, labels = data
    n = len(rows)
    ch = chain(rows, labels)
    full = lmc_distances(ch, c)
    pairs = draw.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), min_size=1, max_size=4))
    q = lmc_distances(ch, c, pairs=pairs)
    s, t = np.array(pairs).T
    assert np.all(q.lower <= full.upper[s, t] + 1e-12) and np.all(full.lower[s, t] <= q.upper + 1e-12)
    assert np.all(q.upper - q.lower <= 1e-9)
    lo, up = q.bounds(s, t)
    assert np.array_equal(lo, q.lower) and np.array_equal(up, q.upper)


def test_fractional_ground_against_the_reference():
    rows = [{0: F(1, 2), 1: F(1, 2)}, {2: F(1)}, {0: F(1, 3), 2: F(2, 3)}, {3: F(1, 2), 1: F(1, 2)}]
    g = [
        [F(0), F(1, 4), F(1, 2), F(1, 4)],
        [F(1, 4), F(0), F(1, 4), F(0)],
        [F(1, 2), F(1, 4), F(0), F(1, 4)],
        [F(1, 4), F(0), F(1, 4), F(0)],
    ]
    for c in (F(1), F(3, 4)):
        exact = ref.distances(rows, g, c)
        r = lmc_distances(chain(rows, [0] * 4), float(c), ground=np.array(g, dtype=float))
        assert_brackets(r, exact)
        assert r.certified_error < 1e-10


def test_zero_one_ground_equals_labels():
    rows, labels = LEAST_NOT_GREATEST, LEAST_NOT_GREATEST_LABELS
    g = np.array([[float(a != b) for b in labels] for a in labels])
    for c in (1.0, 0.9):
        a = lmc_distances(chain(rows, labels), c)
        b = lmc_distances(chain(rows, [0] * len(rows)), c, ground=g)
        assert np.allclose(a.distances, b.distances, atol=1e-12)


# ------------------------------------------------------------------------------ bisimilarity
def test_refinement_matches_the_exact_python_refinement():
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(4, 30))
        rows = []
        for _ in range(n):
            succ = rng.choice(n, size=int(rng.integers(1, 4)), replace=False)
            w = rng.integers(1, 4, size=len(succ))
            rows.append({int(u): F(int(x), int(w.sum())) for u, x in zip(succ, w)})
        ch = chain(rows, rng.integers(0, 2, size=n))
        ex = exact_rows(ch.row_ptr, ch.probabilities)
        blocks, _ = refine(ch.row_ptr, ch.columns, ex.num, ch.classes)
        assert np.array_equal(blocks, refine_exact(ch.row_ptr, ch.columns, ex.num, ch.classes))
        assert check_bisimulation(ch.row_ptr, ch.columns, ex.num, blocks)[0]


def test_refinement_matches_the_exact_python_refinement_on_brp():
    _, _, model = _prism("dtmc/brp-16-2.pm")
    ch = LabelledChain.from_model(model)
    ex = exact_rows(ch.row_ptr, ch.probabilities)
    blocks, rounds = refine(ch.row_ptr, ch.columns, ex.num, ch.classes)
    assert rounds > 50  # a long chain: many rounds, each looking at the predecessors of the new blocks only
    assert np.array_equal(blocks, refine_exact(ch.row_ptr, ch.columns, ex.num, ch.classes))


def test_a_partition_that_is_not_a_bisimulation_is_caught_and_finished_exactly(monkeypatch):
    import bisimkit.lmc as L

    ch = chain(LEAST_NOT_GREATEST, LEAST_NOT_GREATEST_LABELS)
    ex = exact_rows(ch.row_ptr, ch.probabilities)
    coarse = np.array([0, 0, 0, 0, 1, 2])  # u, v, s, t in one block: u and v are not bisimilar to s
    assert not check_bisimulation(ch.row_ptr, ch.columns, ex.num, coarse)[0]
    monkeypatch.setattr(L, "refine", lambda *a, **k: (coarse, 1))
    q = bisimulation_quotient(ch.row_ptr, ch.columns, ex, ch.classes)
    assert q.exact_fallback
    assert q.k == 5 and q.classes[2] == q.classes[3]


def test_rows_that_are_not_simple_fractions_keep_their_binary_values():
    probs = np.array([0.1234567890123, 1 - 0.1234567890123, 1.0])
    ex = exact_rows(np.array([0, 2, 3]), probs)
    assert ex.repaired_rows in (0, 1)
    total = F(int(ex.num[0]), ex.denominator) + F(int(ex.num[1]), ex.denominator)
    assert total == 1
    assert ex.defect <= 2 * np.finfo(float).eps


def test_transport_lower_bounds_are_below_the_exact_value():
    """Every shape's lower bound (product, closed form, simplex with tree potentials) is below the exact
    optimal transport value between the exact laws, and the plan's cost is not below it."""
    import bisimkit.lmc as L

    rng = np.random.default_rng(7)
    for ka, kb in [(1, 3), (2, 2), (3, 2), (3, 3), (2, 4)]:
        G = 20
        laws = []
        for k in (ka, kb):
            den = rng.integers(k, 12, size=G)
            rows = []
            for g in range(G):
                cuts = np.sort(rng.choice(np.arange(1, den[g]), size=k - 1, replace=False)) if k > 1 else []
                rows.append([F(int(x), int(den[g])) for x in np.diff([0, *cuts, den[g]])])
            laws.append(rows)
        a = np.array([[float(x) for x in r] for r in laws[0]])
        b = np.array([[float(x) for x in r] for r in laws[1]])
        C = rng.random((G, ka, kb)) * (rng.random((G, ka, kb)) < 0.8)
        grp = L._Group(np.arange(G), ka, kb, a, b, np.zeros((G, ka * kb), dtype=np.int64))

        class Plans:
            def plan_of(self, _):
                return a[:, :, None] * b[:, None, :]

        cost, plan, low, _ = L._transport(grp, C, Plans())
        for g in range(G):
            p = dict(enumerate(laws[0][g]))
            q = dict(enumerate(laws[1][g]))
            exact = min(sum(m * F(float(C[g, i, j])) for (i, j), m in vert.items()) for vert in ref._vertices(p, q))
            assert F(float(low[g])) <= exact, (ka, kb, g)
            assert abs(float(exact) - cost[g]) < 1e-12


# ------------------------------------------------------------------------------ PRISM models through stormpy
def _prism(name: str, constants: str | None = None):
    """stormpy, the PRISM program, and its model's :class:`~bisimkit.model_files.ModelData`."""
    stormpy = pytest.importorskip("stormpy")
    from bisimkit.model_files import stormpy_data

    path = Path(stormpy.__file__).parent / "examples" / "files" / name
    program = stormpy.parse_prism_program(str(path))
    if constants:
        program, _ = stormpy.instantiate_constants(program, constants)
    return stormpy, program, stormpy_data(stormpy.build_model(program))


@pytest.mark.parametrize(
    "name, constants",
    [("dtmc/die.pm", None), ("dtmc/leader-3-5.pm", None), ("pdtmc/herman5.pm", "p=1/2"), ("dtmc/brp-16-2.pm", None)],
)
def test_distance_zero_is_storms_bisimulation(name, constants):
    stormpy, program, model = _prism(name, constants)
    import stormpy.transformations  # noqa: F811 - the submodule, beside the module _prism gave

    labels = [x for x in model.label_names if x != "init"]
    props = stormpy.parse_properties("; ".join(f'P=? [F "{x}"]' for x in labels))
    built = stormpy.build_model(program, props)  # labels only: no reward structure to preserve
    quotient = stormpy.transformations.perform_bisimulation(built, props)
    r = lmc_distances(model, 1.0, pairs=[(0, 0)])
    assert r.n_classes == quotient.nr_states
    sizes = np.bincount(r.classes)
    assert r.zero_pairs == int(np.sum(sizes * (sizes - 1) // 2))


@pytest.mark.parametrize(
    "name, constants", [("dtmc/die.pm", None), ("pdtmc/herman5.pm", "p=1/2"), ("dtmc/leader-3-5.pm", None)]
)
def test_prism_models_distance_one_by_direct_search(name, constants):
    _, _, model = _prism(name, constants)
    r = lmc_distances(model, 1.0)
    assert r.certified and r.certified_error < 1e-9
    cls = r.classes
    k = r.n_classes
    reps = np.array([np.flatnonzero(cls == b)[0] for b in range(k)])
    rows = []
    for s in reps:  # the quotient's rows, the probabilities read as fractions
        row: dict[int, Fraction] = {}
        for e in range(model.row_ptr[s], model.row_ptr[s + 1]):
            u = int(cls[model.columns[e]])
            row[u] = row.get(u, F(0)) + F(float(model.probabilities[e])).limit_denominator(1000)
        rows.append(row)
    labels = model.label_classes([x for x in model.label_names if x != "init"])[reps]
    one = ref.distance_one_pairs(rows, ref.label_ground(labels))
    found = {(a, b) for a in range(k) for b in range(a + 1, k) if r.lower[reps[a], reps[b]] == 1.0}
    assert found == one


def test_brp_undiscounted_is_certified():
    _, _, model = _prism("dtmc/brp-16-2.pm")
    r = lmc_distances(model, 1.0)
    assert r.certified and r.certified_error < 1e-9
    assert np.all(r.lower <= r.upper) and np.all(r.lower >= 0) and np.all(r.upper <= 1)
    assert np.allclose(r.distances, r.distances.T)


def test_queries_on_brp_agree_with_all_pairs():
    _, _, model = _prism("dtmc/brp-16-2.pm")
    full = lmc_distances(model, 1.0)
    rng = np.random.default_rng(1)
    pairs = rng.integers(0, model.n_states, size=(12, 2))
    q = lmc_distances(model, 1.0, pairs=pairs)
    assert q.certified and q.solved_pairs < full.solved_pairs
    s, t = pairs.T
    assert np.all(q.lower <= full.upper[s, t]) and np.all(full.lower[s, t] <= q.upper)
    lo, up = full.bounds(s, t)
    assert np.array_equal(lo, full.lower[s, t]) and np.array_equal(up, full.upper[s, t])


def test_discounted_brp_is_below_the_undiscounted():
    _, _, model = _prism("dtmc/brp-16-2.pm")
    one = lmc_distances(model, 1.0)
    nine = lmc_distances(model, 0.9)
    assert nine.certified and nine.certified_error < 1e-9
    assert np.all(nine.lower <= one.upper)  # F at c = 0.9 is below F at c = 1, so are the least fixed points
    assert np.any(nine.upper < one.lower)  # and strictly somewhere
    assert nine.one_pairs <= one.one_pairs  # for c < 1 only the ground separates at distance 1


@pytest.mark.slow
@given(small_chains(max_states=9), st.sampled_from([F(1), F(19, 20)]))
def test_larger_random_chains_against_the_reference(data, c):
    rows, labels = data
    exact = ref.distances(rows, ref.label_ground(labels), c)
    r = lmc_distances(chain(rows, labels), float(c))
    assert_brackets(r, exact)
    assert r.certified_error <= 1e-9


# ------------------------------------------------------------------------------ bad input
def test_bad_input_one_line_naming_the_field(tmp_path):
    ch = chain(SAME_LABEL_ONE, SAME_LABEL_ONE_LABELS)
    cases = [
        (lambda: lmc_distances(ch, 0.0), "discount"),
        (lambda: lmc_distances(ch, 1.5), "discount"),
        (lambda: lmc_distances(ch, float("nan")), "discount"),
        (
            lambda: lmc_distances(LabelledChain(ch.row_ptr, ch.columns, ch.probabilities, np.array([0, 0, 1])), 1.0),
            "classes",
        ),
        (lambda: lmc_distances(ch, 1.0, ground=np.full((4, 4), 1.2) - 1.2 * np.eye(4)), "ground"),
        (lambda: lmc_distances(ch, 1.0, ground=np.triu(np.full((4, 4), 0.5), 1)), "ground"),
        (lambda: lmc_distances(ch, 1.0, pairs=[(0, 7)]), "pairs"),
        (lambda: lmc_distances(ch, 1.0, tol=-1), "tol"),
        (
            lambda: lmc_distances(LabelledChain(ch.row_ptr, ch.columns, ch.probabilities * 0.9, ch.classes), 1.0),
            "probabilities",
        ),
        (
            lambda: lmc_distances(
                LabelledChain(np.array([0, 1, 1, 2, 3]), ch.columns[:3], np.ones(3), ch.classes), 1.0
            ),
            "row_ptr",
        ),
        (lambda: lmc_distances(ch, 1.0, pairs=[(0, 1, 2)]), "pairs"),
        (
            lambda: lmc_distances(
                ch, 1.0, ground=np.array([[0, 0, 0.5, 0.5], [0, 0, 0.5, 0.6], [0.5, 0.5, 0, 1], [0.5, 0.6, 1, 0]])
            ),
            "ground",
        ),
        (lambda: lmc_distances(ch, 1.0, labels=["a"]), "labels"),
        (lambda: lmc_distances("chain.drn", 1.0), "model"),
        (lambda: lmc_distances(ch, 1.0).bounds(0, 9), "t"),
    ]
    for call, field in cases:
        with pytest.raises(InputError) as info:
            call()
        message = str(info.value)
        assert message.startswith(f"{field}:") and "\n" not in message, message


def _drn(tmp_path: Path, body: str, kind: str = "DTMC") -> Path:
    path = tmp_path / "m.drn"
    path.write_text(
        f"@type: {kind}\n@parameters\n\n@reward_models\n\n@nr_states\n{body.count('state')}\n@model\n" + body
    )
    return path


def test_model_data_labels_and_refusals(tmp_path):
    from bisimkit.model_files import read_model

    dtmc = read_model(
        _drn(tmp_path, "state 0 init a\n\taction 0\n\t\t0 : 0.5\n\t\t1 : 0.5\nstate 1 a\n\taction 0\n\t\t1 : 1\n")
    )
    r = lmc_distances(dtmc, 1.0)  # init does not count: both states carry {a}, and are bisimilar
    assert r.distances[0, 1] == 0.0
    r = lmc_distances(dtmc, 1.0, labels=["a", "init"])
    assert r.distances[0, 1] == 1.0
    with pytest.raises(InputError, match=r"^labels: entry 0: unknown label 'b'"):
        lmc_distances(dtmc, 1.0, labels=["b"])
    mdp = read_model(
        _drn(
            tmp_path,
            "state 0 init\n\taction a\n\t\t0 : 1\n\taction b\n\t\t1 : 1\n"
            "state 1\n\taction a\n\t\t1 : 1\n\taction b\n\t\t0 : 1\n",
            kind="MDP",
        )
    )
    with pytest.raises(InputError, match=r"^model: model_type 'mdp': every state has 2 actions"):
        lmc_distances(mdp, 1.0)


def test_all_pairs_too_large_is_refused_up_front():
    n = 40
    rng = np.random.default_rng(0)
    rows = [{int(u): F(1, 2) for u in rng.choice(n, 2, replace=False)} for _ in range(n)]
    with pytest.raises(InputError, match=r"^pairs: all pairs need about .* GiB .* query pairs= or raise max_memory"):
        lmc_distances(chain(rows, rng.integers(0, 2, size=n)), 1.0, max_memory=1000)


# ------------------------------------------------------------------------------ the registry's operator "lmc"
#: A labelled chain whose distances are known by hand (c = 1): state 0 goes to 1 or 2 with probability 1/2,
#: 1 to 3, 2 and 3 loop; 0, 1 and 2 carry {a}, 3 carries {b}. d(0, 1) = 1 (1 reaches only b), d(1, 2) = 1,
#: d(0, 2) = d(1, 2) / 2 = 1/2; at c: d(1, 2) = c, d(0, 2) = c^2 / 2, d(0, 1) = c (c/2 + c/2).
HAND_DRN = (
    "state 0 init a\n\taction 0\n\t\t1 : 0.5\n\t\t2 : 0.5\nstate 1 a\n\taction 0\n\t\t3 : 1\n"
    "state 2 a\n\taction 0\n\t\t2 : 1\nstate 3 b\n\taction 0\n\t\t3 : 1\n"
)


def hand_distances(c: float) -> np.ndarray:
    d = np.ones((4, 4)) - np.eye(4)
    d[0, 1] = d[1, 0] = c
    d[1, 2] = d[2, 1] = c
    d[0, 2] = d[2, 0] = c * c / 2
    return d


def test_solve_lmc_on_a_drn_file_the_discount_overriding_the_models(tmp_path):
    from bisimkit import load_mdp, solve
    from bisimkit.lmc import LMCSolution

    mdp = load_mdp(_drn(tmp_path, HAND_DRN))  # a model file gets the default discount 0.9
    assert mdp.discount == 0.9
    for c, sol in (
        (1.0, solve(mdp, "lmc", discount=1)),
        (0.5, solve(mdp, "lmc", discount=0.5)),
        (0.9, solve(mdp, "lmc")),
    ):
        assert isinstance(sol, LMCSolution) and sol.metric == "lmc" and sol.discount == c and sol.converged
        assert np.all(sol.lower <= hand_distances(c) + 1e-15) and np.all(hand_distances(c) <= sol.upper + 1e-15)
        assert np.max(np.abs(sol.distances - hand_distances(c))) <= sol.certified_error / 2 + 1e-15
        assert sol.ground == "labels"


def test_solve_lmc_pairs_and_ground_against_all_pairs(tmp_path):
    from bisimkit import load_mdp, solve

    mdp = load_mdp(_drn(tmp_path, HAND_DRN))
    full = solve(mdp, "lmc", discount=1)
    pairs = np.array([[0, 2], [2, 0], [1, 3], [3, 3]])
    q = solve(mdp, "lmc", discount=1, pairs=pairs)
    assert q.distances.shape == (4,) and np.array_equal(q.pairs, pairs)
    assert np.all(q.lower <= full.upper[pairs[:, 0], pairs[:, 1]])
    assert np.all(full.lower[pairs[:, 0], pairs[:, 1]] <= q.upper)
    assert q.distances[3] == 0.0 and q.distances[2] == 1.0
    # the labels' 0/1 ground given as a matrix, and a fractional one in a file
    labels = np.array([0, 0, 0, 1])
    ground = (labels[:, None] != labels[None, :]).astype(float)
    assert np.array_equal(solve(mdp, "lmc", discount=1, ground=ground).distances, full.distances)
    half = ground / 2
    np.save(tmp_path / "g.npy", half)
    sol = solve(mdp, "lmc", discount=1, ground=str(tmp_path / "g.npy"))
    assert sol.ground == str(tmp_path / "g.npy") and sol.converged
    assert abs(sol.distances[1, 3] - 0.5) <= sol.certified_error  # 1 and 3 loop on their own: g(1, 3) = 1/2
    assert sol.distances[0, 3] < full.distances[0, 3]


def test_solve_lmc_on_a_prism_export_and_a_stormpy_model(tmp_path):
    from bisimkit import load_mdp, solve

    (tmp_path / "m.tra").write_text("4 5\n0 1 0.5\n0 2 0.5\n1 3 1\n2 2 1\n3 3 1\n")
    (tmp_path / "m.lab").write_text('0="init" 1="a" 2="b"\n0: 0 1\n1: 1\n2: 1\n3: 2\n')
    sol = solve(load_mdp(tmp_path / "m.tra"), "lmc", discount=1)
    assert np.max(np.abs(sol.distances - hand_distances(1.0))) <= sol.certified_error / 2 + 1e-15
    stormpy = pytest.importorskip("stormpy")
    from bisimkit.mdp import from_stormpy
    from bisimkit.model_files import stormpy_data

    path = Path(stormpy.__file__).parent / "examples" / "files" / "dtmc" / "brp-16-2.pm"
    built = stormpy.build_model(stormpy.parse_prism_program(str(path)))
    sol = solve(from_stormpy(built), "lmc", discount=1)
    ref_result = lmc_distances(stormpy_data(built), 1.0)
    assert sol.converged and sol.result.n_classes == ref_result.n_classes
    assert np.all(sol.lower <= ref_result.upper) and np.all(ref_result.lower <= sol.upper)


def test_an_mdp_with_a_policy_is_its_policys_chain():
    from bisimkit import FiniteMDP, solve

    P = np.zeros((4, 2, 4))
    P[0, 0, 1] = P[0, 1, 2] = 1.0  # the uniform policy: 0 goes to 1 or 2 with probability 1/2
    P[1, :, 3] = P[2, :, 2] = P[3, :, 3] = 1.0
    labels = [{"a"}, {"a"}, {"a"}, {"b"}]
    mdp = FiniteMDP(P, np.zeros((4, 2)), 0.9, policy=np.full((4, 2), 0.5), labels=labels)
    sol = solve(mdp, "lmc", discount=1)
    assert np.max(np.abs(sol.distances - hand_distances(1.0))) <= sol.certified_error / 2 + 1e-15
    with pytest.raises(InputError, match="^policy: the lmc distance of an MDP with 2 actions"):
        solve(FiniteMDP(P, np.zeros((4, 2)), 0.9, labels=labels), "lmc")
    # without labels, a ground takes their place: the labels' 0/1 ground gives the same distances
    ground = np.ones((4, 4)) - np.eye(4)
    ground[:3, :3] = 0.0
    unlabelled = FiniteMDP(P, np.zeros((4, 2)), 0.9, policy=np.full((4, 2), 0.5))
    assert np.array_equal(solve(unlabelled, "lmc", discount=1, ground=ground).distances, sol.distances)


def test_solve_lmc_bad_input_one_line_naming_the_field(tmp_path):
    from bisimkit import FiniteMDP, load_mdp, solve

    mdp = load_mdp(_drn(tmp_path, HAND_DRN))
    P = np.zeros((2, 1, 2))
    P[:, 0, 0] = 1.0
    cases = [
        (lambda: solve(FiniteMDP(P, np.zeros((2, 1)), 0.5), "lmc"), "labels"),  # no labels at all
        (lambda: FiniteMDP(P, np.zeros((2, 1)), 0.5, labels=[{"a"}]), "labels"),  # a state without its labels
        (lambda: solve(mdp, "lmc", discount=0), "discount"),
        (lambda: solve(mdp, "lmc", discount=1.01), "discount"),
        (lambda: solve(mdp, "lmc", ground=np.full((4, 4), 1.5) - 1.5 * np.eye(4)), "ground"),
        (lambda: solve(mdp, "lmc", ground=np.full((4, 4), -0.5) + 0.5 * np.eye(4)), "ground"),
        (lambda: solve(mdp, "lmc", ground=str(tmp_path / "missing.npy")), "ground"),
        (lambda: solve(mdp, "lmc", pairs=[(0, 4)]), "pairs"),
        (lambda: solve(mdp, "lmc", method="vi"), "method"),
        (lambda: solve(mdp, "lmc", backend="torch"), "backend"),
        (lambda: solve(mdp, "pi", discount=1), "discount"),
        (lambda: solve(mdp, "dbc", pairs=[(0, 1)]), "pairs"),
    ]
    for call, field in cases:
        with pytest.raises(InputError) as info:
            call()
        message = str(info.value)
        assert message.startswith(f"{field}:") and "\n" not in message, message

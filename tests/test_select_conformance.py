"""One conformance suite over every registered selector, as scikit-learn does for its estimators.

Each check below runs for every name in the registry (wrappers included), so a new selector is
held to the same contract the moment it is registered: parameters round-trip, set_params validates
as the constructor does, a failed fit leaves it unfitted, select is cheap and pure, and "utility"
means one thing.
"""

import numpy as np
import pytest

import evalsift.select.clustering as clustering
from evalsift.errors import EvalsiftError, NotFittedError, ParameterError
from evalsift.pool import Pool
from evalsift.select import Selector, build_selector, clone, selectors, utilities_of

from _fakes import DictEncoder, vec_text

WRAPPERS = ("domain_balanced", "document_level")


def three_system_pool(n=25, seed=5):
    rng = np.random.default_rng(seed)
    systems = ["A", "B", "C"]
    outputs = {s: [vec_text(rng.normal(size=4)) for _ in range(n)] for s in systems}
    human = rng.random((n, 3))
    auto = human + rng.normal(scale=0.2, size=(n, 3))
    return Pool(item_ids=[f"i{i}" for i in range(n)], inputs=[vec_text(rng.normal(size=4)) for _ in range(n)],
                systems=systems, outputs=outputs, scores={"human": human, "auto": auto}, human_metrics=["human"],
                metadata={"domain": [f"d{i % 3}" for i in range(n)], "doc": [f"doc{i // 4}" for i in range(n)]},
                name="three")


def build(name, pool, seed=1):
    extra = {"train": pool} if name == "distilled" else {}
    if name in WRAPPERS:
        extra = {"base": "metric_var"}  # a base with parameters of its own, to exercise base__*
    return build_selector(name, seed, {"encoder": DictEncoder(4), "metric": "auto"}, **extra)


def fitted_pool(name):
    full = three_system_pool()
    sel = build(name, full)
    return full, sel, (full.pair("A", "B") if sel.pairwise else full)


NAMES = list(selectors)


@pytest.mark.parametrize("name", NAMES)
def test_fit_and_select(name):
    full, sel, pool = fitted_pool(name)
    before = {s: pool.outputs[s] for s in pool.systems}
    with pytest.raises(NotFittedError):
        sel.select(3)
    assert not sel.is_fitted
    assert sel.fit(pool) is sel and sel.is_fitted
    s1, s2 = sel.select(10), sel.select(10)
    assert len(set(s1.items.tolist())) == len(s1.items)  # no item twice
    assert len(s1.items) == 10 if sel.exact_budget else 1 <= len(s1.items) <= 10
    assert all(0 <= i < pool.n_items for i in s1.items)
    assert s1.items.tolist() == s2.items.tolist()  # select is a pure function of the fitted state
    assert s1.method == name and s1.seed == 1
    assert list(s1.item_ids) == [pool.item_ids[i] for i in s1.items]
    assert all(sel.picks(b).tolist() == sel.select(b).items.tolist() for b in (1, 7, 10, pool.n_items + 5))
    assert {s: pool.outputs[s] for s in pool.systems} == before  # the pool is untouched
    assert sorted(sel.select(pool.n_items + 5).items.tolist()) == list(range(pool.n_items))  # over budget: all
    again = build(name, full).fit(pool).select(10)
    assert again.items.tolist() == s1.items.tolist()  # same seed, same picks
    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(ParameterError, match="budget"):
            sel.select(bad)
        with pytest.raises(ParameterError, match="budget"):
            sel.picks(bad)
    if sel.pairwise:
        with pytest.raises(ParameterError, match="compares two systems"):
            build(name, full).fit(full)


@pytest.mark.parametrize("name", NAMES)
def test_parameters_round_trip(name):
    full, sel, pool = fitted_pool(name)
    params = sel.get_params(deep=True)
    twin = clone(sel)
    assert twin is not sel and not twin.is_fitted and twin.name == sel.name
    assert twin.get_params(deep=True).keys() == params.keys()
    shallow = sel.get_params(deep=False)
    rebuilt = type(sel)(**{k: clone(v) if isinstance(v, Selector) else v for k, v in shallow.items()})
    assert rebuilt.get_params(deep=False).keys() == shallow.keys()
    assert clone(sel).fit(pool).select(7).items.tolist() == sel.fit(pool).select(7).items.tolist()
    # set_params drops the fitted state: the parameters may no longer match it
    assert sel.set_params(seed=1) is sel and not sel.is_fitted
    with pytest.raises(NotFittedError):
        sel.select(3)
    with pytest.raises(ParameterError, match="has no parameter 'no_such_parameter'"):
        sel.set_params(no_such_parameter=1)
    if any(k.startswith("base__") for k in params):
        sel.set_params(base__metric="human")
        assert sel.get_params()["base__metric"] == "human" and sel.base.metric == "human"


def _choice_params():
    """(selector name, parameter) for every string parameter whose constructor rejects a bad value."""
    out = []
    for name in NAMES:
        _, sel, _ = fitted_pool(name)
        shallow = sel.get_params(deep=False)
        for key, value in shallow.items():
            if isinstance(value, str) and key != "metric":
                try:
                    type(sel)(**{**shallow, key: "no-such-value"})
                except ParameterError:
                    out.append((name, key))
                except EvalsiftError:
                    pass
    return out


CHOICES = _choice_params()


def test_choice_parameters_are_found():
    # the selectors whose constructors validate a fixed set of values, at least these:
    for expected in [("diffuse", "clustering"), ("diffuse", "representative"), ("diversity", "kind"),
                     ("irt", "model"), ("irt", "utility"), ("combinator", "normalize"), ("kmeans", "space")]:
        assert expected in CHOICES


@pytest.mark.parametrize("name,key", CHOICES)
def test_set_params_validates_like_the_constructor(name, key):
    _, sel, _ = fitted_pool(name)
    shallow = sel.get_params(deep=False)
    with pytest.raises(ParameterError) as built:
        type(sel)(**{**shallow, key: "no-such-value"})
    with pytest.raises(ParameterError) as changed:
        clone(sel).set_params(**{key: "no-such-value"})
    # the same message after the label ("selector 'irt_disc': " vs the class's "selector 'irt': ")
    assert str(changed.value).split(": ", 1)[1] == str(built.value).split(": ", 1)[1]
    assert changed.value.field == key


@pytest.mark.parametrize("name", NAMES)
def test_failed_fit_leaves_it_unfitted(name):
    _, sel, pool = fitted_pool(name)
    sel.fit(pool)
    empty = Pool(item_ids=[f"x{i}" for i in range(6)], systems=list(pool.systems), name="nothing")  # no data at all
    try:
        sel.fit(empty)
    except EvalsiftError:  # anything it reports must be one of ours, never AttributeError or TypeError
        assert not sel.is_fitted
        with pytest.raises(NotFittedError):
            sel.select(2)
    else:
        assert sel.is_fitted and sel.pool_ is empty  # selectors that need nothing (random) fit anything


def test_failure_inside_fit_drops_partial_state():
    class HalfWay(Selector):
        def __init__(self, *, seed=0):
            self.seed = seed

        def _fit(self, pool):
            self.order_ = np.arange(pool.n_items)
            raise ParameterError("broken on purpose")

        def _select(self, budget):
            return self.order_[:budget], None

    sel = HalfWay()
    with pytest.raises(ParameterError):
        sel.fit(three_system_pool())
    assert not hasattr(sel, "order_") and not sel.is_fitted
    with pytest.raises(NotFittedError):
        sel.select(1)


@pytest.mark.parametrize("name", NAMES)
def test_select_never_refits(name, monkeypatch):
    _, sel, pool = fitted_pool(name)
    sel.fit(pool)
    first = sel.select(12).items.tolist()

    def no_more(*a, **k):
        raise AssertionError("select() did clustering work that fit() should have done")

    monkeypatch.setattr(clustering, "_two_means", no_more)
    monkeypatch.setattr(type(sel), "_fit", no_more)
    for budget in (1, 5, 12, 20, pool.n_items):
        sel.select(budget)
    assert sel.select(12).items.tolist() == first


@pytest.mark.parametrize("name", NAMES)
def test_utility_means_one_thing(name):
    _, sel, pool = fitted_pool(name)
    sel.fit(pool)
    n = pool.n_items
    if sel.nested:
        full = sel.select(n).items.tolist()
        for k in (1, 4, 9, n - 1):
            assert sel.select(k).items.tolist() == full[:k]  # one order: every budget is a prefix of it
        u = utilities_of(sel)
        assert u.shape == (n,)
        finite = [i for i in full if np.isfinite(u[i])]
        assert all(u[i] >= u[j] for i, j in zip(finite, finite[1:])) or hasattr(sel, "utilities_")
        assert sel.ranking().tolist() == full
    else:
        with pytest.raises(ParameterError, match="no per-item utility"):
            utilities_of(sel)
        with pytest.raises(ParameterError, match="no per-item utility"):
            sel.ranking()


@pytest.mark.parametrize("name", [n for n in NAMES if n not in WRAPPERS])
def test_wrappers_accept_exactly_the_ordered_selectors(name):
    from evalsift.select import DomainBalanced

    _, sel, pool = fitted_pool(name)
    if sel.nested:
        DomainBalanced(clone(sel), field="domain")
    else:
        with pytest.raises(ParameterError, match="no per-item utility"):
            DomainBalanced(clone(sel), field="domain")

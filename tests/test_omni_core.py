"""OmniInput's parts with hand-computed expectations: input spaces, model adapters, the multiple-histogram
reweighting, r(z) and the precision-recall arithmetic (Eq. 3-4), AUPR, the ROC relation, normalisations."""

import numpy as np
import pytest
from scipy.special import logsumexp

from evalsift.errors import DataError, ParameterError
from evalsift.omninput import (Candidates, FunctionModel, InputSpace, OmniSamples, SklearnModel, as_model, aupr,
                               auroc, cross_model_normalisation, label_rates, make_sampler, omni_curve, pr_curve,
                               precision_from_roc, rescaled_axis)
from evalsift.omninput.curves import (aupr_full, aupr_log, aupr_log_ratios, decision_point, distinct_per_bin,
                                      judgment_intervals, output_range, range_curve)
from evalsift.omninput.reweight import binned_log_density, mbar_log_weights
from evalsift.omninput.samplers import propose_block, propose_single


def samples_of(bins, counts, positive="high", width=1.0, output="logit"):
    """An OmniSamples with given exact counts per bin (no candidates)."""
    c = Candidates(np.zeros((0, 2), dtype=np.int16), np.zeros(0), np.zeros(0, dtype=np.int64),
                   np.zeros(0, dtype=np.int64), np.zeros(0))
    ln = np.log(np.asarray(counts, dtype=float))
    return OmniSamples({"name": "m", "positive": positive, "output": output}, InputSpace(2, 3), {"name": "test"},
                       width, np.asarray(bins), ln, ln[None, :].copy(), np.asarray(counts, dtype=np.int64), c)


# ---------------------------------------------------------------------------------------------- spaces
def test_space_size_enumeration_and_constraints():
    sp = InputSpace(3, 4, allowed={0: [1, 2]})  # 2 * 4 * 4 = 32 inputs
    assert sp.size == 32 and np.isclose(sp.log_size, np.log(32))
    allx = np.concatenate(list(sp.enumerate(batch=5)))
    assert allx.shape == (32, 3) and len({tuple(r) for r in allx}) == 32
    assert set(allx[:, 0]) == {1, 2}
    prefixes = np.concatenate(list(sp.enumerate(last=False)))
    assert prefixes.shape == (8, 2)  # 2 * 4 prefixes of length 2
    u = sp.uniform(2000, np.random.default_rng(0))
    assert set(u[:, 0]) == {1, 2} and u.min() >= 0 and u.max() <= 3
    # uniform over the allowed values: position 1 sees each of 4 values about a quarter of the time
    assert np.allclose(np.bincount(u[:, 1], minlength=4) / 2000, 0.25, atol=0.04)


def test_space_check_names_the_row_and_position():
    sp = InputSpace(3, 4, allowed={2: [0]})
    with pytest.raises(DataError, match=r"row 1 has value 3 at position 2.*allowed: 0"):
        sp.check([[0, 0, 0], [1, 1, 3]])
    with pytest.raises(DataError, match="rows of 3 positions"):
        sp.check([[0, 0]])
    with pytest.raises(ParameterError, match="n_values must be an integer >= 2"):
        InputSpace(3, 1)
    with pytest.raises(ParameterError, match="position 5, outside 0..2"):
        InputSpace(3, 4, allowed={5: [0]})
    with pytest.raises(ParameterError, match="every position is fixed"):
        InputSpace(2, 4, allowed={0: [1], 1: [2]})


def test_space_round_trip_and_rendering():
    sp = InputSpace(4, 3, kind="image", shape=(2, 2), allowed={0: [0, 2]})
    back = InputSpace.from_dict(sp.to_dict())
    assert back.fingerprint() == sp.fingerprint() and np.array_equal(back.mask, sp.mask)
    png = sp.render_png(np.array([0, 1, 2, 0]), scale=4)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image
    import io

    img = np.asarray(Image.open(io.BytesIO(png)))
    assert img.shape == (8, 8)
    # 0 white; 1 of 2 levels: 255 - round(127.5) = 255 - 128 (numpy rounds half to even) = 127; 2 black
    assert img[0, 0] == 255 and img[0, 4] == 127 and img[4, 0] == 0
    tok = InputSpace(3, 3, vocab=["a", "b", "c"], joiner="-")
    assert tok.render_text([2, 0, 1]) == "c-a-b"


def test_single_and_block_proposals_respect_the_space():
    sp = InputSpace(6, 5, allowed={0: [3], 4: [1, 2]})
    rng = np.random.default_rng(1)
    x = sp.uniform(500, rng)
    y = propose_single(sp, x, rng)
    changed = (x != y).sum(axis=1)
    assert (changed == 1).all()  # exactly one position, to another value
    sp.check(y)
    assert (y[:, 0] == 3).all()  # the fixed position never moves
    b = propose_block(sp, x, rng, 3)
    sp.check(b)
    diff = np.flatnonzero((x != b).any(axis=0))
    assert ((x != b).sum(axis=1) <= 3).all() and 0 not in diff
    img = InputSpace(16, 4, kind="image", shape=(4, 4))
    xi = img.uniform(300, rng)
    bi = propose_block(img, xi, rng, 2)
    for row_x, row_b in zip(xi, bi):
        pos = np.flatnonzero(row_x != row_b)
        if pos.size:  # inside one 2x2 patch
            r, c = pos // 4, pos % 4
            assert r.max() - r.min() <= 1 and c.max() - c.min() <= 1


# ---------------------------------------------------------------------------------------------- models
def test_function_model_checks_its_outputs():
    m = FunctionModel(lambda x: x.sum(axis=1), name="sum", output="nll")
    assert m.positive == "low" and m(np.array([[1, 2]])).tolist() == [3.0]
    bad = FunctionModel(lambda x: np.full(len(x), np.inf), name="inf")
    with pytest.raises(DataError, match="returned inf for input row 0"):
        bad(np.zeros((2, 2), dtype=int))
    short = FunctionModel(lambda x: [1.0], name="short")
    with pytest.raises(DataError, match="returned 1 values for a batch of 2"):
        short(np.zeros((2, 2), dtype=int))
    with pytest.raises(ParameterError, match="cannot use a int as a model: give a callable"):
        as_model(3)
    with pytest.raises(ParameterError, match="needs a callable"):
        FunctionModel(3)


def test_sklearn_adapter_gives_the_logit_of_the_designated_class():
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(200, 4))
    y = (X[:, 0] + X[:, 1] > 2).astype(int)
    lr = LogisticRegression().fit(X, y)
    m = SklearnModel(lr)
    p = lr.predict_proba(X[:5])[:, 1]
    assert np.allclose(m(X[:5]), np.log(p / (1 - p)))  # decision_function = the log-odds of class 1
    assert np.allclose(SklearnModel(lr, designated=0)(X[:5]), -m(X[:5]))
    mlp = MLPClassifier(hidden_layer_sizes=(5,), max_iter=2000, random_state=0).fit(X, y)
    mm = SklearnModel(mlp)
    q = np.clip(mlp.predict_proba(X[:5])[:, 1], 1e-12, 1 - 1e-12)
    assert np.allclose(mm(X[:5]), np.log(q / (1 - q)), atol=1e-6)  # the output layer's pre-activation
    with pytest.raises(ParameterError, match="designated class 7"):
        SklearnModel(lr, designated=7)


def test_torch_model_grad_matches_finite_differences():
    torch = pytest.importorskip("torch")
    from evalsift.omninput.zoo import _tiny_lm_class

    torch.manual_seed(0)
    module = _tiny_lm_class()(5, 4, d_model=16, heads=2, layers=1, ff=16)
    from evalsift.omninput import TorchModel

    m = TorchModel(module, output="nll")
    x = np.array([[0, 1, 2, 3], [4, 4, 0, 1]])
    z, g = m.grad(x, 5)
    assert np.allclose(z, m(x), atol=1e-4)  # the one-hot path is the same function
    # the first-order change predicted for moving position 2 of row 0 from 2 to 4 has the right sign and size
    x2 = x.copy()
    x2[0, 2] = 4
    actual = m(x2)[0] - z[0]
    predicted = g[0, 2, 4] - g[0, 2, 2]
    assert np.sign(actual) == np.sign(predicted) or abs(actual) < 0.05
    c = m.completions(x[:, :3])  # every last value at once equals the forward pass
    assert np.allclose(c[np.arange(2), x[:, 3]], z, atol=1e-4)


# ---------------------------------------------------------------------------------------------- reweighting
def test_mbar_recovers_a_known_density_from_tempered_draws():
    # a discrete density g over z in {0..9} (counts of inputs), sampled exactly at beta = 0, 0.5, 1
    g = np.array([1000, 500, 200, 80, 30, 10, 4, 2, 1, 1], dtype=float)
    z = np.arange(10.0)
    rng = np.random.default_rng(0)
    betas = np.array([0.0, 0.5, 1.0])
    samples = []
    for b in betas:
        p = g * np.exp(b * z)
        samples.append(rng.choice(z, size=20000, p=p / p.sum()))
    lw, c = mbar_log_weights(samples, betas)
    bins, ln = binned_log_density(np.concatenate(samples), lw, 1.0)
    est = ln - logsumexp(ln) + np.log(g.sum())
    assert np.array_equal(bins, np.arange(10))
    # the top bins (1 or 2 inputs of 1828) are estimated within 10% -- beta = 1 puts about 1/6 of its draws there
    assert np.allclose(np.exp(est), g, rtol=0.1)
    # c_k = ln Z_k / Z_0: exact values sum(g e^{beta z}) / sum(g)
    exact_c = np.log([(g * np.exp(b * z)).sum() / g.sum() for b in betas])
    assert np.allclose(c, exact_c, atol=0.03)


def test_mbar_with_one_replica_at_zero_weights_every_sample_equally():
    lw, c = mbar_log_weights([np.array([3.0, 1.0, 1.0, 2.0])], np.array([0.0]))
    assert np.allclose(lw, -np.log(4)) and c.tolist() == [0.0]


def test_the_linear_fast_path_is_scikit_learns_own_decision_function():
    from sklearn.linear_model import LogisticRegression, SGDClassifier

    rng = np.random.default_rng(1)
    X = rng.integers(0, 17, size=(300, 64)).astype(float)
    y = (X[:, :8].sum(axis=1) > 64).astype(int)
    for est in (LogisticRegression(max_iter=500).fit(X, y), SGDClassifier(random_state=0).fit(X, y)):
        Z = rng.integers(0, 17, size=(50, 64))
        assert np.array_equal(SklearnModel(est)(Z), est.decision_function(Z.astype(float)))  # bit for bit
    with pytest.raises(ValueError):  # a wrong width still gets scikit-learn's own error
        SklearnModel(LogisticRegression(max_iter=500).fit(X, y))(np.zeros((2, 3)))


def _lbfgs_only(samples, betas, monkeypatch):
    import evalsift.omninput.reweight as rw

    with monkeypatch.context() as m:
        m.setattr(rw, "_newton", lambda *a, **k: None)
        return rw.mbar_log_weights(samples, betas)


@pytest.mark.parametrize("case", ["overlapping", "an empty replica", "barely overlapping"])
def test_newton_and_lbfgs_solve_mbar_to_the_same_weights(case, monkeypatch):
    """Newton (the default) and scipy's L-BFGS (its fallback) reach the same optimum; where the replicas barely
    overlap Newton stalls and hands over, and the answer is L-BFGS's."""
    rng = np.random.default_rng(2)
    betas = np.linspace(0.0, 3.0, 6)
    spread = 0.05 if case == "barely overlapping" else 1.0
    samples = [np.round(rng.normal(loc=4 * b, scale=spread, size=5000), 3) for b in betas]
    if case == "an empty replica":
        samples[3] = np.array([])
    lw, c = mbar_log_weights(samples, betas)
    lw2, c2 = _lbfgs_only(samples, betas, monkeypatch)
    assert np.all(np.isfinite(lw)) and np.allclose(c, c2, atol=1e-8) and np.allclose(lw, lw2, atol=1e-8)


# ---------------------------------------------------------------------------------------------- curves
def test_pr_curve_by_hand_for_high_and_low_positives():
    # bins z = 0, 1, 2 with 4, 2, 2 inputs; r = 0, 0.5, 1
    ln = np.log([4.0, 2.0, 2.0])
    r = np.array([0.0, 0.5, 1.0])
    hi = pr_curve(ln, r, "high")  # thresholds take the top 1, 2, 3 bins
    # precision: 2/2, (2 + 1)/(2 + 2), 3/8; recall: 2/3, 3/3, 3/3
    assert np.allclose(hi["precision"], [1.0, 0.75, 0.375]) and np.allclose(hi["recall"], [2 / 3, 1, 1])
    lo = pr_curve(ln, r, "low")  # thresholds take the bottom 1, 2, 3 bins
    # precision: 0/4, 1/6, 3/8; recall: 0, 1/3, 1
    assert np.allclose(lo["precision"], [0.0, 1 / 6, 0.375]) and np.allclose(lo["recall"], [0, 1 / 3, 1])
    # ROC: N = 4 + 1 = 5 negatives; high: FPR 0/5, 1/5, 5/5
    assert np.allclose(hi["fpr"], [0, 0.2, 1])
    # ROC points (0, 0), (0, 2/3), (0.2, 1), (1, 1): 0.2 * (2/3 + 1) / 2 + 0.8 * 1
    assert np.isclose(auroc(hi["fpr"], hi["tpr"]), 0.2 * (2 / 3 + 1) / 2 + 0.8)


def test_aupr_conventions():
    rec, prec = np.array([0.5, 1.0]), np.array([1.0, 0.5])
    assert aupr(rec, prec) == pytest.approx(0.375)  # own range: (1 + 0.5) / 2 * 0.5
    assert aupr_full(rec, prec) == pytest.approx(0.875)  # + 0.5 * 1 below the first point
    assert aupr(rec, prec, 0.6, 0.8) == pytest.approx(0.2 * (0.9 + 0.7) / 2)  # linear interpolation inside
    assert aupr(rec, prec, 0.8, 0.6) == 0.0


def test_precision_from_roc_is_the_appendix_identity():
    rng = np.random.default_rng(3)
    ln = np.log(rng.integers(1, 10**6, size=30).astype(float))
    r = rng.random(30)
    c = pr_curve(ln, r, "high")
    assert np.allclose(precision_from_roc(c["tpr"], c["fpr"], c["ln_P"], c["ln_N"]), c["precision"])


def test_huge_spaces_are_handled_in_log_space():
    # two bins of e^180 and e^170 inputs; all positives in the small one
    s = samples_of([0, 1], [1.0, 1.0])
    ln = np.array([180.0, 170.0])
    c = pr_curve(ln, np.array([0.0, 1.0]), "high")
    assert c["precision"][0] == 1.0 and np.isclose(c["precision"][1], 1 / (1 + np.exp(10)))
    assert np.isfinite(c["ln_P"]) and np.isclose(c["ln_P"], 170.0)
    assert s.bins.size == 2


def test_label_rates_interpolate_and_flag_unjudged_bins():
    s = samples_of([0, 1, 2, 3], [10, 10, 10, 10])
    r = label_rates(s, [0.1, 0.2, 3.5, 3.6], [0, 0, 1, 1])
    # bin 0: 0 of 2, bin 3: 2 of 2; bins 1 and 2 interpolated on the centres 0.5 .. 3.5
    assert np.allclose(r.r, [0, 1 / 3, 2 / 3, 1]) and r.interpolated.tolist() == [False, True, True, False]
    with pytest.raises(DataError, match="labels must be in"):
        label_rates(s, [0.1], [2.0])
    with pytest.raises(DataError, match="no judged input falls in a bin"):
        label_rates(s, [99.0], [1.0])


def test_bootstrap_of_the_labels_keeps_all_no_bins_at_zero_and_varies_mixed_ones():
    s = samples_of([0, 1, 2], [100, 10, 1])
    z = np.repeat(s.centers, 10)
    y = np.concatenate([np.zeros(10), np.r_[np.ones(5), np.zeros(5)], np.ones(10)])  # 0/10, 5/10, 10/10
    r = label_rates(s, z, y)
    assert np.allclose(r.r, [0.0, 0.5, 1.0])
    iv = judgment_intervals(s, r, n_boot=300, seed=0)
    lo, hi = iv["aupr"]
    c = pr_curve(s.ln_rho, r.r, "high")
    assert lo < aupr_full(c["recall"], c["precision"]) < hi or lo == hi  # the estimate inside its interval
    assert lo < hi  # the 5-of-10 bin varies
    # the simultaneous bounds allow positives in the all-no bin: 0 of 10 at 5%/3 -> Clopper-Pearson upper
    # 1 - (0.05/3/2)^(1/10) = 0.38
    assert np.isclose(r.hi_sim[0], 1 - (0.05 / 3 / 2) ** 0.1, atol=1e-6) and r.lo_sim[0] == 0


def test_omni_curve_decision_point_and_intervals():
    # logit model: bins -2..1 (z from -2 to 2), positives only above 0
    s = samples_of([-2, -1, 0, 1], [1000, 100, 10, 1])
    z = np.repeat(s.centers, 10)
    y = np.repeat([0.0, 0.0, 1.0, 1.0], 10)
    c = omni_curve(s, z, y, n_boot=200, seed=1)
    # every bin's 10 labels agree: each bootstrap redraw repeats them, so no interval (not a zero-width one)
    assert c["aupr"] > 0.95 and "aupr" not in c["intervals"] and "auroc" not in c["intervals"]
    assert c["intervals"]["none"] == "every judged bin's labels agree (all yes or all no)"
    y[5] = 1.0  # one yes among the ten of bin -2 (the first): that bin varies, and the interval holds the estimate
    c1 = omni_curve(s, z, y, n_boot=200, seed=1)
    assert c1["intervals"]["aupr"][0] <= c1["aupr"] <= c1["intervals"]["aupr"][1] + 1e-9
    assert c1["intervals"]["aupr"][0] < c1["intervals"]["aupr"][1] and "none" not in c1["intervals"]
    d = decision_point(s, np.array(c["r"]))
    # z > 0: bins 0 and 1 (11 inputs), essentially all positive
    assert d["precision"] > 0.95 and d["recall"] > 0.95 and np.isclose(d["predicted_positive_share"], 11 / 1111)
    assert c["limits"]["everything"]["recall"] == pytest.approx(1.0)
    assert np.isclose(c["positive_share"], 11 / 1111, rtol=0.05)


def test_rescaled_axis_puts_models_on_one_axis():
    a = samples_of([0, 1], [3, 1], width=1.0)  # z in [0, 2)
    b = samples_of([2, 3], [1, 1], width=1.0)  # z in [2, 4)
    out = rescaled_axis([a, b], n_bins=4)
    assert out["z_min"] == 0 and out["z_max"] == 4
    assert np.allclose(out["mass"][0], [0.75, 0.25, 0, 0]) and np.allclose(out["mass"][1], [0, 0, 0.5, 0.5])
    assert all(np.isclose(sum(m), 1) for m in out["mass"])


# ---------------------------------------------------------------------------------------------- Eq. 5-6
# The paper's worked example (Sec. 2.3): M1 puts 500 inputs in Z, M2 200, and X (both in Z) has 100.
# The space: 3 digits, 1000 inputs, input i = 100 a + 10 b + c. M1 puts i < 500 in Z, M2 puts 400 <= i < 600 in Z,
# so X = [400, 500), 100 inputs. Outside Z both models output 1.5 (bin 1).
def _index(x):
    return x[:, 0] * 100 + x[:, 1] * 10 + x[:, 2]


M1 = FunctionModel(lambda x: np.where(_index(x) < 500, 0.5, 1.5), output="logit", name="M1")
M2 = FunctionModel(lambda x: np.where((_index(x) >= 400) & (_index(x) < 600), 0.5, 1.5), output="logit", name="M2")
SPACE = InputSpace(3, 10)


def _digits_of(idx):
    idx = np.asarray(idx)
    return np.stack([idx // 100, idx // 10 % 10, idx % 10], axis=1).astype(np.int16)


def _sampled(name, idx):
    """Samples of a model that drew the inputs ``idx`` in bin 0 (z in [0, 1)): H(bin 0) = the number drawn."""
    x = _digits_of(idx)
    n = len(idx)
    c = Candidates(x, np.full(n, 0.5), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(n))
    return OmniSamples({"name": name, "positive": "high", "output": "logit"}, SPACE, {"name": "test"}, 1.0,
                       np.array([0, 1]), np.log([float(n), 10.0]), np.zeros((0, 2)), np.array([n, 10]), c)


def test_cross_model_normalisation_reproduces_the_papers_worked_example():
    # 50 inputs sampled in Z by M1: every 10th of 0..499, so 10 of them (400, 410, ..., 490) are in X
    s1 = _sampled("M1", np.arange(0, 500, 10))
    # 50 inputs sampled in Z by M2: every 4th of 400..599, so 25 of them (400, 404, ..., 496) are in X
    s2 = _sampled("M2", np.arange(400, 600, 4))
    out = cross_model_normalisation([s1, s2], [M1, M2], (0.0, 1.0))
    m1, m2 = out["models"]
    assert (m1["checked"], m1["in_shared"]) == (50, 10) and (m2["checked"], m2["in_shared"]) == (50, 25)
    # Eq. 5: 50 / 10 = 5, Eq. 6: 50 / 25 = 2 -- the ratio of the true counts, 500 : 200 over |X| = 100
    assert np.exp(m1["ln_total"]) == pytest.approx(5.0) and np.exp(m2["ln_total"]) == pytest.approx(2.0)
    assert m1["bins"] == [0] and m2["bins"] == [0]  # only Z's bins are normalised


def test_cross_model_normalisation_from_real_sampling_estimates_the_true_ratio():
    # uniform draws over the whole space (rho on the absolute scale, candidates weighted): Eq. 5-6 should give
    # about 500 / 100 and 200 / 100, and each model's estimate of |X| should be about 100
    s1 = make_sampler("uniform", steps=40, walkers=256, chains=2, bin_width=1.0, keep=512, seed=0).run(
        M1, SPACE, quiet=True)
    s2 = make_sampler("uniform", steps=40, walkers=256, chains=2, bin_width=1.0, keep=512, seed=1).run(
        M2, SPACE, quiet=True)
    out = cross_model_normalisation([s1, s2], [M1, M2], (0.0, 1.0))
    t1, t2 = (float(np.exp(m["ln_total"])) for m in out["models"])
    assert t1 == pytest.approx(5.0, rel=0.25) and t2 == pytest.approx(2.0, rel=0.25)
    assert all(np.exp(m["ln_shared"]) == pytest.approx(100, rel=0.25) for m in out["models"])


def test_cross_model_normalisation_refuses_other_spaces_and_an_empty_shared_set():
    s1 = _sampled("M1", np.arange(0, 500, 10))
    other = OmniSamples({"name": "o"}, InputSpace(4, 10), {}, 1.0, np.array([0]), np.zeros(1), np.zeros((0, 1)),
                        np.ones(1, dtype=np.int64), s1.candidates)
    with pytest.raises(ParameterError, match="same input space"):
        cross_model_normalisation([s1, other], [M1, M2], (0.0, 1.0))
    s1_outside_x = _sampled("M1", np.arange(0, 400, 8))  # none of these is in X
    out = cross_model_normalisation([s1_outside_x, _sampled("M2", np.arange(400, 600, 4))], [M1, M2], (0.0, 1.0))
    assert out["models"][0]["ln_total"] is None and "no denominator" in out["models"][0]["note"]


# ---------------------------------------------------------------------------------------------- Z and log recall
def _with_candidates(bins, counts, distinct, positive="low"):
    """Samples whose bin b holds ``distinct[b]`` distinct candidate inputs (and one duplicate of the first)."""
    xs, zs, bs = [], [], []
    for b, d in zip(bins, distinct):
        for k in range(d):
            xs.append([b + 10, k])
            zs.append(b + 0.5)
            bs.append(b)
        if d:
            xs.append([b + 10, 0])
            zs.append(b + 0.5)
            bs.append(b)
    n = len(zs)
    c = Candidates(np.array(xs, dtype=np.int16).reshape(n, 2), np.array(zs, dtype=float), np.array(bs, dtype=np.int64),
                   np.zeros(n, dtype=np.int64), np.zeros(n))
    ln = np.log(np.asarray(counts, dtype=float))
    return OmniSamples({"name": "m", "positive": positive, "output": "nll"}, InputSpace(2, 60), {"name": "test"}, 1.0,
                       np.asarray(bins), ln, ln[None, :].copy(), np.asarray(counts, dtype=np.int64), c)


def test_output_range_starts_at_30_distinct_inputs_and_ends_at_the_budget():
    # an NLL model (positive: low z), bins 0..5; the two lowest bins hold 5 and 29 distinct inputs, bin 2 holds 30
    s = _with_candidates(range(6), [1, 10, 100, 1000, 1000, 1000], [5, 29, 30, 40, 40, 40])
    assert distinct_per_bin(s).tolist() == [5, 29, 30, 40, 40, 40]  # the duplicate counts once
    z = output_range(s)
    assert z["z"] == [2.0, 6.0] and z["mask"].tolist() == [False, False, True, True, True, True]
    z = output_range(s, budget=25, per_bin=10)  # 25 judgments at 10 per bin: 2 bins
    assert z["z"] == [2.0, 4.0] and z["n_bins"] == 2 and "25 judgments / 10 per bin" in z["end"]
    assert output_range(s, min_distinct=5)["z"] == [0.0, 6.0]
    assert output_range(s, z_range=(1.0, 3.0))["mask"].tolist() == [False, True, True, False, False, False]
    # a logit model (positive: high z) starts at the top
    h = _with_candidates(range(4), [1000, 100, 10, 1], [40, 40, 30, 3], positive="high")
    assert output_range(h, budget=20, per_bin=10)["z"] == [1.0, 3.0]
    with pytest.raises(DataError, match="no bin holds 50 distinct"):
        output_range(s, min_distinct=50)
    with pytest.raises(ParameterError, match="holds no whole bin"):
        output_range(s, z_range=(0.2, 0.7))


def test_recall_within_z_is_unnormalised_and_normalised_only_when_every_bin_is_judged():
    s = samples_of([0, 1, 2, 3], [1, 3, 4, 8], positive="low")  # shares 1/16, 3/16, 4/16, 8/16
    r = np.array([1.0, 2 / 3, 0.5, 0.0])
    mask = np.array([False, True, True, False])
    k = range_curve(s, r, mask, interpolated=np.zeros(4, dtype=bool))
    # thresholds take bin 1, then bins 1-2: recall 3/16 * 2/3 = 2/16, then + 4/16 * 1/2 = 4/16
    assert np.allclose(k["recall"], [2 / 16, 4 / 16]) and np.allclose(k["precision"], [2 / 3, 4 / 7])
    assert np.allclose(k["recall_normalised"], [0.5, 1.0]) and k["threshold"] == [2.0, 3.0]
    k = range_curve(s, r, mask, interpolated=np.array([False, False, True, False]))
    assert k["recall_normalised"] is None and "1 of 2 bins of Z" in k["recall_normalised_note"]
    assert np.allclose(k["recall"], [2 / 16, 4 / 16])  # the unnormalised recall is still given


def test_whole_space_recall_is_not_given_when_a_bin_is_unjudged():
    s = samples_of([0, 1, 2, 3], [10, 10, 10, 10])
    c = omni_curve(s, [0.1, 3.5], [0.0, 1.0], n_boot=20)  # bins 1 and 2 not judged
    assert c["recall"] is None and c["aupr"] is None and c["auroc"] is None and c["normalised"] is False
    assert "2 of 4 bins" in c["normalised_note"] and c["precision"] is not None
    full = omni_curve(s, s.centers, [0.0, 0.0, 1.0, 1.0], n_boot=20)
    assert full["normalised"] is True and full["aupr"] is not None


def test_aupr_on_log_recall_and_the_ratio_of_areas():
    # recall 1, 10, 100 -> log10 recall 0, 1, 2
    assert aupr_log(np.array([1.0, 10.0, 100.0]), np.array([1.0, 0.5, 0.5])) == pytest.approx(0.75 + 0.5)
    assert aupr_log(np.array([0.0, 1.0, 10.0]), np.array([0.3, 1.0, 0.5])) == pytest.approx(0.75)  # recall 0: no log
    a = {"recall": [1.0, 10.0, 100.0], "precision": [1.0, 0.5, 0.5]}
    b = {"recall": [10 ** 0.5, 10 ** 1.5, 1000.0], "precision": [1.0, 1.0, 1.0]}
    out = aupr_log_ratios([a, b], ["A", "B"])
    # common log10 range [0.5, 2]; A: 0.5..1 precision 0.75 -> 0.5: (0.75 + 0.5)/2 * 0.5 = 0.3125, then 1..2 at 0.5: 0.5
    assert out["log10_recall_range"] == pytest.approx([0.5, 2.0])
    assert out["aupr_log"]["A"] == pytest.approx(0.8125) and out["aupr_log"]["B"] == pytest.approx(1.5)
    assert out["ratio"]["B"] == pytest.approx(1.5 / 0.8125)
    assert out["cumulative"]["ratio"]["B"][-1] == pytest.approx(out["ratio"]["B"])
    # the ratio does not depend on a common scale of recall (a log shift moves both curves alike)
    scaled = aupr_log_ratios([{**a, "recall": [v * 7 for v in a["recall"]]},
                              {**b, "recall": [v * 7 for v in b["recall"]]}], ["A", "B"])
    assert scaled["ratio"]["B"] == pytest.approx(out["ratio"]["B"])
    assert aupr_log_ratios([a, {"recall": [1e5, 1e6], "precision": [1, 1]}], ["A", "C"]) is None


_TRAIN_ONCE = """
import json, sys, time
from pathlib import Path
import torch
from evalsift.omninput.zoo import _cached
log = Path(sys.argv[1])
def make():
    return torch.nn.Linear(2, 1)
def build():
    with open(log, "a") as f:
        f.write("trained\\n")
    time.sleep(3)  # long enough for the other process to ask for the same model meanwhile
    torch.manual_seed(int(sys.argv[2]))
    return make(), {"trained by": sys.argv[2]}
module, info = _cached({"name": "lock-test"}, build, make)
print(json.dumps({"info": info, "weights": module.weight.detach().tolist()}))
"""


def test_two_processes_asking_for_the_same_untrained_model_train_it_once(tmp_path):
    """A model cache shared by two processes (two test workers, two terminals): the second waits for the first's
    training and loads its weights."""
    import json
    import os
    import subprocess
    import sys

    pytest.importorskip("torch")
    env = {**os.environ, "EVALSIFT_CACHE": str(tmp_path / "cache")}
    log = tmp_path / "trainings.log"
    procs = [subprocess.Popen([sys.executable, "-c", _TRAIN_ONCE, str(log), seed], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for seed in ("1", "2")]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    got = [json.loads(o[0].strip().splitlines()[-1]) for o in outs]
    assert log.read_text().splitlines() == ["trained"]  # one training
    assert got[0] == got[1]  # both hold the one trained model

"""tinyBenchmarks' p-IRT / gp-IRT port (evalsift.estimate.tinybench) checked against direct,
loop-by-loop implementations of the equations of the authors' code (tutorials/irt.py, utils.py,
the notebooks, and the py-irt fork's multidim_2pl model)."""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import minimize
from scipy.special import gammaincinv

from evalsift.estimate import tinybench as tb


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch", reason="the reference ELBO (negative_elbo_terms) and autograd need torch")


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(3)
    K, M = 15, 40
    th = rng.normal(size=(K, 2))
    a = np.abs(rng.normal(size=(M, 2)))
    b = rng.normal(size=M)
    P = 1 / (1 + np.exp(-(th @ a.T - b)))
    Y = np.clip(P + rng.normal(scale=0.15, size=P.shape), 0, 1)  # soft scores in [0, 1]
    return Y


@pytest.fixture(scope="module")
def fitted(small):
    Yb, _ = tb.binarize(small)
    return tb.fit_multidim_2pl(Yb, 2, epochs=300)


def direct_neg_elbo(params, z, Y, D):
    """The fork's model and guide, written site by site with scipy densities (float64 loops)."""
    K, M = Y.shape
    lp = stats.norm(0, 10).logpdf(z["mu_b"]).sum() + stats.gamma(1, scale=1).logpdf(z["u_b"]).sum()
    for d in range(D):
        lp += stats.norm(0, 10).logpdf(z["mu_theta"][d]) + stats.gamma(1).logpdf(z["u_theta"][d])
        lp += stats.norm(0, 10).logpdf(z["mu_gamma"][d]) + stats.gamma(1).logpdf(z["u_gamma"][d])
    for k in range(K):
        for d in range(D):
            lp += stats.norm(z["mu_theta"][d], 1 / z["u_theta"][d]).logpdf(z["theta"][k, d])
    for j in range(M):
        lp += stats.norm(z["mu_b"][0], 1 / z["u_b"][0]).logpdf(z["b"][j, 0])
        for d in range(D):
            lp += stats.norm(z["mu_gamma"][d], 1 / z["u_gamma"][d]).logpdf(z["gamma"][j, d])
    for k in range(K):
        for j in range(M):
            logit = sum(z["gamma"][j, d] * z["theta"][k, d] - z["b"][j, 0] for d in range(D))
            p = 1 / (1 + math.exp(-logit))
            lp += math.log(p) if Y[k, j] == 1 else math.log(1 - p)
    lq = 0.0
    for s, v in z.items():
        q = params[s]
        if s.startswith("u_"):
            lq += stats.gamma(q["alpha"], scale=1 / q["beta"]).logpdf(v).sum()
        else:
            lq += stats.norm(q["loc"], q["scale"]).logpdf(v).sum()
    return -(lp - lq)


def test_negative_elbo_equals_the_forks_model_site_by_site(torch):
    rng = np.random.default_rng(0)
    K, M, D = 4, 6, 3
    Y = (rng.random((K, M)) < 0.5).astype(float)
    shapes = tb._guide_shapes(K, M, D)
    params, z = {}, {}
    for s, shp in shapes.items():
        if s.startswith("u_"):
            params[s] = {"alpha": rng.uniform(0.5, 2, shp), "beta": rng.uniform(0.5, 2, shp)}
            z[s] = rng.gamma(params[s]["alpha"], 1 / params[s]["beta"])
        else:
            params[s] = {"loc": rng.normal(size=shp), "scale": rng.uniform(0.3, 1.5, shp)}
            z[s] = params[s]["loc"] + params[s]["scale"] * rng.normal(size=shp)
    T = {s: {k: torch.tensor(v, dtype=torch.float64) for k, v in p.items()} for s, p in params.items()}
    Z = {s: torch.tensor(v, dtype=torch.float64) for s, v in z.items()}
    ours = float(tb.negative_elbo_terms(T, Z, torch.tensor(Y, dtype=torch.float64), D))
    assert abs(ours - direct_neg_elbo(params, z, Y, D)) < 1e-6


def _draw(rng, K, M, D):
    """A random guide (flat unconstrained vector) and one draw from it, for the numpy ELBO."""
    lay = tb._Layout(K, M, D)
    x = rng.normal(scale=0.5, size=lay.size)
    eps = rng.normal(size=lay.n_normal)
    alpha = np.exp(lay.parts(x)[2])
    g = rng.gamma(alpha)
    return lay, x, eps, g, tb.gamma_draw_grad(g, alpha)


def _sites(lay, loc, scale, alpha, beta, zn, zu):
    params, z = {}, {}
    for s, sl in lay.normal.items():
        params[s] = {"loc": loc[sl].reshape(lay.shapes[s]), "scale": scale[sl].reshape(lay.shapes[s])}
        z[s] = zn[sl].reshape(lay.shapes[s])
    for s, sl in lay.gamma.items():
        params[s] = {"alpha": alpha[sl].reshape(lay.shapes[s]), "beta": beta[sl].reshape(lay.shapes[s])}
        z[s] = zu[sl].reshape(lay.shapes[s])
    return params, z


def test_numpy_elbo_and_its_gradient_equal_the_forks_model_and_torch_autograd(torch):
    rng = np.random.default_rng(1)
    K, M, D = 5, 7, 3
    Y = (rng.random((K, M)) < 0.5).astype(float)
    lay, x, eps, g, dg = _draw(rng, K, M, D)
    loss, grad = tb.negative_elbo(x, eps, g, dg, Y, lay)
    grad = grad.copy()
    # the value: the fork's model and guide site by site (scipy densities), at the same draw
    loc, r, la, lb = lay.parts(x)
    params, z = _sites(lay, loc, np.exp(r), np.exp(la), np.exp(lb), loc + np.exp(r) * eps, g / np.exp(lb))
    assert abs(loss - direct_neg_elbo(params, z, Y, D)) < 1e-6
    # the gradient: torch autograd through the same reparameterised draw (the gamma draws' derivative in
    # their shape entered as dg, the implicit reparameterisation gradient checked below)
    X = torch.tensor(x, requires_grad=True)
    Nn, Ng = lay.n_normal, lay.n_gamma
    tl, tr, tla, tlb = X[:Nn], X[Nn:2 * Nn], X[2 * Nn:2 * Nn + Ng], X[2 * Nn + Ng:]
    ta, tbeta = tla.exp(), tlb.exp()
    zn = tl + tr.exp() * torch.tensor(eps)
    zu = (torch.tensor(g) + torch.tensor(dg) * (ta - ta.detach())) / tbeta
    T, Z = _sites(lay, tl, tr.exp(), ta, tbeta, zn, zu)
    ref = tb.negative_elbo_terms(T, Z, torch.tensor(Y), D)
    ref.backward()
    assert abs(float(ref.detach()) - loss) < 1e-6
    assert np.abs(X.grad.numpy() - grad).max() < 1e-6 and np.abs(grad).max() > 1.0


def test_gamma_draw_grad_is_the_implicit_reparameterisation_derivative(torch):
    a = np.array([0.05, 0.3, 1.0, 2.7, 9.0, 40.0])
    for u in (1e-6, 0.01, 0.5, 0.9, 0.999999):
        g = gammaincinv(a, u)  # the draw at a fixed value u of its distribution function
        h = 1e-6 * a
        exact = (gammaincinv(a + h, u) - gammaincinv(a - h, u)) / (2 * h)
        assert np.allclose(tb.gamma_draw_grad(g, a), exact, rtol=1e-6, atol=0)
        # pyro's Gamma.rsample differentiates through torch's approximation of the same derivative
        theirs = torch._standard_gamma_grad(torch.tensor(a), torch.tensor(g)).numpy()
        assert np.allclose(theirs, exact, rtol=5e-3, atol=0)


def test_adam_step_is_torchs_adam_with_the_exponential_decay(torch):
    rng = np.random.default_rng(2)
    x0 = rng.normal(size=6)
    grads = rng.normal(size=(5, 6)) * np.array([1e-3, 1, 10, 1, 1, 100])
    x, state, lr = x0.copy(), tb.adam_state(x0), 0.1
    p = torch.tensor(x0, requires_grad=True)
    opt = torch.optim.Adam([p], lr=0.1)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
    for t, gr in enumerate(grads, 1):
        tb.adam_step(x, gr, state, t, lr)
        lr *= 0.9
        p.grad = torch.tensor(gr)
        opt.step()
        sched.step()
    assert np.abs(x - p.detach().numpy()).max() < 1e-12 and np.abs(x - x0).min() > 1e-3


def test_fit_is_seeded_and_lowers_the_loss(small, fitted):
    Yb, _ = tb.binarize(small)
    again = tb.fit_multidim_2pl(Yb, 2, epochs=300)
    assert np.array_equal(again.disc, fitted.disc) and np.array_equal(again.diff, fitted.diff)
    losses = fitted.history["losses"]
    assert fitted.loss == losses.min() and losses[-50:].mean() < 0.8 * losses[:10].mean()
    assert fitted.disc.shape == (40, 2) and fitted.diff.shape == (40,) and fitted.ability.shape == (15, 2)
    # the fitted model ranks the known systems as their scores do
    pred = fitted.probability(fitted.ability).mean(axis=1)
    assert stats.spearmanr(pred, small.mean(axis=1))[0] > 0.8


def test_binarize_picks_the_threshold_by_brute_force(small):
    Yb, c = tb.binarize(small)
    errs = [np.mean(np.abs((small > t).mean(1) - small.mean(1))) for t in np.linspace(.01, .99, 100)]
    assert c == pytest.approx(np.linspace(.01, .99, 100)[int(np.argmin(errs))])
    assert np.array_equal(Yb, (small > c).astype(float)) and 0.01 < c < 0.99


def their_item_curve(theta, irt, items):
    a = irt.disc[items].T[None]  # 1 x D x n, as load_irt_parameters shapes them
    b = irt.diff[items][None, None, :]  # 1 x 1 x n
    return 1 / (1 + np.exp(-np.clip(a * theta.reshape(1, -1, 1) - b, -30, 30).sum(axis=1))).squeeze()


def test_ability_and_pirt_equal_the_authors_equations(small, fitted):
    items = np.array([0, 3, 5, 8, 13, 21, 22, 30, 34, 39])
    y = small[4, items]

    def neg(x):  # estimate_ability_parameters' objective, BFGS with numerical gradient as theirs
        P = their_item_curve(x, fitted, items)
        return -np.sum(y * np.log(P + 1e-10) + (1 - y) * np.log(1 - P + 1e-10))

    x = np.array([0.3, -0.2])
    f, g = tb.ability_objective(x, y, fitted, items)
    num = np.array([(neg(x + h) - neg(x - h)) / 2e-6 for h in np.eye(2) * 1e-6])
    assert f == pytest.approx(neg(x), abs=1e-9) and np.allclose(g, num, atol=1e-5)
    theirs = minimize(neg, np.zeros(2), method="BFGS").x
    ours = tb.fit_ability(y, fitted, items)
    assert neg(ours) <= neg(theirs) + 1e-8
    unseen = np.setdiff1d(np.arange(40), items)

    def their_pirt(theta):
        lam = len(items) / 40
        return lam * y.mean() + (1 - lam) * their_item_curve(theta, fitted, unseen).mean()

    assert abs(tb.pirt_estimate(y, fitted, items, ours) - their_pirt(ours)) < 1e-12
    assert abs(tb.pirt_estimate(y, fitted, items) - their_pirt(theirs)) < 1e-4


def test_gp_lambda_is_the_analytic_weight():
    assert tb.gp_lambda(0.05, 0.2, 100) == pytest.approx(0.0025 / (0.0025 + 0.2 / 400))
    assert tb.gp_lambda(0.0, 0.2, 10) == 0.0


def test_anchor_points_are_sklearns_weighted_kmeans(fitted):
    from sklearn.cluster import KMeans

    items, w = tb.anchor_points(8, irt=fitted)
    X = np.hstack([fitted.disc, fitted.diff[:, None]])
    km = KMeans(8, n_init="auto", random_state=42).fit(X, sample_weight=np.full(40, 1 / 40))
    d = ((km.cluster_centers_[:, None, :] - X[None]) ** 2).sum(-1)
    assert np.array_equal(items, d.argmin(1))
    assert np.allclose(w, np.bincount(km.labels_, minlength=8) / 40) and w.sum() == pytest.approx(1)


def test_pipeline_chooses_the_dimension_on_validation(small):
    tbm = tb.TinyBenchmarks.fit(small, dims=(1, 2), epochs=150)
    sel = tbm.selection
    assert set(sel["errors"]) == {1, 2} and sel["dims"] == min(sel["errors"], key=sel["errors"].get)
    assert tbm.irt.dims == sel["dims"] and sel["b"] == sel["errors"][sel["dims"]]
    # the validation error recomputed from the validation fit, as training_irt.ipynb does
    val, _ = tb.validation_split(15)
    fit = sel["fits"][sel["dims"]]
    Yb = (small > tbm.threshold).astype(float)
    seen, unseen = np.arange(0, 40, 2), np.arange(1, 40, 2)
    err = np.mean([abs(fit.probability(tb.fit_ability(Yb[k, seen], fit, seen), unseen).mean()
                       - small[k, unseen].mean()) for k in val])
    assert err == pytest.approx(sel["b"], abs=1e-12)
    items, w = tbm.anchors(10)
    out = tbm.estimate(small[0, items], items, w)
    lam = out["lam"]
    v = np.var(small, axis=1).mean()
    assert lam == pytest.approx(sel["b"] ** 2 / (sel["b"] ** 2 + v / 40))
    assert out["gpirt"] == pytest.approx(lam * out["anchor"] + (1 - lam) * out["pirt"])
    assert abs(out["pirt"] - small[0].mean()) < 0.2


def test_the_fit_needs_no_torch(small, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)  # any `import torch` now raises ImportError
    Yb, _ = tb.binarize(small)
    fit = tb.fit_multidim_2pl(Yb, 2, epochs=30)
    assert np.isfinite(fit.loss) and fit.disc.shape == (40, 2)
    with pytest.raises(ImportError):
        import torch  # noqa: F401


"""evalsift's tinyBenchmarks port (evalsift.estimate.tinybench) next to the authors' item model.

The authors' side: the ``Multidim2PL`` model and guide of their py-irt fork
(github.com/felipemaiapolo/py-irt, ``py_irt/models/multidim_2pl.py``), trained by pyro's SVI with
``Trace_ELBO``, Adam (lr 0.1) and ``ExponentialLR`` (0.9999), seed 42, 2000 epochs, exporting the
means after the lowest-loss step -- the loop of the fork's ``py_irt/training.py`` (its CLI wrapper
needs pydantic 1 / typer, so the loop is run directly). Everything downstream (abilities, p-IRT,
gp-IRT) is then computed by evalsift's functions on both fits, so the comparison isolates the fit.

Needs, outside evalsift's environment: ``pip install --target DIR --no-deps pyro-ppl pyro-api
opt_einsum`` and the fork's ``py_irt`` folder (``git archive``), both on PYTHONPATH::

    PYTHONPATH=src:/tmp/tb-pyro:/tmp/pyirt-fork python benchmarks/estimate/tinybench_paper.py
"""

import sys
import time

import numpy as np
import torch

from evalsift.estimate import tinybench as tb


def authors_fit(Yb, D, epochs=tb.EPOCHS, seed=tb.SEED):
    import importlib.util
    import pyro
    from pyro.infer import SVI, Trace_ELBO

    import py_irt.models.abstract_model  # noqa: F401  (registers IrtModel)
    spec = importlib.util.find_spec("py_irt.models.multidim_2pl")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    t0 = time.perf_counter()
    pyro.set_rng_seed(seed)
    K, M = Yb.shape
    m = mod.Multidim2PL(num_items=M, num_subjects=K, dims=D)
    pyro.clear_param_store()
    subj = torch.arange(K).repeat_interleave(M)
    items = torch.arange(M).repeat(K)
    obs = torch.tensor(Yb.reshape(-1), dtype=torch.float)
    sched = pyro.optim.ExponentialLR({"optimizer": torch.optim.Adam, "optim_args": {"lr": tb.LR}, "gamma": tb.LR_DECAY})
    svi = SVI(m.get_model(), m.get_guide(), sched, loss=Trace_ELBO())
    m.get_model()(subj, items, obs)
    m.get_guide()(subj, items, obs)
    best, params = float("inf"), None
    for _ in range(epochs):
        loss = svi.step(subj, items, obs)
        if loss < best:
            best, params = loss, m.export()
        sched.step()
    disc, diff, ab = (np.array(params[k], dtype=float) for k in ("disc", "diff", "ability"))
    return tb.MultiIRT(disc, diff[:, 0], ab, best, time.perf_counter() - t0)


def main(K=40, M=200, D=2, n=20):
    torch.set_num_threads(1)
    rng = np.random.default_rng(1)
    th = rng.normal(size=(K, 2))
    a = np.abs(rng.normal(size=(M, 2)))
    b = rng.normal(size=M)
    Y = (rng.random((K, M)) < 1 / (1 + np.exp(-(th @ a.T - b)))).astype(float)
    new = np.arange(0, K, 8)
    known = np.setdiff1d(np.arange(K), new)
    Yb, _ = tb.binarize(Y[known])
    ours = tb.fit_multidim_2pl(Yb, D)
    theirs = authors_fit(Yb, D)
    theirs2 = authors_fit(Yb, D, seed=tb.SEED + 1)  # the authors' own seed-to-seed spread
    print(f"fit seconds: evalsift {ours.seconds:.2f}  authors' model in pyro {theirs.seconds:.2f}  "
          f"(best loss {ours.loss:.1f} vs {theirs.loss:.1f})")
    items, w = tb.anchor_points(n, Y=Y[known], clustering="correct.")
    print("system  true    anchor  pirt(ours) pirt(authors')  diff(points)  authors seed 43  diff(points)")
    diffs, spread = [], []
    for k in new:
        y = Y[k, items]
        p1, p2 = tb.pirt_estimate(y, ours, items), tb.pirt_estimate(y, theirs, items)
        p3 = tb.pirt_estimate(y, theirs2, items)
        diffs.append(100 * abs(p1 - p2))
        spread.append(100 * abs(p3 - p2))
        print(f"{k:6d}  {Y[k].mean():.4f}  {w @ y:.4f}  {p1:.4f}     {p2:.4f}          {diffs[-1]:.2f}"
              f"          {p3:.4f}           {spread[-1]:.2f}")
    print(f"max |pirt ours - authors| = {max(diffs):.2f} points; max |authors seed 43 - seed 42| = "
          f"{max(spread):.2f} points")
    # evalsift's own seed-to-seed spread (its fit is fast): seeds 42-49
    ours_s = np.array([[tb.pirt_estimate(Y[k, items], fit, items) for k in new]
                       for fit in (tb.fit_multidim_2pl(Yb, D, seed=s) for s in range(tb.SEED, tb.SEED + 8))])
    print("evalsift seeds 42-49: system, mean, min, max of p-IRT; the authors' seeds 42 and 43")
    for j, k in enumerate(new):
        a2 = (tb.pirt_estimate(Y[k, items], theirs, items), tb.pirt_estimate(Y[k, items], theirs2, items))
        print(f"{k:6d}  {ours_s[:, j].mean():.4f}  {ours_s[:, j].min():.4f}  {ours_s[:, j].max():.4f}   "
              f"{a2[0]:.4f}  {a2[1]:.4f}")


if __name__ == "__main__":
    main(*(int(x) for x in sys.argv[1:]))

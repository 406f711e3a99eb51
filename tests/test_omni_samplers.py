"""Every registered OmniInput sampler held to one contract, checked against exact answers.

- Conformance: parameters (get/set/clone, one uniform message for a bad value), reproducible results
  for a seed, the result round-trips through its folder, nothing of the caller's is changed.
- Exactness: on a 4^6 space enumerated exactly, every sampler's rho is close to the truth (tolerances
  from repeated runs, written beside each).
- Resume: a run stopped half way (and one stopped by SIGINT) and resumed from its checkpoint gives
  the same result as an uninterrupted run; other settings in the same folder are refused.
- Hard synthetic case: an additive model over 8^30 inputs, whose exact density is a convolution:
  parallel tempering must find the single best input and the density's tails, normalised to the space.
- Gradient proposals keep the right distribution (Metropolis-Hastings correction) on a torch model:
  Gibbs-with-gradients inside parallel tempering, and the discrete Langevin proposal's chain at beta -1
  (the LM's own distribution) against the exact tilted histogram, a bound the uncorrected proposal fails.
- Representatives are uniform within a bin even though the replicas are tilted toward high outputs.
"""

import os
import signal

import numpy as np
import pytest
from scipy.special import logsumexp

from evalsift.errors import DataError, ParameterError, UnknownNameError
from evalsift.omninput import FunctionModel, InputSpace, Interrupted, OmniSamples, clone_sampler, make_sampler, samplers

D, V = 6, 4
_W = np.random.default_rng(7).normal(size=(D, V))


def small_model() -> FunctionModel:
    """z = a sum of per-position weights plus an interaction (not additive, so not trivial)."""
    def f(x):
        x = np.asarray(x, dtype=np.int64)
        return _W[np.arange(D)[None, :], x].sum(axis=1) + 0.5 * (x[:, 0] == x[:, 1])

    return FunctionModel(f, name="small", output="logit", fingerprint="small-v1")


SPACE = InputSpace(D, V)
# settings per sampler for the 4096-input space; L1 tolerances: about 1.5 x the largest L1 measured over
# seeds 0-9 with these settings (the measured range beside each)
SPECS = {
    "uniform": (dict(steps=40, walkers=64), 0.06),                # seeds 0-9: L1 0.013-0.040
    "metropolis": (dict(steps=600, beta=0.0, walkers=16), 0.04),  # 0.007-0.025
    "pt": (dict(steps=600, replicas=6), 0.11),                    # 0.030-0.071
    "wang_landau": (dict(steps=4000, walkers=8), 0.06),           # 0.012-0.041
    "exact": (dict(), 1e-12),
}


@pytest.fixture(scope="module")
def exact():
    return make_sampler("exact", bin_width=1.0).run(small_model(), SPACE, quiet=True)


def l1(a: OmniSamples, b: OmniSamples) -> float:
    ma, mb = dict(zip(a.bins.tolist(), a.mass())), dict(zip(b.bins.tolist(), b.mass()))
    return sum(abs(ma.get(k, 0.0) - mb.get(k, 0.0)) for k in set(ma) | set(mb))


def run(name: str, seed: int = 0, **extra) -> OmniSamples:
    params, _ = SPECS[name]
    return make_sampler(name, bin_width=1.0, seed=seed, **{**params, **extra}).run(small_model(), SPACE, quiet=True)


def test_every_sampler_is_covered():
    assert set(samplers) == set(SPECS), "a new sampler must add its settings to SPECS"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_parameters_follow_the_estimator_contract(name):
    s = make_sampler(name, bin_width=1.0)
    params = s.get_params()
    assert {"seed", "steps", "chains", "bin_width", "proposal", "keep"} <= set(params)
    c = clone_sampler(s)
    assert c is not s and c.get_params() == params
    s.set_params(seed=3)
    assert s.seed == 3
    with pytest.raises(ParameterError, match=rf"sampler '{name}': steps=0 is invalid; expected an integer >= 1"):
        s.set_params(steps=0)
    with pytest.raises(ParameterError, match=rf"sampler '{name}': unknown parameter 'stpes'"):
        s.set_params(stpes=10)
    with pytest.raises(ParameterError, match="proposal='jump' is not one of: mixed, single, block, gradient, langevin"):
        make_sampler(name, bin_width=1.0, proposal="jump").run(small_model(), SPACE, quiet=True)
    with pytest.raises(ParameterError, match=rf"sampler '{name}': step_size=0 is invalid; expected a positive number"):
        make_sampler(name, bin_width=1.0).set_params(step_size=0)


def test_unknown_sampler_suggests_the_closest():
    with pytest.raises(UnknownNameError, match="Did you mean 'wang_landau'"):
        make_sampler("wanglandau")


@pytest.mark.parametrize("name", sorted(SPECS))
def test_close_to_exact_and_reproducible(name, exact):
    a = run(name, seed=1)
    assert l1(a, exact) <= SPECS[name][1]
    # normalised to the size of the space
    assert np.isclose(logsumexp(a.ln_rho), SPACE.log_size)
    b = run(name, seed=1)
    assert np.array_equal(a.ln_rho, b.ln_rho) and np.array_equal(a.candidates.x, b.candidates.x)
    assert a.evaluations == b.evaluations > 0
    assert a.sampler["seed"] == 1 and a.sampler["name"] == name and a.complete


@pytest.mark.parametrize("name", sorted(SPECS))
def test_result_round_trips_and_space_is_untouched(name, tmp_path):
    mask = SPACE.mask.copy()
    a = run(name)
    assert np.array_equal(SPACE.mask, mask)
    a.save(tmp_path / "s")
    b = OmniSamples.load(tmp_path / "s")
    assert np.array_equal(a.ln_rho, b.ln_rho) and np.array_equal(a.candidates.x, b.candidates.x)
    assert b.space.fingerprint() == SPACE.fingerprint() and b.fingerprint() == a.fingerprint()
    r1, r2 = a.representatives(3, seed=5), b.representatives(3, seed=5)
    assert r1.ids == r2.ids and len(set(r1.ids)) == len(r1.ids)  # distinct and the same every time
    coarse = a.coarsen(2)
    assert np.isclose(logsumexp(coarse.ln_rho), logsumexp(a.ln_rho)) and coarse.bin_width == 2.0


@pytest.mark.parametrize("name", ["pt", "wang_landau", "metropolis", "uniform"])
def test_resume_gives_the_uninterrupted_result(name, tmp_path):
    whole = run(name, seed=2)
    steps = SPECS[name][0]["steps"]
    with pytest.raises(Interrupted, match=f"stopped at step {steps // 2} of {steps}"):
        make_sampler(name, bin_width=1.0, seed=2, **SPECS[name][0]).run(small_model(), SPACE, quiet=True,
                                                                       checkpoint=tmp_path, stop_at=steps // 2)
    assert (tmp_path / "checkpoint.npz").is_file()
    resumed = make_sampler(name, bin_width=1.0, seed=2, **SPECS[name][0]).run(small_model(), SPACE, quiet=True,
                                                                             checkpoint=tmp_path)
    assert np.array_equal(whole.ln_rho, resumed.ln_rho)
    assert np.array_equal(whole.candidates.x, resumed.candidates.x)
    assert whole.evaluations == resumed.evaluations


def test_sigint_stops_between_steps_and_resumes_exactly(tmp_path):
    calls = {"n": 0, "at": None}
    base = small_model()

    def f(x):
        calls["n"] += 1
        if calls["n"] == calls["at"]:  # Ctrl-C in the middle of a model call
            os.kill(os.getpid(), signal.SIGINT)
        return base(x)

    model = FunctionModel(f, name="small", output="logit", fingerprint="small-v1")
    params = SPECS["pt"][0]
    make_sampler("pt", bin_width=1.0, seed=4, **params).run(model, SPACE, quiet=True)
    calls["at"], calls["n"] = calls["n"] - 200, 0  # 200 calls before the end: in the sampling loop, past the pilot
    with pytest.raises(KeyboardInterrupt):
        make_sampler("pt", bin_width=1.0, seed=4, **params).run(model, SPACE, quiet=True, checkpoint=tmp_path)
    assert (tmp_path / "checkpoint.npz").is_file()
    resumed = make_sampler("pt", bin_width=1.0, seed=4, **params).run(base, SPACE, quiet=True, checkpoint=tmp_path)
    whole = make_sampler("pt", bin_width=1.0, seed=4, **params).run(base, SPACE, quiet=True)
    assert np.array_equal(whole.ln_rho, resumed.ln_rho) and whole.evaluations == resumed.evaluations


def test_a_torn_checkpoint_is_named_with_the_step_to_recover(tmp_path):
    name, steps = "pt", SPECS["pt"][0]["steps"]
    sampler = lambda: make_sampler(name, bin_width=1.0, seed=2, **SPECS[name][0])  # noqa: E731
    with pytest.raises(Interrupted):
        sampler().run(small_model(), SPACE, quiet=True, checkpoint=tmp_path, stop_at=steps // 2)
    ck = tmp_path / "checkpoint.npz"
    ck.write_bytes(ck.read_bytes()[: ck.stat().st_size // 2])  # a copy cut short, a disk that filled up
    with pytest.raises(DataError, match=r"checkpoint is torn or damaged.*BadZipFile.*delete .*checkpoint.npz"):
        sampler().run(small_model(), SPACE, quiet=True, checkpoint=tmp_path)
    ck.unlink()  # the step the message names: the run starts over and finishes
    assert sampler().run(small_model(), SPACE, quiet=True, checkpoint=tmp_path).evaluations > 0


def test_other_settings_in_the_same_folder_are_refused(tmp_path):
    run_ = lambda **kw: make_sampler("pt", bin_width=1.0, **{**SPECS["pt"][0], **kw}).run(  # noqa: E731
        small_model(), SPACE, quiet=True, checkpoint=tmp_path)
    run_(seed=0)
    with pytest.raises(DataError, match=r"other settings \(seed=0 \(now 1\)\)"):
        run_(seed=1)
    # a larger steps extends the finished run
    longer = run_(seed=0, steps=900)
    assert longer.complete and longer.evaluations > run("pt").evaluations


def additive():
    """z = sum of integer weights per position over 8^30 inputs; the exact counts by convolution."""
    d, v = 30, 8
    w = np.random.default_rng(3).integers(-5, 6, size=(d, v))
    model = FunctionModel(lambda x: w[np.arange(d)[None, :], np.asarray(x, dtype=np.int64)].sum(axis=1).astype(float),
                          name="additive", output="logit", fingerprint="additive-3")
    dist, off = np.array([1.0]), 0
    for row in w:
        c = np.bincount(row - row.min())
        dist, off = np.convolve(dist, c), off + row.min()
    z = np.arange(dist.size) + off
    return model, InputSpace(d, v), {int(a): float(np.log(b)) for a, b in zip(z, dist) if b > 0}


def test_tempering_finds_the_tails_of_a_huge_space():
    model, space, exact = additive()  # 8^30 = 1.2e27 inputs; z from -128 to 120, one input at 120
    s = make_sampler("pt", steps=3000, replicas=16, bin_width=1.0, seed=0).run(model, space, quiet=True)
    assert s.bins.max() == max(exact)  # the single best input was found
    err = np.array([s.ln_rho[i] - exact[int(b)] for i, b in enumerate(s.bins)])
    # seeds 0-2: median |error| 0.087-0.143 nats; largest error in the top 5 bins 0.66-1.06 nats
    assert np.median(np.abs(err)) < 0.2
    assert np.abs(err[-5:]).max() < 1.6
    assert np.isclose(s.diagnostics["mass_check"], 1.0)


def test_gradient_proposals_keep_the_distribution():
    torch = pytest.importorskip("torch")
    from evalsift.omninput import TorchModel
    from evalsift.omninput.zoo import _tiny_lm_class

    torch.manual_seed(1)
    model = TorchModel(_tiny_lm_class()(5, 4, d_model=16, heads=2, layers=1, ff=16), output="nll")
    space = InputSpace(4, 5)  # 625 inputs
    exact = make_sampler("exact", bin_width=0.5).run(model, space, quiet=True)
    g = make_sampler("pt", steps=300, replicas=4, bin_width=0.5, proposal="gradient", seed=0).run(model, space,
                                                                                                 quiet=True)
    # seeds 0-4: L1 0.055-0.106 (single-site proposals on the same budget: 0.068-0.093)
    assert l1(g, exact) < 0.16


def _tiny_torch_model():
    pytest.importorskip("torch")
    import torch

    from evalsift.omninput import TorchModel
    from evalsift.omninput.zoo import _tiny_lm_class

    torch.manual_seed(1)
    return TorchModel(_tiny_lm_class()(5, 4, d_model=16, heads=2, layers=1, ff=16), output="nll")


def test_langevin_proposal_samples_the_target():
    """One Metropolis chain per walker at beta = -1 with the discrete Langevin proposal: its target is
    exp(-NLL), the LM's own distribution over the 625 sequences. The histogram of the visited outputs
    (the chain's raw counts, no reweighting) against the exact share of exp(-z) per bin, by enumeration."""
    model, space, width = _tiny_torch_model(), InputSpace(4, 5), 0.5
    x = np.concatenate(list(space.enumerate()))
    z = model(x)
    p = np.exp(-z - logsumexp(-z))
    b = np.floor(z / width).astype(np.int64)
    target = {int(k): float(p[b == k].sum()) for k in np.unique(b)}
    s = make_sampler("metropolis", beta=-1.0, walkers=16, steps=400, bin_width=width, proposal="langevin",
                     step_size=0.5, seed=0).run(model, space, quiet=True)
    seen = dict(zip(s.bins.tolist(), (s.counts / s.counts.sum()).tolist()))
    tv = 0.5 * sum(abs(target.get(k, 0.0) - seen.get(k, 0.0)) for k in set(target) | set(seen))
    # seeds 0-9: TV 0.006-0.019; without the Metropolis-Hastings correction (q ratio dropped) 0.18-0.21
    assert tv < 0.03
    assert 0.3 < s.diagnostics["acceptance"] < 0.99  # global moves, and not all of them accepted
    g = make_sampler("pt", steps=300, replicas=4, bin_width=width, proposal="langevin", step_size=0.5,
                     seed=0).run(model, space, quiet=True)
    ex = make_sampler("exact", bin_width=width).run(model, space, quiet=True)
    assert l1(g, ex) < 0.19  # seeds 0-4: L1 0.051-0.125 (Gibbs-with-gradients on the same budget: 0.055-0.106)


def test_langevin_logits_redraw_every_position():
    """With a flat gradient every position changes independently with probability
    (V-1) e^(-1/a) / (1 + (V-1) e^(-1/a)): a = 0.5, V = 4: 3 e^-2 / (1 + 3 e^-2) = 0.2888; a disallowed
    value gets no mass, and the gradient tilts the draw toward a higher target."""
    from evalsift.omninput.samplers.proposals import langevin_logits

    space = InputSpace(3, 4, allowed={2: [0, 1]})
    x = np.array([[0, 1, 0]])
    q = np.exp(langevin_logits(space, x, np.zeros((1, 3, 4)), np.ones(1), 0.5))
    q /= q.sum(axis=2, keepdims=True)
    stay = q[0, [0, 1, 2], [0, 1, 0]]
    assert np.allclose(1 - stay[:2], 3 * np.exp(-2) / (1 + 3 * np.exp(-2)))
    assert np.isclose(1 - stay[2], np.exp(-2) / (1 + np.exp(-2)))  # position 2 allows 0 and 1 only
    assert q[0, 2, 2:].sum() == 0
    g = np.zeros((1, 3, 4))
    g[0, 0, 3] = 2.0  # z rises by 2 if position 0 becomes 3: half of it, 1, added to that logit
    t = langevin_logits(space, x, g, np.ones(1), 0.5)
    assert np.isclose(t[0, 0, 3] - t[0, 0, 1], 1.0)


def test_gradient_proposals_need_gradients():
    for proposal in ("gradient", "langevin"):
        with pytest.raises(ParameterError, match=f"proposal='{proposal}' needs a torch model with forward_onehot"):
            make_sampler("pt", steps=10, proposal=proposal).run(small_model(), SPACE, quiet=True)


def test_representatives_are_uniform_within_a_bin_despite_the_tilt():
    # z = 2 x0 + x1 over 3^8 inputs; the bin [2, 4) holds z = 2 (1458 inputs) and z = 3 (729): share 1/3 at z = 3
    model = FunctionModel(lambda x: 2.0 * x[:, 0] + x[:, 1], name="tilt", output="logit", fingerprint="tilt")
    space = InputSpace(8, 3)
    share, raw = [], []
    for seed in range(5):
        s = make_sampler("pt", steps=400, replicas=6, bin_width=2.0, keep=256, beta_max=4.0, seed=seed).run(
            model, space, quiet=True)
        reps = s.representatives(100, seed=seed, bins=[1])
        share.append(np.mean(reps.z == 3.0))
        c = s.candidates
        raw.append(np.mean(c.z[c.bin == 1] == 3.0))
    # 500 draws: the standard error of a share of 1/3 is 0.021 (seeds 0-4 gave 0.346)
    assert abs(np.mean(share) - 1 / 3) < 0.06
    assert np.mean(raw) > 1 / 3 + 0.05  # the unweighted candidates are tilted toward z = 3 (0.413)


CHECKPOINT_WRITER = """
import sys
sys.path.insert(0, {src!r})
from pathlib import Path
import numpy as np
from evalsift.omninput.samplers.checkpoints import save_checkpoint
g = 0
while True:
    g += 1   # one generation: the arrays and the scalars say the same number
    save_checkpoint(Path({folder!r}), {{"sampler": "x"}}, {{"arrays": {{"gen": np.full(20000, g)}}, "scalars": {{"gen": g}}}})
    print(g, flush=True)
"""


def test_a_checkpoint_is_one_generation_whenever_the_writer_is_killed(tmp_path):
    """kill -9 at random moments of a writer that saves checkpoints back to back: the checkpoint read afterwards
    always pairs the arrays and the scalars of the same generation (two files renamed one after the other could
    pair new arrays with old scalars), and is never older than the last one reported written."""
    import random
    import subprocess
    import sys
    import time
    from pathlib import Path

    from evalsift.omninput.samplers.checkpoints import load_checkpoint

    src = str(Path(__file__).resolve().parents[1] / "src")
    rng = random.Random(0)
    for _ in range(12):
        p = subprocess.Popen([sys.executable, "-c", CHECKPOINT_WRITER.format(src=src, folder=str(tmp_path))],
                             stdout=subprocess.PIPE, text=True)
        last = int(p.stdout.readline())  # at least one written
        time.sleep(rng.uniform(0.0, 0.3))
        os.kill(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        last = max([last, *(int(x) for x in out.split())])
        state = load_checkpoint(tmp_path, {"sampler": "x"})
        gen = state["scalars"]["gen"]
        assert set(state["arrays"]["gen"].tolist()) == {gen} and gen >= last
    assert not (tmp_path / "checkpoint.json").exists()


def test_a_checkpoint_in_the_two_file_layout_is_still_read(tmp_path):
    import json

    np.savez(tmp_path / "checkpoint.npz", gen=np.array([3]))
    (tmp_path / "checkpoint.json").write_text(json.dumps({"settings": {"s": 1}, "scalars": {"gen": 3}}))
    from evalsift.omninput.samplers.checkpoints import load_checkpoint

    state = load_checkpoint(tmp_path, {"s": 1})
    assert state["scalars"] == {"gen": 3} and state["arrays"]["gen"].tolist() == [3]

"""IRT fitting: evalsift's MAP/L-BFGS against py-irt's SVI (pyro), time ratios and parameter agreement.

py-irt is not a dependency of evalsift and this script installs nothing. To include it::

    pip install py-irt

py-irt 0.7.1 pins ``pandas<3``, ``rich<14`` and ``typer<0.15``; where those are newer (as in our
venv) install it without letting pip downgrade them, which works for what this script uses::

    pip install pyro-ppl ordered-set toml && pip install --no-deps py-irt

Without py-irt the script says so, records the import error and still times ours.

What it runs (one process, ratios measured in this run; our times are the median of ``--repeats``
runs, py-irt's a single run, as it takes minutes):

- **scale**: ours only: 16 x 100 and 12 x 460 synthetic 2PL matrices, the 12 x 41,871 opencompass
  matrix (1PL-4PL), and a continuous 12 x 41,871 matrix (no duplicate columns to merge);
- **synthetic**: a 100 x 1,000 matrix from a known 2PL; ours (2PL, 4PL) and py-irt ("2pl" with its
  default "vague" priors, "4pl"): seconds, ratio, correlations with the truth and with each other;
- **opencompass**: a seeded subset of ``--oc-items`` columns of ``opencompass-irt/data/combine.csv``
  (0 = all 41,871); ours and py-irt as above, plus correlations with the authors' published 4PL.

py-irt's "4pl" is ``P = lambda * sigmoid(a (theta - b))``: an upper asymptote (feasibility) and no
guessing; ours has both. Usage::

    python benchmarks/estimate/irt_vs_pyirt.py [--epochs 2000] [--oc-items 5000] [--skip-pyirt]
                                      [--out bench-out/irt_vs_pyirt.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np
from scipy.stats import pearsonr, spearmanr

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:  # run from a checkout without installing
    sys.path.insert(0, str(REPO / "src"))

from evalsift.irt import fit_irt  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

PYIRT_HINT = "pip install py-irt  (or: pip install pyro-ppl ordered-set toml && pip install --no-deps py-irt)"


def data_root() -> Path:
    """``$EVALSIFT_DATA`` or the ``shared/data`` folder next to the repository."""
    env = os.environ.get("EVALSIFT_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


def first_line(text: str, limit: int = 300) -> str:
    """The first line of an error message, cut to ``limit`` characters (the JSON keeps all of it)."""
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= limit else line[:limit] + "..."


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``(fn(), seconds)``."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def synthetic_2pl(S: int, J: int, seed: int, continuous: bool = False) -> dict[str, np.ndarray]:
    """theta, b ~ N(0, 1), log a ~ N(0, 0.3^2); 0/1 responses, or Beta(5P, 5(1-P)) if continuous."""
    rng = np.random.default_rng(seed)
    theta, b, a = rng.normal(size=S), rng.normal(size=J), np.exp(rng.normal(0, 0.3, size=J))
    P = 1 / (1 + np.exp(-a * (theta[:, None] - b)))
    Y = rng.beta(5 * P + 0.01, 5 * (1 - P) + 0.01) if continuous else (rng.random((S, J)) < P).astype(float)
    return {"Y": Y, "ability": theta, "difficulty": b, "discrimination": a}


def corr(x, y) -> dict[str, float]:
    """Pearson and Spearman correlation, rounded."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"pearson": float("nan"), "spearman": float("nan")}
    return {"pearson": round(float(pearsonr(x, y)[0]), 3), "spearman": round(float(spearmanr(x, y)[0]), 3)}


def timed_median(fn: Callable[[], Any], repeats: int) -> tuple[Any, float, list[float]]:
    """``(fn(), median seconds, all seconds)`` over ``repeats`` calls (the machine is shared)."""
    runs = [timed(fn) for _ in range(max(1, repeats))]
    seconds = [round(s, 4) for _, s in runs]
    return runs[-1][0], float(np.median(seconds)), seconds


def ours(Y: np.ndarray, model: str, seed: int, repeats: int) -> dict[str, Any]:
    """Fit our model ``repeats`` times; parameters, median seconds and fit facts."""
    r, seconds, all_seconds = timed_median(lambda: fit_irt(Y, model, seed=seed), repeats)
    return {"seconds": round(seconds, 3), "all_seconds": all_seconds, "n_iter": r.n_iter, "converged": r.converged,
            "ability": r.ability, "difficulty": r.difficulty, "discrimination": r.discrimination,
            "guessing": r.guessing, "feasibility": r.feasibility}


def pyirt_available() -> tuple[bool, str]:
    """Whether py-irt (and pyro/torch) import here; the error text when not."""
    try:
        import py_irt  # noqa: F401
        from py_irt.training import IrtModelTrainer  # noqa: F401
    except Exception as exc:  # ImportError, or an incompatible dependency failing at import
        return False, f"{type(exc).__name__}: {exc}"
    return True, ""


def pyirt(Y: np.ndarray, model: str, epochs: int, seed: int) -> dict[str, Any]:
    """Fit py-irt's ``model`` by SVI for ``epochs`` full-batch steps; parameters in our order."""
    import pandas as pd
    import pyro
    from py_irt.config import IrtConfig
    from py_irt.dataset import Dataset
    from py_irt.training import IrtModelTrainer

    S, J = Y.shape
    items = [f"i{j}" for j in range(J)]
    df = pd.DataFrame(Y, columns=items)
    df.insert(0, "subject", [f"s{i}" for i in range(S)])
    dataset, prep_s = timed(lambda: Dataset.from_pandas(df, subject_column="subject", item_columns=items))
    pyro.set_rng_seed(seed)
    config = IrtConfig(model_type=model, epochs=epochs, seed=seed, log_every=max(epochs, 1))
    trainer = IrtModelTrainer(data_path=Path("unused.jsonl"), config=config, dataset=dataset, verbose=False)
    _, train_s = timed(lambda: trainer.train(epochs=epochs, device="cpu"))
    p = trainer.last_params
    item_pos = np.array([int(p["item_ids"][k][1:]) for k in range(J)])  # index -> our column
    subj_pos = np.array([int(p["subject_ids"][k][1:]) for k in range(S)])
    out: dict[str, Any] = {"seconds": round(prep_s + train_s, 3), "train_seconds": round(train_s, 3),
                           "prepare_seconds": round(prep_s, 3), "epochs": epochs}
    ability = np.empty(S)
    ability[subj_pos] = p["ability"]
    out["ability"] = ability
    for ours_name, theirs in (("difficulty", "diff"), ("discrimination", "disc"), ("feasibility", "lambdas")):
        if theirs in p:
            v = np.empty(J)
            v[item_pos] = p[theirs]
            out[ours_name] = v
    return out


def agreement(fits: dict[str, dict], truth: dict[str, np.ndarray] | None,
              reference: dict[str, np.ndarray] | None, ref_name: str) -> dict[str, Any]:
    """Correlations of every fit with the truth / a reference, and between every pair of fits."""
    params = ("ability", "difficulty", "discrimination", "guessing", "feasibility")
    out: dict[str, Any] = {}
    for name, fit in fits.items():
        for other_name, other in (("truth", truth), (ref_name, reference)):
            if other is None:
                continue
            out[f"{name}~{other_name}"] = {k: corr(fit[k], other[k]) for k in params
                                           if k in fit and k in other and np.ptp(fit[k]) > 0}
    names = list(fits)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            out[f"{a}~{b}"] = {k: corr(fits[a][k], fits[b][k]) for k in params
                               if k in fits[a] and k in fits[b] and np.ptp(fits[a][k]) > 0 and np.ptp(fits[b][k]) > 0}
    return out


def compare(Y: np.ndarray, truth, reference, ref_name: str, args, have_pyirt: bool) -> dict[str, Any]:
    """Ours (2PL, 4PL) and py-irt (2pl, 4pl) on ``Y``: seconds, ratios, agreement."""
    fits: dict[str, dict] = {}
    errors: dict[str, str] = {}
    for model in ("2pl", "4pl"):
        fits[f"ours_{model}"] = ours(Y, model, args.seed, args.repeats)
        print(f"  ours {model}: {fits[f'ours_{model}']['seconds']:.2f} s, {fits[f'ours_{model}']['n_iter']} iterations")
        if not have_pyirt:
            continue
        try:
            fits[f"pyirt_{model}"] = pyirt(Y, model, args.epochs, args.seed)
            print(f"  py-irt {model}: {fits[f'pyirt_{model}']['seconds']:.2f} s ({args.epochs} epochs)")
        except Exception as exc:  # report exactly what failed, keep going
            errors[f"pyirt_{model}"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            print(f"  py-irt {model} FAILED: {first_line(errors[f'pyirt_{model}'])}")
    ratios = {f"pyirt_{m}_over_ours_{m}": round(fits[f"pyirt_{m}"]["seconds"] / fits[f"ours_{m}"]["seconds"], 1)
              for m in ("2pl", "4pl") if f"pyirt_{m}" in fits}
    return {"shape": list(Y.shape),
            "seconds": {k: v["seconds"] for k, v in fits.items()},
            "time_ratios": ratios,
            "agreement": agreement(fits, truth, reference, ref_name),
            "errors": errors}


def scale(seed: int, Y_oc: np.ndarray | None, repeats: int) -> dict[str, Any]:
    """Seconds of our fits on the sizes the library must handle."""
    out: dict[str, Any] = {}
    cases = [("synthetic 16x100", synthetic_2pl(16, 100, seed)["Y"]),
             ("synthetic 12x460", synthetic_2pl(12, 460, seed)["Y"]),
             ("continuous 12x41871", synthetic_2pl(12, 41871, seed, continuous=True)["Y"])]
    if Y_oc is not None:
        cases.insert(2, ("opencompass 12x41871", Y_oc))
    for name, Y in cases:
        out[name] = {}
        for model in ("1pl", "2pl", "3pl", "4pl"):
            r, seconds, _ = timed_median(lambda: fit_irt(Y, model, seed=seed), repeats)
            out[name][model] = {"seconds": round(seconds, 3), "n_iter": r.n_iter, "converged": r.converged}
        print(f"  {name}: " + ", ".join(f"{m} {v['seconds']:.2f} s" for m, v in out[name].items()))
    return out


def load_opencompass(root: Path) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    """The 0/1 matrix and the authors' parameters, or None when the files are absent."""
    base = root / "opencompass-irt"
    files = [base / "data" / "combine.csv", base / "results" / "item_parameters.csv",
             base / "results" / "student_abilities.csv"]
    if not all(f.exists() for f in files):
        return None
    Y = np.loadtxt(files[0], delimiter=",")
    items = np.genfromtxt(files[1], delimiter=",", names=True)
    ref = {k: np.asarray(items[k]) for k in ("difficulty", "discrimination", "guessing", "feasibility")}
    ref["ability"] = np.genfromtxt(files[2], delimiter=",", names=True)["ability"]
    return Y, ref


def environment() -> dict[str, Any]:
    """Versions and CPU facts that the numbers depend on."""
    import scipy

    env = {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
           "cpu_count": os.cpu_count(), "machine": platform.machine()}
    try:
        env["load_average_at_start"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    for mod in ("torch", "pyro", "py_irt"):
        try:
            m = __import__(mod)
            env[mod] = getattr(m, "__version__", "installed")
            if mod == "torch":
                env["torch_threads"] = m.get_num_threads()
        except Exception as exc:
            env[mod] = f"not importable: {type(exc).__name__}"
    if env.get("py_irt") == "installed":
        from importlib.metadata import version

        env["py_irt"] = version("py-irt")
    return env


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print it and write JSON to ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=2000, help="py-irt SVI steps (its default: 2000)")
    ap.add_argument("--oc-items", type=int, default=5000,
                    help="opencompass columns for the py-irt comparison, seeded subset (0 = all 41,871)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3, help="our fits are timed as the median of this many runs")
    ap.add_argument("--skip-pyirt", action="store_true", help="time ours only")
    ap.add_argument("--out", type=Path, default=Path("bench-out/irt_vs_pyirt.json"))
    args = ap.parse_args(argv)

    result: dict[str, Any] = {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                              "environment": environment()}
    have_pyirt, why = (False, "skipped (--skip-pyirt)") if args.skip_pyirt else pyirt_available()
    result["pyirt"] = {"available": have_pyirt, "error": why, "install": PYIRT_HINT}
    if not have_pyirt:
        print(f"py-irt NOT used: {why}\n  to compare, install it: {PYIRT_HINT}")

    oc = load_opencompass(data_root())
    print("scale (ours):")
    result["scale"] = scale(args.seed, oc[0] if oc else None, args.repeats)

    print("synthetic 2PL 100 x 1000:")
    syn = synthetic_2pl(100, 1000, args.seed)
    result["synthetic"] = compare(syn["Y"], syn, None, "", args, have_pyirt)

    if oc is None:
        result["opencompass"] = {"skipped": f"real data not found under {data_root()}; set EVALSIFT_DATA"}
        print(result["opencompass"]["skipped"])
    else:
        Y, ref = oc
        cols = np.arange(Y.shape[1])
        if 0 < args.oc_items < Y.shape[1]:
            cols = np.sort(np.random.default_rng(args.seed).choice(Y.shape[1], args.oc_items, replace=False))
        sub_ref = {k: (v if k == "ability" else v[cols]) for k, v in ref.items()}
        print(f"opencompass 12 x {len(cols)} (seeded column subset):" if len(cols) < Y.shape[1]
              else "opencompass 12 x 41871:")
        result["opencompass"] = compare(Y[:, cols], None, sub_ref, "authors", args, have_pyirt)
        result["opencompass"]["columns"] = "all" if len(cols) == Y.shape[1] else f"{len(cols)} seeded (seed {args.seed})"

    report(result)
    write_json(args.out, result, default=float)
    return result


def report(result: dict[str, Any]) -> None:
    """Print ratios and the agreement tables."""
    for name in ("synthetic", "opencompass"):
        part = result.get(name, {})
        if "agreement" not in part:
            continue
        print(f"\n{name} {part['shape']}: seconds {part['seconds']}")
        if part["time_ratios"]:
            print("  time ratios: " + ", ".join(f"{k} = {v}x" for k, v in part["time_ratios"].items()))
        for pair, cs in part["agreement"].items():
            print(f"  {pair:28s} " + "  ".join(f"{k} r={v['pearson']:.3f} rho={v['spearman']:.3f}"
                                                for k, v in cs.items()))
        for k, v in part["errors"].items():
            print(f"  {k} failed: {first_line(v)}")


if __name__ == "__main__":
    main()

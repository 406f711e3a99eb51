"""No file a results folder names runs code (issue 42, item 1): ``omni curve --normalise cross-model`` loads the
models again, and a samples folder's ``omni.json`` names them. A hostile folder whose omni.json names a ``.py``
that writes a marker file, or a ``.pkl`` whose ``__reduce__`` does, must not run either: the user names a model
file with ``--model``, and the files omni.json records are checked before anything loads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evalsift.cli import main

MODEL_PY = '''
import numpy as np
from evalsift.omninput import FunctionModel, InputSpace

WEIGHTS = np.array([{w}])


def build(**options):
    """z = a weighted sum of the 3 digits (0..3 each), a logit-like score; rule:toy judges 'the digits sum to a
    multiple of 5' (info's modulus)."""
    m = FunctionModel(lambda x: np.asarray(x) @ WEIGHTS, name="{name}", output="logit", fingerprint="{name}-v1")
    m.info["modulus"] = 5
    return m, InputSpace(3, 4)
'''


class Payload:
    """Unpickling this calls open(marker, 'w'): the file appears if anything unpickles it."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _sample(out: Path, *argv: str) -> Path:
    assert main(["--quiet", "omni", "sample", *argv, "--sampler", "uniform", "--steps", "4", "--walkers", "32",
                 "--chains", "2", "--bin-width", "1", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Two models of one space (3 digits 0..3): a .py FunctionModel and a pickled logistic regression."""
    import joblib
    from sklearn.linear_model import LogisticRegression

    root = tmp_path_factory.mktemp("loaders")
    py = root / "digitsum.py"
    py.write_text(MODEL_PY.format(w="1.0, 1.0, 1.0", name="digitsum"), encoding="utf-8")
    py2 = root / "weighted.py"
    py2.write_text(MODEL_PY.format(w="2.0, 1.0, 0.5", name="weighted"), encoding="utf-8")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(200, 3)).astype(float)
    pkl = root / "clf.pkl"
    joblib.dump(LogisticRegression().fit(X, (X.sum(axis=1) >= 5).astype(int)), pkl)
    a = _sample(root / "a", "--model", str(py))
    a2 = _sample(root / "a2", "--model", str(py2))
    b = _sample(root / "b", "--model", str(pkl), "--positions", "3", "--values", "4")
    return {"root": root, "py": py, "py2": py2, "pkl": pkl, "a": a, "a2": a2, "b": b}


def _curve(folders: dict, out: Path, *extra: str) -> int:
    # rule:toy with the models' modulus 5: the digits sum to 0 or 5
    return main(["--quiet", "omni", "curve", "--samples", f"{folders['a']},{folders['a2']}", "--judgments", "rule:toy",
                 "--per-bin", "3", "--boot", "20", "--min-distinct", "1", "--normalise", "cross-model",
                 "--out", str(out), *extra])


def _hostile_copy(folders: dict, root: Path) -> tuple[Path, Path, Path]:
    """Copies of both samples folders whose omni.json names an evil .py and an evil .pkl instead; the marker
    file either would create."""
    import joblib
    import shutil

    marker = root / "PAYLOAD_RAN"
    evil_py = root / "evil.py"
    payload = f"\nopen({str(marker)!r}, 'w').write('ran')\n"  # runs when the file is imported
    evil_py.write_text(MODEL_PY.format(w="1.0, 1.0, 1.0", name="digitsum") + payload, encoding="utf-8")
    evil_pkl = root / "evil.pkl"
    joblib.dump(Payload(marker), evil_pkl)
    out = []
    for key, evil in (("a", evil_py), ("b", evil_pkl)):
        dst = root / f"shared-{key}"
        shutil.copytree(folders[key], dst)
        meta = json.loads((dst / "omni.json").read_text())
        meta["model"]["spec"] = str(evil)
        meta["model"]["files"] = None  # an attacker controls omni.json: nothing in it can be trusted
        (dst / "omni.json").write_text(json.dumps(meta))
        out.append(dst)
    assert not marker.exists()
    return out[0], out[1], marker


def test_a_model_file_named_in_omni_json_is_never_loaded(folders, tmp_path, capsys):
    a, b, marker = _hostile_copy(folders, tmp_path)
    code = main(["omni", "curve", "--samples", f"{a},{b}", "--judgments", str(tmp_path / "none.jsonl"),
                 "--normalise", "cross-model", "--out", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("error:") == 1, err
    assert not marker.exists()                                                  # neither payload ran
    assert "evil.py" in err and "does not load a model file that a results folder names" in err
    assert "--model SPEC, once per --samples folder" in err                     # how to name it instead
    assert not (tmp_path / "c").exists()                                        # refused before any output
    # the payloads are live: loading either the way a loader would creates the marker
    import joblib
    import runpy

    joblib.load(tmp_path / "evil.pkl")
    assert marker.exists()
    marker.unlink()
    runpy.run_path(str(tmp_path / "evil.py"))
    assert marker.exists()


def test_a_model_file_the_user_names_is_checked_against_omni_json_before_it_loads(folders, tmp_path, capsys):
    # the user types the evil files, but omni.json records the fingerprints of the files that were sampled: the
    # bytes differ, so neither is imported nor unpickled
    _, _, marker = _hostile_copy(folders, tmp_path)
    code = main(["omni", "curve", "--samples", f"{folders['a']},{folders['b']}", "--judgments", "rule:toy",
                 "--normalise", "cross-model", "--model", str(tmp_path / "evil.py"), "--model",
                 str(tmp_path / "evil.pkl"), "--out", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 2 and "its files are not those that made the samples" in err, err
    assert not marker.exists()


def test_the_models_the_user_names_are_loaded_and_compared(folders, tmp_path, capsys):
    meta = json.loads((folders["a"] / "omni.json").read_text())["model"]
    assert meta["spec"] == str(folders["py"]) and len(meta["files"]) == 16      # the .py's bytes, hashed
    out = tmp_path / "c"
    assert _curve(folders, out, "--model", str(folders["py"]), "--model", str(folders["py2"])) == 0, \
        capsys.readouterr().err
    res = json.loads((out / "results.json").read_text())
    assert res["normalise"] == "cross-model" and res["cross_model"] is not None
    assert [m["model"] for m in res["models"]] == ["digitsum", "weighted"]
    # a .pkl the user names is hashed before it is unpickled, and matches what omni.json recorded
    from evalsift.omninput.zoo import files_fingerprint

    assert files_fingerprint(str(folders["pkl"])) == json.loads((folders["b"] / "omni.json").read_text())["model"][
        "files"]


def test_model_option_errors(folders, tmp_path, capsys):
    # a model file omni.json names is not loaded even when it is the file that was sampled: the user names it
    assert _curve(folders, tmp_path / "c") == 2
    assert "does not load a model file that a results folder names" in capsys.readouterr().err
    assert _curve(folders, tmp_path / "c", "--model", str(folders["py"])) == 2      # one of two
    assert "given 1 times for 2 --samples folders" in capsys.readouterr().err
    assert _curve(folders, tmp_path / "c", "--model", "digits-lr", "--model", str(folders["py2"])) == 2
    assert "not by the built-in digits-lr" in capsys.readouterr().err
    code = main(["--quiet", "omni", "curve", "--samples", str(folders["a"]), "--judgments", "x.jsonl",
                 "--model", str(folders["py"]), "--out", str(tmp_path / "d")])
    assert code == 2 and "--model applies to --normalise cross-model" in capsys.readouterr().err

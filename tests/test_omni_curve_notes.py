"""What ``omni curve`` says about thin judgments (issue 42, item 5): with one label per bin the bootstrap of the
labels within each bin cannot vary, so no interval is printed (once: a zero-width "95% interval [0.2032,
0.2032]"), and the report says how many inputs were judged per bin (once: "10 judged per bin" for 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsift.cli import main
from evalsift.omninput import OmniSamples

MODEL_PY = '''
import numpy as np
from evalsift.omninput import FunctionModel, InputSpace


def build(**options):
    """z = the sum of 3 digits 0..3 (64 inputs, 10 values of z)."""
    return FunctionModel(lambda x: np.asarray(x).sum(axis=1).astype(float), name="digitsum", output="logit",
                         fingerprint="digitsum-v1"), InputSpace(3, 4)
'''


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    root = tmp_path_factory.mktemp("curve_notes")
    (root / "m.py").write_text(MODEL_PY, encoding="utf-8")
    out = root / "s"
    assert main(["--quiet", "omni", "sample", "--model", str(root / "m.py"), "--sampler", "exact", "--bin-width", "1",
                 "--out", str(out)]) == 0
    return out


def _judged(samples: Path, path: Path, per_bin: int, label) -> Path:
    reps = OmniSamples.load(samples).representatives(per_bin, seed=0)
    rows = [{"item_id": i, "label": int(label(x, k))} for k, (i, x) in enumerate(zip(reps.ids, reps.x))]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_one_label_per_bin_gives_no_interval_and_the_report_says_one_judged(samples, tmp_path, capsys):
    # one input judged per bin (all 10 bins: sums 0..9), yes where the digits sum to 5 or more
    j = _judged(samples, tmp_path / "j.jsonl", 1, lambda x, k: x.sum() >= 5)
    out = tmp_path / "c"
    assert main(["omni", "curve", "--samples", str(samples), "--judgments", str(j), "--boot", "50", "--min-distinct",
                 "1", "--out", str(out)]) == 0
    cap = capsys.readouterr()
    row = next(ln for ln in cap.out.splitlines() if ln.strip().startswith("digitsum") and "no interval" in ln)
    assert "no interval (one label per bin)" in row and "[" not in row          # no zero-width [a, a]
    assert "note: digitsum: no interval (one label per bin)" in cap.err
    res = json.loads((out / "results.json").read_text())
    m = res["models"][0]
    assert m["aupr"] is not None and "aupr" not in m["intervals"] and m["intervals"]["none"] == "one label per bin"
    assert m["judged_per_bin"] == {"min": 1, "max": 1, "bins": 10}
    html = (out / "report.html").read_text()
    assert "1 judged per bin (10 bins judged)" in html and "10 representative(s) judged per bin" not in html
    assert "no interval (one label per bin)" in html
    capsys.readouterr()
    assert main(["--quiet", "omni", "curve", "--samples", str(samples), "--judgments", str(j), "--boot", "50",
                 "--min-distinct", "1", "--json", "--out", str(tmp_path / "d")]) == 0
    summary = json.loads(capsys.readouterr().out)["models"][0]
    assert summary["aupr_interval"] is None and summary["aupr_interval_note"] == "no interval (one label per bin)"


def test_mixed_labels_in_a_bin_give_an_interval_of_positive_width(samples, tmp_path, capsys):
    # two judged per bin, the second of each pair a yes: every bin holds a yes, and bins with a no vary
    j = _judged(samples, tmp_path / "j.jsonl", 2, lambda x, k: k % 2 == 1 or x.sum() >= 7)
    out = tmp_path / "c"
    assert main(["--quiet", "omni", "curve", "--samples", str(samples), "--judgments", str(j), "--boot", "200",
                 "--min-distinct", "1", "--out", str(out)]) == 0
    m = json.loads((out / "results.json").read_text())["models"][0]
    lo, hi = m["intervals"]["aupr"]
    assert hi > lo and "none" not in m["intervals"]
    j_ = m["judged_per_bin"]
    assert j_["max"] == 2 and j_["bins"] == 10  # bins 0 and 9 hold one input each (0,0,0 and 3,3,3): min 1
    assert j_["min"] == 1
    assert f"1-2 judged per bin ({j_['bins']} bins judged)" in (out / "report.html").read_text()

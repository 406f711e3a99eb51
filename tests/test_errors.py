"""The exception hierarchy, its structured context, and the one-message-shape helpers."""

import re
import sys
from pathlib import Path

import pytest

from evalsift.errors import (DataError, EvalsiftError, ParameterError, UnknownNameError, check_choice,
                             missing_dependency, suggest, unknown_name_message)

SRC = Path(__file__).resolve().parents[1] / "src" / "evalsift"


def test_context_travels_with_the_error():
    e = DataError("bad", field="output", item_id=7, system="B", hint="fix it")
    assert e.to_dict() == {"error": "DataError", "message": "bad", "field": "output", "item_id": "7", "system": "B",
                           "hint": "fix it"}
    assert isinstance(e, ValueError) and isinstance(e, EvalsiftError)
    assert str(UnknownNameError("Unknown x 'y'.")) == "Unknown x 'y'."  # not KeyError's quoted repr


def test_one_shape_for_unknown_names_and_choices():
    assert unknown_name_message("selector", "metrc_var", ["random", "metric_var"]) == \
        "Unknown selector 'metrc_var'. Did you mean 'metric_var'? Available: metric_var, random"
    with pytest.raises(ParameterError) as e:
        check_choice("kind", "chrff", ("unigram", "chrf"), where="diversity")
    assert str(e.value) == "diversity: kind='chrff' is not one of: unigram, chrf. Did you mean 'chrf'?"
    assert e.value.field == "kind" and suggest("zzz", ["abc"]) == ""


def test_no_module_builds_its_own_suggestion():
    # every "Did you mean" comes from errors.suggest: no other module calls difflib
    offenders = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if p.name != "errors.py"
                 and re.search(r"\bdifflib\b|get_close_matches", p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_every_install_hint_names_an_extra_that_exists():
    pyproject = (SRC.parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    extras = set(re.findall(r"^(\w+) = \[", pyproject.split("[project.optional-dependencies]")[1].split("\n[")[0],
                            re.M))
    named = set()
    for p in SRC.rglob("*.py"):
        named |= set(re.findall(r'missing_dependency\(\s*"[^"]+",\s*"(\w+)"', p.read_text(encoding="utf-8")))
    assert named and named <= extras, f"install hints name extras {sorted(named - extras)} that pyproject lacks"
    assert "pip install 'evalsift[embed]'" in str(missing_dependency("x", "embed", "y"))
    assert "evalsift[" not in str(missing_dependency("sacrebleu", None, "BLEU"))


def test_missing_model_message_does_not_blame_the_network():
    pytest.importorskip("sentence_transformers", reason="st: encoders need evalsift[embed]")
    from evalsift.embed import embed_texts

    with pytest.raises(DataError) as e:
        embed_texts(["x"], "st:nobody/no-such-model-here", cache=False, progress=False)
    text = str(e.value)
    assert "not in the local Hugging Face cache" in text and "never downloads" in text
    assert "huggingface.co" not in text and "connect" not in text.lower()


def test_without_the_embed_extra_the_error_names_the_extras_and_encoder_tfidf(monkeypatch):
    """sentence-transformers absent (its import fails as an uninstalled module's does): the neural encoder's error
    names both extras and the encoder that needs none, and that encoder runs."""
    from evalsift.embed import embed_texts
    from evalsift.embed.encoders import MiniLMEncoder
    from evalsift.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # `import sentence_transformers` raises
    with pytest.raises(MissingDependencyError) as e:  # a new instance: get_encoder's may hold a loaded model
        embed_texts(["a text"], MiniLMEncoder(), cache=False, progress=False)
    text = str(e.value)
    assert "pip install 'evalsift[embed]'" in text and "evalsift[onnx]" in text and "--encoder tfidf" in text, text
    assert embed_texts(["a text", "another text"], "tfidf", cache=False, progress=False).shape[0] == 2


def test_without_the_plots_and_metrics_extras_the_commands_say_which_extra(monkeypatch, tmp_path, capsys):
    """matplotlib and sacrebleu absent (imports fail as uninstalled modules' do): a bench run writes its results
    and notes the figure it left out, `profile` (whose figures are its report) fails before writing anything, and
    BLEU names evalsift[metrics] while ROUGE needs nothing. .ci/base_smoke.sh checks the same on a real base
    install."""
    from evalsift.cli import main
    from evalsift.errors import MissingDependencyError
    from evalsift.metrics import rouge, sentence_bleu

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    monkeypatch.setitem(sys.modules, "sacrebleu", None)
    assert main(["bench", "subset", "--data", "demo", "--human-metric", "human", "--methods", "random",
                 "--props", "0.5", "--seeds", "1", "--out", str(tmp_path / "bs"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert (tmp_path / "bs" / "results.json").is_file() and not (tmp_path / "bs" / "subset.png").exists()
    assert "left out subset.png" in err and "pip install 'evalsift[plots]'" in err, err
    assert main(["profile", "--data", "demo", "--metric", "human", "--dims", "length", "--samples", "20",
                 "--out", str(tmp_path / "prof")]) != 0
    assert "evalsift[plots]" in capsys.readouterr().err and not (tmp_path / "prof").exists()
    assert rouge("the cat sat", "the cat sat") == 1.0
    with pytest.raises(MissingDependencyError) as e:
        sentence_bleu("the cat", ["the cat"])
    assert "pip install 'evalsift[metrics]'" in str(e.value) and "ROUGE-L" in str(e.value), e.value

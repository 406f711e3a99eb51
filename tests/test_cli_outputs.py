"""A failing command leaves no new ``--out`` folder (or file) behind, and never touches one that was there.

Every command that takes ``--out`` is run in-process with an input that fails after its output folder was
made (the ``note: created folder`` line shows it was), under a parent folder that does not exist yet: exit 2,
and neither the folder nor the parent is left. The folders a command created are removed again, with what it
wrote there, on any failure (an error, an internal error, Ctrl-C); what a rerun resumes from stays (bench's
``tasks.jsonl``, omni sample's checkpoint, judge's verdicts). Results are written whole or not at all
(``evalsift.io._common.atomic_file``), so a folder of earlier results holds the old file or the new one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalsift.cli import main
from evalsift.cli._common import out_dir, out_file, outputs_undone_on_failure
from evalsift.io._common import atomic_file


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("outputs")
    (d / "picks.jsonl").write_text('{"item_id": "0"}\n{"item_id": "1"}\n')
    (d / "unknown.jsonl").write_text('{"item_id": "nope"}\n')
    from evalsift.store import Store

    st = Store(d / "work.db")
    st.create_project("pairs", kind="pairwise", mode="fixed", settings={"a": "A", "b": "B", "systems": ["A", "B"]})
    st.close()
    return d


def cases(f: Path, new: Path) -> list[tuple[str, list[str], bool]]:
    """(name, argv, whether it fails after its output was created): ``new`` is a folder that does not exist."""
    data = ["--data", "demo"]
    bench = ["--methods", "random", "--seeds", "1"]
    return [
        ("select", ["select", "metric_var", *data, "--metric", "nope", "--budget", "5",
                    "--out", str(new / "picks.jsonl")], True),
        ("select anchors", ["select", "anchors", *data, "--metric", "nope", "--budget", "5",
                            "--out", str(new / "anchors.jsonl")], True),
        ("estimate", ["estimate", *data, "--system", "A", "--metric", "human", "--items", str(f / "missing.jsonl"),
                      "--out", str(new / "est")], True),
        ("arena", ["arena", "--data", str(f / "missing.jsonl"), "--out", str(new / "lb")], True),
        ("winrate", ["winrate", "--data", str(f / "missing.jsonl"), "--baseline", "A", "--out", str(new / "wr")], True),
        ("judge", ["judge", *data, "--items", str(f / "unknown.jsonl"), "--oracle", "metric:human", "--a", "A",
                   "--b", "B", "--out", str(new / "j.jsonl")], True),
        ("rank", ["rank", *data, "--human-metric", "nope", "--out", str(new / "rank")], False),
        ("profile", ["profile", *data, "--metric", "nope", "--out", str(new / "prof")], True),
        ("omni sample", ["omni", "sample", "--model", "hf-lm:" + str(f / "no-model"), "--out", str(new / "omni")],
         True),
        ("omni curve", ["omni", "curve", "--samples", str(f / "no-samples"), "--judgments", "proxy:digits",
                        "--out", str(new / "curve")], False),
        ("bench pairwise", ["bench", "pairwise", *data, "--oracle-metric", "nope", *bench, "--out", str(new / "bp")],
         True),
        ("bench subset", ["bench", "subset", *data, "--human-metric", "nope", *bench, "--out", str(new / "bs")], True),
        ("bench calibration", ["bench", "calibration", *data, "--oracle", "metric:nope", "--no-synthetic", "--runs", "1",
                               "--methods", "random", "--out", str(new / "bc")], True),
        ("bench estimate", ["bench", "estimate", "--data", str(f / "missing.jsonl"), "--out", str(new / "be")], True),
        ("embed export", ["embed", "export", "--data", str(f / "missing.jsonl"), "--encoder", "tfidf",
                          "--out", str(new / "v.npz")], True),
        ("annotate export", ["annotate", "export", "--db", str(f / "work.db"), "--project", "pairs", "--format", "arena",
                             "--out", str(new / "battles.jsonl")], True),
        ("data example", ["data", "example", "nosuch", "--out", str(new / "ex")], False),
    ]


NAMES = [name for name, _, _ in cases(Path("/F"), Path("/N"))]


@pytest.mark.parametrize("name", NAMES)
def test_a_failing_command_leaves_no_new_out_folder(name, inputs, tmp_path, capsys):
    new = tmp_path / "new"  # does not exist: the command creates it (with a note) and, failing, removes it
    (_, argv, creates), = [c for c in cases(inputs, new) if c[0] == name]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.strip().splitlines()[-1].startswith("error: "), err
    assert ("note: created folder" in err) == creates, err  # it did make the folder before it failed
    assert not new.exists(), sorted(str(p) for p in new.rglob("*"))
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_every_command_with_out_is_in_the_list():
    """A new command that takes --out joins the list above, or this fails."""
    import argparse

    from evalsift.cli import build_parser

    def walk(parser, words):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if subs:
            for name, sp in subs[0].choices.items():
                yield from walk(sp, [*words, name])
        elif any("--out" in a.option_strings for a in parser._actions):
            yield " ".join(words)

    with_out = set(walk(build_parser(), []))
    # 'select anchors' is `select` with the method anchors; the groups' commands are two words
    listed = {n if n.split()[0] in ("omni", "bench", "embed", "annotate", "data") else n.split()[0] for n in NAMES}
    assert with_out == listed


def test_a_folder_that_was_there_keeps_its_old_files(inputs, tmp_path, capsys):
    old = tmp_path / "lb"
    old.mkdir()
    (old / "results.json").write_text('{"old": 1}')
    (old / "mine.txt").write_text("the user's")
    assert main(["arena", "--data", str(inputs / "missing.jsonl"), "--out", str(old / "sub")]) == 2
    assert main(["arena", "--data", str(inputs / "missing.jsonl"), "--out", str(old)]) == 2
    capsys.readouterr()
    assert sorted(p.name for p in old.iterdir()) == ["mine.txt", "results.json"]
    assert (old / "results.json").read_text() == '{"old": 1}' and (old / "mine.txt").read_text() == "the user's"


def test_an_existing_output_file_is_never_removed(inputs, tmp_path, capsys):
    picks = tmp_path / "picks.jsonl"
    picks.write_text('{"item_id": "7"}\n')
    assert main(["select", "metric_var", "--data", "demo", "--metric", "nope", "--budget", "5",
                 "--out", str(picks)]) == 2
    capsys.readouterr()
    assert picks.read_text() == '{"item_id": "7"}\n'


def test_ctrl_c_and_internal_errors_undo_the_new_folders_too(tmp_path):
    for failure in (KeyboardInterrupt, ValueError, OSError):
        with pytest.raises(failure), outputs_undone_on_failure():
            folder = out_dir(str(tmp_path / "a" / "b"))
            (folder / "results.json").write_text("{}")  # half of what the command writes
            out_file(str(tmp_path / "c" / "picks.jsonl")).write_text("x")
            raise failure("stopped")
        assert sorted(tmp_path.iterdir()) == [], failure


def test_what_a_rerun_resumes_from_is_kept(tmp_path):
    # bench keeps tasks.jsonl in --out; omni sample its checkpoint; judge the verdicts in its --out file
    with pytest.raises(KeyboardInterrupt), outputs_undone_on_failure():
        folder = out_dir(str(tmp_path / "bench" / "out"), progress=("tasks.jsonl",))
        (folder / "tasks.jsonl").write_text('{"key": "k"}\n')
        out_dir(str(tmp_path / "nothing-yet"), progress=("tasks.jsonl",))  # no task finished there: removed
        out_file(str(tmp_path / "j.jsonl"), progress=True).write_text('{"item_id": "1"}\n')
        out_file(str(tmp_path / "empty.jsonl"), progress=True).touch()  # nothing written: removed
        raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench", "j.jsonl"]
    assert (tmp_path / "bench" / "out" / "tasks.jsonl").read_text() == '{"key": "k"}\n'


def test_an_atomic_write_that_fails_leaves_the_old_file(tmp_path):
    path = tmp_path / "results.json"
    path.write_text('{"old": 1}')
    with pytest.raises(KeyboardInterrupt), atomic_file(path) as fh:
        fh.write('{"new": ')
        raise KeyboardInterrupt
    assert path.read_text() == '{"old": 1}' and sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]

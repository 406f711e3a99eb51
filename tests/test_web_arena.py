"""Arena projects in the annotation app: a real SQLite store, the Workspace, a real uvicorn server and
the command line. The simulated people answer a synthetic league with known strengths."""

import json

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the annotation app needs evalsift[web]")

from evalsift.arena.bt import fit_bt_ppi  # noqa: E402
from evalsift.errors import DataError, ParameterError  # noqa: E402
from evalsift.oracle import Judgment  # noqa: E402
from evalsift.store import Store  # noqa: E402
from evalsift.web import Workspace  # noqa: E402

from _web import LEAGUE, Server, call, league_pool, league_value  # noqa: E402


def play(work, pid, who, n=None):
    """A person answers battles through the Workspace until there is no work (or ``n`` answers)."""
    k = 0
    while n is None or k < n:
        a = work.next_for(who)
        if a.get("done"):
            return k, a
        row = work.store.assignment(a["assignment_id"])
        first, second = (row["a"], row["b"]) if row["shown_order"] == "ab" else (row["b"], row["a"])
        work.submit(who, a["assignment_id"], answer="1" if league_value(row["item_id"], first, second) else "2")
        k += 1
    return k, None


def make(tmp_path, **kw):
    work = Workspace(Store(tmp_path / "w.db"))
    n, k = kw.pop("n", 30), kw.pop("k", 4)
    pool = kw.pop("pool", None) or league_pool(n=n, k=k)
    pid, admin = work.create_arena("league", pool, **kw)
    aid, token = work.store.add_annotator(pid, "alice")
    return work, pid, admin, work.store.annotator_by_token(token), token


def test_units_are_every_prompt_for_every_pair_and_draws_keep_their_probability(tmp_path):
    # blind after the vote: no battle is held back to keep it blind (tests/test_web_arena_blind.py has those)
    work, pid, _, who, _ = make(tmp_path, n=20, k=4, allocation="uniform", max_battles=30, blind_after_vote=True)
    assert work.store.queue_state(pid)["units"] == 20 * 6
    k, done = play(work, pid, who)
    assert k == 30 and done["final"] and "all its battles" in done["reason"]
    rows = [j for j in work.store.judgments(pid) if j.kind == "human"]
    # uniform: a pair with probability 1/6 (every pair stays open), then a prompt among the pair's open ones
    seen: dict = {}
    for j in rows:
        pair = (j.a, j.b)
        assert j.detail["prob"] == pytest.approx(1 / (6 * (20 - seen.get(pair, 0))))
        seen[pair] = seen.get(pair, 0) + 1
    assert len({(j.item_id, j.a, j.b) for j in rows}) == 30  # nobody is given the same battle twice
    assert {j.shown_order for j in rows} == {"ab", "ba"}  # sides randomised


def test_the_live_leaderboard_is_the_weighted_fit_of_the_stored_battles(tmp_path):
    work, pid, _, who, _ = make(tmp_path, n=30, k=4, max_battles=120, stop="rank-set:1")
    play(work, pid, who)
    ar = work.status(pid)["arena"]
    assert ar["human_battles"] == 120 and ar["decided"] and not ar["answered"]
    # the same fit from the stored records alone: each battle weighted by 1 / (T * its draw probability)
    js = [j for j in work.store.judgments(pid) if j.kind == "human"]
    from evalsift.arena.battles import Battles

    systems = ["S0", "S1", "S2", "S3"]
    b = Battles.from_arrays(systems, [systems.index(j.a) for j in js], [systems.index(j.b) for j in js],
                            [{"a": 1.0, "b": 0.0, "tie": 0.5}[j.verdict] for j in js],
                            prob=[len(js) * j.detail["prob"] for j in js])
    # 120 battles of 4 systems (60 each, under 400): the default estimator prints the empirical-Bayes shrunk scores
    fit = fit_bt_ppi(b, np.arange(b.n), [], prior="empirical")
    by_name = {m["name"]: m["score"] for m in ar["models"]}
    assert [by_name[s] for s in systems] == pytest.approx(list(fit.scores), abs=0.01)
    assert ar["models"][0]["name"] == "S0" and ar["models"][-1]["name"] == "S3"  # the league's order at the ends


def test_the_stop_rule_answers_and_then_nobody_gets_more(tmp_path):
    work, pid, _, who, _ = make(tmp_path, n=100, k=3, max_battles=300, first=25, stop="top-k:1")
    k, done = play(work, pid, who)
    ar = work.status(pid)["arena"]
    assert ar["answered"] and done["final"] and done["reason"] == "the question is answered"
    assert k == ar["stop"]["at"] in ar["stop"]["planned_looks"] and k < 300
    assert ar["stop"]["top"] == ["S0"]
    bob = work.store.annotator_by_token(work.store.add_annotator(pid, "bob")[1])
    assert work.next_for(bob)["final"]


def test_judges_verdicts_sharpen_the_board_and_are_not_human_battles(tmp_path):
    pool = league_pool(n=40, k=4)
    systems = list(pool.systems)
    rng = np.random.default_rng(0)
    judge = []  # a judge that agrees with the league's coin 80% of the time, on every battle
    for i, a in enumerate(systems):
        for b in systems[i + 1:]:
            for item in pool.item_ids:
                right = league_value(item, a, b) == 1.0
                says_a = right if rng.random() < 0.8 else not right
                judge.append(Judgment(item_id=item, a=a, b=b, verdict="a" if says_a else "b", annotator="j",
                                      kind="llm"))
    work, pid, _, who, _ = make(tmp_path, pool=pool, max_battles=80, allocation="uniform", judges={"judge:noisy": judge})
    st = work.status(pid)
    assert st["judgments"]["done"] == 0 and st["arena"]["judge_verdicts"] == 240
    play(work, pid, who)
    ar = work.status(pid)["arena"]
    assert ar["human_battles"] == 80 and ar["judges"] == ["judge:noisy"]
    assert 0 < ar["judge_weights"]["judge:noisy"] <= 1
    assert 0.6 < ar["judge_agreement"]["judge:noisy"]["agreement"] < 1
    # the judge narrows the intervals against the same people's battles alone
    work2, pid2, _, who2, _ = make(tmp_path / "alone", pool=pool, max_battles=80, allocation="uniform")
    play(work2, pid2, who2)
    alone = {m["name"]: m["interval"][1] - m["interval"][0] for m in work2.status(pid2)["arena"]["models"]}
    with_judge = {m["name"]: m["interval"][1] - m["interval"][0] for m in ar["models"]}
    assert np.mean([with_judge[s] for s in systems]) < np.mean([alone[s] for s in systems])


def test_undo_takes_a_battle_out_of_the_board(tmp_path):
    work, pid, _, who, _ = make(tmp_path, n=20, k=3, max_battles=50, blind_after_vote=True)
    play(work, pid, who, n=12)
    assert work.status(pid)["arena"]["human_battles"] == 12
    again = work.undo(who)
    assert work.status(pid)["arena"]["human_battles"] == 11
    row = work.store.assignment(again["assignment_id"])
    work.submit(who, again["assignment_id"], answer="0")
    js = [j for j in work.store.judgments(pid) if j.kind == "human"]
    assert len(js) == 12 and js[-1].verdict == "tie" and js[-1].detail["prob"] == row["prob"]
    assert work.status(pid)["arena"]["human_battles"] == 12


def test_bad_arena_settings_are_refused_naming_the_field(tmp_path):
    work = Workspace(Store(tmp_path / "w.db"))
    pool = league_pool(n=5, k=4)
    for kw, field in (({"systems": ["S0", "S1"]}, "systems"), ({"stop": "top-3"}, "stop"), ({"alpha": 1.5}, "alpha"),
                      ({"allocation": "greedy"}, "allocation"), ({"first": 1}, "first"),
                      ({"systems": ["S0", "S1", "S1"]}, "systems")):
        with pytest.raises((ParameterError, DataError)) as e:
            work.create_arena("x", pool, **kw)
        assert e.value.to_dict().get("field") == field, (kw, e.value)
    stray = [Judgment(item_id="nope", a="S0", b="S1", verdict="a", annotator="j", kind="llm")]
    with pytest.raises(DataError, match="not a battle of this arena"):
        work.create_arena("x", pool, judges={"judge:j": stray})
    assert work.store.projects() == []  # nothing half-made


def test_the_http_api_serves_battles_and_the_live_board(tmp_path):
    work, pid, admin, who, token = make(tmp_path, n=20, k=4, max_battles=40)
    with Server(tmp_path / "w.db") as srv:
        for _ in range(40):
            code, a = call("GET", f"{srv.url}/api/v1/next", token)
            assert code == 200 and not a.get("done")
            assert not ({"a", "b", "system", "systems"} & set(a))  # blind: the systems are never named
            row = work.store.assignment(a["assignment_id"])
            first, second = (row["a"], row["b"]) if row["shown_order"] == "ab" else (row["b"], row["a"])
            code, _ = call("POST", f"{srv.url}/api/v1/judgments", token,
                           {"assignment_id": a["assignment_id"], "verdict": "1" if league_value(row["item_id"], first,
                                                                                             second) else "2"})
            assert code == 200
        code, a = call("GET", f"{srv.url}/api/v1/next", token)
        assert a["done"] and a["final"]
        code, st = call("GET", f"{srv.url}/api/v1/projects/{pid}/status", admin)
    assert code == 200 and st["arena"]["human_battles"] == 40 and len(st["arena"]["models"]) == 4
    assert all(m["rank_set"][0] <= m["rank"] <= m["rank_set"][1] for m in st["arena"]["models"])


def test_annotate_new_arena_on_the_command_line_with_a_metric_judge(tmp_path, capsys, monkeypatch):
    from evalsift.cli import main

    monkeypatch.chdir(tmp_path)

    def run(*argv):
        code = main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    code, out, err = run("annotate", "new", "--arena", "--data", "demo", "--name", "ar", "--proxy", "metric:token_f1",
                         "--max-labels", "300", "--stop", "rank-set:1", "--json")
    assert code == 0, err
    assert "judge metric:token_f1: 900 verdicts on 900 battles" in err
    pid = json.loads(out)["project"]
    code, out, _ = run("annotate", "status", "--project", str(pid))
    assert code == 0 and "arena of 3 systems" in out and "metric:token_f1" in out
    assert "reveal: after each vote the person sees the two models" in out
    assert "open: 0 of at most 300 human battles" in out
    code, out, err = run("annotate", "new", "--arena", "--data", "demo", "--name", "ney", "--proxy", "metric:token_f1",
                         "--allocation", "neyman", "--json")
    assert code == 0, err
    assert Store("evalsift.db").project(json.loads(out)["project"]).settings["arena"]["allocation"] == "neyman"
    code, _, err = run("annotate", "new", "--arena", "--data", "demo", "--name", "ar2", "--a", "A")
    assert code == 2 and "--systems" in err
    code, _, err = run("annotate", "new", "--arena", "--data", "demo", "--name", "ar3", "--stop", "best")
    assert code == 2 and "top-k:K" in err
    code, _, err = run("annotate", "new", "--pairwise", "--data", "demo", "--a", "A", "--b", "B", "--name", "p",
                       "--stop", "top-k:1")
    assert code == 2 and "--stop is an arena setting" in err
    code, out, err = run("annotate", "new", "--pairwise", "--data", "demo", "--a", "A", "--b", "B", "--name", "p",
                         "--json")  # the old form: --max-labels still 200 when not given
    assert code == 0, err
    assert Store("evalsift.db").project(json.loads(out)["project"]).settings["max_labels"] == 200


def test_the_league_is_ranked_within_its_rank_sets_by_the_active_rule(tmp_path):
    """Five systems, 60 prompts, 300 battles by the active rule: the true order lies in every rank-set."""
    work, pid, _, who, _ = make(tmp_path, pool=league_pool(n=60, k=5), max_battles=300, stop="rank-set:1")
    play(work, pid, who)
    models = work.status(pid)["arena"]["models"]
    truth = {f"S{j}": j + 1 for j in range(5)}  # LEAGUE is in decreasing strength
    assert LEAGUE == tuple(sorted(LEAGUE, reverse=True))
    assert all(m["rank_set"][0] <= truth[m["name"]] <= m["rank_set"][1] for m in models)


def test_a_neyman_arena_fills_its_strata_and_weights_them_post_stratified(tmp_path):
    """--allocation neyman in the app: a judge right on some pairs and a coin on the others, 5 systems, 60
    prompts, 300 battles. Every stratum gets its pilot share (2, or the whole stratum) before Neyman's
    rule takes over; the board equals a fit from the stored records alone with each stratum's battles
    weighted by units / battles (the post-stratified weights) and the stratified variance; the true
    order lies in every rank-set."""
    from evalsift.arena.design import design_strata, pilot_allocation

    pool = league_pool(n=60, k=5)
    systems = list(pool.systems)
    judge = _half_right_judge(pool, 1)
    work, pid, _, who, _ = make(tmp_path, pool=pool, max_battles=300, allocation="neyman", stop="rank-set:1",
                                judges={"judge:half": judge})
    k, done = play(work, pid, who)
    assert k == 300 and "all its battles" in done["reason"]
    ar = work.status(pid)["arena"]
    assert ar["allocation"] == "neyman" and ar["strata"].endswith("each")
    state = work.arena(pid)
    label, N = design_strata(state.units, ["judge:half"], 300)
    assert np.array_equal(label, state.strata()[0])
    have = np.bincount(label[np.asarray(state.unit)], minlength=len(N))
    assert np.all(have >= pilot_allocation(N, 300))  # every stratum had its pilot share
    # the same board from the stored records: units per stratum over battles per stratum as the weight
    js = [j for j in work.store.judgments(pid) if j.kind == "human"]
    assert len(js) == 300 and all(0 < j.detail["prob"] <= 1 for j in js)
    # 300 battles of 5 systems (120 each, under 400): the default estimator prints the empirical-Bayes shrunk scores
    fit = fit_bt_ppi(state.units, np.asarray(state.unit), ["judge:half"], verdicts=np.asarray(state.y),
                     prob=(have / N)[label[state.unit]], strata=label[state.unit], prior="empirical")
    by_name = {m["name"]: m["score"] for m in ar["models"]}
    assert [by_name[s] for s in systems] == pytest.approx(list(fit.scores), abs=0.01)
    truth = {f"S{j}": j + 1 for j in range(5)}
    assert all(m["rank_set"][0] <= truth[m["name"]] <= m["rank_set"][1] for m in ar["models"])
    # people went where the judge tosses coins more than those pairs' share of the units: 6 of the 10 pairs have an
    # odd index sum, 60% of the units; a proportional draw of 300 is off by about 0.028 (one s.e.). One run is too
    # noisy a witness (0.75 when this test was written; 0.657 on 4 December, in a run whose other checks all hold),
    # so four judges' coins are played and their mean must beat 60% by two standard errors of a mean of four
    # (measured on 4 December: 0.657, 0.670, 0.680, 0.670)
    shares = [_odd_share(js, systems)]
    for seed in (2, 3, 4):
        (tmp_path / f"coins-{seed}").mkdir()
        w, p, _, person, _ = make(tmp_path / f"coins-{seed}", pool=pool, max_battles=300, allocation="neyman",
                                  stop="rank-set:1", judges={"judge:half": _half_right_judge(pool, seed)})
        play(w, p, person)
        shares.append(_odd_share([j for j in w.store.judgments(p) if j.kind == "human"], systems))
    assert np.mean(shares) > 0.6 + 2 * 0.028 / 2, shares


def _half_right_judge(pool, seed: int) -> list:
    """A judge right on the 4 pairs with an even sum of indices and a coin (seeded) on the 6 others."""
    systems = list(pool.systems)
    rng = np.random.default_rng(seed)
    judge = []
    for i, a in enumerate(systems):
        for b in systems[i + 1:]:
            for item in pool.item_ids:
                right = league_value(item, a, b) == 1.0
                says_a = right if (i + systems.index(b)) % 2 == 0 else rng.random() < 0.5
                judge.append(Judgment(item_id=item, a=a, b=b, verdict="a" if says_a else "b", annotator="j",
                                      kind="llm"))
    return judge


def _odd_share(judgments, systems) -> float:
    """The share of human battles between two systems whose indices have an odd sum (the judge's coin pairs)."""
    return float(np.mean([(systems.index(j.a) + systems.index(j.b)) % 2 == 1 for j in judgments]))


def test_the_admin_page_says_why_a_board_that_looks_settled_has_not_stopped(tmp_path, capsys):
    """Issue 29: the live 90% board can single out the best long before the stop rule may stop, because
    the rule reads its rank-sets only at the planned looks and at alpha / L each. Battles are answered
    through the JSON API until the 90% rank-sets separate S0 from the rest while the project is still
    open; the admin page, the status JSON and ``annotate status`` then say why, with the numbers."""
    from evalsift.cli import main

    from _web import AdminClient

    work, pid, admin, who, token = make(tmp_path, n=40, k=3, alpha=0.1, first=20, max_battles=120, stop="top-k:1")
    with Server(tmp_path / "w.db") as srv:
        for _ in range(120):
            code, a = call("GET", f"{srv.url}/api/v1/next", token)
            assert code == 200 and not a.get("done"), a
            row = work.store.assignment(a["assignment_id"])
            first, second = (row["a"], row["b"]) if row["shown_order"] == "ab" else (row["b"], row["a"])
            code, _ = call("POST", f"{srv.url}/api/v1/judgments", token,
                           {"assignment_id": a["assignment_id"],
                            "verdict": "1" if league_value(row["item_id"], first, second) else "2"})
            assert code == 200
            code, st = call("GET", f"{srv.url}/api/v1/projects/{pid}/status", admin)
            ar = st["arena"]
            rs = {m["name"]: m["rank_set"] for m in ar["models"]}
            if (ar["human_battles"] > 20 and rs and rs["S0"] == [1, 1] and all(rs[s][0] > 1 for s in ("S1", "S2"))
                    and not ar["decided"]):  # past the first look (a board of a handful of battles is asymptotic
                break                        # nonsense, and at 3 battles this one already shows S0 alone)
        else:
            pytest.fail("the 90% board never singled out S0 while the project was open")
        code, html, _ = AdminClient(srv.url).get(f"/admin/{pid}?token={admin}")
    assert code == 200
    n = ar["human_battles"]
    # By hand: looks at 20, 40, 80 and 120 (first 20 doubling, then max_battles): L = 4, each at
    # alpha / L = 0.1 / 4 = 0.025, so the stop reads 97.5% rank-sets. After the first look this league
    # first shows S0 alone at the top of the 90% board at n = 28 battles (measured): the look at 20 has
    # passed unmet, the next is at 40. At 97.5% the same 28 battles leave every system at ranks 1-3.
    assert 20 < n < 40 and ar["stop"]["planned_looks"] == [20, 40, 80, 120] and not ar["answered"]
    assert ar["stop"]["alpha_per_look"] == pytest.approx(0.025)
    why = ar["stop"]["explanation"]
    assert (why["level"], why["look_level"], why["next_look"], why["settled"]) == ("90%", "97.5%", 40, True)
    sentence = (f"S0 looks best at 90%; the stop needs 97.5% (alpha 0.1 / 4 planned looks) at a planned look, and at "
                f"97.5% the {n} human battles do not settle it; next look at 40 human battles ({n} now)")
    assert ar["explanation"] == sentence and why["settled_at_look_level"] is False
    assert [m["look_rank_set"] for m in ar["models"]] == [[1, 3]] * 3  # what the rule waits to see narrow
    assert f"Why: {sentence}." in html
    assert "90% rank-set" in html and "rank-set at 97.5% (what the stop reads)" in html
    assert html.count('<td class="look-rank-set">1-3</td>') == 3
    # annotate status prints the same sentence and both rank-set columns
    assert main(["annotate", "status", "--db", str(tmp_path / "w.db"), "--project", str(pid)]) == 0
    out = capsys.readouterr().out
    assert f"why: {sentence}" in out and "rank-set  at 97.5%" in out


def test_the_live_board_marks_systems_with_few_battles(tmp_path):
    """Issue 30: the app's live board uses the same few-battle rule as ``evalsift arena``. After 12
    battles among 3 systems every system has fewer than 20: each is marked, the status says so in one
    sentence, and the admin page prints it beside the battle counts."""
    from _web import AdminClient

    work, pid, admin, who, _ = make(tmp_path, n=20, k=3, max_battles=50)
    play(work, pid, who, n=12)
    ar = work.status(pid)["arena"]
    assert ar["human_battles"] == 12 and all(m["few_battles"] for m in ar["models"])
    assert ar["few_note"].startswith("3 model(s) with fewer than 20 human battles") and "models' mean" in ar["scale"]
    with Server(tmp_path / "w.db") as srv:
        code, html, _ = AdminClient(srv.url).get(f"/admin/{pid}?token={admin}")
    assert code == 200 and 'id="few"' in html and "fewer than 20 human battles" in html
    # issue 42: after 12 battles every rank-set spans more than half of the 3 ranks: each rank is marked '?',
    # and the legend says why, as evalsift arena prints it
    assert not any(m["resolved"] for m in ar["models"]) and ar["unresolved_note"]
    assert 'id="unresolved-note"' in html and html.count("not resolved\">?</span>") == 3


# ---------------------------------------------------------------------------------------------- issue 32 part 5
def _secret_league(n=12):
    """Three systems with names that appear nowhere else (so a leak of a name is a leak of the model)."""
    from evalsift.pool import Pool

    names = ["zebra-model-7", "quokka-model-3", "ibis-model-5"]
    return Pool(item_ids=[f"q{i}" for i in range(n)], inputs=[f"Prompt {i}?" for i in range(n)], systems=names,
                outputs={s: [f"Answer {k}-{i}." for i in range(n)] for k, s in enumerate(names)}, name="secret"), names


def test_the_models_are_named_only_in_the_answer_to_a_stored_vote(tmp_path):
    """Before the vote nothing the annotator receives names a model: the page, /next (raw JSON), a refused
    vote, a skip's answer. The stored vote's answer names both in the order shown and what was voted; with
    blind_after_vote it does not. A revealed vote cannot be undone; a skip can."""
    import urllib.request

    from _web import AdminClient, get_text

    pool, names = _secret_league()
    work = Workspace(Store(tmp_path / "w.db"))
    # 36 battles, 10 wanted: a vote is named while twice what is still wanted stays blind (tests/test_web_arena_blind.py)
    pid, admin = work.create_arena("secret", pool, max_battles=10)
    aid, token = work.store.add_annotator(pid, "alice")
    bid, btoken = work.store.add_annotator(pid, "bob")
    blind_pid, _ = work.create_arena("blind", pool, max_battles=30, blind_after_vote=True)
    _, ctoken = work.store.add_annotator(blind_pid, "carol")

    def raw(method, url, tok, body=None):
        req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {tok}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def leaks(text):
        return [n for n in names if n in text]

    with Server(tmp_path / "w.db") as srv:
        code, page = get_text(f"{srv.url}/a/{token}")
        assert code == 200 and leaks(page) == [] and 'id="bbothbad"' in page and "<kbd>b</kbd>" in page
        code, text = raw("GET", f"{srv.url}/api/v1/next", token)
        a = json.loads(text)
        assert code == 200 and leaks(text) == [] and a["answers"]["bothbad"] == "both are bad"
        code, text = raw("GET", f"{srv.url}/api/v1/next", token)  # a reloaded page: the same battle, still blind
        assert json.loads(text)["assignment_id"] == a["assignment_id"] and leaks(text) == []
        code, text = raw("POST", f"{srv.url}/api/v1/judgments", btoken, {"assignment_id": a["assignment_id"],
                                                                         "verdict": "1"})
        assert code == 403 and leaks(text) == []  # someone else's battle: refused, nothing named
        code, text = raw("POST", f"{srv.url}/api/v1/judgments", token, {"assignment_id": a["assignment_id"],
                                                                        "verdict": "7"})
        assert code == 422 and leaks(text) == []
        code, text = raw("POST", f"{srv.url}/api/v1/judgments", token, {"assignment_id": a["assignment_id"],
                                                                        "verdict": "2", "idempotency_key": "k1"})
        row = work.store.assignment(a["assignment_id"])
        first, second = (row["a"], row["b"]) if row["shown_order"] == "ab" else (row["b"], row["a"])
        got = json.loads(text)
        assert code == 200 and got["reveal"] == {"first": first, "second": second, "voted": "second"}
        assert got["progress"] == {"judged": 1, "skipped": 0, "total": 10, "total_is_cap": True}
        code, again = call("POST", f"{srv.url}/api/v1/judgments", token, {"assignment_id": a["assignment_id"],
                                                                          "verdict": "2", "idempotency_key": "k1"})
        assert code == 200 and again["reveal"] == got["reveal"]  # a resent vote: the same answer
        code, err = call("POST", f"{srv.url}/api/v1/undo", token)
        assert code == 409 and "revealed vote cannot be undone" in err["error"]
        code, text = raw("GET", f"{srv.url}/api/v1/next", token)
        b = json.loads(text)
        assert leaks(text) == []
        code, text = raw("POST", f"{srv.url}/api/v1/judgments", token, {"assignment_id": b["assignment_id"],
                                                                        "skip": True})
        assert code == 200 and leaks(text) == [] and json.loads(text)["progress"]["skipped"] == 1
        code, back = call("POST", f"{srv.url}/api/v1/undo", token)  # a skip can be undone, still blind
        assert code == 200 and back["assignment_id"] == b["assignment_id"] and leaks(json.dumps(back)) == []
        # blind after the vote: nothing names the models, before or after
        code, text = raw("GET", f"{srv.url}/api/v1/next", ctoken)
        c = json.loads(text)
        code, text = raw("POST", f"{srv.url}/api/v1/judgments", ctoken, {"assignment_id": c["assignment_id"],
                                                                         "verdict": "bothbad"})
        assert code == 200 and "reveal" not in json.loads(text) and leaks(text) == []
        code, st = call("GET", f"{srv.url}/api/v1/projects/{pid}/status", admin)
        code, html, _ = AdminClient(srv.url).get(f"/admin/{pid}?token={admin}")
    assert st["arena"]["reveal_after_vote"] is True and 'id="reveal">the person sees the two models' in html
    assert work.status(blind_pid)["arena"]["reveal_after_vote"] is False


def test_both_bad_is_a_tie_on_the_board_and_round_trips_through_the_export(tmp_path, capsys):
    """'bothbad' is stored as a tie with detail winner 'tie (bothbad)'; the live board counts it as a tie
    (half a win); --format arena writes it as Chatbot Arena does and read_arena / evalsift arena read it
    back as a tie flagged bothbad; --format judgments keeps it too. A plain pairwise project refuses it."""
    from evalsift.arena.battles import read_battles
    from evalsift.cli import main
    from evalsift.io.pairwise import read_judgments

    from _web import pair_pool

    work, pid, admin, who, token = make(tmp_path, n=10, k=3, max_battles=20)
    fixed, _ = work.create_fixed("ab", pair_pool(n=3), mode="pairwise", a="A", b="B")
    _, ftoken = work.store.add_annotator(fixed, "dan")
    with Server(tmp_path / "w.db") as srv:
        verdicts = []
        for answer in ("bothbad", "1", "0", "bothbad"):
            code, a = call("GET", f"{srv.url}/api/v1/next", token)
            code, got = call("POST", f"{srv.url}/api/v1/judgments", token,
                             {"assignment_id": a["assignment_id"], "verdict": answer})
            assert code == 200 and got["reveal"]["voted"] == {"1": "first", "0": "tie"}.get(answer, answer)
            verdicts.append((a["assignment_id"], answer))
        code, a = call("GET", f"{srv.url}/api/v1/next", ftoken)
        code, err = call("POST", f"{srv.url}/api/v1/judgments", ftoken, {"assignment_id": a["assignment_id"],
                                                                         "verdict": "bothbad"})
        assert code == 422 and err["field"] == "verdict" and "arena" in err["error"]
        code, st = call("GET", f"{srv.url}/api/v1/projects/{pid}/status", admin)
    assert st["arena"]["human_battles"] == 4
    assert work.arena(pid).y[0] == 0.5 and work.arena(pid).y[3] == 0.5  # a tie: half a win for either side
    js = [j for j in work.store.judgments(pid) if j.kind == "human"]
    assert [(j.verdict, j.detail.get("winner")) for j in js][::3] == [("tie", "tie (bothbad)")] * 2
    assert js[2].verdict == "tie" and "winner" not in js[2].detail  # a plain tie stays a plain tie
    db = str(tmp_path / "w.db")
    for suffix in ("jsonl", "csv"):
        out = tmp_path / f"battles.{suffix}"
        assert main(["annotate", "export", "--db", db, "--project", "league", "--format", "arena", "--out", str(out)]) == 0
        b = read_battles(str(out))
        assert list(b.bothbad) == [True, False, False, True] and list(b.y[[0, 2, 3]]) == [0.5] * 3
        winners = [j.detail.get("winner") for j in read_judgments(str(out)).judgments]
        assert winners[0] == winners[3] == "tie (bothbad)" and winners[2] == "tie"
    rows = [json.loads(x) for x in (tmp_path / "battles.jsonl").read_text().splitlines()]
    for r, j in zip(rows, js):  # model_a is the model shown first; the winner in its terms
        assert (r["model_a"], r["model_b"]) == ((j.a, j.b) if j.shown_order == "ab" else (j.b, j.a))
        if j.verdict in ("a", "b"):
            assert r["winner"] == ("model_a" if (j.a if j.verdict == "a" else j.b) == r["model_a"] else "model_b")
    assert main(["annotate", "export", "--db", db, "--project", "league", "--out", str(tmp_path / "j.jsonl")]) == 0
    assert [j.detail.get("winner") for j in read_judgments(str(tmp_path / "j.jsonl")).judgments][0] == "tie (bothbad)"
    assert main(["arena", "--data", str(tmp_path / "battles.jsonl"), "--out", str(tmp_path / "board")]) == 0
    assert main(["annotate", "export", "--db", db, "--project", "ab", "--format", "arena",
                 "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "is not an arena" in capsys.readouterr().err


def test_progress_counts_skips_apart_in_every_kind_of_project(tmp_path):
    """Issue 32: a skip is not a judgment. /next and the vote's answer say judged, skipped and of how many,
    for a fixed pairwise project, a score project, a label project, a live pairwise project and an arena."""
    from evalsift.select import make_selector

    from _web import pair_pool

    work = Workspace(Store(tmp_path / "w.db"))
    projects = {
        "pairwise": (work.create_fixed("ab", pair_pool(n=5), mode="pairwise", a="A", b="B")[0], {"verdict": "1"}, 5, False),
        "score": (work.create_fixed("sc", pair_pool(n=4), mode="score", systems=["A", "B"], scale=(1, 5))[0],
                  {"score": 3}, 8, False),
        "label": (work.create_fixed("lb", pair_pool(n=6), mode="score", systems=["A"], question="Good?")[0],
                  {"score": 1}, 6, False),
        "live": (work.create_live_pairwise("lv", pair_pool(n=80), "A", "B", make_selector("random", seed=0),
                                           max_labels=50)[0], {"verdict": "1"}, 50, True),
        "arena": (work.create_arena("ar", league_pool(n=10, k=3), max_battles=25)[0], {"verdict": "1"}, 25, True),
    }
    tokens = {k: work.store.add_annotator(pid, "alice")[1] for k, (pid, *_) in projects.items()}
    with Server(tmp_path / "w.db") as srv:
        for k, (pid, answer, total, cap) in projects.items():
            t = tokens[k]
            code, a = call("GET", f"{srv.url}/api/v1/next", t)
            assert a["progress"] == {"judged": 0, "skipped": 0, "total": total, "total_is_cap": cap}, k
            code, got = call("POST", f"{srv.url}/api/v1/judgments", t, {"assignment_id": a["assignment_id"], "skip": True})
            assert got["progress"]["judged"] == 0 and got["progress"]["skipped"] == 1, k  # before: "1 judged"
            code, a = call("GET", f"{srv.url}/api/v1/next", t)
            code, got = call("POST", f"{srv.url}/api/v1/judgments", t, {"assignment_id": a["assignment_id"], **answer})
            assert code == 200 and (got["progress"]["judged"], got["progress"]["skipped"]) == (1, 1), k
            code, a = call("GET", f"{srv.url}/api/v1/next", t)
            assert (a["progress"]["judged"], a["progress"]["skipped"]) == (1, 1), k
            assert [p for p in work.status(pid)["progress"] if p["name"] == "alice"][0]["skipped"] == 1


def test_blind_after_vote_on_the_command_line(tmp_path, capsys, monkeypatch):
    """--blind-after-vote is stored in the arena settings; without it (and in a project made before the
    setting) the models are revealed; it is an arena setting only."""
    import dataclasses

    from evalsift.cli import main
    from evalsift.web.arena import reveals

    monkeypatch.chdir(tmp_path)
    assert main(["annotate", "new", "--arena", "--data", "demo", "--name", "blind", "--blind-after-vote", "--json"]) == 0
    blind = Store("evalsift.db").project(json.loads(capsys.readouterr().out)["project"])
    assert blind.settings["arena"]["reveal_after_vote"] is False and not reveals(blind)
    assert main(["annotate", "new", "--arena", "--data", "demo", "--name", "open", "--json"]) == 0
    shown = Store("evalsift.db").project(json.loads(capsys.readouterr().out)["project"])
    assert shown.settings["arena"]["reveal_after_vote"] is True and reveals(shown)
    old = {**shown.settings, "arena": {k: v for k, v in shown.settings["arena"].items() if k != "reveal_after_vote"}}
    assert reveals(dataclasses.replace(shown, settings=old))  # an older project: reveal, the default
    assert main(["annotate", "status", "--project", "blind"]) == 0
    assert "reveal: the models stay hidden after the vote (--blind-after-vote)" in capsys.readouterr().out
    assert main(["annotate", "new", "--pairwise", "--data", "demo", "--a", "A", "--b", "B", "--name", "p",
                 "--blind-after-vote"]) == 2
    assert "--blind-after-vote is an arena setting" in capsys.readouterr().err

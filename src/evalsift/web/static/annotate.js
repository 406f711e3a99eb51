// evalsift annotator page: fetch the next assignment, show it, send the answer (keys 1 / 2 / 0, b for "both are
// bad" in an arena, y / n and on graded label projects 0-4, s to skip,
// u to undo the last answer; on score items type the number and press Enter). In an arena that reveals them,
// the battle's two models are shown once the vote is stored (or the page says why not: the person may be shown
// those outputs again); Enter (or the button) goes to the next battle. A vote whose models were shown cannot be
// undone: u then says so instead of doing nothing.
// Everything from the server is shown with textContent, never parsed as HTML.
(function () {
  "use strict";
  const root = document.getElementById("work");
  const token = root.dataset.token;
  const kind = root.dataset.kind;
  const arena = root.dataset.arena === "1";  // blind battles: also "both are bad" (b), models revealed after a vote
  const label = root.dataset.label === "1";   // a yes/no question (score 1 / 0), maybe about an image
  const graded = root.dataset.graded === "1"; // ... that also takes a grade 0-4 (score grade / 4)
  const low = Number(root.dataset.low);
  const high = Number(root.dataset.high);
  const statusEl = document.getElementById("status");
  const task = document.getElementById("task");
  const scoreEl = document.getElementById("score");
  const scoreError = document.getElementById("score-error");
  const undoButton = document.getElementById("bundo");
  const revealBox = document.getElementById("reveal");
  let current = null;   // the assignment on screen
  let sending = false;
  let revealing = false; // the battle's models are shown after the vote: Enter goes on
  let named = false;     // the last vote's models were shown: it cannot be undone
  const NO_UNDO = "Your last vote cannot be undone: its models were shown to you after the vote, and it would be " +
    "answered again knowing them.";

  // "12 of 40 judged · 3 skipped": a skip is not a judgment
  function showProgress(p) {
    if (!p) { return; }
    const of = p.total == null ? "" : " of " + (p.total_is_cap ? "at most " : "") + p.total;
    document.getElementById("progress").textContent =
      p.judged + of + " judged \u00b7 " + (p.skipped || 0) + " skipped";
  }

  function setAnswering(on) {
    document.querySelectorAll("#answer-buttons button").forEach((b) => { b.disabled = !on; });
  }

  function hideReveal() {
    revealing = false;
    if (revealBox) { revealBox.hidden = true; document.getElementById("reveal-note").textContent = ""; }
    ["name1", "name2"].forEach((id) => {
      const el = document.getElementById(id);
      if (el) { el.textContent = ""; el.hidden = true; }
    });
    setAnswering(true);
  }

  const VOTED = {first: "Output 1 is better", second: "Output 2 is better", tie: "a tie", bothbad: "both are bad"};

  function showReveal(r) {
    revealing = true;
    current = null;
    setAnswering(false);
    revealBox.hidden = false;
    statusEl.hidden = true;
    if (r.withheld) {                              // the person may see these outputs again: no names
      document.getElementById("reveal-text").textContent = "Stored. You voted: " + (VOTED[r.voted] || r.voted) +
        ". " + r.withheld.charAt(0).toUpperCase() + r.withheld.slice(1) + ".";
      document.getElementById("reveal-note").textContent = "You can still undo this vote (u).";
      return;
    }
    const n1 = document.getElementById("name1");
    const n2 = document.getElementById("name2");
    n1.textContent = "(" + r.first + ")"; n1.hidden = false;
    n2.textContent = "(" + r.second + ")"; n2.hidden = false;
    const who = r.voted === "first" ? " (" + r.first + ")" : r.voted === "second" ? " (" + r.second + ")" : "";
    document.getElementById("reveal-text").textContent = "Output 1 was " + r.first + ", Output 2 was " + r.second +
      ". You voted: " + (VOTED[r.voted] || r.voted) + who + ".";
    document.getElementById("reveal-note").textContent = "This vote cannot be undone now that you have seen the models.";
  }

  function goOn() {
    if (!revealing) { return; }
    hideReveal();
    next();
  }

  function show(text) { statusEl.textContent = text; statusEl.hidden = false; }
  function wait(ms) { return new Promise((r) => setTimeout(r, ms)); }

  function newKey() {
    if (window.crypto && crypto.randomUUID) { return crypto.randomUUID(); }
    return String(Date.now()) + "-" + Math.random().toString(16).slice(2);
  }

  async function api(method, path, body) {
    const res = await fetch(path, {
      method: method,
      headers: {"Authorization": "Bearer " + token, "Content-Type": "application/json"},
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
    const data = await res.json().catch(() => ({}));
    if (!res.ok) {
      const e = new Error(data.error || ("HTTP " + res.status));
      e.status = res.status;
      e.retryAfter = Number(res.headers.get("Retry-After") || 0);
      throw e;
    }
    return data;
  }

  // a request the server could not take now (503: the store was busy; or no connection) is sent again
  async function persistent(method, path, body) {
    for (let attempt = 0; ; attempt++) {
      try { return await api(method, path, body); } catch (e) {
        if (e.status && e.status < 500) { throw e; }
        if (attempt >= 5) { throw e; }
        show(e.status === 503 ? "The server is busy; trying again…" : "Connection problem; trying again…");
        await wait(e.retryAfter ? 1000 * e.retryAfter : 500 * (attempt + 1));
      }
    }
  }

  function display(a) {
    current = a;
    current.key = newKey();
    const inputEl = document.getElementById("input");
    if (inputEl) { inputEl.textContent = a.input == null ? "" : a.input; }
    if (label) {
      const img = document.getElementById("image");
      const text = document.getElementById("out1");
      if (a.image && a.image.indexOf("data:image/png;base64,") === 0) {
        img.src = a.image; img.hidden = false; text.hidden = true;
      } else {
        img.removeAttribute("src"); img.hidden = true; text.hidden = false;
        text.textContent = a.output == null ? "" : a.output;
      }
    } else if (kind === "pairwise") {
      document.getElementById("out1").textContent = a.outputs[0] == null ? "" : a.outputs[0];
      document.getElementById("out2").textContent = a.outputs[1] == null ? "" : a.outputs[1];
      const dispute = document.getElementById("dispute");   // an adjudicator's page: the verdicts that split
      if (dispute && a.dispute) {
        dispute.textContent = "Disputed: " + a.dispute.first + " said Output 1 is better, " + a.dispute.second +
          " said Output 2, " + a.dispute.tie + " said a tie. Your verdict is the one that counts.";
        dispute.hidden = false;
      } else if (dispute) { dispute.hidden = true; }
    } else {
      document.getElementById("out1").textContent = a.output == null ? "" : a.output;
      scoreEl.value = "";
      scoreError.hidden = true;
    }
    document.getElementById("comment").value = "";
    hideReveal();
    showProgress(a.progress);
    statusEl.hidden = true;
    task.hidden = false;
    if (scoreEl && !label) { scoreEl.focus(); }   // after the task is shown: a hidden field cannot take focus
  }

  async function next() {
    current = null;
    task.hidden = true;
    show("Loading…");
    let a;
    try { a = await persistent("GET", "/api/v1/next"); } catch (e) { show("Could not load work: " + e.message); return; }
    showProgress(a.progress);
    if (a.done && !a.final) {                     // the rest is with others for now: look again soon
      show("Waiting: " + a.reason + ".");
      setTimeout(next, 1000 * (a.retry_after || 3));
      return;
    }
    if (a.done) { show("No more work: " + a.reason + ". Thank you!"); return; }
    display(a);
  }

  async function send(extra) {
    if (!current || sending) { return; }
    sending = true;
    const body = Object.assign({assignment_id: current.assignment_id, idempotency_key: current.key,
                                comment: document.getElementById("comment").value}, extra);
    let res;
    try {
      res = await persistent("POST", "/api/v1/judgments", body);
    } catch (e) {
      sending = false;
      if (e.status && e.status < 500) { show("Not stored: " + e.message); return; }
      show("Not stored after several tries; your answer is kept on this page, press the key again.");
      return;
    }
    sending = false;
    showProgress(res.progress);
    named = !!(res.reveal && !res.reveal.withheld);
    undoButton.hidden = named;          // a vote whose models were shown cannot be undone
    if (res.reveal && revealBox) { showReveal(res.reveal); return; }
    next();
  }

  async function undo() {
    if (sending) { return; }
    sending = true;
    try {
      const a = await persistent("POST", "/api/v1/undo");
      sending = false;
      named = false;
      display(a);
      show("Your last answer was withdrawn: answer this item again.");
    } catch (e) {
      sending = false;
      show("Nothing undone: " + e.message);
    }
  }

  // a score as typed: a number on the scale, or a message saying what is wrong (nothing is sent)
  function typedScore() {
    const raw = scoreEl.value.trim();
    if (scoreEl.validity && scoreEl.validity.badInput) { return {error: "That is not a number."}; }
    if (raw === "") { return {error: "Type a score from " + low + " to " + high + " first."}; }
    const value = Number(raw);
    if (!Number.isFinite(value) || value < low || value > high) {
      return {error: "The score must be from " + low + " to " + high + "; you typed " + raw + "."};
    }
    return {value: value};
  }

  function sendScore() {
    const s = typedScore();
    if (s.error) {
      scoreError.textContent = s.error;
      scoreError.hidden = false;
      scoreEl.focus();
      return;
    }
    scoreError.hidden = true;
    send({score: s.value});
  }

  document.querySelectorAll("button[data-answer]").forEach((b) => {
    b.addEventListener("click", () => send({verdict: b.dataset.answer}));
  });
  document.querySelectorAll("button[data-label]").forEach((b) => {
    b.addEventListener("click", () => send({score: Number(b.dataset.label)}));
  });
  document.querySelectorAll("button[data-grade]").forEach((b) => {
    b.addEventListener("click", () => send({score: Number(b.dataset.grade) / 4}));
  });
  document.querySelectorAll("button[data-skip]").forEach((b) => {
    b.addEventListener("click", () => send({skip: true}));
  });
  const nextButton = document.getElementById("bnext");
  if (nextButton) { nextButton.addEventListener("click", goOn); }
  const scoreButton = document.getElementById("bscore");
  if (scoreButton) { scoreButton.addEventListener("click", sendScore); }
  undoButton.addEventListener("click", undo);
  document.addEventListener("keydown", (ev) => {
    const active = document.activeElement ? document.activeElement.id : "";
    const typing = active === "comment" || active === "score" || active === "token";
    if (revealing) {                              // the models are shown: Enter goes on, nothing else answers
      if (ev.key === "Enter") { ev.preventDefault(); goOn(); }
      else if (ev.key === "u" && named) { ev.preventDefault(); document.getElementById("reveal-note").textContent = NO_UNDO; }
      else if (ev.key === "u") { ev.preventDefault(); hideReveal(); undo(); }
      return;
    }
    if (!typing && ev.key === "u" && named) { ev.preventDefault(); show(NO_UNDO); return; }
    if (!typing && ev.key === "u" && !undoButton.hidden) { ev.preventDefault(); undo(); return; }
    if (!current) { return; }
    if (kind === "pairwise" && !typing && ["1", "2", "0"].includes(ev.key)) { ev.preventDefault(); send({verdict: ev.key}); }
    else if (arena && !typing && ev.key === "b") { ev.preventDefault(); send({verdict: "bothbad"}); }
    else if (label && !typing && (ev.key === "y" || ev.key === "n")) { ev.preventDefault(); send({score: ev.key === "y" ? 1 : 0}); }
    else if (graded && !typing && ["0", "1", "2", "3", "4"].includes(ev.key)) { ev.preventDefault(); send({score: Number(ev.key) / 4}); }
    else if (!typing && ev.key === "s") { ev.preventDefault(); send({skip: true}); }
    else if (kind === "score" && !label && ev.key === "Enter" && active !== "comment") { ev.preventDefault(); sendScore(); }
  });
  next();
})();

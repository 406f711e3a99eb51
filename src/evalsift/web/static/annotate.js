// evalsift annotator page: fetch the next assignment, show it, send the answer (keys 1 / 2 / 0, s to skip).
// Everything from the server is shown with textContent, never parsed as HTML.
(function () {
  "use strict";
  const root = document.getElementById("work");
  const token = root.dataset.token;
  const kind = root.dataset.kind;
  const label = root.dataset.label === "1";   // a yes/no question (score 1 / 0), maybe about an image
  const statusEl = document.getElementById("status");
  const task = document.getElementById("task");
  let current = null;   // the assignment on screen
  let sending = false;

  function show(text) { statusEl.textContent = text; statusEl.hidden = false; }

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
    if (!res.ok) { const e = new Error(data.error || ("HTTP " + res.status)); e.status = res.status; throw e; }
    return data;
  }

  async function next() {
    current = null;
    task.hidden = true;
    show("Loading…");
    let a;
    try { a = await api("GET", "/api/v1/next"); } catch (e) { show("Could not load work: " + e.message); return; }
    const progress = document.getElementById("progress");
    if (a.progress) { progress.textContent = a.progress.judged + " judged"; }
    if (a.done && !a.final) {                     // the rest is with others for now: look again soon
      show("Waiting: " + a.reason + ".");
      setTimeout(next, 1000 * (a.retry_after || 3));
      return;
    }
    if (a.done) { show("No more work: " + a.reason + ". Thank you!"); return; }
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
    } else {
      document.getElementById("out1").textContent = a.output == null ? "" : a.output;
      const score = document.getElementById("score");
      score.value = "";
      score.focus();
    }
    document.getElementById("comment").value = "";
    statusEl.hidden = true;
    task.hidden = false;
  }

  async function send(extra) {
    if (!current || sending) { return; }
    sending = true;
    const body = Object.assign({assignment_id: current.assignment_id, idempotency_key: current.key,
                                comment: document.getElementById("comment").value}, extra);
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        await api("POST", "/api/v1/judgments", body);
        sending = false;
        next();
        return;
      } catch (e) {
        if (e.status && e.status < 500) { show("Not stored: " + e.message); sending = false; return; }
        show("Connection problem; retrying…");
        await new Promise((r) => setTimeout(r, 500 * (attempt + 1)));
      }
    }
    show("Not stored after several tries; your answer is kept on this page, press the key again.");
    sending = false;
  }

  document.querySelectorAll("button[data-answer]").forEach((b) => {
    b.addEventListener("click", () => send({verdict: b.dataset.answer}));
  });
  document.querySelectorAll("button[data-label]").forEach((b) => {
    b.addEventListener("click", () => send({score: Number(b.dataset.label)}));
  });
  document.querySelectorAll("button[data-skip]").forEach((b) => {
    b.addEventListener("click", () => send({skip: true}));
  });
  const scoreButton = document.getElementById("bscore");
  if (scoreButton) {
    scoreButton.addEventListener("click", () => send({score: Number(document.getElementById("score").value)}));
  }
  document.addEventListener("keydown", (ev) => {
    if (!current) { return; }
    const inComment = document.activeElement && document.activeElement.id === "comment";
    if (kind === "pairwise" && !inComment && ["1", "2", "0"].includes(ev.key)) { ev.preventDefault(); send({verdict: ev.key}); }
    else if (label && !inComment && (ev.key === "y" || ev.key === "n")) { ev.preventDefault(); send({score: ev.key === "y" ? 1 : 0}); }
    else if (!inComment && ev.key === "s" && document.activeElement.id !== "score") { ev.preventDefault(); send({skip: true}); }
    else if (kind === "score" && !label && ev.key === "Enter") {
      ev.preventDefault();
      send({score: Number(document.getElementById("score").value)});
    }
  });
  next();
})();

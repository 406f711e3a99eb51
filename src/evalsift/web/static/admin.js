// evalsift admin page: reload every few seconds while the decision is open; times shown in local time.
(function () {
  "use strict";
  document.querySelectorAll("time[data-unix]").forEach((t) => {
    const d = new Date(Number(t.dataset.unix) * 1000);
    t.textContent = d.toLocaleString();
  });
  const decided = (document.getElementById("decision") || {textContent: ""}).textContent.indexOf("Decided") >= 0;
  if (!decided) { setTimeout(() => window.location.reload(), 4000); }
})();

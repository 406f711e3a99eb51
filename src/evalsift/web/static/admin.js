// evalsift admin page: reload every few seconds while the decision is open.
(function () {
  "use strict";
  const decided = (document.getElementById("decision") || {textContent: ""}).textContent.indexOf("Decided") >= 0;
  if (!decided) { setTimeout(() => window.location.reload(), 4000); }
})();

// evalsift admin sign-in: a link ending in #token=... signs in with it (a fragment never leaves the
// browser), then the token is removed from the address bar.
(function () {
  "use strict";
  const root = document.getElementById("login");
  const hash = window.location.hash;
  if (!root || hash.indexOf("#token=") !== 0) { return; }
  const token = decodeURIComponent(hash.slice(7));
  history.replaceState(null, "", window.location.pathname + window.location.search);
  fetch(root.dataset.path + "/login", {
    method: "POST", credentials: "same-origin", redirect: "follow",
    headers: {"Content-Type": "application/x-www-form-urlencoded"},
    body: "token=" + encodeURIComponent(token),
  }).then(() => window.location.replace(root.dataset.path));
})();

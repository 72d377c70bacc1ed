// semmem console: small progressive enhancements; every page works without them.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // Destructive forms ask first (Forget, Sign out does not).
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
  // The delete button stays disabled until the confirmation is typed exactly.
  for (const input of document.querySelectorAll("input[data-must-equal]")) {
    const button = input.form.querySelector("button[type=submit]");
    const sync = () => { button.disabled = input.value !== input.dataset.mustEqual; };
    input.addEventListener("input", sync);
    sync();
  }
  // "/" focuses the search box, as on many sites, unless the user is typing somewhere.
  const search = document.getElementById("q");
  if (search) {
    document.addEventListener("keydown", (event) => {
      const typing = event.target.closest("input, textarea, select, [contenteditable]");
      if (event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
        event.preventDefault();
        search.focus();
      }
    });
  }
  // After a search or a recall preview, move focus to the results for keyboard and screen
  // reader users.
  const results = document.getElementById("recall-preview") || document.getElementById("search-results");
  if (results) {
    results.setAttribute("tabindex", "-1");
    results.focus();
  }
});

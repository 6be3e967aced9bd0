// The Tokens page: a "Copy key" button beside the key shown once. It copies with the
// Clipboard API where the page may (a secure context), else selects the key so that Ctrl+C
// or the context menu copies it; either way the status line says what happened.
(function () {
  "use strict";

  function setUp() {
    const button = document.getElementById("copy-key");
    const field = document.getElementById("new-key");
    const status = document.getElementById("copy-status");
    if (!button || !field || !status) {
      return;
    }
    button.hidden = false;
    button.addEventListener("click", function () {
      field.focus();
      field.select();
      const selected = function () {
        status.textContent = "The key is selected: press Ctrl+C (⌘C on a Mac) to copy it.";
      };
      if (!navigator.clipboard || !window.isSecureContext) {
        selected();
        return;
      }
      navigator.clipboard.writeText(field.value).then(
        function () {
          status.textContent = "Copied the key to the clipboard.";
        },
        selected
      );
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUp);
  } else {
    setUp();
  }
})();

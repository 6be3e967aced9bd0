// What every Lookout page sets up for htmx (loaded from node_modules through the static files;
// its settings are in base.html's htmx-config meta tag): requests that change something carry
// the CSRF token from the cookie Django sets, and an answer that is an error (400, 403, 404)
// is swapped in like any other, so the message the server wrote reaches the page.
(function () {
  "use strict";
  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (match) return decodeURIComponent(match[1]);
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }
  document.addEventListener("htmx:configRequest", function (event) {
    if (event.detail.verb !== "get") event.detail.headers["X-CSRFToken"] = csrfToken();
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    const status = event.detail.xhr.status;
    if (status >= 400 && status < 500) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();

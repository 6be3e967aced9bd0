// Auto refresh of the jobs table: off unless the viewer turns it on. The interval is kept
// in the URL (?refresh=N) so that a shared link refreshes too; every tick fetches the rows of
// the very same page (same filters, sort and cursor) and swaps the table body in place, so
// the scroll position and focus outside the table stay where they were.
(function () {
  "use strict";
  const box = document.getElementById("auto-refresh");
  const every = document.getElementById("refresh-every");
  const status = document.getElementById("refresh-status");
  const body = document.getElementById("job-rows");
  if (!box || !every || !body) return;
  let timer = null;

  function currentUrl(seconds) {
    const url = new URL(window.location.href);
    if (seconds) url.searchParams.set("refresh", String(seconds));
    else url.searchParams.delete("refresh");
    return url;
  }

  async function tick() {
    const url = currentUrl(Number(every.value));
    url.searchParams.set("fragment", "rows");
    try {
      const response = await fetch(url, { headers: { "X-Requested-With": "fetch" }, credentials: "same-origin" });
      if (!response.ok) throw new Error(String(response.status));
      body.innerHTML = await response.text();
      status.textContent = "Updated " + new Date().toLocaleTimeString();
    } catch (err) {
      status.textContent = "Refresh failed; retrying";
    }
  }

  function apply() {
    if (timer) window.clearInterval(timer);
    timer = null;
    const seconds = box.checked ? Number(every.value) : 0;
    window.history.replaceState(null, "", currentUrl(seconds));
    // Links on the page (sort, pages) carry the refresh setting along.
    document.querySelectorAll("a[href^='?'], form.filters").forEach(function (el) {
      if (el.tagName === "FORM") {
        let input = el.querySelector("input[name=refresh]");
        if (seconds && !input) {
          input = document.createElement("input");
          input.type = "hidden";
          input.name = "refresh";
          el.appendChild(input);
        }
        if (input) {
          if (seconds) input.value = String(seconds);
          else input.remove();
        }
        return;
      }
      const url = new URL(el.getAttribute("href"), window.location.href);
      if (seconds) url.searchParams.set("refresh", String(seconds));
      else url.searchParams.delete("refresh");
      el.setAttribute("href", url.search || "?");
    });
    if (seconds) {
      timer = window.setInterval(tick, seconds * 1000);
      status.textContent = "Refreshing every " + seconds + " s";
    } else {
      status.textContent = "";
    }
  }

  box.addEventListener("change", apply);
  every.addEventListener("change", apply);
  if (box.checked) apply();
})();

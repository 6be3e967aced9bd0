// The job side panel of the jobs grid. The grid dispatches `lookout:open-job` (detail.jobId)
// on document when a row is clicked or Enter is pressed on it; the panel then loads the job's
// fragment (GET /jobs/<id>/panel) into <aside id="job-panel">, keeps `?job=<id>` in the URL
// (replaceState) and opens by itself when the page is loaded with `job=` in its URL.
// Close (the button or Escape) returns the focus to the job's row. Its tabs follow the
// WAI-ARIA tabs pattern (arrow keys, Home, End); on wide screens it is a right-hand column
// whose width can be dragged (or changed with the arrow keys on its edge) and is kept in
// localStorage; at phone width it covers the screen. The job's parts inside it (log viewer,
// copy buttons) are set up by job_parts.js.
(function () {
  "use strict";
  const WIDTH_KEY = "lookout.jobPanel.width";
  const MIN_WIDTH = 320;
  const STEP = 32;
  const wide = window.matchMedia("(min-width: 900px)");
  let openJob = null;
  let request = null;
  let tabWanted = "details";

  function aside() {
    return document.getElementById("job-panel");
  }

  function rowOf(jobId) {
    return document.querySelector('#job-rows tr[data-job-id="' + CSS.escape(jobId) + '"]');
  }

  function setUrl(jobId) {
    const url = new URL(window.location.href);
    if (jobId) url.searchParams.set("job", jobId);
    else url.searchParams.delete("job");
    history.replaceState(history.state, "", url.pathname + url.search + url.hash);
  }

  function markRow(jobId) {
    document.querySelectorAll("#job-rows tr.panel-row").forEach(function (row) {
      row.classList.remove("panel-row");
    });
    const row = jobId ? rowOf(jobId) : null;
    if (row) row.classList.add("panel-row");
  }

  // Width -------------------------------------------------------------------------------
  function maxWidth() {
    return Math.max(MIN_WIDTH, Math.round(window.innerWidth * 0.8));
  }

  function savedWidth() {
    const value = parseInt(window.localStorage.getItem(WIDTH_KEY) || "", 10);
    return Number.isFinite(value) ? value : Math.round(Math.min(720, window.innerWidth * 0.4));
  }

  function applyWidth(width, save) {
    const clamped = Math.min(maxWidth(), Math.max(MIN_WIDTH, Math.round(width)));
    document.documentElement.style.setProperty("--job-panel-width", clamped + "px");
    const handle = aside() && aside().querySelector(".panel-resizer");
    if (handle) {
      handle.setAttribute("aria-valuemin", String(MIN_WIDTH));
      handle.setAttribute("aria-valuemax", String(maxWidth()));
      handle.setAttribute("aria-valuenow", String(clamped));
    }
    if (save) window.localStorage.setItem(WIDTH_KEY, String(clamped));
    return clamped;
  }

  function setUpResizer(panel) {
    const handle = panel.querySelector(".panel-resizer");
    if (!handle) return;
    applyWidth(savedWidth(), false);
    handle.addEventListener("pointerdown", function (event) {
      if (!wide.matches) return;
      event.preventDefault();
      handle.setPointerCapture(event.pointerId);
      document.body.classList.add("job-panel-resizing");
      function move(e) {
        applyWidth(window.innerWidth - e.clientX, false);
      }
      function up(e) {
        applyWidth(window.innerWidth - e.clientX, true);
        document.body.classList.remove("job-panel-resizing");
        handle.removeEventListener("pointermove", move);
        handle.removeEventListener("pointerup", up);
        handle.removeEventListener("pointercancel", up);
      }
      handle.addEventListener("pointermove", move);
      handle.addEventListener("pointerup", up);
      handle.addEventListener("pointercancel", up);
    });
    handle.addEventListener("keydown", function (event) {
      const now = parseInt(handle.getAttribute("aria-valuenow") || "0", 10) || savedWidth();
      let width = null;
      if (event.key === "ArrowLeft") width = now + STEP;
      else if (event.key === "ArrowRight") width = now - STEP;
      else if (event.key === "Home") width = maxWidth();
      else if (event.key === "End") width = MIN_WIDTH;
      if (width === null) return;
      event.preventDefault();
      applyWidth(width, true);
    });
  }

  // The answer's text; null when the session has ended and the answer is the login form
  // (the page is reloaded, which leads there with the way back).
  function textUnlessLoggedOut(response) {
    if (response.redirected && new URL(response.url).pathname.startsWith("/login")) {
      window.location.reload();
      return null;
    }
    return response.text();
  }

  // Tabs --------------------------------------------------------------------------------
  function selectTab(tab, focus) {
    const list = tab.closest("[role=tablist]");
    const tabs = Array.from(list.querySelectorAll("[role=tab]"));
    tabs.forEach(function (other) {
      const selected = other === tab;
      other.setAttribute("aria-selected", selected ? "true" : "false");
      other.tabIndex = selected ? 0 : -1;
      const tabpanel = document.getElementById(other.getAttribute("aria-controls"));
      if (tabpanel) tabpanel.hidden = !selected;
    });
    tabWanted = tab.dataset.tab || tabWanted;
    if (focus) tab.focus();
    const shown = document.getElementById(tab.getAttribute("aria-controls"));
    if (!shown) return;
    if (shown.dataset.loaded) shown.dispatchEvent(new CustomEvent("lookout:tab-shown"));
    else fill(shown);
  }

  // A tab other than the one the panel opened on is read when it is first shown.
  function fill(tabpanel) {
    if (tabpanel.dataset.loading) return;
    tabpanel.dataset.loading = "1";
    tabpanel.setAttribute("aria-busy", "true");
    const jobId = openJob;
    fetch(tabpanel.dataset.partUrl, { credentials: "same-origin" })
      .then(textUnlessLoggedOut)
      .then(function (html) {
        if (html === null || jobId !== openJob || !document.contains(tabpanel)) return;
        tabpanel.innerHTML = html;
        tabpanel.dataset.loaded = "1";
        setUpContent(tabpanel);
        if (!tabpanel.hidden) tabpanel.dispatchEvent(new CustomEvent("lookout:tab-shown"));
      })
      .catch(function () {
        tabpanel.innerHTML =
          '<p class="message message-error" role="alert">This part could not be loaded; ' +
          "choose its tab again to retry.</p>";
      })
      .finally(function () {
        delete tabpanel.dataset.loading;
        tabpanel.removeAttribute("aria-busy");
      });
  }

  function setUpContent(scope) {
    if (window.htmx) window.htmx.process(scope);
    if (window.LookoutJob) window.LookoutJob.init(scope);
  }

  function setUpTabs(panel) {
    const list = panel.querySelector("[role=tablist]");
    if (!list) return;
    const tabs = Array.from(list.querySelectorAll("[role=tab]"));
    list.addEventListener("click", function (event) {
      const tab = event.target.closest("[role=tab]");
      if (tab) selectTab(tab, false);
    });
    list.addEventListener("keydown", function (event) {
      const index = tabs.indexOf(document.activeElement);
      if (index < 0) return;
      let next = null;
      if (event.key === "ArrowRight") next = tabs[(index + 1) % tabs.length];
      else if (event.key === "ArrowLeft") next = tabs[(index - 1 + tabs.length) % tabs.length];
      else if (event.key === "Home") next = tabs[0];
      else if (event.key === "End") next = tabs[tabs.length - 1];
      if (!next) return;
      event.preventDefault();
      selectTab(next, true);
    });
  }

  // Opening and closing -----------------------------------------------------------------
  function setUp(panel, focusTarget) {
    panel.querySelectorAll(".panel-close").forEach(function (button) {
      button.addEventListener("click", close);
    });
    setUpTabs(panel);
    setUpResizer(panel);
    setUpContent(panel);
    const target = focusTarget || panel.querySelector("#job-panel-title");
    if (target) target.focus();
  }

  function show(panel, html) {
    panel.innerHTML = html;
    panel.removeAttribute("aria-busy");
    setUp(panel, null);
  }

  function open(jobId) {
    const panel = aside();
    if (!panel || !jobId) return;
    if (request) request.abort();
    request = new AbortController();
    const mine = request;
    openJob = jobId;
    panel.hidden = false;
    panel.setAttribute("aria-busy", "true");
    document.body.classList.add("job-panel-open");
    applyWidth(savedWidth(), false);
    setUrl(jobId);
    markRow(jobId);
    const url = "/jobs/" + encodeURIComponent(jobId) + "/panel?tab=" + encodeURIComponent(tabWanted);
    fetch(url, { credentials: "same-origin", signal: mine.signal })
      .then(textUnlessLoggedOut)
      .then(function (html) {
        if (html === null || mine !== request) return;
        request = null;
        show(panel, html);
      })
      .catch(function (error) {
        if (error.name === "AbortError") return;
        show(
          panel,
          '<div class="panel-head"><h2 id="job-panel-title" tabindex="-1">Job details</h2>' +
            '<button type="button" class="secondary panel-close" aria-label="Close job details">' +
            'Close</button></div><p class="message message-error" role="alert">' +
            "The job could not be loaded; try again.</p>"
        );
      });
  }

  function close() {
    const panel = aside();
    if (!panel || panel.hidden) return;
    if (request) request.abort();
    request = null;
    const jobId = openJob;
    openJob = null;
    panel.hidden = true;
    panel.replaceChildren(); // stops the log viewer's Follow (it checks it is still shown)
    document.body.classList.remove("job-panel-open");
    setUrl(null);
    markRow(null);
    const row = jobId ? rowOf(jobId) : null;
    if (row) {
      if (!row.hasAttribute("tabindex")) row.tabIndex = -1;
      row.focus();
    }
  }

  document.addEventListener("lookout:open-job", function (event) {
    const jobId = event.detail && event.detail.jobId;
    if (jobId) open(String(jobId));
  });

  document.addEventListener("lookout:rows-changed", function () {
    markRow(openJob);
  });

  document.addEventListener("keydown", function (event) {
    const panel = aside();
    if (event.key !== "Escape" || !panel || panel.hidden) return;
    const target = event.target;
    const inside = panel.contains(target) || target === document.body;
    if (!inside) return;
    if (target.matches && target.matches("input[type=search]") && target.value) return;
    event.preventDefault();
    close();
  });

  // The panel's own forms (cancel, reprioritize, preempt) answer with the panel: set it up
  // again and move the focus to the result.
  document.addEventListener("htmx:afterSwap", function (event) {
    const panel = aside();
    if (!panel || event.detail.target !== panel) return;
    setUp(panel, panel.querySelector(".panel-notice"));
  });

  wide.addEventListener("change", function () {
    if (openJob) applyWidth(savedWidth(), false);
  });

  const wanted = new URL(window.location.href).searchParams.get("job");
  if (wanted) open(wanted);
})();

// The jobs grid's behaviour that htmx does not give (templates/lookout/jobs.html):
// - filters in the header apply as they change (htmx swaps the rows, header and pager, and
//   the server's HX-Push-Url puts the view in the address bar); popover filters open below
//   their header cell and close on Escape or a click elsewhere;
// - row selection (checkboxes, "select all on this page", shift-click ranges), its count, and
//   the `lookout:selection` event;
// - opening a job: a click on a row or Enter on a focused row dispatches `lookout:open-job`;
// - keyboard use: roving focus on rows (arrows, Home/End, PageUp/PageDown), Space selects,
//   `/` goes to the first filter, Escape goes back from a filter to the rows;
// The column chooser and resizing are in grid_columns.js.
// Without JavaScript the same page works with plain links and form submits.
// The page says hx-history="false": htmx does not keep a copy of the page for going back
// (it would clone elements whose style the grid set, which the content security policy
// reports); going back reads the page from the server.
(function () {
  "use strict";
  if (!document.getElementById("grid-page")) return;
  document.documentElement.classList.add("js");
  // htmx "settles" a swapped element by copying the old one's class, style, width and height
  // onto the new one for a moment. Style attributes are refused on these pages (the content
  // security policy), and setting one, even empty, is reported: leave style out.
  if (window.htmx) {
    window.htmx.config.attributesToSettle = window.htmx.config.attributesToSettle
      .filter(function (name) { return name !== "style"; });
  }

  const FILTER_DELAY = 400;
  const PAGE_STEP = 10;
  const FOCUSABLE_FILTER = "input, summary, select";

  function rowsBody() { return document.getElementById("job-rows"); }
  function filterForm() { return document.getElementById("grid-filters"); }
  function jobRows() { return Array.from(document.querySelectorAll("#job-rows tr.job-row")); }
  const NOT_TEXT = ["checkbox", "radio", "button", "submit", "reset", "range", "color", "file"];
  function isTyping(el) {
    if (!el) return false;
    const tag = el.tagName;
    if (tag === "INPUT") return NOT_TEXT.indexOf(el.type) < 0;
    return tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable;
  }

  // --- filters ----------------------------------------------------------------------------

  let filterTimer = null;
  function applyFilters(delay) {
    window.clearTimeout(filterTimer);
    const form = filterForm();
    if (!form || !window.htmx) return;
    filterTimer = window.setTimeout(function () {
      window.htmx.trigger(form, "grid:apply");
    }, delay);
  }

  function belongsToFilters(el) {
    return el && el.getAttribute && el.getAttribute("form") === "grid-filters";
  }

  function updateSummary(details) {
    const summary = details.querySelector("summary");
    if (!summary) return;
    const boxes = Array.from(details.querySelectorAll("input[type=checkbox]:checked"));
    let text = "any";
    if (details.querySelector("input[type=checkbox]")) {
      if (boxes.length) {
        text = boxes.slice(0, 2).map(function (b) { return b.value; }).join(", ");
        if (boxes.length > 2) text += " +" + (boxes.length - 2);
      }
    } else {
      const inputs = details.querySelectorAll("input");
      const low = inputs[0] ? inputs[0].value : "";
      const high = inputs[1] ? inputs[1].value : "";
      if (low || high) text = (low || "…") + " – " + (high || "…");
    }
    summary.textContent = text;
    const label = summary.getAttribute("aria-label") || "";
    summary.setAttribute("aria-label", label.replace(/:.*$/, "") + ": " + text);
    const cell = details.closest("td");
    if (cell) cell.classList.toggle("active", text !== "any");
  }

  document.addEventListener("input", function (event) {
    const el = event.target;
    if (belongsToFilters(el) && el.classList.contains("filter-text")) applyFilters(FILTER_DELAY);
  });
  document.addEventListener("change", function (event) {
    const el = event.target;
    if (!belongsToFilters(el)) return;
    const details = el.closest("details.filter-pop");
    if (details) updateSummary(details);
    if (el.classList.contains("group-select")) return; // applied with its button
    if (el.classList.contains("filter-text")) return; // applied on input
    applyFilters(el.type === "checkbox" ? 150 : 0);
  });
  document.addEventListener("keydown", function (event) {
    const el = event.target;
    if (event.key === "Enter" && belongsToFilters(el) && el.tagName === "INPUT") {
      event.preventDefault();
      applyFilters(0);
    }
  });

  // Popovers: one open at a time, placed under their header cell (position: fixed, so the
  // grid's scrolling wrapper does not clip them), closed by Escape or a click outside.
  function placePop(details) {
    const pop = details.querySelector(".pop");
    const summary = details.querySelector("summary");
    if (!pop || !summary) return;
    const box = summary.getBoundingClientRect();
    const width = Math.min(pop.offsetWidth || 240, window.innerWidth - 16);
    const left = Math.max(8, Math.min(box.left, window.innerWidth - width - 8));
    pop.style.left = left + "px";
    pop.style.top = Math.round(box.bottom + 2) + "px";
  }
  function closePops(except) {
    document.querySelectorAll("details.filter-pop[open], details.chooser[open], details.group-by[open]")
      .forEach(function (d) { if (d !== except && !d.contains(except)) d.open = false; });
  }
  document.addEventListener("toggle", function (event) {
    const details = event.target;
    if (!(details instanceof HTMLDetailsElement) || !details.open) return;
    closePops(details);
    if (details.classList.contains("filter-pop")) placePop(details);
  }, true);
  window.addEventListener("scroll", function () {
    document.querySelectorAll("details.filter-pop[open]").forEach(placePop);
  }, true);
  window.addEventListener("resize", function () {
    document.querySelectorAll("details.filter-pop[open]").forEach(placePop);
  });
  document.addEventListener("click", function (event) {
    if (!event.target.closest("details")) closePops(null);
  });

  // --- requests for the rows ----------------------------------------------------------------

  // The side panel's `job` and the live updates' `live` change the address bar after the page
  // was rendered: a request for the rows takes them from the address bar as it is now.
  const KEPT_FROM_LOCATION = ["job", "live"];
  document.addEventListener("htmx:configRequest", function (event) {
    const target = event.detail.target;
    if (!target || target.id !== "job-rows") return;
    const now = new URL(window.location.href).searchParams;
    const url = new URL(event.detail.path, window.location.href);
    KEPT_FROM_LOCATION.forEach(function (name) {
      url.searchParams.delete(name);
      try { delete event.detail.parameters[name]; } catch (err) { /* not a form's */ }
      if (event.detail.formData && event.detail.formData.delete) event.detail.formData.delete(name);
      if (now.get(name)) url.searchParams.set(name, now.get(name));
    });
    event.detail.path = url.pathname + url.search;
  });

  // --- after htmx swapped the rows ---------------------------------------------------------

  document.addEventListener("htmx:afterSettle", function (event) {
    const target = event.detail && event.detail.target;
    if (!target || !document.contains(rowsBody())) return;
    if (target.id === "job-rows" || target === rowsBody()) {
      document.dispatchEvent(new CustomEvent("lookout:rows-changed"));
    }
  });
  // "Clear all filters" takes itself away: the focus goes on to the filter bar's ready views.
  document.addEventListener("htmx:afterSettle", function (event) {
    const config = event.detail && event.detail.requestConfig;
    if (!config || !config.elt || config.elt.id !== "clear-filters") return;
    const active = document.activeElement;
    if (active && active !== document.body && document.contains(active)) return;
    const next = document.querySelector("#grid-chips .grid-presets a");
    if (next) next.focus();
  });
  document.addEventListener("lookout:rows-changed", function () {
    setupRoving();
    syncSelection();
  });
  // Going back or forward: htmx put the page read from the server in place.
  document.addEventListener("htmx:historyRestore", function () {
    current = null;
    document.dispatchEvent(new CustomEvent("lookout:rows-changed"));
  });

  // --- selection ---------------------------------------------------------------------------

  let lastClicked = null;
  function selectedIds() {
    return Array.from(document.querySelectorAll("#job-rows input.row-select:checked"))
      .map(function (box) { return box.value; });
  }
  let lastAnnounced = null;
  function syncSelection() {
    const boxes = Array.from(document.querySelectorAll("#job-rows input.row-select"));
    boxes.forEach(function (box) {
      const row = box.closest("tr");
      if (row) row.classList.toggle("selected", box.checked);
    });
    const ids = selectedIds();
    const all = document.getElementById("select-all");
    if (all) {
      all.checked = boxes.length > 0 && ids.length === boxes.length;
      all.indeterminate = ids.length > 0 && ids.length < boxes.length;
    }
    const count = document.getElementById("grid-selected");
    if (count) count.textContent = ids.length + " selected";
    const key = ids.join(",");
    if (key !== lastAnnounced) {
      lastAnnounced = key;
      document.dispatchEvent(new CustomEvent("lookout:selection", { detail: { ids: ids } }));
    }
  }
  document.addEventListener("click", function (event) {
    const box = event.target.closest ? event.target.closest("#job-rows input.row-select") : null;
    if (!box) return;
    const boxes = Array.from(document.querySelectorAll("#job-rows input.row-select"));
    const values = boxes.map(function (b) { return b.value; });
    if (event.shiftKey && lastClicked && values.indexOf(lastClicked) >= 0) {
      const a = values.indexOf(lastClicked);
      const b = boxes.indexOf(box);
      const [from, to] = a < b ? [a, b] : [b, a];
      for (let i = from; i <= to; i++) boxes[i].checked = box.checked;
    }
    lastClicked = box.value; // a job id: live updates replace the rows' elements
  });
  document.addEventListener("change", function (event) {
    const el = event.target;
    if (el.id === "select-all") {
      document.querySelectorAll("#job-rows input.row-select").forEach(function (box) {
        box.checked = el.checked;
      });
      syncSelection();
    } else if (el.classList && el.classList.contains("row-select")) {
      syncSelection();
    }
  });

  // --- opening a job -----------------------------------------------------------------------

  function openJob(row) {
    const jobId = row.getAttribute("data-job-id");
    if (!jobId) return;
    document.dispatchEvent(new CustomEvent("lookout:open-job", { detail: { jobId: jobId } }));
  }
  document.addEventListener("click", function (event) {
    const row = event.target.closest ? event.target.closest("#job-rows tr.job-row") : null;
    if (!row || event.target.closest("a, input, button, label, summary, select, textarea")) return;
    if (window.getSelection && String(window.getSelection()).length) return; // copying text
    focusRow(row);
    openJob(row);
  });

  // --- keyboard: roving focus on the rows ---------------------------------------------------

  let current = null;
  function setupRoving() {
    const rows = jobRows();
    if (!rows.length) { current = null; return; }
    if (!current || rows.indexOf(current) < 0) {
      const id = current ? current.getAttribute("data-job-id") : null;
      current = rows.find(function (r) { return r.getAttribute("data-job-id") === id; }) || rows[0];
    }
    rows.forEach(function (r) { r.tabIndex = r === current ? 0 : -1; });
  }
  function focusRow(row) {
    if (!row) return;
    if (current && current !== row) current.tabIndex = -1;
    current = row;
    row.tabIndex = 0;
    row.focus();
  }
  document.addEventListener("focusin", function (event) {
    const row = event.target.closest ? event.target.closest("#job-rows tr.job-row") : null;
    if (row && row !== current) {
      if (current) current.tabIndex = -1;
      current = row;
      row.tabIndex = 0;
    }
  });
  document.addEventListener("keydown", function (event) {
    const target = event.target;
    if (event.key === "/" && !isTyping(target) && !event.ctrlKey && !event.metaKey) {
      const toggle = document.getElementById("show-filters");
      const row = document.getElementById("grid-filter-row");
      if (toggle && row && row.offsetParent === null) toggle.checked = true;
      const first = row ? row.querySelector(FOCUSABLE_FILTER) : null;
      if (first) { event.preventDefault(); first.focus(); }
      return;
    }
    if (event.key === "Escape") {
      const open = target.closest ? target.closest("details[open]") : null;
      if (open) {
        open.open = false;
        const summary = open.querySelector("summary");
        if (summary) summary.focus();
        event.preventDefault();
        return;
      }
      if (target.closest && target.closest("#grid-filter-row, #grid-chips, #grid-filters")) {
        event.preventDefault();
        const rows = jobRows();
        if (rows.length) focusRow(current && rows.indexOf(current) >= 0 ? current : rows[0]);
        else target.blur();
      }
      return;
    }
    const row = target.closest ? target.closest("#job-rows tr.job-row") : null;
    if (!row || target !== row) return;
    const rows = jobRows();
    const i = rows.indexOf(row);
    let next = null;
    switch (event.key) {
      case "ArrowDown": next = rows[Math.min(i + 1, rows.length - 1)]; break;
      case "ArrowUp": next = rows[Math.max(i - 1, 0)]; break;
      case "Home": next = rows[0]; break;
      case "End": next = rows[rows.length - 1]; break;
      case "PageDown": next = rows[Math.min(i + PAGE_STEP, rows.length - 1)]; break;
      case "PageUp": next = rows[Math.max(i - PAGE_STEP, 0)]; break;
      case " ": {
        const box = row.querySelector("input.row-select");
        if (box) { box.checked = !box.checked; lastClicked = box.value; syncSelection(); }
        event.preventDefault();
        return;
      }
      case "Enter": openJob(row); event.preventDefault(); return;
      default: return;
    }
    event.preventDefault();
    focusRow(next);
    next.scrollIntoView({ block: "nearest" });
  });

  setupRoving();
  syncSelection();
})();

// The jobs grid's columns (templates/lookout/grid/_chooser.html and the header's resize
// handles): the column chooser shows, hides and moves columns (by keyboard: the move buttons
// keep focus), adds annotation columns and resets to the default; a header's edge is dragged
// with the mouse, or focused and moved with the arrow keys (Shift: five steps). Every change
// is saved for the viewer on the server (POST lookout:grid-columns), so the next visit, in
// any browser, renders the grid so from the start; after a change of columns the grid is
// re-read without reloading the page. Without JavaScript the chooser is a plain form.
(function () {
  "use strict";
  if (!document.getElementById("grid-page")) return;

  const SAVE_DELAY = 500;
  const WIDTH_STEP = 10;

  function readState() {
    const el = document.getElementById("grid-state");
    try { return el ? JSON.parse(el.textContent) : {}; } catch (err) { return {}; }
  }
  let state = readState();
  document.addEventListener("htmx:historyRestore", function () { state = readState(); });

  // --- saving the column choice ---------------------------------------------------------

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (match) return decodeURIComponent(match[1]);
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }
  function say(text) {
    const status = document.getElementById("chooser-status");
    if (status) status.textContent = text;
  }
  async function postColumns(body) {
    const page = document.getElementById("grid-page");
    const response = await fetch(page.getAttribute("data-columns-url"), {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify(body),
    });
    const data = await response.json().catch(function () { return {}; });
    if (!response.ok) throw new Error(data.message || "not saved (" + response.status + ")");
    state.saved = data.saved ? { visible: data.visible, widths: data.widths } : { visible: null, widths: {} };
    return data;
  }
  function savedWidths() { return Object.assign({}, (state.saved && state.saved.widths) || {}); }

  // The page as the saved choice shows it: re-read without the URL's own ?columns=.
  async function reloadGrid() {
    const url = new URL(window.location.href);
    url.searchParams.delete("columns");
    url.searchParams.delete("annotations");
    const response = await fetch(url, { credentials: "same-origin" });
    const html = await response.text();
    const doc = new DOMParser().parseFromString(html, "text/html");
    ["grid-state", "grid-wrap", "grid-pager", "grid-chips", "grid-error", "grid-form-fields"].forEach(function (id) {
      const fresh = doc.getElementById(id);
      const old = document.getElementById(id);
      if (fresh && old) {
        old.replaceWith(fresh);
        if (window.htmx) window.htmx.process(fresh);
      }
    });
    state = readState();
    window.history.replaceState(window.history.state, "", url);
    document.dispatchEvent(new CustomEvent("lookout:rows-changed"));
  }

  // --- the column chooser ------------------------------------------------------------------

  function inChooser(event) {
    return event.target.closest ? event.target.closest("#chooser-form") : null;
  }
  function chooserItems() { return Array.from(document.querySelectorAll("#chooser-list .chooser-item")); }
  function isShown(li) { return li.querySelector("input[name=visible]").checked; }
  function chosenVisible() {
    return chooserItems().filter(isShown).map(function (li) { return li.getAttribute("data-col"); });
  }
  function refreshMoveButtons() {
    const shown = chooserItems().filter(isShown);
    chooserItems().forEach(function (li) {
      const i = shown.indexOf(li);
      const [up, down] = li.querySelectorAll(".chooser-moves button");
      up.disabled = i <= 0;
      down.disabled = i < 0 || i === shown.length - 1;
    });
  }
  // Saves run one after another (two quick moves must not reload the grid out of order,
  // or swap its header under a hand already resizing a column); the chooser says it is busy
  // (aria-busy) until the last one is done.
  let saving = Promise.resolve();
  let waiting = 0;
  function saveChoice(message) {
    const visible = chosenVisible();
    if (!visible.length) { say("Keep at least one column."); return Promise.resolve(); }
    const form = document.getElementById("chooser-form");
    waiting += 1;
    if (form) form.setAttribute("aria-busy", "true");
    saving = saving.then(async function () {
      try {
        say("Saving…");
        await postColumns({ visible: visible, widths: savedWidths() });
        await reloadGrid();
        say(message || "Saved.");
      } catch (err) {
        say(String(err.message || err));
      } finally {
        waiting -= 1;
        const now = document.getElementById("chooser-form");
        if (now && waiting === 0) now.setAttribute("aria-busy", "false");
      }
    });
    return saving;
  }
  function itemLabel(li) { return li.querySelector("label").textContent.trim(); }
  async function moveColumn(button) {
    const [direction, key] = button.value.split(/:(.*)/s);
    const shown = chooserItems().filter(isShown);
    const li = shown.find(function (item) { return item.getAttribute("data-col") === key; });
    const other = shown[shown.indexOf(li) + (direction === "up" ? -1 : 1)];
    if (!li || !other) return;
    if (direction === "up") other.before(li); else other.after(li);
    refreshMoveButtons();
    const again = li.querySelector(".chooser-moves button[value='" + direction + ":" + CSS.escape(key) + "']");
    if (again && !again.disabled) again.focus();
    else li.querySelector("input[name=visible]").focus();
    await saveChoice(itemLabel(li) + " moved " + direction + ".");
  }
  async function addColumn() {
    const input = document.getElementById("chooser-add");
    const key = input ? input.value.trim() : "";
    if (!key) { await saveChoice(); return; }
    const full = key.indexOf("annotation:") === 0 ? key : "annotation:" + key;
    const visible = chosenVisible().filter(function (k) { return k !== full; }).concat([full]);
    try {
      say("Saving…");
      await postColumns({ visible: visible, widths: savedWidths() });
      window.location.reload(); // the chooser lists the new column
    } catch (err) { say(String(err.message || err)); }
  }
  async function resetColumns() {
    try {
      say("Resetting…");
      await postColumns({ reset: true });
      const url = new URL(window.location.href);
      url.searchParams.delete("columns");
      url.searchParams.delete("annotations");
      window.location.assign(url.toString()); // the chooser lists the default order
    } catch (err) { say(String(err.message || err)); }
  }
  if (document.getElementById("chooser-form")) refreshMoveButtons();
  document.addEventListener("change", function (event) {
    if (!inChooser(event) || event.target.name !== "visible") return;
    refreshMoveButtons();
    saveChoice(itemLabel(event.target.closest("li")) + (event.target.checked ? " shown." : " hidden."));
  });
  document.addEventListener("submit", function (event) {
    if (!inChooser(event)) return;
    event.preventDefault();
    const button = event.submitter;
    const name = button ? button.name : "";
    if (name === "move") moveColumn(button);
    else if (name === "reset") resetColumns();
    else addColumn();
  });

  // --- resizing columns ------------------------------------------------------------------

  let saveTimer = null;
  function colFor(key) {
    return document.querySelector("#grid-cols col[data-col='" + CSS.escape(key) + "']");
  }
  function setWidth(handle, width) {
    const min = Number(handle.getAttribute("aria-valuemin")) || 40;
    const max = Number(handle.getAttribute("aria-valuemax")) || 800;
    const snapped = Math.max(min, Math.min(max, Math.round(width / WIDTH_STEP) * WIDTH_STEP));
    const key = handle.getAttribute("data-col");
    const col = colFor(key);
    if (col) col.style.width = snapped + "px";
    handle.setAttribute("aria-valuenow", String(snapped));
    return snapped;
  }
  function saveWidth(key, width) {
    window.clearTimeout(saveTimer);
    const widths = savedWidths();
    widths[key] = width;
    if (!state.saved) state.saved = { visible: null, widths: {} };
    state.saved.widths = widths;
    saveTimer = window.setTimeout(function () {
      const visible = (state.saved && state.saved.visible) ||
        (state.columnsInUrl ? state.defaults : state.columns);
      postColumns({ visible: visible, widths: widths }).catch(function (err) { say(String(err.message || err)); });
    }, SAVE_DELAY);
  }
  document.addEventListener("keydown", function (event) {
    const handle = event.target;
    if (!handle.classList || !handle.classList.contains("resize")) return;
    const now = Number(handle.getAttribute("aria-valuenow"));
    const step = event.shiftKey ? WIDTH_STEP * 5 : WIDTH_STEP;
    let width = null;
    if (event.key === "ArrowRight") width = now + step;
    else if (event.key === "ArrowLeft") width = now - step;
    else return;
    event.preventDefault();
    saveWidth(handle.getAttribute("data-col"), setWidth(handle, width));
  });
  document.addEventListener("pointerdown", function (event) {
    const handle = event.target;
    if (!handle.classList || !handle.classList.contains("resize") || event.button !== 0) return;
    event.preventDefault();
    const startX = event.clientX;
    const startWidth = Number(handle.getAttribute("aria-valuenow"));
    handle.classList.add("dragging");
    handle.setPointerCapture(event.pointerId);
    function move(e) { setWidth(handle, startWidth + e.clientX - startX); }
    function up() {
      handle.classList.remove("dragging");
      handle.removeEventListener("pointermove", move);
      handle.removeEventListener("pointerup", up);
      handle.removeEventListener("pointercancel", up);
      saveWidth(handle.getAttribute("data-col"), Number(handle.getAttribute("aria-valuenow")));
    }
    handle.addEventListener("pointermove", move);
    handle.addEventListener("pointerup", up);
    handle.addEventListener("pointercancel", up);
  });
  // A click on the handle is not a click on the header's sort link.
  document.addEventListener("click", function (event) {
    if (event.target.classList && event.target.classList.contains("resize")) event.preventDefault();
  }, true);
})();

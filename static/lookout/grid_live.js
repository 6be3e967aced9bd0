// Live updates of the jobs grid (templates/lookout/grid/_live.html): the rows follow the
// event stream instead of being polled.
// - An EventSource on GET /live (lookout.live_views) names the jobs that changed, a batch at
//   a time ("jobs" messages); it reconnects by itself from the last cursor it saw.
// - The rows of those jobs that are on the page are read again from GET /rows?ids=... with
//   the page's own query (one request in flight; what arrives meanwhile waits for the next)
//   and each <tr data-job-id> is replaced in place, keeping its checkbox and focus, and
//   highlighted briefly. A row /rows leaves out no longer matches the filters: it is marked,
//   not removed, so nothing moves under the pointer; the next load drops it.
// - Jobs not on the page that now match are counted in a bar, "N new or changed jobs
//   match", whose Show button loads the first page as the pager's links do.
// - In the grouped view only the visible job rows are updated (counts change on reload).
// - The Live button pauses and resumes (aria-pressed); `live=0` in the address bar keeps a
//   shared view paused. Paused, nothing is fetched; on resume the visible rows are read once.
// After every swap `lookout:rows-changed` is dispatched on document.
(function () {
  "use strict";
  const box = document.getElementById("grid-live");
  if (!box || typeof window.EventSource === "undefined" || typeof window.fetch === "undefined") {
    return;
  }
  const toggle = document.getElementById("grid-live-toggle");
  const status = document.getElementById("grid-live-status");
  const note = document.getElementById("grid-live-note");
  const news = document.getElementById("grid-live-news");
  const newsText = document.getElementById("grid-live-news-text");
  const showButton = document.getElementById("grid-live-show");
  box.hidden = false;

  const MAX_IDS = 200; // what /rows takes at once
  const NEWS_CAP = 200; // jobs counted in the bar at most ("200+")
  const HIGHLIGHT_MS = 2000;
  const RETRY_MIN_MS = 2000;
  const RETRY_MAX_MS = 60000;

  let source = null;
  let cursor = null; // the stream's last cursor
  let catchUp = false; // read the visible rows once when the stream is ready
  let ending = false; // the server said the stream ends (it reconnects by itself)
  let generation = 0; // answers to requests of an earlier generation are dropped
  const pending = new Map(); // job id -> true when an event named it (highlight), false for a plain re-read
  let inFlight = false;
  const matching = new Set(); // jobs off the page that now match
  let reconnectTimer = null;
  let reconnectDelay = RETRY_MIN_MS;
  let fetchRetryTimer = null;

  // The cursor seen last is kept on the element too (what a test or a curious person can read).
  function seen(value) {
    cursor = value;
    box.setAttribute("data-cursor", String(value));
  }

  function isLive() { return toggle.getAttribute("aria-pressed") === "true"; }
  function grouped() { return Boolean(new URL(window.location.href).searchParams.get("group")); }
  function setStatus(text) { if (status.textContent !== text) status.textContent = text; }
  function clock() { return new Date().toTimeString().slice(0, 8); }
  function rowsBody() { return document.getElementById("job-rows"); }
  function pageRows() {
    const body = rowsBody();
    return body ? Array.from(body.querySelectorAll("tr.job-row[data-job-id]")) : [];
  }
  function rowsOf(id) {
    return pageRows().filter(function (row) { return row.getAttribute("data-job-id") === id; });
  }

  // --- the stream --------------------------------------------------------------------------

  function disconnect() {
    if (source) source.close();
    source = null;
    window.clearTimeout(reconnectTimer);
    reconnectTimer = null;
  }

  // ``from``: a cursor to resume from (nothing is missed), or null for "from now", after
  // which the visible rows are read once (whatever changed before is caught up).
  function connect(from) {
    disconnect();
    const url = new URL(box.getAttribute("data-live-url"), window.location.href);
    if (from !== null) url.searchParams.set("after", String(from));
    catchUp = from === null;
    ending = false;
    source = new EventSource(url.toString());
    source.addEventListener("ready", function (event) {
      const data = JSON.parse(event.data);
      seen(data.cursor);
      reconnectDelay = RETRY_MIN_MS;
      if (!/^Updated /.test(status.textContent)) setStatus("Following events");
      if (catchUp) {
        catchUp = false;
        pageRows().forEach(function (row) {
          const id = row.getAttribute("data-job-id");
          if (!pending.has(id)) pending.set(id, false);
        });
        pump();
      }
    });
    source.addEventListener("jobs", function (event) {
      const data = JSON.parse(event.data);
      seen(data.cursor);
      Object.keys(data.jobs).forEach(function (id) { pending.set(id, true); });
      pump();
    });
    // The server ends a stream now and then (event "end"); the browser reconnects at once
    // from its cursor, which is no trouble to report.
    source.addEventListener("end", function (event) {
      seen(JSON.parse(event.data).cursor);
      ending = true;
    });
    source.addEventListener("error", function () {
      if (!isLive()) return;
      const planned = ending;
      ending = false;
      if (planned && source && source.readyState === EventSource.CONNECTING) return;
      setStatus("Reconnecting…");
      if (source && source.readyState === EventSource.CLOSED) {
        // Refused (logged out, server error): the browser gives up; try again later.
        source = null;
        reconnectTimer = window.setTimeout(function () { connect(cursor); }, reconnectDelay);
        reconnectDelay = Math.min(reconnectDelay * 2, RETRY_MAX_MS);
      }
    });
  }

  // --- reading rows again ------------------------------------------------------------------

  function rowsUrl(ids) {
    const url = new URL(box.getAttribute("data-rows-url"), window.location.href);
    const query = new URL(window.location.href).searchParams;
    query.delete("ids");
    query.delete("fragment");
    query.forEach(function (value, key) { url.searchParams.append(key, value); });
    url.searchParams.set("ids", ids.join(","));
    return url.toString();
  }

  // The next request: the pending ids on the page first, then (not grouped) others, which
  // tell whether new or changed jobs match. Ids neither on the page nor wanted are dropped.
  function nextBatch() {
    const onPage = new Set(pageRows().map(function (row) { return row.getAttribute("data-job-id"); }));
    const offPageWanted = !grouped() && matching.size < NEWS_CAP;
    const visible = [];
    const others = [];
    pending.forEach(function (named, id) {
      if (onPage.has(id)) visible.push(id);
      else if (offPageWanted && !matching.has(id)) others.push(id);
      else pending.delete(id);
    });
    const ids = visible.slice(0, MAX_IDS);
    others.slice(0, MAX_IDS - ids.length).forEach(function (id) { ids.push(id); });
    const named = new Map();
    ids.forEach(function (id) { named.set(id, pending.get(id)); pending.delete(id); });
    return named;
  }

  async function pump() {
    if (inFlight || !isLive() || pending.size === 0) return;
    const batch = nextBatch();
    if (batch.size === 0) return;
    const ids = Array.from(batch.keys());
    const mine = generation;
    inFlight = true;
    try {
      const response = await fetch(rowsUrl(ids), {
        credentials: "same-origin",
        headers: { "X-Requested-With": "fetch" },
      });
      if (!response.ok) throw new Error("rows answered " + response.status);
      const html = await response.text();
      if (mine === generation) apply(batch, html);
    } catch (err) {
      if (mine === generation) {
        batch.forEach(function (named, id) { if (!pending.has(id)) pending.set(id, named); });
        setStatus("Update failed; retrying");
        window.clearTimeout(fetchRetryTimer);
        fetchRetryTimer = window.setTimeout(pump, RETRY_MIN_MS);
      }
      inFlight = false;
      return;
    }
    inFlight = false;
    if (pending.size) pump();
  }

  function parseRows(html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    const rows = new Map();
    template.content.querySelectorAll("tr.job-row[data-job-id]").forEach(function (row) {
      rows.set(row.getAttribute("data-job-id"), row);
    });
    return rows;
  }

  function apply(batch, html) {
    const fresh = parseRows(html);
    let swapped = 0;
    let changed = 0;
    batch.forEach(function (named, id) {
      const olds = rowsOf(id);
      if (!olds.length) {
        if (fresh.has(id) && !grouped()) matching.add(id);
        return;
      }
      olds.forEach(function (old) {
        const row = fresh.get(id);
        if (!row) { markStale(old); return; }
        const differs = named || old.getAttribute("data-state") !== row.getAttribute("data-state");
        replaceRow(old, row.cloneNode(true), differs);
        swapped += 1;
        if (differs) changed += 1;
      });
    });
    showNews();
    if (changed) setStatus("Updated " + clock());
    if (swapped) document.dispatchEvent(new CustomEvent("lookout:rows-changed"));
  }

  // Where focus is inside a row: the cell's column and the focusable element's place in it.
  const FOCUSABLE = "a[href], button, input, select, textarea, [tabindex]";
  function focusPlace(row) {
    const active = document.activeElement;
    if (!active || !row.contains(active)) return null;
    if (active === row) return { row: true };
    const cell = active.closest("td, th");
    if (!cell) return { row: true };
    const index = Array.from(cell.querySelectorAll(FOCUSABLE)).indexOf(active);
    return { col: cell.getAttribute("data-col"), cellIndex: cell.cellIndex, index: index };
  }
  function focusTarget(row, place) {
    if (place.row) return row;
    let cell = null;
    if (place.col) cell = row.querySelector('[data-col="' + CSS.escape(place.col) + '"]');
    if (!cell) cell = row.cells[place.cellIndex] || null;
    if (!cell) return row;
    const inside = cell.querySelectorAll(FOCUSABLE);
    return inside[place.index] || inside[0] || row;
  }

  function replaceRow(old, row, highlight) {
    const box = old.querySelector("input.row-select");
    const newBox = row.querySelector("input.row-select");
    if (box && newBox) newBox.checked = box.checked;
    if (old.hasAttribute("tabindex")) row.setAttribute("tabindex", old.getAttribute("tabindex"));
    const place = focusPlace(old);
    old.replaceWith(row);
    if (window.htmx) window.htmx.process(row);
    if (place) focusTarget(row, place).focus({ preventScroll: true });
    if (highlight) {
      row.classList.add("live-changed");
      window.setTimeout(function () { row.classList.remove("live-changed"); }, HIGHLIGHT_MS);
    }
  }

  function markStale(row) {
    if (row.classList.contains("live-stale")) return;
    row.classList.add("live-stale");
    const cell = row.querySelector('td[data-col="state"]') || row.querySelector('td[data-col="id"]') ||
      row.cells[row.cells.length - 1];
    if (!cell) return;
    const mark = document.createElement("span");
    mark.className = "live-note";
    mark.textContent = "no longer matches";
    cell.appendChild(mark);
  }

  // --- the "new or changed jobs" bar ---------------------------------------------------------

  function showNews() {
    const count = matching.size;
    news.hidden = count === 0;
    if (!count) return;
    const many = count >= NEWS_CAP ? NEWS_CAP + "+" : String(count);
    newsText.textContent = many + (count === 1 ? " new or changed job matches" : " new or changed jobs match");
  }

  function clearNews() {
    matching.clear();
    showNews();
  }

  // The first page of the view, through the grid's own request for its rows, header and
  // pager (as the pager's "First page" link does; the server puts the URL in the bar).
  showButton.addEventListener("click", function () {
    const url = new URL(box.getAttribute("data-jobs-url"), window.location.href);
    const query = new URL(window.location.href).searchParams;
    query.delete("after");
    query.delete("before");
    query.delete("fragment");
    url.search = query.toString();
    clearNews();
    if (window.htmx && rowsBody()) {
      window.htmx.ajax("GET", url.pathname + url.search, {
        source: showButton,
        target: "#job-rows",
        select: "#job-rows",
        swap: "outerHTML",
      });
    } else {
      window.location.assign(url.toString());
    }
  });
  const oob = box.getAttribute("data-oob");
  if (oob) showButton.setAttribute("hx-select-oob", oob);

  // A new view (filters, sort, page, grouping) through htmx: what the bar counted was about
  // the old one.
  document.addEventListener("htmx:afterSwap", function (event) {
    const target = event.detail && event.detail.target;
    if (target && (target.id === "job-rows" || target === rowsBody())) clearNews();
    showGroupedNote();
  });

  // --- pause and resume ----------------------------------------------------------------------

  function showGroupedNote() { note.hidden = !(isLive() && grouped()); }

  function setLiveInUrl(live) {
    const url = new URL(window.location.href);
    if (live) url.searchParams.delete("live");
    else url.searchParams.set("live", "0");
    window.history.replaceState(window.history.state, "", url.toString());
  }

  function pause() {
    generation += 1;
    disconnect();
    pending.clear();
    window.clearTimeout(fetchRetryTimer);
    inFlight = false;
    toggle.setAttribute("aria-pressed", "false");
    setLiveInUrl(false);
    setStatus("Paused");
    showGroupedNote();
  }

  function resume() {
    generation += 1;
    toggle.setAttribute("aria-pressed", "true");
    setLiveInUrl(true);
    setStatus("Connecting…");
    showGroupedNote();
    connect(null);
  }

  toggle.addEventListener("click", function () {
    if (isLive()) pause();
    else resume();
  });

  window.addEventListener("pagehide", disconnect);

  showGroupedNote();
  if (isLive()) {
    setStatus("Connecting…");
    connect(null);
  } else {
    setStatus("Paused");
  }
})();

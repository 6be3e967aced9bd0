// The jobs grid's bulk actions (templates/lookout/grid/_actions.html): Cancel, Reprioritize,
// Preempt and Copy ids act on the rows whose checkbox is ticked
// (`#job-rows input.row-select:checked`, kept by grid.js, which announces each change with
// `lookout:selection`).
//
// An action opens a modal <dialog>: it asks the server what the action would do
// (POST /jobs/bulk/<action>/check answers "Cancel 7 of the 12 selected jobs? 2 are already
// finished; ..."), takes a reason or the new priority, and on confirmation posts to
// /jobs/bulk/<action>. The outcome is shown in the toolbar, the selection is cleared and the
// selected rows are read again from the grid's rows endpoint (GET /rows?ids=...&<the page's
// query>): each is replaced, or removed when it no longer matches the filters, and
// `lookout:rows-changed` is dispatched. Escape or Close shuts the dialog and gives focus back
// to the button that opened it. The server checks every permission; this only helps.
(function () {
  "use strict";

  const bar = document.getElementById("bulk-actions");
  if (!bar) return;
  const dialog = document.getElementById("bulk-dialog");
  const form = document.getElementById("bulk-form");
  const title = document.getElementById("bulk-dialog-title");
  const plan = document.getElementById("bulk-plan");
  const errorBox = document.getElementById("bulk-error");
  const confirmButton = document.getElementById("bulk-confirm");
  const closeButton = document.getElementById("bulk-close");
  const idsInput = document.getElementById("bulk-ids");
  const nextInput = document.getElementById("bulk-next");
  const copyText = document.getElementById("bulk-copy-text");
  const count = document.getElementById("bulk-count");
  const message = document.getElementById("bulk-message");
  const buttons = Array.from(bar.querySelectorAll("button[data-bulk]"));

  const ACTIVE = new Set(["leased", "pending", "running"]);
  const MAX_ROWS_PER_READ = 200; // what the rows endpoint answers at once
  const TITLES = {
    cancel: "Cancel the selected jobs",
    reprioritize: "Reprioritize the selected jobs",
    preempt: "Preempt the selected jobs",
    copy: "Copy the selected job ids",
  };
  const VERBS = { cancel: "Cancel", reprioritize: "Set the priority of", preempt: "Preempt" };
  const FIELDS = { cancel: "reason", preempt: "reason", reprioritize: "priority", copy: "copy" };

  let opener = null; // the button that opened the dialog
  let current = null; // {action, ids, url}
  let asked = 0; // numbers the checks, so that a late answer to an old one is dropped

  function selectedBoxes() {
    return Array.from(document.querySelectorAll("#job-rows input.row-select:checked"));
  }

  function rowOf(id) {
    return document.querySelector('#job-rows tr[data-job-id="' + CSS.escape(id) + '"]');
  }

  function plural(n, word) {
    return n + " " + word + (n === 1 ? "" : "s");
  }

  // --- the toolbar follows the selection ------------------------------------------------

  function update() {
    const boxes = selectedBoxes();
    const states = boxes.map(function (box) {
      const row = box.closest("tr[data-job-id]");
      return row ? row.dataset.state || "" : "";
    });
    const anyActive = states.some(function (s) { return ACTIVE.has(s) || s === ""; });
    count.textContent = boxes.length ? boxes.length + " selected" : "None selected";
    buttons.forEach(function (button) {
      const action = button.dataset.bulk;
      button.disabled = !boxes.length || (action === "preempt" && !anyActive);
    });
  }

  document.addEventListener("lookout:selection", update);
  document.addEventListener("lookout:rows-changed", update);
  document.addEventListener("change", function (event) {
    if (event.target instanceof Element && event.target.matches("#job-grid input[type=checkbox]")) {
      update();
    }
  });

  // --- talking to the server -------------------------------------------------------------

  function csrfToken() {
    const input = form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function post(url, body) {
    return fetch(url, {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { "HX-Request": "true", "X-CSRFToken": csrfToken() },
    }).then(function (response) {
      return response.text().then(function (html) {
        return { status: response.status, ok: response.ok, html: html };
      });
    });
  }

  function fragment(html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    return template.content;
  }

  function show(where, html) {
    where.replaceChildren(fragment(html));
  }

  function say(where, text, kind) {
    const box = document.createElement("div");
    box.className = "bulk-result bulk-" + kind;
    box.setAttribute("role", kind === "error" ? "alert" : "status");
    const p = document.createElement("p");
    p.textContent = text;
    box.appendChild(p);
    where.replaceChildren(box);
  }

  // --- the dialog ------------------------------------------------------------------------

  function showField(name) {
    form.querySelectorAll("[data-bulk-field]").forEach(function (field) {
      const on = field.dataset.bulkField === name;
      field.hidden = !on;
      field.querySelectorAll("input").forEach(function (input) { input.disabled = !on; });
    });
  }

  function open(button, action, ids) {
    opener = button;
    current = { action: action, ids: ids, url: button.dataset.url || "" };
    title.textContent = TITLES[action];
    idsInput.value = ids.join(",");
    nextInput.value = window.location.pathname + window.location.search;
    errorBox.replaceChildren();
    showField(FIELDS[action]);
    confirmButton.hidden = action === "copy";
    confirmButton.disabled = true;
    confirmButton.textContent = "Confirm";
    confirmButton.className = action === "cancel" ? "danger" : "";
    if (action === "copy") {
      say(plan, plural(ids.length, "id") + ": the clipboard cannot be written here.", "ok");
      copyText.value = ids.join("\n");
    } else {
      say(plan, "Checking the " + plural(ids.length, "selected job") + "…", "ok");
      check(button.dataset.checkUrl, ids);
    }
    dialog.showModal();
    const first = action === "copy" ? copyText : form.querySelector("[data-bulk-field]:not([hidden]) input");
    if (first) first.focus();
    if (action === "copy") copyText.select();
  }

  function check(url, ids) {
    const mine = ++asked;
    const body = new FormData();
    body.append("ids", ids.join(","));
    post(url, body).then(function (answer) {
      if (mine !== asked || !dialog.open) return;
      show(plan, answer.html);
      const found = plan.querySelector("[data-applies]");
      const applies = found ? Number(found.dataset.applies) : 0;
      confirmButton.disabled = !answer.ok || applies === 0;
      if (applies > 0) {
        confirmButton.textContent = VERBS[current.action] + " " + plural(applies, "job");
      }
    }, function () {
      if (mine !== asked) return;
      say(plan, "Could not check the selected jobs: the server did not answer.", "error");
    });
  }

  dialog.addEventListener("close", function () {
    asked++;
    if (opener && !opener.disabled && document.activeElement !== opener) opener.focus();
  });
  closeButton.addEventListener("click", function () { dialog.close(); });

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (!current || current.action === "copy") return;
    confirmButton.disabled = true;
    const sent = current;
    post(sent.url, new FormData(form)).then(function (answer) {
      if (answer.status === 400) { // a field to correct: the dialog stays open
        show(errorBox, answer.html);
        confirmButton.disabled = false;
        return;
      }
      show(message, answer.html);
      opener = null;
      dialog.close();
      clearSelection(sent.ids);
      message.focus();
      refreshRows(sent.ids);
    }, function () {
      say(errorBox, "The request failed: the server did not answer. Nothing may have changed; check the jobs.", "error");
      confirmButton.disabled = false;
    });
  });

  // --- after an action: the selection and the rows -------------------------------------

  function clearSelection(ids) {
    ids.forEach(function (id) {
      const row = rowOf(id);
      const box = row && row.querySelector("input.row-select");
      if (box && box.checked) {
        box.checked = false;
        box.dispatchEvent(new Event("change", { bubbles: true }));
      }
    });
    update();
  }

  function refreshRows(ids) {
    const url = bar.dataset.rowsUrl;
    if (!url) return;
    const query = new URLSearchParams(window.location.search);
    query.delete("ids");
    query.delete("fragment");
    const reads = [];
    for (let start = 0; start < ids.length; start += MAX_ROWS_PER_READ) {
      const part = ids.slice(start, start + MAX_ROWS_PER_READ);
      const params = new URLSearchParams(query);
      params.set("ids", part.join(","));
      reads.push(
        fetch(url + "?" + params.toString(), {
          credentials: "same-origin",
          headers: { "HX-Request": "true" },
        }).then(function (response) {
          if (!response.ok) throw new Error(String(response.status));
          return response.text();
        }).then(function (html) { replaceRows(part, html); })
      );
    }
    Promise.all(reads).then(function () {
      document.dispatchEvent(new CustomEvent("lookout:rows-changed", { detail: { ids: ids } }));
    }, function () {
      const note = document.createElement("p");
      note.textContent = "The rows could not be read again: reload the page to see their state.";
      message.appendChild(note);
    });
  }

  function replaceRows(ids, html) {
    const table = document.createElement("template");
    table.innerHTML = "<table><tbody>" + html + "</tbody></table>";
    const fresh = {};
    table.content.querySelectorAll("tr[data-job-id]").forEach(function (row) {
      fresh[row.dataset.jobId] = row;
    });
    ids.forEach(function (id) {
      const old = rowOf(id);
      if (!old) return;
      if (fresh[id]) {
        // Ticked again since the action cleared it: keep it ticked.
        const was = old.querySelector("input.row-select");
        const box = fresh[id].querySelector("input.row-select");
        if (was && box && was.checked) box.checked = true;
        old.replaceWith(fresh[id]);
        if (window.htmx) window.htmx.process(fresh[id]);
      } else {
        old.remove(); // it no longer matches the view's filters
      }
    });
  }

  // --- copy ids ----------------------------------------------------------------------------

  function copyIds(button, ids) {
    const text = ids.join("\n");
    if (!navigator.clipboard || !window.isSecureContext) {
      open(button, "copy", ids);
      return;
    }
    navigator.clipboard.writeText(text).then(function () {
      say(message, "Copied " + plural(ids.length, "id") + ".", "ok");
    }, function () {
      open(button, "copy", ids);
    });
  }

  buttons.forEach(function (button) {
    button.addEventListener("click", function () {
      const ids = selectedBoxes().map(function (box) { return box.value; });
      if (!ids.length) return;
      if (button.dataset.bulk === "copy") copyIds(button, ids);
      else open(button, button.dataset.bulk, ids);
    });
  });

  update();
})();

/* The grouped jobs grid: expanding and collapsing group rows in place.
 *
 * A group row (tr.group-row, data-level = its depth, data-expanded) holds a toggle button
 * (aria-expanded, aria-controls naming the rows it shows) whose data-children-url answers
 * the rows below the group (the next level's group rows, or job rows ending with a "more"
 * row). Expanding inserts them right after the group row;
 * collapsing removes every row after it up to the next row whose data-level is the group's
 * or less (job rows carry no level: they go with the group above them). The expanded
 * groups are kept in the URL as repeated `expanded=<path JSON>` parameters, so a shared URL
 * reopens them (the server renders those open). Keyboard: Enter or Space on a toggle
 * toggles it, ArrowRight expands (or, when open, moves to the first child group),
 * ArrowLeft collapses (or, when closed, moves to the parent group).
 * After rows are inserted or removed, `lookout:rows-changed` is dispatched on document.
 */
(function () {
  "use strict";

  function levelOf(row) {
    var value = row.getAttribute("data-level");
    return value === null ? null : parseInt(value, 10);
  }

  function isGroupRow(row) {
    return row.classList.contains("group-row");
  }

  /* Every row below a group row (its children and theirs). */
  function descendants(row) {
    var level = levelOf(row);
    var rows = [];
    var next = row.nextElementSibling;
    while (next) {
      var nextLevel = levelOf(next);
      if (nextLevel !== null && nextLevel <= level) {
        break;
      }
      rows.push(next);
      next = next.nextElementSibling;
    }
    return rows;
  }

  /* The rows right below a group row: its child group rows, or its job rows. */
  function children(row) {
    var below = descendants(row);
    var groups = below.filter(function (r) {
      return isGroupRow(r) && levelOf(r) === levelOf(row) + 1;
    });
    return groups.length ? groups : below;
  }

  function toggleOf(row) {
    return row.querySelector("button.group-toggle");
  }

  /* aria-controls names the rows the toggle shows; rows without an id get one. */
  function nameChildren(row) {
    var toggle = toggleOf(row);
    if (!toggle) {
      return;
    }
    if (row.getAttribute("data-expanded") !== "true") {
      toggle.setAttribute("aria-controls", row.id + "-children");
      return;
    }
    var ids = children(row).map(function (child, i) {
      if (!child.id) {
        var jobId = child.getAttribute("data-job-id");
        child.id = row.id + "-" + (jobId ? "job-" + jobId : "row-" + i);
      }
      return child.id;
    });
    toggle.setAttribute("aria-controls", ids.join(" ") || row.id + "-children");
  }

  function setExpanded(row, open) {
    var value = open ? "true" : "false";
    row.setAttribute("data-expanded", value);
    var toggle = toggleOf(row);
    if (toggle) {
      toggle.setAttribute("aria-expanded", value);
    }
    nameChildren(row);
  }

  function rowsChanged() {
    document.dispatchEvent(new CustomEvent("lookout:rows-changed"));
  }

  // --- the URL's expanded list -------------------------------------------------------------

  function parsePath(text) {
    try {
      var path = JSON.parse(text);
      return Array.isArray(path) ? path : null;
    } catch (e) {
      return null;
    }
  }

  /* Whether path `inner` is `outer` or below it. */
  function within(inner, outer) {
    if (!inner || !outer || inner.length < outer.length) {
      return false;
    }
    return outer.every(function (pair, i) {
      return inner[i][0] === pair[0] && inner[i][1] === pair[1];
    });
  }

  function writeExpanded(change) {
    var params = new URLSearchParams(window.location.search);
    var list = change(params.getAll("expanded"));
    params.delete("expanded");
    list.forEach(function (path) {
      params.append("expanded", path);
    });
    var query = params.toString();
    var url = window.location.pathname + (query ? "?" + query : "") + window.location.hash;
    window.history.replaceState(window.history.state, "", url);
  }

  function rememberOpen(pathText) {
    writeExpanded(function (list) {
      return list.indexOf(pathText) === -1 ? list.concat([pathText]) : list;
    });
  }

  function forgetOpen(pathText) {
    var closed = parsePath(pathText);
    writeExpanded(function (list) {
      return list.filter(function (text) {
        return !within(parsePath(text), closed);
      });
    });
  }

  // --- expanding and collapsing ------------------------------------------------------------

  function fetchRows(url) {
    return window
      .fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (response) {
        return response.text().then(function (text) {
          return { ok: response.ok, status: response.status, text: text };
        });
      });
  }

  /* Insert `html` (table rows) after `anchor`; returns the inserted rows. */
  function insertRows(anchor, html) {
    var before = anchor.nextElementSibling;
    anchor.insertAdjacentHTML("afterend", html);
    var rows = [];
    var row = anchor.nextElementSibling;
    while (row && row !== before) {
      rows.push(row);
      row = row.nextElementSibling;
    }
    if (window.htmx) {
      rows.forEach(function (r) {
        window.htmx.process(r);
      });
    }
    return rows;
  }

  function errorRow(anchor, level, message) {
    var row = document.createElement("tr");
    row.className = "group-note group-error";
    row.setAttribute("data-level", String(level));
    var cell = document.createElement("td");
    cell.colSpan = anchor.cells.length ? anchor.cells[0].colSpan : 1;
    cell.className = "group-note-cell";
    var text = document.createElement("span");
    text.setAttribute("role", "alert");
    text.textContent = message;
    cell.appendChild(text);
    row.appendChild(cell);
    anchor.after(row);
    return row;
  }

  // A refusal is the API's error shape: {"message": ..., "errors": [...]}.
  function refusal(text) {
    try {
      return JSON.parse(text).message || text;
    } catch (err) {
      return text;
    }
  }

  function expand(row) {
    var toggle = toggleOf(row);
    if (!toggle || row.getAttribute("data-expanded") === "true" || row.dataset.loading) {
      return;
    }
    row.dataset.loading = "1";
    toggle.setAttribute("aria-busy", "true");
    fetchRows(toggle.getAttribute("data-children-url"))
      .then(function (answer) {
        if (!answer.ok) {
          // Shown below the group (collapsing removes it); the URL does not keep it open.
          var message = answer.status === 400 ? refusal(answer.text) : "The group could not be opened";
          errorRow(row, levelOf(row) + 1, message + " (" + answer.status + ")");
          setExpanded(row, true);
          return;
        }
        insertRows(row, answer.text);
        setExpanded(row, true);
        rememberOpen(row.getAttribute("data-group-path"));
        rowsChanged();
      })
      .catch(function () {
        errorRow(row, levelOf(row) + 1, "The group could not be opened: no answer");
        setExpanded(row, true);
      })
      .finally(function () {
        delete row.dataset.loading;
        toggle.removeAttribute("aria-busy");
      });
  }

  function collapse(row) {
    if (row.getAttribute("data-expanded") !== "true") {
      return;
    }
    descendants(row).forEach(function (r) {
      r.remove();
    });
    setExpanded(row, false);
    forgetOpen(row.getAttribute("data-group-path"));
    rowsChanged();
  }

  function loadMore(button) {
    var row = button.closest("tr");
    if (!row || button.disabled) {
      return;
    }
    button.disabled = true;
    fetchRows(button.getAttribute("data-more-url"))
      .then(function (answer) {
        if (!answer.ok) {
          button.disabled = false;
          errorRow(row, levelOf(row), answer.text + " (" + answer.status + ")");
          return;
        }
        var rows = insertRows(row, answer.text);
        row.remove();
        var group = groupAbove(rows.length ? rows[0] : null);
        if (group) {
          nameChildren(group);
        }
        var first = rows.find(function (r) {
          return r.classList.contains("job-row") || r.querySelector("button");
        });
        if (first) {
          (first.classList.contains("job-row") ? first : first.querySelector("button")).focus();
        }
        rowsChanged();
      })
      .catch(function () {
        button.disabled = false;
      });
  }

  /* The group row a row is below (the nearest group row before it of a smaller level). */
  function groupAbove(row) {
    if (!row) {
      return null;
    }
    var level = levelOf(row);
    var previous = row.previousElementSibling;
    while (previous) {
      if (isGroupRow(previous) && (level === null || levelOf(previous) < level)) {
        return previous;
      }
      previous = previous.previousElementSibling;
    }
    return null;
  }

  // --- events ------------------------------------------------------------------------------

  document.addEventListener("click", function (event) {
    var toggle = event.target.closest("button.group-toggle");
    if (toggle) {
      var row = toggle.closest("tr.group-row");
      if (row.getAttribute("data-expanded") === "true") {
        collapse(row);
      } else {
        expand(row);
      }
      return;
    }
    var more = event.target.closest("button.group-more-button");
    if (more) {
      loadMore(more);
    }
  });

  // In the capture phase: the grid's own row keys must not also act on a group's toggle.
  function onKey(event) {
    var toggle = event.target.closest && event.target.closest("button.group-toggle");
    if (!toggle || event.altKey || event.ctrlKey || event.metaKey) {
      return;
    }
    var row = toggle.closest("tr.group-row");
    var open = row.getAttribute("data-expanded") === "true";
    var target = null;
    if (event.key === "ArrowRight") {
      if (!open) {
        expand(row);
      } else {
        var first = children(row)[0];
        target = first && isGroupRow(first) ? toggleOf(first) : null;
      }
    } else if (event.key === "ArrowLeft") {
      if (open) {
        collapse(row);
      } else {
        var parent = groupAbove(row);
        target = parent ? toggleOf(parent) : null;
      }
    } else {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    if (target) {
      target.focus();
    }
  }

  document.addEventListener("keydown", onKey, true);

  /* Rows the server rendered open (a shared URL) get their aria-controls, and so do rows
   * swapped in again by others (a live update replaces a job row, without its id). */
  function nameAll() {
    document.querySelectorAll("tr.group-row[data-expanded='true']").forEach(nameChildren);
  }

  document.addEventListener("lookout:rows-changed", nameAll);

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", nameAll);
  } else {
    nameAll();
  }
  document.addEventListener("htmx:afterSwap", nameAll);
})();

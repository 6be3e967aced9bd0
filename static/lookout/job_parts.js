// A job's parts, on its full page and in the side panel: the log viewer and the YAML copy
// button. The full page sets itself up on load; the panel calls LookoutJob.init(panel)
// whenever it shows a job.
//
// The log viewer shows one run's log as text (textContent: never parsed as HTML), picks
// another run, wraps or not, searches (case-insensitive, matches marked, next/previous, a
// count) and follows an active run: it asks GET /runs/<id>/log?after=<etag> at most once a
// second (304 while nothing changed), and stops when the run has ended, Follow is unticked
// or the viewer has left the page (the panel closed). New text keeps the log scrolled to
// its end only while the reader has not scrolled up.
(function () {
  "use strict";
  const POLL_MS = 1000;
  const MAX_MARKS = 5000;

  function escapeRegExp(text) {
    return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }

  function etagOf(response) {
    return (response.headers.get("ETag") || "").replace(/^W\//, "").replace(/"/g, "");
  }

  function setUpViewer(root) {
    const pre = root.querySelector("pre.log");
    const picker = root.querySelector("select.log-run");
    const tools = root.querySelector(".log-tools");
    const wrap = root.querySelector("input.log-wrap");
    const follow = root.querySelector("input.log-follow");
    const followLabel = root.querySelector(".log-follow-label");
    const search = root.querySelector("input.log-search");
    const count = root.querySelector(".log-count");
    const status = root.querySelector(".log-status");
    const download = root.querySelector("a.log-download");
    const state = {
      url: root.dataset.followUrl,
      etag: root.dataset.etag || "",
      active: root.dataset.active === "1",
      truncated: root.dataset.truncated === "1",
      notice: "",
      text: pre.textContent,
      marks: [],
      current: -1,
      stick: true,
      timer: null,
      generation: 0,
    };

    root.querySelectorAll(".log-show").forEach(function (button) {
      button.hidden = true;
    });
    tools.hidden = false;

    function atBottom() {
      return pre.scrollHeight - pre.scrollTop - pre.clientHeight < 8;
    }

    function toBottom() {
      pre.scrollTop = pre.scrollHeight;
    }

    function showCount() {
      if (!search.value) count.textContent = "";
      else if (!state.marks.length) count.textContent = "No matches";
      else count.textContent = state.current + 1 + " of " + state.marks.length;
    }

    function markCurrent(scroll) {
      state.marks.forEach(function (mark, index) {
        mark.classList.toggle("current", index === state.current);
      });
      const mark = state.marks[state.current];
      if (mark && scroll) {
        state.stick = false;
        mark.scrollIntoView({ block: "center", inline: "nearest" });
      }
      showCount();
    }

    function render() {
      const query = search.value;
      state.marks = [];
      if (!query) {
        pre.textContent = state.text;
        state.current = -1;
        showCount();
        return;
      }
      const pattern = new RegExp(escapeRegExp(query), "gi");
      const parts = document.createDocumentFragment();
      let from = 0;
      let match;
      while ((match = pattern.exec(state.text)) !== null && state.marks.length < MAX_MARKS) {
        if (match.index > from) {
          parts.appendChild(document.createTextNode(state.text.slice(from, match.index)));
        }
        const mark = document.createElement("mark");
        mark.textContent = match[0];
        parts.appendChild(mark);
        state.marks.push(mark);
        from = match.index + match[0].length;
      }
      parts.appendChild(document.createTextNode(state.text.slice(from)));
      pre.replaceChildren(parts);
      if (state.current >= state.marks.length) state.current = state.marks.length - 1;
      markCurrent(false);
    }

    function setText(text) {
      // At the end (or hidden in a tab while it was at its end): stay at the end.
      const keep = pre.clientHeight ? atBottom() : state.stick;
      state.text = text;
      render();
      if (keep) toBottom();
    }

    function step(by) {
      if (!state.marks.length) return;
      const n = state.marks.length;
      state.current = state.current < 0 ? (by > 0 ? 0 : n - 1) : (state.current + by + n) % n;
      markCurrent(true);
    }

    // The status line: what the viewer is doing, unless something went wrong (``notice``).
    function describe() {
      let text = state.notice;
      if (!text) {
        if (state.active && follow.checked) text = "Following: new lines appear as the run writes them.";
        else if (state.active) text = "Follow is off.";
        else text = "The run has ended.";
        if (state.truncated) text += " The start of this log was not kept: it shows the last part.";
      }
      if (status.textContent !== text) status.textContent = text;
    }

    function learn(response) {
      state.etag = etagOf(response);
      state.active = response.headers.get("X-Run-Active") === "1";
      state.truncated = response.headers.get("X-Log-Truncated") === "1";
      state.notice = "";
    }

    // An answer that is not the log: the session ended (the login form came back) or the
    // server refused (its message says why). Following stops either way.
    function refused(response) {
      state.active = false;
      if (response.redirected) {
        state.notice = "Your session has ended: reload the page to log in again.";
        return Promise.resolve();
      }
      return response.json().then(
        function (answer) { state.notice = "Following stopped: " + answer.message; },
        function () { state.notice = "Following stopped: the server answered " + response.status; }
      );
    }

    function schedule() {
      window.clearTimeout(state.timer);
      state.timer = null;
      followLabel.hidden = !state.active;
      describe();
      if (!state.active || !follow.checked || !document.contains(root)) return;
      state.timer = window.setTimeout(poll, POLL_MS);
    }

    function poll() {
      if (!document.contains(root)) return; // the panel closed or showed another job
      const generation = state.generation;
      const url = state.url + "?after=" + encodeURIComponent(state.etag);
      fetch(url, { credentials: "same-origin", cache: "no-store" })
        .then(function (response) {
          if (generation !== state.generation) return null;
          if (response.status === 304 || response.status === 204) {
            state.active = response.headers.get("X-Run-Active") === "1";
            state.notice = "";
            return null;
          }
          if (response.status !== 200 || response.redirected) return refused(response);
          learn(response);
          return response.text().then(function (text) {
            if (generation === state.generation) setText(text);
          });
        })
        .then(function () {
          if (generation === state.generation) schedule();
        })
        .catch(function () {
          if (generation !== state.generation) return;
          state.notice = "The server did not answer; trying again.";
          describe();
          state.timer = window.setTimeout(poll, POLL_MS * 3);
        });
    }

    function showRun(option) {
      state.generation += 1;
      const generation = state.generation;
      window.clearTimeout(state.timer);
      state.url = option.dataset.textUrl;
      state.active = option.dataset.active === "1";
      state.stick = true;
      download.href = option.dataset.downloadUrl;
      pre.setAttribute("aria-label", "Log of run " + option.value);
      state.notice = "Loading the log of run " + option.value + "…";
      describe();
      fetch(state.url, { credentials: "same-origin", cache: "no-store" })
        .then(function (response) {
          if (generation !== state.generation) return null;
          if (response.status !== 200 || response.redirected) {
            return refused(response).then(schedule);
          }
          learn(response);
          return response.text().then(function (text) {
            if (generation !== state.generation) return;
            setText(text);
            toBottom();
            schedule();
          });
        })
        .catch(function () {
          if (generation !== state.generation) return;
          state.notice = "The log could not be loaded.";
          describe();
        });
    }

    wrap.addEventListener("change", function () {
      pre.classList.toggle("log-nowrap", !wrap.checked);
    });
    follow.addEventListener("change", function () {
      if (follow.checked) {
        state.stick = true;
        toBottom();
      }
      schedule();
    });
    picker.addEventListener("change", function () {
      showRun(picker.options[picker.selectedIndex]);
    });
    picker.closest("form").addEventListener("submit", function (event) {
      event.preventDefault();
      showRun(picker.options[picker.selectedIndex]);
    });
    search.addEventListener("input", function () {
      state.current = -1;
      render();
      if (state.marks.length) step(1);
    });
    search.addEventListener("keydown", function (event) {
      if (event.key !== "Enter") return;
      event.preventDefault();
      step(event.shiftKey ? -1 : 1);
    });
    root.querySelector(".log-next").addEventListener("click", function () {
      step(1);
    });
    root.querySelector(".log-prev").addEventListener("click", function () {
      step(-1);
    });
    pre.addEventListener("scroll", function () {
      if (pre.clientHeight) state.stick = atBottom();
    });
    // A log in a hidden tab has no height yet: go to its end when it is first shown.
    const tabpanel = root.closest("[role=tabpanel]");
    if (tabpanel) {
      tabpanel.addEventListener("lookout:tab-shown", function () {
        if (state.stick) toBottom();
      });
    }

    toBottom();
    schedule();
  }

  function setUpCopy(button) {
    const source = document.querySelector(button.dataset.copy);
    const status = button.parentElement.querySelector(".copy-status");
    if (!source || !navigator.clipboard) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(source.textContent).then(
        function () {
          status.textContent = "Copied.";
        },
        function () {
          status.textContent = "Copying was refused by the browser.";
        }
      );
    });
  }

  function init(scope) {
    scope.querySelectorAll(".log-viewer").forEach(function (root) {
      if (root.dataset.ready) return;
      root.dataset.ready = "1";
      setUpViewer(root);
    });
    scope.querySelectorAll("button.copy-yaml").forEach(function (button) {
      if (button.dataset.ready) return;
      button.dataset.ready = "1";
      setUpCopy(button);
    });
  }

  window.LookoutJob = { init: init };
  init(document);
})();

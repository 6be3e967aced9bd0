// The retry-policy editor: line numbers beside the YAML, a Validate button that asks the
// server to check the document without saving it, and error entries that move the cursor
// to the line they are about (and name the rule, numbered from 1, that a field is in). The
// page works without this file: Save validates on the server and shows the same errors.
// It also shows the "What would this change?" panel, whose form htmx posts with the text
// being edited (the panel needs JavaScript, so it stays hidden without it).
(function () {
  "use strict";

  const form = document.getElementById("policy-form");
  if (!form) {
    return;
  }
  const textarea = form.querySelector("textarea[name=document]");
  const gutter = form.querySelector(".gutter");
  const summary = document.getElementById("editor-errors");
  const validateButton = document.getElementById("validate");
  const csrfInput = form.querySelector("input[name=csrfmiddlewaretoken]");
  let errorLines = new Set();

  function lineCount() {
    return textarea.value.split("\n").length;
  }

  function drawGutter() {
    const lines = [];
    const total = lineCount();
    for (let n = 1; n <= total; n += 1) {
      lines.push(errorLines.has(n) ? "<mark>" + n + "</mark>" : String(n));
    }
    gutter.innerHTML = lines.join("\n");
    gutter.scrollTop = textarea.scrollTop;
  }

  function goToLine(line) {
    const lines = textarea.value.split("\n");
    const index = Math.max(0, Math.min(line, lines.length) - 1);
    let start = 0;
    for (let i = 0; i < index; i += 1) {
      start += lines[i].length + 1;
    }
    textarea.focus();
    textarea.setSelectionRange(start, start + lines[index].length);
    const lineHeight = parseFloat(getComputedStyle(textarea).lineHeight) || 20;
    textarea.scrollTop = Math.max(0, (index - 3) * lineHeight);
    gutter.scrollTop = textarea.scrollTop;
  }

  function addLineButtons(container) {
    container.querySelectorAll("li[data-line]").forEach(function (item) {
      const line = Number(item.dataset.line);
      const button = document.createElement("button");
      button.type = "button";
      button.className = "link";
      button.textContent = "Go to line " + line;
      button.addEventListener("click", function () {
        goToLine(line);
      });
      item.append(" ", button);
    });
  }

  function showErrors(errors) {
    summary.replaceChildren();
    errorLines = new Set();
    const heading = document.createElement("h2");
    if (errors.length === 0) {
      summary.className = "errors ok";
      heading.textContent = "No problems found. Not saved yet: press Save to keep it.";
      summary.append(heading);
      textarea.removeAttribute("aria-invalid");
      drawGutter();
      return;
    }
    summary.className = "errors";
    // Validate only checks (nothing is ever saved by it): say what to do, not what failed.
    heading.textContent =
      errors.length +
      " problem" +
      (errors.length === 1 ? "" : "s") +
      " to fix before saving (Validate checks, it does not save)";
    const list = document.createElement("ul");
    errors.forEach(function (error) {
      const item = document.createElement("li");
      item.dataset.field = error.field;
      if (error.line) {
        item.dataset.line = error.line;
        errorLines.add(error.line);
        const where = document.createElement("span");
        where.className = "where";
        where.textContent = "Line " + error.line;
        item.append(where, " ");
      }
      if (error.field) {
        const code = document.createElement("code");
        code.textContent = error.field;
        item.append(code);
        if (error.rule) {
          // rules[2] is the document's path; a sentence numbers rules from 1: rule 3.
          const rule = document.createElement("span");
          rule.className = "rule-ref";
          rule.textContent = "(rule " + error.rule + ")";
          item.append(" ", rule);
        }
        item.append(": ");
      }
      item.append(error.message);
      list.append(item);
    });
    summary.append(heading, list);
    textarea.setAttribute("aria-invalid", "true");
    addLineButtons(summary);
    drawGutter();
  }

  function validate() {
    validateButton.disabled = true;
    fetch(form.dataset.validateUrl, {
      method: "POST",
      body: new FormData(form),
      headers: { "X-CSRFToken": csrfInput.value, Accept: "application/json" },
      credentials: "same-origin",
    })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("the server answered " + response.status);
        }
        return response.json();
      })
      .then(function (body) {
        showErrors(body.errors);
        summary.focus();
      })
      .catch(function (error) {
        showErrors([{ field: "", message: "Could not validate: " + error.message, line: null }]);
      })
      .finally(function () {
        validateButton.disabled = false;
      });
  }

  // The "What would this change?" panel: htmx posts its form with the textarea (hx-include);
  // here the panel is shown, the From/To fields follow the period chooser, the results
  // region says when it is busy, and the draft's problems in an answer get their "Go to
  // line" buttons and marks in the gutter, as the Validate button's do.
  function setUpBacktest() {
    const panel = document.getElementById("backtest");
    if (!panel) {
      return;
    }
    const period = document.getElementById("backtest-period");
    const between = document.getElementById("backtest-between");
    const results = document.getElementById("backtest-results");
    const backtestForm = document.getElementById("backtest-form");
    const runButton = document.getElementById("backtest-run");
    function showBetween() {
      between.hidden = period.value !== "between";
    }
    period.addEventListener("change", showBetween);
    showBetween();
    backtestForm.addEventListener("htmx:beforeRequest", function () {
      results.setAttribute("aria-busy", "true");
    });
    backtestForm.addEventListener("htmx:afterRequest", function () {
      results.removeAttribute("aria-busy");
    });
    results.addEventListener("htmx:afterSwap", function () {
      errorLines = new Set();
      [summary, results].forEach(function (box) {
        box.querySelectorAll("li[data-line]").forEach(function (item) {
          errorLines.add(Number(item.dataset.line));
        });
      });
      addLineButtons(results);
      drawGutter();
    });
    // The run button is disabled while the request is out, which takes the focus from it;
    // once the answer is in, the focus goes to its problems, or back to the button (the
    // results region is read out as it changes).
    results.addEventListener("htmx:afterSettle", function () {
      const problems = results.querySelector(".errors");
      if (problems) {
        problems.focus();
      } else if (document.activeElement === document.body || !document.activeElement) {
        runButton.focus();
      }
    });
    panel.hidden = false;
  }

  summary.querySelectorAll("li[data-line]").forEach(function (item) {
    errorLines.add(Number(item.dataset.line));
  });
  addLineButtons(summary);
  setUpBacktest();
  textarea.addEventListener("input", drawGutter);
  textarea.addEventListener("scroll", function () {
    gutter.scrollTop = textarea.scrollTop;
  });
  validateButton.hidden = false;
  validateButton.addEventListener("click", validate);
  drawGutter();
  if (summary.querySelector("li")) {
    summary.focus();
  }
})();

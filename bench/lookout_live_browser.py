"""The browser part of ``bench/lookout_live.py``: a real Chromium page on the jobs grid, and
the time from a state change's commit to its row changing on the page (with the page's own
reads of ``/rows`` timed apart)."""

from __future__ import annotations

import time

CHROMIUM = "/usr/bin/chromium"


def browser_part(args, login_url: str, credentials, run_changes, percentiles) -> None:
    """Logs in at ``login_url`` (which leads to the grid), has ``run_changes(ids of the
    page's rows)`` commit state changes and return them with the writer's report, and
    prints how long each took to show on the page."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        # How long the page's reads of /rows take, to tell them from the stream's share.
        page.add_init_script(
            """(() => {
                const fetch = window.fetch.bind(window);
                window.__fetches = [];
                window.fetch = async (url, options) => {
                    const start = performance.now();
                    const answer = await fetch(url, options);
                    await answer.clone().text();
                    if (String(url).includes("/rows?")) {
                        window.__fetches.push(performance.now() - start);
                    }
                    return answer;
                };
            })()"""
        )
        page.goto(login_url)
        page.fill("#id_username", credentials[0])
        page.fill("#id_password", credentials[1])
        page.click("form.login-form button[type=submit]")
        expect(page.locator("#job-rows tr.job-row").first).to_be_visible(timeout=30_000)
        expect(page.locator("#grid-live-status")).to_have_text("Following events", timeout=30_000)
        page.evaluate(
            """() => {
                window.__rows = [];
                const seen = (tr, t) => window.__rows.push([tr.dataset.jobId, tr.dataset.state, t]);
                new MutationObserver(records => {
                    const t = Date.now();
                    for (const r of records) {
                        for (const n of r.addedNodes) {
                            if (n.nodeType === 1 && n.matches("tr.job-row")) seen(n, t);
                        }
                    }
                }).observe(document.getElementById("job-rows"), {childList: true});
            }"""
        )
        visible = page.eval_on_selector_all(
            "#job-rows tr.job-row", "rows => rows.map(r => r.dataset.jobId)"
        )
        changes, report = run_changes(visible)
        time.sleep(5)  # the last changes reach the page
        rows = page.evaluate("window.__rows")
        fetches = [ms / 1000 for ms in page.evaluate("window.__fetches")]
        problems = page.evaluate("document.querySelectorAll('tr.live-stale').length")
        browser.close()
    latencies, missed = [], 0
    for c in changes:
        shown = [t for job, state, t in rows if job == c["job"] and state == c["state"]]
        shown = [t / 1000 for t in shown if t / 1000 >= c["t"] - 0.05]
        if shown:
            latencies.append(min(shown) - c["t"])
        else:
            missed += 1
    print(
        f"browser: {len(visible)} rows on the page, {len(changes)} state changes at "
        f"{args.browser_rate:g}/s beside {args.rate:g} events/s (writer behind "
        f"{report['behind_s']} s), not shown {missed}, marked stale {problems}; "
        f"commit -> row changed: {percentiles(latencies)}; of which the page's read of "
        f"/rows: {percentiles(fetches)}",
        flush=True,
    )

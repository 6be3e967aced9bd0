"""The accessibility check of the browser tests: axe-core (installed by `make install` from
package-lock.json into node_modules) runs inside the page, and a test fails on any violation
of serious or critical impact, naming the rule, the elements and axe's help text."""

from __future__ import annotations

from pathlib import Path

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
FAILING_IMPACTS = ("serious", "critical")


def axe_violations(page, *, impacts: tuple[str, ...] = FAILING_IMPACTS) -> list[str]:
    """axe's violations on the page as it is now, of the given impacts, one line each."""
    if not AXE.exists():
        raise AssertionError(f"{AXE} is missing: `make install` installs it (npm ci)")
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        # Through the DevTools protocol, so the page's content security policy does not apply.
        page.evaluate(AXE.read_text())
    results = page.evaluate(
        """async () => {
            const r = await window.axe.run(document, {resultTypes: ["violations"]});
            return r.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.slice(0, 5).map(n => n.target.join(" ")),
            }));
        }"""
    )
    return [
        f"{v['impact']}: {v['id']} ({v['help']}) at {', '.join(v['nodes'])}"
        for v in results
        if v["impact"] in impacts
    ]


def assert_accessible(page) -> None:
    """No serious or critical axe violation on the page as it is now."""
    problems = axe_violations(page)
    assert not problems, "accessibility violations:\n" + "\n".join(problems)

"""``armadactl backtest retry-policy`` against Django's live server, over the recorded history
of tests/services/test_backtest.py: the tables, ``-o json|yaml``, a stored policy at a
version, the flags' checks (exit 2) and the server's refusals (exit 1, naming the field or
the queue)."""

from __future__ import annotations

import json

import pytest
import yaml

from armada.cli.backtest import render_backtest
from tests.services.backtest_history import NOW, SINCE, STRICTER, history, snapshot  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("history")]
RANGE = ("--from", SINCE.isoformat(), "--to", NOW.isoformat())
ROOT = ("root", "root-password")


@pytest.fixture
def draft(tmp_path):
    path = tmp_path / "draft.yaml"
    path.write_text(yaml.safe_dump(STRICTER))
    return str(path)


def test_the_default_tables(ctl, draft, live_server):
    code, out, err = ctl("backtest", "retry-policy", "-f", draft, *RANGE, user=ROOT)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("Backtest of retry policy ml-strict (draft), failures from ")
    assert lines[1] == "Queues replayed: every queue (no queue uses the policy yet)."
    header = lines[3].split()
    assert header[:3] == ["QUEUE", "EXAMINED", "UNCHANGED"]
    rows = {line.split()[0]: line.split() for line in lines[4:7]}
    # examined, unchanged, retry->fail, fail->retry, extra, saved, est. succeeded
    assert rows["demo"][1:8] == ["7", "3", "2", "2", "2", "2", "1.00"]
    assert rows["other"][1:8] == ["1", "0", "1", "0", "0", "1", "0.00"]
    assert rows["(all)"][1:8] == ["8", "3", "3", "2", "2", "3", "1.00"]
    costs = lines.index("Cost of the attempts (core-, memory GiB- and GPU-hours):")
    assert lines[costs + 1].split()[:2] == ["QUEUE", "EXTRA"]
    all_costs = next(line for line in lines[costs + 2 :] if line.startswith("(all)")).split()
    assert all_costs[1:] == ["2.00", "4.00", "0.00", "4.00", "8.00", "0.00"]
    flips = lines.index("Flips by category and rule (rules numbered from 1):")
    assert lines[flips + 2].split() == ["retry", "fail", "oom", "-", "3", "2", "3"]
    assert "Sample (changed decisions first):" in lines
    assert f"{live_server.url}/jobs/job-" in out
    assert "Retry yield in the range:" in lines
    assert lines[-1].startswith("Note: estimatedSucceeded is an estimate")


def test_json_and_yaml_are_the_servers_document(ctl, draft):
    code, out, err = ctl("backtest", "retry-policy", "-f", draft, *RANGE, "-o", "json", user=ROOT)
    assert code == 0, err
    document = json.loads(out)
    assert document["overall"]["examined"] == 8
    code, out, err = ctl(
        "backtest",
        "retry-policy",
        "-f",
        draft,
        *RANGE,
        "--queue",
        "demo",
        "--job-set",
        "set-2",
        "-o",
        "yaml",
        user=ROOT,
    )
    assert code == 0, err
    document = yaml.safe_load(out)
    assert document["overall"]["examined"] == 1
    assert [q["queue"] for q in document["queues"]] == ["demo"]


def test_a_stored_policy_at_a_version(ctl):
    code, out, err = ctl(
        "backtest", "retry-policy", "--policy", "ml", "--version", "1", *RANGE, "--sample", "0"
    )
    assert code == 0, err
    assert out.splitlines()[0].startswith("Backtest of retry policy ml version 1 (stored)")
    assert "Sample (changed decisions first):" not in out


def test_since_counts_back_from_to(ctl, draft):
    code, out, err = ctl(
        "backtest", "retry-policy", "-f", draft, "--since", "1d", "--to", NOW.isoformat(),
        "-o", "json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["overall"]["examined"] == 7  # olive sees demo only


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "give the draft with -f FILE, or a stored policy with --policy NAME"),
        (("-f", "x.yaml", "--policy", "ml"), "not both"),
        (("--policy", "ml", "--version", "x"), "is not a whole number"),
        (("-f", "x.yaml", "--version", "2"), "--version: only with --policy"),
        (("--policy", "ml", "--since", "1d", "--from", "2026-01-01T00:00:00Z"), "--from"),
    ],
    ids=["neither", "both", "version-not-a-number", "version-without-policy", "since-and-from"],
)
def test_usage_errors(ctl, argv, message):
    code, out, err = ctl("backtest", "retry-policy", *argv)
    assert code == 2
    assert message in err


def test_an_invalid_draft_names_the_fields(ctl, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**STRICTER, "retryLimit": -2, "rules": [{"action": "Retry"}]}))
    before = snapshot()
    code, out, err = ctl("backtest", "retry-policy", "-f", str(path), *RANGE)
    assert code == 1
    assert err.startswith("Error: invalid request")
    assert "  retryLimit: " in err and "  rules[0].onCategory: " in err
    assert snapshot() == before


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (("--queue", "other"), "'other'"),
        (("--queue", "nope"), "'nope' does not exist"),
        (("--since", "5y"), "since"),
        (("--policy", "ml", "--version", "9"), "version"),
    ],
    ids=["queue-not-viewable", "unknown-queue", "years", "unknown-version"],
)
def test_refusals_name_the_field_or_queue(ctl, draft, argv, needle):
    source = () if "--policy" in argv else ("-f", draft)
    code, out, err = ctl("backtest", "retry-policy", *source, *argv)
    assert code == 1, out
    assert needle in err


def test_rendering_an_empty_backtest():
    document = {
        "policy": {"name": "p", "version": None, "source": "draft"},
        "range": {"since": "a", "until": "b"},
        "overall": {"examined": 0},
        "queues": [],
        "flips": [],
        "sample": [],
        "yield": [],
        "estimateNote": "an estimate",
    }
    text = render_backtest(document)
    assert "No decision would change." in text
    assert "Sample" not in text and "Retry yield" not in text
    assert text.splitlines()[-1] == "Note: an estimate"

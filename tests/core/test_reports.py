"""armada.core.reports: what an executor reports about a run."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from armada.core.reports import RunReport
from armada.core.states import RunState

AT = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_defaults():
    report = RunReport(run_id="r1", state=RunState.RUNNING, at=AT)
    assert (report.exit_code, report.exit_codes, report.reason, report.message) == (
        None,
        {},
        "",
        "",
    )
    assert (report.failure_category, report.failure_subcategory, report.hint) == ("", "", "")


def test_is_frozen_and_comparable():
    report = RunReport(
        run_id="r1", state=RunState.FAILED, at=AT, exit_code=1, exit_codes={"main": 1}
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.state = RunState.SUCCEEDED  # type: ignore[misc]
    assert report == RunReport(
        run_id="r1", state=RunState.FAILED, at=AT, exit_code=1, exit_codes={"main": 1}
    )
    assert report != dataclasses.replace(report, exit_code=2)


def test_exit_codes_are_not_shared_between_reports():
    a = RunReport(run_id="a", state=RunState.FAILED, at=AT)
    b = RunReport(run_id="b", state=RunState.FAILED, at=AT)
    a.exit_codes["main"] = 1
    assert b.exit_codes == {}

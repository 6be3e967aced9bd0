"""A run's stored log through the service (``services.run_logs``) and the API: pieces
appended once however often they are sent, the bound with its marker line, the final tail
at the run's end, and the lines so far while the run runs. SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from armada.core.reports import RunReport
from armada.core.runlog import LogPiece, marker_line
from armada.core.states import RunState
from armada.models import RunLog
from armada.services.report_outcomes import Outcome
from armada.services.run_logs import run_logs_append
from armada.services.run_reports import runs_apply_report_batch
from tests.conftest import at
from tests.services.run_log_world import EXECUTOR, line, piece_of, running_run

pytestmark = pytest.mark.django_db


def outcomes(run_id: str, *pieces: LogPiece, executor: str = EXECUTOR) -> list[str]:
    done = run_logs_append(executor_id=executor, pieces=list(pieces), now=at(10))
    return [o.outcome for o in done]


def test_pieces_sent_again_are_stored_once_and_the_api_shows_them_while_running(
    settings, queue, owner, api
):
    run = running_run(settings, owner)
    first, second = piece_of(run.id, 0, 3), piece_of(run.id, 3, 2)
    assert outcomes(run.id, first, second) == [Outcome.APPLIED, Outcome.APPLIED]
    # The answer was lost: the executor sends both again, then joined with a new line.
    assert outcomes(run.id, first, second) == [Outcome.DUPLICATE, Outcome.DUPLICATE]
    assert outcomes(run.id, piece_of(run.id, 3, 3)) == [Outcome.APPLIED]

    body = api.get(f"/api/v1/runs/{run.id}/log").json()
    assert body["log"] == "".join(line(i) for i in range(6))
    assert body["runState"] == "running" and body["truncated"] is False
    assert body["dropped"] == 0 and body["updatedAt"] is not None


def test_a_piece_of_a_run_of_another_executor_is_refused_and_changes_nothing(
    settings, queue, owner
):
    run = running_run(settings, owner)
    refused = run_logs_append(executor_id="elsewhere", pieces=[piece_of(run.id, 0, 1)], now=at(10))
    assert refused[0].outcome == Outcome.REFUSED and "not a run of executor" in refused[0].reason
    assert not RunLog.objects.filter(run=run).exists()


def test_the_log_keeps_the_last_kib_and_says_what_it_dropped(settings, queue, owner, api):
    run = running_run(settings, owner)
    settings.RUN_LOG_LIMIT_BYTES = 110  # ten lines
    for first in range(0, 25, 5):
        outcomes(run.id, piece_of(run.id, first, 5))

    entry = RunLog.objects.get(run=run)
    kept = "".join(line(i) for i in range(15, 25))
    assert entry.text == marker_line(165) + kept and entry.truncated and entry.dropped == 165
    body = api.get(f"/api/v1/runs/{run.id}/log").json()
    assert body["log"].startswith("[log cut: the first 165 bytes were not kept]\n")
    assert body["truncated"] is True and body["dropped"] == 165


def test_the_final_tail_completes_the_log_and_later_pieces_change_nothing(
    settings, queue, owner, api
):
    run = running_run(settings, owner)
    outcomes(run.id, piece_of(run.id, 0, 4))
    whole = "".join(line(i) for i in range(6))  # the pod wrote two lines more at its end
    end = RunReport(run.id, RunState.SUCCEEDED, at(20), exit_code=0, log=whole)
    runs_apply_report_batch(executor_id=EXECUTOR, reports=[end], now=at(20))

    assert RunLog.objects.get(run=run).text == whole and RunLog.objects.get(run=run).final
    assert outcomes(run.id, piece_of(run.id, 4, 3)) == [Outcome.DUPLICATE]
    body = api.get(f"/api/v1/runs/{run.id}/log").json()
    assert body["log"] == whole and body["runState"] == "succeeded"


def test_an_end_without_a_log_keeps_the_lines_streamed(settings, queue, owner):
    run = running_run(settings, owner)
    outcomes(run.id, piece_of(run.id, 0, 2))
    end = RunReport(run.id, RunState.SUCCEEDED, at(20), exit_code=0, log="")
    runs_apply_report_batch(executor_id=EXECUTOR, reports=[end], now=at(20))
    assert RunLog.objects.get(run=run).text == line(0) + line(1)


def test_bad_reads_stay_refused(settings, queue, owner, api, api_as, outsider):
    run = running_run(settings, owner)
    outcomes(run.id, piece_of(run.id, 0, 2))
    assert api.get("/api/v1/runs/no-such-run/log").status_code == 404
    hidden = api_as(outsider).get(f"/api/v1/runs/{run.id}/log")
    assert hidden.status_code == 403 and "log" not in hidden.json()

"""Tests of ``armadactl``: pure units first, then runs of ``main`` against a fake server.

No Django, no database: the fake server in conftest.py speaks the REST contract.
"""

from __future__ import annotations

import base64
import io
import json
import re
import time
from collections.abc import Iterator
from datetime import UTC, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from armada.cli import client as client_module
from armada.cli import commands as main_module
from armada.cli.client import CAUGHT_UP, error_from_body
from armada.cli.config import DEFAULT_URL, ConfigError, resolve_settings
from armada.cli.jobfile import check_job_file, load_job_file
from armada.cli.main import build_parser, main
from armada.cli.output import cell, format_error, render_data, render_queues_table
from armada.cli.watch import JobSetTracker, format_event, format_time, run_watch
from tests.cli.fake_armada import CREATED, FakeArmada, StreamPlan, event

VALID_JOB_FILE = {
    "queue": "q1",
    "jobSetId": "js1",
    "jobs": [
        {
            "priority": 1,
            "namespace": "default",
            "annotations": {"team": "data"},
            "podSpec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox:1.36",
                        "resources": {
                            "requests": {"cpu": "1", "memory": "1Gi"},
                            "limits": {"cpu": "1", "memory": "1Gi"},
                        },
                    }
                ]
            },
        },
        {"priority": 0, "podSpec": {"containers": [{"name": "side", "image": "alpine"}]}},
    ],
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data) if path.suffix != ".json" else json.dumps(data))
    return path


# == 1. pure units ========================================================================

# -- argument parsing --------------------------------------------------------------------


def test_create_queue_flags_are_parsed_into_typed_values() -> None:
    args = build_parser().parse_args(
        [
            "create",
            "queue",
            "analytics",
            "--priority-factor",
            "2.5",
            "--owners",
            "alice, bob,",
            "--group-owners",
            "ops",
            "--labels",
            "team=data,tier=gold",
            "--retry-policies",
            "p1,p2",
            "--cordoned",
        ]
    )
    assert args.name == "analytics"
    assert args.priority_factor == 2.5
    assert args.owners == ["alice", "bob"]
    assert args.group_owners == ["ops"]
    assert args.labels == {"team": "data", "tier": "gold"}
    assert args.retry_policies == ["p1", "p2"]
    assert args.cordoned is True


def test_global_flags_work_before_and_after_the_command() -> None:
    parser = build_parser()
    before = parser.parse_args(["--url", "http://a:1", "--token", "t", "get", "queues"])
    after = parser.parse_args(["get", "queues", "--url", "http://a:1", "--token", "t"])
    assert (before.url, before.token) == ("http://a:1", "t")
    assert (after.url, after.token) == ("http://a:1", "t")
    # A flag given only before the command is not reset by the subcommand.
    mixed = parser.parse_args(["--url", "http://a:1", "watch", "q", "js", "--token", "t"])
    assert (mixed.url, mixed.token, mixed.from_) == ("http://a:1", "t", None)


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["create", "queue", "q", "--labels", "novalue"], "must look like key=value"),
        (["create", "queue", "q", "--labels", "a=1,a=2"], "given twice"),
        (["create", "queue", "q", "--priority-factor", "lots"], "is not a number"),
        (["get", "queues", "-o", "xml"], "invalid choice"),
        (["watch", "q", "js", "--from", "-3"], "cannot be negative"),
        (["watch", "q"], "required"),
        ([], "required: COMMAND"),
    ],
)
def test_usage_errors_exit_2_with_error_prefix(
    capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert "Error: " in err and fragment in err
    assert "Traceback" not in err


def test_help_exits_0_and_documents_global_flags_and_resolution(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for text in (
        "--url",
        "--token",
        "--config",
        "ARMADA_URL",
        "ARMADACTL_CONFIG",
        "~/.armadactl.yaml",
    ):
        assert text in out


# -- configuration -----------------------------------------------------------------------


def test_config_flags_beat_environment_beat_file(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.yaml",
        {
            "url": "http://file:1",
            "username": "file-user",
            "password": "file-pw",
            "token": "file-token",
        },
    )
    env = {"ARMADA_URL": "http://env:2", "ARMADA_USERNAME": "env-user"}
    flags = {"url": "http://flag:3", "username": None, "password": None, "token": None}
    settings = resolve_settings(flags, env, config_path=str(config))
    assert settings.url == "http://flag:3"
    assert settings.username == "env-user"
    assert settings.password == "file-pw"
    assert settings.token == "file-token"
    # The username came from a more specific source than the token: basic auth.
    assert settings.auth_kind == "basic"


def test_config_file_is_found_through_env_then_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    write(home / ".armadactl.yaml", {"url": "http://home:1/", "token": "home-token"})
    named = write(tmp_path / "named.yaml", {"url": "http://named:2"})
    empty_flags: dict[str, str | None] = {}

    from_home = resolve_settings(empty_flags, {}, home=home)
    assert (from_home.url, from_home.token, from_home.auth_kind) == (
        "http://home:1",
        "home-token",
        "token",
    )

    from_env = resolve_settings(empty_flags, {"ARMADACTL_CONFIG": str(named)}, home=home)
    assert from_env.url == "http://named:2" and from_env.token is None

    other = write(tmp_path / "other.yaml", {"url": "http://other:3"})
    from_flag = resolve_settings(
        empty_flags, {"ARMADACTL_CONFIG": str(named)}, config_path=str(other), home=home
    )
    assert from_flag.url == "http://other:3"


def test_config_defaults_when_nothing_is_set(tmp_path: Path) -> None:
    settings = resolve_settings({}, {}, home=tmp_path)
    assert settings.url == DEFAULT_URL
    assert settings.auth_kind == "none"


def test_token_beats_username_from_the_same_or_a_later_source(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", {"username": "u", "password": "p"})
    settings = resolve_settings({"token": "t"}, {}, config_path=str(config))
    assert settings.auth_kind == "token"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("url: [unclosed", "not valid YAML"),
        ("- a\n- b\n", "must be a mapping"),
        ("url: http://x:1\npasswd: oops\n", "unknown key(s) passwd"),
        ("url: ftp://x\n", "must look like http://host:port"),
    ],
)
def test_bad_config_files_are_reported(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError, match=".") as info:
        resolve_settings({}, {}, config_path=str(path))
    assert fragment in str(info.value)


def test_named_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_settings({}, {"ARMADACTL_CONFIG": str(tmp_path / "missing.yaml")})


# -- rendering ---------------------------------------------------------------------------

QUEUES = [
    {
        "name": "analytics",
        "priorityFactor": 2.0,
        "owners": ["alice", "bob"],
        "groupOwners": [],
        "permissions": [],
        "labels": {"team": "data"},
        "cordoned": True,
        "retryPolicies": ["oom"],
        "createdAt": "2025-01-01T00:00:00Z",
        "updatedAt": "2025-01-01T00:00:00Z",
    },
    {"name": "b", "priorityFactor": 1.0, "owners": [], "cordoned": False, "labels": {}},
]


def test_queue_table_has_aligned_columns_and_readable_cells() -> None:
    lines = render_queues_table(QUEUES).splitlines()
    assert lines[0].startswith("NAME       PRIORITY FACTOR  CORDONED  OWNERS")
    assert lines[1].split() == ["analytics", "2", "true", "alice,bob", "-", "oom", "team=data"]
    assert lines[2].split() == ["b", "1", "false", "-", "-", "-", "-"]
    # Every row's second column starts at the same offset as the header's.
    offset = lines[0].index("PRIORITY FACTOR")
    assert lines[1][offset] == "2" and lines[2][offset] == "1"
    assert all(line == line.rstrip() for line in lines)


def test_cell_formats() -> None:
    assert cell(None) == "-" and cell([]) == "-" and cell({}) == "-"
    assert cell(1.5) == "1.5" and cell(False) == "false"
    assert cell({"a": "1", "b": "2"}) == "a=1,b=2"


def test_yaml_and_json_output_round_trip_in_server_order() -> None:
    as_yaml = render_data(QUEUES, "yaml")
    assert yaml.safe_load(as_yaml) == QUEUES
    assert as_yaml.index("name: analytics") < as_yaml.index("priorityFactor")
    assert json.loads(render_data(QUEUES[0], "json")) == QUEUES[0]
    with pytest.raises(ValueError, match="unknown output format"):
        render_data(QUEUES, "xml")


# -- error messages ----------------------------------------------------------------------


def test_error_body_with_field_errors_is_formatted_one_per_line() -> None:
    body = json.dumps(
        {
            "message": "the job file is not valid",
            "errors": [
                {"field": "jobs[0].podSpec", "message": "is required"},
                {"field": "", "message": "general trouble"},
            ],
        }
    )
    error = error_from_body(400, "Bad Request", body)
    assert error.status == 400
    assert format_error(error.message, error.errors) == (
        "Error: the job file is not valid\n  jobs[0].podSpec: is required\n  general trouble"
    )


def test_error_bodies_outside_the_contract_still_read_well() -> None:
    assert error_from_body(502, "Bad Gateway", b"<html>upstream down</html>").message == (
        "HTTP 502 Bad Gateway: <html>upstream down</html>"
    )
    assert (
        error_from_body(500, "Internal Server Error", b"").message
        == "HTTP 500 Internal Server Error"
    )
    assert error_from_body(403, "Forbidden", '{"detail": "no"}').message == "no"


# -- job files ---------------------------------------------------------------------------


def test_job_file_shape_check_names_each_field(tmp_path: Path) -> None:
    errors = check_job_file(
        {
            "queue": "",
            "jobs": [{"podSpec": []}, "nope", {"podSpec": {}, "annotations": [1]}],
            "extra": 1,
        }
    )
    assert errors == [
        ("extra", "unknown field; allowed: queue, jobSetId, jobs"),
        ("queue", "is required and must be a string"),
        ("jobSetId", "is required and must be a string"),
        ("jobs[0].podSpec", "is required and must be a mapping"),
        ("jobs[1]", "must be a mapping"),
        ("jobs[2].annotations", "must be a mapping of strings to strings"),
    ]
    assert check_job_file(VALID_JOB_FILE) == []
    assert check_job_file([1, 2]) == [("", "a job file is a mapping with queue, jobSetId and jobs")]


def test_yaml_dates_stay_strings(tmp_path: Path) -> None:
    path = tmp_path / "jobs.yaml"
    path.write_text(
        "queue: q1\njobSetId: 2024-01-01\njobs:\n- podSpec: {}\n  annotations: {day: 2024-05-06}\n"
    )
    data = load_job_file(str(path))
    assert data["jobSetId"] == "2024-01-01"
    assert data["jobs"][0]["annotations"]["day"] == "2024-05-06"


def test_dry_run_of_an_invalid_file_lists_the_problems(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path / "bad.yaml", {"queue": "q1", "jobs": [{"priority": 1}]})
    code, out, err = run(capsys, "submit", str(path), "--dry-run")
    assert code == 1
    assert out == ""
    assert err.splitlines() == [
        f"Error: job file {path} is not valid",
        "  jobSetId: is required and must be a string",
        "  jobs[0].podSpec: is required and must be a mapping",
    ]


def test_dry_run_of_unparsable_yaml(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("queue: [oops\n")
    code, out, err = run(capsys, "submit", str(path), "--dry-run")
    assert code == 1 and out == ""
    assert err.startswith(f"Error: {path} is not valid YAML")
    assert "Traceback" not in err


def test_dry_run_of_a_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "submit", str(tmp_path / "nope.yaml"), "--dry-run")
    assert code == 1
    assert err.strip() == f"Error: job file {tmp_path / 'nope.yaml'} does not exist"


# -- watch lines and termination ---------------------------------------------------------


@pytest.mark.parametrize(
    ("evt", "line"),
    [
        (event(1, "submitted", "j1"), "10:00:00  submitted       j1"),
        (event(2, "queued", "j1", second=1), "10:00:01  queued          j1"),
        (
            event(3, "leased", "j1", second=2, nodeName="node-7", clusterId="c1", pool="cpu"),
            "10:00:02  leased          j1  node=node-7",
        ),
        (  # a server from before the rename spelled the event fields the old way
            event(3, "leased", "j1", second=2, node="node-7", cluster="c1", pool="cpu"),
            "10:00:02  leased          j1  node=node-7",
        ),
        (event(4, "pending", "j1", second=3), "10:00:03  pending         j1"),
        (event(5, "running", "j1", second=4, nodeName="node-7"), "10:00:04  running         j1"),
        (event(6, "succeeded", "j1", second=5), "10:00:05  succeeded       j1"),
        (event(7, "cancelled", "j1", second=6), "10:00:06  cancelled       j1"),
        (event(8, "preempted", "j1", second=7), "10:00:07  preempted       j1"),
        (event(9, "lease_returned", "j1", second=8), "10:00:08  lease_returned  j1"),
        (event(10, "reprioritized", "j1", second=9), "10:00:09  reprioritized   j1"),
        (
            event(
                11,
                "failed",
                "j1",
                second=10,
                exitCode=137,
                exitCodes={"main": 137},
                reason="OOMKilled",
                message="container main was killed",
                retryable=False,
                failureCategory="resources",
                failureSubcategory="oom",
                nodeName="node-7",
            ),
            "10:00:10  failed          j1  exitCode=137  reason=OOMKilled  category=resources/oom  retryable=false"
            '  message="container main was killed"',  # the termination message, last
        ),
        (
            event(
                11,
                "failed",
                "j1",
                second=10,
                exitCode=137,
                reason="OOMKilled",
                retryable=False,
                failure_category="resources",
                failure_subcategory="oom",
            ),
            "10:00:10  failed          j1  exitCode=137  reason=OOMKilled  category=resources/oom  retryable=false",
        ),
        (
            event(
                12,
                "failed",
                "j1",
                second=11,
                exitCode=1,
                reason="Error in app",
                failureCategory="user",
                retryable=True,
            ),
            '10:00:11  failed          j1  exitCode=1  reason="Error in app"  category=user  retryable=true',
        ),
        (
            {"id": 13, "type": "failed", "jobId": "j1"},
            "--:--:--  failed          j1  exitCode=-  reason=-  category=-  retryable=false",
        ),
        (
            {"id": 14, "type": "leased", "jobId": "j2", "created": "garbage"},
            "--:--:--  leased          j2  node=-",
        ),
    ],
)
def test_event_lines(evt: dict[str, Any], line: str) -> None:
    assert format_event(evt, UTC) == line


def test_event_time_is_converted_to_the_chosen_zone() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert format_time("2025-03-04T23:30:15Z", plus_two) == "01:30:15"
    assert format_time("2025-03-04T23:30:15.123456+01:00", UTC) == "22:30:15"
    assert format_time("2025-03-04T23:30:15", plus_two) == "23:30:15"  # no offset: as written


def test_tracker_exits_only_when_every_seen_job_is_finished() -> None:
    tracker = JobSetTracker()
    assert not tracker.inactive  # nothing seen yet: keep waiting
    steps: list[tuple[dict[str, Any], bool]] = [
        (event(1, "submitted", "a"), False),
        (event(2, "submitted", "b"), False),
        (event(3, "submitted", "c"), False),
        (event(4, "succeeded", "a"), False),
        (event(5, "failed", "b", retryable=True), False),  # will be retried
        (event(6, "cancelled", "c"), False),
        (event(7, "queued", "b"), False),
        (event(8, "leased", "b"), False),
        (event(9, "failed", "b", retryable=False), True),
    ]
    for evt, inactive in steps:
        tracker.observe(evt)
        assert tracker.inactive is inactive, evt
    assert tracker.summary() == "[3 jobs] succeeded: 1, failed: 1, cancelled: 1"


def test_tracker_preempted_is_final_and_lease_returned_is_not() -> None:
    tracker = JobSetTracker()
    for evt in (event(1, "leased", "a"), event(2, "lease_returned", "a")):
        tracker.observe(evt)
    assert not tracker.inactive
    assert tracker.states == {"a": "queued"}
    tracker.observe(event(3, "preempted", "a"))
    assert tracker.inactive


def test_tracker_counts_jobs_seen_only_through_informational_events() -> None:
    tracker = JobSetTracker()
    tracker.observe(event(1, "reprioritized", "a"))
    assert not tracker.inactive
    assert tracker.summary() == "[1 job] seen: 1"


def test_run_watch_waits_for_caught_up_before_exiting() -> None:
    events: list[Any] = [
        event(1, "submitted", "a"),
        event(2, "succeeded", "a", second=3),  # a is done, but b's submission follows in this burst
        event(3, "submitted", "b", second=4),
        CAUGHT_UP,
        event(4, "running", "b", second=5),
        CAUGHT_UP,
        event(5, "succeeded", "b", second=9),
        CAUGHT_UP,
        event(6, "submitted", "never-printed"),
    ]
    buffer = io.StringIO()
    clock = iter([0.0, 1.0, 10.0])
    code = run_watch(events, buffer, exit_if_inactive=True, tz=UTC, clock=lambda: next(clock))
    assert code == 0
    assert buffer.getvalue().splitlines() == [
        "10:00:00  submitted       a",
        "10:00:03  succeeded       a",
        "10:00:04  submitted       b",
        "[2 jobs] submitted: 1, succeeded: 1",
        # no summary after event 4: one second since the last is too soon
        "10:00:05  running         b",
        "10:00:09  succeeded       b",
        "[2 jobs] succeeded: 2",
    ]


def test_run_watch_without_exit_flag_keeps_going_and_summarises_at_the_end() -> None:
    events: list[Any] = [
        event(1, "submitted", "a"),
        event(2, "succeeded", "a"),
        CAUGHT_UP,
        event(3, "submitted", "b"),
    ]
    buffer = io.StringIO()
    assert run_watch(events, buffer, tz=UTC, clock=lambda: 0.0) == 0
    lines = buffer.getvalue().splitlines()
    assert lines[2] == "[1 job] succeeded: 1"
    assert lines[-1] == "[2 jobs] submitted: 1, succeeded: 1"


# == 2. against a real HTTP server ========================================================


def test_get_queues_table_yaml_and_json(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_queue(
        "analytics", priorityFactor=2.0, owners=["alice"], labels={"team": "data"}
    )
    fake_armada.add_queue("batch")
    code, out, err = run(capsys, "--url", fake_armada.url, "get", "queues")
    assert (code, err) == (0, "")
    rows = [line.split() for line in out.splitlines()]
    assert rows[1] == ["analytics", "2", "false", "alice", "-", "-", "team=data"]
    assert rows[2][0] == "batch"

    code, out, _ = run(capsys, "get", "queues", "-o", "yaml", "--url", fake_armada.url)
    assert code == 0
    assert [q["name"] for q in yaml.safe_load(out)] == ["analytics", "batch"]

    code, out, _ = run(capsys, "get", "queues", "-o", "json", "--url", fake_armada.url)
    assert json.loads(out)[0] == fake_armada.queues["analytics"]


def test_get_queues_when_there_are_none(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    code, out, err = run(capsys, "--url", fake_armada.url, "get", "queues")
    assert (code, out) == (0, "")
    assert err.strip() == "No queues found."
    code, out, _ = run(capsys, "--url", fake_armada.url, "get", "queues", "-o", "json")
    assert json.loads(out) == []


def test_get_queue_found_and_not_found(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_queue("analytics", retryPolicies=["oom", "net"])
    code, out, _ = run(capsys, "--url", fake_armada.url, "get", "queue", "analytics", "-o", "yaml")
    assert code == 0
    assert yaml.safe_load(out)["retryPolicies"] == ["oom", "net"]

    code, out, _ = run(capsys, "--url", fake_armada.url, "get", "queue", "analytics")
    assert code == 0 and out.splitlines()[1].split()[0] == "analytics"

    code, out, err = run(capsys, "--url", fake_armada.url, "get", "queue", "ghost")
    assert (code, out) == (1, "")
    assert err.strip() == "Error: queue ghost does not exist"


def test_create_queue_sends_the_flags_as_a_queue_body(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    code, out, err = run(
        capsys,
        "--url",
        fake_armada.url,
        "create",
        "queue",
        "analytics",
        "--priority-factor",
        "3",
        "--owners",
        "alice,bob",
        "--group-owners",
        "ops",
        "--labels",
        "team=data",
        "--retry-policies",
        "oom",
        "--cordoned",
    )
    assert (code, err) == (0, "")
    assert out.strip() == "Created queue analytics"
    (request,) = fake_armada.requests
    assert (request.method, request.path) == ("POST", "/api/v1/queues")
    assert request.body == {
        "name": "analytics",
        "priorityFactor": 3.0,
        "owners": ["alice", "bob"],
        "groupOwners": ["ops"],
        "labels": {"team": "data"},
        "retryPolicies": ["oom"],
        "cordoned": True,
    }


def test_create_queue_minimal_body_and_conflict(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    assert run(capsys, "--url", fake_armada.url, "create", "queue", "q1")[0] == 0
    assert fake_armada.requests[0].body == {"name": "q1"}
    code, out, err = run(capsys, "--url", fake_armada.url, "create", "queue", "q1")
    assert (code, out) == (1, "")
    assert err.splitlines() == ["Error: queue q1 already exists", "  name: must be unique"]


def test_submit_prints_one_line_per_job(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    fake_armada.add_queue("q1")
    path = write(tmp_path / "jobs.yaml", VALID_JOB_FILE)
    code, out, err = run(capsys, "--url", fake_armada.url, "submit", str(path))
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "Submitted job id 01jfake0001 (job set js1)",
        "Submitted job id 01jfake0002 (job set js1)",
    ]
    (request,) = fake_armada.requests
    assert request.path == "/api/v1/jobs"
    assert request.body == VALID_JOB_FILE


def test_submit_json_file_and_server_validation_errors(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    fake_armada.add_queue("q1")
    bad = json.loads(json.dumps(VALID_JOB_FILE))
    bad["jobs"][1]["podSpec"] = {"containers": []}
    path = write(tmp_path / "jobs.json", bad)
    code, out, err = run(capsys, "submit", str(path), "--url", fake_armada.url)
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "Error: the job file is not valid",
        "  jobs[1].podSpec.containers: at least one container is required",
    ]


def test_dry_run_sends_nothing(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    path = write(tmp_path / "jobs.yaml", VALID_JOB_FILE)
    code, out, _ = run(capsys, "--url", fake_armada.url, "submit", str(path), "--dry-run")
    assert code == 0
    assert fake_armada.requests == []
    assert out.splitlines() == [
        "Would submit 2 jobs to queue q1 (job set js1):",
        "  jobs[0]: priority 1, namespace default, 1 container (busybox:1.36)",
        "  jobs[1]: priority 0, namespace default, 1 container (alpine)",
        "Dry run: nothing was submitted.",
    ]


def test_invalid_file_is_not_sent(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    path = write(tmp_path / "jobs.yaml", {"queue": "q1", "jobSetId": "js1", "jobs": []})
    code, _, err = run(capsys, "--url", fake_armada.url, "submit", str(path))
    assert code == 1
    assert "  jobs: at least one job is required (a list)" in err.splitlines()
    assert fake_armada.requests == []


def test_token_and_basic_auth_headers(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_armada.token = "s3cret"
    code, _, err = run(capsys, "--url", fake_armada.url, "get", "queues")
    assert code == 1
    assert err.strip() == (
        "Error: Authentication credentials were not provided."
        " (run `armadactl login`, or set ARMADA_TOKEN)"
    )

    monkeypatch.setenv("ARMADA_TOKEN", "s3cret")
    assert run(capsys, "--url", fake_armada.url, "get", "queues", "-o", "json")[0] == 0
    assert fake_armada.requests[-1].headers["Authorization"] == "Token s3cret"

    monkeypatch.delenv("ARMADA_TOKEN")
    fake_armada.token, fake_armada.basic = None, ("alice", "pw")
    monkeypatch.setenv("ARMADA_PASSWORD", "pw")
    assert (
        run(capsys, "--url", fake_armada.url, "--username", "alice", "get", "queues", "-o", "json")[
            0
        ]
        == 0
    )
    expected = "Basic " + base64.b64encode(b"alice:pw").decode()
    assert fake_armada.requests[-1].headers["Authorization"] == expected


def test_url_and_token_from_the_config_file(
    capsys: pytest.CaptureFixture[str],
    fake_armada: FakeArmada,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_armada.token = "from-file"
    config = write(
        tmp_path / "armadactl.yaml", {"url": fake_armada.url + "/", "token": "from-file"}
    )
    monkeypatch.setenv("ARMADACTL_CONFIG", str(config))
    code, _, err = run(capsys, "get", "queues", "-o", "json")
    assert (code, err) == (0, "")
    assert fake_armada.paths() == ["/api/v1/queues"]


def test_connection_refused_names_the_url(
    capsys: pytest.CaptureFixture[str], free_port: int
) -> None:
    url = f"http://127.0.0.1:{free_port}"
    code, out, err = run(capsys, "--url", url, "get", "queues")
    assert (code, out) == (1, "")
    assert err.startswith(f"Error: cannot reach the Armada server at {url} (connection refused)")
    assert "Traceback" not in err


def test_bad_config_is_an_error_not_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "--config", str(tmp_path / "none.yaml"), "get", "queues")
    assert code == 1
    assert err.strip() == f"Error: config file {tmp_path / 'none.yaml'} does not exist"


# -- watch against the server ------------------------------------------------------------

WATCH_EVENTS = [
    event(1, "submitted", "a"),
    event(2, "submitted", "b"),
    event(3, "queued", "a", second=1),
    event(4, "queued", "b", second=1),
    event(5, "leased", "a", second=2, nodeName="n1", clusterId="c1", pool="cpu"),
    event(6, "leased", "b", second=2, nodeName="n2", clusterId="c1", pool="cpu"),
    event(7, "running", "a", second=3),
    event(8, "running", "b", second=3),
    event(9, "succeeded", "a", second=4),
    event(
        10,
        "failed",
        "b",
        second=5,
        exitCode=2,
        exitCodes={"main": 2},
        reason="Error",
        message="boom",
        retryable=False,
        failureCategory="user",
        failureSubcategory="",
        nodeName="n2",
        podName="b-0",
        clusterId="c1",
    ),
]


def watched_ids(out: str) -> list[str]:
    """(type, job) of each event line of a watch's output, summaries left out."""
    return [" ".join(line.split()[1:3]) for line in out.splitlines() if not line.startswith("[")]


EXPECTED_WATCH = [f"{e['type']} {e['jobId']}" for e in WATCH_EVENTS]


@pytest.mark.parametrize(
    "plan",
    [
        StreamPlan(count=4, drop="abort", partial=True),  # chunked body broken mid-event
        StreamPlan(count=4, drop="abort"),  # chunked body broken between events
        StreamPlan(count=6, drop="close", partial=True),  # close-delimited body cut mid-line
    ],
    ids=["chunked-mid-line", "chunked-between-lines", "close-mid-line"],
)
def test_watch_resumes_after_a_drop_without_loss_or_duplicates(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, plan: StreamPlan
) -> None:
    fake_armada.events = list(WATCH_EVENTS)
    fake_armada.stream_plans = [plan]
    code, out, err = run(
        capsys, "--url", fake_armada.url, "watch", "q1", "js1", "--exit-if-inactive", "--utc"
    )
    assert code == 0, err
    assert watched_ids(out) == EXPECTED_WATCH
    event_requests = [r for r in fake_armada.requests if r.path.endswith("/events")]
    assert [r.query for r in event_requests] == [
        {"watch": "true"},
        {"watch": "true", "from": str(plan.count)},
    ]
    assert f"reconnecting after event {plan.count}" in err
    lines = out.splitlines()
    assert (
        "10:00:05  failed          b  exitCode=2  reason=Error  category=user  retryable=false"
        "  message=boom" in lines
    )
    assert "10:00:02  leased          a  node=n1" in lines
    assert lines[-1] == "[2 jobs] succeeded: 1, failed: 1"


def test_watch_prints_events_as_they_come_on_a_close_delimited_stream(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    # The body never ends (keep-alives for 10 s): the watch must not wait for the socket
    # to close or for a buffer to fill before it sees the events.
    fake_armada.events = list(WATCH_EVENTS)
    fake_armada.stream_plans = [StreamPlan(chunked=False)]
    started = time.monotonic()
    code, out, _ = run(capsys, "--url", fake_armada.url, "watch", "q1", "js1", "--exit-if-inactive")
    assert code == 0
    assert time.monotonic() - started < 5
    assert watched_ids(out) == EXPECTED_WATCH
    assert len(fake_armada.paths()) == 1


def test_watch_exit_if_inactive_waits_until_the_server_has_sent_everything(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    # Job a has finished when the first read runs dry, but job b's events are still on
    # their way: only the server's blank line says that the client has everything.
    fake_armada.events = [
        event(1, "submitted", "a"),
        event(2, "succeeded", "a", second=1),
        event(3, "submitted", "b", second=2),
        event(4, "failed", "b", second=3, retryable=False),
    ]
    fake_armada.stream_plans = [StreamPlan(pause_after=2)]
    code, out, _ = run(capsys, "--url", fake_armada.url, "watch", "q1", "js1", "--exit-if-inactive")
    assert code == 0
    assert watched_ids(out) == ["submitted a", "succeeded a", "submitted b", "failed b"]
    assert out.splitlines()[-1] == "[2 jobs] succeeded: 1, failed: 1"


def test_watch_takes_a_last_event_without_newline_and_resumes_quietly(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.events = [event(1, "submitted", "a"), event(2, "succeeded", "a")]
    fake_armada.stream_plans = [StreamPlan(drop="close", unterminated=True)]
    code, out, err = run(
        capsys, "--url", fake_armada.url, "watch", "q1", "js1", "--exit-if-inactive"
    )
    assert code == 0
    assert watched_ids(out) == ["submitted a", "succeeded a"]
    assert err == ""  # a clean end of the body is not worth a warning
    assert [r.query.get("from") for r in fake_armada.requests] == [None, "2"]


def test_watch_from_cursor_and_quoted_path(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.events = list(WATCH_EVENTS)
    code, out, _ = run(
        capsys,
        "--url",
        fake_armada.url,
        "watch",
        "q1",
        "night ly/1",
        "--from",
        "7",
        "--exit-if-inactive",
    )
    assert code == 0
    assert watched_ids(out) == ["running b", "succeeded a", "failed b"]
    (request,) = fake_armada.requests
    assert request.path == "/api/v1/job-sets/q1/night%20ly%2F1/events"
    assert request.query == {"from": "7", "watch": "true"}


def test_watch_skips_events_a_server_sends_twice(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.events = list(WATCH_EVENTS)
    # The second connection ignores ``from`` and replays everything from the start.
    fake_armada.stream_plans = [StreamPlan(count=5, drop="abort"), StreamPlan(ignore_from=True)]
    code, out, _ = run(capsys, "--url", fake_armada.url, "watch", "q1", "js1", "--exit-if-inactive")
    assert code == 0
    assert watched_ids(out) == EXPECTED_WATCH


def test_watch_waits_for_a_retried_job(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.events = [
        event(1, "submitted", "a"),
        event(
            2,
            "failed",
            "a",
            exitCode=137,
            reason="OOMKilled",
            retryable=True,
            failureCategory="oom",
        ),
        event(3, "queued", "a"),
        event(4, "succeeded", "a"),
    ]
    # The first connection ends right after the retryable failure: the watch must not stop.
    fake_armada.stream_plans = [StreamPlan(count=2, drop="close")]
    code, out, _ = run(capsys, "--url", fake_armada.url, "watch", "q1", "js1", "--exit-if-inactive")
    assert code == 0
    assert watched_ids(out) == ["submitted a", "failed a", "queued a", "succeeded a"]
    assert out.splitlines()[-1] == "[1 job] succeeded: 1"


def test_watch_gives_up_when_the_server_stays_away(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_module, "RECONNECT_WINDOW", 0.2)
    fake_armada.events = [event(1, "submitted", "a")]
    fake_armada.stream_plans = [StreamPlan(drop="close")] + [
        StreamPlan(count=0, drop="close")
    ] * 200
    code, out, err = run(
        capsys, "--url", fake_armada.url, "watch", "q1", "js1", "--exit-if-inactive"
    )
    assert code == 1
    assert watched_ids(out) == ["submitted a"]
    assert "could not reconnect" in err and "resume with --from 1" in err.splitlines()[-1]


def test_watch_error_on_first_connection(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.token = "x"
    code, out, err = run(capsys, "--url", fake_armada.url, "watch", "q1", "js1")
    assert (code, out) == (1, "")
    assert err.strip() == (
        "Error: Authentication credentials were not provided."
        " (run `armadactl login`, or set ARMADA_TOKEN)"
    )


def test_watch_rejects_a_line_that_is_not_json(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.raw_prefix = [b"\n", b"not json\n"]
    code, _, err = run(capsys, "--url", fake_armada.url, "watch", "q1", "js1")
    assert code == 1
    assert err.strip() == "Error: the event stream sent a line that is not JSON: b'not json'"


def test_ctrl_c_during_watch_prints_summary_and_resume_hint(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class InterruptedClient:
        def watch_events(self, queue: str, job_set: str, **_: Any) -> Iterator[dict[str, Any]]:
            assert (queue, job_set) == ("q1", "js1")
            yield event(41, "submitted", "a")
            yield event(42, "running", "a")
            raise KeyboardInterrupt

    monkeypatch.setattr(main_module, "make_client", lambda args: InterruptedClient())
    code, out, err = run(capsys, "watch", "q1", "js1", "--from", "40", "--utc")
    assert code == 130
    assert out.splitlines()[-1] == "[1 job] running: 1"
    assert err.strip() == "Stopped; resume with --from 42"


# -- queue changes, jobs and logs against the server --------------------------------------


def test_create_queue_sends_several_retry_policies_as_a_list(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    argv = ["--url", fake_armada.url, "create", "queue", "q1", "--retry-policies", "a, b"]
    assert run(capsys, *argv)[0] == 0
    assert fake_armada.requests[0].body == {"name": "q1", "retryPolicies": ["a", "b"]}


def test_update_queue_patches_only_the_flags_given(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_queue("analytics", owners=["carol"], labels={"old": "1"})
    fake_armada.add_policy("oom")
    fake_armada.add_policy("net")
    code, out, err = run(
        capsys,
        "--url",
        fake_armada.url,
        "update",
        "queue",
        "analytics",
        "--priority-factor",
        "2",
        "--owners",
        "alice,bob",
        "--group-owners",
        "ops",
        "--labels",
        "team=data,tier=gold",
        "--retry-policies",
        "oom,net",
        "--cordoned",
    )
    assert (code, err) == (0, "")
    assert out == "Updated queue analytics\n"
    (request,) = fake_armada.requests
    assert (request.method, request.path) == ("PATCH", "/api/v1/queues/analytics")
    assert request.body == {
        "priorityFactor": 2.0,
        "owners": ["alice", "bob"],
        "groupOwners": ["ops"],
        "labels": {"team": "data", "tier": "gold"},
        "retryPolicies": ["oom", "net"],
        "cordoned": True,
    }
    assert fake_armada.queues["analytics"]["retryPolicies"] == ["oom", "net"]


@pytest.mark.parametrize(
    ("flags", "body"),
    [
        (["--retry-policies", ""], {"retryPolicies": []}),
        (["--owners", ""], {"owners": []}),
        (["--labels", ""], {"labels": {}}),
        (["--uncordoned"], {"cordoned": False}),
        (["--priority-factor", "1.5"], {"priorityFactor": 1.5}),
    ],
    ids=["clear-policies", "clear-owners", "clear-labels", "uncordoned", "priority-only"],
)
def test_update_queue_single_flags(
    capsys: pytest.CaptureFixture[str],
    fake_armada: FakeArmada,
    flags: list[str],
    body: dict[str, Any],
) -> None:
    fake_armada.add_queue("q1", retryPolicies=["oom"], owners=["a"], cordoned=True)
    code, out, _ = run(capsys, "--url", fake_armada.url, "update", "queue", "q1", *flags)
    assert (code, out) == (0, "Updated queue q1\n")
    assert fake_armada.requests[0].body == body


def test_update_queue_without_flags_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    code, out, err = run(capsys, "--url", fake_armada.url, "update", "queue", "q1")
    assert (code, out) == (2, "")
    assert err.startswith("usage: armadactl update queue")
    assert err.splitlines()[-1].startswith("Error: nothing to change; give at least one of")
    assert fake_armada.requests == []


def test_update_queue_cordoned_and_uncordoned_exclude_each_other(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "update", "queue", "q1", "--cordoned", "--uncordoned")
    assert code == 2
    assert "Error: argument --uncordoned: not allowed with argument --cordoned" in err


def test_update_queue_prints_field_errors_and_not_found(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_queue("q1")
    code, out, err = run(
        capsys,
        "--url",
        fake_armada.url,
        "update",
        "queue",
        "q1",
        "--retry-policies",
        "ghost",
        "--priority-factor",
        "0.5",
    )
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "Error: the queue is not valid",
        "  retryPolicies[0]: retry policy 'ghost' does not exist",
        "  priorityFactor: must be at least 1.0",
    ]
    assert fake_armada.queues["q1"]["retryPolicies"] == []

    code, out, err = run(capsys, "--url", fake_armada.url, "update", "queue", "nope", "--cordoned")
    assert (code, out) == (1, "")
    assert err.strip() == "Error: queue nope does not exist"


def test_delete_queue(capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada) -> None:
    fake_armada.add_queue("old")
    code, out, err = run(capsys, "--url", fake_armada.url, "delete", "queue", "old")
    assert (code, out, err) == (0, "Deleted queue old\n", "")
    (request,) = fake_armada.requests
    assert (request.method, request.path, request.body) == ("DELETE", "/api/v1/queues/old", None)
    assert "old" not in fake_armada.queues


def test_delete_queue_refused_by_the_server(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_queue("busy")
    fake_armada.busy_queues.add("busy")
    code, out, err = run(capsys, "--url", fake_armada.url, "delete", "queue", "busy")
    assert (code, out) == (1, "")
    assert err.strip() == "Error: queue busy has unfinished jobs; cancel them or wait"
    code, _, err = run(capsys, "--url", fake_armada.url, "delete", "queue", "ghost")
    assert code == 1 and err.strip() == "Error: queue ghost does not exist"


def test_cordon_and_uncordon_queue(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_queue("q1")
    code, out, err = run(capsys, "--url", fake_armada.url, "cordon", "queue", "q1")
    assert (code, out, err) == (0, "Cordoned queue q1\n", "")
    assert fake_armada.queues["q1"]["cordoned"] is True
    code, out, _ = run(capsys, "uncordon", "queue", "q1", "--url", fake_armada.url)
    assert (code, out) == (0, "Uncordoned queue q1\n")
    assert fake_armada.queues["q1"]["cordoned"] is False
    assert [(r.method, r.path, r.body) for r in fake_armada.requests] == [
        ("POST", "/api/v1/queues/q1/cordon", None),
        ("POST", "/api/v1/queues/q1/uncordon", None),
    ]
    code, _, err = run(capsys, "--url", fake_armada.url, "cordon", "queue", "ghost")
    assert code == 1 and err.strip() == "Error: queue ghost does not exist"


JOB_WITH_RUNS = {
    "id": "01jjob0001",
    "queue": "q1",
    "jobSetId": "js1",
    "state": "running",
    "priority": 0,
    "runs": [
        {
            "id": "01jrun0001",
            "state": "failed",
            "node": "node-7",
            "exitCode": 137,
            "reason": "OOMKilled",
            "message": "container main was killed",
            "failureCategory": "resources",
            "failureSubcategory": "oom",
            "hint": "raise the memory request",
            "retryable": True,
            "decision": {
                "decision": "retry",
                "policy": "oom",
                "rule": 1,
                "mutation": {"memory": {"kind": "factor", "before": "256Mi", "after": "384Mi"}},
            },
        },
        {"id": "01jrun0002", "state": "running", "node": "node-3", "exitCode": None},
    ],
}


def test_get_job_yaml_by_default_and_json(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.jobs["01jjob0001"] = JOB_WITH_RUNS
    code, out, err = run(capsys, "--url", fake_armada.url, "get", "job", "01jjob0001")
    assert (code, err) == (0, "")
    assert yaml.safe_load(out) == JOB_WITH_RUNS
    assert out.startswith("id: 01jjob0001\nqueue: q1\n")  # the server's key order
    assert "  failureCategory: resources\n" in out
    assert "      before: 256Mi\n" in out and "    rule: 1\n" in out
    code, out, _ = run(capsys, "--url", fake_armada.url, "get", "job", "01jjob0001", "-o", "json")
    assert code == 0
    assert json.loads(out) == JOB_WITH_RUNS
    assert fake_armada.paths() == ["/api/v1/jobs/01jjob0001"] * 2


def test_get_job_not_found(capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada) -> None:
    code, out, err = run(capsys, "--url", fake_armada.url, "get", "job", "nope")
    assert (code, out) == (1, "")
    assert err.strip() == "Error: job nope does not exist"


def test_logs_prints_the_text_as_is(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    text = "starting\n\ttab and  spaces\nno newline at the end"
    fake_armada.run_logs["01jrun0001"] = {
        "runId": "01jrun0001",
        "jobId": "01jjob0001",
        "log": text,
        "truncated": False,
        "updatedAt": CREATED,
    }
    code, out, err = run(capsys, "--url", fake_armada.url, "logs", "01jrun0001")
    assert (code, out, err) == (0, text, "")
    assert fake_armada.paths() == ["/api/v1/runs/01jrun0001/log"]


def test_logs_says_when_truncated_or_empty(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.run_logs["r1"] = {"runId": "r1", "jobId": "j", "log": "tail\n", "truncated": True}
    fake_armada.run_logs["r2"] = {"runId": "r2", "jobId": "j", "log": "", "truncated": False}
    code, out, err = run(capsys, "--url", fake_armada.url, "logs", "r1")
    assert (code, out) == (0, "tail\n")
    assert err.strip() == "Note: the server truncated this log; it is not the whole log."
    code, out, err = run(capsys, "--url", fake_armada.url, "logs", "r2")
    assert (code, out) == (0, "")
    assert err.strip() == "Run r2 has no log."
    code, out, err = run(capsys, "--url", fake_armada.url, "logs", "r3")
    assert (code, out) == (1, "")
    assert err.strip() == "Error: run r3 does not exist"


def test_help_lists_the_new_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for text in ("update", "delete", "cordon", "uncordon", "logs", "create retry-policy -f"):
        assert text in out
    code, out, _ = run(capsys, "update", "queue", "--help")
    assert code == 0
    assert "--retry-policies P1,P2" in out and '"" clears it' in out
    code, out, _ = run(capsys, "get", "--help")
    assert code == 0
    listed = [line.split()[0] for line in out.splitlines() if re.match(r"    \S", line)]
    assert listed == [
        "queue",
        "queues",
        "retry-policy",
        "retry-policies",
        "job",
        "job-sets",
        "executors",
        "executor",
        "executor-credentials",
        "scheduling",
        "queue-report",
        "job-report",
        "scheduling-report",
    ]


def test_preempt_job_checks_queue_and_job_set_then_asks_the_server(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.jobs["01jjob0001"] = {**JOB_WITH_RUNS, "state": "running"}
    queue, job_set = JOB_WITH_RUNS["queue"], JOB_WITH_RUNS["jobSetId"]
    code, out, err = run(
        capsys,
        "--url",
        fake_armada.url,
        "preempt",
        "job",
        queue,
        job_set,
        "01jjob0001",
        "maintenance",
    )
    assert (code, err) == (0, "")
    assert out.strip() == "Requested preemption of job 01jjob0001"
    assert fake_armada.paths("POST") == ["/api/v1/jobs/01jjob0001/preempt"]
    assert fake_armada.requests[-1].body == {"reason": "maintenance"}

    code, out, err = run(
        capsys, "--url", fake_armada.url, "preempt", "job", "other", job_set, "01jjob0001"
    )
    assert code == 1 and "not in queue other" in err
    assert fake_armada.paths("POST") == ["/api/v1/jobs/01jjob0001/preempt"]  # nothing more sent


def test_preempt_a_job_that_is_not_running_is_an_error(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.jobs["01jjob0001"] = {**JOB_WITH_RUNS, "state": "succeeded"}
    queue, job_set = JOB_WITH_RUNS["queue"], JOB_WITH_RUNS["jobSetId"]
    code, _, err = run(
        capsys, "--url", fake_armada.url, "preempt", "job", queue, job_set, "01jjob0001"
    )
    assert code == 1 and "not running" in err


def test_reprioritize_a_job_and_a_job_set(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.jobs["01jjob0001"] = {**JOB_WITH_RUNS, "id": "01jjob0001"}
    fake_armada.jobs["01jjob0002"] = {**JOB_WITH_RUNS, "id": "01jjob0002"}
    queue, job_set = JOB_WITH_RUNS["queue"], JOB_WITH_RUNS["jobSetId"]
    code, out, _ = run(
        capsys, "--url", fake_armada.url, "reprioritize", "job", queue, job_set, "01jjob0001", "5"
    )
    assert (code, out.strip()) == (0, "Reprioritized 1 job(s) to priority 5")
    assert fake_armada.requests[-1].body == {
        "queue": queue,
        "jobSetId": job_set,
        "priority": 5,
        "jobIds": ["01jjob0001"],
    }
    code, out, _ = run(
        capsys, "--url", fake_armada.url, "reprioritize", "job-set", queue, job_set, "2"
    )
    assert (code, out.strip()) == (0, "Reprioritized 2 job(s) to priority 2")
    assert fake_armada.requests[-1].body == {"queue": queue, "jobSetId": job_set, "priority": 2}
    code, _, _ = run(
        capsys, "--url", fake_armada.url, "reprioritize", "job-set", queue, job_set, "high"
    )
    assert code == 2


def test_cancel_a_job_and_a_job_set(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.jobs["01jjob0001"] = {**JOB_WITH_RUNS, "id": "01jjob0001"}
    queue, job_set = JOB_WITH_RUNS["queue"], JOB_WITH_RUNS["jobSetId"]
    code, out, _ = run(
        capsys, "--url", fake_armada.url, "cancel", "job", queue, job_set, "01jjob0001"
    )
    assert (code, out.strip()) == (0, "Cancelling 1 job(s)")
    assert fake_armada.paths("POST") == ["/api/v1/jobs/cancel"]
    assert fake_armada.requests[-1].body == {
        "queue": queue,
        "jobSetId": job_set,
        "jobIds": ["01jjob0001"],
    }
    code, out, _ = run(capsys, "--url", fake_armada.url, "cancel", "job-set", queue, job_set)
    assert (code, out.strip()) == (0, "Cancelling 1 job(s)")
    assert fake_armada.requests[-1].body == {"queue": queue, "jobSetId": job_set}

"""armada.core.fakepod: what a job asks of the fake backend, from its annotations."""

from __future__ import annotations

import pytest

from armada.core.fakepod import CONDITIONS, KEYS, PREFIX, FakeOutcome, parse_fake_outcome


def fake(**values: str) -> dict[str, str]:
    return {PREFIX + k: v for k, v in values.items()}


def test_defaults_when_nothing_is_asked():
    outcome, errors = parse_fake_outcome({})
    assert errors == []
    assert outcome == FakeOutcome(
        pending_seconds=0.0,
        duration_seconds=1.0,
        exit_code=0,
        condition="",
        termination_message="",
        pod_error="",
    )
    assert outcome.succeeds


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (fake(duration="30s"), FakeOutcome(duration_seconds=30.0)),
        (fake(duration="0"), FakeOutcome(duration_seconds=0.0)),
        (fake(pendingDuration="1m30s"), FakeOutcome(pending_seconds=90.0)),
        (fake(exitCode="0"), FakeOutcome(exit_code=0)),
        (fake(exitCode="137"), FakeOutcome(exit_code=137)),
        (fake(exitCode="255"), FakeOutcome(exit_code=255)),
        (fake(condition="Evicted"), FakeOutcome(condition="Evicted")),
        (fake(terminationMessage="disk full"), FakeOutcome(termination_message="disk full")),
        (fake(podError="ErrImagePull"), FakeOutcome(pod_error="ErrImagePull")),
        (
            fake(
                duration="2s",
                pendingDuration="500ms",
                exitCode="1",
                condition="OOMKilled",
                terminationMessage="m",
            ),
            FakeOutcome(
                pending_seconds=0.5,
                duration_seconds=2.0,
                exit_code=1,
                condition="OOMKilled",
                termination_message="m",
            ),
        ),
        ({"other.io/duration": "x", "armadaproject.io/failFast": "true"}, FakeOutcome()),
    ],
    ids=[
        "duration",
        "zero-duration",
        "pending-duration",
        "exit-code-zero",
        "exit-code-137",
        "exit-code-255",
        "condition",
        "termination-message",
        "pod-error",
        "several",
        "other-prefixes-ignored",
    ],
)
def test_parse(annotations, expected):
    outcome, errors = parse_fake_outcome(annotations)
    assert errors == []
    assert outcome == expected


@pytest.mark.parametrize("condition", CONDITIONS)
def test_every_condition_is_accepted(condition):
    outcome, errors = parse_fake_outcome(fake(condition=condition))
    assert (outcome.condition, errors) == (condition, [])


@pytest.mark.parametrize(
    ("outcome", "succeeds"),
    [
        (FakeOutcome(), True),
        (FakeOutcome(termination_message="done"), True),
        (FakeOutcome(duration_seconds=0, pending_seconds=5), True),
        (FakeOutcome(exit_code=1), False),
        (FakeOutcome(condition="OOMKilled"), False),
        (FakeOutcome(pod_error="ImagePullBackOff"), False),
    ],
    ids=["default", "message-only", "timings-only", "exit-code", "condition", "pod-error"],
)
def test_succeeds(outcome, succeeds):
    assert outcome.succeeds is succeeds


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("duration", "forever", "is not a duration"),
        ("duration", "10", "is not a duration"),
        ("duration", "-1s", "is not a duration"),
        ("pendingDuration", "soon", "is not a duration"),
        ("exitCode", "256", "an exit code is between 0 and 255"),
        ("exitCode", "-1", "an exit code is between 0 and 255"),
        ("exitCode", "one", "invalid literal"),
        ("exitCode", "1.0", "invalid literal"),
        ("condition", "oomkilled", "must be one of OOMKilled, Evicted, DeadlineExceeded"),
        ("condition", "", "must be one of"),
        ("exitcode", "1", "unknown fake-backend annotation; known: " + ", ".join(KEYS)),
        ("sleep", "1s", "unknown fake-backend annotation"),
    ],
    ids=lambda v: v if isinstance(v, str) and v else None,
)
def test_errors_name_the_annotation(name, value, fragment):
    outcome, errors = parse_fake_outcome(fake(**{name: value}), "jobs[3].annotations")
    assert [e.field for e in errors] == [f"jobs[3].annotations[{PREFIX}{name}]"]
    assert fragment in errors[0].message
    assert outcome == FakeOutcome()  # a bad value is not applied


def test_default_location_is_annotations():
    _, errors = parse_fake_outcome(fake(exitCode="x"))
    assert errors[0].field == f"annotations[{PREFIX}exitCode]"


def test_good_values_are_kept_next_to_bad_ones_and_every_error_is_reported():
    outcome, errors = parse_fake_outcome(
        fake(duration="5s", exitCode="300", condition="Bad", nope="1")
    )
    assert outcome.duration_seconds == 5.0
    assert sorted(e.field for e in errors) == sorted(
        f"annotations[{PREFIX}{n}]" for n in ("exitCode", "condition", "nope")
    )

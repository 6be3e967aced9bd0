"""The converter under the REST gateway (``wire.gojson``, ``wire.gojson_input``) on the
corners the recorded calls do not reach: what Go's ``encoding/json`` writes for them."""

from __future__ import annotations

import pytest
from armada_client.armada import event_pb2, job_pb2, submit_pb2

from armada.core.errors import ValidationFailed
from armada.wire import gojson
from armada.wire.gojson import go_dumps, go_json
from armada.wire.gojson_input import read_message


def test_an_unset_oneof_is_null_and_an_empty_set_message_is_an_object():
    assert go_json(submit_pb2.StreamingQueueMessage()) == {"Event": None}
    assert go_json(submit_pb2.StreamingQueueMessage(end=submit_pb2.EndMarker())) == {
        "Event": {"end": {}}
    }
    # EventMessage's own MarshalJSON: its oneof alone, null when unset.
    empty = event_pb2.EventStreamMessage(id="1", message=event_pb2.EventMessage())
    assert go_json(empty) == {"id": "1", "message": None}
    assert go_json(event_pb2.EventStreamMessage(id="1")) == {"id": "1"}


def test_numbers_bytes_maps_and_odd_json_names():
    job = submit_pb2.Job(id="j", priority=2.0, compressed_queue_ownership_user_groups=b"\x00\xff")
    assert go_json(job) == {"id": "j", "compressedQueueOwnershipUserGroups": "AP8=", "priority": 2}
    assert type(go_json(job)["priority"]) is int
    assert go_json(submit_pb2.Job(priority=0.5))["priority"] == 0.5
    run = job_pb2.JobRunDetails(ingress_addresses={8080: "b", 443: "a"})
    assert list(go_json(run)["ingressAddresses"]) == ["443", "8080"]  # sorted as text
    usage = event_pb2.JobUtilisationEvent(pod_number=3)
    usage.MaxResourcesForPeriod["cpu"].string = "250m"
    assert go_json(usage) == {"MaxResourcesForPeriod": {"cpu": "250m"}, "podNumber": 3}
    ingress = submit_pb2.IngressConfig(use_clusterIP=True, ports=[80])
    assert go_json(ingress) == {"ports": [80], "useClusterIP": True}
    with pytest.raises(ValueError):
        go_json(submit_pb2.Queue(priority_factor=float("nan")))


def test_non_nullable_and_stdtime_fields_follow_the_table(monkeypatch):
    details = job_pb2.JobRunDetails(run_id="r")
    details.leased_ts.FromSeconds(1_700_000_000)
    details.leased_ts.nanos = 500_000_000
    assert go_json(details)["leasedTs"] == {"seconds": 1_700_000_000, "nanos": 500_000_000}
    monkeypatch.setattr(gojson, "STDTIME", frozenset({"api.JobRunDetails.leased_ts"}))
    assert go_json(details)["leasedTs"] == "2023-11-14T22:13:20.5Z"
    monkeypatch.setattr(gojson, "NON_NULLABLE", frozenset({"api.JobRunDetails.pending_ts"}))
    assert go_json(details)["pendingTs"] == {}


def test_text_is_written_as_go_escapes_it():
    assert go_dumps({"a": "<b> & \u2028 é"}) == '{"a":"\\u003cb\\u003e \\u0026 \\u2028 é"}'.encode()


def test_reading_bytes_map_keys_and_refusals():
    job = submit_pb2.Job()
    read_message(job, {"compressedQueueOwnershipUserGroups": "AP8=", "ID": "x"})
    assert (job.id, job.compressed_queue_ownership_user_groups) == ("x", b"\x00\xff")
    run = job_pb2.JobRunDetails()
    read_message(run, {"ingressAddresses": {"8080": "a"}})
    assert dict(run.ingress_addresses) == {8080: "a"}
    with pytest.raises(ValidationFailed) as failed:
        read_message(
            job_pb2.JobRunDetails(),
            {"ingressAddresses": {"http": "a"}, "state": "RUN_STATE_LEASED", "runId": ["x"]},
        )
    assert [e.field for e in failed.value.errors] == ["ingressAddresses.http", "state", "runId"]
    # JobRunState has no reader of its own in Armada: numbers only.
    assert "must be a number of JobRunState" in str(failed.value)
    with pytest.raises(ValidationFailed, match="compressedQueueOwnershipUserGroups: must be"):
        read_message(submit_pb2.Job(), {"compressedQueueOwnershipUserGroups": "not base64!"})

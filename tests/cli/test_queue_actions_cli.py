"""``armadactl cancel|preempt|cordon|uncordon queues`` and ``get queues`` with names or a
label selector: first what is sent for each flag (a fake server), then the real thing
against Django's live server (jobs cancelled or not, all or nothing, dry runs)."""

from __future__ import annotations

import json

import pytest

from armada.cli.main import main
from armada.models import Job, Queue
from armada.services.queues import queue_create
from armada.services.submit import job_submit
from tests.cli.fake_armada import FakeArmada
from tests.conftest import T0, job, job_file


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def answer(**queues: list[str]) -> dict:
    return {"dryRun": False, "queues": [{"name": n, "jobIds": ids} for n, ids in queues.items()]}


# == what is sent (fake server) ============================================================


def test_cancel_queues_by_names_sends_every_filter(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.canned["POST", "/api/v1/queues/cancel"] = (200, answer(a=["j1", "j2"], b=[]))
    code, out, err = run(
        capsys, "cancel", "queues", "a", "b", "-s", "queued,running", "--state", "leased",
        "-p", "armada-default", "--pools", "gpu", "--reason", "drain", "--url", fake_armada.url,
    )  # fmt: skip
    assert code == 0, err
    [sent] = [r for r in fake_armada.requests if r.method == "POST"]
    assert sent.path == "/api/v1/queues/cancel"
    assert sent.body == {
        "dryRun": False,
        "queues": ["a", "b"],
        "inverse": False,
        "states": ["queued", "running", "leased"],
        "priorityClasses": ["armada-default"],
        "pools": ["gpu"],
        "reason": "drain",
    }
    filters = "(queued,running,leased; priority classes armada-default; pools gpu)"
    assert out.splitlines() == [
        f"Cancelling 2 job(s) in queue a {filters}",
        f"Cancelling 0 job(s) in queue b {filters}",
    ]


def test_cancel_queues_by_selector_dry_run_and_inverse(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.canned["POST", "/api/v1/queues/cancel"] = (
        200,
        {"dryRun": True, "queues": [{"name": "web", "jobIds": ["j9"]}]},
    )
    code, out, err = run(
        capsys, "cancel", "queue", "-l", "team=ml", "--selector", "tier", "--inverse",
        "--dry-run", "--job-states", "queued", "-a", "--url", fake_armada.url,
    )  # fmt: skip
    assert code == 0, err
    [sent] = [r for r in fake_armada.requests if r.method == "POST"]
    assert sent.body == {
        "dryRun": True,
        "selector": "team=ml,tier",
        "inverse": True,
        "states": ["queued"],
    }
    assert out == "Would cancel 1 job(s) in queue web (queued)\nDry run: nothing was cancelled.\n"


def test_one_queue_with_the_old_flags_uses_the_one_queue_call(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    code, out, _ = run(
        capsys, "cancel", "queue", "demo", "--state", "queued", "--url", fake_armada.url
    )
    assert code == 0
    assert fake_armada.paths("POST") == ["/api/v1/jobs/cancel"]
    assert fake_armada.requests[-1].body == {"queue": "demo", "states": ["queued"]}
    assert out == "Cancelling 0 job(s) in queue demo (queued)\n"


def test_only_cordoned_picks_the_queues_first(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_queue("ml-a", labels={"team": "ml"}, cordoned=True)
    fake_armada.add_queue("ml-b", labels={"team": "ml"})
    fake_armada.add_queue("web", labels={"team": "web"}, cordoned=True)
    fake_armada.canned["POST", "/api/v1/queues/preempt"] = (200, answer(**{"ml-a": ["j1"]}))
    code, out, err = run(
        capsys, "preempt", "queues", "-l", "team=ml", "--only-cordoned", "--url", fake_armada.url
    )
    assert code == 0, err
    get, post = fake_armada.requests
    assert (get.method, get.query) == ("GET", {"selector": "team=ml", "onlyCordoned": "true"})
    assert post.body == {"dryRun": False, "queues": ["ml-a"], "inverse": False}
    assert out == "Preempting 1 job(s) in queue ml-a\n"

    # Inverse over the whole test, as Armada's: every queue but the cordoned ml ones.
    fake_armada.requests.clear()
    code, _, err = run(
        capsys, "preempt", "queues", "-l", "team=ml", "--only-cordoned", "--inverse",
        "--url", fake_armada.url,
    )  # fmt: skip
    assert code == 0, err
    assert fake_armada.requests[-1].body["queues"] == ["ml-b", "web"]

    # Nothing picked: nothing sent.
    fake_armada.requests.clear()
    code, out, err = run(
        capsys, "cancel", "queues", "-l", "team=db", "--only-cordoned", "-s", "queued",
        "--url", fake_armada.url,
    )  # fmt: skip
    assert (code, out) == (0, "") and "No queues matched" in err
    assert fake_armada.paths("POST") == []


def test_preempt_queues_json_output_is_the_servers_answer(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.canned["POST", "/api/v1/queues/preempt"] = (200, answer(a=["j1"]))
    code, out, _ = run(capsys, "preempt", "queues", "a", "-o", "json", "--url", fake_armada.url)
    assert code == 0 and json.loads(out) == answer(a=["j1"])
    assert fake_armada.requests[-1].body == {"dryRun": False, "queues": ["a"], "inverse": False}


def test_cordon_queues_one_or_many(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_queue("a")
    code, out, _ = run(capsys, "cordon", "queue", "a", "--url", fake_armada.url)
    assert (code, out) == (0, "Cordoned queue a\n")
    assert fake_armada.paths("POST") == ["/api/v1/queues/a/cordon"]

    fake_armada.canned["POST", "/api/v1/queues/uncordon"] = (
        200,
        {"dryRun": True, "queues": [{"name": "a", "cordoned": False}]},
    )
    code, out, _ = run(
        capsys, "uncordon", "queues", "--match-labels", "team=ml", "--dry-run",
        "--url", fake_armada.url,
    )  # fmt: skip
    assert code == 0
    assert fake_armada.requests[-1].body == {
        "dryRun": True,
        "selector": "team=ml",
        "inverse": False,
    }
    assert out == "Would uncordon queue a\nDry run: nothing was changed.\n"


def test_get_queues_by_labels_names_and_inverse(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_queue("ml-a", labels={"team": "ml"}, cordoned=True)
    fake_armada.add_queue("ml-b", labels={"team": "ml"})
    fake_armada.add_queue("web", labels={"team": "web"})

    def names(*argv: str) -> list[str]:
        code, out, err = run(capsys, "get", "queues", *argv, "-o", "json", "--url", fake_armada.url)
        assert code == 0, err
        return [q["name"] for q in json.loads(out)]

    assert names("-l", "team=ml") == ["ml-a", "ml-b"]
    assert fake_armada.requests[-1].query == {"selector": "team=ml"}
    assert names("-l", "team=ml", "--only-cordoned") == ["ml-a"]
    assert names("-l", "team=ml", "--inverse") == ["web"]
    assert names("web", "ml-b") == ["ml-b", "web"]
    assert names("web", "--inverse") == ["ml-a", "ml-b"]
    assert names("--only-cordoned", "--inverse") == ["ml-b", "web"]
    assert names() == ["ml-a", "ml-b", "web"]
    code, _, err = run(capsys, "get", "queues", "ghost", "--url", fake_armada.url)
    assert code == 1 and "queue(s) ghost do not exist" in err


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["cancel", "queues", "a", "-l", "x=y", "-s", "queued"], "but not both"),
        (["cancel", "queues", "-s", "queued"], "narrowed down either by names or by labels"),
        (["cancel", "queues", "a"], "required: -s/--job-states"),
        (["cancel", "queues", "a", "-s", "queued,done"], "'done': must be one of queued"),
        (["preempt", "queues", "a", "-p", "x", "-a"], "not allowed with argument"),
        (["cordon", "queues"], "narrowed down either by names or by labels"),
        (["uncordon", "queues", "-l", "=x"], "term '=x' has no label key"),
        (["get", "queues", "a", "-l", "k"], "but not both"),
        (["cancel", "queues", "", "-s", "queued"], "empty queue name"),
    ],
)
def test_bad_selections_are_usage_errors_and_send_nothing(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, argv: list[str], fragment: str
) -> None:
    code, out, err = run(capsys, *argv, "--url", fake_armada.url)
    assert code == 2 and out == ""
    assert fragment in err and "Traceback" not in err
    assert fake_armada.requests == []


# == against the real API (Django's live server) ===========================================


@pytest.fixture
def labelled(admin_user, owner) -> dict[str, list[str]]:
    """Queues ml-a, ml-b (team=ml) and web (team=web), owned by olive, two jobs each."""
    for name, team in (("ml-a", "ml"), ("ml-b", "ml"), ("web", "web")):
        queue_create(
            actor=admin_user,
            data={"name": name, "labels": {"team": team}, "owners": ["olive"]},
            now=T0,
        )
    return {
        name: job_submit(actor=owner, data=job_file(queue=name, jobs=[job(), job()]), now=T0)
        for name in ("ml-a", "ml-b", "web")
    }


def job_states(ids: list[str]) -> list[str]:
    return sorted(Job.objects.get(id=i).state for i in ids)


@pytest.mark.django_db(transaction=True)
def test_live_cancel_by_selector_dry_run_then_for_real(ctl, labelled):
    code, out, err = ctl("cancel", "queues", "-l", "team=ml", "-s", "queued", "--dry-run")
    assert code == 0, err
    assert out.splitlines() == [
        "Would cancel 2 job(s) in queue ml-a (queued)",
        "Would cancel 2 job(s) in queue ml-b (queued)",
        "Dry run: nothing was cancelled.",
    ]
    assert Job.objects.filter(state="queued").count() == 6

    code, out, err = ctl("cancel", "queues", "-l", "team=ml", "-s", "queued", "--reason", "drain")
    assert code == 0, err
    assert "Cancelling 2 job(s) in queue ml-a (queued)" in out
    assert job_states(labelled["ml-a"] + labelled["ml-b"]) == ["cancelled"] * 4
    assert job_states(labelled["web"]) == ["queued", "queued"]


@pytest.mark.django_db(transaction=True)
def test_live_all_or_nothing_when_one_queue_is_denied(ctl, labelled, admin_user, member):
    queue_create(actor=admin_user, data={"name": "ml-private", "labels": {"team": "ml"}}, now=T0)
    private = job_submit(actor=admin_user, data=job_file(queue="ml-private"), now=T0)
    code, out, err = ctl("cancel", "queues", "-l", "team=ml", "-s", "queued")
    assert code == 1 and out == ""
    assert "ml-private" in err and "'cancel'" in err
    assert Job.objects.filter(state="queued").count() == 7  # nothing anywhere
    code, _, err = ctl("preempt", "queues", "ml-a", user=("mo", "mo-password"))
    assert code == 1 and "'preempt'" in err
    assert job_states(private) == ["queued"]


@pytest.mark.django_db(transaction=True)
def test_live_cordon_by_labels_and_get_only_cordoned(ctl, labelled):
    code, out, err = ctl("cordon", "queues", "-l", "team=ml", user=("root", "root-password"))
    assert code == 0, err
    assert out == "Cordoned queue ml-a\nCordoned queue ml-b\n"
    assert sorted(Queue.objects.filter(cordoned=True).values_list("name", flat=True)) == [
        "ml-a",
        "ml-b",
    ]
    code, out, _ = ctl("get", "queues", "--only-cordoned", "-o", "json")
    assert [q["name"] for q in json.loads(out)] == ["ml-a", "ml-b"]
    code, out, _ = ctl("get", "queues", "-l", "team=ml", "--only-cordoned", "--inverse")
    assert code == 0 and [line.split()[0] for line in out.splitlines()[1:]] == ["web"]
    code, _, err = ctl("uncordon", "queues", "ml-a", "ml-b")  # olive lacks cordon_queue
    assert code == 1 and "'cordon_queue'" in err
    code, out, _ = ctl("uncordon", "queues", "web", "--inverse", user=("root", "root-password"))
    assert out == "Uncordoned queue ml-a\nUncordoned queue ml-b\n"
    assert not Queue.objects.filter(cordoned=True).exists()


@pytest.mark.django_db(transaction=True)
def test_live_bad_selector_is_named_by_the_server(ctl, labelled):
    code, _, err = ctl("get", "queues", "-l", "team=m l")
    assert code == 1 and "selector" in err and "'team=m l'" in err and "Traceback" not in err


# == create and update queue with Armada's flag names ======================================


def test_create_queue_with_armadas_flags(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    code, out, err = run(
        capsys, "create", "queue", "analytics", "--cordon", "-l", "team=data",
        "--labels", "tier=gold", "--owners", "alice", "--owners", "bob,carol",
        "--group-owners", "ops", "--priority-factor", "2", "--url", fake_armada.url,
    )  # fmt: skip
    assert (code, out) == (0, "Created queue analytics\n"), err
    assert fake_armada.requests[-1].body == {
        "name": "analytics",
        "priorityFactor": 2.0,
        "owners": ["alice", "bob", "carol"],
        "groupOwners": ["ops"],
        "labels": {"team": "data", "tier": "gold"},
        "cordoned": True,
    }


def test_update_queue_with_armadas_flags(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_queue("analytics")
    code, out, err = run(
        capsys, "update", "queue", "analytics", "--cordon", "-l", "team=ml",
        "--url", fake_armada.url,
    )  # fmt: skip
    assert (code, out) == (0, "Updated queue analytics\n"), err
    assert fake_armada.requests[-1].body == {"labels": {"team": "ml"}, "cordoned": True}
    code, _, err = run(
        capsys, "update", "queue", "analytics", "-l", "a=1", "-l", "a=2", "--url", fake_armada.url
    )
    assert code == 2 and "label 'a' is given twice" in err
    code, _, err = run(
        capsys, "update", "queue", "analytics", "--cordon", "--uncordoned", "--url", fake_armada.url
    )
    assert code == 2 and "not allowed with argument" in err

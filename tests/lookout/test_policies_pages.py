"""Lookout's retry-policy pages: list, detail, history and diff, the editor (errors name the
field and the line, nothing is saved), validate, attach/detach, the rule tester and who may
do what."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from armada.core.config import parse_config
from armada.models import Event, Queue, RetryPolicy, RetryPolicyVersion, Run
from armada.services.policies import policy_create
from armada.services.submit import job_submit
from tests.conftest import T0, at, job, job_file

pytestmark = pytest.mark.django_db

POLICY = """apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: ml
retryLimit: 3
defaultAction: Fail
rules:
  - action: Fail
    onCategory: user-error
  - action: Retry
    onCategory: gpu
    onSubcategory: transient
  - action: Retry
    onCategory: oom
    mutate:
      resources:
        memory:
          factor: 1.5
"""

CONFIG = {
    "scheduling": {"retryPolicy": {"enabled": True, "globalMaxRetries": 10}},
    "executors": [
        {
            "id": "ex",
            "errorCategories": {
                "enabled": True,
                "defaultCategory": "unknown",
                "categories": [
                    {"name": "oom", "action": "Delete", "rules": [{"onConditions": ["OOMKilled"]}]},
                    {
                        "name": "gpu",
                        "action": "Delete",
                        "rules": [
                            {
                                "onTerminationMessage": {"pattern": "CUDA error"},
                                "subcategory": "transient",
                                "hint": "try again",
                            }
                        ],
                    },
                    {
                        "name": "user-error",
                        "action": "Retain",
                        "rules": [{"onExitCodes": {"operator": "In", "values": [1, 2]}}],
                    },
                ],
            },
        }
    ],
}


@pytest.fixture(autouse=True)
def armada_config(settings):
    """A known configuration: the engine on with a cap of 10 and one executor ``ex``; and a
    fast password hasher, since every test makes users with passwords."""
    settings.ARMADA = parse_config(CONFIG)
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def policy(admin_user):
    import yaml

    return policy_create(actor=admin_user, data=yaml.safe_load(POLICY), now=T0)


@pytest.fixture
def viewer(django_user_model):
    """May read policies (``view_retrypolicy``), nothing more."""
    user = django_user_model.objects.create_user("vera", password="vera-password")
    user.user_permissions.add(Permission.objects.get(codename="view_retrypolicy"))
    return user


def as_user(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def edit(client: Client, text: str, base_version: int = 1):
    return client.post("/policies/ml/edit", {"document": text, "base_version": str(base_version)})


# --- who may see and do what --------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["/policies/", "/policies/ml/", "/policies/new", "/policies/ml/edit"]
)
def test_anonymous_people_are_sent_to_the_login_page(client, policy, url):
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith("/login?next=")


@pytest.mark.parametrize(
    "url", ["/policies/", "/policies/ml/", "/policies/new", "/policies/ml/edit"]
)
def test_people_without_the_read_permission_get_403_naming_it(outsider, policy, url):
    response = as_user(outsider).get(url)
    assert response.status_code == 403
    assert "view_retrypolicy" in response.content.decode()


def test_a_viewer_reads_but_cannot_edit_create_or_attach(viewer, policy, queue):
    client = as_user(viewer)
    page = client.get("/policies/ml/").content.decode()
    assert "retryLimit: 3" in page
    assert "/policies/ml/edit" not in page and "Attach" not in page and ">Detach<" not in page
    assert "New policy" not in client.get("/policies/").content.decode()
    assert client.get("/policies/ml/edit").status_code == 403
    refused = edit(client, POLICY.replace("retryLimit: 3", "retryLimit: 9"))
    assert refused.status_code == 403 and "update_retry_policy" in refused.content.decode()
    assert client.get("/policies/new").status_code == 403
    assert client.post("/policies/ml/attach", {"queue": "demo", "first": "on"}).status_code == 403
    assert RetryPolicy.objects.get().version == 1
    assert Queue.objects.get(name="demo").retry_policies == []


# --- list and detail ------------------------------------------------------------------------


def test_the_list_shows_version_rules_queues_and_who_changed_it(admin_user, policy, queue):
    Queue.objects.filter(name="demo").update(retry_policies=["ml"])
    client = as_user(admin_user)
    response = client.get("/policies/")
    assert response.status_code == 200
    [row] = response.context["rows"]
    assert (row["policy"].name, row["policy"].version, row["rules"], row["queues"]) == (
        "ml",
        1,
        3,
        ["demo"],
    )
    html = response.content.decode()
    assert 'href="/policies/ml/"' in html and "root" in html and "New policy" in html
    assert 'href="/policies/"' in client.get("/").content.decode()  # in the navigation
    # The limit, the default action and the queues (links to them) are columns of their own.
    headers = ["Name", "Retry limit", "Default action", "Rules", "Queues using it", "Version"]
    for header in [*headers, "Updated"]:
        assert f">{header}</th>" in html, header
    assert '<td class="num">3</td>' in html and 'class="action action-fail">Fail<' in html
    assert '<a href="/queues/demo/">demo</a>' in html


def test_the_detail_page_shows_the_yaml_the_queues_and_the_first_version(admin_user, policy, queue):
    Queue.objects.filter(name="demo").update(retry_policies=["ml"])
    response = as_user(admin_user).get("/policies/ml/")
    html = response.content.decode()
    assert "factor: 1.5" in html and "onSubcategory: transient" in html
    # the file form's key order, whatever order the database keeps JSON keys in
    assert response.context["yaml"] == POLICY
    assert response.context["queues"] == [{"name": "demo", "position": 1}]
    assert [v.version for v in response.context["versions"]] == [1]
    assert "Version 1, the first recorded" in html
    assert as_user(admin_user).get("/policies/missing/").status_code == 404


# --- the editor -----------------------------------------------------------------------------

BROKEN = [
    # (what is typed, the field named, the line it points at)
    (
        POLICY.replace("action: Fail\n    onCategory: user", "action: Maybe\n    onCategory: user"),
        "rules[0].action",
        7,
    ),
    (POLICY.replace("factor: 1.5", "factor: 1.0"), "rules[2].mutate.resources.memory.factor", 17),
    (
        POLICY.replace("    onSubcategory: transient\n", "    onSubcatgory: transient\n"),
        "rules[1].onSubcatgory",
        11,
    ),
    (
        POLICY.replace("  - action: Retry\n    onCategory: gpu\n", "  - action: Retry\n"),
        "rules[1].onCategory",
        9,
    ),
    (POLICY.replace("retryLimit: 3", "retryLimit: -1"), "retryLimit", 4),
    (POLICY.replace("name: ml", "name: other"), "name", 3),
]


@pytest.mark.parametrize(("text", "field", "line"), BROKEN, ids=[b[1] for b in BROKEN])
def test_an_invalid_edit_names_the_field_and_line_and_saves_nothing(
    admin_user, policy, text, field, line
):
    response = edit(as_user(admin_user), text)
    assert response.status_code == 200
    errors = response.context["errors"]
    assert (field, line) in [(e.field, e.line) for e in errors], errors
    html = response.content.decode()
    assert f'data-line="{line}" data-field="{field}"' in html and f"Line {line}" in html
    assert "nothing was saved" in html and 'aria-invalid="true"' in html
    assert text.splitlines()[5] in html  # what was typed is kept for fixing
    assert RetryPolicy.objects.get().version == 1
    assert RetryPolicyVersion.objects.count() == 1


def test_text_that_is_not_yaml_is_refused_with_its_line(admin_user, policy):
    response = edit(as_user(admin_user), POLICY.replace("retryLimit: 3", "retryLimit: [3"))
    [error] = response.context["errors"]
    assert error.field == "" and error.line is not None and "not valid YAML" in error.message
    assert RetryPolicy.objects.get().version == 1


def test_a_valid_edit_saves_the_next_version_and_the_history_shows_its_diff(admin_user, policy):
    client = as_user(admin_user)
    form = client.get("/policies/ml/edit")
    assert form.context["base_version"] == 1 and "factor: 1.5" in form.context["text"]
    response = edit(client, POLICY.replace("retryLimit: 3", "retryLimit: 5"))
    assert response.status_code == 302
    assert response["Location"] == "/policies/ml/#history"
    assert RetryPolicy.objects.get().retry_limit == 5
    page = client.get("/policies/ml/")
    html = page.content.decode()
    assert "Saved ml, version 2." in html
    assert [(v.version, v.saved_by) for v in page.context["versions"]] == [(2, "root"), (1, "root")]
    assert "Version 2 compared with version 1" in html
    diff = [(d.kind, d.text) for d in page.context["diff"]]
    assert ("remove", "-retryLimit: 3") in diff and ("add", "+retryLimit: 5") in diff
    assert not any(kind in ("add", "remove") and "factor" in text for kind, text in diff)
    first = client.get("/policies/ml/", {"diff": "1"})
    assert first.context["diff_version"].version == 1 and "diff" not in first.context
    assert client.get("/policies/ml/", {"diff": "7"}).status_code == 404


def test_an_edit_started_from_an_older_version_is_refused(admin_user, policy):
    client = as_user(admin_user)
    edit(client, POLICY.replace("retryLimit: 3", "retryLimit: 5"), base_version=1)
    response = edit(client, POLICY.replace("retryLimit: 3", "retryLimit: 8"), base_version=1)
    assert response.status_code == 200
    assert "now version 2" in response.context["errors"][0].message
    assert RetryPolicy.objects.get().retry_limit == 5


def test_creating_a_policy_from_the_new_page(admin_user, policy):
    client = as_user(admin_user)
    assert "name: my-policy" in client.get("/policies/new").context["text"]
    taken = client.post("/policies/new", {"document": POLICY})
    assert [(e.field, e.line) for e in taken.context["errors"]] == [("name", 3)]
    assert "already exists" in taken.context["errors"][0].message
    created = client.post("/policies/new", {"document": POLICY.replace("name: ml", "name: fresh")})
    assert created.status_code == 302 and created["Location"] == "/policies/fresh/#history"
    assert RetryPolicyVersion.objects.filter(policy_name="fresh").count() == 1


def test_validate_checks_without_saving_and_places_errors_on_lines(admin_user, policy):
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    page = client.get("/policies/ml/edit")
    token = str(page.context["csrf_token"])
    assert client.post("/policies/validate", {"document": POLICY}).status_code == 403  # no token
    bad = POLICY.replace("factor: 1.5", "factor: 0.5").replace("retryLimit: 3", "retryLimit: 9")
    response = client.post(
        "/policies/validate",
        {"document": bad, "name": "ml"},
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 200
    body = response.json()
    assert body["valid"] is False
    [error] = body["errors"]
    assert (error["field"], error["line"]) == ("rules[2].mutate.resources.memory.factor", 17)
    assert "greater than 1.0" in error["message"]
    renamed = client.post(
        "/policies/validate",
        {"document": POLICY.replace("name: ml", "name: x"), "name": "ml"},
        HTTP_X_CSRFTOKEN=token,
    ).json()
    assert [(e["field"], e["line"]) for e in renamed["errors"]] == [("name", 3)]
    ok = client.post("/policies/validate", {"document": POLICY}, HTTP_X_CSRFTOKEN=token)
    assert ok.json() == {"valid": True, "errors": []}
    assert RetryPolicy.objects.get().retry_limit == 3 and RetryPolicyVersion.objects.count() == 1


def test_validate_refuses_people_who_may_not_read_policies(outsider):
    assert Client().post("/policies/validate", {"document": POLICY}).status_code == 403
    assert as_user(outsider).post("/policies/validate", {"document": POLICY}).status_code == 403


# --- queues ---------------------------------------------------------------------------------


def test_attach_and_detach_from_the_policy_page(admin_user, policy, queue):
    client = as_user(admin_user)
    page = client.get("/policies/ml/")
    assert [c[0] for c in page.context["attach"].fields["queue"].choices] == ["demo"]
    response = client.post("/policies/ml/attach", {"queue": "demo", "first": "on"})
    assert response.status_code == 302 and response["Location"] == "/policies/ml/#queues"
    assert Queue.objects.get(name="demo").retry_policies == ["ml"]
    html = client.get("/policies/ml/").content.decode()
    assert "Attached ml to queue demo." in html and "(evaluated)" in html
    client.post("/policies/ml/detach", {"queue": "demo"})
    assert Queue.objects.get(name="demo").retry_policies == []
    missing = client.post("/policies/ml/attach", {"queue": "nope"}, follow=True)
    assert "choose one of the queues" in missing.content.decode()


# --- the rule tester ------------------------------------------------------------------------

TESTER_CASES = [
    # (query, verdict, label, matched rule number, text in the reason, mutation)
    (
        {"category": "oom"},
        "Retry",
        "retry",
        3,
        "retry 1 of 3 (rule 3)",
        ["memory × 1.5 (every container)"],
    ),
    (
        {"category": "user-error"},
        "Fail",
        "fail_rule",
        1,
        "rule 1 (onCategory user-error) says Fail",
        [],
    ),
    (
        {"category": "gpu", "subcategory": "transient", "retries_used": "3"},
        "Fail",
        "fail_policy_limit",
        2,
        "policy retry limit exceeded (3/3)",
        [],
    ),
    (
        {"category": "gpu", "subcategory": "other"},
        "Fail",
        "fail_default",
        None,
        "no rule matched; defaultAction Fail",
        [],
    ),
    (
        {"category": "oom", "retries_used": "10"},
        "Fail",
        "fail_global_limit",
        None,
        "global retry limit reached (10/10)",
        [],
    ),
    (
        {"category": "oom", "gang_cardinality": "3"},
        "Fail",
        "",
        None,
        "not applied to gang jobs (gang of 3)",
        [],
    ),
    (
        {"category": "internal", "subcategory": "stuck-terminating"},
        "Fail",
        "",
        None,
        "never retried",
        [],
    ),
    (
        {"executor": "ex", "condition": "OOMKilled", "exit_code": "137"},
        "Retry",
        "retry",
        3,
        "rule 3",
        ["memory × 1.5 (every container)"],
    ),
    ({"executor": "ex", "exit_code": "1"}, "Fail", "fail_rule", 1, "says Fail", []),
    (
        {"executor": "ex", "exit_code": "3", "termination_message": "CUDA error 700"},
        "Retry",
        "retry",
        2,
        "rule 2",
        [],
    ),
]


@pytest.mark.parametrize(
    ("query", "verdict", "label", "rule", "reason", "mutation"),
    TESTER_CASES,
    ids=[f"{c[2] or 'not-decided'}-{'-'.join(c[0].values())}" for c in TESTER_CASES],
)
def test_the_rule_tester_shows_the_engines_verdict(
    admin_user, policy, query, verdict, label, rule, reason, mutation
):
    events = Event.objects.count()
    response = as_user(admin_user).get("/policies/ml/", {"test": "1", **query})
    outcome = response.context["outcome"]
    assert outcome is not None, response.context["tester"].errors
    assert (outcome.verdict, outcome.decision.label, outcome.rule_number) == (verdict, label, rule)
    assert reason in outcome.decision.reason
    assert outcome.mutation == mutation
    html = response.content.decode()
    assert f'<span class="verdict">{verdict}</span>' in html
    assert RetryPolicy.objects.get().version == 1 and Event.objects.count() == events


def test_the_tester_labels_typed_signals_with_the_executors_categorizer(admin_user, policy):
    response = as_user(admin_user).get(
        "/policies/ml/",
        {"test": "1", "executor": "ex", "exit_code": "3", "termination_message": "CUDA error"},
    )
    labels = response.context["outcome"].categorization
    assert (labels.category, labels.subcategory, labels.hint) == ("gpu", "transient", "try again")
    assert "try again" in response.content.decode()


def test_the_tester_asks_for_a_failure_when_given_none(admin_user, policy):
    response = as_user(admin_user).get("/policies/ml/", {"test": "1"})
    assert response.context["outcome"] is None
    assert "Give a run id, a failure category" in response.content.decode()
    assert response.context["tester"].non_field_errors()


def test_the_tester_takes_a_failed_run_and_writes_nothing(admin_user, owner, viewer, policy, queue):
    [job_id] = job_submit(actor=owner, data=job_file(jobs=[job()]), now=T0)
    for n, (state, category) in enumerate([("failed", "gpu"), ("failed", "oom"), ("running", "")]):
        Run.objects.create(
            id=f"01run{n}",
            job_id=job_id,
            executor="ex",
            node="n-1",
            pool="default",
            state=state,
            leased_at=at(n * 10),
            failure_category=category,
            failure_subcategory="transient" if category == "gpu" else "",
        )
    client = as_user(admin_user)
    response = client.get("/policies/ml/", {"test": "1", "run": "01run1"})
    outcome = response.context["outcome"]
    assert (outcome.failure.category, outcome.failure.retries_used) == ("oom", 1)
    assert (outcome.verdict, outcome.rule_number) == ("Retry", 3)
    assert "retry 2 of 3" in outcome.decision.reason
    assert f"run 01run1 of job {job_id}" in response.content.decode()
    assert Run.objects.filter(decided_at__isnull=False).count() == 0
    running = client.get("/policies/ml/", {"test": "1", "run": "01run2"})
    assert "only failed and lease-expired runs" in str(running.context["tester"].errors)
    missing = client.get("/policies/ml/", {"test": "1", "run": "nope"})
    assert "does not exist" in str(missing.context["tester"].errors)
    # a viewer of policies who may not watch the run's queue does not see the run
    hidden = as_user(viewer).get("/policies/ml/", {"test": "1", "run": "01run1"})
    assert hidden.context["outcome"] is None
    assert "may not watch" in str(hidden.context["tester"].errors)


def test_the_tester_says_when_the_engine_is_off(admin_user, policy, settings):
    settings.ARMADA = parse_config({})
    response = as_user(admin_user).get("/policies/ml/", {"test": "1", "category": "oom"})
    outcome = response.context["outcome"]
    assert outcome.verdict == "Retry"
    assert any("enabled: false" in n for n in outcome.notes)
    assert any("No global retry cap" in n for n in outcome.notes)


def test_a_duplicate_key_is_refused_with_its_line_and_nothing_is_saved(admin_user, policy):
    text = POLICY.replace("retryLimit: 3", "retryLimit: 3\nretryLimit: 7")
    response = edit(as_user(admin_user), text)
    [error] = response.context["errors"]
    assert error.line == 5
    assert "found duplicate key 'retryLimit' (first given on line 4)" in error.message
    assert RetryPolicy.objects.get().version == 1

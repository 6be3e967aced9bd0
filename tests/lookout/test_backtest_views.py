"""The policy editor's "What would this change?" panel (``lookout.backtest_views``): the
text being edited replayed over recorded failures by the real backtest service; a draft's
problems as Save shows them; the panel's own field errors; who may run it; and that it
writes nothing."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.apps import apps
from django.urls import reverse
from django.utils import timezone

from armada.models import Job, RetryPolicy, Run
from lookout.backtest_views import BacktestForm
from tests.lookout.backtest_history import INVALID, POLICY, STRICTER, record_history

URL = "/policies/backtest"
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def history(settings, admin_user, queue):
    record_history(settings, admin=admin_user, now=timezone.now())


@pytest.fixture
def as_admin(client, admin_user):
    client.force_login(admin_user)
    return client


def post(client, document: str = STRICTER, **fields: str):
    return client.post(URL, {"document": document, "period": "7d", **fields}, **HTMX)


def text(response) -> str:
    """The fragment's words, tags and extra spaces dropped."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode())).strip()


def snapshot() -> dict[str, object]:
    """Every table's row count, and every job and run as stored."""
    counts = {m._meta.db_table: m.objects.count() for m in apps.get_models()}
    jobs = list(Job.objects.order_by("id").values())
    runs = list(Run.objects.order_by("id").values())
    return {"counts": counts, "jobs": jobs, "runs": runs}


def test_the_url_is_the_panels():
    assert reverse("lookout:policy-backtest") == URL


@pytest.mark.django_db
def test_a_stricter_draft_shows_its_flips_and_links_the_jobs(as_admin, history):
    response = post(as_admin)
    assert response.status_code == 200
    body = response.content.decode()
    words = text(response)
    assert "2 of 3 failures would be decided differently" in words
    assert re.search(r"Retried then, would fail now\s*2\b", words)
    assert re.search(r"Failed then, would retry now\s*0\b", words)
    # Each flipped job's later run is an attempt saved: 2 cores and 4 GiB for an hour.
    assert re.search(r"Attempts saved\s*2, about 4 core-hours, 8 GiB-hours", words)
    # The flips by category and rule: rule 3 retried, the draft's rule 3 fails.
    flips = body[body.index('id="backtest-flips"') :]
    assert re.search(r"retry\s*</span>\s*→\s*<span[^>]*>fail", flips)
    row = re.search(r"<tr>(.*?)</tr>", flips[flips.index("<tbody>") :], re.S).group(1)
    assert re.findall(r"<td>(.*?)</td>", row, re.S)[1:5] == [
        '<span class="category">oom</span>',
        "–",
        "rule 3",
        "rule 3",
    ]
    # The sample: the draft's verdict and reason for each job.
    assert "<code>fail_rule</code>" in body
    # Both queues, by name; the sample links each affected job to its page.
    assert body.index('href="/queues/demo/"') < body.index('href="/queues/other/"')
    assert 'href="/jobs/job-oom"' in body and 'href="/jobs/job-far"' in body
    assert "An estimate, not a replay" in words
    assert "Nothing was saved" in words


@pytest.mark.django_db
def test_the_panel_says_which_queues_were_replayed(as_admin, history):
    words = text(post(as_admin))
    assert "Queues replayed (those that use the policy): demo, other." in words
    renamed = post(as_admin, STRICTER.replace("name: ml", "name: ml-next"))
    assert "Queues replayed: every queue (no queue uses the policy yet)." in text(renamed)
    named = post(as_admin, queues="demo")
    assert "Queues replayed (as asked): demo." in text(named)


@pytest.mark.django_db
def test_a_looser_draft_adds_attempts_with_their_delay_and_an_estimate(as_admin, history):
    looser = POLICY.replace(
        "- action: Fail\n  onCategory: user-error\n",
        "- action: Retry\n  onCategory: user-error\n  backoff: {initial: 30s, factor: 2, max: 10m}\n",
    )
    response = post(as_admin, looser)
    assert response.status_code == 200
    words = text(response)
    assert "1 of 3 failures would be decided differently" in words
    assert re.search(r"Failed then, would retry now\s*1\b", words)
    # One more run like the failed one: 2 cores and 4 GiB for an hour.
    assert re.search(r"Extra attempts\s*1, about 2 core-hours, 4 GiB-hours", words)
    assert re.search(
        r"Newly retried jobs that would succeed\s*about [0-9.]+ \(an estimate\)", words
    )
    body = response.content.decode()
    sample = body[body.index('id="backtest-sample"') :]
    rows = sample[sample.index("<tbody>") :]
    first = rows[: rows.index("</tr>")]
    assert 'href="/jobs/job-usr"' in first
    assert "<code>retry</code>" in first and "after 30s" in first and "changed" in first


@pytest.mark.django_db
def test_an_unchanged_draft_changes_nothing(as_admin, history):
    response = post(as_admin, POLICY)
    assert response.status_code == 200
    words = text(response)
    assert "0 of 3 failures would be decided differently" in words
    assert "No failure would be decided the other way." in words


@pytest.mark.django_db
def test_json_is_read_as_save_reads_it(as_admin, history):
    import json

    import yaml

    response = post(as_admin, json.dumps(yaml.safe_load(STRICTER)))
    assert response.status_code == 200
    assert "2 of 3 failures would be decided differently" in text(response)


@pytest.mark.django_db
def test_an_invalid_draft_shows_the_errors_save_shows(as_admin, history):
    response = post(as_admin, INVALID)
    assert response.status_code == 400
    body = response.content.decode()
    assert 'id="backtest-draft-errors"' in body
    assert 'data-line="17"' in body
    assert "<code>rules[2].mutate.resources.memory.factor</code>" in body
    assert "(rule 3)" in body
    assert "nothing was replayed" in body
    # The same message the editor's Save gives for the same text.
    saved = as_admin.post(reverse("lookout:policy-edit", args=["ml"]), {"document": INVALID})
    message = re.search(
        r'data-field="rules\[2\]\.mutate\.resources\.memory\.factor">(.*?)</li>',
        saved.content.decode(),
        re.S,
    )
    assert message is not None
    assert message.group(1) in body
    assert RetryPolicy.objects.get(name="ml").version == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("document", "line", "words"),
    [
        ("name: [unclosed\n", "2", "not valid YAML"),
        ("", None, "a retry policy is a mapping with name"),
        (POLICY.replace("onCategory: gpu", "onCategory: ''"), "10", "rules[1].onCategory"),
    ],
)
def test_text_that_is_not_a_policy_is_pointed_at(as_admin, history, document, line, words):
    response = post(as_admin, document)
    assert response.status_code == 400
    body = response.content.decode()
    assert words in body
    if line:
        assert f'data-line="{line}"' in body


@pytest.mark.django_db
def test_a_renamed_draft_of_an_existing_policy_is_refused_as_save_refuses_it(as_admin, history):
    response = post(as_admin, STRICTER.replace("name: ml", "name: ml2"), name="ml")
    assert response.status_code == 400
    assert "cannot be renamed" in response.content.decode()
    # A new policy may have any name.
    assert post(as_admin, STRICTER.replace("name: ml", "name: ml2")).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"period": "9d"}, "period", "9d is not one of the available choices"),
        ({"period": "between"}, "since", "give the start of the range"),
        ({"period": "between", "since": "2026-01-02T00:00"}, "until", "give the end"),
        (
            {"period": "between", "since": "2026-01-02T00:00", "until": "2026-01-01T00:00"},
            "until",
            "must be after From",
        ),
        ({"period": "between", "since": "yesterday", "until": "2026-01-01T00:00"}, "since", ""),
        ({"queues": " ".join(f"q{i}" for i in range(101))}, "queues", "at most 100 queues"),
    ],
)
def test_bad_panel_fields_are_named(as_admin, history, fields, field, words):
    response = post(as_admin, **fields)
    assert response.status_code == 400
    body = response.content.decode()
    assert 'id="backtest-errors"' in body
    assert f'href="#backtest-{field}"' in body
    assert words in body
    assert "backtest-result" not in body


@pytest.mark.django_db
def test_the_panels_mistakes_and_the_drafts_are_shown_together(as_admin, history):
    response = post(as_admin, INVALID, period="9d")
    assert response.status_code == 400
    body = response.content.decode()
    assert 'id="backtest-draft-errors"' in body and 'data-line="17"' in body
    assert 'id="backtest-errors"' in body and 'href="#backtest-period"' in body


@pytest.mark.django_db
def test_a_range_the_service_refuses_is_named_on_the_panel(as_admin, history):
    response = post(as_admin, period="between", since="2024-01-01T00:00", until="2026-01-01T00:00")
    assert response.status_code == 400
    body = response.content.decode()
    assert 'id="backtest-errors"' in body
    assert 'href="#backtest-since"' in body or 'href="#backtest-until"' in body
    assert "backtest-draft-errors" not in body


@pytest.mark.django_db
def test_from_to_reads_only_that_range(as_admin, history):
    now = timezone.now()
    early = (now - timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    late = (now - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    response = post(as_admin, period="between", since=early, until=late)
    assert response.status_code == 200
    assert "No recorded failures to replay" in text(response)


@pytest.mark.django_db
def test_queues_and_job_sets_narrow_the_replay(as_admin, history):
    response = post(as_admin, queues="demo")
    assert response.status_code == 200
    assert "1 of 2 failures would be decided differently" in text(response)
    assert 'href="/queues/other/"' not in response.content.decode()
    response = post(as_admin, job_sets="no-such-set")
    assert response.status_code == 200
    assert "No recorded failures to replay" in text(response)
    response = post(as_admin, job_sets="set-1, set-2")
    assert "2 of 3 failures would be decided differently" in text(response)


@pytest.mark.django_db
def test_anonymous_is_refused(client, history):
    response = post(client)
    assert response.status_code == 403
    assert "Log in" in response.content.decode()


@pytest.mark.django_db
def test_a_post_without_the_csrf_token_is_refused(admin_user, history):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    response = post(client)
    assert response.status_code == 403
    assert "backtest-result" not in response.content.decode()


@pytest.mark.django_db
def test_only_post(as_admin):
    assert as_admin.get(URL).status_code == 405


@pytest.mark.django_db
def test_viewing_the_queues_is_enough_and_only_those_are_read(client, owner, history):
    """``olive`` owns ``demo`` and holds no policy permission: she sees demo's failures
    and not those of ``other``."""
    client.force_login(owner)
    response = post(client)
    assert response.status_code == 200
    body = response.content.decode()
    assert "1 of 2 failures would be decided differently" in text(response)
    assert 'href="/jobs/job-oom"' in body
    assert "job-far" not in body and 'href="/queues/other/"' not in body


@pytest.mark.django_db
def test_a_queue_one_may_not_view_is_refused_by_name(client, owner, history):
    client.force_login(owner)
    response = post(client, queues="demo, other")
    assert response.status_code == 403
    body = response.content.decode()
    assert 'href="#backtest-queues"' in body
    assert "other" in text(response)
    assert "job-far" not in body


@pytest.mark.django_db
def test_it_writes_nothing(as_admin, history):
    before = snapshot()
    assert post(as_admin).status_code == 200
    assert post(as_admin, INVALID).status_code == 400
    assert post(as_admin, period="9d").status_code == 400
    assert snapshot() == before


@pytest.mark.django_db
def test_the_editor_pages_carry_the_panel_with_the_forms_ids(as_admin, history):
    form = BacktestForm()
    for path in ("/policies/new", "/policies/ml/edit"):
        body = as_admin.get(path).content.decode()
        assert "What would this change?" in body
        assert f'hx-post="{URL}"' in body
        assert 'hx-include="#document"' in body
        assert 'aria-live="polite"' in body
        for field in form:
            # The panel's error links (``_form_errors.html``) point at these ids.
            assert f'id="{field.id_for_label}"' in body, field.name
            assert f'name="{field.html_name}"' in body, field.name
        period = body[body.index('id="backtest-period"') :]
        options = re.findall(r'<option value="([^"]+)"', period[: period.index("</select>")])
        assert options == [value for value, _ in form.fields["period"].choices]
        panel = body[body.index('id="backtest-form"') : body.index('id="backtest-results"')]
        # Editing names the policy, so that a renamed draft is refused as Save refuses it.
        named = '<input type="hidden" name="name" value="ml">' in panel
        assert named == path.endswith("/edit")

"""Each user's column choice: saved with a POST (JSON from the chooser, or its plain form),
checked (a bad choice is 400 naming the field and changes nothing), used when the grid is
rendered (no flash: hidden columns are not in the HTML), overridden by ``?columns=``, reset
to the default; one user's choice never touches another's."""

from __future__ import annotations

import json

import pytest

from lookout.grid.columns import DEFAULT_COLUMNS
from lookout.grid.prefs import save_columns, saved_columns
from lookout.models import GridPreference
from tests.lookout.builders import make_job

pytestmark = pytest.mark.django_db
URL = "/grid/columns"


def post_json(client, body) -> object:
    return client.post(URL, json.dumps(body), content_type="application/json")


def columns_of(html: str) -> list[str]:
    head = html[html.index('id="grid-head"') : html.index("</tr>", html.index('id="grid-head"'))]
    import re

    return re.findall(r'<th scope="col" data-col="([^"]+)"', head)


def test_a_saved_choice_renders_on_the_next_visit(client, admin_user, queue):
    make_job("01a")
    client.force_login(admin_user)
    assert columns_of(client.get("/").content.decode()) == list(DEFAULT_COLUMNS)
    response = post_json(
        client, {"visible": ["state", "id", "annotation:team"], "widths": {"id": 260}}
    )
    assert response.status_code == 200
    assert response.json() == {
        "visible": ["state", "id", "annotation:team"],
        "widths": {"id": 260},
        "saved": True,
    }
    html = client.get("/").content.decode()
    assert columns_of(html) == ["state", "id", "annotation:team"]
    assert 'data-col="queue"' not in html.split('id="job-rows"')[1]  # not rendered at all
    assert '<col data-col="id" class="w-260">' in html
    assert 'aria-valuenow="260"' in html


def test_columns_in_the_url_override_the_saved_choice(client, admin_user, queue):
    make_job("01a", annotations={"team": "vision"})
    client.force_login(admin_user)
    save_columns(admin_user, {"visible": ["id", "state"], "widths": {"state": 200}})
    response = client.get("/", {"columns": "id,annotation:team,queue"})
    html = response.content.decode()
    assert columns_of(html) == ["id", "annotation:team", "queue"]
    assert "vision" in html
    assert "columns=id%2Cannotation%3Ateam%2Cqueue" in response.context["params"].url()
    # The saved widths still apply; the chooser's change goes back to the saved choice.
    assert response.context["chooser_next"] == "/?"
    # Older URLs' annotation columns are added to the saved ones.
    old = client.get("/", {"annotations": "team"})
    assert columns_of(old.content.decode()) == ["id", "state", "annotation:team"]


def test_reset_goes_back_to_the_default(client, admin_user):
    client.force_login(admin_user)
    save_columns(admin_user, {"visible": ["id"], "widths": {}})
    response = post_json(client, {"reset": True})
    assert response.status_code == 200 and response.json()["saved"] is False
    assert not GridPreference.objects.filter(user=admin_user).exists()
    assert columns_of(client.get("/").content.decode()) == list(DEFAULT_COLUMNS)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"visible": ["id", "nonsense"]}, "visible"),
        ({"visible": []}, "visible"),
        ({"visible": "id,state"}, "visible"),
        ({"visible": ["id", "id"]}, "visible"),
        ({"visible": [1, 2]}, "visible"),
        ({"visible": [f"annotation:k{i}" for i in range(41)]}, "visible"),
        ({"visible": ["id"], "widths": {"id": -5}}, "widths.id"),
        ({"visible": ["id"], "widths": {"id": 10_000}}, "widths.id"),
        ({"visible": ["id"], "widths": {"id": "wide"}}, "widths.id"),
        ({"visible": ["id"], "widths": {"id": True}}, "widths.id"),
        ({"visible": ["id"], "widths": {"nope": 100}}, "widths.nope"),
        ({"visible": ["id"], "widths": [100]}, "widths"),
        ({"visible": ["id"], "colour": "red"}, "colour"),
        ({"visible": ["annotation:a\u0000b"]}, "visible"),
        ([], "columns"),
        ("id", "columns"),
    ],
)
def test_a_bad_choice_is_400_naming_the_field_and_changes_nothing(client, admin_user, body, field):
    client.force_login(admin_user)
    save_columns(admin_user, {"visible": ["id", "state"], "widths": {}})
    response = post_json(client, body)
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == field
    assert saved_columns(admin_user) == (("id", "state"), {})


def test_not_json_and_too_large_bodies_are_400(client, admin_user):
    client.force_login(admin_user)
    bad = client.post(URL, "{not json", content_type="application/json")
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "body"
    huge = client.post(
        URL, json.dumps({"visible": ["id"] * 20_000}), content_type="application/json"
    )
    assert huge.status_code == 400


def test_saving_needs_a_login_a_post_and_the_csrf_token(client, admin_user):
    from django.test import Client

    assert client.post(URL, "{}", content_type="application/json").status_code == 302
    client.force_login(admin_user)
    assert client.get(URL).status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(admin_user)
    refused = strict.post(URL, json.dumps({"visible": ["id"]}), content_type="application/json")
    assert refused.status_code == 403
    assert not GridPreference.objects.filter(user=admin_user).exists()


def test_one_users_choice_leaves_anothers_alone(client, admin_user, owner, queue):
    save_columns(owner, {"visible": ["id", "queue"], "widths": {"queue": 300}})
    client.force_login(admin_user)
    post_json(client, {"visible": ["state"], "widths": {"state": 150}})
    assert saved_columns(owner) == (("id", "queue"), {"queue": 300})
    assert saved_columns(admin_user) == (("state",), {"state": 150})
    client.force_login(owner)
    assert columns_of(client.get("/").content.decode()) == ["id", "queue"]


def test_the_plain_chooser_form_saves_moves_adds_and_resets(client, admin_user, queue):
    client.force_login(admin_user)
    order = list(DEFAULT_COLUMNS) + ["owner"]
    form = {"order": order, "visible": ["id", "state", "owner"], "next": "/?state=failed"}
    response = client.post(URL, form)
    assert response.status_code == 302 and response["Location"] == "/?state=failed"
    assert saved_columns(admin_user)[0] == ("id", "state", "owner")
    client.post(URL, {**form, "move": "up:owner"})
    assert saved_columns(admin_user)[0] == ("id", "owner", "state")
    client.post(URL, {**form, "add": "team"})
    assert saved_columns(admin_user)[0] == ("id", "state", "owner", "annotation:team")
    assert client.post(URL, {**form, "move": "sideways:id"}).status_code == 400
    assert client.post(URL, {**form, "visible": ["bogus"]}).status_code == 400
    assert client.post(URL, {**form, "next": "https://evil.example/"})["Location"] == "/"
    client.post(URL, {"reset": "1"})
    assert saved_columns(admin_user) == (None, {})


def test_a_saved_column_the_grid_no_longer_has_is_left_out(admin_user):
    GridPreference.objects.create(
        user=admin_user,
        columns={"visible": ["id", "gone"], "widths": {"gone": 100, "id": 5}},
        updated_at="2026-01-01T00:00:00Z",
    )
    assert saved_columns(admin_user) == (("id",), {})


def test_a_grid_page_reads_the_choice_once(client, admin_user, queue):
    """The view and the chooser both need the choice; it is read from the database once."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    make_job("01a")
    client.force_login(admin_user)
    save_columns(admin_user, {"visible": ["id", "state"], "widths": {"state": 200}})
    for headers in ({}, {"HX-Request": "true", "HX-Target": "job-rows"}):
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/", headers=headers)
        assert response.status_code == 200
        assert columns_of(response.content.decode()) == ["id", "state"]
        reads = [q for q in queries if "lookout_gridpreference" in q["sql"]]
        assert len(reads) == 1, reads

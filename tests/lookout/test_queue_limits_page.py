"""A queue's page shows its resource limits by priority class as a table (class, resource,
limit, per-pool overrides), or says there are none beyond the priority classes' own."""

from __future__ import annotations

import re

import pytest

from armada.models import Queue
from lookout.queue_views import LimitRow, limit_rows
from tests.queue_limits import EXAMPLE, PC

pytestmark = pytest.mark.django_db


def cells(html: str) -> list[list[str]]:
    """The limits table's body rows, as the text of their cells."""
    section = html.split('id="limits"', 1)[1].split("</section>", 1)[0]
    body = section.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [
        [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", body)
    ]


def test_the_queue_page_shows_the_limits_table(client, queue, admin_user):
    Queue.objects.filter(name="demo").update(resource_limits_by_priority_class_name=EXAMPLE)
    client.force_login(admin_user)
    html = client.get("/queues/demo/").content.decode()
    assert "Resource limits by priority class" in html
    assert cells(html) == [[PC, "cpu", "30%", "gpu-pool: 10%"], [PC, "memory", "30%", "—"]]
    assert "No limits beyond" not in html


def test_the_queue_page_says_when_there_are_none(client, queue, admin_user):
    client.force_login(admin_user)
    html = client.get("/queues/demo/").content.decode()
    assert "No limits beyond the priority classes' own." in html
    assert "<tbody>" not in html.split('id="limits"', 1)[1].split("</section>", 1)[0]


ROWS = [
    ("none", {}, []),
    (
        "pool-only-resource",
        {
            PC: {
                "maximumResourceFraction": {"cpu": 0.5},
                "maximumResourceFractionByPool": {
                    "b": {"maximumResourceFraction": {"nvidia.com/gpu": 0.25, "cpu": 0.125}},
                    "a": {"maximumResourceFraction": {"cpu": 1.0}},
                },
            }
        },
        [
            LimitRow(PC, "cpu", "50%", [("a", "100%"), ("b", "12.5%")]),
            LimitRow(PC, "nvidia.com/gpu", None, [("b", "25%")]),
        ],
    ),
    (
        "a-class-that-sets-nothing",
        {"armada-default": {"maximumResourceFraction": {}, "maximumResourceFractionByPool": {}}},
        [LimitRow("armada-default", "", None, [])],
    ),
]


@pytest.mark.parametrize(("limits", "rows"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_limit_rows(limits, rows):
    assert limit_rows(limits) == rows

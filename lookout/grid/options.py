"""The values the grid's multi-select filters offer: states, the queues the viewer may watch,
the priority classes and failure categories that exist, decisions and retryable verdicts.

Each list is cheap to read at a million jobs: states, decisions and verdicts are fixed;
queues and priority classes come from the queue table and the configuration; failure
categories are read from the category index with a loose index scan (one index probe per
distinct category, not a scan of the jobs), and subcategories come from the executors'
configured rules and the failure counters. A value the URL filters on is always offered.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection

from armada.core.categorizer import INTERNAL, INTERNAL_SUBCATEGORIES
from armada.models import Job, MetricCounter, Queue
from armada.services.authz import watchable_queues
from lookout.grid.filters import DECISIONS, NONE, RETRYABLE_CHOICES, STATES, JobFilters

MAX_OPTIONS = 200
CATEGORY_COUNTER = "armada_executor_job_failure_category_total"

# One probe of job_lookout_category_idx per distinct failure category.
_DISTINCT_CATEGORIES = """
WITH RECURSIVE c(v) AS (
  (SELECT failure_category FROM armada_job ORDER BY failure_category LIMIT 1)
  UNION ALL
  SELECT (SELECT failure_category FROM armada_job WHERE failure_category > c.v
          ORDER BY failure_category LIMIT 1)
  FROM c WHERE c.v IS NOT NULL
)
SELECT v FROM c WHERE v IS NOT NULL LIMIT %s
"""


def _with(values: list[str], chosen: tuple[str, ...]) -> list[str]:
    """``values`` (in order, no repeats) and then any chosen value they lack."""
    return list(dict.fromkeys([*values, *(c for c in chosen if c != NONE)]))


def categories() -> list[str]:
    """The failure categories jobs have (``""`` excluded)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                _DISTINCT_CATEGORIES.replace("armada_job", Job._meta.db_table), [MAX_OPTIONS]
            )
            found = [row[0] for row in cursor.fetchall()]
    else:
        found = list(
            Job.objects.order_by("failure_category")
            .values_list("failure_category", flat=True)
            .distinct()[:MAX_OPTIONS]
        )
    return [c for c in found if c]


def subcategories() -> list[str]:
    """Subcategories the executors' rules and the control plane give, and those counted."""
    found: set[str] = set(INTERNAL_SUBCATEGORIES)
    for executor in settings.ARMADA.executors:
        config = executor.error_categories
        if config.default_subcategory:
            found.add(config.default_subcategory)
        for category in config.categories:
            found.update(rule.subcategory for rule in category.rules if rule.subcategory)
    for labels in MetricCounter.objects.filter(name=CATEGORY_COUNTER).values_list(
        "labels", flat=True
    )[:MAX_OPTIONS]:
        if isinstance(labels, dict) and labels.get("failure_subcategory"):
            found.add(str(labels["failure_subcategory"]))
    return sorted(found)[:MAX_OPTIONS]


def queues(actor: Any) -> list[str]:
    allowed = watchable_queues(actor)
    if allowed is not None:
        return allowed[:MAX_OPTIONS]
    return list(Queue.objects.order_by("name").values_list("name", flat=True)[:MAX_OPTIONS])


def filter_options(
    actor: Any, filters: JobFilters, keys: tuple[str, ...]
) -> dict[str, list[tuple[str, str]]]:
    """Per multi-select column key of ``keys`` (the shown columns): ``(value, label)``
    choices, the chosen values included. Only shown columns' choices are read."""

    def pairs(values: list[str]) -> list[tuple[str, str]]:
        return [(v, v) for v in values]

    readers = {
        "state": lambda: pairs(list(STATES)),
        "queue": lambda: pairs(_with(queues(actor), filters.queues)),
        "priority_class": lambda: pairs(
            _with(sorted(settings.ARMADA.scheduling.priority_classes), filters.priority_classes)
        ),
        "category": lambda: (
            [(NONE, NONE)]
            + pairs(_with([*categories(), INTERNAL], filters.categories)[:MAX_OPTIONS])
        ),
        "subcategory": lambda: (
            [(NONE, NONE)] + pairs(_with(subcategories(), filters.subcategories))
        ),
        "decision": lambda: pairs(list(DECISIONS)) + [(NONE, NONE)],
        "retryable": lambda: pairs(list(RETRYABLE_CHOICES)),
    }
    return {key: readers[key]() for key in keys if key in readers}

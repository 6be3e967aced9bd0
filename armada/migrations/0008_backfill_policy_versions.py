"""Give every existing retry policy a history: its current document as the only known version.

Earlier versions were never kept, so the row carries the policy's current ``version`` number
(the history of an old policy may start at, say, version 4) and its last change's author
and time. The document is built here, not imported, so that the migration keeps meaning
what it meant when it was written.
"""

from django.db import migrations


def backfill(apps, schema_editor):
    RetryPolicy = apps.get_model("armada", "RetryPolicy")
    RetryPolicyVersion = apps.get_model("armada", "RetryPolicyVersion")
    rows = []
    for policy in RetryPolicy.objects.all():
        if RetryPolicyVersion.objects.filter(policy=policy, version=policy.version).exists():
            continue
        document = {
            "apiVersion": "armadaproject.io/v1beta1",
            "kind": "RetryPolicy",
            "name": policy.name,
            "retryLimit": policy.retry_limit,
            "defaultAction": policy.default_action,
        }
        if policy.rules:
            document["rules"] = policy.rules
        rows.append(
            RetryPolicyVersion(
                policy=policy,
                policy_name=policy.name,
                version=policy.version,
                document=document,
                saved_by=policy.updated_by,
                saved_at=policy.updated_at,
            )
        )
    RetryPolicyVersion.objects.bulk_create(rows)


class Migration(migrations.Migration):
    dependencies = [
        ("armada", "0007_retrypolicyversion"),
    ]

    operations = [
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]

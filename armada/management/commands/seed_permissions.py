"""``manage.py seed_permissions``: give Django groups the global permissions from config.

Reads ``auth.permissionGroupMapping`` (permission codename -> group names), creates missing
groups and adds the permissions. Idempotent; it never removes a permission an operator added.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group, Permission
from django.core.management.base import BaseCommand
from django.db import transaction


class Command(BaseCommand):
    help = (
        "Create groups and grant them the global permissions named in auth.permissionGroupMapping."
    )

    def handle(self, *args, **options) -> None:
        mapping = settings.ARMADA.auth.permission_group_mapping
        with transaction.atomic():
            for codename, groups in mapping.items():
                permission = Permission.objects.get(
                    content_type__app_label="armada", codename=codename
                )
                for group_name in groups:
                    group, _ = Group.objects.get_or_create(name=group_name)
                    group.permissions.add(permission)
                    self.stdout.write(f"{group_name}: {codename}")

"""``field__any=[...]``: membership in a long list of values.

``IN (%s, %s, ...)`` with thousands of values costs more to build and parse than to run; on
PostgreSQL ``= ANY(...)`` sends the whole list as one parameter (text as one JSON array).
Elsewhere it is ``IN`` (Django splits nothing for us there, so callers keep lists to a few
thousand values)."""

from __future__ import annotations

from django.db.models import CharField, Field, ForeignObject
from django.db.models.lookups import In

from armada.services.bulk import json_texts, text_array_sql


@ForeignObject.register_lookup
@Field.register_lookup
class Any(In):
    lookup_name = "any"

    def as_postgresql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        values = [v for v in self.rhs if v is not None]
        field = self.lhs.output_field
        target = getattr(field, "target_field", field)
        if isinstance(target, CharField) and all(isinstance(v, str) for v in values):
            # Text as one JSON array, split by the server (see ``services.bulk``).
            return f"{lhs} = ANY({text_array_sql()})", [*lhs_params, json_texts(values)]
        return f"{lhs} = ANY(%s)", [*lhs_params, values]

"""``field__any=[...]``: membership in a long list of values.

``IN (%s, %s, ...)`` with thousands of values costs more to build and parse than to run; on
PostgreSQL ``= ANY(...)`` sends the whole list as one parameter (text as one JSON array).
Elsewhere it is ``IN`` (Django splits nothing for us there, so callers keep lists to a few
thousand values)."""

from __future__ import annotations

from django.db.models import CharField, Field, ForeignObject
from django.db.models.lookups import In

from armada.services.bulk import sql_in


@ForeignObject.register_lookup
@Field.register_lookup
class Any(In):
    lookup_name = "any"

    def as_postgresql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        values = [v for v in self.rhs if v is not None]
        field = self.lhs.output_field
        target = getattr(field, "target_field", field)
        if isinstance(target, CharField):
            sql, params = sql_in(lhs, values)  # text as one JSON array (``services.bulk``)
            return sql, [*lhs_params, *params]
        return f"{lhs} = ANY(%s)", [*lhs_params, values]

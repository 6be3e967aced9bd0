"""``field__any=[...]``: membership in a long list of values.

``IN (%s, %s, ...)`` with thousands of values costs more to build and parse than to run; on
PostgreSQL ``= ANY(%s)`` sends the whole list as one array parameter. Elsewhere it is ``IN``
(Django splits nothing for us there, so callers keep lists to a few thousand values)."""

from __future__ import annotations

from django.db.models import CharField, Field, ForeignObject
from django.db.models.lookups import In


@ForeignObject.register_lookup
@Field.register_lookup
class Any(In):
    lookup_name = "any"

    def as_postgresql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        values = [v for v in self.rhs if v is not None]
        field = self.lhs.output_field
        target = getattr(field, "target_field", field)
        array_type = "text[]" if isinstance(target, CharField) else None
        cast = f"::{array_type}" if array_type else ""
        return f"{lhs} = ANY(%s{cast})", [*lhs_params, values]

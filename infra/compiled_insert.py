"""A model's INSERT as Django's compiler writes it, compiled once per model and database
instead of on every row: the same statement, the same values (each field's ``pre_save`` and
``get_db_prep_save``), what ``RETURNING`` gives back converted as Django does. For the rows
written on every tool call and every model round (``tools_app.services.call_statements``,
``chat_app.services.usage_statements``), where compiling was a third of the work; their
modules say what was measured. Only for models with no ``save()`` override and no signal
receiver, which this skips."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model
from django.db.models.sql import InsertQuery


@dataclass(frozen=True)
class CompiledInsert:
    sql: str  # INSERT … RETURNING the model's returned columns (its key)
    fields: list[Any]  # the columns, in the statement's order
    returning: list[Any]
    compiler: Any  # converts what comes back as Django does
    converters: dict[int, Any]

    def params(self, obj: Model) -> list[Any]:
        # The connection itself, not the ``connection`` proxy: each field's preparation reads
        # it several times, and every read through the proxy is a context-local lookup (a
        # quarter of a call's INSERT in ``bench binding``'s profile).
        db = connections[DEFAULT_DB_ALIAS]
        return [f.get_db_prep_save(f.pre_save(obj, True), db) for f in self.fields]

    def stored(self, obj: Model, row: Any) -> None:
        """``obj`` as ``save()`` leaves it, given the row ``RETURNING`` gave back."""
        if self.converters:
            row = next(iter(self.compiler.apply_converters([row], self.converters)))
        for field, value in zip(self.returning, row, strict=True):
            setattr(obj, field.attname, value)
        obj._state.adding = False
        obj._state.db = connection.alias


_COMPILED: dict[tuple[type[Model], str], CompiledInsert] = {}


def compiled_insert(model: type[Model]) -> CompiledInsert:
    key = (model, connection.vendor)
    compiled = _COMPILED.get(key)
    if compiled is None:
        meta = model._meta
        fields = [f for f in meta.local_concrete_fields if not f.primary_key]
        returning = list(meta.db_returning_fields)
        query = InsertQuery(model)
        query.insert_values(fields, [model()])
        compiler = query.get_compiler(connection=connection)
        compiler.returning_fields = returning
        [(sql, _values)] = compiler.as_sql()
        converters = compiler.get_converters([f.get_col(meta.db_table) for f in returning])
        compiled = _COMPILED[key] = CompiledInsert(sql, fields, returning, compiler, converters)
    return compiled


def insert_row(obj: Model) -> None:
    """``obj.save()`` for a new row, with its model's compiled INSERT."""
    compiled = compiled_insert(type(obj))
    with connection.cursor() as cursor:
        cursor.execute(compiled.sql, compiled.params(obj))
        row = cursor.fetchone()
    compiled.stored(obj, row)

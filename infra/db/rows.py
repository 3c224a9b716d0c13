"""Statements on the hot path, written out: INSERTs, and the helpers other hand-written
statements (the claim and finish of a call, a turn moving on) build theirs with.

Every turn creates a few rows (its turn, its messages, its tool calls and their audit
records), and under load the ORM building each INSERT cost more than the database took to run
it (on SQLite, while every other writer of the process waited). Here the statement is built
once per model and database; each value goes through its field's own ``pre_save`` and
``get_db_prep_save``, as ``Model.save()`` does. No ``pre_save``/``post_save`` signals are
sent: for models nothing listens to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Field, Model
from django.db.models.options import Options


@dataclass(frozen=True)
class InsertShape:
    """``INSERT INTO {target} VALUES ({values})``, with one parameter per field, in order."""

    target: str  # the table and its columns
    values: str  # one placeholder, or SQL with one placeholder, per field
    fields: tuple[Field[Any, Any], ...]


_SHAPES: dict[tuple[str, type[Model], str], InsertShape] = {}


def insert_shape(
    model: type[Model],
    *,
    computed: Callable[[], Mapping[str, str]] | None = None,
    name: str = "",
) -> InsertShape:
    """The shape of a new ``model`` row without its primary key. ``computed`` (called once,
    for the shape cached under ``name``): field name → the SQL of its value, with one
    placeholder."""
    key = (connection.vendor, model, name)
    shape = _SHAPES.get(key)
    if shape is None:
        qn = connection.ops.quote_name
        meta = model._meta
        fields = tuple(f for f in meta.concrete_fields if not f.primary_key)
        sql = computed() if computed is not None else {}
        values = [sql.get(f.name, "%s") for f in fields]
        columns = ", ".join(qn(str(f.column)) for f in fields)
        shape = InsertShape(f"{qn(meta.db_table)} ({columns})", ", ".join(values), fields)
        _SHAPES[key] = shape
    return shape


def insert_params(
    shape: InsertShape, instance: Model, computed: Mapping[str, Any] | None = None
) -> list[Any]:
    """The parameters of ``instance``'s row; ``computed``: field name → its parameter."""
    params = []
    for field in shape.fields:
        if computed and field.name in computed:
            params.append(computed[field.name])
        else:
            params.append(field.get_db_prep_save(field.pre_save(instance, True), connection))
    return params


def insert(instance: Model) -> None:
    """``instance.save()`` of a new row (its primary key left to the database): one
    ``INSERT … RETURNING`` its key, which the instance is given, as ``save()`` would."""
    meta = type(instance)._meta
    if meta.pk is None or instance.pk is not None:
        raise ValueError(f"insert() writes new rows; this {meta.label} has a key already")
    shape = insert_shape(type(instance))
    pk = connection.ops.quote_name(str(meta.pk.column))
    sql = f"INSERT INTO {shape.target} VALUES ({shape.values}) RETURNING {pk}"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, insert_params(shape, instance))
        row = cursor.fetchone()
    instance.pk = meta.pk.to_python(row[0])
    instance._state.adding = False
    instance._state.db = connection.alias


def _field(meta: Options[Any], name: str) -> Field[Any, Any]:
    field = meta.get_field(name)
    if not isinstance(field, Field):
        raise ValueError(f"{meta.label}.{name} is not a concrete field")
    return field


def column(meta: Options[Any], name: str) -> str:
    """A field's column, quoted, for a statement written out by hand."""
    return str(connection.ops.quote_name(str(_field(meta, name).column)))


def db_value(model: type[Model], name: str, python_value: Any) -> Any:
    """A field's value as a statement parameter, as the ORM would send it."""
    return _field(model._meta, name).get_db_prep_save(python_value, connection)

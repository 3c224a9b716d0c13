"""Statements the ORM compiles once per process and runs again with new values (issue 38).

Building and compiling a query is most of what a statement costs here: on the bench VM a
one-row ``Message.objects.get(pk=…)`` takes ~0.4 ms of Python, of which executing it in SQLite
and making the instance ~0.05 ms; the round's read of its turn with ``select_related`` ~1.4 ms.
A turn runs a dozen such statements on its hot path, the same shape every time with other
values. ``Prepared`` keeps what Django produced for one shape and re-runs it:

- The query is written as a function of its values, in the ORM (``build``). The first call in a
  process calls it with a unique probe per value (an int, a string, a datetime or a dict, per
  the kind declared), has Django compile it, and finds each probe's position among the
  compiled parameters. Later calls substitute their values there, prepared as Django prepares
  them (``Field.get_db_prep_save`` for an UPDATE's new values, the value itself for an exact
  lookup). The SQL, its converters and its populators (``select_related``) are Django's own.
- Only SELECT (model instances, ``values()``, ``values_list()``) and UPDATE: no ``save()``
  override or signal is skipped, since ``QuerySet.update()`` fires none and instances are made
  by ``Model.from_db`` as the ORM makes them. INSERTs stay ``save()``.
- A call whose values do not have the declared kinds (``None`` included: the ORM writes
  ``IS NULL`` or ``= NULL`` for it, another SQL), or an int beyond 32 bits (the ORM answers an
  id out of a column's range with no rows), runs through the ORM as written.
- With ``settings.PREPARED_VERIFY`` (the test settings), every call also compiles the query
  through the ORM and fails if the SQL or the values differ: every test that passes a prepared
  statement checks it against the ORM.

Kept because an A/B in one ``make bench`` run showed the turn's CPU moving beyond the run's
spread (``bench/HISTORY.md``, issue 38).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connections, transaction
from django.db.models import QuerySet
from django.db.models import query as orm_query
from django.db.models import sql as orm_sql
from django.db.models.query import get_related_populators

PROBE_INT = 1_946_285_000  # within 32 bits, as every integer column's values
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
REGISTRY: list[Prepared] = []  # every statement of the project (tests compile each)
PROBE_STRING = "\x1fcc-probe-{}\x1f"


def _probe(kind: type, index: int) -> Any:
    if kind is int:
        return PROBE_INT + index
    if kind is str:
        return PROBE_STRING.format(index)
    if kind is dt.datetime:
        return dt.datetime(2001, 2, 3, 4, 5, 6, 1000 + index, tzinfo=dt.UTC)
    if kind is dict:
        return {PROBE_STRING.format(index): index}
    raise TypeError(f"a prepared statement's value is an int, str, datetime or dict, not {kind}")


def _same(compiled: Any, expected: Any) -> bool:
    if type(compiled) is not type(expected):
        return False
    if compiled == expected:
        return True
    return repr(compiled) == repr(expected)  # adapters without __eq__ (psycopg's Jsonb)


@dataclass
class _Shape:
    """What Django produced for the statement on one database connection's vendor."""

    sql: str
    params: list[Any]
    slots: list[tuple[int, str, Callable[[Any], Any] | None]]  # (position, name, prepare)
    kind: str  # "update", "models", "values", "values_list", "flat"
    names: list[str]
    converters: list[tuple[int, tuple[list[Any], Any]]]
    model: Any = None
    init_list: list[str] | None = None
    start: int = 0
    end: int = 0
    populators: list[Any] | None = None
    annotations: dict[str, int] | None = None


class Prepared:
    """``Prepared(build, name=int, …)``: ``build(**values)`` returns the QuerySet to read, or
    ``(queryset, {field: new value})`` for an UPDATE; the keywords declare each value's kind.
    ``rows(**values)`` / ``one(**values)`` read, ``update(**values)`` returns the rows changed.
    """

    def __init__(self, build: Callable[..., Any], **kinds: type) -> None:
        self.build = build
        self.kinds = kinds
        self._shapes: dict[tuple[str, str], _Shape] = {}
        self._lock = threading.Lock()
        REGISTRY.append(self)

    def __repr__(self) -> str:
        return f"Prepared({getattr(self.build, '__qualname__', self.build)}, {self.kinds})"

    def check(self) -> None:
        """Compile it now and compare with the ORM (the test suite, for every statement)."""
        shape = self._compile(_database())
        probes = {name: _probe(kind, 50 + i) for i, (name, kind) in enumerate(self.kinds.items())}
        self._verify(shape, probes)

    # --- calls ---------------------------------------------------------------------------

    def rows(self, **values: Any) -> list[Any]:
        shape = self._shape_for(values)
        if shape is None:
            return list(self.build(**values))
        assert shape.kind != "update"
        alias = "default"
        connection = connections[alias]
        params = self._params(shape, values)
        with connection.cursor() as cursor:
            cursor.execute(shape.sql, params)
            rows = cursor.fetchall()
        if shape.converters:
            rows = list(_converted(rows, shape.converters, connection))
        return _made(shape, rows, alias)

    def one(self, **values: Any) -> Any:
        rows = self.rows(**values)
        return rows[0] if rows else None

    def update(self, **values: Any) -> int:
        shape = self._shape_for(values)
        if shape is None:
            queryset, changes = self.build(**values)
            return int(queryset.update(**changes))
        assert shape.kind == "update"
        connection = connections["default"]
        params = self._params(shape, values)
        with (
            transaction.mark_for_rollback_on_error(using="default"),
            connection.cursor() as cursor,
        ):
            cursor.execute(shape.sql, params)
            return int(cursor.rowcount)

    # --- the shape -----------------------------------------------------------------------

    def _shape_for(self, values: dict[str, Any]) -> _Shape | None:
        if values.keys() != self.kinds.keys():
            raise TypeError(f"values {sorted(values)} for a statement of {sorted(self.kinds)}")
        for name, kind in self.kinds.items():
            value = values[name]
            # A str's subclass (a TextChoices member) is stored as the str; a bool is not an int.
            if type(value) is not kind and not (kind is str and isinstance(value, str)):
                return None  # None, a subclass, a str for an int: the ORM as written
            # An int no integer column holds: the ORM answers it with no rows (Django's
            # integer range check), where the database would refuse the parameter.
            if isinstance(value, int) and not INT_MIN <= value <= INT_MAX:
                return None
        key = _database()
        shape = self._shapes.get(key)
        if shape is None:
            with self._lock:
                shape = self._shapes.get(key) or self._compile(key)
        if getattr(settings, "PREPARED_VERIFY", False):
            self._verify(shape, values)
        return shape

    def _compile(self, key: tuple[str, str]) -> _Shape:
        shape = self._compiled_with(0)
        # Compiled again with other probes: a parameter that moved with them and is not one of
        # them (``pk + 1``, ``text[:3]``, a list for ``__in``) would be kept as a constant.
        again = self._compiled_with(100)
        if again.sql != shape.sql or [x[:2] for x in again.slots] != [x[:2] for x in shape.slots]:
            raise TypeError(f"{self!r}: its SQL depends on its values")
        if any(
            not _same(a, b)
            for i, (a, b) in enumerate(zip(shape.params, again.params, strict=True))
            if i not in {position for position, _, _ in shape.slots}
        ):
            raise TypeError(f"{self!r}: a value reaches the statement in another form")
        self._shapes[key] = shape
        return shape

    def _compiled_with(self, offset: int) -> _Shape:
        probes = {
            name: _probe(kind, offset + i) for i, (name, kind) in enumerate(self.kinds.items())
        }
        return _compiled(self.build(**probes), probes)

    def _params(self, shape: _Shape, values: dict[str, Any]) -> list[Any]:
        params = list(shape.params)
        for position, name, prepare in shape.slots:
            value = values[name]
            params[position] = prepare(value) if prepare is not None else value
        return params

    def _verify(self, shape: _Shape, values: dict[str, Any]) -> None:
        expected_sql, expected = _compiled_sql(self.build(**values))
        got = self._params(shape, values)
        if expected_sql != shape.sql or len(expected) != len(got):
            raise AssertionError(
                f"prepared SQL differs from the ORM's:\n{shape.sql}\n{expected_sql}"
            )
        for a, b in zip(got, expected, strict=True):
            if not (_same(a, b) or _same(b, a)):
                raise AssertionError(f"prepared value {a!r} differs from the ORM's {b!r}")


def _database() -> tuple[str, str]:
    """Which compilation serves: one per vendor and database (the test suite switches)."""
    connection = connections["default"]
    return (connection.vendor, connection.settings_dict.get("NAME") or "")


def _update_compiler(queryset: QuerySet[Any], changes: dict[str, Any]) -> Any:
    """What ``QuerySet.update(**changes)`` compiles (its steps for a query without
    annotations or ordering; a related update is refused)."""
    if queryset.query.is_sliced or queryset.query.order_by or queryset.query.annotations:
        raise TypeError("a prepared UPDATE has no slice, ordering or annotation")
    query: Any = queryset.query.chain(orm_sql.UpdateQuery)
    query.add_update_values(changes)
    if query.related_updates:
        raise TypeError("a prepared UPDATE changes one table")
    query.clear_select_clause()
    return query.get_compiler(queryset.db)


def _compiled_sql(built: Any) -> tuple[str, list[Any]]:
    if isinstance(built, tuple):
        queryset, changes = built
        compiler = _update_compiler(queryset, changes)
    else:
        compiler = built.query.get_compiler(built.db)
    sql, params = compiler.as_sql()
    return sql, list(params)


def _compiled(built: Any, probes: dict[str, Any]) -> _Shape:
    if isinstance(built, tuple):
        queryset, changes = built
        compiler = _update_compiler(queryset, changes)
        kind = "update"
        fields = {
            value_name: queryset.model._meta.get_field(field_name)
            for field_name, value in changes.items()
            for value_name, probe in probes.items()
            if value is probe
        }
    else:
        queryset = built
        if not isinstance(queryset, QuerySet):
            raise TypeError("a prepared build returns a QuerySet or (QuerySet, changes)")
        if queryset._prefetch_related_lookups or queryset._known_related_objects:  # type: ignore[attr-defined]
            raise TypeError("a prepared statement cannot prefetch or carry known related objects")
        compiler = queryset.query.get_compiler(queryset.db)
        kind = {
            orm_query.ModelIterable: "models",
            orm_query.ValuesIterable: "values",
            orm_query.ValuesListIterable: "values_list",
            orm_query.FlatValuesListIterable: "flat",
        }.get(queryset._iterable_class, "")
        if not kind:
            raise TypeError(f"a prepared statement cannot read {queryset._iterable_class}")
        fields = {}
    sql, compiled = compiler.as_sql()
    compiled = list(compiled)
    connection = compiler.connection
    slots: list[tuple[int, str, Callable[[Any], Any] | None]] = []
    for name, probe in probes.items():
        field = fields.get(name)
        prepare: Callable[[Any], Any] | None = None
        expected = probe
        if field is not None:
            prepare = _preparer(field, connections[queryset.db].alias)
            expected = field.get_db_prep_save(probe, connection=connection)
        found = [i for i, p in enumerate(compiled) if _same(p, expected)]
        if not found:
            raise TypeError(f"the value {name!r} is not a parameter of the compiled statement")
        if prepare is None and type(probe) is not int and type(probe) is not str:
            raise TypeError(f"the value {name!r} is compared: only ints and strings can be")
        slots.extend((i, name, prepare) for i in found)
    taken = {position for position, _, _ in slots}
    for i, p in enumerate(compiled):
        if i not in taken and any(_same(p, v) for v in probes.values()):
            raise TypeError("a probe reached the statement in another form")
    shape = _Shape(sql=sql, params=compiled, slots=slots, kind=kind, names=[], converters=[])
    if kind == "update":
        return shape
    query = queryset.query
    select = compiler.select
    if compiler.has_extra_select or compiler.has_composite_fields([s[0] for s in select]):
        raise TypeError("a prepared read selects its own columns only")
    columns = [s[0] for s in select[: compiler.col_count]]
    shape.converters = list(compiler.get_converters(columns).items())
    if kind == "models":
        klass_info = compiler.klass_info
        shape.model = klass_info["model"]
        select_fields = klass_info["select_fields"]
        shape.start, shape.end = select_fields[0], select_fields[-1] + 1
        shape.init_list = [f[0].target.attname for f in select[shape.start : shape.end]]
        # The stubs follow a later Django (a fetch_mode argument); this is 5.2's signature.
        shape.populators = get_related_populators(klass_info, select, queryset.db)  # type: ignore[call-arg]
        shape.annotations = dict(compiler.annotation_col_map or {})
    elif kind == "values":
        shape.names = (
            list(query.selected)
            if query.selected
            else [
                *query.extra_select,
                *query.values_select,
                *query.annotation_select,
            ]
        )
    return shape


def _preparer(field: Any, alias: str) -> Callable[[Any], Any]:
    def prepare(value: Any) -> Any:
        return field.get_db_prep_save(value, connection=connections[alias])

    return prepare


def _converted(rows: list[Any], converters: list[Any], connection: Any) -> Any:
    for row in map(list, rows):
        for pos, (convs, expression) in converters:
            value = row[pos]
            for converter in convs:
                value = converter(value, expression, connection)
            row[pos] = value
        yield row


def _made(shape: _Shape, rows: list[Any], alias: str) -> list[Any]:
    if shape.kind == "values_list":
        return [tuple(row) for row in rows]
    if shape.kind == "flat":
        return [row[0] for row in rows]
    if shape.kind == "values":
        names = shape.names
        return [dict(zip(names, row, strict=False)) for row in rows]
    out = []
    model, init_list, start, end = shape.model, shape.init_list, shape.start, shape.end
    for row in rows:
        obj = model.from_db(alias, init_list, row[start:end])
        for populator in shape.populators or ():
            populator.populate(row, obj)
        for attr, position in (shape.annotations or {}).items():
            setattr(obj, attr, row[position])
        out.append(obj)
    return out

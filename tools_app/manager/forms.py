"""Forms generated from JSON Schema: a tool group's settings and a function's Test arguments.

One generator serves both. A settings model is turned into its JSON Schema first (the same
``plain_schema`` the providers get), so every type an executor can declare maps the same way:

- ``list[str]`` (array of scalars)  → a text area, one item per line
- ``int`` / ``float``               → a number input with its unit (``_seconds`` → "s", ...)
- ``bool``                          → a switch (a labelled checkbox with ``role="switch"``)
- ``Literal[...]`` / enum           → a select
- ``str``                           → a text input
- ``X | None``                      → X, where a blank value means ``None``
- ``SecretStr`` (``writeOnly``)      → a password input that never shows the stored value
                                      (blank keeps it) and a switch to remove it
- anything else (objects, unions)   → a JSON text area

The Django fields only *parse* what was typed; the Pydantic model (settings) or the binding
(Test) is the one judge of what is allowed, so the admin reads the same words the model would.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.forms.utils import ErrorDict
from django.utils.formats import number_format
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _
from pydantic import BaseModel, SecretStr, ValidationError

from tools_app.i18n import text_localized
from tools_app.schema import plain_schema

# Suffix of a field name → the unit shown beside its input (and dropped from its label).
UNIT_SUFFIXES = {
    "_seconds": gettext_noop("s"),
    "_secs": gettext_noop("s"),
    "_ms": gettext_noop("ms"),
    "_bytes": gettext_noop("bytes"),
    "_kb": gettext_noop("KB"),
    "_mb": gettext_noop("MB"),
    "_gb": gettext_noop("GB"),
    "_percent": "%",
    "_chars": gettext_noop("characters"),
}
_SCALARS = {"string", "integer", "number", "boolean"}
# String arguments that usually hold more than one line get a text area.
_MULTILINE_NAMES = {"content", "text", "body", "script", "code", "stdin", "data", "patch"}


@dataclass
class FieldSpec:
    """What the generator understood about one property."""

    name: str
    kind: str  # text | secret | integer | number | boolean | choice | lines | json
    label: str
    help: str = ""
    unit: str = ""
    required: bool = False
    nullable: bool = False
    has_default: bool = False
    choices: list[Any] = field(default_factory=list)
    minimum: float | None = None
    maximum: float | None = None
    item_type: str = "string"
    multiline: bool = False

    @property
    def range_text(self) -> str:
        """The allowed range as the help line shows it: 1–60 s, ≥ 0, ≤ 10 MB."""

        def num(value: float) -> str:
            # Grouped as the page's language writes numbers (3,600 / 3 600).
            if float(value).is_integer():
                return number_format(int(value), force_grouping=True)
            return number_format(value)

        unit = f" {gettext(self.unit)}" if self.unit else ""
        if self.minimum is not None and self.maximum is not None:
            return f"{num(self.minimum)}–{num(self.maximum)}{unit}"
        if self.minimum is not None:
            return f"≥ {num(self.minimum)}{unit}"
        if self.maximum is not None:
            return f"≤ {num(self.maximum)}{unit}"
        return ""


def _humanize(name: str) -> str:
    words = name.strip("_").replace("_", " ")
    return words[:1].upper() + words[1:]


def field_label(name: str) -> str:
    """The English label a form shows for a field or argument name (its unit suffix off)."""
    return _unit_and_label(name, {})[1]


def _unit_and_label(name: str, prop: dict[str, Any]) -> tuple[str, str]:
    unit = str(prop.get("unit") or "")
    label_name = name
    for suffix, suffix_unit in UNIT_SUFFIXES.items():
        if name.endswith(suffix) and len(name) > len(suffix):
            unit = unit or suffix_unit
            label_name = name[: -len(suffix)]
            break
    return unit, _humanize(label_name)


def _non_null(prop: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Unwrap ``anyOf: [X, null]`` (and ``type: [X, "null"]``) into X plus a nullable flag."""
    options = prop.get("anyOf") or prop.get("oneOf")
    if isinstance(options, list):
        rest = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
        if len(rest) < len(options):
            if len(rest) == 1:
                inner = dict(rest[0])
                for key in ("description", "default", "unit", "examples"):
                    if key in prop and key not in inner:
                        inner[key] = prop[key]
                return inner, True
            return {**prop, "anyOf": rest}, True
    kind = prop.get("type")
    if isinstance(kind, list) and "null" in kind:
        others = [k for k in kind if k != "null"]
        return {**prop, "type": others[0] if len(others) == 1 else others}, True
    return prop, False


def field_spec(name: str, prop: dict[str, Any], *, required: bool) -> FieldSpec:
    inner, nullable = _non_null(prop)
    unit, label = _unit_and_label(name, inner)
    spec = FieldSpec(
        name=name,
        kind="json",
        label=text_localized(label),
        help=text_localized(str(inner.get("description") or prop.get("description") or "")),
        unit=unit,
        required=required,
        nullable=nullable,
        has_default="default" in prop or "default" in inner,
    )
    kind = inner.get("type")
    if inner.get("writeOnly") and kind == "string":
        spec.kind = "secret"
    elif "enum" in inner or "const" in inner:
        spec.kind = "choice"
        spec.choices = list(inner["enum"]) if "enum" in inner else [inner["const"]]
    elif kind in ("integer", "number"):
        spec.kind = kind
        spec.minimum = inner.get("minimum", inner.get("exclusiveMinimum"))
        spec.maximum = inner.get("maximum", inner.get("exclusiveMaximum"))
    elif kind == "boolean":
        spec.kind = "boolean"
    elif kind == "string":
        spec.kind = "text"
        spec.multiline = name in _MULTILINE_NAMES or int(inner.get("maxLength") or 0) > 200
    elif kind == "array":
        items = inner.get("items")
        item_type = items.get("type") if isinstance(items, dict) else None
        if isinstance(items, dict) and item_type in _SCALARS:
            spec.kind = "lines"
            spec.item_type = str(item_type)
    return spec


def schema_specs(schema: dict[str, Any]) -> list[FieldSpec]:
    required = set(schema.get("required") or [])
    return [
        field_spec(name, prop if isinstance(prop, dict) else {}, required=name in required)
        for name, prop in (schema.get("properties") or {}).items()
    ]


# --- values ↔ what the inputs show -------------------------------------------------------
def display_value(spec: FieldSpec, value: Any) -> Any:
    """A Python value as the input shows it."""
    if spec.kind == "secret":
        return ""  # write-only: the stored value never travels back to a browser
    if value is None:
        return "" if spec.kind != "boolean" else None
    if spec.kind == "lines":
        return "\n".join(str(v) for v in value) if isinstance(value, list) else str(value)
    if spec.kind == "json":
        return json.dumps(value, indent=2, ensure_ascii=False)
    if spec.kind == "choice":
        return json.dumps(value) if not isinstance(value, str) else value
    return value


def _choice_key(value: Any) -> str:
    # Selects carry strings; non-string choices (ints, bools) round-trip through JSON.
    return value if isinstance(value, str) else json.dumps(value)


def _parse_item(text: str, item_type: str) -> Any:
    try:
        if item_type == "integer":
            return int(text)
        if item_type == "number":
            return float(text)
    except ValueError:
        return text  # the validator names the bad line
    if item_type == "boolean":
        return {"true": True, "false": False}.get(text.lower(), text)
    return text


class SwitchInput(forms.CheckboxInput):
    """A checkbox styled as a switch; ``role="switch"`` tells assistive technology so."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs={"role": "switch", "class": "switch-input", **(attrs or {})})


class SchemaForm(forms.Form):
    """A form whose fields are a JSON Schema object's properties.

    ``blank_omits``: a blank optional input leaves the key out (Test: defaults apply) instead
    of sending an empty value (settings: the admin cleared it on purpose).
    """

    blank_omits = False

    def __init__(
        self,
        data: Any = None,
        *,
        schema: dict[str, Any],
        values: dict[str, Any] | None = None,
        prefix: str | None = None,
    ) -> None:
        self.specs = {spec.name: spec for spec in schema_specs(schema)}
        values = values or {}
        initial = {
            name: display_value(spec, values[name])
            for name, spec in self.specs.items()
            if name in values
        }
        super().__init__(data, initial=initial, prefix=prefix)
        for spec in self.specs.values():
            self.fields[spec.name] = self._field(spec)

    def _field(self, spec: FieldSpec) -> forms.Field:
        attrs: dict[str, Any] = {}
        common: dict[str, Any] = {"label": spec.label, "help_text": spec.help, "required": False}
        if spec.kind == "boolean":
            if self.blank_omits and not spec.required and not spec.has_default:
                # A checkbox cannot say "not given"; a tri-state select can.
                return forms.TypedChoiceField(
                    choices=[("", _("— not given —")), ("true", "true"), ("false", "false")],
                    coerce=lambda v: v == "true",
                    empty_value=None,
                    **common,
                )
            return forms.BooleanField(widget=SwitchInput(), **common)
        if spec.kind in ("integer", "number"):
            if spec.minimum is not None:
                attrs["min"] = spec.minimum
            if spec.maximum is not None:
                attrs["max"] = spec.maximum
            attrs["step"] = 1 if spec.kind == "integer" else "any"
            # Blank numbers in a settings form would silently fall back to the default.
            common["required"] = not (self.blank_omits or spec.nullable)
            cls = forms.IntegerField if spec.kind == "integer" else forms.FloatField
            return cls(widget=forms.NumberInput(attrs=attrs), **common)
        if spec.kind == "choice":
            choices = [(_choice_key(c), str(c)) for c in spec.choices]
            if spec.nullable or (self.blank_omits and not spec.required):
                choices.insert(0, ("", "— not given —" if self.blank_omits else "— none —"))
            return forms.ChoiceField(choices=choices, **common)
        if spec.kind == "lines":
            widget = forms.Textarea(attrs={"rows": 4, "class": "mono", "spellcheck": "false"})
            if "per line" not in spec.help.lower():
                common["help_text"] = " ".join(
                    filter(None, [spec.help, gettext("One item per line.")])
                )
            return forms.CharField(widget=widget, strip=False, **common)
        if spec.kind == "json":
            widget = forms.Textarea(attrs={"rows": 4, "class": "mono", "spellcheck": "false"})
            common["help_text"] = " ".join(filter(None, [spec.help, "JSON."]))
            return forms.CharField(widget=widget, **common)
        if spec.kind == "secret":
            password = forms.PasswordInput(
                render_value=False, attrs={"autocomplete": "new-password", "spellcheck": "false"}
            )
            return forms.CharField(widget=password, **common)
        # Settings are trimmed; Test arguments are sent exactly as typed.
        strip = not self.blank_omits
        if spec.multiline:
            widget = forms.Textarea(attrs={"rows": 5, "class": "mono", "spellcheck": "false"})
            return forms.CharField(widget=widget, strip=strip, **common)
        return forms.CharField(strip=strip, **common)

    # --- parsing -------------------------------------------------------------------------
    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        self.values: dict[str, Any] = {}
        for name, spec in self.specs.items():
            if name not in cleaned:  # Django already put an error on it
                continue
            raw = cleaned[name]
            if raw is None or (isinstance(raw, str) and not raw.strip()):
                if spec.kind == "secret":
                    continue  # blank keeps the stored secret
                if self.blank_omits and not spec.required:
                    continue
                if spec.nullable:
                    self.values[name] = None
                    continue
            try:
                self.values[name] = self._parse(spec, raw)
            except ValueError as exc:
                self.add_error(name, str(exc))
        return cleaned

    @property
    def rows(self) -> list[tuple[forms.BoundField, FieldSpec | None]]:
        """Each input with what the template needs beyond Django's field (its unit)."""
        return [(self[name], self.specs.get(name)) for name in self.fields]

    def _parse(self, spec: FieldSpec, raw: Any) -> Any:
        if spec.kind == "lines":
            lines = [line.strip() for line in str(raw).splitlines()]
            return [_parse_item(line, spec.item_type) for line in lines if line]
        if spec.kind == "json":
            text = str(raw).strip()
            if not text:
                return None if spec.nullable else text
            try:
                return json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"Not valid JSON: {exc.msg} (line {exc.lineno})") from None
        if spec.kind == "choice":
            for choice in spec.choices:
                if _choice_key(choice) == raw:
                    return choice
            raise ValueError(f"Choose one of: {', '.join(str(c) for c in spec.choices)}")
        return raw

    def add_validation_error(self, exc: ValidationError) -> None:
        """Put Pydantic's errors next to the inputs they are about."""
        for err in exc.errors():
            loc = err.get("loc") or ()
            message = str(err.get("msg", "invalid")).removeprefix("Value error, ")
            name = str(loc[0]) if loc else None
            if name in self.fields:
                if len(loc) > 1 and isinstance(loc[1], int):
                    message = f"Line {loc[1] + 1}: {message}"
                self.add_error(name, message)
            else:
                where = ".".join(str(p) for p in loc)
                self.add_error(None, f"{where}: {message}" if where else message)


class SettingsForm(SchemaForm):
    """A tool group's settings, validated by the group's own Pydantic model.

    Secret fields are write-only: their input starts empty, a blank one keeps what is stored,
    and a "Remove" switch (shown when something is stored) clears it (``clear_secrets``)."""

    CLEAR = "__clear"

    def __init__(
        self, data: Any = None, *, model: type[BaseModel], current: BaseModel | None = None
    ) -> None:
        self.model = model
        current = current or model()
        values = current.model_dump(mode="json")
        super().__init__(data, schema=plain_schema(model), values=values)
        for spec in [s for s in self.specs.values() if s.kind == "secret"]:
            secret = getattr(current, spec.name, None)
            stored = isinstance(secret, SecretStr) and bool(secret.get_secret_value())
            field = self.fields[spec.name]
            note = (
                "A value is stored (encrypted); leave blank to keep it."
                if stored
                else "Nothing stored yet."
            )
            field.help_text = " ".join(filter(None, [str(field.help_text), note]))
            if stored:
                remove = forms.BooleanField(
                    label=_("Remove the stored %(lower)s") % {"lower": spec.label.lower()},
                    required=False,
                    widget=SwitchInput(),
                )
                # Right below its input, not at the end of the form.
                items = list(self.fields.items())
                at = [n for n, _field in items].index(spec.name) + 1
                items.insert(at, (spec.name + self.CLEAR, remove))
                self.fields = dict(items)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        self.clear_secrets = [
            name
            for name, spec in self.specs.items()
            if spec.kind == "secret" and cleaned.get(name + self.CLEAR)
        ]
        if not self.errors:
            try:
                self.settings = self.model.model_validate(self.values)
            except ValidationError as exc:
                self.add_validation_error(exc)
        return cleaned


class ToolTestForm(SchemaForm):
    """A function's Test arguments; also accepts raw JSON for what the fields cannot say.

    It does not validate the arguments: the binding does, exactly as for the model, so a
    wrong argument becomes the same failed card the chat would show.
    """

    blank_omits = True
    RAW = "raw_json__"

    def __init__(self, data: Any = None, *, schema: dict[str, Any], example: dict[str, Any]):
        super().__init__(data, schema=schema, values=example, prefix="arg")
        self.fields[self.RAW] = forms.CharField(
            label=_("Raw JSON arguments"),
            required=False,
            widget=forms.Textarea(
                attrs={
                    "rows": 4,
                    "class": "mono",
                    "spellcheck": "false",
                    "placeholder": json.dumps(example, ensure_ascii=False),
                }
            ),
            help_text=_("When filled, these arguments are sent instead of the fields above."),
        )

    def full_clean(self) -> None:
        raw = str(self.data.get(self.add_prefix(self.RAW)) or "").strip() if self.is_bound else ""
        if not raw:
            super().full_clean()
            return
        # The fields are ignored: the raw text goes to binding as the model's would.
        self._errors = ErrorDict()
        self.cleaned_data = {self.RAW: raw}
        self.values = {}

    def arguments(self) -> str | dict[str, Any]:
        raw = self.cleaned_data.get(self.RAW)
        return raw if raw else dict(self.values)

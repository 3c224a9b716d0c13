"""The environment variables block of a stdio MCP server's forms (add and edit), kept apart
from the other source fields so either can change without the other.

Secret values are write-only: a stored one shows as "set" with an empty password input that
replaces it when filled, and a Remove switch; new variables get blank rows. Plain variables
(not secret) show their value. A variable "per person" has no value here (each person enters
their own on My connections): its row has the Remove switch only. Names and values are
checked by the service (``tools_app.services.source_env``), whose words land on the field that
caused them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from tools_app.manager.forms import SwitchInput
from tools_app.manager.source_forms import SECRET_WIDGET
from tools_app.services.source_env import (
    MAX_NAME,
    MAX_VALUE,
    EnvChange,
    EnvError,
    EnvVar,
    check_env_name,
    check_env_value,
)

NEW_ROWS = 3


@dataclass(frozen=True)
class CurrentRow:
    var: EnvVar
    value: forms.BoundField | None
    remove: forms.BoundField


@dataclass(frozen=True)
class NewRow:
    name: forms.BoundField
    value: forms.BoundField
    plain: forms.BoundField
    person: forms.BoundField


class StdioEnvForm(forms.Form):
    def __init__(
        self,
        data: Any = None,
        *,
        current: list[EnvVar] | None = None,
        new_rows: int = NEW_ROWS,
        prefix: str = "env",
    ) -> None:
        super().__init__(data, prefix=prefix)
        self.current = list(current or [])
        self.new_rows = new_rows
        self.change = EnvChange()
        for var in self.current:
            if var.per_person:
                pass
            elif var.secret:
                value: forms.Field = forms.CharField(
                    required=False,
                    strip=False,
                    max_length=MAX_VALUE,
                    label=_("New value for %(name)s") % {"name": var.name},
                    widget=forms.PasswordInput(
                        render_value=False,
                        attrs={**SECRET_WIDGET, "placeholder": gettext("blank keeps it")},
                    ),
                )
            else:
                value = forms.CharField(
                    required=False,
                    max_length=MAX_VALUE,
                    initial=var.value,
                    label=_("Value of %(name)s") % {"name": var.name},
                    widget=forms.TextInput(attrs={"class": "mono", "spellcheck": "false"}),
                )
            if not var.per_person:
                self.fields[f"value__{var.name}"] = value
            self.fields[f"remove__{var.name}"] = forms.BooleanField(
                required=False,
                widget=SwitchInput(),
                label=_("Remove %(name)s") % {"name": var.name},
            )
        for i in range(new_rows):
            self.fields[f"new_name_{i}"] = forms.CharField(
                required=False,
                max_length=MAX_NAME,
                # Not "Name …": the server's own Name field keeps its label to itself.
                label=_("New variable %(n)s") % {"n": i + 1},
                widget=forms.TextInput(
                    attrs={
                        "class": "mono",
                        "spellcheck": "false",
                        "autocomplete": "off",
                        "autocapitalize": "characters",
                        "placeholder": "API_KEY" if i == 0 else "NAME",
                    }
                ),
            )
            self.fields[f"new_value_{i}"] = forms.CharField(
                required=False,
                strip=False,
                max_length=MAX_VALUE,
                label=_("Value of new variable %(n)s") % {"n": i + 1},
                widget=forms.PasswordInput(
                    render_value=False, attrs={**SECRET_WIDGET, "placeholder": gettext("value")}
                ),
            )
            self.fields[f"new_plain_{i}"] = forms.BooleanField(
                required=False,
                widget=SwitchInput(),
                label=_("Not secret"),
            )
            self.fields[f"new_person_{i}"] = forms.BooleanField(
                required=False,
                widget=SwitchInput(),
                label=_("Per person"),
            )

    @property
    def current_rows(self) -> list[CurrentRow]:
        return [
            CurrentRow(
                var,
                None if var.per_person else self[f"value__{var.name}"],
                self[f"remove__{var.name}"],
            )
            for var in self.current
        ]

    @property
    def new(self) -> list[NewRow]:
        return [
            NewRow(
                self[f"new_name_{i}"],
                self[f"new_value_{i}"],
                self[f"new_plain_{i}"],
                self[f"new_person_{i}"],
            )
            for i in range(self.new_rows)
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        change = EnvChange()
        for var in self.current:
            if data.get(f"remove__{var.name}"):
                change.remove.add(var.name)
                continue
            if var.per_person:
                continue
            value = data.get(f"value__{var.name}") or ""
            if var.secret and value:
                self._checked(change.secret, var.name, value, f"value__{var.name}")
            elif not var.secret and value != var.value:
                self._checked(change.plain, var.name, value, f"value__{var.name}")
        for i in range(self.new_rows):
            name = (data.get(f"new_name_{i}") or "").strip()
            value = data.get(f"new_value_{i}") or ""
            plain = bool(data.get(f"new_plain_{i}"))
            person = bool(data.get(f"new_person_{i}"))
            if not name:
                if value:
                    self.add_error(f"new_name_{i}", gettext("Give the variable a name."))
                continue
            try:
                name = check_env_name(name)
            except EnvError as exc:
                self.add_error(f"new_name_{i}", str(exc))
                continue
            if person:
                if value or plain:
                    self.add_error(
                        f"new_value_{i}",
                        gettext(
                            "A per-person variable has no value here: each person enters "
                            "their own on My connections."
                        ),
                    )
                    continue
                if name in change.secret or name in change.plain or name in change.person:
                    self.add_error(
                        f"new_name_{i}", gettext("%(name)s is given twice.") % {"name": name}
                    )
                    continue
                change.remove.discard(name)
                change.person.add(name)
                continue
            if not value and not plain:
                self.add_error(f"new_value_{i}", gettext("A secret variable needs a value."))
                continue
            if name in change.secret or name in change.plain or name in change.person:
                self.add_error(
                    f"new_name_{i}", gettext("%(name)s is given twice.") % {"name": name}
                )
                continue
            change.remove.discard(name)
            self._checked(change.plain if plain else change.secret, name, value, f"new_value_{i}")
        self.change = change
        return data

    def _checked(self, into: dict[str, str], name: str, value: str, field: str) -> None:
        try:
            into[name] = check_env_value(name, value)
        except EnvError as exc:
            self.add_error(field, str(exc))

"""Forms of the People pages: they parse and validate; services decide and write."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.models import Group
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from platform_app.people.services import EVERYONE
from platform_app.people.usernames import username_look_alike, username_normal


def _groups_field() -> forms.ModelMultipleChoiceField:
    return forms.ModelMultipleChoiceField(
        queryset=Group.objects.exclude(name=EVERYONE).order_by("name"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        # Lazy, formatted when the form is shown (in the page's language).
        help_text=format_lazy(_("Everyone is in “{}” as well, without being listed."), EVERYONE),
    )


class UserCreateForm(forms.Form):
    INVITE, PASSWORD = "invite", "password"

    username = forms.CharField(
        max_length=150,
        validators=[UnicodeUsernameValidator()],
        help_text=_("Letters, digits and @ . + - _ only."),
    )
    first_name = forms.CharField(max_length=150, required=False)
    last_name = forms.CharField(max_length=150, required=False)
    email = forms.EmailField(required=False)
    how = forms.ChoiceField(
        label=_("How they sign in"),
        choices=[
            (INVITE, _("Invite: a one-time link where they choose their password")),
            (PASSWORD, _("Set a password now")),
        ],
        initial=INVITE,
        widget=forms.RadioSelect,
    )
    password1 = forms.CharField(
        label=_("Password"),
        required=False,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )
    password2 = forms.CharField(
        label=_("Password again"),
        required=False,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )
    is_staff = forms.BooleanField(
        label=_("Admin (staff): manages tools and people"), required=False
    )
    groups = _groups_field()

    def clean_username(self) -> str:
        username = username_normal(str(self.cleaned_data["username"])).strip()
        if get_user_model().objects.filter(username__iexact=username).exists():
            raise forms.ValidationError(_("That username is taken."))
        look_alike = username_look_alike(username)
        if look_alike is not None:
            raise forms.ValidationError(
                _("That username looks like the existing account %(existing)s; choose another.")
                % {"existing": look_alike}
            )
        return username

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("how") != self.PASSWORD:
            data["password1"] = data["password2"] = ""
            return data
        first, second = data.get("password1") or "", data.get("password2") or ""
        if not first:
            self.add_error("password1", "Type a password, or invite them instead.")
        elif first != second:
            self.add_error("password2", "The two passwords differ.")
        else:
            user = get_user_model()(username=data.get("username", ""), email=data.get("email", ""))
            try:
                password_validation.validate_password(first, user)
            except forms.ValidationError as exc:
                self.add_error("password1", exc)
        return data

    @property
    def password(self) -> str | None:
        return self.cleaned_data["password1"] if self.cleaned_data["how"] == self.PASSWORD else None


class UserEditForm(forms.Form):
    first_name = forms.CharField(max_length=150, required=False)
    last_name = forms.CharField(max_length=150, required=False)
    email = forms.EmailField(required=False)
    is_staff = forms.BooleanField(
        label=_("Admin (staff): manages tools and people"), required=False
    )
    groups = _groups_field()


class GroupNameForm(forms.Form):
    name = forms.CharField(max_length=150)


class MembersAddForm(forms.Form):
    users = forms.ModelMultipleChoiceField(queryset=get_user_model().objects.none())

    def __init__(self, *args: Any, candidates: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["users"]
        assert isinstance(field, forms.ModelMultipleChoiceField)
        field.queryset = candidates

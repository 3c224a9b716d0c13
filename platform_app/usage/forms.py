from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from chat_app.models import Provider
from platform_app.models import Quota


class QuotaForm(forms.Form):
    target = forms.ChoiceField(label=_("Whose"), choices=())
    metric = forms.ChoiceField(label=_("Measure"), choices=Quota.Metric.choices)
    period = forms.ChoiceField(label=_("Period"), choices=Quota.Period.choices)
    limit = forms.DecimalField(
        label=_("Limit"),
        required=False,
        min_value=0,
        max_digits=16,
        decimal_places=4,
        help_text=_("Tokens, dollars or calls. Empty, for a person: no limit for them."),
    )

    def __init__(self, *args: object, targets: list[tuple[str, str]], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["target"].choices = targets  # type: ignore[attr-defined]


class PriceForm(forms.Form):
    provider = forms.ModelChoiceField(
        label=_("Provider"),
        queryset=Provider.objects.all(),
        required=False,
        empty_label=_("any provider"),
    )
    model = forms.CharField(label=_("Model"), max_length=200)
    input_per_million = forms.DecimalField(
        label=_("Input $ / M tokens"), min_value=0, max_digits=12, decimal_places=4
    )
    output_per_million = forms.DecimalField(
        label=_("Output $ / M tokens"), min_value=0, max_digits=12, decimal_places=4
    )
    cached_per_million = forms.DecimalField(
        label=_("Cached input $ / M tokens"),
        required=False,
        min_value=0,
        max_digits=12,
        decimal_places=4,
        help_text=_("Empty: the input price."),
    )

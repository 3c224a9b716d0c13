from __future__ import annotations

from django.urls import path

from platform_app.usage import views

app_name = "usage"

urlpatterns = [
    path("", views.usage_page, name="usage"),
    path("export.csv", views.usage_export, name="export"),
    path("limits/", views.limits_page, name="limits"),
    path("limits/quotas/<int:quota_id>/delete/", views.quota_delete, name="quota-delete"),
    path("limits/prices/<int:price_id>/delete/", views.price_delete, name="price-delete"),
]

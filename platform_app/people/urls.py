"""The People pages (staff only), under /people/."""

from __future__ import annotations

from django.urls import path

from platform_app.people import policy_views, views

app_name = "people"

urlpatterns = [
    path("", views.users, name="users"),
    path("users/new/", views.user_new, name="user_new"),
    path("users/<int:user_id>/", views.user_detail, name="user"),
    path("users/<int:user_id>/active/", views.user_active, name="user_active"),
    path("users/<int:user_id>/password-link/", views.user_password_link, name="user_password_link"),
    path("groups/", views.groups, name="groups"),
    path("groups/<int:group_id>/", views.group_detail, name="group"),
    path("groups/<int:group_id>/delete/", views.group_delete, name="group_delete"),
    path("groups/<int:group_id>/members/", views.group_members_add, name="group_members_add"),
    path(
        "groups/<int:group_id>/members/<int:user_id>/remove/",
        views.group_member_remove,
        name="group_member_remove",
    ),
    path("groups/<int:group_id>/auditor/", views.group_auditor, name="group_auditor"),
    path("groups/<int:group_id>/sharing/", views.group_sharing, name="group_sharing"),
    path("groups/<int:group_id>/grants/", views.group_grants, name="group_grants"),
    path("policy/", policy_views.policy_page, name="policy"),
    path("policy/apply/", policy_views.policy_apply, name="policy_apply"),
    path("policy/shadow/", policy_views.policy_shadow, name="policy_shadow"),
    path("policy/shadow/stop/", policy_views.policy_shadow_stop, name="policy_shadow_stop"),
]

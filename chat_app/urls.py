from django.urls import path

from chat_app import views

app_name = "chat"

urlpatterns = [
    path("", views.index, name="index"),
    path("c/new/", views.conversation_new, name="new"),
    path("c/<int:conversation_id>/", views.conversation_page, name="conversation"),
    path("c/<int:conversation_id>/rename/", views.conversation_rename, name="rename"),
    path("c/<int:conversation_id>/delete/", views.conversation_delete, name="delete"),
    path("c/<int:conversation_id>/agent/", views.conversation_agent, name="agent"),
    path("c/<int:conversation_id>/reports/", views.reports_list, name="reports"),
    path("c/<int:conversation_id>/reports/<str:name>", views.report_download, name="report"),
    path("schedules/", views.schedule_list, name="schedules"),
    path("schedules/<int:schedule_id>/delete/", views.schedule_delete, name="schedule_delete"),
]

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
    path("c/<int:conversation_id>/model/", views.conversation_model, name="model"),
]

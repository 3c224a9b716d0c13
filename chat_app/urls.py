from django.urls import path

from chat_app import views, views_files

app_name = "chat"

urlpatterns = [
    path("", views.index, name="index"),
    path("c/new/", views.conversation_new, name="new"),
    path("c/<int:conversation_id>/", views.conversation_page, name="conversation"),
    path("c/<int:conversation_id>/rename/", views.conversation_rename, name="rename"),
    path("c/<int:conversation_id>/delete/", views.conversation_delete, name="delete"),
    path("c/<int:conversation_id>/agent/", views.conversation_agent, name="agent"),
    path("c/<int:conversation_id>/files/", views_files.files_panel, name="files"),
    path("c/<int:conversation_id>/files/upload/", views_files.file_upload, name="upload"),
    path("c/<int:conversation_id>/files/<path:path>", views_files.file_download, name="file"),
]

from django.urls import path

from chat_app import conversation_views as cv
from chat_app import library_views as lv
from chat_app import views, views_files

app_name = "chat"

urlpatterns = [
    path("", views.index, name="index"),
    path("c/new/", views.conversation_new, name="new"),
    path("c/<int:conversation_id>/", views.conversation_page, name="conversation"),
    path("c/<int:conversation_id>/rename/", views.conversation_rename, name="rename"),
    path("c/<int:conversation_id>/delete/", views.conversation_delete, name="delete"),
    path("c/<int:conversation_id>/agent/", views.conversation_agent, name="agent"),
    path("c/<int:conversation_id>/model/", views.conversation_model, name="model"),
    path("c/<int:conversation_id>/pin/", cv.conversation_pin, name="pin"),
    path("c/<int:conversation_id>/archive/", cv.conversation_archive, name="archive"),
    path("c/<int:conversation_id>/export.<str:fmt>", cv.export, name="export"),
    path("c/<int:conversation_id>/share/", cv.share, name="share"),
    path("c/archived/", cv.archived, name="archived"),
    path("c/api/", views.api_list, name="api_list"),
    path("c/import/", cv.import_page, name="import"),
    path("search/", cv.search, name="search"),
    path("s/<str:token>/", cv.shared, name="shared"),
    path("my/agents/", lv.my_agents, name="my-agents"),
    path("my/agents/<int:agent_id>/", lv.my_agent, name="my-agent"),
    path("my/agents/<int:agent_id>/delete/", lv.my_agent_delete, name="my-agent-delete"),
    path("my/prompts/", lv.my_prompts, name="my-prompts"),
    path("my/prompts/<int:prompt_id>/", lv.my_prompt, name="my-prompt"),
    path("my/prompts/<int:prompt_id>/delete/", lv.my_prompt_delete, name="my-prompt-delete"),
    path("c/<int:conversation_id>/files/", views_files.files_panel, name="files"),
    path("c/<int:conversation_id>/files/upload/", views_files.file_upload, name="upload"),
    path("c/<int:conversation_id>/files/<path:path>", views_files.file_download, name="file"),
]

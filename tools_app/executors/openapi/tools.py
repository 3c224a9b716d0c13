from __future__ import annotations

from tools_app.executors.openapi.settings import openapi_group
from tools_app.imported import ImportedTool, register_kind


class OpenApiTool(ImportedTool, abstract=True):
    """An operation of an imported OpenAPI document (subclassed per operation at run time)."""


register_kind("openapi", base=OpenApiTool, group=openapi_group, activity="openapi_call")

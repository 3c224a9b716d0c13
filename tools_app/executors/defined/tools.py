"""The class a defined tool is made from (one subclass per function, at run time)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ValidationError

from tools_app import selectors
from tools_app.errors import PolicyDenied
from tools_app.executors.defined.settings import DefinedSettings, defined_group
from tools_app.imported import ImportedTool, register_kind
from tools_app.registry import BaseTool, get_tool
from tools_app.runtime import BindContext


def mapped_arguments(mapping: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """The bound tool's arguments: a value written ``"{name}"`` is this call's argument
    ``name`` (left out when the call has none); any other value is a constant."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
            name = value[1:-1]
            if name in arguments:
                out[key] = arguments[name]
        else:
            out[key] = value
    return out


class DefinedTool(ImportedTool, abstract=True):
    """A tool defined from a JSON Schema (subclassed per function at run time)."""

    tool_defined: ClassVar[bool] = True

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if cls.tool_name and not (cls.spec.get("bind") or {}).get("tool"):
            cls.tool_activity = None  # no activity: latent, and the trace says so

    @classmethod
    def bound_tool(cls) -> type[BaseTool] | None:
        bind = cls.spec.get("bind") or {}
        return get_tool(bind["tool"]) if bind.get("tool") else None

    @classmethod
    def output_schema(cls) -> dict[str, Any] | None:
        found = cls.spec.get("output_schema")
        return found if isinstance(found, dict) and found else None

    def bound_call(self) -> BaseTool:
        """The bound tool's validated arguments (``PolicyDenied`` when they do not fit)."""
        target = self.bound_tool()
        if target is None:
            raise PolicyDenied(f"{self.tool_name} is bound to a tool that no longer exists")
        mapping = (self.spec.get("bind") or {}).get("arguments") or {}
        try:
            return target.model_validate(mapped_arguments(mapping, self.arguments))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise PolicyDenied(
                f"{self.tool_name} runs {target.tool_name}, whose argument "
                f"{where or '(arguments)'} is wrong: {first['msg']}"
            ) from None

    def check_policy(self, settings: DefinedSettings, ctx: BindContext) -> None:  # type: ignore[override]
        target = self.bound_tool()
        if target is None:
            if (self.spec.get("bind") or {}).get("tool"):
                raise PolicyDenied(f"{self.tool_name} is bound to a tool that no longer exists")
            return  # latent
        # Whoever calls it must be allowed the bound tool as well: a definition never widens
        # what a person may run. Then the bound tool's own policy, with its group's settings.
        from tools_app.services.grants import granted_tools, not_granted_reason

        granted = granted_tools(ctx.user_id)
        if granted is not None and target.tool_name not in granted:
            raise PolicyDenied(
                f"{self.tool_name} runs {target.tool_name}: {not_granted_reason(target.tool_name)}"
            )
        state = selectors.tool_state(target)
        if state.disabled_reason:
            raise PolicyDenied(f"{self.tool_name} runs {target.tool_name}: {state.disabled_reason}")
        self.bound_call().check_policy(state.settings, ctx)

    def sink(self, settings: DefinedSettings) -> str:  # type: ignore[override]
        target = self.bound_tool()
        if target is None:
            return ""
        try:
            call = self.bound_call()
        except PolicyDenied:
            return ""
        return call.sink(selectors.tool_state(target).settings)


register_kind("schema", base=DefinedTool, group=defined_group, activity="defined_call")

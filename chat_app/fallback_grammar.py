"""A GBNF grammar for text-fallback replies (``Provider.fallback_grammar``).

A llama.cpp server (``llama-server`` or llama-cpp-python's) takes a ``grammar`` field in a chat
completion request and holds the model to it token by token. With this grammar a reply is
plain prose without a backtick, or exactly one call in the fenced JSON format that
``chat_app.fallback.parse_tool_calls`` reads, alone or after such prose (the reply ends with
it)::

    ```json
    {"tool": "current_time", "arguments": {"timezone": "UTC"}}
    ```

The tool is one of the round's offered tools, and each argument one of that tool's properties
with a value of the type its schema gives (an ``enum`` as one of its values; anything richer as
any JSON value); the required properties come first, in the order ``required`` gives, and
must be there. Other constraints (lengths, patterns, ranges) are left to binding, which
validates the arguments as it does every call. The grammar only narrows what the model can
write; what runs is still decided by binding.

Small models that cannot keep to the format by prompting alone (SmolLM2-135M) then make calls
that parse; other servers reject or ignore the field, so it stays off unless a provider asks.
"""

from __future__ import annotations

import json
from typing import Any

from chat_app.providers.base import ToolSpec

_HEX = "[0-9a-fA-F]"
_STRING = (
    r'"\"" ( [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" '
    + f"{_HEX} {_HEX} {_HEX} {_HEX}"
    + r' ) ){0,200} "\""'
)

_COMMON = f"""\
ws ::= " "?
string ::= {_STRING}
nonempty ::= {_STRING.replace("{0,200}", "{1,200}")}
integer ::= "-"? ( "0" | [1-9] [0-9]{{0,15}} )
number ::= integer ( "." [0-9]{{1,15}} )?
boolean ::= "true" | "false"
value ::= object | array | string | number | boolean | "null"
object ::= "{{" ws ( string ws ":" ws value ( "," ws string ws ":" ws value ){{0,20}} )? ws "}}"
array ::= "[" ws ( value ( "," ws value ){{0,20}} )? ws "]"
"""

_TYPES = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean"}


def fallback_grammar(tools: list[ToolSpec]) -> str:
    """The GBNF grammar of a reply in a round that offers ``tools`` (at least one)."""
    rules = [
        # Prose, a call, or prose and then a call on a line of its own: where a model would
        # open a code block, the block it may open is a call.
        'root ::= prose | ( prose "\\n" )? call',
        # No backtick anywhere in prose: a fence can only be a call's.
        "prose ::= [^`] [^`]*",
        'call ::= "```json\\n{\\"tool\\": " ( '
        + " | ".join(f"tool{i}" for i in range(len(tools)))
        + ' ) "}\\n```"',
    ]
    for i, tool in enumerate(tools):
        rules.append(f'tool{i} ::= {_literal(json.dumps(tool.name))} ", \\"arguments\\": " args{i}')
        rules.extend(_arguments_rules(f"args{i}", tool.parameters))
    return "\n".join(rules) + "\n" + _COMMON


def _arguments_rules(name: str, schema: dict[str, Any]) -> list[str]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        return [f'{name} ::= "{{}}"' if properties == {} else f"{name} ::= object"]
    required = [k for k in schema.get("required") or [] if k in properties]
    rules: list[str] = []
    pairs: dict[str, str] = {}
    for j, (key, prop) in enumerate(properties.items()):
        pairs[key] = f"{name}-p{j}"
        rules.append(f'{pairs[key]} ::= {_literal(json.dumps(key))} ws ":" ws {_value(prop)}')
    optional = [pairs[k] for k in properties if k not in required]
    # The required properties first, in the schema's order; then any of the others.
    head = ' "," ws '.join(pairs[k] for k in required)
    if optional:
        rules.append(f"{name}-opt ::= " + " | ".join(optional))
        more = f'( "," ws {name}-opt ){{0,{len(optional)}}}'
        if head:
            body = f"{head} {more}"
        else:
            body = f'( {name}-opt ( "," ws {name}-opt ){{0,{len(optional) - 1}}} )?'
    else:
        body = head
    rules.insert(0, f'{name} ::= "{{" ws {body} ws "}}"')
    return rules


def _value(prop: Any) -> str:
    if not isinstance(prop, dict):
        return "value"
    if isinstance(prop.get("enum"), list) and prop["enum"]:
        return "( " + " | ".join(_literal(json.dumps(v)) for v in prop["enum"]) + " )"
    kind = prop.get("type")
    if isinstance(kind, list):  # ["string", "null"]
        kinds = [_TYPES.get(k, "value") if k != "null" else '"null"' for k in kind]
        return "( " + " | ".join(kinds) + " )"
    if kind == "string" and isinstance(prop.get("minLength"), int) and prop["minLength"] > 0:
        return "nonempty"
    if kind == "array":
        item = _value(prop.get("items"))
        return f'( "[" ws ( {item} ( "," ws {item} ){{0,19}} )? ws "]" )'
    return _TYPES.get(kind, "value") if isinstance(kind, str) else "value"


def _literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'

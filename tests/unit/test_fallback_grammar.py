"""The text-fallback grammar (``chat_app.fallback_grammar``): what it allows, checked by
reading the rules (the real-model tests run it through llama.cpp)."""

from __future__ import annotations

from chat_app.fallback_grammar import fallback_grammar
from chat_app.providers.base import ToolSpec

CLOCK = ToolSpec(
    name="current_time",
    description="The time.",
    parameters={
        "type": "object",
        "properties": {"timezone": {"type": "string"}},
        "required": [],
    },
)
SEARCH = ToolSpec(
    name="tool_search",
    description="Find tools.",
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "mode": {"enum": ["any", "all"]},
            "strict": {"type": ["boolean", "null"]},
            "extra": {"type": "object"},
        },
        "required": ["query"],
    },
)


def _rules(grammar: str) -> dict[str, str]:
    return dict(line.split(" ::= ", 1) for line in grammar.strip().split("\n"))


def test_a_reply_is_prose_and_or_one_call_of_an_offered_tool() -> None:
    rules = _rules(fallback_grammar([CLOCK, SEARCH]))
    assert rules["root"] == 'prose | ( prose "\\n" )? call'
    assert rules["prose"] == "[^`] [^`]*"  # prose never opens a fence
    assert rules["call"] == '"```json\\n{\\"tool\\": " ( tool0 | tool1 ) "}\\n```"'
    assert rules["tool0"] == '"\\"current_time\\"" ", \\"arguments\\": " args0'
    assert rules["tool1"].startswith('"\\"tool_search\\""')


def test_arguments_are_the_tools_properties_with_typed_values() -> None:
    rules = _rules(fallback_grammar([SEARCH]))
    # The required property first, then any of the others, each at most once.
    assert rules["args0"] == '"{" ws args0-p0 ( "," ws args0-opt ){0,4} ws "}"'
    assert rules["args0-opt"] == "args0-p1 | args0-p2 | args0-p3 | args0-p4"
    assert rules["args0-p0"] == '"\\"query\\"" ws ":" ws string'
    assert rules["args0-p1"].endswith("integer")
    assert rules["args0-p2"].endswith('( "\\"any\\"" | "\\"all\\"" )')
    assert rules["args0-p3"].endswith('( boolean | "null" )')
    assert rules["args0-p4"].endswith("value")  # anything richer: any JSON value


def test_optional_only_arguments_may_be_empty_and_arrays_are_typed() -> None:
    clock = _rules(fallback_grammar([CLOCK]))
    assert clock["args0"] == '"{" ws ( args0-opt ( "," ws args0-opt ){0,0} )? ws "}"'
    listing = ToolSpec(
        name="pick",
        description="",
        parameters={
            "properties": {
                "names": {"type": "array", "items": {"type": "string"}},
                "query": {"type": "string", "minLength": 1},
            },
            "required": ["query", "names"],
        },
    )
    rules = _rules(fallback_grammar([listing]))
    assert (
        rules["args0"] == '"{" ws args0-p1 "," ws args0-p0 ws "}"'
    )  # in the order `required` gives
    assert rules["args0-p0"].endswith('( "[" ws ( string ( "," ws string ){0,19} )? ws "]" )')
    assert rules["args0-p1"].endswith("nonempty")


def test_a_tool_without_arguments_takes_an_empty_object() -> None:
    bare = ToolSpec(name="ping", description="", parameters={"type": "object", "properties": {}})
    assert _rules(fallback_grammar([bare]))["args0"] == '"{}"'


def test_odd_names_are_escaped_as_literals() -> None:
    odd = ToolSpec(name='we"ird\\name', description="", parameters={})
    assert _rules(fallback_grammar([odd]))["tool0"].startswith('"\\"we\\\\\\"ird')

"""How an MCP tool is declared and how a call's arguments are bound and checked.

A `ToolSpec` holds a tool's name, title, hints, description, arguments (`Arg`: type, limits,
size cap, the other names accepted), its output schema and the service call behind it.

Every argument name MemPalace 3.11's schema gives a tool is in the tool's schema here too: most
are honoured; the few with no meaning here are `Arg(ignored=why)`: accepted, checked like any
other, and named in the result's `ignored_arguments` ({name: why}) whenever a call passes a
value this server does not act on. A name neither schema lists is refused.

The tables of tools live in `tools.py` (and the modules it gathers); the server (`server.py`)
builds `tools/list` and validates calls from them. No mcp import here: this is plain data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from types import NoneType, UnionType
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.mcp.options import ServeOptions
from mempalace_cli.mcp.policy import (
    MAX_BULK_DELETE,
)
from mempalace_cli.service.drawers import MAX_DRAWER_CHARS
from mempalace_cli.service.results import IgnoredArguments
from mempalace_cli.service.searching import MAX_QUERY_CHARS

if TYPE_CHECKING:
    from mempalace_cli.service import Palace

# Size caps, checked before any work (documented in docs/mcp-tools.md).
NAME_CHARS = 500  # wing, room, agent, entity, predicate, ids, dates...
PATH_CHARS = 4096  # file and folder paths
TEXT_CHARS = MAX_DRAWER_CHARS  # a drawer's text, a diary entry
QUERY_CHARS = MAX_QUERY_CHARS  # a search query

_MISSING = object()


@dataclass(frozen=True)
class Arg:
    name: str
    type: str  # JSON schema type: string, integer, number, boolean, array
    description: str
    required: bool = False
    default: Any = _MISSING
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None
    enum: tuple[str, ...] | None = None
    max_chars: int | None = None  # strings (each item, for arrays of strings)
    max_items: int | None = None
    aliases: tuple[str, ...] = ()  # other names accepted with the same meaning
    cap_hint: str = ""  # what to do when the size cap is hit
    # The aliases are MemPalace's own names: list each in the published schema too (a client
    # that validates against it may send them); a required argument is then enforced here,
    # not by the schema, since any of its names may carry it.
    publish_aliases: bool = False
    items: dict[str, Any] | None = None  # an array's item schema, when not strings
    # A MemPalace argument with no meaning here: why (reported in `ignored_arguments`)...
    ignored: str = ""
    # ...unless its value is one of these (what this server does anyway).
    honoured: tuple[Any, ...] = ()

    def schema(self) -> dict[str, Any]:
        description = self.description
        if self.ignored:
            description += f" Accepted for MemPalace compatibility; {self.ignored}."
        spec: dict[str, Any] = {"type": self.type, "description": description}
        if self.type == "array":
            spec["items"] = self.items or {
                "type": "string",
                "maxLength": self.max_chars or NAME_CHARS,
            }
            if self.max_items:
                spec["maxItems"] = self.max_items
        if self.type == "string" and self.max_chars:
            spec["maxLength"] = self.max_chars
        if self.enum:
            spec["enum"] = list(self.enum) + ([] if self.required else [None])
        for key, value in (
            ("minimum", self.minimum),
            ("maximum", self.maximum),
            ("exclusiveMinimum", self.exclusive_minimum),
        ):
            if value is not None:
                spec[key] = value
        if self.default is not _MISSING and self.default is not None:
            spec["default"] = self.default
        if not self.required or self.publish_aliases:  # null: the default (bind_arguments)
            spec["type"] = [self.type, "null"]
        return spec

    def schema_as(self, alias: str) -> dict[str, Any]:
        """The schema of `alias`, one of the published aliases."""
        spec = self.schema()
        spec["description"] = f"Same as {self.name} (MemPalace's name for it). " + (
            self.description
        )
        return spec


Call = Callable[["Palace", dict[str, Any]], dict[str, Any]]
ServeCall = Callable[["Palace", dict[str, Any], ServeOptions], dict[str, Any]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    call: Call
    output: dict[str, Any]
    args: tuple[Arg, ...] = ()
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = False
    # A call that needs what the server's owner allowed (mining roots): `serving` binds it.
    serve_call: ServeCall | None = None
    # Runs beside the server's read and write lanes, on the shared palace: the tool keeps its
    # own store and lock and is safe in any thread (the coordination log: a long event_wait
    # must hold up no read, an append must not wait for a mine).
    own_lane: bool = False

    def __post_init__(self) -> None:
        """A tool with ignored arguments says in its result which ones a call passed (with
        why): its call is wrapped once here, and its output schema lists the field."""
        if not self.ignored() or getattr(self.call, "reports_ignored", False):
            return
        object.__setattr__(self, "call", _reporting_ignored(self.call, self.ignored()))
        props = dict(self.output.get("properties", {}))
        props["ignored_arguments"] = IGNORED_OUT
        object.__setattr__(self, "output", {**self.output, "properties": props})

    def ignored(self) -> dict[str, Arg]:
        """The MemPalace arguments this tool accepts without acting on them, by name."""
        return {a.name: a for a in self.args if a.ignored}

    def serving(self, options: ServeOptions) -> ToolSpec:
        """This tool as a server started with `options` runs it."""
        if self.serve_call is None:
            return self
        serve_call = self.serve_call
        return replace(self, call=lambda p, a: serve_call(p, a, options))

    def input_schema(self) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        for a in self.args:
            properties[a.name] = a.schema()
            if a.publish_aliases:
                properties.update({alias: a.schema_as(alias) for alias in a.aliases})
        schema: dict[str, Any] = {
            "type": "object",
            "properties": properties,
            "additionalProperties": False,
        }
        required = [a.name for a in self.args if a.required and not a.publish_aliases]
        if required:
            schema["required"] = required
        return schema

    def accepted(self) -> list[str]:
        names = [a.name for a in self.args if not a.ignored]
        names += [alias for a in self.args if a.publish_aliases for alias in a.aliases]
        return names + [a.name for a in self.args if a.ignored]


def _reporting_ignored(call: Call, ignored: dict[str, Arg]) -> Call:
    def run(palace: Palace, bound: dict[str, Any]) -> dict[str, Any]:
        result = call(palace, bound)
        said = {
            name: arg.ignored
            for name, arg in ignored.items()
            if bound.get(name) is not None and bound[name] not in arg.honoured
        }
        if said and isinstance(result, dict):
            result = {**result, "ignored_arguments": {**result.get("ignored_arguments", {})}}
            result["ignored_arguments"].update(said)
        return result

    run.reports_ignored = True  # type: ignore[attr-defined]
    return run


# -- binding and checking arguments ------------------------------------------------------------
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}
_TYPE_WORDS = {
    "string": "a valid string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list of strings",
    "object": "an object of named values",
}


def bind_arguments(spec: ToolSpec, arguments: Any) -> dict[str, Any]:
    """The call's arguments under their canonical names, defaults filled in, every value
    checked against the table (type, range, size cap) before any work; null for an optional
    argument means its default, as if it were left out. Raises
    InvalidInputError naming each problem: unknown names (with the accepted ones), missing
    or invalid values. MemPalace's names with no meaning here are bound like any other (the
    call's result reports them: `ToolSpec.ignored`)."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidInputError(
            f"The arguments of {spec.name} must be an object of named values.",
            hint=f"Accepted: {', '.join(spec.accepted()) or 'none'}.",
        )
    by_name = {a.name: a for a in spec.args}
    for a in spec.args:
        for alias in a.aliases:
            by_name.setdefault(alias, a)
    problems: list[str] = []
    bound: dict[str, Any] = {}
    given_as: dict[str, str] = {}  # canonical name -> the name the caller used
    for key, value in arguments.items():
        arg = by_name.get(key)
        if arg is None:
            shown = key if len(key) <= 60 else key[:60] + "..."
            problems.append(
                f"unknown argument '{shown}' (accepted: {', '.join(spec.accepted()) or 'none'})"
            )
            continue
        if value is None and (not arg.required or arg.publish_aliases):
            continue  # null means "use the default", as if the argument were left out
        if arg.name in given_as and given_as[arg.name] != key:
            if bound.get(arg.name, _MISSING) != value:
                problems.append(
                    f"'{given_as[arg.name]}' and '{key}' mean the same thing; pass only one"
                )
            continue
        given_as[arg.name] = key
        problem = _check_value(arg, key, value)
        if problem:
            problems.append(problem)
        else:
            bound[arg.name] = value
    for arg in spec.args:
        if arg.name not in bound:
            if arg.required:
                if arg.name in given_as:  # given, and already reported as invalid
                    continue
                also = f" (or {', '.join(arg.aliases)})" if arg.aliases else ""
                problems.append(
                    f"'{arg.name}'{also} is required but missing ({arg.description.rstrip('.')})"
                )
            else:
                bound[arg.name] = None if arg.default is _MISSING else arg.default
    if problems:
        raise InvalidInputError(
            f"Invalid arguments for {spec.name}: " + "; ".join(problems) + ".",
            hint="Fix these and call again; the tool's input schema lists every argument.",
        )
    return bound


def _check_value(arg: Arg, key: str, value: Any) -> str | None:
    if value is None:
        if arg.required:
            return f"'{key}' is required but null"
        return None
    wanted = _TYPES[arg.type]
    if isinstance(value, bool) and arg.type != "boolean" or not isinstance(value, wanted):
        got = type(value).__name__
        return f"'{key}' is invalid: it should be {_TYPE_WORDS[arg.type]} (got {got})"
    if arg.type == "string":
        if arg.max_chars and len(value) > arg.max_chars:
            return (
                f"'{key}' is {len(value):,} characters; at most {arg.max_chars:,} are accepted"
                + (f". {arg.cap_hint}" if arg.cap_hint else "")
            )
        if arg.enum and value not in arg.enum:
            return f"'{key}' is invalid: use one of {', '.join(arg.enum)}"
    if arg.type == "array":
        if arg.max_items and len(value) > arg.max_items:
            return f"'{key}' holds {len(value):,} items; at most {arg.max_items:,} per call"
        if arg.items is not None and arg.items.get("type") == "object":
            if any(not isinstance(v, dict) for v in value):
                return f"'{key}' is invalid: every item should be an object of named values"
            return None  # the service checks each item's fields and names the bad one
        cap = arg.max_chars or NAME_CHARS
        if any(not isinstance(v, str) or len(v) > cap for v in value):
            return f"'{key}' is invalid: every item should be a string of at most {cap} characters"
    if arg.type in ("integer", "number"):
        low, high = arg.minimum, arg.maximum
        if low is not None and value < low or high is not None and value > high:
            return f"'{key}' is invalid: it should be {_range(arg)} (got {value})"
        if arg.exclusive_minimum is not None and value <= arg.exclusive_minimum:
            return f"'{key}' is invalid: it should be above {arg.exclusive_minimum:g} (got {value})"
    return None


def _range(arg: Arg) -> str:
    if arg.minimum is not None and arg.maximum is not None:
        return f"{arg.minimum:g} to {arg.maximum:g}"
    if arg.minimum is not None:
        return f"at least {arg.minimum:g}"
    return f"at most {arg.maximum:g}"


# -- argument and output building blocks -------------------------------------------------------
def string_arg(name: str, description: str, required: bool = False, **kw: Any) -> Arg:
    kw.setdefault("max_chars", NAME_CHARS)
    return Arg(name, "string", description, required=required, **kw)


_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


def schema_of(kind: Any) -> dict[str, Any]:
    """The JSON schema of a result type (service/results.py), in the shape `output_schema`
    writes: a TypedDict is an object listing its keys (those not `NotRequired` are
    required; extra fields allowed); `X | None` allows null; `list[X]` gives items unless X is
    Any; `dict[str, X]` gives additionalProperties unless X is Any; `Literal[...]` an enum; the
    text in `Annotated[X, "..."]` is the field's description."""
    description = None
    if get_origin(kind) in (NotRequired, Required):
        kind = get_args(kind)[0]
    if get_origin(kind) is Annotated:
        kind, *extra = get_args(kind)
        description = next((e for e in extra if isinstance(e, str)), None)
    nullable = False
    if get_origin(kind) in (Union, UnionType):
        members = [m for m in get_args(kind) if m is not NoneType]
        nullable = len(members) < len(get_args(kind))
        if len(members) != 1:
            raise TypeError(f"no JSON schema for the union {kind!r}")
        kind = members[0]
    schema = _bare_schema_of(kind)
    if nullable:
        schema["type"] = [schema["type"], "null"]
    if description is not None:
        schema["description"] = description
    return schema


def _bare_schema_of(kind: Any) -> dict[str, Any]:
    if is_typeddict(kind):
        hints = get_type_hints(kind, include_extras=True)
        required = kind.__required_keys__
        return {
            "type": "object",
            "properties": {name: schema_of(hint) for name, hint in hints.items()},
            "required": [name for name in hints if name in required],
        }
    origin, args = get_origin(kind), get_args(kind)
    if origin is Literal:
        return {"type": _JSON_TYPES[type(args[0])], "enum": list(args)}
    if origin is list:
        schema: dict[str, Any] = {"type": "array"}
        if args and args[0] is not Any:
            schema["items"] = schema_of(args[0])
        return schema
    if origin is dict:
        schema = {"type": "object"}
        if args and args[1] is not Any:
            schema["additionalProperties"] = schema_of(args[1])
        return schema
    if kind in _JSON_TYPES:
        return {"type": _JSON_TYPES[kind]}
    raise TypeError(f"no JSON schema for {kind!r}")


IGNORED_OUT = schema_of(IgnoredArguments)

WING_FILTER = (
    "Only look in this wing: a name from mempalace_status, given as filed or as it was typed "
    "when filed ('Team Notes' finds team_notes). No match gives an empty result with a hint."
)
ROOM_FILTER = "Only look in this room (same name rule as wing)."
WING_FILE = "Wing to file into: the project, person or agent this is about (e.g. 'myapp')."
ROOM_FILE = "Room inside the wing: the topic (e.g. 'decisions', 'auth'). Created if new."
DRAWER_ID = "The drawer's id, exactly as returned in a result's drawer_id field."
ENTITY = "Entity name, e.g. a person, project or tool ('Maya', 'myapp'). Matched by name."
DATE = "A date as YYYY-MM-DD (or an ISO datetime)."
SINCE = (
    "Only drawers dated on or after this day: YYYY-MM-DD, or relative to the server's clock "
    "('7d', 'yesterday', 'last week', 'last month', 'in March', '上个月'; a period counts from "
    "its first day). A drawer's date is that of what it records: a chat turn's time, a note's "
    "front matter, Date: line or dated file name, else the file's time. Drawers with no date are "
    "left out and counted in hint."
)
BEFORE = (
    "Only drawers dated strictly before this day (YYYY-MM-DD or relative, as since; 'last "
    "month' means before its first day). Must be after since."
)
SPLIT_HINT = "Split it into several drawers, or save it as a file and mine the folder."
# Arguments several tools take alike.
PLACE_FILTERS = (
    string_arg("wing", WING_FILTER),
    string_arg("room", ROOM_FILTER),
    string_arg("since", SINCE),
    string_arg("before", BEFORE),
)
DRAWER_ID_ARG = string_arg("drawer_id", DRAWER_ID, required=True)

BULK_DRY_RUN = Arg(
    "dry_run",
    "boolean",
    "true (the default): list what would go and remove nothing. false: remove.",
    default=True,
)
BULK_RULES = (
    "A dry run unless you pass dry_run: false; the result counts the drawers and names their "
    f"sources. At most {MAX_BULK_DELETE:,} drawers per call: a larger call is refused (narrow "
    "it, or the owner runs `mempalace forget` in a terminal)."
)

"""The tool-call gate: what an agent or a user simulator sends is data, never code.

ToolSandbox runs a tool call as Python source in an interactive console, in this process.
So nothing a model (or a script) produced may be pasted into that source. A call's name is
resolved by exact lookup among the tools the scenario offers that role (agent-facing names,
after scrambling); its arguments are decoded as JSON and rendered back as a Python literal
of JSON values; its id becomes a plain identifier. The source is then one of two fixed
shapes built only from those checked parts:

* a call:      ``{id}_parameters = {literal}`` / ``{id}_response = {tool}(**{id}_parameters)`` /
  ``print(repr({id}_response))`` (ToolSandbox's own form, so its converters read it back);
* a rejection: the same first line, ``{id}_response = LookupError('...')`` or ``TypeError('...')``,
  ``raise {id}_response``: the role sees a tool error it can act on, nothing else runs.

A rejected call keeps the offered tools its text names (``suspects``), so that minefield
interception can still stop an attempt such as ``(send_message)`` or a fullwidth spelling,
although the call itself would never execute.
"""

from __future__ import annotations

import ast
import html
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dynsteer_hook.model.json_text import lone_surrogate, repair_text, value_surrogate
from dynsteer_hook.model.spelling import fold, readings
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports

from tool_sandbox.common.execution_context import ExecutionContext, RoleType, get_current_context

MAX_DEPTH = 32
"""Nesting depth allowed in arguments (deeper payloads are rejected, never recursed into)."""
MAX_ARGUMENT_CHARS = 200_000
"""Length of an argument payload beyond which the call is rejected unread."""
_NAME_CLIP = 80
_OFFERED_SHOWN = 40

_SAFE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_CALL = re.compile(
    r"(?P<id>[A-Za-z_][A-Za-z0-9_]{0,63})_parameters = (?P<args>[^\n]*)\n"
    r"(?P=id)_response = (?P<name>[A-Za-z_][A-Za-z0-9_]*)\(\*\*(?P=id)_parameters\)\n"
    r"print\(repr\((?P=id)_response\)\)"
)
_REJECTION = re.compile(
    r"(?P<id>[A-Za-z_][A-Za-z0-9_]{0,63})_parameters = (?P<args>[^\n]*)\n"
    r"(?P=id)_response = (?P<kind>LookupError|TypeError)\((?P<message>'[^\n]*'|\"[^\n]*\")\)\n"
    r"raise (?P=id)_response"
)


@dataclass(frozen=True, slots=True)
class Arguments:
    """A decoded argument payload.

    Attributes:
        value: The JSON object, or ``None`` when the payload is not one.
        raw: The payload text when it is not a JSON object.
        error: Why the payload cannot be passed to a tool, or ``None``.
        screen: What minefield screening should read: ``value``, or the object inside a
            payload that encodes one as a JSON string.
    """

    value: dict[str, Any] | None
    raw: str | None = None
    error: str | None = None
    screen: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class GatedCall:
    """One call after the gate.

    Attributes:
        call_id: A plain identifier (the console names variables after it).
        name: The name as sent, clipped.
        tool: The offered agent-facing tool it resolved to (``None`` when rejected).
        execution_name: The name the console knows the tool by (differs when names are scrambled).
        arguments: The decoded arguments (see ``Arguments``).
        rejected: Why the call does not reach its tool, or ``None``.
        suspects: For a rejected call, the offered agent-facing tools its text names.
        code: The console source for the call: a call or a rejection, never the sender's text.
    """

    call_id: str
    name: str
    tool: str | None
    execution_name: str | None
    arguments: Arguments
    rejected: str | None
    suspects: tuple[str, ...]
    code: str


def _json_shaped(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is made of JSON values only (finite numbers, string keys), within the depth limit."""
    if depth > MAX_DEPTH:
        return False
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_json_shaped(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_shaped(v, depth + 1) for k, v in value.items())
    return False


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _loads(text: str) -> Any:
    return json.loads(text, parse_constant=_reject_constant)


_QUOTE_ENTITY = re.compile(r"&(quot|apos|#0*3[49]|#x0*2[27]);", re.IGNORECASE)


def _html_escaped(text: str) -> bool:
    """Whether JSON text came back HTML-escaped: a quote written as an entity (some local servers do this)."""
    return _QUOTE_ENTITY.search(text) is not None


def decode_arguments(payload: Mapping[str, Any] | str | None) -> Arguments:
    """Decode a call's arguments: a mapping of JSON values, or JSON text holding an object.

    Text whose quotes are HTML entities (``&quot;``, ``&#39;``) is refused: the values the
    model meant are not the values it sent, and passing them on would put entity text into
    the world state.
    """
    if payload is None:
        return Arguments({})
    if isinstance(payload, Mapping):
        value = dict(payload)
        if not _json_shaped(value):
            return Arguments(None, raw=repair_text(_clip(repr(value), 2000))[0], error="the arguments hold values that are not JSON")
        if value_surrogate(value):
            return _surrogate(json.dumps(value))
        if len(literal(value)) > MAX_ARGUMENT_CHARS:
            return _too_long(value)
        return Arguments(value, screen=value)
    text = str(payload)
    if len(text) > MAX_ARGUMENT_CHARS:
        try:
            big = _loads(text)
        except (ValueError, RecursionError):
            big = None
        return _too_long(big if isinstance(big, dict) and _json_shaped(big) else None, text)
    if lone_surrogate(text) is not None:
        return _surrogate(text)
    if not text.strip():
        return Arguments({})
    if _html_escaped(text):
        unescaped = html.unescape(text)
        try:
            screened = _loads(unescaped)
        except (ValueError, RecursionError):
            screened = None
        screen = screened if isinstance(screened, dict) and _json_shaped(screened) else None
        return Arguments(None, raw=text, error="the arguments are HTML-escaped (quotes sent as &quot; or &#39;); send plain JSON",
                         screen=screen)
    try:
        value = _loads(text)
    except (ValueError, RecursionError):
        return Arguments(None, raw=text, error="the arguments are not valid JSON")
    if value_surrogate(value):
        return _surrogate(text)
    if isinstance(value, dict) and _json_shaped(value):
        return Arguments(value, screen=value)
    inner: dict[str, Any] | None = None
    if isinstance(value, str):
        try:
            decoded = _loads(value)
        except (ValueError, RecursionError):
            decoded = None
        inner = decoded if isinstance(decoded, dict) and _json_shaped(decoded) else None
    if inner is not None:
        return Arguments(None, raw=text, error="the arguments are a JSON string holding an object; send the object itself", screen=inner)
    if isinstance(value, dict):
        return Arguments(None, raw=text, error=f"the arguments are nested deeper than {MAX_DEPTH} levels or hold values that are not JSON")
    return Arguments(None, raw=text, error=f"the arguments must be a JSON object, not {type(value).__name__}")


def _surrogate(text: str) -> Arguments:
    return Arguments(None, raw=repair_text(_clip(text, 2000))[0],
                     error="the arguments hold a lone UTF-16 surrogate (such as \\ud800), text no encoder accepts; send valid Unicode")


def _screen_copy(value: Any, depth: int = 0) -> Any:
    """A small copy of a JSON value for minefield screening: long strings, lists and objects clipped."""
    if isinstance(value, str):
        return value[:1000]
    if isinstance(value, list):
        return [_screen_copy(v, depth + 1) for v in value[:100]] if depth < MAX_DEPTH else []
    if isinstance(value, dict):
        return {k[:200]: _screen_copy(v, depth + 1) for k, v in list(value.items())[:100]} if depth < MAX_DEPTH else {}
    return value


def _too_long(value: dict[str, Any] | None, text: str | None = None) -> Arguments:
    """Arguments refused for their length; the raw text kept is a clipped copy of the object (when there is one),
    so that minefield screening can still read the names and short values the call sent."""
    raw = json.dumps(_screen_copy(value), ensure_ascii=False) if value is not None else _clip(text or "", 2000)
    return Arguments(None, raw=raw, error=f"the arguments are longer than {MAX_ARGUMENT_CHARS} characters")


def literal(value: dict[str, Any]) -> str:
    """The Python literal of a JSON-shaped object (``ast.literal_eval`` reads it back)."""
    return repr(value)


def render_call(call_id: str, execution_name: str, arguments: dict[str, Any]) -> str:
    """Console source of an accepted call, in ToolSandbox's own three-line form."""
    return (
        f"{call_id}_parameters = {literal(arguments)}\n"
        f"{call_id}_response = {execution_name}(**{call_id}_parameters)\n"
        f"print(repr({call_id}_response))"
    )


def render_rejection(call_id: str, kind: str, message: str, arguments: dict[str, Any] | str | None) -> str:
    """Console source that only raises ``kind(message)``: the role sees its error, nothing else runs.

    The first line keeps what was sent (the object, or the raw text as a string literal), so
    the role's history shows its own call when ToolSandbox rebuilds the conversation.
    """
    kept = literal(arguments) if isinstance(arguments, dict) else repr(arguments if arguments is not None else "")
    return (
        f"{call_id}_parameters = {kept}\n"
        f"{call_id}_response = {kind}({message!a})\n"
        f"raise {call_id}_response"
    )


def safe_call_id(raw: str | None, fallback: str) -> str:
    """``raw`` when it is a plain ASCII identifier, else ``fallback`` (itself one)."""
    if raw and _SAFE_ID.fullmatch(raw) and raw.isascii():
        return raw
    return fallback


def _clip(text: str, limit: int = _NAME_CLIP) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def suspects(name: str, offered: Mapping[str, str]) -> tuple[str, ...]:
    """Offered agent-facing tools whose agent- or execution-facing name ``name`` spells out, in any case,
    width, script of look-alike letters, wrapper, separator or direction, after any prefix (over-approximated on
    purpose: this only feeds minefield screening; see ``model.spelling``)."""
    forms = [f for f in readings(name) if f]
    if not forms:
        return ()
    found = [a for a, e in offered.items() if any(((fa := fold(a)) and fa in f) or ((fe := fold(e)) and fe in f) for f in forms)]
    return tuple(sorted(found))


def _unknown_tool(name: str, offered: Mapping[str, str]) -> str:
    names = sorted(offered)
    shown = ", ".join(names[:_OFFERED_SHOWN]) + (f", ... ({len(names)} in all)" if len(names) > _OFFERED_SHOWN else "")
    return f"unknown tool {_clip(name)!r}; offered: {shown or 'none'}"


def gate(call_id: str, name: str, payload: Mapping[str, Any] | str | None, offered: Mapping[str, str]) -> GatedCall:
    """Resolve and check one call.

    Args:
        call_id: A plain identifier for the call (see ``safe_call_id``).
        name: The tool name as the role sent it.
        payload: The arguments as sent: a mapping, JSON text, or ``None`` for none.
        offered: The role's tools, agent-facing name -> execution-facing name.
    """
    if not _SAFE_ID.fullmatch(call_id):
        raise ValueError(f"call id {call_id!r} is not a plain identifier")
    args = decode_arguments(payload)
    shown = repair_text(_clip(name))[0]
    execution = offered.get(name)
    if execution is None or not _SAFE_ID.fullmatch(execution):
        message = _unknown_tool(name, offered)
        code = render_rejection(call_id, "LookupError", message, _sent(args))
        return GatedCall(call_id, shown, None, None, args, message, suspects(name, offered), code)
    if args.error is not None or args.value is None:
        message = f"{args.error or 'the arguments are not a JSON object'} (tool {name!r})"
        code = render_rejection(call_id, "TypeError", message, _sent(args))
        return GatedCall(call_id, shown, name, execution, args, message, (name,), code)
    return GatedCall(call_id, shown, name, execution, args, None, (), render_call(call_id, execution, args.value))


def _sent(args: Arguments) -> dict[str, Any] | str | None:
    return args.value if args.value is not None else args.raw


def _literal_value(text: str) -> dict[str, Any] | str | None:
    """A dict of JSON values or a string, read from a Python literal; ``None`` for anything else."""
    if len(text) > 4 * MAX_ARGUMENT_CHARS:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if isinstance(value, str) or (isinstance(value, dict) and _json_shaped(value)):
        return value
    return None


def _literal_dict(text: str) -> dict[str, Any] | None:
    if len(text) > MAX_ARGUMENT_CHARS + 1000:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) and _json_shaped(value) else None


def inspect_code(
    code: str, agent_facing_name: str | None, call_id: str | None, offered: Mapping[str, str], fallback_id: str
) -> GatedCall:
    """The gate's verdict on console source some role wrote (any role, ours or ToolSandbox's).

    Source that is exactly an accepted call of an offered tool, or exactly one of the gate's
    rejections, is kept; anything else becomes a rejection, so it never runs.

    Args:
        code: The row's content.
        agent_facing_name: The row's ``openai_function_name`` (agent rows carry it; user rows do not).
        call_id: The row's ``openai_tool_call_id``.
        offered: The role's tools, agent-facing name -> execution-facing name.
        fallback_id: An identifier to use when the row's own id is not one.
    """
    m = _CALL.fullmatch(code or "")
    if m is not None:
        args = _literal_dict(m.group("args"))
        # Without a separate agent-facing name (user rows), the name in the source must itself be
        # an offered name that runs as written: a real name behind a scrambled one never passes.
        name = agent_facing_name if agent_facing_name is not None else m.group("name")
        ident = m.group("id")
        if args is not None and (call_id is None or call_id == ident) and offered.get(name) == m.group("name"):
            verdict = gate(ident, name, args, offered)
            if verdict.code == code:
                return verdict
    r = _REJECTION.fullmatch(code or "")
    if r is not None and (call_id is None or call_id == r.group("id")):
        message = _literal_str(r.group("message"))
        sent = _literal_value(r.group("args"))
        if message is not None and sent is not None:
            ident = r.group("id")
            name = agent_facing_name or "?"
            if render_rejection(ident, r.group("kind"), message, sent) == code:
                tool = name if name in offered else None
                sus = (name,) if tool else suspects(name, offered)
                return GatedCall(ident, _clip(name), tool, offered.get(name), decode_arguments(sent), message, sus, code)
    # Not a form the gate writes: whatever it is, it must not run.
    ident = safe_call_id(call_id, fallback_id)
    name = agent_facing_name if agent_facing_name is not None else (m.group("name") if m is not None else _clip(code or "", 60))
    verdict = gate(ident, name, _literal_dict(m.group("args")) if m is not None else None, offered)
    message = f"the call's source was not a plain call of an offered tool ({_clip(name)!r}); it was not run"
    if m is not None and len(m.group("args")) > MAX_ARGUMENT_CHARS:
        verdict = gate(ident, name, m.group("args")[: MAX_ARGUMENT_CHARS + 1], offered)
        message = f"the arguments are longer than {MAX_ARGUMENT_CHARS} characters (tool {_clip(name)!r}); it was not run"
    named = (verdict.tool,) if verdict.tool else ()
    return GatedCall(
        ident, verdict.name, None, None, verdict.arguments, message, verdict.suspects or named or suspects(code or "", offered),
        render_rejection(ident, "LookupError", message, _sent(verdict.arguments)),
    )


def _literal_str(text: str) -> str | None:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def offered_tools(role_type: RoleType, context: ExecutionContext | None = None) -> dict[str, str]:
    """The tools a scenario offers a role: agent-facing name -> execution-facing name.

    Exactly what ToolSandbox shows the role (its allow and deny lists, tool visibility, and
    scrambled names for the agent), so a call can only reach a tool the role was offered.

    Args:
        role_type: The role.
        context: The execution context (default: the current one).
    """
    role = RoleType(role_type)
    tools = (context or get_current_context()).get_available_tools(scrambling_allowed=role == RoleType.AGENT)
    return {
        name: str(getattr(tool, "__name__", name))
        for name, tool in tools.items()
        if role in getattr(tool, "visible_to", (RoleType.AGENT,))
    }

"""What an MCP server offers besides tools, as tools: its resources and its prompts.

`mcp_tools(..., resources=True, prompts=True)` adds these to the server's own tools. Each
answers with text the model reads; whatever the server does wrong comes back as an error
result naming the server.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from raf.errors import ToolError
from raf.tools.tool import Tool

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult, ContentBlock, GetPromptResult, ReadResourceResult

MAX_LISTING_PAGES = 100
"""Pages of a listing read at most: a server whose listing never ends cannot hang a call."""
MAX_URI_CHARS = 2_000
"""The longest resource URI the model may ask for."""

_T = TypeVar("_T")


class ServerCall:
    """How the context tools reach one server: its client, name for messages, and bounds."""

    __slots__ = ("client", "label", "max_output_chars", "timeout")

    def __init__(self, client: Client, label: str, *, timeout: float, max_output_chars: int):
        self.client = client
        self.label = label
        self.timeout = timeout
        self.max_output_chars = max_output_chars

    async def __call__(self, what: str, request: Callable[[], Awaitable[_T]]) -> _T:
        """Run `request` under the timeout; a failure is a `ToolError` for the model."""
        try:
            with anyio.fail_after(self.timeout):
                return await request()
        except anyio.get_cancelled_exc_class():
            raise
        except TimeoutError:
            raise ToolError(
                f"MCP server {self.label!r} did not {what} within {self.timeout:g} s; try again "
                "later, or another way"
            ) from None
        except Exception as exc:
            raise ToolError(f"MCP server {self.label!r} could not {what}: {describe(exc)}") from exc


def resource_tools(call: ServerCall, prefix: str) -> list[Tool]:
    """`list_resources` and `read_resource` for the server `call` reaches."""
    client = call.client

    async def list_resources() -> str:
        """List the resources (documents, data) the server offers, by URI, and the URI
        templates it can fill in."""
        lines: list[str] = []
        cursor: str | None = None
        for _ in range(MAX_LISTING_PAGES):
            page = await call("list its resources", partial(client.list_resources, cursor=cursor))
            for item in page.resources:
                lines.append(_entry(item.uri, item.name, item.mime_type, item.description))
            cursor = page.next_cursor
            if cursor is None:
                break
        templates = await call("list its resource templates", client.list_resource_templates)
        for template in templates.resource_templates:
            lines.append(
                _entry(
                    template.uri_template,
                    template.name,
                    template.mime_type,
                    template.description,
                    kind="template",
                )
            )
        return "\n".join(lines) or "(no resources)"

    async def read_resource(uri: str) -> str:
        """Read one resource of the server.

        Args:
            uri: the resource's URI, as `list_resources` gives it (or a template filled in).
        """
        if len(uri) > MAX_URI_CHARS:
            raise ToolError(f"a resource URI is at most {MAX_URI_CHARS:,} characters")
        result: ReadResourceResult = await call(
            f"read {uri[:200]!r}", partial(client.read_resource, uri)
        )
        return _resource_text(result)

    return [
        Tool(
            list_resources,
            name=f"{prefix}list_resources"[:64],
            max_output_chars=call.max_output_chars,
        ),
        Tool(
            read_resource,
            name=f"{prefix}read_resource"[:64],
            max_output_chars=call.max_output_chars,
        ),
    ]


def prompt_tools(call: ServerCall, prefix: str) -> list[Tool]:
    """`list_prompts` and `get_prompt` for the server `call` reaches."""
    client = call.client

    async def list_prompts() -> str:
        """List the prompts (ready-made instructions) the server offers, with their
        arguments."""
        lines: list[str] = []
        cursor: str | None = None
        for _ in range(MAX_LISTING_PAGES):
            page = await call("list its prompts", partial(client.list_prompts, cursor=cursor))
            for prompt in page.prompts:
                arguments = ", ".join(
                    a.name + ("" if a.required else "?") for a in prompt.arguments or []
                )
                line = f"{prompt.name}({arguments})"
                if prompt.description:
                    line += f": {prompt.description}"
                lines.append(line)
            cursor = page.next_cursor
            if cursor is None:
                break
        return "\n".join(lines) or "(no prompts)"

    async def get_prompt(name: str, arguments: dict[str, str] | None = None) -> str:
        """Get one of the server's prompts, filled in with `arguments`.

        Args:
            name: the prompt's name, as `list_prompts` gives it.
            arguments: the prompt's arguments by name, all strings (names marked `?` may be
                left out).
        """
        result: GetPromptResult = await call(
            f"give the prompt {name[:200]!r}", partial(client.get_prompt, name, arguments or {})
        )
        return _prompt_text(result)

    return [
        Tool(
            list_prompts, name=f"{prefix}list_prompts"[:64], max_output_chars=call.max_output_chars
        ),
        Tool(get_prompt, name=f"{prefix}get_prompt"[:64], max_output_chars=call.max_output_chars),
    ]


def result_text(result: CallToolResult) -> str:
    """A tool result as text: its content blocks, else its structured content as JSON."""
    parts = [content_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, default=str))
    return "\n".join(parts)


def content_text(block: ContentBlock) -> str:
    """One content block as text; images, audio and binary resources are named, not shown."""
    kind = block.type
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        mime = getattr(block, "mime_type", "?")
        return f"[{kind} content of type {mime}, not shown]"
    if kind == "resource_link":
        return f"[resource {getattr(block, 'uri', '?')}]"
    return _contents_text(getattr(block, "resource", None))


def describe(exc: Exception) -> str:
    """An exception as `Type: message`, for error results and logs."""
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"


def _resource_text(result: ReadResourceResult) -> str:
    return "\n".join(_contents_text(item) for item in result.contents) or "(empty)"


def _prompt_text(result: GetPromptResult) -> str:
    lines = [f"[{result.description}]"] if result.description else []
    lines.extend(f"{m.role}: {content_text(m.content)}" for m in result.messages)
    return "\n".join(lines)


def _contents_text(contents: Any) -> str:
    text = getattr(contents, "text", None)
    if isinstance(text, str):
        return text
    mime = getattr(contents, "mime_type", None) or "unknown type"
    return f"[resource {getattr(contents, 'uri', '?')}, binary ({mime}), not shown]"


def _entry(
    uri: str, name: str, mime: str | None, description: str | None, *, kind: str = ""
) -> str:
    line = f"{uri} ({kind + ', ' if kind else ''}{name}{', ' + mime if mime else ''})"
    return f"{line}: {description}" if description else line

"""`create_command_role`: a role played by a command-line coding agent run in the workspace.

The command (`claude -p`, `codex exec`, `aider --message`, `gemini -p`, or any program) gets
the role's prompt on stdin or as its last argument, runs in the workspace folder under the
same reaper as `shell_exec` (bounded in time and output; it and everything it started are
killed when it times out or the run is cancelled), and `parse_result(stdout, stderr,
exit_code)` turns what it printed into the role's `RoleResult`.

Example:
    >>> import anyio, sys, tempfile
    >>> from pydantic import BaseModel
    >>> from raf.adapters import RoleResult, ThreadContext
    >>> class Done(BaseModel):
    ...     said: str
    >>> echo = create_command_role(
    ...     [sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"],
    ...     lambda prompt, thread: prompt,
    ...     lambda out, err, code: RoleResult(content={"said": out.strip()}, meta={"ok": code == 0}),
    ...     workspace=tempfile.gettempdir(),
    ... )
    >>> anyio.run(echo("fix it", Done), ThreadContext(thread_id="t"))
    RoleResult(content={'said': 'FIX IT'}, meta={'ok': True})
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel

from raf.adapters.thread import ResultAdapterFn, RoleFn, RoleResult, ThreadContext, role_output
from raf.errors import ToolError
from raf.tools.shell import command_env, run_command
from raf.tools.workspace import Workspace

__all__ = ["DEFAULT_COMMAND_TIMEOUT", "PROMPT", "create_command_role"]

M = TypeVar("M", bound=BaseModel)

DEFAULT_COMMAND_TIMEOUT = 900.0
"""Seconds a command role's program may run before it and all it started are killed."""
DEFAULT_COMMAND_OUTPUT = 1_000_000
"""Bytes of stdout (and of stderr) `parse_result` sees; the rest is counted, not kept."""
PROMPT = "{prompt}"
"""An argument of `argv` that is replaced by the prompt (with `prompt_via="argument"`)."""

# Feeds a file to the program as stdin: the reaper gives its command none of its own.
_FROM_FILE = 'file=$1; shift; exec "$@" < "$file"'


def create_command_role(
    argv: Sequence[str],
    build_prompt: Callable[[str, ThreadContext], str],
    parse_result: Callable[[str, str, int], RoleResult | BaseModel],
    *,
    workspace: Workspace | str | os.PathLike[str],
    prompt_via: Literal["stdin", "argument"] = "stdin",
    timeout: float = DEFAULT_COMMAND_TIMEOUT,
    max_output: int = DEFAULT_COMMAND_OUTPUT,
    env: Mapping[str, str] | None = None,
) -> ResultAdapterFn:
    """An adapter whose roles run `argv` in the workspace and parse what it printed.

    Args:
        argv: the program and its arguments (no shell), say `["claude", "-p"]`.
        build_prompt: `(role prompt, thread) -> text` the program gets.
        parse_result: `(stdout, stderr, exit_code) -> RoleResult` (or a schema instance);
            a non-zero exit code is for it to judge. Its content must validate as the
            role's schema.
        workspace: the folder the program runs in (a `Workspace`, or a path).
        prompt_via: `"stdin"`, or `"argument"`: in place of an argument that is exactly
            `"{prompt}"`, else as the last argument.
        timeout: seconds before the program and everything it started are killed (the role
            then fails with `ToolError`).
        max_output: bytes of stdout (and of stderr) kept for `parse_result`.
        env: variables the program gets on top of the allow-listed few of this process
            (PATH, HOME, LANG...): pass API keys it needs here, nothing leaks otherwise.

    Raises:
        ValueError: an empty `argv`, an unknown `prompt_via`, or a bound below 1.
    """
    command = [str(arg) for arg in argv]
    if not command:
        raise ValueError("create_command_role: argv is empty; give the program and its args")
    if prompt_via not in ("stdin", "argument"):
        raise ValueError(f'prompt_via must be "stdin" or "argument", not {prompt_via!r}')
    if timeout <= 0 or max_output < 1:
        raise ValueError("create_command_role: timeout and max_output must be positive")
    folder = workspace.root if isinstance(workspace, Workspace) else Path(workspace).resolve()
    environment = command_env(env)
    shown = shlex.join(command)

    def adapter(prompt: str, schema: type[M], /) -> RoleFn[M | RoleResult]:
        async def role(thread: ThreadContext) -> M | RoleResult:
            program = command[0]
            found = (
                os.access(folder / program, os.X_OK)
                if "/" in program
                else shutil.which(program, path=environment.get("PATH"))
            )
            if not found:
                raise ToolError(
                    f"command role {shown!r}: the program {program!r} is not installed (not "
                    f"found on PATH {environment.get('PATH', '')!r}); install it, or give its "
                    "full path in argv"
                )
            text = build_prompt(prompt, thread)
            if prompt_via == "argument":
                with_prompt = [text if arg == PROMPT else arg for arg in command]
                if with_prompt == command:
                    with_prompt.append(text)
                result = await run_command(
                    with_prompt, cwd=folder, timeout=timeout, max_output=max_output, env=environment
                )
            else:
                with tempfile.TemporaryDirectory(prefix="raf-prompt-") as private:
                    stdin = Path(private) / "prompt"
                    stdin.write_text(text, encoding="utf-8")
                    feeding = ["/bin/sh", "-c", _FROM_FILE, "sh", str(stdin), *command]
                    result = await run_command(
                        feeding, cwd=folder, timeout=timeout, max_output=max_output, env=environment
                    )
            if result.timed_out or result.exit_code is None:
                raise ToolError(
                    f"command role {shown!r} ran past its timeout of {timeout:g} s in "
                    f"{str(folder)!r} and was killed with everything it started; give it a "
                    "larger timeout or a smaller task"
                )
            return role_output(parse_result(result.stdout, result.stderr, result.exit_code), schema)

        return role

    return adapter

"""Every example runs the obvious ways, offline on the scripted model and against an endpoint.

Each file of `examples/` runs as a script (`python examples/NAME.py`, from any folder) and as a
module (`python -m examples.NAME`, from the checkout); with `OPENAI_BASE_URL` set it talks to
that OpenAI-compatible endpoint (here a `ScriptedOpenAIServer`, through the real `openai` client).
The runs are processes forked from one that imported raf and the libraries first
(`tests.forkserver`: ~0.4 CPU-s a run otherwise, ~1 s against an endpoint); one example also
starts in a fresh interpreter.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from raf.messages import ChatMessage
from raf.providers.openai import LOCAL_API_KEY
from raf.testing import Turn, text
from tests.forkserver import ForkServers, script
from tests.forkserver import command as forked_module
from tests.helpers import endpoint_in_thread

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))

EXPECTED = {
    "sequential.py": "copy/editor",
    "review_panel.py": "verdicts: {'style'",
    "coding_roles.py": "coding.__start__     sha256:",
    "nested.py": "analysis/length/counter",
    "registry.py": "['newsroom/writing/polish']",
    "handoff.py": "turn 2 answered by desk/",
    "group_chat.py": "chat ended after",
    "magentic.py": "team errands: researcher, writer",
    "vote.py": "winner: ",
    "durable_run.py": "recorded steps: raf.model:planner#0",
}
"""A line each example prints when it ran through, offline and against an endpoint alike."""

ANSWERS = {
    "sequential.py": "Edited: Fresh bread, every morning, for everyone.",
    "review_panel.py": (
        "verdicts: {'style': 'approve: clear and short', 'tone': 'approve: friendly tone', "
        "'facts': 'revise: says nothing about price'}"
    ),
    "coding_roles.py": (
        "  coder: Change(summary='fixed add() in calc.py; it prints 5', files=['calc.py'])\n",
        "calc.py: return a + b\n\nevent log of topic calc-task\n",
        "coding.coder         sha256:",
        ' bytes  {"exit_code": 0}\n',
        '{"approved": true, "notes": "add() is right and prints 5"}\n',
    ),
    "nested.py": "second turn: ['Short enough for a tweet.', 'Audience: families.']",
    "registry.py": "['newsroom/writing/polish']\npolished\n",
    "handoff.py": (
        "[desk/sales] The Pro plan is $9 a month; I have upgraded you.\n"
        "  step router\nturn 2 answered by desk/sales\n"
    ),
    "group_chat.py": "  [room/critic] Tight and vivid. APPROVED\nchat ended after 4 rounds\n",
    "magentic.py": "answer: Note: open 7:00-18:00.\nfollow-up: Note: open 9:00-20:00.\n",
    "vote.py": "winner: publish, tally: {'publish': 2.0, 'revise': 1.0}\n",
    "durable_run.py": "raf.tool:planner#3:book_table.started, raf.tool:planner#3:book_table",
}
"""What each example answers on its scripted model: the end of the run, not its first line."""


def printed(stdout: str) -> str:
    """`stdout` with the text deltas streamed for one path joined into the answer they make."""
    lines: list[str] = []
    for line in stdout.splitlines():
        if lines and line.startswith("[") and lines[-1].split("] ", 1)[0] == line.split("] ")[0]:
            lines[-1] += line.split("] ", 1)[1]
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def offline_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAF_MODEL"))}


PRELOAD = [
    "raf",
    "raf.builders.roles.builder",
    "raf.durable",
    "raf.providers.openai",
    "raf.react.agent",
    "raf.stores.sqlite",
    "raf.testing",
    "anyio._backends._asyncio",
    "dbos",
    "httpcore2",
    "networkx",
]
"""What the examples import, made once in the server their runs are forked from (none of
`examples/` itself)."""


@pytest.fixture(scope="module")
def forked(forkservers: ForkServers) -> str:
    return forkservers.get(*PRELOAD)


def command(server: str, name: str, how: str) -> list[str]:
    if how == "script":
        return script(server, EXAMPLES / name)
    return forked_module(server, f"examples.{name.removesuffix('.py')}")


@pytest.mark.parametrize("how", ["script", "module"])
@pytest.mark.parametrize("name", SCRIPTS)
def test_example_runs_offline(name: str, how: str, forked: str, tmp_path: Path) -> None:
    # A script runs from anywhere; a module from the checkout.
    done = subprocess.run(
        command(forked, name, how),
        cwd=tmp_path if how == "script" else ROOT,
        capture_output=True,
        text=True,
        env=offline_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert EXPECTED[name] in done.stdout
    answer = ANSWERS.get(name, ())
    for part in (answer,) if isinstance(answer, str) else answer:
        assert part in printed(done.stdout)


def answer_briefly(messages: list[ChatMessage]) -> Turn:
    return text("ok")


@pytest.mark.parametrize("name", SCRIPTS)
def test_example_runs_against_an_openai_compatible_endpoint(name: str, forked: str) -> None:
    with endpoint_in_thread(answer_briefly) as server:
        env = offline_env() | {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test-key"}
        argv = command(forked, name, "script")
        done = subprocess.run(argv, env=env, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert EXPECTED[name] in done.stdout.decode()
    uses_a_model = "provider_for" in (EXAMPLES / name).read_text()
    assert (len(server.requests) > 0) == uses_a_model


def test_an_example_runs_on_a_local_server_with_a_base_url_alone() -> None:
    # In a fresh interpreter, as a user starts it.
    with endpoint_in_thread(answer_briefly) as server:
        env = offline_env() | {"OPENAI_BASE_URL": server.base_url}
        argv = [sys.executable, str(EXAMPLES / "group_chat.py")]
        done = subprocess.run(argv, env=env, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert EXPECTED["group_chat.py"] in done.stdout.decode()
    assert server.requests and all(
        r.headers["authorization"] == f"Bearer {LOCAL_API_KEY}" for r in server.requests
    )


@pytest.mark.parametrize("name", SCRIPTS)
def test_no_example_shadows_a_module_it_might_import(name: str) -> None:
    # Run as a script, the examples folder comes first on sys.path: `concurrent.py` there
    # once hid the standard `concurrent` package from anyio.
    stem = name.removesuffix(".py")
    assert stem not in sys.stdlib_module_names
    assert importlib.util.find_spec(stem) is None, f"{stem!r} is an importable module"


def test_every_example_is_expected_and_listed_in_the_readme() -> None:
    assert set(SCRIPTS) == set(EXPECTED)
    readme = (EXAMPLES / "README.md").read_text()
    assert [name for name in SCRIPTS if f"({name})" not in readme] == []

from __future__ import annotations

import inspect

import raf.engine


def test_every_public_name_imports_and_is_documented() -> None:
    for name in raf.engine.__all__:
        value = getattr(raf.engine, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"raf.engine.{name} has no docstring"


def test_the_failure_event_and_the_exception_have_different_names() -> None:
    import raf
    import raf.errors

    assert not issubclass(raf.engine.WorkflowFailed, BaseException)
    assert not hasattr(raf.engine, "WorkflowError")
    assert raf.WorkflowError is raf.errors.WorkflowError


def test_with_kind_returns_a_copy() -> None:
    from raf.engine import FunctionExecutor, NodeContext, WorkflowBuilder

    async def noop(message: object, ctx: NodeContext) -> None:
        return None

    graph = WorkflowBuilder("w").add_executor(FunctionExecutor("a", noop)).set_start("a").build()
    named = graph.with_kind("pipeline")
    assert (graph.kind, named.kind) == ("graph", "pipeline")
    assert named.as_agent().metadata.kind == "pipeline"
    assert named.as_agent(kind="custom").metadata.kind == "custom"
    assert named.executors == graph.executors

"""A handoff desk: triage passes the customer to billing, billing to sales; turns resume there.

Run: python examples/handoff.py (or, from the repository root, python -m examples.handoff)
"""

from __future__ import annotations

import anyio

from raf import HandoffBuilder, ReactAgent, Session, tool
from raf.messages import ChatMessage
from raf.testing import Turn, text, tool_calls

if __package__:  # python -m examples.handoff
    from examples._models import provider_for
else:  # python examples/handoff.py
    from _models import provider_for


@tool
def refund(order_id: str) -> str:
    """Refund the duplicate charge of an order.

    Args:
        order_id: the order, say A17.
    """
    return f"refunded the duplicate charge of order {order_id}"


def customer(messages: list[ChatMessage]) -> str:
    """The customer's latest words (user messages that no agent wrote)."""
    said = [m.text for m in messages if m.role == "user" and m.author is None]
    return said[-1] if said else ""


def billing_script(messages: list[ChatMessage]) -> Turn:
    if "upgrade" in customer(messages):
        return tool_calls(("handoff_to_sales", {}), text="Sales can help with that.")
    if "refunded" in str(messages[-1].contents[-1]):
        return text("Done: I refunded the duplicate charge of order A17.")
    return tool_calls(("refund", {"order_id": "A17"}))


async def main() -> None:
    async with (
        provider_for(lambda m: tool_calls(("handoff_to_billing", {}))) as triage_model,
        provider_for(billing_script) as billing_model,
        provider_for(
            lambda m: text("The Pro plan is $9 a month; I have upgraded you.")
        ) as sales_model,
    ):
        triage = ReactAgent(
            "triage",
            triage_model,
            "Find out what the customer needs and hand off to the right agent.",
            description="Routes customers to the right desk.",
            text_tool_calls=True,  # small local models often write a handoff as text
        )
        billing = ReactAgent(
            "billing",
            billing_model,
            "Fix billing problems with your tools; hand off anything else.",
            tools=[refund],
            description="Refunds, invoices and charges.",
            text_tool_calls=True,
        )
        sales = ReactAgent(
            "sales",
            sales_model,
            "Help with plans and upgrades.",
            description="Plans, prices and upgrades.",
            text_tool_calls=True,
        )
        desk = (
            HandoffBuilder(triage, id="desk")
            .add_agent(billing)
            .add_agent(sales)
            .with_max_handoffs(3)
            .build()
            .as_agent()
        )
        session = Session()
        prompts = ("I was charged twice for order A17.", "Thanks! Can I upgrade my plan?")
        for turn, prompt in enumerate(prompts, 1):
            print(f"customer: {prompt}")
            answered_by = ""
            async with desk.run(prompt, session) as stream:
                async for update in stream:
                    where = "/".join(update.path)
                    if update.type == "executor_invoking":
                        print(f"  step {update.executor_id}")
                    elif update.type == "tool_called":
                        print(f"  [{where}] {update.name} -> {update.result}")
                    elif update.type == "message_completed" and update.message.text:
                        print(f"  [{where}] {update.message.text}")
                        answered_by = where
            # The next turn starts at the agent that answered this one.
            print(f"turn {turn} answered by {answered_by}")


if __name__ == "__main__":
    anyio.run(main)

// Drives a raf server with the official AG-UI client, whose HttpAgent verifies every event
// and rejects a malformed order. Prints one JSON summary on stdout.
// Usage: node conformance.mjs RUN_URL [TOKEN]
import { HttpAgent } from "@ag-ui/client";

const [url, token] = process.argv.slice(2);
const agent = new HttpAgent({
  url,
  threadId: `node-${process.pid}`,
  headers: token ? { Authorization: `Bearer ${token}` } : {},
});

function recorder() {
  const events = [];
  return {
    events,
    subscriber: {
      onEvent: ({ event }) => {
        events.push(event);
      },
    },
  };
}

agent.addMessage({ id: "question-1", role: "user", content: "the city library" });
const first = recorder();
await agent.runAgent({}, first.subscriber);
const interrupts = agent.pendingInterrupts.map((i) => ({ ...i }));
const second = recorder();
await agent.runAgent(
  {
    resume: interrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: "approved" })),
  },
  second.subscriber,
);
agent.addMessage({ id: "question-2", role: "user", content: "the harbour" });
const third = recorder();
await agent.runAgent({}, third.subscriber);

console.log(
  JSON.stringify({
    runs: [first, second, third].map((r) => r.events),
    interrupts,
    pendingAfter: agent.pendingInterrupts,
    messages: agent.messages,
  }),
);

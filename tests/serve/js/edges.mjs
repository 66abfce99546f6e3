// Drives a raf server at its edges with the official AG-UI client, whose HttpAgent verifies
// every event: a resume naming a request that is not open, two open questions answered in
// one resume (the client wants every open interrupt addressed), and a run that fails
// half-way. Prints one JSON summary on stdout.
// Usage: node edges.mjs BASE_URL
import { HttpAgent } from "@ag-ui/client";

const [base] = process.argv.slice(2);

function recorder() {
  const events = [];
  return { events, subscriber: { onEvent: ({ event }) => void events.push(event) } };
}

async function run(agent, parameters = {}) {
  const seen = recorder();
  let error = null;
  try {
    await agent.runAgent(parameters, seen.subscriber);
  } catch (exc) {
    error = String(exc && exc.message ? exc.message : exc);
  }
  return { events: seen.events, error };
}

const pair = new HttpAgent({ url: `${base}/agents/pair/run`, threadId: `pair-${process.pid}` });
pair.addMessage({ id: "go", role: "user", content: "go" });
const asked = await run(pair);
const [left, right] = pair.pendingInterrupts.map((i) => i.id);
const answers = [
  { interruptId: left, status: "resolved", payload: "blue" },
  { interruptId: right, status: "resolved", payload: "red" },
];
const stray = await run(pair, {
  resume: [...answers, { interruptId: "x", status: "resolved", payload: "green" }],
});
const stillOpen = pair.pendingInterrupts.map((i) => i.id);
const last = await run(pair, { resume: answers });

const team = new HttpAgent({ url: `${base}/agents/team/run`, threadId: `team-${process.pid}` });
team.addMessage({ id: "q", role: "user", content: "go" });
const failed = await run(team);

console.log(
  JSON.stringify({
    interrupts: [left, right],
    stillOpen,
    runs: { asked, stray, last, failed },
    messages: pair.messages,
  }),
);

// Runs a frontend tool with the official AG-UI client, whose HttpAgent verifies every event:
// the first run offers `show_map` and ends with the agent's call of it open; the script runs
// the tool as a page would (useCopilotAction-style), adds its result as a tool message, and
// runs again so the agent goes on with it. The client's shared state comes back in each run's
// STATE_SNAPSHOT. Prints one JSON summary on stdout.
// Usage: node frontend_tools.mjs RUN_URL
import { HttpAgent } from "@ag-ui/client";

const [url] = process.argv.slice(2);

const showMap = {
  name: "show_map",
  description: "Show a city on the user's map; answers what the user sees.",
  parameters: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
  },
};

async function run(agent) {
  try {
    await agent.runAgent({ tools: [showMap] });
    return null;
  } catch (exc) {
    return String(exc && exc.message ? exc.message : exc);
  }
}

const agent = new HttpAgent({
  url,
  threadId: `tour-${process.pid}`,
  initialState: { units: "metric" },
});
agent.addMessage({ id: "u1", role: "user", content: "A tour, please" });
const errors = [await run(agent)];
const answered = new Set(agent.messages.filter((m) => m.role === "tool").map((m) => m.toolCallId));
const called = [];
for (const message of agent.messages) {
  for (const call of message.toolCalls ?? []) {
    if (call.function.name !== "show_map" || answered.has(call.id)) continue;
    const args = JSON.parse(call.function.arguments);
    called.push({ name: call.function.name, args });
    agent.addMessage({
      id: `result-${call.id}`,
      role: "tool",
      toolCallId: call.id,
      content: `the map shows ${args.city}`,
    });
  }
}
errors.push(await run(agent));
console.log(JSON.stringify({ errors, called, messages: agent.messages, state: agent.state }));

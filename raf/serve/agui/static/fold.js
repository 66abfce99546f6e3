// Folding a thread's turns (each the AG-UI events of one run) into what the page shows: each
// agent's status and entries, the run's timeline in the order things were said, which questions
// are still open, and the state of each node of the root workflow's graph.
"use strict";

const TERMINAL = new Set(["RUN_FINISHED", "RUN_ERROR"]);

export function interruptsOf(turn) {
  const finished = turn.events.find((e) => e.type === "RUN_FINISHED");
  const outcome = finished && finished.outcome;
  return outcome && outcome.type === "interrupt" ? outcome.interrupts || [] : [];
}

export function isSettled(turn) {
  return turn.events.some((e) => TERMINAL.has(e.type));
}

// The state of every question of the thread, keyed `${turnIndex}|${interruptId}`: "open",
// "answered" (by a later turn that finished) or "again" (a later run asked it once more, so its
// form moves there). An answer by id answers that question only; plain text answers the oldest
// open one, as the server does.
export function questionStates(turns) {
  const states = new Map();
  let open = [];
  turns.forEach((turn, index) => {
    const finished = turn.events.some((e) => e.type === "RUN_FINISHED");
    if (finished && turn.resume) {
      const ids = new Set(turn.resume.map((r) => r.interruptId));
      for (const q of open) if (ids.has(q.id)) states.set(q.key, "answered");
      open = open.filter((q) => !ids.has(q.id));
    } else if (finished && turn.prompt !== null && open.length) {
      states.set(open.shift().key, "answered");
    }
    for (const interrupt of interruptsOf(turn)) {
      const earlier = open.find((q) => q.id === interrupt.id);
      if (earlier) {
        states.set(earlier.key, "again");
        open = open.filter((q) => q !== earlier);
      }
      const key = `${index}|${interrupt.id}`;
      open.push({ id: interrupt.id, key });
      states.set(key, "open");
    }
  });
  return states;
}

export function fold(turn, index, rootTree, questions) {
  const rootId = turn.agent.split("/").pop();
  const nodes = new Map();
  const node = (path) => {
    if (!nodes.has(path)) nodes.set(path, { status: "idle", entries: [], tokens: 0, steps: new Map() });
    return nodes.get(path);
  };
  const subagents = new Map();
  const owner = (event) => (event.subagentRunId && subagents.get(event.subagentRunId)) || rootId;
  const byMessage = new Map();
  const byTool = new Map();
  const timeline = [];
  const graph = new Map(); // node of the root workflow -> status
  const view = { rootId, rootTree, nodes, timeline, graph, status: "running", tokens: 0, error: null };
  const add = (path, entry) => {
    entry.path = path;
    node(path).entries.push(entry);
    if (entry.kind !== "step") timeline.push(entry);
  };
  node(rootId).status = "active";

  for (const event of turn.events) {
    switch (event.type) {
      case "SUBAGENT_STARTED": {
        const path = event.metadata && event.metadata.path ? event.metadata.path.join("/") : event.name;
        subagents.set(event.subagentRunId, path);
        node(path).status = "active";
        break;
      }
      case "SUBAGENT_FINISHED":
        node(owner(event)).status = event.outcome && event.outcome.type === "suspended" ? "waiting" : "done";
        break;
      case "SUBAGENT_ERROR":
        node(owner(event)).status = "error"; // the one error box goes where RUN_ERROR says
        break;
      case "STEP_STARTED":
      case "STEP_FINISHED": {
        const at = owner(event);
        const started = event.type === "STEP_STARTED";
        if (at === rootId) graph.set(event.stepName.split("#")[0], started ? "active" : "done");
        if (started && !hasChild(rootTree, rootId, `${at}/${event.stepName}`)) {
          const step = { kind: "step", name: event.stepName, status: "active" };
          node(at).steps.set(event.stepName, step);
          add(at, step);
        } else if (!started) {
          const step = node(at).steps.get(event.stepName);
          if (step) step.status = "done";
        }
        break;
      }
      case "TEXT_MESSAGE_START":
      case "REASONING_MESSAGE_START": {
        const entry = { kind: event.type === "TEXT_MESSAGE_START" ? "text" : "reasoning", text: "" };
        byMessage.set(event.messageId, entry);
        // A graph's own output names its author (`publish`): it is the root's say.
        add(owner(event), entry);
        if (event.name && event.name !== rootId && owner(event) === rootId) entry.author = event.name;
        break;
      }
      case "TEXT_MESSAGE_CONTENT":
      case "REASONING_MESSAGE_CONTENT": {
        const entry = byMessage.get(event.messageId);
        if (entry) entry.text += event.delta;
        break;
      }
      case "TOOL_CALL_START": {
        const entry = { kind: "tool", id: event.toolCallId, name: event.toolCallName, args: "", result: null, failed: false };
        byTool.set(event.toolCallId, entry);
        add(owner(event), entry);
        break;
      }
      case "TOOL_CALL_ARGS": {
        const entry = byTool.get(event.toolCallId);
        if (entry) entry.args += event.delta;
        break;
      }
      case "TOOL_CALL_RESULT": {
        const entry = byTool.get(event.toolCallId);
        if (entry) {
          entry.result = typeof event.content === "string" ? event.content : JSON.stringify(event.content);
          entry.failed = Boolean(event.metadata && event.metadata.is_error);
        }
        break;
      }
      case "CUSTOM":
        if (event.name === "raf.usage" && event.value) {
          const used = (event.value.input_tokens || 0) + (event.value.output_tokens || 0);
          node(event.value.path.join("/")).tokens += used;
          view.tokens += used;
        }
        break;
      case "RUN_FINISHED": {
        const interrupts = interruptsOf(turn);
        view.status = interrupts.length ? "waiting" : "done";
        node(rootId).status = view.status;
        for (const interrupt of interrupts) {
          const path = interrupt.metadata && interrupt.metadata.path ? interrupt.metadata.path.join("/") : rootId;
          const state = questions.get(`${index}|${interrupt.id}`) || "open";
          add(path, { kind: "request", interrupt, state });
          // The asking node waits too (a request id is `{path}/{node}@{superstep}#{n}`).
          const asker = interrupt.id.split("@")[0].split("/");
          const step = node(path).steps.get(asker[asker.length - 1]);
          if (step) step.status = "waiting";
          if (asker.length === 2 && asker[0] === rootId) graph.set(asker[1], "waiting");
        }
        if (interrupts.length && interrupts.every((i) => questions.get(`${index}|${i.id}`) !== "open")) {
          view.status = "answered";
        }
        if (event.usage) view.tokens = event.usage.reduce((sum, u) => sum + (u.totalTokens || 0), 0);
        break;
      }
      case "RUN_ERROR": {
        const stopped = event.code === "Stopped";
        view.status = stopped ? "stopped" : "error";
        const path = event.metadata && event.metadata.path ? event.metadata.path.join("/") : rootId;
        node(path).status = view.status;
        if (path !== rootId) node(rootId).status = view.status;
        const parts = path.split("/");
        if (parts.length > 1 && parts[0] === rootId) graph.set(parts[1], stopped ? "idle" : "error");
        view.error = { path, message: event.message, code: event.code, stopped };
        if (!stopped) add(path, { kind: "error", message: event.message, code: event.code });
        break;
      }
      default:
        break;
    }
  }
  if (view.status !== "running") {
    const settled = view.status === "error" ? "error" : view.status === "stopped" ? "stopped" : "done";
    for (const n of nodes.values()) if (n.status === "active") n.status = settled;
    for (const [id, s] of graph) if (s === "active") graph.set(id, settled === "stopped" ? "idle" : settled);
  }
  return view;
}

function hasChild(tree, rootId, path) {
  const parts = path.split("/");
  if (parts[0] !== rootId || !tree) return false;
  let at = tree;
  for (const part of parts.slice(1)) {
    at = at.children.find((c) => c.id === part);
    if (!at) return false;
  }
  return true;
}

// Chat-like patterns read best in the order they were spoken.
const CONVERSATIONS = new Set(["group_chat", "handoff", "magentic", "roles"]);
export function isConversation(tree) {
  if (!tree) return false;
  return CONVERSATIONS.has(tree.kind) || tree.children.some(isConversation);
}

// The raf web page: browse the agent trees, run one over AG-UI, watch the run stream into its tree.
// Plain JavaScript, no build step. Every URL is relative, so the page works behind a path prefix.
"use strict";

const store = {
  get(key, fallback) {
    try {
      const raw = localStorage.getItem(`raf.${key}`);
      return raw === null ? fallback : JSON.parse(raw);
    } catch {
      return fallback;
    }
  },
  set(key, value) {
    try {
      localStorage.setItem(`raf.${key}`, JSON.stringify(value));
    } catch {
      /* storage full or disabled: the page still works, it just forgets */
    }
  },
};

const newId = () =>
  (crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random()}`).replace(/-/g, "");

const state = {
  trees: [],
  byPath: new Map(), // "root/child" -> AgentTree
  selected: store.get("agent", null),
  thread: store.get("thread", null) || newId(),
  turns: [],
  token: store.get("token", ""),
  running: null, // AbortController of the run in flight
  collapsed: new Set(store.get("collapsed", [])),
  openTools: new Set(),
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function headers() {
  const h = { "Content-Type": "application/json", Accept: "text/event-stream" };
  if (state.token) h.Authorization = `Bearer ${state.token}`;
  return h;
}

// ---------------------------------------------------------------------------------------------
// Agent trees

async function loadTrees() {
  const response = await fetch("agents", { headers: headers() });
  if (response.status === 401) {
    $("auth").hidden = false;
    $("token").focus();
    return;
  }
  $("auth").hidden = true;
  state.trees = await response.json();
  state.byPath.clear();
  const index = (tree, prefix) => {
    const path = prefix ? `${prefix}/${tree.id}` : tree.id;
    state.byPath.set(path, tree);
    tree.children.forEach((child) => index(child, path));
  };
  state.trees.forEach((tree) => index(tree, ""));
  if (!state.byPath.has(state.selected)) state.selected = state.trees[0] ? state.trees[0].id : null;
  renderTree();
  renderTarget();
}

function renderTree() {
  const root = $("tree");
  root.replaceChildren();
  $("tree-empty").hidden = state.trees.length > 0;
  const list = (trees, prefix) =>
    el("ul", { role: "group" }, trees.map((tree) => item(tree, prefix)));
  const item = (tree, prefix) => {
    const path = prefix ? `${prefix}/${tree.id}` : tree.id;
    const hasChildren = tree.children.length > 0;
    const open = hasChildren && !state.collapsed.has(path);
    const caret = el(
      "button",
      {
        class: `caret${open ? " open" : ""}${hasChildren ? "" : " leaf"}`,
        type: "button",
        "aria-label": open ? "collapse" : "expand",
        onclick: (event) => {
          event.stopPropagation();
          if (state.collapsed.has(path)) state.collapsed.delete(path);
          else state.collapsed.add(path);
          store.set("collapsed", [...state.collapsed]);
          renderTree();
        },
      },
      "▶",
    );
    const row = el(
      "div",
      {
        class: `agent-row${path === state.selected ? " selected" : ""}`,
        role: "treeitem",
        "aria-selected": path === state.selected ? "true" : "false",
        "data-path": path,
        title: path,
        onclick: () => select(path),
      },
      caret,
      el("span", { class: "agent-name" }, tree.name || tree.id),
      el("span", { class: `kind kind-${tree.kind}` }, tree.kind),
      tree.description ? el("span", { class: "agent-desc" }, tree.description) : null,
    );
    return el("li", {}, row, open ? list(tree.children, path) : null);
  };
  root.append(list(state.trees, ""));
}

function select(path) {
  state.selected = path;
  store.set("agent", path);
  renderTree();
  renderTarget();
  $("message").focus();
}

function renderTarget() {
  $("target").textContent = state.selected || "—";
  $("send").disabled = !state.selected || state.running !== null;
}

// ---------------------------------------------------------------------------------------------
// Runs

async function send({ text, resume }) {
  const agent = state.selected;
  if (!agent || state.running) return;
  const messages = text ? [{ id: newId(), role: "user", content: text }] : [];
  const turn = {
    id: newId(),
    agent,
    prompt: text || null,
    answer: resume ? resume[0].payload : null,
    events: [],
  };
  state.turns.push(turn);
  renderTurns();
  const controller = new AbortController();
  state.running = controller;
  setRunning(true);
  const body = { threadId: state.thread, runId: turn.id, messages, tools: [], context: [], state: null };
  if (resume) body.resume = resume;
  try {
    const response = await fetch(`agents/${agent.split("/").map(encodeURIComponent).join("/")}/run`, {
      method: "POST",
      headers: headers(),
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    if (!response.ok) {
      const detail = await response.json().catch(() => ({}));
      if (response.status === 401) $("auth").hidden = false;
      turn.events.push({ type: "RUN_ERROR", message: detail.detail || `HTTP ${response.status}`, code: `HTTP${response.status}` });
      return;
    }
    await readEvents(response, (event) => {
      turn.events.push(event);
      scheduleRender(turn);
    });
  } catch (error) {
    const stopped = error.name === "AbortError";
    turn.events.push({ type: "RUN_ERROR", message: stopped ? "Stopped." : String(error), code: stopped ? "Stopped" : "Network" });
  } finally {
    state.running = null;
    setRunning(false);
    saveTurns();
    renderTurn(turn);
    renderUsage();
  }
}

async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
      const data = block
        .split(/\r?\n/)
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data) onEvent(JSON.parse(data));
    }
  }
}

function setRunning(running) {
  $("stop").hidden = !running;
  $("send").disabled = running || !state.selected;
  $("message").disabled = false;
}

// ---------------------------------------------------------------------------------------------
// Folding a run's events into its tree

function fold(turn) {
  const rootId = turn.agent.split("/").pop();
  const rootTree = state.byPath.get(turn.agent) || { id: rootId, kind: "agent", children: [] };
  const nodes = new Map();
  const node = (path) => {
    if (!nodes.has(path)) nodes.set(path, { status: "idle", entries: [], tokens: 0, steps: new Map() });
    return nodes.get(path);
  };
  const subagents = new Map();
  const owner = (event) => (event.subagentRunId && subagents.get(event.subagentRunId)) || rootId;
  const byMessage = new Map();
  const byTool = new Map();
  const view = { rootId, rootTree, nodes, status: "running", tokens: 0, usage: null };
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
      case "SUBAGENT_ERROR": {
        const at = node(owner(event));
        at.status = "error";
        at.entries.push({ kind: "error", message: event.message, code: event.code });
        break;
      }
      case "STEP_STARTED": {
        const at = owner(event);
        if (!hasChild(rootTree, rootId, `${at}/${event.stepName}`)) {
          const step = { kind: "step", name: event.stepName, status: "active" };
          node(at).steps.set(event.stepName, step);
          node(at).entries.push(step);
        }
        break;
      }
      case "STEP_FINISHED": {
        const step = node(owner(event)).steps.get(event.stepName);
        if (step) step.status = "done";
        break;
      }
      case "TEXT_MESSAGE_START":
      case "REASONING_MESSAGE_START": {
        const entry = { kind: event.type === "TEXT_MESSAGE_START" ? "text" : "reasoning", text: "" };
        byMessage.set(event.messageId, entry);
        node(owner(event)).entries.push(entry);
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
        node(owner(event)).entries.push(entry);
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
        const interrupts = event.outcome && event.outcome.type === "interrupt" ? event.outcome.interrupts : [];
        view.status = interrupts.length ? "waiting" : "done";
        node(rootId).status = view.status;
        for (const interrupt of interrupts) {
          const path = interrupt.metadata && interrupt.metadata.path ? interrupt.metadata.path.join("/") : rootId;
          node(path).entries.push({ kind: "request", interrupt, answered: isAnswered(turn) });
          // The asking node's step waits too (a request id is `{path}/{node}@{superstep}#{n}`).
          const asker = interrupt.id.split("@")[0].split("/").pop();
          const step = node(path).steps.get(asker);
          if (step) step.status = "waiting";
        }
        if (event.usage) view.tokens = event.usage.reduce((sum, u) => sum + (u.totalTokens || 0), 0);
        break;
      }
      case "RUN_ERROR": {
        view.status = "error";
        const path = event.metadata && event.metadata.path ? event.metadata.path.join("/") : rootId;
        const at = node(path);
        at.status = "error";
        if (!at.entries.some((e) => e.kind === "error" && e.message === event.message)) {
          at.entries.push({ kind: "error", message: event.message, code: event.code });
        }
        if (path !== rootId) node(rootId).status = "error";
        break;
      }
      default:
        break;
    }
  }
  if (view.status !== "running") {
    for (const n of nodes.values()) if (n.status === "active") n.status = view.status === "error" ? "error" : "done";
  }
  return view;
}

function hasChild(tree, rootId, path) {
  const parts = path.split("/");
  if (parts[0] !== rootId) return false;
  let at = tree;
  for (const part of parts.slice(1)) {
    at = at.children.find((c) => c.id === part);
    if (!at) return false;
  }
  return true;
}

function isAnswered(turn) {
  // A later turn of the thread answered it: by the request's own form, or by plain text.
  return state.turns.indexOf(turn) < state.turns.length - 1;
}

// ---------------------------------------------------------------------------------------------
// Rendering

const pending = new Set();
function scheduleRender(turn) {
  if (pending.has(turn)) return;
  pending.add(turn);
  requestAnimationFrame(() => {
    pending.delete(turn);
    renderTurn(turn);
  });
}

function renderTurns() {
  const container = $("turns");
  container.replaceChildren();
  if (state.turns.length === 0) {
    container.append(
      el(
        "div",
        { id: "welcome", class: "welcome" },
        el("h1", {}, "Pick an agent, ask it something"),
        el("p", { class: "muted" }, "Every agent of the tree shows what it says, thinks and calls as the run streams."),
      ),
    );
  }
  for (const turn of state.turns) container.append(el("article", { class: "turn", id: `turn-${turn.id}` }));
  state.turns.forEach(renderTurn);
  renderUsage();
}

function renderTurn(turn) {
  const box = document.getElementById(`turn-${turn.id}`);
  if (!box) return;
  const stick = nearBottom();
  const view = fold(turn);
  const prompt = turn.prompt !== null
    ? el("div", { class: "prompt" }, el("span", { class: "to" }, `to ${turn.agent}`), el("div", { class: "bubble" }, turn.prompt))
    : el("div", { class: "prompt" }, el("span", { class: "to" }, "answer"), el("div", { class: "bubble answer" }, formatValue(turn.answer)));
  const labels = { running: "Running…", done: "Completed", waiting: "Waiting for your answer", error: "Failed" };
  box.replaceChildren(
    prompt,
    el(
      "div",
      { class: `run ${view.status}` },
      renderNode(view.rootTree, view.rootId, view, turn),
      el(
        "div",
        { class: "run-foot" },
        el("span", { class: `state ${view.status}` }, labels[view.status]),
        el("span", { class: "tokens" }, `${view.tokens.toLocaleString()} tokens`),
      ),
    ),
  );
  if (stick) scrollToEnd();
  renderUsage();
}

function renderNode(tree, path, view, turn) {
  const data = view.nodes.get(path) || { status: "idle", entries: [], tokens: 0 };
  // A workflow's own steps lead, its agents follow, then what it said or asked itself.
  const stepEntries = data.entries.filter((entry) => entry.kind === "step");
  const steps = stepEntries.length
    ? el(
        "div",
        { class: "steps" },
        stepEntries.map((entry) => el("span", { class: `step ${entry.status}` }, el("span", { class: "dot" }), entry.name)),
      )
    : null;
  const own = data.entries.filter((entry) => entry.kind !== "step").map((entry) => renderEntry(entry, turn));
  const children = tree.children.length
    ? el("div", { class: "children" }, tree.children.map((child) => renderNode(child, `${path}/${child.id}`, view, turn)))
    : null;
  return el(
    "div",
    { class: `node ${data.status}`, "data-path": path },
    el(
      "div",
      { class: "node-head" },
      el("span", { class: "dot" }),
      el("span", { class: "name" }, tree.name || tree.id),
      el("span", { class: `kind kind-${tree.kind}` }, tree.kind),
      data.tokens ? el("span", { class: "node-tokens" }, `${data.tokens.toLocaleString()} tokens`) : null,
    ),
    steps ? el("div", { class: "entries" }, steps) : null,
    children,
    own.length ? el("div", { class: "entries" }, own) : null,
  );
}

function renderEntry(entry, turn) {
  switch (entry.kind) {
    case "text":
      return el("div", { class: "text" }, entry.text);
    case "reasoning":
      return el("div", { class: "reasoning" }, entry.text);
    case "tool": {
      const status = entry.result === null ? "running…" : entry.failed ? "failed" : "done";
      const details = el(
        "details",
        {
          class: `tool${entry.failed ? " failed" : ""}`,
          open: state.openTools.has(entry.id),
          ontoggle: (event) => {
            if (event.target.open) state.openTools.add(entry.id);
            else state.openTools.delete(entry.id);
          },
        },
        el(
          "summary",
          {},
          el("span", { class: "tool-name" }, entry.name),
          el("span", { class: "tool-args" }, compact(entry.args)),
          el("span", { class: `tool-state ${entry.failed ? "failed" : entry.result === null ? "" : "ok"}` }, status),
        ),
        el(
          "div",
          { class: "tool-body" },
          el("span", { class: "k" }, "arguments"),
          el("pre", {}, pretty(entry.args)),
          el("span", { class: "k" }, "result"),
          el("pre", {}, entry.result === null ? "…" : pretty(entry.result)),
        ),
      );
      return details;
    }
    case "error":
      return el("div", { class: "failure" }, el("strong", {}, entry.code || "Error"), entry.message);
    case "request":
      return renderRequest(entry);
    default:
      return el("div");
  }
}

function renderRequest(entry) {
  const { interrupt } = entry;
  const payload = interrupt.metadata ? interrupt.metadata.payload : undefined;
  const fields =
    payload && typeof payload === "object" && !Array.isArray(payload)
      ? Object.entries(payload).filter(([key, value]) => value !== interrupt.message || !["prompt", "question", "message"].includes(key))
      : [];
  const details = fields.length
    ? el(
        "dl",
        {},
        fields.map(([key, value]) => [el("dt", {}, key), el("dd", {}, typeof value === "string" ? value : JSON.stringify(value))]),
      )
    : null;
  if (entry.answered) {
    return el(
      "div",
      { class: "request answered" },
      el("div", { class: "ask" }, interrupt.message || "The run asks for an answer"),
      el("div", { class: "answered-note" }, "Answered below"),
    );
  }
  const input = el("input", { type: "text", placeholder: "Your answer", "aria-label": "Answer" });
  const form = el(
    "form",
    {
      onsubmit: (event) => {
        event.preventDefault();
        const value = input.value.trim();
        if (!value) return;
        send({ resume: [{ interruptId: interrupt.id, status: "resolved", payload: value }] });
      },
    },
    input,
    el("button", { type: "submit" }, "Answer"),
  );
  return el(
    "div",
    { class: "request", "data-interrupt": interrupt.id },
    el("div", { class: "ask" }, interrupt.message || "The run asks for an answer"),
    details,
    form,
  );
}

function compact(args) {
  try {
    const value = JSON.parse(args);
    if (value && typeof value === "object" && !Array.isArray(value)) {
      return Object.entries(value)
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
        .join(", ");
    }
    return JSON.stringify(value);
  } catch {
    return args;
  }
}

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function formatValue(value) {
  return typeof value === "string" ? value : JSON.stringify(value);
}

function renderUsage() {
  const total = state.turns.reduce((sum, turn) => sum + fold(turn).tokens, 0);
  $("usage").textContent = `${total.toLocaleString()} tokens`;
  $("thread-id").textContent = state.thread.slice(0, 12);
  $("thread-id").title = `thread ${state.thread}`;
}

function nearBottom() {
  const box = $("turns");
  return box.scrollHeight - box.scrollTop - box.clientHeight < 80;
}

function scrollToEnd() {
  const box = $("turns");
  box.scrollTop = box.scrollHeight;
}

// ---------------------------------------------------------------------------------------------
// Threads across reloads

function saveTurns() {
  store.set("thread", state.thread);
  store.set(`turns.${state.thread}`, state.turns);
}

function newThread() {
  if (state.running) state.running.abort();
  state.thread = newId();
  state.turns = [];
  saveTurns();
  renderTurns();
}

// ---------------------------------------------------------------------------------------------

function start() {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromHash) {
    state.token = fromHash;
    store.set("token", fromHash);
    history.replaceState(null, "", location.pathname + location.search);
  }
  state.turns = store.get(`turns.${state.thread}`, []);
  store.set("thread", state.thread);

  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("message").value.trim();
    if (!text || state.running) return;
    $("message").value = "";
    send({ text });
  });
  $("message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("stop").addEventListener("click", () => state.running && state.running.abort());
  $("new-thread").addEventListener("click", newThread);
  $("auth-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.token = $("token").value.trim();
    store.set("token", state.token);
    loadTrees().then(renderTurns);
  });

  loadTrees().then(renderTurns);
}

start();

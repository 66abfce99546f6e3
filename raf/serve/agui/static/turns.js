// Rendering a thread's turns: each run as its tree or its timeline, answers as Markdown, tool
// calls, questions (choices as buttons), one error box per failed run, and the token counts.
"use strict";

import { $, el, hooks, pretty, state } from "./core.js";
import { fold, isConversation, isSettled, questionStates } from "./fold.js";
import { renderMarkdown } from "./markdown.js";
import { currentTab, lightGraphWith, renderEvents } from "./panels.js";

const pending = new Set();
export function scheduleRender(turn) {
  if (pending.has(turn)) return;
  pending.add(turn);
  requestAnimationFrame(() => {
    pending.delete(turn);
    renderTurn(turn, questionStates(state.turns));
    hooks.saveTurns();
    if (currentTab() === "events") renderEvents();
  });
}

export function renderTurns() {
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
  const questions = questionStates(state.turns);
  state.turns.forEach((turn) => renderTurn(turn, questions));
  renderUsage();
  renderLayoutChoice();
  if (currentTab() === "events") renderEvents();
}

function layoutOf(turn) {
  if (turn.layout) return turn.layout;
  if (state.layout !== "auto") return state.layout;
  return isConversation(state.byPath.get(turn.agent)) ? "timeline" : "tree";
}

const LABELS = {
  running: "Running…",
  done: "Completed",
  waiting: "Waiting for your answer",
  answered: "Answered",
  error: "Failed",
  stopped: "Stopped",
};

export function renderTurn(turn, questions) {
  const box = document.getElementById(`turn-${turn.id}`);
  if (!box) return;
  const stick = nearBottom();
  const index = state.turns.indexOf(turn);
  const tree = state.byPath.get(turn.agent) || { id: turn.agent.split("/").pop(), kind: "agent", children: [] };
  const view = fold(turn, index, tree, questions);
  const prompt = turn.restored
    ? el("div", { class: "prompt restored" }, el("span", { class: "to" }, "earlier in this thread, as the server saved it"))
    : turn.prompt !== null
      ? el("div", { class: "prompt" }, el("span", { class: "to" }, `to ${turn.agent}`), el("div", { class: "bubble" }, turn.prompt))
      : el("div", { class: "prompt" }, el("span", { class: "to" }, "answer"), el("div", { class: "bubble answer" }, formatValue(turn.answer)));
  const layout = layoutOf(turn);
  box.replaceChildren(
    prompt,
    el(
      "div",
      { class: `run ${view.status} ${layout}` },
      layout === "timeline" ? renderTimeline(view, turn) : renderNode(view.rootTree, view.rootId, view),
      el(
        "div",
        { class: "run-foot" },
        el("span", { class: `state ${view.status}` }, LABELS[view.status]),
        el("span", { class: "tokens" }, `${view.tokens.toLocaleString()} tokens`),
      ),
    ),
  );
  if (turn.agent === state.selected && index === state.turns.length - 1) lightGraphWith(view);
  if (stick) scrollToEnd();
  renderUsage();
}

function renderNode(tree, path, view) {
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
  const own = data.entries.filter((entry) => entry.kind !== "step").map(renderEntry);
  const children = tree.children.length
    ? el("div", { class: "children" }, tree.children.map((child) => renderNode(child, `${path}/${child.id}`, view)))
    : null;
  return el(
    "div",
    { class: `node ${data.status}`, "data-path": path },
    nodeHead(tree.name || tree.id, tree.kind, data),
    steps ? el("div", { class: "entries" }, steps) : null,
    children,
    own.length ? el("div", { class: "entries" }, own) : null,
  );
}

function nodeHead(name, kind, data) {
  return el(
    "div",
    { class: "node-head" },
    el("span", { class: "dot" }),
    el("span", { class: "name" }, name),
    kind ? el("span", { class: `kind kind-${kind}` }, kind) : null,
    data.tokens ? el("span", { class: "node-tokens" }, `${data.tokens.toLocaleString()} tokens`) : null,
  );
}

// What was said, in the order it was said; one block per turn of speech.
function renderTimeline(view, turn) {
  // Paths in a view start at the run's root id; the registry's at the served root above it.
  const above = turn.agent.split("/").slice(0, -1).join("/");
  const blocks = [];
  for (const entry of view.timeline) {
    const speaker = entry.author ? `${entry.path}/${entry.author}` : entry.path;
    const last = blocks[blocks.length - 1];
    if (last && last.speaker === speaker) last.entries.push(entry);
    else blocks.push({ speaker, path: entry.path, author: entry.author, entries: [entry] });
  }
  return el(
    "ol",
    { class: "timeline" },
    blocks.map((block) => {
      const tree = state.byPath.get(above ? `${above}/${block.path}` : block.path);
      const data = view.nodes.get(block.path) || { status: "idle", tokens: 0 };
      const name = block.author || (tree ? tree.name || tree.id : block.path.split("/").pop());
      return el(
        "li",
        { class: `speech node ${data.status}`, "data-path": block.path },
        nodeHead(name, tree ? tree.kind : null, { tokens: 0 }),
        el("div", { class: "entries" }, block.entries.map(renderEntry)),
      );
    }),
  );
}

function renderEntry(entry) {
  switch (entry.kind) {
    case "text": {
      const body = renderMarkdown(entry.text);
      body.classList.add("text");
      return body;
    }
    case "reasoning":
      return el("div", { class: "reasoning" }, entry.text);
    case "tool":
      return renderTool(entry);
    case "error":
      return el("div", { class: "failure", role: "alert" }, el("strong", {}, entry.code || "Error"), entry.message);
    case "request":
      return renderRequest(entry);
    default:
      return el("div");
  }
}

function renderTool(entry) {
  const status = entry.result === null ? "running…" : entry.failed ? "failed" : "done";
  return el(
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
}

function choicesOf(payload) {
  if (!payload || typeof payload !== "object" || Array.isArray(payload)) return null;
  for (const key of ["options", "choices"]) {
    const offered = payload[key];
    if (Array.isArray(offered) && offered.length && offered.every((c) => typeof c === "string" && c)) return offered;
  }
  return null;
}

function renderRequest(entry) {
  const { interrupt, state: asked } = entry;
  const payload = interrupt.metadata ? interrupt.metadata.payload : undefined;
  const choices = choicesOf(payload);
  const hidden = new Set(["prompt", "question", "message", "options", "choices"]);
  const fields =
    payload && typeof payload === "object" && !Array.isArray(payload)
      ? Object.entries(payload).filter(([key, value]) => !(hidden.has(key) && (value === interrupt.message || key === "options" || key === "choices")))
      : [];
  const details = fields.length
    ? el("dl", {}, fields.map(([key, value]) => [el("dt", {}, key), el("dd", {}, typeof value === "string" ? value : JSON.stringify(value))]))
    : null;
  const question = el("div", { class: "ask" }, interrupt.message || "The run asks for an answer");
  if (asked !== "open") {
    const note = asked === "answered" ? "Answered below" : "Asked again below";
    return el("div", { class: `request ${asked}`, "data-interrupt": interrupt.id }, question, el("div", { class: "answered-note" }, note));
  }
  const reply = (value) =>
    hooks.send({ resume: [{ interruptId: interrupt.id, status: "resolved", payload: value }], answer: value });
  const buttons = choices
    ? el(
        "div",
        { class: "choices", role: "group", "aria-label": "Choices" },
        choices.map((choice) => el("button", { type: "button", class: "choice", onclick: () => reply(choice) }, choice)),
      )
    : null;
  const input = el("input", { type: "text", placeholder: choices ? "Or write your answer" : "Your answer", "aria-label": "Answer" });
  const form = el(
    "form",
    {
      onsubmit: (event) => {
        event.preventDefault();
        const value = input.value.trim();
        if (value) reply(value);
      },
    },
    input,
    el("button", { type: "submit" }, "Answer"),
  );
  return el("div", { class: "request", "data-interrupt": interrupt.id }, question, details, buttons, form);
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

function formatValue(value) {
  return typeof value === "string" ? value : JSON.stringify(value);
}

const settledTokens = new WeakMap(); // a settled turn's tokens never change: fold it once

export function renderUsage() {
  const questions = questionStates(state.turns);
  const tokens = (turn, index) => {
    if (settledTokens.has(turn)) return settledTokens.get(turn);
    const used = fold(turn, index, null, questions).tokens;
    if (isSettled(turn)) settledTokens.set(turn, used);
    return used;
  };
  const total = state.turns.reduce((sum, turn, index) => sum + tokens(turn, index), 0);
  $("usage").textContent = `${total.toLocaleString()} tokens`;
  $("thread-id").textContent = state.thread.slice(0, 12);
  $("thread-id").title = `thread ${state.thread}`;
}

function renderLayoutChoice() {
  for (const button of document.querySelectorAll(".segmented button")) {
    button.setAttribute("aria-checked", button.dataset.layout === state.layout ? "true" : "false");
  }
}

function nearBottom() {
  const box = $("turns");
  return box.scrollHeight - box.scrollTop - box.clientHeight < 80;
}

function scrollToEnd() {
  const box = $("turns");
  box.scrollTop = box.scrollHeight;
}

// The studio's panels: the selected workflow's graph lit by the run, the thread's checkpoints
// (inspect one, run again from any of them on a new thread), the raw events, and the past threads.
"use strict";

import { $, api, el, encodePath, hooks, pretty, showError, state, store } from "./core.js";
import { drawGraph, lightGraph } from "./graph.js";

const EVENTS_SHOWN = 500;

// ---------------------------------------------------------------------------------------------
// Tabs

export function showTab(name) {
  for (const tab of document.querySelectorAll('#studio [role="tab"]')) {
    const on = tab.dataset.tab === name;
    tab.setAttribute("aria-selected", on ? "true" : "false");
    tab.tabIndex = on ? 0 : -1;
    $(`panel-${tab.dataset.tab}`).hidden = !on;
  }
  store.set("tab", name);
  refreshPanel();
}

export function currentTab() {
  const tab = document.querySelector('#studio [role="tab"][aria-selected="true"]');
  return tab ? tab.dataset.tab : "graph";
}

export function refreshPanel() {
  if ($("studio").dataset.open !== "true") return;
  const tab = currentTab();
  if (tab === "graph") loadGraph();
  else if (tab === "checkpoints") loadCheckpoints();
  else renderEvents();
}

// ---------------------------------------------------------------------------------------------
// Graph

let drawn = null; // the agent path whose graph is drawn

export async function loadGraph() {
  const agent = state.selected;
  if (!agent || !state.connected) return;
  if (drawn === agent) return;
  drawn = agent;
  try {
    const graph = await api(`studio/graph/${encodePath(agent)}`);
    if (state.selected !== agent) return;
    if (!graph.workflow) {
      $("graph-caption").textContent = `${agent} is a single agent: it has no graph.`;
      $("graph").replaceChildren();
      return;
    }
    $("graph-caption").textContent = `${graph.workflow} · ${graph.kind} · ${graph.nodes.length} nodes`;
    drawGraph($("graph"), graph, (node) => {
      const path = `${agent}/${node.id}`;
      if (node.agentKind && state.byPath.has(path)) hooks.select(path);
    });
    lightFromTurns();
  } catch (error) {
    drawn = null;
    showError(`The graph of ${agent} could not be loaded: ${error.message}`);
  }
}

export function forgetGraph() {
  drawn = null;
}

// The nodes of the selected workflow as its latest run left them.
export function lightGraphWith(view) {
  if (view) lightGraph($("graph"), view.graph);
}

function lightFromTurns() {
  hooks.rerender && hooks.rerender();
}

// ---------------------------------------------------------------------------------------------
// Checkpoints

export async function loadCheckpoints() {
  if (!state.connected) return;
  const thread = state.thread;
  const list = $("checkpoints");
  try {
    const answer = await api(`studio/threads/${encodeURIComponent(thread)}/checkpoints`);
    if (state.thread !== thread) return;
    const items = answer.checkpoints.slice().reverse();
    let turnNumber = answer.checkpoints.filter((c) => c.kind === "turn").length;
    list.replaceChildren(
      ...items.map((checkpoint) => {
        const label =
          checkpoint.kind === "turn"
            ? `After turn ${turnNumber--}`
            : stepLabel(checkpoint);
        return el(
          "li",
          { class: `checkpoint cp-${checkpoint.kind}`, "data-checkpoint": checkpoint.id },
          el(
            "button",
            { type: "button", class: "ghost inspect", onclick: () => inspect(checkpoint, label) },
            el("span", { class: "cp-label" }, label),
            checkpoint.pending ? el("span", { class: "cp-pending" }, `${checkpoint.pending} waiting`) : null,
            el("time", { datetime: checkpoint.createdAt }, new Date(checkpoint.createdAt).toLocaleTimeString()),
          ),
        );
      }),
    );
    if (!items.length) list.append(el("li", { class: "muted" }, "No checkpoints yet: run something."));
    if (answer.truncated) list.append(el("li", { class: "muted" }, "Older checkpoints are not listed."));
  } catch (error) {
    showError(`The checkpoints of this thread could not be loaded: ${error.message}`);
  }
}

// A step checkpoint is taken after a superstep of the root, or inside nested workflows while
// the root's next superstep runs (it then holds the root as that superstep found it).
function stepLabel(checkpoint) {
  const root = checkpoint.scope ? checkpoint.scope.join("/") : checkpoint.workflow;
  if (checkpoint.inside && checkpoint.inside.length) {
    return `During step ${checkpoint.superstep + 1} of ${root}, inside ${checkpoint.inside.join(", ")}`;
  }
  return `Step ${checkpoint.superstep} of ${root}`;
}

async function inspect(checkpoint, label) {
  const box = $("inspector");
  try {
    const found = await api(
      `studio/threads/${encodeURIComponent(state.thread)}/checkpoints/${encodeURIComponent(checkpoint.id)}`,
    );
    const requests = found.requests.length
      ? el(
          "ul",
          { class: "cp-requests" },
          found.requests.map((r) => el("li", {}, el("code", {}, r.id), " ", el("pre", {}, pretty(r.payload)))),
        )
      : el("p", { class: "muted" }, "No pending requests.");
    const messages = found.messages.length
      ? el(
          "ol",
          { class: "cp-messages" },
          found.messages.map((m) =>
            el(
              "li",
              {},
              el("span", { class: "who" }, m.author || m.role),
              m.text || (m.tools.length ? `calls ${m.tools.join(", ")}` : "…"),
            ),
          ),
        )
      : el("p", { class: "muted" }, "No messages.");
    box.replaceChildren(
      el("h3", {}, label),
      el("p", { class: "muted" }, el("code", {}, found.id)),
      el(
        "button",
        {
          type: "button",
          class: "fork",
          title: found.kind === "turn" ? "A new thread, as the thread was after this turn" : "A new thread: the run goes on from this step",
          onclick: () => fork(found, label),
        },
        "Run again from here",
      ),
      found.next.length ? el("p", {}, "Next: ", found.next.join(", ")) : null,
      el("h4", {}, "Pending requests"),
      requests,
      el("h4", {}, "Conversation"),
      messages,
      el("details", { class: "cp-data" }, el("summary", {}, "State"), el("pre", {}, pretty(found.data))),
    );
    box.hidden = false;
    box.focus && box.scrollIntoView({ block: "nearest" });
  } catch (error) {
    showError(`Checkpoint ${checkpoint.id} could not be read: ${error.message}`);
  }
}

async function fork(checkpoint, label) {
  const from = state.thread;
  try {
    const turnIds = (await api(`studio/threads/${encodeURIComponent(from)}/checkpoints`)).checkpoints
      .filter((c) => c.kind === "turn")
      .map((c) => c.id);
    // Ids grow with time: the turns saved up to the checkpoint are the fork's past.
    const kept = turnIds.filter((id) => id <= checkpoint.id).length;
    const made = await api(
      `studio/threads/${encodeURIComponent(from)}/checkpoints/${encodeURIComponent(checkpoint.id)}/fork`,
      { method: "POST", body: {} },
    );
    // The turns of the page that saved the thread: the first `kept` of them are the fork's past.
    const saved = state.turns.filter(
      (turn) => !turn.restored && turn.events.some((e) => e.type === "RUN_FINISHED" || (e.type === "RUN_ERROR" && e.code !== "SessionBusy")),
    );
    const past = saved.slice(0, kept);
    const next = saved[kept];
    if (made.runId) {
      // A step inside a run: the server runs that turn on from the step; opening the thread
      // follows the run like any run still going.
      past.push({
        id: made.runId,
        agent: made.agent,
        prompt: next ? next.prompt : null,
        resume: null,
        answer: next && next.prompt === null ? next.answer : `run again from ${label}`,
        events: [],
        startedAt: Date.now(),
      });
    }
    store.set(`turns.${made.threadId}`, past);
    hooks.openThread(made.threadId, { forkedFrom: { thread: from, checkpoint: checkpoint.id } });
    if (!made.runId && next && next.prompt !== null) hooks.prefill(next.prompt);
    $("inspector").hidden = true;
  } catch (error) {
    showError(`Could not run again from ${checkpoint.id}: ${error.message}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Raw events

export function renderEvents() {
  const list = $("events");
  const all = state.turns.flatMap((turn, index) => turn.events.map((event) => ({ event, index })));
  const shown = all.slice(-EVENTS_SHOWN);
  $("events-caption").textContent = all.length
    ? `${all.length} events in ${state.turns.length} runs${all.length > shown.length ? ` (the last ${shown.length} shown)` : ""}`
    : "No events yet.";
  list.replaceChildren(
    ...shown.map(({ event, index }) =>
      el(
        "li",
        { class: `event ${event.type}` },
        el(
          "details",
          {},
          el(
            "summary",
            {},
            el("span", { class: "ev-run" }, `#${index + 1}`),
            el("span", { class: "ev-type" }, event.type),
            el("span", { class: "ev-brief" }, brief(event)),
          ),
          el("pre", {}, JSON.stringify(event, null, 2)),
        ),
      ),
    ),
  );
}

function brief(event) {
  return event.stepName || event.toolCallName || event.name || event.delta || event.message || "";
}

// ---------------------------------------------------------------------------------------------
// Past threads

export async function loadThreads() {
  if (!state.connected) return;
  try {
    const answer = await api("studio/threads");
    const ids = answer.threads.map((t) => t.id);
    const rows = answer.threads.map(threadRow);
    if (!ids.includes(state.thread)) rows.unshift(threadRow({ id: state.thread }));
    $("threads").replaceChildren(...rows, ...olderButton(answer.before));
  } catch (error) {
    showError(`The threads could not be listed: ${error.message}`);
  }
}

// The store lists threads a page at a time: older ones come on request, after those shown.
function olderButton(before) {
  if (before === null || before === undefined) return [];
  const button = el("button", { type: "button", class: "ghost older-threads" }, "Older threads");
  const item = el("li", {}, button);
  button.onclick = async () => {
    try {
      const answer = await api(`studio/threads?before=${encodeURIComponent(before)}`);
      const shown = new Set([...$("threads").querySelectorAll("[data-thread]")].map((b) => b.dataset.thread));
      const rows = answer.threads.filter((t) => !shown.has(t.id)).map(threadRow);
      item.replaceWith(...rows, ...olderButton(answer.before));
    } catch (error) {
      showError(`Older threads could not be listed: ${error.message}`);
    }
  };
  return [item];
}

function threadRow(remote) {
  const id = remote.id;
  const known = store.get("threads", {})[id] || {};
  const current = id === state.thread;
  return el(
    "li",
    {},
    el(
      "button",
      {
        type: "button",
        class: `ghost thread-row${current ? " current" : ""}`,
        "data-thread": id,
        "aria-current": current ? "true" : false,
        onclick: () => hooks.openThread(id),
      },
      el("span", { class: "thread-title" }, known.title || `thread ${id.slice(0, 12)}`),
      el(
        "span",
        { class: "thread-meta" },
        remote.forkedFrom ? `fork of ${remote.forkedFrom.thread.slice(0, 8)} · ` : "",
        remote.createdAt ? new Date(remote.createdAt).toLocaleString() : "new",
      ),
    ),
  );
}

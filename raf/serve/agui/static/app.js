// The raf studio: browse the agent trees, run one over AG-UI and watch the run stream into its
// tree (or its timeline), its workflow's graph light up, its checkpoints and raw events.
// Plain JavaScript modules, no build step.
"use strict";

import { $, api, clearError, el, encodePath, headers, hooks, newId, showError, state, store } from "./core.js";
import { isSettled, questionStates } from "./fold.js";
import { currentTab, forgetGraph, loadCheckpoints, loadThreads, refreshPanel, showTab } from "./panels.js";
import { renderTurn, renderTurns, scheduleRender } from "./turns.js";

const PHONE = window.matchMedia("(max-width: 760px)");

// ---------------------------------------------------------------------------------------------
// Agent trees

async function loadTrees({ submitted = false } = {}) {
  let response;
  try {
    response = await fetch("agents", { headers: headers({ Accept: "application/json" }) });
  } catch (error) {
    showError(`The server cannot be reached: ${error.message}`);
    return false;
  }
  if (response.status === 401) {
    state.connected = false;
    $("auth").hidden = false;
    $("auth-refused").hidden = !submitted && !state.token;
    $("token").focus();
    return false;
  }
  if (!response.ok) {
    showError(`The agents could not be listed: HTTP ${response.status}`);
    return false;
  }
  $("auth").hidden = true;
  $("auth-refused").hidden = true;
  state.connected = true;
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
  return true;
}

function visibleRows() {
  return [...$("tree").querySelectorAll(".agent-row")];
}

function renderTree() {
  const root = $("tree");
  const focused = document.activeElement && document.activeElement.classList.contains("agent-row")
    ? document.activeElement.dataset.path
    : null;
  root.replaceChildren();
  $("tree-empty").hidden = state.trees.length > 0;
  const list = (trees, prefix, level) =>
    el("ul", { role: level === 1 ? "none" : "group" }, trees.map((tree) => item(tree, prefix, level)));
  const item = (tree, prefix, level) => {
    const path = prefix ? `${prefix}/${tree.id}` : tree.id;
    const hasChildren = tree.children.length > 0;
    const open = hasChildren && !state.collapsed.has(path);
    const caret = el(
      "span",
      {
        class: `caret${open ? " open" : ""}${hasChildren ? "" : " leaf"}`,
        "aria-hidden": "true",
        onclick: (event) => {
          event.stopPropagation();
          toggle(path);
        },
      },
      "▶",
    );
    const row = el(
      "div",
      {
        class: `agent-row${path === state.selected ? " selected" : ""}`,
        role: "treeitem",
        "aria-level": String(level),
        "aria-selected": path === state.selected ? "true" : "false",
        "aria-expanded": hasChildren ? (open ? "true" : "false") : false,
        tabindex: path === (focused || state.selected) ? "0" : "-1",
        "data-path": path,
        title: path,
        onclick: () => select(path),
        onkeydown: (event) => onTreeKey(event, path, hasChildren, open),
      },
      caret,
      el("span", { class: "agent-name" }, tree.name || tree.id),
      el("span", { class: `kind kind-${tree.kind}` }, tree.kind),
      tree.description ? el("span", { class: "agent-desc" }, tree.description) : null,
    );
    return el("li", { role: "none" }, row, open ? list(tree.children, path, level + 1) : null);
  };
  root.append(list(state.trees, "", 1));
  const rows = visibleRows();
  if (rows.length && !rows.some((r) => r.tabIndex === 0)) rows[0].tabIndex = 0;
  if (focused) {
    const again = rows.find((r) => r.dataset.path === focused);
    if (again) again.focus();
  }
}

function toggle(path) {
  if (state.collapsed.has(path)) state.collapsed.delete(path);
  else state.collapsed.add(path);
  store.set("collapsed", [...state.collapsed]);
  renderTree();
}

// The tree pattern of WAI-ARIA: arrows move, Right/Left open and close, Enter or Space picks.
function onTreeKey(event, path, hasChildren, open) {
  const rows = visibleRows();
  const at = rows.findIndex((r) => r.dataset.path === path);
  const focus = (row) => {
    if (!row) return;
    rows.forEach((r) => (r.tabIndex = -1));
    row.tabIndex = 0;
    row.focus();
  };
  switch (event.key) {
    case "ArrowDown":
      focus(rows[at + 1]);
      break;
    case "ArrowUp":
      focus(rows[at - 1]);
      break;
    case "Home":
      focus(rows[0]);
      break;
    case "End":
      focus(rows[rows.length - 1]);
      break;
    case "ArrowRight":
      if (hasChildren && !open) toggle(path);
      else if (hasChildren) focus(rows[at + 1]);
      break;
    case "ArrowLeft":
      if (hasChildren && open) toggle(path);
      else focus(rows.find((r) => r.dataset.path === path.split("/").slice(0, -1).join("/")));
      break;
    case "Enter":
    case " ":
      select(path, { keepFocus: true });
      break;
    default:
      return;
  }
  event.preventDefault();
}

function select(path, { keepFocus = false } = {}) {
  state.selected = path;
  store.set("agent", path);
  renderTree();
  renderTarget();
  forgetGraph();
  refreshPanel();
  if (PHONE.matches) setDrawer("sidebar", false);
  if (!keepFocus) $("message").focus();
}

function renderTarget() {
  $("target").textContent = state.selected || "—";
  $("send").disabled = !state.selected || state.running !== null;
}

// ---------------------------------------------------------------------------------------------
// Runs

async function send({ text = null, resume = null, answer = null }) {
  const agent = state.selected;
  if (!agent || state.running) return false;
  clearError();
  const messages = text ? [{ id: newId(), role: "user", content: text }] : [];
  const turn = { id: newId(), agent, prompt: text, resume, answer, events: [], startedAt: Date.now() };
  state.turns.push(turn);
  remember(text);
  renderTurns();
  const body = { threadId: state.thread, runId: turn.id, messages, tools: [], context: [], state: null };
  if (resume) body.resume = resume;
  // A studio run belongs to the server, not to this request: a reload re-attaches to it. Where
  // the server cannot keep runs (503: its lifespan does not run), the plain AG-UI route serves.
  const refused = (status, detail) => {
    // Refused before it ran: the turn never happened, the text goes back to the composer.
    state.turns.splice(state.turns.indexOf(turn), 1);
    if (status === 401) {
      state.connected = false;
      $("auth").hidden = false;
      $("auth-refused").hidden = false;
    } else {
      showError(detail || `The run was refused: HTTP ${status}`);
    }
    if (text) restoreDraft(text);
  };
  let plain = false;
  await follow(turn, `studio/agents/${encodePath(agent)}/runs`, {
    method: "POST",
    body: JSON.stringify(body),
    refused: (status, detail) => (status === 503 ? (plain = true) : refused(status, detail)),
  });
  if (plain) await follow(turn, `agents/${encodePath(agent)}/run`, { method: "POST", body: JSON.stringify(body), refused });
  return true;
}

// Read a run's events into `turn` until it ends (or the page stops listening).
async function follow(turn, url, { method = "GET", body, refused }) {
  const controller = new AbortController();
  state.running = { turn, controller };
  setRunning(true);
  try {
    const response = await fetch(url, {
      method,
      headers: headers({ Accept: "text/event-stream" }),
      body,
      signal: controller.signal,
    });
    if (!response.ok) {
      const detail = await response.json().catch(() => ({}));
      refused(response.status, detail.detail);
      return;
    }
    await readEvents(response, (event) => {
      turn.events.push(event);
      scheduleRender(turn);
    });
    if (!isSettled(turn)) turn.events.push({ type: "RUN_ERROR", message: "The stream ended before the run did.", code: "Network" });
  } catch (error) {
    const stopped = error.name === "AbortError";
    turn.events.push({ type: "RUN_ERROR", message: stopped ? "Stopped." : String(error), code: stopped ? "Stopped" : "Network" });
  } finally {
    state.running = null;
    setRunning(false);
    saveTurns();
    renderTurns();
    loadThreads();
    if (currentTab() === "checkpoints") loadCheckpoints();
  }
}

async function stop() {
  if (!state.running) return;
  const { turn, controller } = state.running;
  try {
    // The run ends with its own "Stopped" event; the stream closes after it.
    await api(`studio/runs/${encodeURIComponent(turn.id)}/stop`, { method: "POST", body: {} });
  } catch {
    controller.abort();
  }
}

// Runs a reload cut short are still running on the server: read on from the last event kept.
async function reattach() {
  for (const turn of state.turns) {
    if (isSettled(turn) || state.running) continue;
    const after = turn.events.length;
    await follow(turn, `studio/runs/${encodeURIComponent(turn.id)}/events?after=${after}`, {
      refused: (status, detail) => {
        turn.events.push({
          type: "RUN_ERROR",
          message: status === 404 ? "This run is no longer on the server (it restarted, or the run ended long ago)." : detail || `HTTP ${status}`,
          code: "Lost",
        });
      },
    });
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
}

// ---------------------------------------------------------------------------------------------
// Threads across reloads

function saveTurns() {
  store.set("thread", state.thread);
  store.set(`turns.${state.thread}`, state.turns);
}

function remember(text) {
  const known = store.get("threads", {});
  const entry = known[state.thread] || { at: Date.now() };
  if (!entry.title && text) entry.title = text.length > 60 ? `${text.slice(0, 59)}…` : text;
  known[state.thread] = entry;
  store.set("threads", known);
}

function openThread(id) {
  if (state.running) state.running.controller.abort(); // the run goes on; reopening re-attaches
  state.thread = id;
  state.turns = store.get(`turns.${id}`, []);
  saveTurns();
  renderTurns();
  loadThreads();
  refreshPanel();
  if (PHONE.matches) setDrawer("sidebar", false);
  if (!state.turns.length) restoreFromServer(id);
  else reattach();
}

// A thread this browser never showed (run by another client, or a fork of one): its
// conversation and open questions as the server saved them after its newest turn.
async function restoreFromServer(id) {
  if (!state.connected || !state.selected) return;
  try {
    const base = `studio/threads/${encodeURIComponent(id)}/checkpoints`;
    const newest = (await api(base)).checkpoints.filter((c) => c.kind === "turn").pop();
    if (!newest) return;
    const saved = await api(`${base}/${encodeURIComponent(newest.id)}`);
    if (state.thread !== id || state.turns.length) return;
    const root = state.selected.split("/").pop();
    const events = [{ type: "RUN_STARTED", threadId: id, runId: newest.id }];
    for (const message of saved.messages) {
      if (!message.text) continue;
      const messageId = newId();
      const name = message.author || message.role;
      events.push({ type: "TEXT_MESSAGE_START", messageId, role: "assistant", name });
      events.push({ type: "TEXT_MESSAGE_CONTENT", messageId, delta: message.text });
      events.push({ type: "TEXT_MESSAGE_END", messageId });
    }
    const interrupts = saved.requests.map((request) => {
      const payload = request.payload;
      const question = typeof payload === "string" ? payload : payload && (payload.prompt || payload.question || payload.message);
      return { id: request.id, reason: "input_required", message: question || JSON.stringify(payload), metadata: { path: request.path || [root], payload } };
    });
    events.push({ type: "RUN_FINISHED", threadId: id, runId: newest.id, outcome: interrupts.length ? { type: "interrupt", interrupts } : null });
    state.turns = [{ id: newId(), agent: state.selected, prompt: null, resume: null, answer: null, restored: true, layout: "timeline", events }];
    saveTurns();
    renderTurns();
  } catch (error) {
    showError(`This thread's conversation could not be read from the server: ${error.message}`);
  }
}

function restoreDraft(text) {
  const box = $("message");
  if (!box.value.trim()) box.value = text;
  store.set("draft", box.value);
}

// ---------------------------------------------------------------------------------------------
// Drawers (phone width) and the studio panel

function setDrawer(name, open) {
  $(name).dataset.open = open ? "true" : "false";
  $(`toggle-${name}`).setAttribute("aria-expanded", open ? "true" : "false");
  if (name === "studio") {
    store.set("studio", open);
    if (open) refreshPanel();
  }
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
  saveTurns();
  // What was typed while the page loaded wins over an older draft.
  if (!$("message").value) $("message").value = store.get("draft", "");

  hooks.openThread = openThread;
  hooks.prefill = (text) => {
    $("message").value = text;
    store.set("draft", text);
    $("message").focus();
  };
  hooks.select = select;
  hooks.send = send;
  hooks.saveTurns = saveTurns;
  hooks.rerender = () => {
    const last = state.turns[state.turns.length - 1];
    if (last) renderTurn(last, questionStates(state.turns));
  };

  $("composer").addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = $("message").value.trim();
    if (!text || state.running) return;
    if (!state.connected || !state.selected) {
      showError(state.connected ? "Pick an agent first: your message is kept." : "Not connected yet: your message is kept.");
      return;
    }
    $("message").value = "";
    store.remove("draft");
    await send({ text });
  });
  $("message").addEventListener("input", () => store.set("draft", $("message").value));
  $("message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("stop").addEventListener("click", stop);
  $("new-thread").addEventListener("click", () => openThread(newId()));
  $("error-close").addEventListener("click", clearError);
  $("auth-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    state.token = $("token").value.trim();
    store.set("token", state.token);
    if (await loadTrees({ submitted: true })) connected();
  });
  for (const button of document.querySelectorAll(".segmented button")) {
    button.addEventListener("click", () => {
      state.layout = button.dataset.layout;
      store.set("layout", state.layout);
      renderTurns();
    });
  }
  for (const tab of document.querySelectorAll('#studio [role="tab"]')) {
    tab.addEventListener("click", () => showTab(tab.dataset.tab));
    tab.addEventListener("keydown", (event) => {
      const tabs = [...document.querySelectorAll('#studio [role="tab"]')];
      const at = tabs.indexOf(tab);
      const next = event.key === "ArrowRight" ? tabs[(at + 1) % tabs.length] : event.key === "ArrowLeft" ? tabs[(at + tabs.length - 1) % tabs.length] : null;
      if (next) {
        event.preventDefault();
        showTab(next.dataset.tab);
        next.focus();
      }
    });
  }
  $("toggle-sidebar").addEventListener("click", () => setDrawer("sidebar", $("sidebar").dataset.open !== "true"));
  $("toggle-studio").addEventListener("click", () => setDrawer("studio", $("studio").dataset.open !== "true"));
  setDrawer("sidebar", false);
  setDrawer("studio", PHONE.matches ? false : store.get("studio", window.innerWidth >= 1100));
  showTab(store.get("tab", "graph"));

  renderTurns();
  loadTrees().then((ok) => ok && connected());
}

function connected() {
  renderTurns();
  reattach();
  loadThreads();
  forgetGraph();
  refreshPanel();
}

start();

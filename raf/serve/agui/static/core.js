// What every part of the page shares: its state, local storage, building elements, calling the
// server (every URL relative, so the page works behind a path prefix), and the one error box.
"use strict";

export const store = {
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
  remove(key) {
    try {
      localStorage.removeItem(`raf.${key}`);
    } catch {
      /* as above */
    }
  },
};

export const newId = () =>
  (crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random()}`).replace(/-/g, "");

export const state = {
  trees: [],
  byPath: new Map(), // "root/child" -> AgentTree
  selected: store.get("agent", null),
  thread: store.get("thread", null) || newId(),
  turns: [],
  token: store.get("token", ""),
  running: null, // AbortController of the run in flight
  collapsed: new Set(store.get("collapsed", [])),
  openTools: new Set(),
  layout: store.get("layout", "auto"),
  connected: false,
};

// Set by app.js: what the panels call back into.
export const hooks = { openThread: null, prefill: null, select: null, rerender: null, send: null, saveTurns: null };

export const $ = (id) => document.getElementById(id);

export function el(tag, attrs = {}, ...children) {
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

export function headers(extra = {}) {
  const h = { "Content-Type": "application/json", ...extra };
  if (state.token) h.Authorization = `Bearer ${state.token}`;
  return h;
}

export const encodePath = (path) => path.split("/").map(encodeURIComponent).join("/");

// GET or POST JSON; a refusal becomes an Error carrying the status and the server's detail.
export async function api(url, { method = "GET", body } = {}) {
  const response = await fetch(url, {
    method,
    headers: headers({ Accept: "application/json" }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(data.detail || `HTTP ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return data;
}

export function showError(message) {
  $("error-text").textContent = message;
  $("error").hidden = false;
}

export function clearError() {
  $("error").hidden = true;
  $("error-text").textContent = "";
}

export function pretty(text) {
  try {
    return JSON.stringify(typeof text === "string" ? JSON.parse(text) : text, null, 2);
  } catch {
    return String(text);
  }
}

// A workflow's graph drawn as SVG: nodes in layers from the start node down (longest path over
// the forward edges), edges as arrows, loops curving back on the right. `lightGraph` marks the
// nodes of a run (active, done, waiting, error) without laying the graph out again.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const BOX_W = 148;
const BOX_H = 38;
const GAP_X = 28;
const GAP_Y = 46;
const PAD = 16;

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

export function layout(graph) {
  const ids = graph.nodes.map((n) => n.id);
  const out = new Map(ids.map((id) => [id, []]));
  for (const edge of graph.edges) out.get(edge.source)?.push(edge.target);
  // Depth-first from the start (then from any node not reached) to tell loops from forward edges.
  const state = new Map();
  const back = new Set();
  const order = [];
  const visit = (id) => {
    state.set(id, 1);
    for (const next of out.get(id) || []) {
      if (state.get(next) === 1) back.add(`${id}\u0000${next}`);
      else if (!state.has(next)) visit(next);
    }
    state.set(id, 2);
    order.push(id);
  };
  if (graph.start && out.has(graph.start)) visit(graph.start);
  ids.forEach((id) => state.has(id) || visit(id));
  order.reverse(); // a topological order of the forward edges
  const rank = new Map(ids.map((id) => [id, 0]));
  for (const id of order) {
    for (const next of out.get(id) || []) {
      if (!back.has(`${id}\u0000${next}`)) rank.set(next, Math.max(rank.get(next), rank.get(id) + 1));
    }
  }
  const layers = [];
  for (const id of ids) (layers[rank.get(id)] ||= []).push(id);
  const widest = Math.max(1, ...layers.map((l) => (l ? l.length : 0)));
  const width = PAD * 2 + widest * BOX_W + (widest - 1) * GAP_X + 40;
  const position = new Map();
  layers.forEach((layer, r) => {
    if (!layer) return;
    const span = layer.length * BOX_W + (layer.length - 1) * GAP_X;
    const left = (width - 40 - span) / 2;
    layer.forEach((id, k) => position.set(id, { x: left + k * (BOX_W + GAP_X), y: PAD + r * (BOX_H + GAP_Y) }));
  });
  const height = PAD * 2 + layers.length * BOX_H + Math.max(0, layers.length - 1) * GAP_Y;
  return { position, back, width, height };
}

export function drawGraph(container, graph, onPick) {
  container.replaceChildren();
  if (!graph || !graph.nodes.length) return;
  const { position, back, width, height } = layout(graph);
  const root = svg("svg", {
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    class: "graph-svg",
    role: "group",
    "aria-label": `graph of ${graph.workflow}`,
  });
  const defs = svg("defs");
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow-head" }));
  defs.append(marker);
  root.append(defs);
  for (const edge of graph.edges) {
    const a = position.get(edge.source);
    const b = position.get(edge.target);
    if (!a || !b) continue;
    const loop = back.has(`${edge.source}\u0000${edge.target}`) || edge.source === edge.target;
    let d;
    let label;
    if (loop) {
      const x = Math.max(a.x, b.x) + BOX_W;
      d = `M ${a.x + BOX_W} ${a.y + BOX_H / 2} C ${x + 40} ${a.y + BOX_H / 2}, ${x + 40} ${b.y + BOX_H / 2}, ${b.x + BOX_W} ${b.y + BOX_H / 2}`;
      label = { x: x + 24, y: (a.y + b.y) / 2 + BOX_H / 2 };
    } else {
      const x1 = a.x + BOX_W / 2;
      const y1 = a.y + BOX_H;
      const x2 = b.x + BOX_W / 2;
      const y2 = b.y;
      const mid = (y1 + y2) / 2;
      d = `M ${x1} ${y1} C ${x1} ${mid}, ${x2} ${mid}, ${x2} ${y2}`;
      label = { x: (x1 + x2) / 2 + 4, y: mid };
    }
    const group = svg("g", { class: `gedge ${edge.kind}`, "data-source": edge.source, "data-target": edge.target });
    group.append(svg("path", { d, "marker-end": "url(#arrow)" }));
    if (edge.label) group.append(svg("text", { x: label.x, y: label.y, class: "edge-label" }, edge.label));
    root.append(group);
  }
  for (const node of graph.nodes) {
    const at = position.get(node.id);
    const group = svg("g", {
      class: `gnode idle${node.start ? " start" : ""}`,
      "data-node": node.id,
      transform: `translate(${at.x} ${at.y})`,
      tabindex: 0,
      role: "button",
      "aria-label": `${node.id} (${node.agentKind || node.kind})`,
    });
    group.append(svg("title", {}, `${node.id} · ${node.agentKind || node.kind}`));
    group.append(svg("rect", { width: BOX_W, height: BOX_H, rx: 8 }));
    group.append(svg("circle", { cx: 14, cy: BOX_H / 2, r: 4, class: "gdot" }));
    const name = node.id.length > 17 ? `${node.id.slice(0, 16)}…` : node.id;
    group.append(svg("text", { x: 26, y: BOX_H / 2 - 3, class: "gname" }, name));
    group.append(svg("text", { x: 26, y: BOX_H / 2 + 11, class: "gkind" }, node.agentKind || node.kind));
    const pick = () => onPick && onPick(node);
    group.addEventListener("click", pick);
    group.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        pick();
      }
    });
    root.append(group);
  }
  container.append(root);
}

export function lightGraph(container, status) {
  for (const group of container.querySelectorAll("g.gnode")) {
    const value = status.get(group.dataset.node) || "idle";
    for (const name of ["idle", "active", "done", "waiting", "error"]) group.classList.toggle(name, name === value);
  }
}

// A small Markdown renderer that builds DOM nodes and never parses HTML: every piece of the text
// becomes a text node, so a model's answer cannot inject markup or script. It covers what answers
// use: headings, paragraphs, lists, quotes, fenced code, rules, tables, and inline code, bold,
// italics, strike-through and links (http, https and mailto only).
"use strict";

const SAFE_LINK = /^(https?:|mailto:)/i;

export function renderMarkdown(text) {
  const root = document.createElement("div");
  root.className = "md";
  const lines = String(text).replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```|~~~)\s*([\w+-]*)\s*$/);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i += 1;
      const pre = document.createElement("pre");
      const code = document.createElement("code");
      if (fence[2]) code.dataset.lang = fence[2];
      code.textContent = body.join("\n");
      pre.append(code);
      root.append(pre);
      continue;
    }
    if (!line.trim()) {
      i += 1;
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*?)\s*#*\s*$/);
    if (heading) {
      root.append(block(`h${Math.min(heading[1].length + 2, 6)}`, heading[2]));
      i += 1;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      root.append(document.createElement("hr"));
      i += 1;
      continue;
    }
    if (/^\s*>/.test(line)) {
      const body = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) body.push(lines[i++].replace(/^\s*>\s?/, ""));
      const quote = document.createElement("blockquote");
      quote.append(...renderMarkdown(body.join("\n")).childNodes);
      root.append(quote);
      continue;
    }
    const item = /^\s*([-*+]|\d{1,9}[.)])\s+/;
    if (item.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const list = document.createElement(ordered ? "ol" : "ul");
      if (ordered) {
        const first = parseInt(line.trim(), 10);
        if (first !== 1) list.start = first;
      }
      while (i < lines.length && item.test(lines[i]) && /^\s*\d/.test(lines[i]) === ordered) {
        let content = lines[i++].replace(item, "");
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !item.test(lines[i])) content += ` ${lines[i++].trim()}`;
        list.append(block("li", content));
      }
      root.append(list);
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && /^\s*\|?\s*:?-{2,}/.test(lines[i + 1])) {
      const cells = (row) => row.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
      const table = document.createElement("table");
      const head = document.createElement("tr");
      cells(line).forEach((c) => head.append(block("th", c)));
      table.append(head);
      i += 2;
      while (i < lines.length && lines[i].includes("|") && lines[i].trim()) {
        const row = document.createElement("tr");
        cells(lines[i++]).forEach((c) => row.append(block("td", c)));
        table.append(row);
      }
      const wrap = document.createElement("div");
      wrap.className = "md-table";
      wrap.append(table);
      root.append(wrap);
      continue;
    }
    const paragraph = [line];
    i += 1;
    while (
      i < lines.length &&
      lines[i].trim() &&
      !/^\s*(```|~~~|#{1,6}\s|>|([-*+]|\d{1,9}[.)])\s)/.test(lines[i])
    ) {
      paragraph.push(lines[i++]);
    }
    root.append(block("p", paragraph.join("\n")));
  }
  return root;
}

function block(tag, text) {
  const node = document.createElement(tag);
  node.append(...inline(text));
  return node;
}

// Inline spans, earliest match first; what matches nothing stays plain text.
const INLINE = [
  { re: /`([^`\n]+)`/, make: (m) => wrap("code", document.createTextNode(m[1])) },
  { re: /\[([^\]\n]+)\]\(([^()\s]+)\)/, make: (m) => link(m[1], m[2]) },
  { re: /\*\*([^\n]+?)\*\*|__([^\n]+?)__/, make: (m) => wrap("strong", ...inline(m[1] || m[2])) },
  { re: /~~([^\n]+?)~~/, make: (m) => wrap("del", ...inline(m[1])) },
  { re: /(?<![\w*])\*(?!\s)([^*\n]+?)\*(?!\w)|(?<!\w)_(?!\s)([^_\n]+?)_(?!\w)/, make: (m) => wrap("em", ...inline(m[1] || m[2])) },
];

function inline(text) {
  const out = [];
  let rest = text;
  while (rest) {
    let best = null;
    for (const rule of INLINE) {
      const m = rule.re.exec(rest);
      if (m && (best === null || m.index < best.m.index)) best = { m, rule };
    }
    if (!best) {
      out.push(...lineBreaks(rest));
      break;
    }
    if (best.m.index > 0) out.push(...lineBreaks(rest.slice(0, best.m.index)));
    out.push(best.rule.make(best.m));
    rest = rest.slice(best.m.index + best.m[0].length);
  }
  return out;
}

function lineBreaks(text) {
  const parts = text.split("\n");
  return parts.flatMap((part, index) =>
    index === 0 ? [document.createTextNode(part)] : [document.createElement("br"), document.createTextNode(part)],
  );
}

function wrap(tag, ...children) {
  const node = document.createElement(tag);
  node.append(...children);
  return node;
}

function link(label, href) {
  if (!SAFE_LINK.test(href)) return document.createTextNode(`${label} (${href})`);
  const a = wrap("a", ...inline(label));
  a.href = href;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  return a;
}

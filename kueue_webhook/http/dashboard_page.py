"""The dashboard's one HTML page: inline style and script, no build step, nothing fetched from elsewhere.

The cluster may be offline, so the page carries everything it needs (a few KiB) and asks only its own URL
for data: it renders the document :func:`kueue_webhook.core.dashboard.dashboard_model` computes, embedded in
the
page for the first paint, then polls the same URL with ``?format=json`` every few seconds (slower after a
failure, not at all while the tab is hidden).

Names, reasons and messages come from objects users write, so the page never treats data as markup: the
script builds every element with ``textContent``, and the embedded document is JSON in a non-executable
``<script type="application/json">`` element with ``<``, ``>``, ``&`` and the two JavaScript line
separators escaped, so no text can close that element. The Content-Security-Policy allows this script and
this style by their hashes and nothing else: no other script, no inline handler, no style attribute, no
request but to this origin, no framing.
"""

from __future__ import annotations

import base64
import hashlib

__all__ = ["CONTENT_SECURITY_POLICY", "SCRIPT", "STYLE", "embed_json", "render_page"]

STYLE = """
:root { color-scheme: light dark; --ok: #2e7d32; --warn: #b26a00; --bad: #c62828; --muted: #6b7280;
  --line: #d1d5db; --bar: #3b82f6; --borrow: #f59e0b; --card: rgba(127,127,127,.06); }
* { box-sizing: border-box; }
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
  padding: 16px 24px; max-width: 1200px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 24px 0 8px; }
.muted { color: var(--muted); } .error { color: var(--bad); }
#totals { display: flex; gap: 12px; flex-wrap: wrap; margin-top: 12px; }
.stat { border: 1px solid var(--line); border-radius: 8px; padding: 8px 14px; min-width: 110px;
  background: var(--card); }
.stat .num { display: block; font-size: 24px; font-weight: 600; }
ul.tree { list-style: none; padding-left: 18px; margin: 4px 0; border-left: 1px dashed var(--line); }
ul.tree.root { padding-left: 0; border-left: none; }
.cohort > .label { font-weight: 600; margin: 6px 0 2px; }
.cq { border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; margin: 6px 0;
  background: var(--card); }
.cq .head { display: flex; gap: 12px; align-items: baseline; flex-wrap: wrap; }
.cq .name { font-weight: 600; }
.badge { border-radius: 10px; padding: 0 8px; font-size: 12px; color: #fff; }
.badge.ok { background: var(--ok); } .badge.bad { background: var(--bad); }
table { border-collapse: collapse; width: 100%; margin-top: 6px; }
th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid var(--line); vertical-align: top;
  white-space: nowrap; }
th { font-weight: 600; font-size: 12px; color: var(--muted); }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
.meter { position: relative; width: 160px; height: 10px; border-radius: 5px; background: var(--line);
  overflow: hidden; display: inline-block; vertical-align: middle; }
.meter .fill { position: absolute; left: 0; top: 0; bottom: 0; background: var(--bar); }
.meter .over { position: absolute; right: 0; top: 0; bottom: 0; background: var(--borrow); }
.borrowing { color: var(--warn); font-weight: 600; }
.kind-Admitted { color: var(--ok); } .kind-Preempted, .kind-Evicted { color: var(--bad); }
td.message { white-space: normal; min-width: 240px; overflow-wrap: anywhere; }
"""

SCRIPT = """
"use strict";
(function () {
  var POLL_MS = 5000, MAX_POLL_MS = 60000, RECENT_SHOWN = 20, delay = POLL_MS, timer = null;
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function put(id, child) {
    var target = document.getElementById(id);
    target.replaceChildren(child);
  }
  function row(cells, header) {
    var tr = el("tr");
    cells.forEach(function (cell) {
      var td = el(header ? "th" : "td", cell && cell.cls, cell && cell.node ? null : (cell ? cell.text : ""));
      if (cell && cell.node) { td.appendChild(cell.node); }
      tr.appendChild(td);
    });
    return tr;
  }
  function meter(resource) {
    var box = el("span", "meter"), fill = el("span", "fill");
    var percent = resource.usedPercent === null ? 0 : resource.usedPercent;
    fill.style.width = Math.min(100, percent) + "%";
    box.appendChild(fill);
    if (percent > 100) {
      var over = el("span", "over");
      over.style.width = Math.min(100, ((percent - 100) * 100) / percent) + "%";
      box.appendChild(over);
    }
    box.title = resource.usedPercent === null ? "no nominal quota" : percent + "% of nominal";
    return box;
  }
  function clusterQueue(cq) {
    var card = el("div", "cq");
    card.dataset.clusterQueue = cq.name;
    var head = el("div", "head");
    head.appendChild(el("span", "name", cq.name));
    var active = cq.active.status === "True";
    var badge = el("span", "badge " + (active ? "ok" : "bad"), active ? "Active" : cq.active.reason);
    badge.title = cq.active.message;
    head.appendChild(badge);
    head.appendChild(el("span", "counts", "admitted " + cq.admitted + " \\u00b7 reserving " + cq.reserving +
      " \\u00b7 pending " + cq.pending));
    card.appendChild(head);
    if (!active) { card.appendChild(el("div", "error", cq.active.message)); }
    if (cq.resources.length) {
      var table = el("table");
      table.appendChild(row([{text: "flavor"}, {text: "resource"}, {text: "used / nominal"}, {text: ""},
        {text: "borrowed"}, {text: "borrowing limit"}, {text: "lending limit"}], true));
      cq.resources.forEach(function (r) {
        table.appendChild(row([
          {text: r.flavor}, {text: r.resource}, {text: r.used + " / " + r.nominal, cls: "num"},
          {node: meter(r)},
          {text: r.borrowed, cls: r.borrowed !== "0" ? "num borrowing" : "num"},
          {text: r.borrowingLimit === null ? "\\u2013" : r.borrowingLimit, cls: "num"},
          {text: r.lendingLimit === null ? "\\u2013" : r.lendingLimit, cls: "num"}]));
      });
      card.appendChild(table);
    }
    return card;
  }
  function tree(nodes, byName, root) {
    var list = el("ul", root ? "tree root" : "tree");
    nodes.forEach(function (node) {
      var item = el("li");
      if (node.kind === "Cohort") {
        item.className = "cohort";
        var label = "cohort " + node.name + (node.truncated ? " (deeper levels not shown)" : "");
        item.appendChild(el("div", "label", label));
        item.appendChild(tree(node.children, byName, false));
      } else if (byName[node.name]) {
        item.appendChild(clusterQueue(byName[node.name]));
      } else {
        item.appendChild(el("div", "muted", node.name));
      }
      list.appendChild(item);
    });
    return list;
  }
  function pending(groups) {
    var box = el("div");
    if (!groups.length) { box.appendChild(el("p", "muted", "No pending workloads.")); return box; }
    groups.forEach(function (group) {
      box.appendChild(el("h3", null, group.clusterQueue + " \\u2013 " + group.total + " pending" +
        (group.total > group.workloads.length ? " (first " + group.workloads.length + " shown)" : "")));
      var table = el("table");
      table.appendChild(row([{text: "#"}, {text: "workload"}, {text: "owner"}, {text: "local queue"},
        {text: "priority"}, {text: "reason"}, {text: "message"}], true));
      group.workloads.forEach(function (w) {
        table.appendChild(row([{text: w.position + 1, cls: "num"}, {text: w.namespace + "/" + w.name},
          {text: w.owner}, {text: w.localQueue + " (#" + (w.positionInLocalQueue + 1) + ")"},
          {text: w.priority, cls: "num"}, {text: w.reason || "\\u2013"},
          {text: w.message, cls: "message"}]));
      });
      box.appendChild(table);
    });
    return box;
  }
  function recent(items) {
    if (!items.length) { return el("p", "muted", "Nothing admitted or preempted yet."); }
    var box = el("div"), table = el("table");
    if (items.length > RECENT_SHOWN) {
      box.appendChild(el("p", "muted", "The latest " + RECENT_SHOWN + " of " + items.length + " kept."));
      items = items.slice(0, RECENT_SHOWN);
    }
    box.appendChild(table);
    table.appendChild(row([{text: "when"}, {text: "what"}, {text: "workload"}, {text: "cluster queue"},
      {text: "reason"}, {text: "message"}], true));
    items.forEach(function (d) {
      table.appendChild(row([{text: d.at}, {text: d.kind, cls: "kind-" + d.kind},
        {text: d.namespace + "/" + d.name}, {text: d.clusterQueue}, {text: d.reason},
        {text: d.message, cls: "message"}]));
    });
    return box;
  }
  function render(model) {
    var totals = model.totals;
    ["admitted", "pending", "reserving", "clusterQueues", "cohorts"].forEach(function (key) {
      document.getElementById("total-" + key).textContent = String(totals[key]);
    });
    document.getElementById("meta").textContent = "Answered by replica " + model.replica.name + " (" +
      model.replica.role + ") at " + model.generatedAt +
      (model.ready ? "" : " \\u2013 this replica has not listed the cluster yet");
    var byName = {};
    model.clusterQueues.forEach(function (cq) { byName[cq.name] = cq; });
    put("tree", model.tree.length ? tree(model.tree, byName, true) : el("p", "muted", "No ClusterQueues."));
    put("pending", pending(model.pending));
    put("recent", recent(model.recent));
  }
  function status(text, failed) {
    var node = document.getElementById("status");
    node.textContent = text;
    node.className = failed ? "error" : "muted";
  }
  function schedule() {
    if (timer !== null) { clearTimeout(timer); }
    timer = setTimeout(poll, delay);
  }
  function poll() {
    timer = null;
    if (document.hidden) { return; }
    fetch(location.pathname + "?format=json", {headers: {"Accept": "application/json"},
      credentials: "same-origin", cache: "no-store"})
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (model) { render(model); delay = POLL_MS; status("Updates every 5 s.", false); })
      .catch(function (error) {
        delay = Math.min(delay * 2, MAX_POLL_MS);
        status("Update failed (" + error.message + "); retrying in " + delay / 1000 + " s.", true);
      })
      .finally(schedule);
  }
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && timer === null) { poll(); }
  });
  render(JSON.parse(document.getElementById("initial").textContent));
  status("Updates every 5 s.", false);
  schedule();
})();
"""

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>kueue-webhook: queues</title>
<style>{style}</style>
</head>
<body>
<header>
<h1>Queues</h1>
<div id="meta" class="muted"></div>
<div id="status" class="muted"></div>
<div id="totals">
<div class="stat"><span class="num" id="total-admitted">-</span>admitted</div>
<div class="stat"><span class="num" id="total-pending">-</span>pending</div>
<div class="stat"><span class="num" id="total-reserving">-</span>holding quota</div>
<div class="stat"><span class="num" id="total-clusterQueues">-</span>ClusterQueues</div>
<div class="stat"><span class="num" id="total-cohorts">-</span>cohorts</div>
</div>
</header>
<main>
<h2>Cohorts and ClusterQueues</h2>
<div id="tree"></div>
<h2>Pending workloads, in queue order</h2>
<div id="pending"></div>
<h2>Recent admissions, preemptions and evictions</h2>
<div id="recent"></div>
</main>
<script type="application/json" id="initial">{initial}</script>
<script>{script}</script>
</body>
</html>
"""


def _hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


#: the page's own script and style, by hash; everything else refused (``img-src data:`` is the empty icon)
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        f"script-src {_hash(SCRIPT)}",
        f"style-src {_hash(STYLE)}",
        "connect-src 'self'",
        "img-src data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)

_JSON_ESCAPES = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def embed_json(document: str) -> str:
    """A JSON text made safe inside an HTML ``<script>`` element: the characters that could end it or be
    read as markup are written as JSON escapes, which ``JSON.parse`` turns back into the same string."""
    return document.translate(_JSON_ESCAPES)


def render_page(document: str) -> bytes:
    """The page with ``document`` (the dashboard's JSON, as text) embedded for the first paint."""
    return _PAGE.format(style=STYLE, script=SCRIPT, initial=embed_json(document)).encode()

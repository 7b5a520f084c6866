// The management UI: plain JavaScript over the node's HTTP API (docs/use/ui.md). Every page is built with DOM
// calls (text, never HTML, from the API), every call's error is shown where it happened, and no page is
// left blank: a page that cannot load says why.
"use strict";

const AUTH_KEY = "quorumq.auth";
const VHOST_KEY = "quorumq.vhost";
const REFRESH_MS = 5000;
const HISTORY_POINTS = 120; // ten minutes of overview samples, one every REFRESH_MS
const RATES = [["publish", "#2764c5"], ["deliver_get", "#18794e"], ["ack", "#b26b00"], ["redeliver", "#b42318"]];
const EXCHANGE_TYPES = ["direct", "fanout", "topic", "headers"];
const REVISION_HEADER = "X-Quorumq-Routing-Revision";
const DETAIL_PAGES = { queue: "queues", exchange: "exchanges" }; // a page of one object, and the list it is in

const state = {
  auth: sessionStorage.getItem(AUTH_KEY),
  vhost: sessionStorage.getItem(VHOST_KEY) || "/", // the vhost whose queues and exchanges the pages show
  admin: false,
  history: [],
  timer: null,
  queues: { page: 1, size: 20, name: "", sort: "name", reverse: false },
  routingRevision: 0, // the highest an answer named: sent with every request (docs/use/routing.md)
};

class ApiError extends Error {
  constructor(status, code, reason) {
    super(`${reason} (${code}, HTTP ${status})`);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body, auth = state.auth) {
  const headers = { Accept: "application/json" };
  if (auth) headers.Authorization = auth;
  // every read of exchanges and bindings, and a publish through one, waits for our own routing changes
  if (state.routingRevision) headers[REVISION_HEADER] = String(state.routingRevision);
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let answer;
  try {
    answer = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    throw new ApiError(0, "unreachable", `the node did not answer: ${err.message}`);
  }
  state.routingRevision = Math.max(state.routingRevision, Number(answer.headers.get(REVISION_HEADER)) || 0);
  const text = await answer.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (err) { data = { error: "bad_answer", reason: text.slice(0, 200) }; }
  if (!answer.ok) {
    if (answer.status === 401 && auth === state.auth) logOut();
    throw new ApiError(answer.status, (data && data.error) || "http_error", (data && data.reason) || answer.statusText);
  }
  return data;
}

// -- building the page -------------------------------------------------------------------------

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function table(columns, rows, options = {}) {
  if (!rows.length) return el("p", { class: "empty", text: options.empty || "Nothing here." });
  const head = el("tr", {}, columns.map((column) => {
    const sortable = options.onSort && column.sort;
    const sorted = sortable && options.sorted === column.sort;
    const classes = [column.num ? "num" : "", sortable ? "sortable" : "", sorted ? "sorted" : "", sorted && options.reverse ? "reverse" : ""];
    return el("th", { class: classes.join(" ").trim() || null, onclick: sortable ? () => options.onSort(column.sort) : null }, column.title);
  }));
  const body = rows.map((row) => el("tr", {}, columns.map((column) => {
    const value = column.value(row);
    return el("td", { class: column.num ? "num" : null }, value instanceof Node ? value : text(value));
  })));
  return el("table", { id: options.id }, el("thead", {}, head), el("tbody", {}, body));
}

function text(value) {
  if (value === null || value === undefined) return "";
  if (Array.isArray(value)) return value.map(text).join(", ");
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

function stat(label, value, id) {
  return el("div", { class: "stat", id }, el("div", { class: "value", text: text(value) }), el("div", { class: "label", text: label }));
}

function rate(stats, kind) {
  const details = stats && stats[`${kind}_details`];
  return details ? details.rate : 0;
}

function bytes(n) {
  if (n === undefined || n === null) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function duration(ms) {
  if (ms === undefined || ms === null) return "";
  const s = Math.floor(ms / 1000);
  const [d, h, m] = [Math.floor(s / 86400), Math.floor((s % 86400) / 3600), Math.floor((s % 3600) / 60)];
  return d ? `${d}d ${h}h` : h ? `${h}h ${m}m` : `${m}m ${s % 60}s`;
}

function swatch(label, colour) {
  const span = el("span", { text: label });
  span.style.setProperty("--swatch", colour); // the style object, not an attribute: the page's CSP allows no inline style
  return span;
}

function link(href, label) { return el("a", { href, text: label }); }

function queueLink(name) { return link(`#/queue/${encodeURIComponent(name)}`, name); }

// The selected vhost in a path (`/` is `%2F`): RabbitMQ's `/api/queues/{vhost}/{name}`, and the queues of `/`
// at their one-segment path.
function v() { return encodeURIComponent(state.vhost); }

function q(name) {
  return state.vhost === "/" ? `/api/queues/${encodeURIComponent(name)}` : `/api/queues/${v()}/${encodeURIComponent(name)}`;
}

// An exchange's path: the default exchange, "", is `amq.default` in a path.
function x(name) { return `/api/exchanges/${v()}/${encodeURIComponent(name || "amq.default")}`; }

function exchangeLink(name) { return link(`#/exchange/${encodeURIComponent(name || "amq.default")}`, name || "(AMQP default)"); }

function bindingPath(source, destinationType, destination) {
  return `/api/bindings/${v()}/e/${encodeURIComponent(source)}/${destinationType === "queue" ? "q" : "e"}/${encodeURIComponent(destination)}`;
}

function showError(err, where) {
  const message = err instanceof ApiError ? err.message : `unexpected: ${err.message || err}`;
  if (where) { where.replaceChildren(el("div", { class: "error", role: "alert", text: message })); return; }
  const banner = document.getElementById("error");
  banner.textContent = message;
  banner.hidden = false;
}

function clearError() { document.getElementById("error").hidden = true; }

// An action button or form: runs `work`, shows its error beside it, then refreshes the page.
function action(work, refresh = true) {
  return async (event) => {
    if (event) event.preventDefault();
    clearError();
    try {
      await work(event);
      if (refresh) await render();
    } catch (err) {
      showError(err);
    }
  };
}

function field(form, name) { return form.elements[name].value.trim(); }

function checkbox(name, label, checked = false) {
  return el("label", { class: "check" }, el("input", { name, type: "checkbox", checked }), label);
}

function jsonField(form, name, fallback) {
  const raw = field(form, name);
  if (!raw) return fallback;
  try { return JSON.parse(raw); } catch (err) { throw new ApiError(0, "bad_input", `${name} is not JSON: ${err.message}`); }
}

// A destructive action button: asks first, and does nothing unless the operator agrees.
function confirmed(question, work) {
  return action(async () => { if (window.confirm(question)) await work(); });
}

const PERMISSIONS = ["configure", "write", "read"];

// The user form's save: only what the operator changed. A password or tags left as they were are not
// sent, and the permissions only when they differ from the user's (any typed, for a new user).
async function saveUser(form, user) {
  const path = `/api/users/${encodeURIComponent(field(form, "name"))}`;
  const password = form.elements.password.value;
  const tags = { keep: undefined, administrator: ["administrator"], none: [] }[field(form, "tags")];
  if (!user || password || tags) await api("PUT", path, { ...(password ? { password } : {}), ...(tags ? { tags } : {}) });
  const permissions = Object.fromEntries(PERMISSIONS.map((kind) => [kind, field(form, kind)]));
  const before = user ? user.permissions : { configure: "", write: "", read: "" };
  if (PERMISSIONS.some((kind) => permissions[kind] !== before[kind])) await api("PUT", `${path}/permissions`, permissions);
}

// -- pages -------------------------------------------------------------------------------------

const pages = {
  async overview(main) {
    const [overview, nodes] = await Promise.all([api("GET", "/api/overview"), api("GET", "/api/nodes")]);
    const stats = overview.message_stats;
    state.history.push({ at: Date.now(), rates: RATES.map(([kind]) => rate(stats, kind)) });
    state.history = state.history.slice(-HISTORY_POINTS);
    const totals = overview.queue_totals;
    const objects = overview.object_totals;
    const roles = nodes.reduce((sum, n) => ({ led: sum.led + (n.raft_groups_led || 0), hosted: sum.hosted + (n.raft_groups || 0) }), { led: 0, hosted: 0 });
    const canvas = el("canvas", { id: "rates-chart", width: 1200, height: 220 });
    main.replaceChildren(
      el("h1", { text: "Overview" }),
      el("div", { class: "cards" },
        stat("messages", totals.messages, "total-messages"),
        stat("ready", totals.messages_ready, "total-ready"),
        stat("unacked", totals.messages_unacknowledged, "total-unacked"),
        stat("queues", objects.queues, "total-queues"),
        stat("consumers", objects.consumers),
        stat("connections", objects.connections),
        stat("Raft groups led / hosted", `${roles.led} / ${roles.hosted}`)),
      el("h2", { text: "Message rates (per second)" }),
      el("div", { class: "cards" }, RATES.map(([kind]) => stat(kind, rate(stats, kind).toFixed(1), `rate-${kind}`))),
      canvas,
      el("div", { class: "legend" }, RATES.map(([kind, colour]) => swatch(kind, colour))),
      el("h2", { text: "Nodes" }),
      nodeTable(nodes));
    drawRates(canvas, state.history);
    schedule(REFRESH_MS);
  },

  async queues(main) {
    const view = state.queues;
    const params = new URLSearchParams({ page: view.page, page_size: view.size, sort: view.sort, sort_reverse: view.reverse });
    if (view.name) { params.set("name", view.name); }
    const page = await api("GET", `/api/queues/${v()}?${params}`);
    const filter = el("input", { id: "queue-filter", placeholder: "filter by name", value: view.name });
    filter.addEventListener("change", () => { view.name = filter.value.trim(); view.page = 1; render(); });
    const sortBy = (key) => { view.reverse = view.sort === key ? !view.reverse : false; view.sort = key; render(); };
    const columns = [
      { title: "Name", sort: "name", value: (row) => queueLink(row.name) },
      { title: "State", sort: "state", value: (row) => el("span", { class: row.state === "running" ? "up" : "down", text: row.state }) },
      { title: "Ready", sort: "messages_ready", num: true, value: (row) => row.messages_ready },
      { title: "Unacked", sort: "messages_unacknowledged", num: true, value: (row) => row.messages_unacknowledged },
      { title: "Total", sort: "messages", num: true, value: (row) => row.messages },
      { title: "Publish/s", sort: "message_stats.publish_details.rate", num: true, value: (row) => rate(row.message_stats, "publish").toFixed(1) },
      { title: "Deliver/s", sort: "message_stats.deliver_get_details.rate", num: true, value: (row) => rate(row.message_stats, "deliver_get").toFixed(1) },
      { title: "Consumers", sort: "consumers", num: true, value: (row) => row.consumers },
      { title: "Leader", sort: "leader", value: (row) => row.leader },
      { title: "Online", value: (row) => `${(row.online || []).length} / ${(row.members || []).length}` },
      { title: "Policy", sort: "policy", value: (row) => row.policy },
      { title: "Arguments", value: (row) => el("pre", { text: JSON.stringify(row.arguments) }) },
    ];
    const declare = el("form", { class: "inline", id: "declare-form", onsubmit: action(async (event) => {
      const form = event.target;
      await api("PUT", q(field(form, "name")), { arguments: jsonField(form, "arguments", {}) });
    }) },
    el("label", {}, "Name", el("input", { name: "name", required: true })),
    el("label", {}, "Arguments (JSON)", el("textarea", { name: "arguments", placeholder: '{"x-max-length": 10000}' })),
    el("button", { type: "submit", text: "Declare queue" }));
    const pager = el("div", { class: "pager" },
      el("button", { class: "secondary", type: "button", disabled: view.page <= 1, onclick: () => { view.page -= 1; render(); }, text: "Previous" }),
      el("span", { id: "queue-page", text: `page ${page.page} of ${page.page_count} (${page.filtered_count} of ${page.total_count} queues)` }),
      el("button", { class: "secondary", type: "button", disabled: view.page >= page.page_count, onclick: () => { view.page += 1; render(); }, text: "Next" }));
    main.replaceChildren(
      el("h1", { text: "Queues" }),
      el("div", { class: "toolbar" }, filter),
      table(columns, page.items, { id: "queues-table", onSort: sortBy, sorted: view.sort, reverse: view.reverse, empty: "No queue matches." }),
      pager,
      el("h2", { text: "Declare a queue" }),
      declare);
  },

  async queue(main, name) {
    const [info, members, consumers, nodes, bindings] = await Promise.all([
      api("GET", q(name)), api("GET", `${q(name)}/members`), api("GET", `${q(name)}/consumers`), api("GET", "/api/nodes"), api("GET", `/api/bindings/${v()}`),
    ]);
    const result = el("div", { class: "result", id: "queue-result" });
    const memberNames = members.members.map((m) => m.node);
    const voters = members.members.filter((m) => m.membership === "voter" && m.node !== info.leader).map((m) => m.node);
    const others = nodes.map((n) => n.name).filter((n) => !memberNames.includes(n));
    const show = async (shown) => { // the page again (its counts moved), then what the action answered
      await render();
      const fresh = document.getElementById("queue-result");
      if (fresh) fresh.replaceChildren(shown);
    };
    main.replaceChildren(
      el("h1", {}, "Queue ", el("span", { id: "queue-name", text: name })),
      el("div", { class: "cards" },
        stat("ready", info.messages_ready, "queue-ready"),
        stat("unacked", info.messages_unacknowledged, "queue-unacked"),
        stat("total", info.messages, "queue-total"),
        stat("delayed", info.messages_delayed),
        ...(info.effective_arguments && info.effective_arguments["x-dedupe-window"] !== undefined
          ? [stat("dedupe ids", info.dedupe_ids, "queue-dedupe-ids"), stat("duplicates refused", info.dedupe_refused, "queue-dedupe-refused")]
          : []),
        ...(info.effective_arguments && info.effective_arguments["x-message-groups"]
          ? [stat("groups", info.groups, "queue-groups"), stat("groups with one out", info.groups_blocked, "queue-groups-blocked")]
          : []),
        stat("consumers", info.consumers),
        stat("leader", info.leader, "queue-leader"),
        stat("publish/s", rate(info.message_stats, "publish").toFixed(1)),
        stat("deliver/s", rate(info.message_stats, "deliver_get").toFixed(1))),
      el("h2", { text: "Arguments" }),
      table([{ title: "declared", value: (r) => el("pre", { text: JSON.stringify(r.arguments, null, 1) }) },
        { title: "policy", value: (r) => r.policy },
        { title: "operator policy", value: (r) => r.operator_policy },
        { title: "in force", value: (r) => el("pre", { text: JSON.stringify(r.effective_arguments, null, 1) }) }], [info]),
      el("h2", { text: "Bindings" }),
      bindingTable([{ title: "From exchange", value: (b) => exchangeLink(b.source) }],
        bindings.filter((b) => b.destination_type === "queue" && b.destination === name), "queue-bindings-table"),
      el("h2", { text: "Replicas" }),
      table([
        { title: "Node", value: (m) => m.node },
        { title: "Raft state", value: (m) => m.raft_state },
        { title: "Membership", value: (m) => m.membership },
        { title: "Up", value: (m) => el("span", { class: m.up ? "up" : "down", text: m.up ? "yes" : "no" }) },
        { title: "Last index", num: true, value: (m) => m.last_log_index },
        { title: "Commit", num: true, value: (m) => m.commit_index },
        { title: "Term", num: true, value: (m) => m.term },
        { title: "Lag", num: true, value: (m) => m.lag },
        { title: "", value: (m) => el("button", { class: "secondary", type: "button", onclick: confirmed(`Remove the replica of '${name}' on ${m.node}?`, () => api("DELETE", `${q(name)}/members/${encodeURIComponent(m.node)}`)), text: "Remove" }) },
      ], members.members, { id: "replicas-table" }),
      el("form", { class: "inline", id: "move-leader", onsubmit: action((event) => api("POST", `${q(name)}/leader`, { node: field(event.target, "node") })) },
        el("label", {}, "Move leader to", el("select", { name: "node" }, voters.map((n) => el("option", { value: n, text: n })))),
        el("button", { type: "submit", disabled: !voters.length, text: "Move leader" })),
      el("form", { class: "inline", id: "add-replica", onsubmit: action((event) => api("POST", `${q(name)}/members`, { node: field(event.target, "node") })) },
        el("label", {}, "Add a replica on", el("select", { name: "node" }, others.map((n) => el("option", { value: n, text: n })))),
        el("button", { type: "submit", disabled: !others.length, text: "Add replica" })),
      el("h2", { text: "Consumers" }),
      table([
        { title: "Tag", value: (c) => c.tag },
        { title: "Prefetch", num: true, value: (c) => c.prefetch },
        { title: "Priority", num: true, value: (c) => c.priority },
        { title: "Active", value: (c) => (c.active ? "yes" : "no") },
        { title: "Unacked", num: true, value: (c) => c.unacknowledged },
        { title: "Kind", value: (c) => (c.durable ? "durable" : c.auto_ack ? "auto-ack" : c.since_ms !== null ? "reader" : "manual ack") },
      ], consumers, { empty: "No consumers." }),
      el("h2", { text: "Publish" }),
      el("form", { class: "inline", id: "publish-form", onsubmit: action(async (event) => {
        const form = event.target;
        const message = messageOf(form);
        const count = Math.max(1, Number(field(form, "count") || 1));
        const answer = await api("POST", `${q(name)}/messages`, { messages: Array.from({ length: count }, () => message) });
        const duplicates = (answer.duplicates || []).length;
        const refused = duplicates ? ` (${duplicates} duplicate${duplicates > 1 ? "s" : ""} by message id, not enqueued again)` : "";
        await show(el("p", { text: `published ${answer.ids.length}, ids ${answer.ids.join(", ")}${refused}` }));
      }, false) },
      messageFields(),
      el("label", {}, "Copies", el("input", { name: "count", type: "number", min: 1, max: 1000, value: 1 })),
      el("button", { type: "submit", text: "Publish" })),
      el("h2", { text: "Get and peek" }),
      el("form", { class: "inline", id: "get-form", onsubmit: action(async (event) => {
        const form = event.target;
        const mode = field(form, "ack");
        const got = await api("POST", `${q(name)}/get`, { count: Number(field(form, "count")), ack: mode === "auto" ? "auto" : "manual" });
        if (mode === "requeue" && got.length) { // RabbitMQ's default: look, then give them back (a plain return)
          await api("POST", `${q(name)}/nack`, { ids: got.map((d) => d.id), requeue: true, failed: false });
        }
        await show(deliveryTable(got));
      }, false) },
      el("label", {}, "Count", el("input", { name: "count", type: "number", min: 1, max: 1000, value: 1 })),
      el("label", {}, "Then", el("select", { name: "ack" },
        el("option", { value: "requeue", text: "give them back (requeue)" }),
        el("option", { value: "auto", text: "take them (auto-ack)" }),
        el("option", { value: "manual", text: "hold them (manual ack, until the consumer timeout)" }))),
      el("button", { type: "submit", text: "Get" })),
      el("form", { class: "inline", id: "peek-form", onsubmit: action(async (event) => {
        const peeked = await api("GET", `${q(name)}/messages/peek?position=${Number(field(event.target, "position"))}`);
        await show(deliveryTable([peeked]));
      }, false) },
      el("label", {}, "Position", el("input", { name: "position", type: "number", min: 1, value: 1 })),
      el("button", { class: "secondary", type: "submit", text: "Peek" })),
      result,
      el("h2", { text: "Danger" }),
      el("div", { class: "toolbar" },
        el("button", { class: "danger", type: "button", id: "purge", onclick: action(async () => {
          if (!window.confirm(`Remove every ready message of '${name}'?`)) return;
          const answer = await api("DELETE", `${q(name)}/contents`);
          await show(el("p", { text: `purged ${answer.purged} message(s)` }));
        }, false), text: "Purge ready messages" }),
        el("button", { class: "danger", type: "button", id: "delete-queue", onclick: action(async () => {
          if (!window.confirm(`Delete queue '${name}' and its messages?`)) return;
          await api("DELETE", q(name));
          window.location.hash = "#/queues";
        }, false), text: "Delete queue" })));
  },

  async exchanges(main) {
    const exchanges = await api("GET", `/api/exchanges/${v()}`);
    main.replaceChildren(
      el("h1", { text: "Exchanges" }),
      table([
        { title: "Name", value: (e) => exchangeLink(e.name) },
        { title: "Type", value: (e) => e.type },
        { title: "Flags", value: (e) => exchangeFlags(e) },
        { title: "Alternate exchange", value: (e) => e.arguments["alternate-exchange"] },
      ], exchanges, { id: "exchanges-table" }),
      el("h2", { text: "Declare an exchange" }),
      el("form", { class: "inline", id: "exchange-form", onsubmit: action((event) => {
        const form = event.target;
        const alternate = field(form, "alternate");
        return api("PUT", x(field(form, "name")), {
          type: field(form, "type"),
          durable: form.elements.durable.checked,
          auto_delete: form.elements.auto_delete.checked,
          internal: form.elements.internal.checked,
          arguments: { ...jsonField(form, "arguments", {}), ...(alternate ? { "alternate-exchange": alternate } : {}) },
        });
      }) },
      el("label", {}, "Name", el("input", { name: "name", required: true })),
      el("label", {}, "Type", el("select", { name: "type" }, EXCHANGE_TYPES.map((t) => el("option", { value: t, text: t })))),
      checkbox("durable", "durable", true),
      checkbox("auto_delete", "auto-delete"),
      checkbox("internal", "internal"),
      el("label", {}, "Alternate exchange", el("input", { name: "alternate" })),
      el("label", {}, "Arguments (JSON)", el("textarea", { name: "arguments", placeholder: '{"alternate-exchange": "unrouted"}' })),
      el("button", { type: "submit", text: "Declare exchange" })));
  },

  async exchange(main, pathName) {
    const info = await api("GET", x(pathName));
    const name = info.name; // "" for the default exchange, which takes no bindings and cannot be deleted
    const bindings = name ? await api("GET", `${x(name)}/bindings/source`) : [];
    const result = el("div", { class: "result", id: "exchange-result" });
    main.replaceChildren(
      el("h1", {}, "Exchange ", el("span", { id: "exchange-name", text: name || "(AMQP default)" })),
      table([
        { title: "Type", value: (e) => e.type },
        { title: "Flags", value: (e) => exchangeFlags(e) },
        { title: "Arguments", value: (e) => el("pre", { text: JSON.stringify(e.arguments) }) },
      ], [info]),
      ...(name ? [
        el("h2", { text: "Bindings from this exchange" }),
        bindingTable([
          { title: "Destination", value: (b) => (b.destination_type === "queue" ? queueLink(b.destination) : exchangeLink(b.destination)) },
          { title: "Type", value: (b) => b.destination_type },
        ], bindings, "bindings-table"),
        el("form", { class: "inline", id: "bind-form", onsubmit: action((event) => {
          const form = event.target;
          return api("POST", bindingPath(name, field(form, "destination_type"), field(form, "destination")), {
            routing_key: field(form, "routing_key"), arguments: jsonField(form, "arguments", {}),
          });
        }) },
        el("label", {}, "Bind to", el("select", { name: "destination_type" },
          el("option", { value: "queue", text: "queue" }),
          el("option", { value: "exchange", text: "exchange" }))),
        el("label", {}, "Destination", el("input", { name: "destination", required: true })),
        el("label", {}, "Routing key", el("input", { name: "routing_key" })),
        el("label", {}, "Arguments (JSON)", el("textarea", { name: "arguments", placeholder: '{"x-match": "any"}' })),
        el("button", { type: "submit", text: "Bind" })),
      ] : [el("p", { class: "note", text: "The default exchange routes a message to the queue its routing key names; it takes no bindings." })]),
      el("h2", { text: "Publish" }),
      el("form", { class: "inline", id: "exchange-publish-form", onsubmit: action(async (event) => {
        const form = event.target;
        const mandatory = form.elements.mandatory.checked;
        const answer = await api("POST", `${x(name)}/publish`,
          { routing_key: field(form, "routing_key"), mandatory, messages: [messageOf(form)] });
        const routed = Object.entries(answer.routed).map(([queue, copy]) => el("li", {}, queueLink(queue), ` (id ${copy.ids.join(", ")})`));
        result.replaceChildren(routed.length
          ? el("div", {}, "routed to", el("ul", { id: "routed" }, routed))
          : el("p", { text: `unroutable: it reached no queue${mandatory ? " (returned, mandatory)" : " and was dropped"}` }));
      }, false) },
      el("label", {}, "Routing key", el("input", { name: "routing_key" })),
      messageFields(),
      checkbox("mandatory", "mandatory"),
      el("button", { type: "submit", text: "Publish" })),
      result,
      ...(name && !name.startsWith("amq.") ? [ // amq.* are the built-in exchanges
        el("h2", { text: "Danger" }),
        el("form", { class: "inline", id: "delete-exchange", onsubmit: action(async (event) => {
          if (!window.confirm(`Delete exchange '${name}' and its bindings?`)) return;
          await api("DELETE", `${x(name)}${event.target.elements.if_unused.checked ? "?if-unused=true" : ""}`);
          window.location.hash = "#/exchanges";
        }, false) },
        checkbox("if_unused", "only if it is the source of no binding"),
        el("button", { class: "danger", type: "submit", text: "Delete exchange" })),
      ] : []));
  },

  async nodes(main) {
    main.replaceChildren(el("h1", { text: "Nodes" }), nodeTable(await api("GET", "/api/nodes")));
  },

  async "dead-letters"(main) {
    const queues = (await api("GET", `/api/queues/${v()}`)).filter((row) => row.effective_arguments);
    const sources = queues.filter((row) => row.effective_arguments["x-dead-letter-queue"]);
    const byName = Object.fromEntries(queues.map((row) => [row.name, row]));
    const targets = [...new Set(sources.map((row) => row.effective_arguments["x-dead-letter-queue"]))];
    const detail = el("div", { id: "dead-letter-detail" });
    main.replaceChildren(
      el("h1", { text: "Dead letters" }),
      table([
        { title: "Queue", value: (row) => queueLink(row.name) },
        { title: "Dead-letter queue", value: (row) => row.effective_arguments["x-dead-letter-queue"] },
        { title: "Strategy", value: (row) => row.effective_arguments["x-dead-letter-strategy"] || "at-most-once" },
        { title: "Dead-lettered (by reason)", value: (row) => text(row.dead_lettered) },
      ], sources, { empty: "No queue dead-letters into another." }),
      el("h2", { text: "Dead-letter queues" }),
      table([
        { title: "Queue", value: (name) => el("a", { href: "#", onclick: (e) => { e.preventDefault(); deadLetterQueue(detail, name); }, text: name }) },
        { title: "Messages", num: true, value: (name) => (byName[name] ? byName[name].messages : "not declared") },
      ], targets, { empty: "No dead-letter queues." }),
      detail);
  },

  async users(main) {
    const users = await api("GET", "/api/users");
    const known = Object.fromEntries(users.map((u) => [u.name, u]));
    const form = el("form", { class: "inline", id: "user-form", onsubmit: action(() => saveUser(form, known[field(form, "name")])) },
      el("label", {}, "Name", el("input", { name: "name", required: true, list: "user-names" })),
      el("datalist", { id: "user-names" }, users.map((u) => el("option", { value: u.name }))),
      el("label", {}, "Password", el("input", { name: "password", type: "password", placeholder: "unchanged" })),
      el("label", {}, "Tags", el("select", { name: "tags" },
        el("option", { value: "keep", text: "keep (none for a new user)" }),
        el("option", { value: "administrator", text: "administrator" }),
        el("option", { value: "none", text: "none" }))),
      PERMISSIONS.map((kind) => el("label", {}, kind[0].toUpperCase() + kind.slice(1), el("input", { name: kind }))),
      el("button", { type: "submit", text: "Save" }));
    // Naming a user shows its permissions as they are: the form then changes only what the operator edits.
    form.elements.name.addEventListener("input", () => {
      const user = known[field(form, "name")];
      for (const kind of PERMISSIONS) form.elements[kind].value = user ? user.permissions[kind] : "";
    });
    main.replaceChildren(
      el("h1", { text: "Users and permissions" }),
      table([
        { title: "User", value: (u) => u.name },
        { title: "Tags", value: (u) => u.tags },
        { title: "Configure", value: (u) => u.permissions.configure },
        { title: "Write", value: (u) => u.permissions.write },
        { title: "Read", value: (u) => u.permissions.read },
        { title: "", value: (u) => el("button", { class: "danger", type: "button", onclick: confirmed(`Delete user '${u.name}'?`, () => api("DELETE", `/api/users/${encodeURIComponent(u.name)}`)), text: "Delete" }) },
      ], users),
      el("h2", { text: "Add or change a user" }),
      form);
  },

  async policies(main) {
    const [policies, operatorPolicies] = await Promise.all([api("GET", "/api/policies"), api("GET", "/api/operator-policies")]);
    // An operator policy sets limits only, over each matching queue's own and its policy's (the smallest wins).
    const policyTable = (kind, path, rows, id) => table([
      { title: "Name", value: (p) => p.name },
      { title: "Vhost", value: (p) => p.vhost },
      { title: "Pattern", value: (p) => p.pattern },
      { title: "Priority", num: true, value: (p) => p.priority },
      { title: "Definition", value: (p) => el("pre", { text: JSON.stringify(p.definition) }) },
      { title: "", value: (p) => el("button", { class: "danger", type: "button", onclick: confirmed(`Clear ${kind} '${p.name}'?`, () => api("DELETE", `${path}/${encodeURIComponent(p.vhost)}/${encodeURIComponent(p.name)}`)), text: "Clear" }) },
    ], rows, { empty: `No ${kind}.`, id });
    main.replaceChildren(
      el("h1", { text: "Policies" }),
      policyTable("policy", "/api/policies", policies, "policies-table"),
      el("h2", { text: "Operator policies" }),
      policyTable("operator policy", "/api/operator-policies", operatorPolicies, "operator-policies-table"),
      el("h2", { text: "Set a policy" }),
      el("form", { class: "inline", id: "policy-form", onsubmit: action((event) => {
        const form = event.target;
        const path = field(form, "kind") === "operator" ? "/api/operator-policies" : "/api/policies";
        return api("PUT", `${path}/${v()}/${encodeURIComponent(field(form, "name"))}`, {
          pattern: field(form, "pattern"), priority: Number(field(form, "priority") || 0), definition: jsonField(form, "definition", {}),
        });
      }) },
      el("label", {}, "Kind", el("select", { name: "kind" },
        el("option", { value: "policy", text: "policy" }),
        el("option", { value: "operator", text: "operator policy (limits over every matching queue's)" }))),
      el("label", {}, "Name", el("input", { name: "name", required: true })),
      el("label", {}, "Pattern (RE2)", el("input", { name: "pattern", required: true })),
      el("label", {}, "Priority", el("input", { name: "priority", type: "number", value: 0 })),
      el("label", {}, "Definition (JSON)", el("textarea", { name: "definition", placeholder: '{"max-length": 100000}', required: true })),
      el("button", { type: "submit", text: `Set policy in vhost ${state.vhost}` })));
  },
};

function nodeTable(nodes) {
  return table([
    { title: "Name", value: (n) => n.name },
    { title: "HTTP", value: (n) => n.http },
    { title: "Status", value: (n) => el("span", { class: n.running ? "up" : "down", text: n.running ? "running" : n.status }) },
    { title: "Uptime", value: (n) => duration(n.uptime) },
    { title: "Memory", num: true, value: (n) => bytes(n.mem_used) },
    { title: "File descriptors", num: true, value: (n) => n.fd_used },
    { title: "Queues led", num: true, value: (n) => n.queues_led },
    { title: "Raft groups", num: true, value: (n) => n.raft_groups },
    { title: "Disk free", num: true, value: (n) => bytes(n.disk_free) },
    { title: "Alarms", value: (n) => nodeAlarms(n) },
    { title: "Unreachable", value: (n) => n.partitions },
  ], nodes, { id: "nodes-table" });
}

// A node's resource alarms as it reported them: publishes to queues with a replica on it wait.
function nodeAlarms(n) {
  if (!n.running) return "";
  const raised = [n.disk_free_alarm && "disk", n.mem_alarm && "memory"].filter(Boolean);
  return raised.length
    ? el("span", { class: "down", text: `${raised.join(", ")} alarm`, title: `disk free limit ${bytes(n.disk_free_limit)}, memory limit ${bytes(n.mem_limit)}` })
    : "none";
}

// A publish form's message fields, and the message they make.
function messageFields() {
  return [
    el("label", {}, "Body", el("textarea", { name: "body", required: true })),
    el("label", {}, "Headers (JSON)", el("input", { name: "headers", placeholder: '{"k": "v"}' })),
    el("label", {}, "Priority", el("input", { name: "priority", type: "number", min: 0, max: 255, value: 0 })),
    el("label", {}, "Message id", el("input", { name: "message_id", maxlength: 256, placeholder: "deduplicates with x-dedupe-window" })),
    el("label", {}, "Group", el("input", { name: "group", maxlength: 255, placeholder: "one at a time, in order, with x-message-groups" })),
  ];
}

function messageOf(form) {
  const message = { body: form.elements.body.value };
  const headers = jsonField(form, "headers", null);
  if (headers) message.headers = headers;
  const priority = Number(field(form, "priority") || 0);
  if (priority) message.priority = priority;
  const messageId = field(form, "message_id");
  if (messageId) message.message_id = messageId;
  const group = field(form, "group");
  if (group) message.group = group;
  return message;
}

// Bindings after the `leading` columns that name their ends, each with its unbind button (which asks first).
function bindingTable(leading, rows, id) {
  return table([
    ...leading,
    { title: "Routing key", value: (b) => b.routing_key },
    { title: "Arguments", value: (b) => el("pre", { text: JSON.stringify(b.arguments) }) },
    { title: "", value: (b) => el("button", { class: "secondary", type: "button", text: "Unbind", onclick: confirmed(
      `Unbind ${b.destination_type} '${b.destination}' from exchange '${b.source}' (routing key '${b.routing_key}')?`,
      () => api("DELETE", `${bindingPath(b.source, b.destination_type, b.destination)}/${encodeURIComponent(b.properties_key)}`)) }) },
  ], rows, { id, empty: "No bindings." });
}

function exchangeFlags(e) {
  return [e.durable && "durable", e.auto_delete && "auto-delete", e.internal && "internal"].filter(Boolean);
}

function deliveryTable(rows) {
  return table([
    { title: "Id", num: true, value: (d) => d.id },
    { title: "Deliveries", num: true, value: (d) => d.delivery_count },
    { title: "Headers", value: (d) => el("pre", { text: JSON.stringify(d.headers || {}) }) },
    { title: "Body", value: (d) => el("pre", { text: d.encoding === "base64" ? `base64:${d.body}` : d.body }) },
  ], rows, { id: "deliveries-table", empty: "No message." });
}

async function deadLetterQueue(detail, name) {
  detail.replaceChildren(el("p", { class: "loading", text: `Loading ${name}...` }));
  try {
    const [messages, tasks] = await Promise.all([api("GET", `${q(name)}/messages?limit=20`), api("GET", `${q(name)}/redrive`)]);
    detail.replaceChildren(
      el("h2", { text: `${name}: the first messages` }),
      deliveryTable(messages),
      el("div", { class: "toolbar" }, el("button", { type: "button", id: "redrive", onclick: async () => {
        try {
          await api("POST", `${q(name)}/redrive`, {});
          await deadLetterQueue(detail, name);
        } catch (err) { showError(err); }
      }, text: "Redrive to where they died" })),
      table([
        { title: "Task", value: (t) => t.task },
        { title: "State", value: (t) => t.state },
        { title: "Moved", num: true, value: (t) => `${t.moved} / ${t.total}` },
        { title: "To", value: (t) => t.to || "x-death" },
        { title: "Reason", value: (t) => t.reason },
      ], tasks, { id: "redrive-tasks", empty: "No redrive task yet." }));
  } catch (err) {
    showError(err, detail);
  }
}

function drawRates(canvas, history) {
  const context = canvas.getContext("2d");
  const { width, height } = canvas;
  context.clearRect(0, 0, width, height);
  const top = Math.max(1, ...history.flatMap((point) => point.rates));
  const left = 48;
  context.fillStyle = "#5d6778";
  context.font = "12px system-ui";
  context.fillText(`${top.toFixed(1)}/s`, 4, 14);
  context.fillText("0", 4, height - 6);
  context.strokeStyle = "#d8dde6";
  context.strokeRect(left, 4, width - left - 4, height - 8);
  const x = (i) => left + ((width - left - 8) * i) / Math.max(1, HISTORY_POINTS - 1);
  const y = (value) => height - 4 - ((height - 8) * value) / top;
  RATES.forEach(([, colour], k) => {
    context.strokeStyle = colour;
    context.lineWidth = 2;
    context.beginPath();
    history.forEach((point, i) => {
      const at = [x(HISTORY_POINTS - history.length + i), y(point.rates[k])];
      if (i === 0) context.moveTo(...at); else context.lineTo(...at);
    });
    context.stroke();
  });
}

// -- routing and login -------------------------------------------------------------------------

function schedule(ms) {
  clearTimeout(state.timer);
  state.timer = setTimeout(() => render(), ms);
}

async function render() {
  clearTimeout(state.timer);
  const main = document.getElementById("main");
  if (!state.auth) { showLogin(main); return; }
  const [page, ...rest] = (window.location.hash.replace(/^#\//, "") || "overview").split("/");
  const name = page in DETAIL_PAGES ? decodeURIComponent(rest.join("/")) : undefined;
  const draw = pages[page] || pages.overview;
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("current", a.dataset.page === (DETAIL_PAGES[page] || page));
  try {
    await draw(main, name);
  } catch (err) {
    if (!state.auth) return;
    showError(err, main);
    if (page === "overview") schedule(REFRESH_MS);
  }
}

function showLogin(main) {
  document.getElementById("nav").hidden = true;
  document.getElementById("logout").hidden = true;
  document.getElementById("vhost-choice").hidden = true;
  document.getElementById("who").textContent = "";
  main.replaceChildren(document.getElementById("login-form").content.cloneNode(true));
  const form = document.getElementById("login");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    const basic = `Basic ${btoa(`${field(form, "user")}:${form.elements.password.value}`)}`;
    try {
      await logIn(basic);
    } catch (err) {
      showError(err);
    }
  });
}

async function logIn(basic) {
  await api("GET", "/api/whoami", undefined, basic);
  let auth = basic;
  try { // a stored user logs in with a bearer token; the built-in guest keeps its credentials
    const token = await api("POST", "/api/tokens", { ttl_s: 8 * 3600 }, basic);
    auth = `Bearer ${token.token}`;
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 400) throw err;
  }
  state.auth = auth;
  sessionStorage.setItem(AUTH_KEY, auth);
  await start();
}

// The log-out button: revoke the session's token on every node (a guest's Basic credentials have none),
// then forget it; a revocation that failed is said.
async function revokeAndLogOut() {
  let failed = null;
  if (state.auth && state.auth.startsWith("Bearer ")) {
    try { await api("DELETE", "/api/tokens"); } catch (err) { failed = err; }
  }
  logOut();
  if (failed) showError(failed);
}

function logOut() {
  state.auth = null;
  state.history = [];
  sessionStorage.removeItem(AUTH_KEY);
  render();
}

async function start() {
  const me = await api("GET", "/api/whoami");
  state.admin = me.tags.includes("administrator");
  document.getElementById("who").textContent = me.name;
  document.getElementById("logout").hidden = false;
  document.getElementById("nav").hidden = false;
  for (const a of document.querySelectorAll("#nav a[data-admin]")) a.hidden = !state.admin;
  await showVhosts();
  await render();
}

// The vhost selector: the vhosts the user holds permissions in (all, for an administrator); choosing one
// shows its queues, exchanges and dead letters.
async function showVhosts() {
  const names = (await api("GET", "/api/vhosts")).map((row) => row.name);
  if (!names.includes(state.vhost)) state.vhost = names.includes("/") ? "/" : names[0] || "/";
  const select = document.getElementById("vhost");
  select.replaceChildren(...names.map((name) => el("option", { value: name, text: name, selected: name === state.vhost })));
  document.getElementById("vhost-choice").hidden = names.length < 2; // with only `/`, as before vhosts
}

function chooseVhost(event) {
  state.vhost = event.target.value;
  sessionStorage.setItem(VHOST_KEY, state.vhost);
  clearError();
  if (window.location.hash.startsWith("#/queue/") || window.location.hash.startsWith("#/exchange/")) {
    window.location.hash = `#/${DETAIL_PAGES[window.location.hash.split("/")[1]]}`; // that one is of the other vhost
  } else {
    render();
  }
}

window.addEventListener("hashchange", () => { clearError(); render(); });
document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("logout").addEventListener("click", revokeAndLogOut);
  document.getElementById("vhost").addEventListener("change", chooseVhost);
  if (state.auth) start().catch((err) => { showError(err); logOut(); });
  else render();
});

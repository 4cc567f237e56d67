/*
 * jobscope dashboard: fills the page shell (web.c) from the server's JSON
 * API and keeps it live through /ui/events (server-sent events, read with
 * fetch so that the token goes in a header, never in a URL).  No library,
 * nothing loaded from elsewhere; charts are small SVG drawn here.
 */
"use strict";
(function () {
  const body = document.body;
  const page = body.dataset.page;
  const isHead = body.dataset.server === "head";
  const content = document.getElementById("content");
  const statusEl = document.getElementById("status");
  const TOKEN_KEY = "jobscope-token";
  const SVGNS = "http://www.w3.org/2000/svg";
  body.dataset.events = "0";

  /* ---- small helpers ---- */

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") e.textContent = v;
      else if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k);
    return e;
  }
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") e.textContent = v;
      else e.setAttribute(k, v);
    }
    for (const k of kids) if (k) e.append(k);
    return e;
  }
  function say(msg, bad) {
    statusEl.textContent = msg || "";
    statusEl.classList.toggle("error", !!bad);
  }
  function token() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ""; } catch (e) { return ""; }
  }
  function authHeaders(extra) {
    const h = Object.assign({}, extra || {});
    const t = token();
    if (t) h.Authorization = "Bearer " + t;
    return h;
  }
  /* {status, ok, type, json|text}; never throws */
  async function api(path, opts) {
    opts = opts || {};
    try {
      const r = await fetch(path, {method: opts.method || "GET", body: opts.body,
        headers: authHeaders(opts.headers), cache: "no-store"});
      const type = r.headers.get("Content-Type") || "";
      const out = {status: r.status, ok: r.ok, type: type};
      if (opts.blob) out.blob = await r.blob();
      else if (type.startsWith("application/json")) out.json = await r.json();
      else out.text = await r.text();
      return out;
    } catch (e) {
      return {status: 0, ok: false, type: "", text: String(e)};
    }
  }
  function apiError(r) {
    const msg = r.json && r.json.error ? r.json.error : (r.json && r.json.message) || r.text || "";
    if (r.status === 401) return "401: this needs a token (" + msg + "): type it in the Token field";
    if (r.status === 403) return "403: the token is not accepted (" + msg + ")";
    return (r.status || "no answer") + ": " + msg;
  }
  const nf1 = new Intl.NumberFormat("en", {maximumFractionDigits: 1});
  const nf0 = new Intl.NumberFormat("en", {maximumFractionDigits: 0});
  function num(v, d) {
    if (v === null || v === undefined || Number.isNaN(v)) return "—";
    return d === 0 ? nf0.format(v) : nf1.format(v);
  }
  function bytes(v) {
    if (v === null || v === undefined) return "—";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return nf1.format(v) + " " + units[i];
  }
  function when(ms) {
    if (ms === null || ms === undefined) return "—";
    const d = new Date(ms);
    return d.toLocaleString("sv-SE").replace(" ", " ");
  }
  function ago(ms) {
    if (ms === null || ms === undefined) return "—";
    const s = Math.max(0, (Date.now() - ms) / 1000);
    if (s < 90) return nf0.format(s) + " s ago";
    if (s < 5400) return nf0.format(s / 60) + " min ago";
    return nf1.format(s / 3600) + " h ago";
  }
  function duration(s) {
    if (s === null || s === undefined) return "—";
    if (s < 120) return nf1.format(s) + " s";
    if (s < 7200) return nf1.format(s / 60) + " min";
    return nf1.format(s / 3600) + " h";
  }
  function meter(pct) {
    if (pct === null || pct === undefined) return el("span", {class: "muted", text: "—"});
    return el("span", {}, el("meter", {min: "0", max: "100", value: String(pct),
      "aria-label": num(pct) + " percent"}), " " + num(pct) + " %");
  }
  function table(caption, cols, rows, id) {
    const head = el("tr", {}, ...cols.map(c => el("th", {scope: "col", class: c.num ? "num" : null, text: c.label})));
    const trs = rows.map(r => el("tr", {}, ...cols.map(c => {
      const v = c.get(r);
      const td = el("td", {class: c.num ? "num" : (c.cls || null)});
      if (v instanceof Node) td.append(v); else td.textContent = v === null || v === undefined ? "—" : v;
      return td;
    })));
    if (!rows.length) trs.push(el("tr", {}, el("td", {colspan: String(cols.length), class: "muted", text: "none"})));
    return el("div", {class: "table-wrap", id: id || null},
      el("table", {}, el("caption", {class: "muted", text: caption}), el("thead", {}, head), el("tbody", {}, ...trs)));
  }
  function section(title, id, ...kids) {
    return el("section", {id: id, "aria-labelledby": id + "-h"}, el("h2", {id: id + "-h", text: title}), ...kids);
  }
  function jobLink(key) {
    return el("a", {href: "/ui/job?key=" + encodeURIComponent(key), text: key});
  }
  function sparkline(values) {
    const w = 90, h = 22, n = values.length;
    const s = svg("svg", {class: "spark", viewBox: "0 0 " + w + " " + h, role: "img",
      "aria-label": "last " + n + " values"});
    if (n < 2) return s;
    const pts = values.map((v, i) => (i * w / (n - 1)).toFixed(1) + "," + (h - 1 - (v / 100) * (h - 2)).toFixed(1));
    s.append(svg("polyline", {points: pts.join(" ")}));
    return s;
  }

  /*
   * A line chart: series [{label, cls, points: [[x, y]...]}], x in seconds.
   * yfmt formats the axis.  Gaps (y null) break the line.
   */
  function lineChart(title, series, yfmt, id) {
    const W = 480, H = 180, L = 56, R = 8, T = 10, B = 24;
    const all = series.flatMap(s => s.points.filter(p => p[1] !== null));
    const fig = el("figure", {id: id || null});
    const s = svg("svg", {class: "chart", viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": title});
    if (!all.length) {
      s.append(svg("text", {x: String(W / 2), y: String(H / 2), "text-anchor": "middle", class: "axis", text: "no data yet"}));
      fig.append(s, el("figcaption", {text: title}));
      return fig;
    }
    let x0 = Math.min(...all.map(p => p[0])), x1 = Math.max(...all.map(p => p[0]));
    let y1 = Math.max(...all.map(p => p[1]));
    if (x1 === x0) x1 = x0 + 1;
    if (!(y1 > 0)) y1 = 1;
    y1 *= 1.1;
    const X = x => L + (x - x0) / (x1 - x0) * (W - L - R);
    const Y = y => H - B - y / y1 * (H - B - T);
    for (let i = 0; i <= 4; i++) {
      const yv = y1 * i / 4, yy = Y(yv);
      s.append(svg("line", {class: "grid", x1: String(L), x2: String(W - R), y1: yy.toFixed(1), y2: yy.toFixed(1)}));
      s.append(svg("text", {class: "axis", x: String(L - 4), y: (yy + 4).toFixed(1), "text-anchor": "end", text: yfmt(yv)}));
    }
    s.append(svg("text", {class: "axis", x: String(L), y: String(H - 6), text: duration(x0)}));
    s.append(svg("text", {class: "axis", x: String(W - R), y: String(H - 6), "text-anchor": "end", text: duration(x1)}));
    for (const ser of series) {
      let d = "", pen = false;
      for (const [x, y] of ser.points) {
        if (y === null) { pen = false; continue; }
        d += (pen ? "L" : "M") + X(x).toFixed(1) + "," + Y(y).toFixed(1);
        pen = true;
      }
      if (d) s.append(svg("path", {class: "line " + (ser.cls || ""), d: d}, svg("title", {text: ser.label})));
    }
    fig.append(s, el("figcaption", {text: title + (series.length > 1 ? " (" + series.map(x => x.label).join(", ") + ")" : "")}));
    return fig;
  }

  /* Horizontal stacked bars: rows [{label, used, idle}] */
  function barChart(title, rows, unit) {
    const W = 480, rowH = 22, L = 120, R = 60, T = 6;
    const H = T * 2 + rowH * Math.max(rows.length, 1);
    const max = Math.max(1e-9, ...rows.map(r => (r.used || 0) + (r.idle || 0)));
    const s = svg("svg", {class: "chart", viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": title});
    rows.forEach((r, i) => {
      const y = T + i * rowH, w = W - L - R;
      const u = (r.used || 0) / max * w, id = (r.idle || 0) / max * w;
      s.append(svg("text", {class: "label", x: String(L - 6), y: String(y + 15), "text-anchor": "end",
        text: r.label.length > 16 ? r.label.slice(0, 15) + "…" : r.label}));
      s.append(svg("rect", {class: "bar-used", x: String(L), y: String(y + 3), width: u.toFixed(1), height: String(rowH - 6)},
        svg("title", {text: r.label + ": " + num(r.used) + " " + unit + " used"})));
      s.append(svg("rect", {class: "bar-idle", x: (L + u).toFixed(1), y: String(y + 3), width: id.toFixed(1), height: String(rowH - 6)},
        svg("title", {text: r.label + ": " + num(r.idle) + " " + unit + " idle"})));
      s.append(svg("text", {class: "axis", x: (L + u + id + 4).toFixed(1), y: String(y + 15), text: num((r.used || 0) + (r.idle || 0))}));
    });
    return el("figure", {}, s, el("figcaption", {text: title + ": used (blue) and idle (amber) " + unit}));
  }

  /*
   * Server-sent events over fetch: onEvent(name, data) for each event.
   * Reconnects after a pause when the stream ends; stops on 4xx until the
   * token changes; a new token reconnects at once.
   */
  function stream(query, onEvent) {
    let ctrl = null, running = false;
    async function once() {
      ctrl = new AbortController();
      const signal = ctrl.signal;
      let r;
      try {
        r = await fetch("/ui/events?" + query, {headers: authHeaders({Accept: "text/event-stream"}),
          cache: "no-store", signal: signal});
      } catch (e) { return signal.aborted ? 0 : 3000; }
      if (!r.ok) {
        let msg = "";
        try { const j = await r.json(); msg = j.error || ""; } catch (e) { msg = ""; }
        say(apiError({status: r.status, json: {error: msg}}), true);
        return r.status >= 500 ? 5000 : null;
      }
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      try {
        for (;;) {
          const {value, done} = await reader.read();
          if (done) break;
          buf += dec.decode(value, {stream: true});
          let cut;
          while ((cut = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, cut);
            buf = buf.slice(cut + 2);
            let name = "message";
            const data = [];
            for (const line of block.split("\n")) {
              if (line.startsWith("event: ")) name = line.slice(7);
              else if (line.startsWith("data: ")) data.push(line.slice(6));
            }
            if (!data.length) continue;
            let parsed;
            try { parsed = JSON.parse(data.join("\n")); } catch (e) { parsed = data.join("\n"); }
            body.dataset.events = String(Number(body.dataset.events) + 1);
            onEvent(name, parsed);
          }
        }
      } catch (e) { /* the connection went away, or a new token */ }
      return signal.aborted ? 0 : 2000;
    }
    async function loop() {
      running = true;
      for (;;) {
        const pause = await once();
        if (pause === null) break;
        await new Promise(res => setTimeout(res, pause));
      }
      running = false;
    }
    body.addEventListener("tokenchange", () => {
      if (running && ctrl) ctrl.abort();
      else if (!running) loop();
    });
    loop();
  }

  /* Downloads through fetch, so that the token goes along; the file keeps the server's type. */
  async function download(path, filename) {
    say("downloading " + filename + "…");
    const r = await api(path, {blob: true});
    if (!r.ok) { say(apiError({status: r.status, text: r.blob ? await r.blob.text() : ""}), true); return; }
    const url = URL.createObjectURL(r.blob);
    const a = el("a", {href: url, download: filename});
    body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    say("downloaded " + filename + " (" + r.type + ", " + bytes(r.blob.size) + ")");
  }

  /* ---- the token form (head) ---- */

  const tokenForm = document.getElementById("token-form");
  if (tokenForm) {
    const input = document.getElementById("token");
    if (token()) input.placeholder = "token set for this tab";
    tokenForm.addEventListener("submit", ev => {
      ev.preventDefault();
      try { sessionStorage.setItem(TOKEN_KEY, input.value.trim()); } catch (e) { /* private mode */ }
      input.value = "";
      input.placeholder = token() ? "token set for this tab" : "read or admin token";
      say(token() ? "token set: it goes with every request from this tab" : "token cleared");
      body.dispatchEvent(new Event("tokenchange"));
    });
    document.getElementById("token-clear").addEventListener("click", () => {
      try { sessionStorage.removeItem(TOKEN_KEY); } catch (e) { /* private mode */ }
      input.placeholder = "read or admin token";
      say("token cleared");
      body.dispatchEvent(new Event("tokenchange"));
    });
  }

  /* ---- cluster (head) and node (agent) ---- */

  const gpuHistory = new Map(); /* "node/index" -> last utilizations */

  function gpuTable(gpus) {
    for (const g of gpus) {
      const k = g.node + "/" + g.index;
      const h = gpuHistory.get(k) || [];
      if (g.util_pct !== null && g.util_pct !== undefined) h.push(g.util_pct);
      while (h.length > 60) h.shift();
      gpuHistory.set(k, h);
    }
    return table("Latest sample of each GPU", [
      {label: "Node", get: g => g.node},
      {label: "GPU", get: g => String(g.index)},
      {label: "Name", get: g => g.name},
      {label: "Utilization", get: g => meter(g.util_pct)},
      {label: "Recent", get: g => sparkline(gpuHistory.get(g.node + "/" + g.index) || [])},
      {label: "Memory", get: g => bytes(g.mem_used_bytes) + " / " + bytes(g.mem_total_bytes)},
      {label: "Power W", num: true, get: g => g.power_mw === null || g.power_mw === undefined ? null : num(g.power_mw / 1000)},
      {label: "Temp °C", num: true, get: g => num(g.temp_c, 0)},
    ], gpus, "gpus-table");
  }

  function jobsTable(jobs) {
    return table("Running jobs", [
      {label: "Job", get: j => jobLink(j.key)},
      {label: "User", get: j => j.user},
      {label: "Node", get: j => j.node},
      {label: "Started", get: j => ago(j.start_ms)},
      {label: "CPUs", num: true, get: j => num(j.reserved_cpus, 0)},
      {label: "Memory", num: true, get: j => j.reserved_mem_bytes ? bytes(j.reserved_mem_bytes) : "—"},
      {label: "GPUs", num: true, get: j => num(j.reserved_gpus, 0)},
      {label: "Command", cls: "cmd", get: j => j.command},
    ], jobs, "jobs-table");
  }

  /*
   * Who holds GPUs idle: each running job that reserved GPUs, its reserved
   * GPUs (the job's reserved_gpu_list, asked once per job) under 5 % now.
   * A job whose list is not known: when every GPU of its node is under 5 %.
   */
  const IDLE_PCT = 5;
  const gpuLists = new Map(); /* job key -> [indexes], null (unknown) or "asking" */
  function askGpuList(key, redraw) {
    gpuLists.set(key, "asking");
    api("/api/v1/jobs/" + encodeURIComponent(key)).then(r => {
      const list = r.ok && r.json && r.json.job ? r.json.job.reserved_gpu_list : null;
      gpuLists.set(key, list === null || list === undefined ? null
        : String(list).split(",").map(x => Number(x.trim())).filter(x => Number.isInteger(x)));
      redraw();
    });
  }
  function heldIdle(jobs, gpus, redraw) {
    const rows = [];
    const util = g => g.util_pct === null || g.util_pct === undefined ? null : g.util_pct;
    for (const j of jobs) {
      if (!(j.reserved_gpus > 0)) continue;
      if (!gpuLists.has(j.key)) askGpuList(j.key, redraw);
      const list = gpuLists.get(j.key);
      const mine = gpus.filter(g => g.node === j.node && util(g) !== null);
      if (Array.isArray(list) && list.length) {
        for (const g of mine)
          if (list.includes(g.index) && util(g) < IDLE_PCT)
            rows.push({job: j, gpu: String(g.index), util: util(g)});
      } else if (list === null && mine.length && Math.max(...mine.map(util)) < IDLE_PCT) {
        rows.push({job: j, gpu: "any of " + mine.length, util: Math.max(...mine.map(util))});
      }
    }
    return table("GPUs reserved by a running job and under " + IDLE_PCT + " % utilization now", [
      {label: "Job", get: r => jobLink(r.job.key)},
      {label: "User", get: r => r.job.user},
      {label: "Node", get: r => r.job.node},
      {label: "GPU", get: r => r.gpu},
      {label: "Utilization now", get: r => meter(r.util)},
    ], rows, "idle-table");
  }

  function cluster() {
    const state = {nodes: null, gpus: null, jobs: null};
    function draw() {
      const nodes = state.nodes || [], gpus = state.gpus || [], jobs = state.jobs || [];
      const healthy = nodes.filter(n => n.healthy).length;
      const busy = gpus.filter(g => g.util_pct >= IDLE_PCT).length;
      content.replaceChildren(
        el("div", {class: "cards"},
          card("Nodes", healthy + " / " + nodes.length + " healthy", "card-nodes"),
          card("GPUs", gpus.length + " (" + busy + " busy)", "card-gpus"),
          card("Running jobs", String(jobs.length), "card-jobs"),
          card("Updated", new Date().toLocaleTimeString("sv-SE"), "card-updated")),
        section("Nodes", "nodes", table("Agents and their latest host sample", [
          {label: "Node", get: n => n.node},
          {label: "Health", get: n => el("span", {class: "badge " + (n.healthy ? "ok" : "bad"), text: n.healthy ? "healthy" : "silent"})},
          {label: "Cores", num: true, get: n => num(n.cores, 0)},
          {label: "Load 1m", num: true, get: n => n.load1_milli === null || n.load1_milli === undefined ? null : num(n.load1_milli / 1000)},
          {label: "Memory free", get: n => bytes(n.mem_available_bytes) + " / " + bytes(n.mem_total_bytes)},
          {label: "GPUs", num: true, get: n => Array.isArray(n.gpus) ? String(n.gpus.length) : num(n.gpus, 0)},
          {label: "Last seen", get: n => ago(n.last_seen_ms)},
        ], nodes, "nodes-table")),
        section("GPUs", "gpus", gpuTable(gpus)),
        section("Running jobs", "jobs", jobsTable(jobs)),
        section("GPUs held idle", "idle", heldIdle(jobs, gpus, draw)));
    }
    stream("topics=nodes,gpus,jobs", (name, data) => {
      if (name === "error") { say(apiError({status: data.status, json: data}), true); return; }
      if (name === "nodes") state.nodes = data.nodes;
      if (name === "gpus") state.gpus = data.gpus;
      if (name === "jobs") state.jobs = data.jobs;
      say("");
      draw();
    });
    draw();
  }

  function card(label, value, id) {
    return el("div", {class: "card", id: id}, el("div", {class: "label", text: label}), el("div", {class: "value", text: value}));
  }

  function node() {
    const state = {node: null, gpus: null, jobs: null};
    function draw() {
      const n = state.node || {};
      const gpus = state.gpus || [], jobs = state.jobs || [];
      const totals = n.totals || {};
      content.replaceChildren(
        el("div", {class: "cards"},
          card("Node", n.node || "—", "card-node"),
          card("Live jobs", String(jobs.length), "card-jobs"),
          card("GPUs", String(gpus.length), "card-gpus"),
          card("Sample", n.ts_ms ? new Date(n.ts_ms).toLocaleTimeString("sv-SE") : "—", "card-updated")),
        totals.cpu_seconds !== undefined ? el("p", {class: "muted",
          text: "All jobs since the agent started: " + num(totals.cpu_seconds) + " CPU s, " + bytes(totals.rss_bytes) + " resident"}) : "",
        section("GPUs", "gpus", gpuTable(gpus.map(g => Object.assign({node: g.node || n.node}, g)))),
        section("Running jobs", "jobs", jobsTable(jobs)));
    }
    stream("topics=node,gpus,jobs", (name, data) => {
      if (name === "error") { say(apiError({status: data.status, json: data}), true); return; }
      if (name === "node") state.node = data;
      if (name === "gpus") state.gpus = data.gpus || [];
      if (name === "jobs") state.jobs = data.jobs || [];
      draw();
    });
    draw();
  }

  /* ---- a job ---- */

  function job() {
    const key = new URLSearchParams(location.search).get("key");
    if (!key) { say("no job: /ui/job?key=KEY (a key from the jobs list)", true); return; }
    document.getElementById("title").textContent = "Job " + key;
    document.title = key + " · jobscope";
    const live = []; /* [t_s since page open, cpu_seconds, rss_bytes] from the events */
    const t0 = Date.now();
    let lastState = null;
    const reportBox = el("div", {id: "report-box"});
    function draw(data) {
      /*
       * Both servers answer {job, summary, processes}: the head's job is its
       * stored row, the agent's also has usage (live) and totals; summary is
       * the report (null while it runs).  An agent from before answered the
       * job's object alone, the summary inside.
       */
      const j = data.job || (data.key ? data : {});
      const sum = data.summary || j.summary || null;
      const use = j.usage || {};
      const pick = (...vs) => { for (const v of vs) if (v !== null && v !== undefined) return v; return undefined; };
      const cpu = pick(use.cpu_seconds, sum && sum.cpu && sum.cpu.cpu_seconds);
      const rss = pick(use.rss_bytes, sum && sum.memory && sum.memory.rss_peak_bytes);
      const res = j.reservation || {};
      j.reserved_cpus = pick(j.reserved_cpus, res.cpus);
      j.reserved_mem_bytes = pick(j.reserved_mem_bytes, res.memory_bytes);
      j.reserved_gpus = pick(j.reserved_gpus, res.gpus);
      live.push([(Date.now() - t0) / 1000, cpu === undefined ? null : cpu, rss === undefined ? null : rss]);
      const cores = [];
      for (let i = 1; i < live.length; i++) {
        const [ta, ca] = live[i - 1], [tb, cb] = live[i];
        cores.push([tb, ca === null || cb === null || tb <= ta ? null : (cb - ca) / (tb - ta)]);
      }
      const charts = [];
      const tl = sum && sum.timeline;
      if (tl && Array.isArray(tl.buckets) && tl.buckets.length) {
        charts.push(lineChart("CPU cores used (report timeline)", [{label: "cores", points: tl.buckets.map(b => [b.t_s, b.cores])}], v => num(v), "chart-cores"));
        charts.push(lineChart("Resident memory (report timeline)", [{label: "RSS", cls: "b", points: tl.buckets.map(b => [b.t_s, b.rss_bytes])}], bytes, "chart-rss"));
        if (tl.buckets.some(b => b.gpu_util_pct !== null && b.gpu_util_pct !== undefined))
          charts.push(lineChart("GPU utilization % (report timeline)", [{label: "GPU", points: tl.buckets.map(b => [b.t_s, b.gpu_util_pct === undefined ? null : b.gpu_util_pct])}], v => num(v), "chart-gpu"));
      } else {
        charts.push(lineChart("CPU cores used (since this page opened)", [{label: "cores", points: cores}], v => num(v), "chart-cores"));
        charts.push(lineChart("Resident memory (since this page opened)", [{label: "RSS", cls: "b", points: live.map(p => [p[0], p[2]])}], bytes, "chart-rss"));
      }
      const state = j.state || (j.end_ms ? "ended" : "running");
      /* its threads' wait for a CPU others held: live over the last tick, else the report's mean */
      const cont = sum && sum.analysis && sum.analysis.contention;
      const wait = pick(use.cpu_wait_cores, cont && cont.wait_cores_avg);
      const waitText = wait === undefined ? "—" : num(wait) + " cores" + (cont && cont.cpu_contended ? " (contended)" : "");
      content.replaceChildren(
        el("div", {class: "cards"},
          card("State", state, "card-state"),
          card("User", j.user || "—", "card-user"),
          card("Node", j.node || "—", "card-node"),
          card("CPU seconds", num(cpu), "card-cpu"),
          card("Memory", bytes(rss), "card-rss"),
          card("Waited for a CPU", waitText, "card-wait"),
          card(state === "ended" ? "Ran for" : "Running for", j.start_ms ? duration(((j.end_ms || Date.now()) - j.start_ms) / 1000) : "—", "card-duration")),
        el("dl", {class: "kv"},
          el("dt", {text: "Name"}), el("dd", {id: "job-name", text: j.name || "—"}),
          el("dt", {text: "Command"}), el("dd", {id: "job-command", text: j.command || "—"}),
          el("dt", {text: "Started"}), el("dd", {text: when(j.start_ms)}),
          el("dt", {text: "Ended"}), el("dd", {id: "job-end", text: j.end_ms ? when(j.end_ms) : "still running"}),
          el("dt", {text: "Reserved"}), el("dd", {text: num(j.reserved_cpus, 0) + " CPUs, " + (j.reserved_mem_bytes ? bytes(j.reserved_mem_bytes) : "— memory") + ", " + num(j.reserved_gpus, 0) + " GPUs"})),
        section("Live", "live", el("div", {class: "charts"}, ...charts)),
        Array.isArray(j.gpus) && j.gpus.length ? section("GPUs", "job-gpus", table("This job's GPUs", [
          {label: "GPU", get: g => String(g.index)},
          {label: "UUID", get: g => g.uuid},
          {label: "In use now", get: g => g.in_use_now ? "yes" : "no"},
          {label: "Energy J", num: true, get: g => num(g.energy_j)},
        ], j.gpus)) : "",
        isHead ? section("Report", "report", reportBox) : "");
      body.dataset.jobState = state;
      if (isHead && state !== lastState) loadReport();
      lastState = state;
    }
    let reportUrl = null;
    async function loadReport() {
      const bar = el("div", {class: "actions"},
        el("button", {type: "button", id: "report-refresh", onclick: loadReport, text: "Refresh the report"}),
        el("button", {type: "button", onclick: () => download("/api/v1/report?job=" + encodeURIComponent(key) + "&format=html", key.replace(/[^A-Za-z0-9._-]/g, "_") + ".html"), text: "Download HTML"}),
        el("button", {type: "button", onclick: () => download("/api/v1/report?job=" + encodeURIComponent(key) + "&format=json", key.replace(/[^A-Za-z0-9._-]/g, "_") + ".json"), text: "Download JSON"}));
      const r = await api("/api/v1/report?job=" + encodeURIComponent(key) + "&format=html", {blob: true});
      if (!r.ok) {
        reportBox.replaceChildren(bar, el("p", {class: "muted", text: "No report yet (" + r.status + "): it is made from the samples stored so far."}));
        return;
      }
      if (reportUrl) URL.revokeObjectURL(reportUrl);
      reportUrl = URL.createObjectURL(new Blob([r.blob], {type: "text/html"}));
      reportBox.replaceChildren(bar, el("iframe", {class: "report", title: "The job's report", src: reportUrl}));
    }
    /* the head: the job and its report (the report's figures, live); the agent: the job with its live usage */
    let lastJob = null, lastReport = null;
    stream("topics=" + (isHead ? "job,report" : "job") + "&job=" + encodeURIComponent(key), (name, data) => {
      if (name === "error") {
        if (!lastReport && data && data.status === 404 && lastJob) return; /* no samples yet */
        say(apiError({status: data.status, json: data}), true);
        return;
      }
      say("");
      if (name === "job") lastJob = data;
      if (name === "report") lastReport = data;
      if (!lastJob) return;
      draw(lastReport ? Object.assign({}, lastJob, {summary: lastReport}) : lastJob);
    });
  }

  /* ---- history (head) ---- */

  function history() {
    const by = el("select", {id: "by", name: "by"}, ...["user", "node", "hour", "weekday"].map(v => el("option", {value: v, text: v})));
    const since = el("input", {id: "since", name: "since", value: "7d", size: "14", "aria-describedby": "since-help"});
    const until = el("input", {id: "until", name: "until", value: "", size: "14", placeholder: "now"});
    const out = el("div", {id: "history-out"});
    const form = el("form", {class: "inline", id: "history-form"},
      el("label", {}, "Group by", by),
      el("label", {}, "Since", since),
      el("label", {}, "Until", until),
      el("button", {type: "submit", class: "primary", text: "Show"}),
      el("button", {type: "button", id: "history-csv", onclick: () => download(query("csv"), "history-by-" + by.value + ".csv"), text: "Download CSV"}));
    content.replaceChildren(form,
      el("p", {class: "muted", id: "since-help", text: "Times: 7d, 12h, 90m, ms since the epoch or RFC 3339 (2026-11-01T00:00:00Z)."}),
      out);
    function query(fmt) {
      let q = "/api/v1/report?by=" + encodeURIComponent(by.value) + "&format=" + fmt;
      if (since.value.trim()) q += "&since=" + encodeURIComponent(since.value.trim());
      if (until.value.trim()) q += "&until=" + encodeURIComponent(until.value.trim());
      return q;
    }
    async function show() {
      say("asking the head…");
      const r = await api(query("json"));
      if (!r.ok || !r.json) { say(apiError(r), true); out.replaceChildren(); return; }
      const h = r.json;
      say("");
      const rows = h.rows || [];
      const pct = v => v === null || v === undefined ? "—" : num(v) + " %";
      out.replaceChildren(
        el("p", {id: "history-summary", text: h.total.jobs + " jobs from " + h.since + " to " + h.until +
          (h.jobs_without_summary ? " (" + h.jobs_without_summary + " without a summary)" : "")}),
        el("div", {class: "charts"},
          barChart("Core-hours by " + h.by, rows.map(x => ({label: x.key, used: x.core_hours_used, idle: x.core_hours_idle})), "core-h"),
          rows.some(x => x.gpu_hours_reserved > 0) ? barChart("GPU-hours by " + h.by, rows.map(x => ({label: x.key, used: x.gpu_hours_used || 0, idle: x.gpu_hours_idle || 0})), "GPU-h") : ""),
        table("The report --by " + h.by + " table", [
          {label: h.by, get: x => x.key},
          {label: "Jobs", num: true, get: x => num(x.jobs, 0)},
          {label: "Wall h", num: true, get: x => num(x.wall_hours)},
          {label: "Core-h reserved", num: true, get: x => num(x.core_hours_reserved)},
          {label: "Core-h used", num: true, get: x => num(x.core_hours_used)},
          {label: "Core-h idle", num: true, get: x => num(x.core_hours_idle)},
          {label: "CPU eff.", num: true, get: x => pct(x.cpu_efficiency_pct)},
          {label: "GPU-h reserved", num: true, get: x => num(x.gpu_hours_reserved)},
          {label: "GPU-h idle", num: true, get: x => num(x.gpu_hours_idle)},
          {label: "GPU eff.", num: true, get: x => pct(x.gpu_efficiency_pct)},
          {label: "Mem eff.", num: true, get: x => pct(x.mem_efficiency_pct)},
          {label: "Jobs over", num: true, get: x => num(x.jobs_over_reservation, 0)},
        ], rows.concat([Object.assign({}, h.total, {key: "total"})]), "history-table"),
        el("p", {class: "note", text: "Efficiencies are over the jobs that reserved: work " +
          "without a reservation (a login, a daemon) reserves nothing. Above 100 %: jobs " +
          "that used more than they reserved (Jobs over)."}));
      body.dataset.loaded = "history";
    }
    form.addEventListener("submit", ev => { ev.preventDefault(); show(); });
    body.addEventListener("tokenchange", show);
    show();
  }

  /* ---- sessions (head) ---- */

  const EXPORTS = [
    {format: "json", ext: "json", label: "JSON"},
    {format: "csv", ext: "csv", label: "CSV"},
    {format: "text", ext: "txt", label: "Text"},
    {format: "gswarm", ext: "gswarm.json", label: "gswarm"},
  ];

  function sessions() {
    const name = el("input", {id: "session-name", name: "name", placeholder: "automatic", size: "20"});
    const interval = el("input", {id: "session-interval", name: "interval_ms", type: "number", min: "100", max: "3600000", value: "1000", size: "8"});
    const nodes = el("input", {id: "session-nodes", name: "nodes", placeholder: "every node", size: "20"});
    const cuda = el("input", {id: "session-cuda", type: "checkbox", name: "cuda"});
    const list = el("div", {id: "sessions-list"});
    const form = el("form", {class: "inline", id: "start-form"},
      el("label", {}, "Name", name),
      el("label", {}, "Interval ms", interval),
      el("label", {}, "Nodes", nodes),
      el("label", {}, "CUDA", cuda),
      el("button", {type: "submit", class: "primary", id: "start", text: "Start a session"}));
    content.replaceChildren(
      el("p", {class: "muted", text: "Starting and stopping needs the admin token (Token field, above); listing and downloads need the read token when the head has one."}),
      form, section("Sessions", "sessions", list));
    async function post(path, obj) {
      const r = await api(path, {method: "POST", body: JSON.stringify(obj), headers: {"Content-Type": "application/json"}});
      if (!r.ok) { say(apiError(r), true); return r; }
      say(r.json && r.json.message ? r.json.message : "done", r.json && r.json.success === false);
      return r;
    }
    form.addEventListener("submit", async ev => {
      ev.preventDefault();
      const o = {interval_ms: Number(interval.value), cuda: cuda.checked};
      if (name.value.trim()) o.name = name.value.trim();
      if (nodes.value.trim()) o.nodes = nodes.value.trim();
      const r = await post("/profiling/start", o);
      body.dataset.lastAction = "start:" + r.status;
    });
    function draw(data) {
      const rows = data.sessions || [];
      list.replaceChildren(table(rows.length + " sessions, " + (data.active_sessions || 0) + " active", [
        {label: "Name", get: s => s.name},
        {label: "State", get: s => el("span", {class: "badge " + (s.is_active ? "ok" : ""), text: s.is_active ? "active" : "stopped"})},
        {label: "Started", get: s => when(s.start_ms)},
        {label: "Frames", num: true, get: s => num(s.frames, 0)},
        {label: "Interval ms", num: true, get: s => num(s.interval_ms, 0)},
        {label: "Nodes", get: s => Array.isArray(s.nodes) && s.nodes.length ? s.nodes.join(", ") : "all"},
        {label: "Actions", get: s => el("div", {class: "actions"},
          s.is_active ? el("button", {type: "button", class: "danger", "data-stop": s.name, text: "Stop",
            onclick: async () => { const r = await post("/profiling/stop", {name: s.name}); body.dataset.lastAction = "stop:" + r.status; }}) : "",
          ...EXPORTS.map(x => el("button", {type: "button", "data-export": x.format,
            "data-href": "/api/v1/sessions/" + encodeURIComponent(s.name) + "/export?format=" + x.format,
            "aria-label": "Download " + s.name + " as " + x.label,
            onclick: () => download("/api/v1/sessions/" + encodeURIComponent(s.name) + "/export?format=" + x.format,
              s.name.replace(/[^A-Za-z0-9._-]/g, "_") + "." + x.ext),
            text: x.label})))},
      ], rows, "sessions-table"));
    }
    stream("topics=sessions", (n, data) => {
      if (n === "error") { say(apiError({status: data.status, json: data}), true); return; }
      draw(data);
    });
  }

  const pages = {cluster: cluster, node: node, job: job, history: history, sessions: sessions};
  if (pages[page]) pages[page]();
})();

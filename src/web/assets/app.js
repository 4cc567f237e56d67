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
  const nf2 = new Intl.NumberFormat("en", {maximumFractionDigits: 2});
  function num(v, d) {
    if (v === null || v === undefined || Number.isNaN(v)) return "—";
    return d === 0 ? nf0.format(v) : d === 2 ? nf2.format(v) : nf1.format(v);
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
      const td = el("td", {class: [c.num ? "num" : null, c.cls].filter(Boolean).join(" ") || null});
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
   * A line chart: series [{label, cls, points: [[x, y]...]}], x in seconds
   * (since the job's start), or in ms since the epoch with opts.clock.
   * yfmt formats the y ticks; opts.unit names the y axis' unit (written
   * above it), opts.ymax a fixed top (100 for percentages).  Gaps (y null)
   * break the line.  Several series get a legend under the chart.
   */
  function lineChart(title, series, yfmt, id, opts) {
    opts = opts || {};
    const W = 480, H = 200, L = 86, R = 14, T = 22, B = 30;
    const all = series.flatMap(s => s.points.filter(p => p[1] !== null && p[1] !== undefined));
    const fig = el("figure", {id: id || null});
    const s = svg("svg", {class: "chart", viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": title});
    if (!all.length) {
      s.append(svg("text", {x: String(W / 2), y: String(H / 2), "text-anchor": "middle", class: "axis", text: "no data yet"}));
      fig.append(s, el("figcaption", {text: title}));
      return fig;
    }
    let x0 = Math.min(...all.map(p => p[0])), x1 = Math.max(...all.map(p => p[0]));
    let y1 = opts.ymax || Math.max(...all.map(p => p[1]));
    if (x1 === x0) x1 = x0 + (opts.clock ? 1000 : 1);
    if (!(y1 > 0)) y1 = 1;
    if (!opts.ymax) y1 *= 1.1;
    const X = x => L + (x - x0) / (x1 - x0) * (W - L - R);
    const Y = y => H - B - y / y1 * (H - B - T);
    for (let i = 0; i <= 4; i++) {
      const yv = y1 * i / 4, yy = Y(yv);
      s.append(svg("line", {class: "grid", x1: String(L), x2: String(W - R), y1: yy.toFixed(1), y2: yy.toFixed(1)}));
      s.append(svg("text", {class: "axis", x: String(L - 5), y: (yy + 4).toFixed(1), "text-anchor": "end", text: yfmt(yv)}));
    }
    if (opts.unit)
      s.append(svg("text", {class: "axis unit", x: "4", y: "13", text: opts.unit}));
    /* x ticks: clock times (a date too over a day), or the time since the start */
    const span = x1 - x0;
    const xfmt = opts.clock
      ? (v => { const d = new Date(v), two = x => String(x).padStart(2, "0");
          const hm = two(d.getHours()) + ":" + two(d.getMinutes()) + (span < 1800e3 ? ":" + two(d.getSeconds()) : "");
          return span > 86400e3 ? (d.getMonth() + 1) + "-" + String(d.getDate()).padStart(2, "0") + (span > 4 * 86400e3 ? "" : " " + hm) : hm; })
      : duration;
    const nt = 4;
    for (let i = 0; i <= nt; i++) {
      const xv = x0 + span * i / nt, xx = X(xv);
      s.append(svg("line", {class: "tick", x1: xx.toFixed(1), x2: xx.toFixed(1), y1: String(H - B), y2: String(H - B + 4)}));
      s.append(svg("text", {class: "axis", x: xx.toFixed(1), y: String(H - B + 16),
        "text-anchor": i === 0 ? "start" : i === nt ? "end" : "middle", text: xfmt(xv)}));
    }
    series.forEach((ser, k) => {
      let d = "", pen = false;
      for (const [x, y] of ser.points) {
        if (y === null || y === undefined) { pen = false; continue; }
        d += (pen ? "L" : "M") + X(x).toFixed(1) + "," + Y(y).toFixed(1);
        pen = true;
      }
      if (d) s.append(svg("path", {class: "line " + (ser.cls || "s" + k), d: d}, svg("title", {text: ser.label})));
    });
    fig.append(s);
    if (series.length > 1)
      fig.append(el("ul", {class: "legend"}, ...series.map((ser, k) =>
        el("li", {}, el("span", {class: "swatch " + (ser.cls || "s" + k), "aria-hidden": "true"}), ser.label))));
    fig.append(el("figcaption", {text: title + (opts.clock ? "" : " (x: time since the start)")}));
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

  /*
   * Who is looking (head): GET /api/v1/whoami, shown in the header; "sees":
   * "own" when the head answers every question with the caller's own jobs
   * alone.  A head without the endpoint (404), or one that refuses it: "all".
   */
  let who = {sees: "all"};
  async function whoami() {
    if (!isHead) return who;
    const r = await api("/api/v1/whoami");
    who = r.ok && r.json ? r.json : {sees: "all"};
    const w = document.getElementById("whoami");
    if (w) {
      w.textContent = who.role ? (who.user || "anonymous") + " · " + who.role : "";
      w.title = who.auth ? "authenticated by " + who.auth : "";
    }
    const nav = document.getElementById("nav-jobs");
    if (nav) nav.textContent = who.sees === "own" ? "My jobs" : "Jobs";
    body.dataset.sees = who.sees || "all";
    return who;
  }
  const whoReady = whoami();
  if (isHead) body.addEventListener("tokenchange", whoami);

  /* A time as the API takes it (ms, RFC 3339, an age: 90s, 2h, 7d) in ms; null: not one. */
  function timeMs(v, now) {
    v = (v || "").trim();
    if (!v) return null;
    if (/^\d+$/.test(v)) return Number(v);
    const m = /^(\d+)(s|m|h|d)$/.exec(v);
    if (m) return now - Number(m[1]) * {s: 1e3, m: 60e3, h: 3600e3, d: 86400e3}[m[2]];
    const t = Date.parse(v);
    return Number.isNaN(t) ? null : t;
  }
  const RANGES = [["1h", "Last hour"], ["1d", "Last day"], ["7d", "Last week"], ["30d", "Last 30 days"]];
  /*
   * The time-range picker: a preset, or since/until inputs (any form the API
   * takes).  state {since, until}; onChange() after each change.
   */
  function rangePicker(state, onChange) {
    const preset = el("select", {id: "range", name: "range", "aria-label": "Time range"},
      ...RANGES.map(([v, l]) => el("option", {value: v, text: l})), el("option", {value: "", text: "Since / until"}));
    const since = el("input", {id: "since", name: "since", size: "18", value: state.since, "aria-describedby": "range-help"});
    const until = el("input", {id: "until", name: "until", size: "18", value: state.until, placeholder: "now"});
    function sync() {
      const p = !state.until && RANGES.some(r => r[0] === state.since) ? state.since : "";
      preset.value = p;
    }
    preset.addEventListener("change", () => {
      if (!preset.value) { since.focus(); return; }
      state.since = since.value = preset.value;
      state.until = until.value = "";
      onChange();
    });
    sync();
    return {
      fields: [el("label", {}, "Range", preset), el("label", {}, "Since", since), el("label", {}, "Until", until)],
      help: el("p", {class: "muted", id: "range-help", text: "Times: 7d, 12h, 90m, ms since the epoch or RFC 3339 (2026-11-01T00:00:00Z)."}),
      read() { state.since = since.value.trim(); state.until = until.value.trim(); sync(); },
    };
  }
  /* The page's state in its URL (replaceState: a link to it opens the same view). */
  function keepInUrl(state) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(state)) if (v !== null && v !== undefined && v !== "") q.set(k, v);
    const url = location.pathname + (q.toString() ? "?" + q : "");
    if (url !== location.pathname + location.search) window.history.replaceState(null, "", url);
  }
  function nodeLink(name) {
    return isHead && name ? el("a", {href: "/ui/node?name=" + encodeURIComponent(name), text: name}) : name;
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
      {label: "Node", get: g => nodeLink(g.node)},
      {label: "GPU", get: g => String(g.index)},
      {label: "Name", get: g => g.name},
      {label: "Utilization", get: g => meter(g.util_pct)},
      {label: "Recent", get: g => sparkline(gpuHistory.get(g.node + "/" + g.index) || [])},
      {label: "Memory", get: g => bytes(g.mem_used_bytes) + " / " + bytes(g.mem_total_bytes)},
      {label: "Power W", num: true, get: g => g.power_mw === null || g.power_mw === undefined ? null : num(g.power_mw / 1000)},
      {label: "Temp °C", num: true, get: g => num(g.temp_c, 0)},
    ], gpus, "gpus-table");
  }

  /* The running jobs: what they reserved and what they use now (the head's "use"; "—": not known). */
  function jobsTable(jobs) {
    const use = j => j.use || {};
    const pct = v => v === null || v === undefined ? null : num(v) + " %";
    return table("Running jobs: reserved, and used now", [
      {label: "Job", get: j => jobLink(j.key)},
      {label: "User", get: j => j.user},
      {label: "Node", get: j => nodeLink(j.node)},
      {label: "Started", get: j => ago(j.start_ms)},
      {label: "CPUs", num: true, get: j => num(j.reserved_cpus, 0)},
      {label: "Cores used", num: true, cls: "use-cores", get: j => num(use(j).cores, 2)},
      {label: "CPU eff.", num: true, cls: "use-eff", get: j => pct(use(j).cpu_efficiency_pct)},
      {label: "Memory", num: true, get: j => j.reserved_mem_bytes ? bytes(j.reserved_mem_bytes) : "—"},
      {label: "Resident", num: true, cls: "use-rss", get: j => bytes(use(j).rss_bytes)},
      {label: "GPUs", num: true, get: j => num(j.reserved_gpus, 0)},
      {label: "GPU util.", num: true, cls: "use-gpu", get: j => pct(use(j).gpu_util_pct)},
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
          {label: "Node", get: n => nodeLink(n.node)},
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
        charts.push(lineChart("CPU cores used (report timeline)", [{label: "cores", points: tl.buckets.map(b => [b.t_s, b.cores])}], v => num(v), "chart-cores", {unit: "cores"}));
        charts.push(lineChart("Resident memory (report timeline)", [{label: "RSS", cls: "b", points: tl.buckets.map(b => [b.t_s, b.rss_bytes])}], bytes, "chart-rss", {unit: "bytes (resident)"}));
        if (tl.buckets.some(b => b.gpu_util_pct !== null && b.gpu_util_pct !== undefined))
          charts.push(lineChart("GPU utilization % (report timeline)", [{label: "GPU", points: tl.buckets.map(b => [b.t_s, b.gpu_util_pct === undefined ? null : b.gpu_util_pct])}], v => num(v, 0) + " %", "chart-gpu", {unit: "% utilization", ymax: 100}));
      } else {
        charts.push(lineChart("CPU cores used (since this page opened)", [{label: "cores", points: cores}], v => num(v), "chart-cores", {unit: "cores"}));
        charts.push(lineChart("Resident memory (since this page opened)", [{label: "RSS", cls: "b", points: live.map(p => [p[0], p[2]])}], bytes, "chart-rss", {unit: "bytes (resident)"}));
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
        table("The report --by " + h.by + " table: each row links to its jobs", [
          {label: h.by, get: x => x === h.total ? x.key : el("a", {href: historyJobsLink(h, x.key), text: x.key})},
          {label: "Jobs", num: true, get: x => num(x.jobs, 0)},
          {label: "Wall h", num: true, get: x => num(x.wall_hours)},
          {label: "Core-h reserved", num: true, get: x => num(x.core_hours_reserved)},
          {label: "Core-h used", num: true, get: x => num(x.core_hours_used)},
          {label: "Core-h idle", num: true, get: x => num(x.core_hours_idle)},
          {label: "CPU eff.", num: true, get: x => pct(x.cpu_efficiency_pct)},
          {label: "GPU-h reserved", num: true, get: x => num(x.gpu_hours_reserved)},
          {label: "GPU-h idle", num: true, get: x => num(x.gpu_hours_idle)},
          {label: "GPU eff.", num: true, get: x => pct(x.gpu_efficiency_pct)},
          // what the SMs did (jobs' summaries of schema 17): only when some job has it
          ...([h.total.sm_active_avg_pct, h.total.tensor_active_avg_pct].some(v => v !== null && v !== undefined) ? [
            {label: "SM active", num: true, get: x => pct(x.sm_active_avg_pct)},
            {label: "Tensor active", num: true, get: x => pct(x.tensor_active_avg_pct)},
          ] : []),
          {label: "Mem eff.", num: true, get: x => pct(x.mem_efficiency_pct)},
          {label: "Jobs over", num: true, get: x => num(x.jobs_over_reservation, 0)},
        ], rows.concat([Object.assign(h.total, {key: "total"})]), "history-table"),
        el("p", {class: "note", text: "Efficiencies are over the jobs that reserved: work " +
          "without a reservation (a login, a daemon) reserves nothing. Above 100 %: jobs " +
          "that used more than they reserved (Jobs over)."}));
      body.dataset.loaded = "history";
    }
    form.addEventListener("submit", ev => { ev.preventDefault(); show(); });
    body.addEventListener("tokenchange", show);
    show();
  }

  /*
   * The jobs behind a history row, on the jobs page: the same window (the
   * report's own since and until, in ms), and the row's user or node; an hour
   * or a weekday keeps the jobs that ran in that hour of the day or on that
   * day (local time, as the report counts them).
   */
  function historyJobsLink(h, key) {
    const q = new URLSearchParams({since: String(h.since_ms), until: String(h.until_ms)});
    if (h.by === "user") q.set("user", key);
    else if (h.by === "node") q.set("node", key);
    else if (h.by === "hour") q.set("hour", key);
    else if (h.by === "weekday") q.set("weekday", key);
    else q.set("q", key);
    return "/ui/jobs?" + q;
  }

  /* ---- jobs (head): every job in a range, or the caller's own ---- */

  const WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
  /* whether a job ran in hour-of-day `hour` (0-23) or on weekday `wd` (0 Mon) within [a, b) */
  function ranIn(j, a, b, hour, wd) {
    const from = Math.max(j.start_ms, a), to = Math.min(j.end_ms || Date.now(), b);
    if (to <= from) return false;
    if (hour !== null && to - from >= 86400e3) return true;
    if (wd !== null && to - from >= 7 * 86400e3) return true;
    for (let t = from; t < to; t = (Math.floor(t / 3600e3) + 1) * 3600e3) {
      const d = new Date(t);
      if (hour !== null && d.getHours() === hour) return true;
      if (wd !== null && (d.getDay() + 6) % 7 === wd) return true;
    }
    return false;
  }

  const JOB_COLS = [
    {id: "key", label: "Job", get: j => j.key, show: j => jobLink(j.key)},
    {id: "name", label: "Name", get: j => j.name},
    {id: "user", label: "User", get: j => j.user},
    {id: "node", label: "Node", get: j => j.node, show: j => nodeLink(j.node)},
    {id: "state", label: "State", get: j => j.state},
    {id: "start", label: "Started", get: j => j.start_ms, show: j => when(j.start_ms)},
    {id: "wall", label: "Wall", num: true, get: j => j.wall_s, show: j => duration(j.wall_s)},
    {id: "cpu", label: "CPU eff.", num: true, get: j => j.cpu_eff, show: j => pctText(j.cpu_eff)},
    {id: "gpu", label: "GPU eff.", num: true, get: j => j.gpu_eff, show: j => pctText(j.gpu_eff)},
    {id: "mem", label: "Mem eff.", num: true, get: j => j.mem_eff, show: j => pctText(j.mem_eff)},
    {id: "idle_core_h", label: "Idle core-h", num: true, get: j => j.idle_core_h, show: j => num(j.idle_core_h, 2)},
    {id: "idle_gpu_h", label: "Idle GPU-h", num: true, get: j => j.idle_gpu_h, show: j => num(j.idle_gpu_h, 2)},
    /* what the SMs did: the job's part of its GPUs (its summary, schema 17; "—" without GPM) */
    {id: "sm", label: "SM active", num: true, get: j => j.sm_active, show: j => pctText(j.sm_active)},
  ];
  function pctText(v) { return v === null || v === undefined ? "—" : num(v) + " %"; }
  const known = (...vs) => { for (const v of vs) if (v !== null && v !== undefined) return v; return null; };

  /*
   * A job of the list with its figures: the report's --by job row (its
   * efficiencies and idle core- and GPU-hours within the range, running jobs
   * counted from their samples so far), else the job's own (its summary once
   * it ended, its use now while it runs).
   */
  function jobFigures(j, row, now) {
    const u = j.use || {};
    return Object.assign({}, j, {
      wall_s: ((j.end_ms || (u.ts_ms > j.start_ms ? u.ts_ms : now)) - j.start_ms) / 1000,
      cpu_eff: known(row && row.cpu_efficiency_pct, j.cpu_efficiency_pct, u.cpu_efficiency_pct),
      gpu_eff: known(row && row.gpu_efficiency_pct),
      mem_eff: known(row && row.mem_efficiency_pct, j.mem_efficiency_pct),
      idle_core_h: known(row && row.core_hours_idle),
      idle_gpu_h: known(row && row.gpu_hours_idle),
      sm_active: known(row && row.sm_active_avg_pct, j.sm_active_avg_pct),
    });
  }

  function jobs() {
    const p = new URLSearchParams(location.search);
    const state = {since: p.get("since") || "7d", until: p.get("until") || "", q: p.get("q") || "",
      sort: p.get("sort") || "-start", user: p.get("user") || "", node: p.get("node") || "",
      hour: p.get("hour") || "", weekday: p.get("weekday") || ""};
    let list = [], loaded = false;
    const picker = rangePicker(state, () => { keepInUrl(state); load(); });
    const search = el("input", {id: "q", name: "q", type: "search", size: "24", value: state.q,
      placeholder: "id, name, user, node, state"});
    const user = el("input", {id: "user", name: "user", size: "12", value: state.user, placeholder: "any"});
    const node = el("input", {id: "node", name: "node", size: "12", value: state.node, placeholder: "any"});
    const userLabel = el("label", {id: "user-filter"}, "User", user);
    const form = el("form", {class: "inline", id: "jobs-form"}, ...picker.fields, userLabel,
      el("label", {}, "Node", node), el("label", {}, "Search", search),
      el("button", {type: "submit", class: "primary", text: "Show"}));
    const out = el("div", {id: "jobs-out"});
    const filterNote = el("p", {id: "jobs-filter", class: "muted"});
    content.replaceChildren(form, picker.help, filterNote, out);
    function own() { return who.sees === "own"; }
    function titles() {
      const t = own() ? "My jobs" : "Jobs";
      document.getElementById("title").textContent = t;
      document.title = t + " · jobscope";
      userLabel.hidden = own();
    }
    async function fetchAll(path) {
      const got = [];
      let cursor = null;
      for (let pages = 0; pages < 10; pages++) {
        const r = await api(path + (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
        if (!r.ok || !r.json) return {error: r};
        got.push(...(r.json.jobs || []));
        cursor = r.json.next;
        if (!cursor) return {jobs: got, complete: true};
      }
      return {jobs: got, complete: false};
    }
    async function load() {
      await whoReady;
      titles();
      say("asking the head…");
      const q = new URLSearchParams();
      if (state.since) q.set("since", state.since);
      if (state.until) q.set("until", state.until);
      if (state.user && !own()) q.set("user", state.user);
      if (state.node) q.set("node", state.node);
      const rq = new URLSearchParams(q);
      rq.set("by", "job");
      rq.set("format", "json");
      const [jl, rep] = await Promise.all([fetchAll("/api/v1/jobs?limit=1000&" + q),
        api("/api/v1/report?" + rq)]);
      if (jl.error) { say(apiError(jl.error), true); out.replaceChildren(); return; }
      /* the report's rows are "scheduler:id@node" */
      const rows = new Map();
      if (rep.ok && rep.json) for (const r of rep.json.rows || []) rows.set(r.key, r);
      const now = Date.now();
      list = jl.jobs.map(j => jobFigures(j, rows.get(j.scheduler + ":" + j.job_id + "@" + j.node), now));
      const a = timeMs(state.since, now) || 0, b = timeMs(state.until, now) || now;
      const hour = state.hour === "" ? null : Number(state.hour);
      const wd = state.weekday === "" ? null : WEEKDAYS.indexOf(state.weekday);
      if (hour !== null || (wd !== null && wd >= 0))
        list = list.filter(j => ranIn(j, a, b, hour, wd !== null && wd >= 0 ? wd : null));
      filterNote.textContent = (hour !== null ? "Jobs that ran in the hour " + state.hour + ":00 of a day. " : "") +
        (wd !== null && wd >= 0 ? "Jobs that ran on a " + state.weekday + ". " : "") +
        (jl.complete ? "" : "The first 10,000 jobs of the range: narrow it to see the rest. ") +
        (rep.ok ? "Efficiencies and idle hours are the report's (--by job), within the range." :
          "No efficiencies from the report (" + rep.status + "): the jobs' own summaries.");
      say("");
      loaded = true;
      draw();
    }
    function draw() {
      const needle = state.q.toLowerCase();
      const shown = list.filter(j => !needle || [j.key, j.job_id, j.name, j.user, j.node, j.state]
        .some(v => v && String(v).toLowerCase().includes(needle)));
      const desc = state.sort.startsWith("-"), sid = state.sort.replace(/^-/, "");
      const col = JOB_COLS.find(c => c.id === sid) || JOB_COLS[5];
      shown.sort((x, y) => {
        const a = col.get(x), b = col.get(y);
        if (a === null || a === undefined) return b === null || b === undefined ? 0 : 1; /* unknown last */
        if (b === null || b === undefined) return -1;
        const c = typeof a === "number" ? a - b : String(a).localeCompare(String(b));
        return desc ? -c : c;
      });
      const cols = JOB_COLS.filter(c => !(own() && c.id === "user"));
      const head = el("tr", {}, ...cols.map(c => {
        const on = c.id === sid;
        return el("th", {scope: "col", class: c.num ? "num" : null, "aria-sort": on ? (desc ? "descending" : "ascending") : null},
          el("button", {type: "button", class: "sort", "data-sort": c.id,
            onclick: () => { state.sort = (on && !desc) || (!on && c.num) ? "-" + c.id : c.id; keepInUrl(state); draw(); },
            text: c.label + (on ? (desc ? " ▼" : " ▲") : "")}));
      }));
      const trs = shown.map(j => el("tr", {"data-key": j.key}, ...cols.map(c => {
        const v = c.show ? c.show(j) : c.get(j);
        const td = el("td", {class: c.num ? "num" : null, "data-col": c.id});
        if (v instanceof Node) td.append(v); else td.textContent = v === null || v === undefined || v === "" ? "—" : v;
        return td;
      })));
      if (!shown.length) trs.push(el("tr", {}, el("td", {colspan: String(cols.length), class: "muted", text: "no jobs"})));
      out.replaceChildren(el("div", {class: "table-wrap", id: "jobs-list"},
        el("table", {}, el("caption", {class: "muted", id: "jobs-count",
          text: shown.length + " of " + list.length + " jobs · click a column to sort"}),
          el("thead", {}, head), el("tbody", {}, ...trs))));
      body.dataset.loaded = loaded ? "jobs" : "";
    }
    search.addEventListener("input", () => { state.q = search.value; keepInUrl(state); draw(); });
    form.addEventListener("submit", ev => {
      ev.preventDefault();
      picker.read();
      state.q = search.value;
      state.user = user.value.trim();
      state.node = node.value.trim();
      keepInUrl(state);
      load();
    });
    body.addEventListener("tokenchange", () => { whoami().then(load); });
    load();
  }

  /* ---- a node (head): its time series over a range ---- */

  function host() {
    const p = new URLSearchParams(location.search);
    const name = p.get("name");
    if (!name) { say("no node: /ui/node?name=HOST (a node of the cluster page)", true); return; }
    document.getElementById("title").textContent = "Node " + name;
    document.title = name + " · jobscope";
    const state = {name: name, since: p.get("since") || "1h", until: p.get("until") || ""};
    const picker = rangePicker(state, () => { keepInUrl(state); load(); });
    const form = el("form", {class: "inline", id: "node-form"}, ...picker.fields,
      el("button", {type: "submit", class: "primary", text: "Show"}));
    const info = el("div", {id: "node-info"});
    const out = el("div", {class: "charts", id: "node-charts"});
    content.replaceChildren(form, picker.help, info, out);
    form.addEventListener("submit", ev => { ev.preventDefault(); picker.read(); keepInUrl(state); load(); });
    async function series(metric, gpu) {
      let q = "/api/v1/series?node=" + encodeURIComponent(name) + "&metric=" + metric;
      if (gpu !== undefined) q += "&gpu=" + gpu;
      if (state.since) q += "&since=" + encodeURIComponent(state.since);
      if (state.until) q += "&until=" + encodeURIComponent(state.until);
      const r = await api(q);
      if (!r.ok || !r.json) throw r;
      return r.json.points || [];
    }
    /* a counter's rate per second between samples (a reset: a gap) */
    const rate = (pts, scale) => pts.slice(1).map((b, i) => {
      const a = pts[i], dt = (b.ts_ms - a.ts_ms) / 1000;
      return [b.ts_ms, a.value === null || b.value === null || dt <= 0 || b.value < a.value ? null : (b.value - a.value) / dt * (scale || 1)];
    });
    /* at most about 600 points a line: the mean of each bucket */
    function thin(points) {
      if (points.length <= 600) return points;
      const n = Math.ceil(points.length / 600), outp = [];
      for (let i = 0; i < points.length; i += n) {
        const part = points.slice(i, i + n), vals = part.map(x => x[1]).filter(v => v !== null);
        outp.push([part[0][0], vals.length ? vals.reduce((x, y) => x + y, 0) / vals.length : null]);
      }
      return outp;
    }
    const perSec = v => bytes(v) + "/s";
    async function load() {
      say("asking the head…");
      try {
        const [nodes, gpus] = await Promise.all([api("/api/v1/nodes"), api("/api/v1/gpus")]);
        if (!nodes.ok) throw nodes;
        const me = ((nodes.json || {}).nodes || []).find(n => n.node === name);
        if (!me) { say("no node " + name + " at this head", true); out.replaceChildren(); return; }
        const mine = ((gpus.json || {}).gpus || []).filter(g => g.node === name);
        const names = ["cpu_user_ms", "cpu_system_ms", "cpu_idle_ms", "cpu_iowait_ms", "mem_available_bytes",
          "load1_milli", "net_rx_bytes", "net_tx_bytes", "disk_read_bytes", "disk_write_bytes"];
        const got = await Promise.all(names.map(m => series(m)));
        const gs = await Promise.all(mine.map(g => series("util_pct", g.index)));
        const m = Object.fromEntries(names.map((n, i) => [n, got[i]]));
        const busy = m.cpu_user_ms.slice(1).map((b, i) => {
          const a = m.cpu_user_ms[i], ts = b.ts_ms;
          const parts = ["cpu_user_ms", "cpu_system_ms", "cpu_idle_ms", "cpu_iowait_ms"].map(k => {
            const x = m[k][i], y = m[k][i + 1];
            return x && y && x.value !== null && y.value !== null ? y.value - x.value : null;
          });
          if (parts.includes(null) || a.value === null) return [ts, null];
          const all = parts.reduce((x, y) => x + y, 0);
          return [ts, all > 0 ? (parts[0] + parts[1]) / all * 100 : null];
        });
        const memUsed = m.mem_available_bytes.map(x => [x.ts_ms, x.value === null || !me.mem_total_bytes ? null : me.mem_total_bytes - x.value]);
        const capped = got.concat(gs).some(x => x.length >= 100000);
        info.replaceChildren(el("p", {class: "muted", id: "node-summary",
          text: num(me.cores, 0) + " cores, " + bytes(me.mem_total_bytes) + " of memory, " + mine.length + " GPUs; " +
            m.load1_milli.length + " samples in the range" + (capped ? " (the first 100,000 of each series: narrow the range for the rest)" : "") + "."}));
        out.replaceChildren(
          lineChart("CPU busy (user and system, of all cores)", [{label: "busy", points: thin(busy)}], v => num(v, 0) + " %", "chart-cpu", {clock: true, unit: "% of the node's CPU", ymax: 100}),
          lineChart("Memory used (total minus available)", [{label: "used", cls: "b", points: thin(memUsed)}], bytes, "chart-mem", {clock: true, unit: "bytes", ymax: me.mem_total_bytes || undefined}),
          lineChart("Load (1 minute)", [{label: "load1", points: thin(m.load1_milli.map(x => [x.ts_ms, x.value === null ? null : x.value / 1000]))}], v => num(v), "chart-load", {clock: true, unit: "runnable tasks"}),
          lineChart("Network", [{label: "received", points: thin(rate(m.net_rx_bytes))}, {label: "sent", points: thin(rate(m.net_tx_bytes))}], perSec, "chart-net", {clock: true, unit: "bytes per second"}),
          lineChart("Disk", [{label: "read", points: thin(rate(m.disk_read_bytes))}, {label: "written", points: thin(rate(m.disk_write_bytes))}], perSec, "chart-disk", {clock: true, unit: "bytes per second"}),
          ...(mine.length ? [lineChart("GPU utilization", mine.map((g, i) => ({label: "GPU " + g.index, points: thin(gs[i].map(x => [x.ts_ms, x.value]))})), v => num(v, 0) + " %", "chart-gpus", {clock: true, unit: "% utilization", ymax: 100})] : []));
        say("");
        body.dataset.loaded = "node";
      } catch (r) {
        say(apiError(r), true);
      }
    }
    body.addEventListener("tokenchange", load);
    load();
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

  const pages = {cluster: cluster, node: node, job: job, jobs: jobs, host: host, history: history, sessions: sessions};
  if (pages[page]) pages[page]();
})();

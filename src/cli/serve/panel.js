// The web panel's script, served by `voxdesk serve` at /panel.js (the panel's Content-Security-Policy allows no inline script): log in, follow the event stream, confirm, stop, start, open reports.
"use strict";
const $ = (id) => document.getElementById(id);
// The token lives in this tab only (sessionStorage), never in localStorage, where every page of
// this origin (a report opened from here) could read it.
localStorage.removeItem("voxdesk-token");
let token = sessionStorage.getItem("voxdesk-token") || "";
let current = null;      // the session this panel follows
let running = false;
let es = null;
let lastPlan = "";

// A token in the address's fragment (never sent to the server) logs in at once, and the
// fragment is taken out of the address and the tab's history at once: on load, and when it is
// pasted into an open panel (a same-page navigation: no reload, a new history entry).
function takeFragment() {
  if (!location.hash.startsWith("#token=")) return false;
  const given = location.hash.slice(7);
  history.replaceState(null, "", location.pathname + location.search);
  try { token = decodeURIComponent(given); } catch { token = ""; }
  return token !== "";
}
takeFragment();
window.addEventListener("hashchange", () => { if (takeFragment()) connect(); });

async function api(path, opts = {}) {
  const r = await fetch(path, { ...opts, headers: { ...(opts.headers || {}), Authorization: "Bearer " + token } });
  if (r.status === 401) { logout("That token was refused."); throw new Error("unauthorized"); }
  return r;
}
async function json(path, opts) {
  const r = await api(path, opts);
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function logout(why) {
  sessionStorage.removeItem("voxdesk-token");
  token = "";
  if (es) es.close();
  $("app").hidden = true; $("login").hidden = false;
  $("loginerr").textContent = why || "";
  $("state").textContent = "not connected";
}

$("loginform").addEventListener("submit", async (e) => {
  e.preventDefault();
  token = $("token").value.trim();
  await connect();
});

async function connect() {
  try {
    await json("/observe/health");
  } catch (err) {
    if (err.message !== "unauthorized") $("loginerr").textContent = "Cannot reach voxdesk: " + err.message;
    return;
  }
  sessionStorage.setItem("voxdesk-token", token);
  $("login").hidden = true; $("app").hidden = false;
  await refresh();
  listen();
}

function setState(text) { $("state").textContent = text; }

function setRunning(r) {
  running = r;
  $("stop").disabled = !r;
  $("go").disabled = r;
}

function listen() {
  if (es) es.close();
  // EventSource sends Last-Event-ID by itself when it reconnects: nothing is missed.
  es = new EventSource("/observe/events?token=" + encodeURIComponent(token));
  es.onopen = () => setState(running ? "running " + current : "connected");
  es.onerror = () => setState("reconnecting…");
  const on = (kind, f) => es.addEventListener(kind, (m) => f(JSON.parse(m.data)));
  on("session_started", (e) => {
    current = e.session; setRunning(true);
    $("steps").innerHTML = ""; $("transcript").innerHTML = "";
    $("frame").hidden = true; $("noframe").hidden = false;
    setState("running " + e.session);
    say("voxdesk", "Task: " + e.task);
    refreshHistory();
  });
  on("plan", (e) => { lastPlan = e.say; });
  on("step", (e) => { if (e.session === current) { addStep({ plan: lastPlan, ...e }); showFrame(e.session, e.index); } });
  on("narration", (e) => say("voxdesk", e.text));
  on("transcript", (e) => say(e.who, e.text));
  on("refusal", (e) => say("refused", e.rule + ": " + e.message));
  on("confirmation_asked", (e) => { current = e.session; ask(e); });
  on("confirmation_answered", (e) => { $("confirm").hidden = true; say("you", e.yes ? "yes" : "no"); });
  on("emergency_stop", (e) => say("stop", "stopped by " + e.cause));
  on("session_ended", (e) => {
    $("confirm").hidden = true;
    if (e.session === current) { setRunning(false); setState(e.summary.startsWith(e.status) ? e.summary : e.status + ": " + e.summary); }
    say("voxdesk", "Ended " + (e.summary.startsWith(e.status) ? e.summary : e.status + ": " + e.summary));
    refreshHistory();
  });
  on("gap", () => refresh());
}

function say(who, text) {
  const p = document.createElement("p");
  const w = document.createElement("span"); w.className = "who"; w.textContent = who;
  p.append(w, document.createTextNode(text));
  $("transcript").append(p);
  $("transcript").scrollTop = $("transcript").scrollHeight;
}

function addStep(s) {
  const li = document.createElement("li");
  const b = document.createElement("span");
  const v = s.rails && s.rails !== "approved" && s.rails !== "recorded" ? "refused" : s.verdict || s.verification;
  b.className = "badge " + v; b.textContent = v;
  const ms = s.ms ?? (s.timings_ms ? Object.values(s.timings_ms).reduce((a, x) => a + x, 0) : null);
  li.append(b, document.createTextNode(" " + (s.plan || s.detail || "") + (ms != null ? " · " + Math.round(ms) + " ms" : "")));
  li.dataset.step = s.index;
  $("steps").append(li);
}

// The step's picture, zoomed to the part worth looking at (its targets and clicks), as the
// report does: a whole 1080p screen is unreadable on a phone.
async function showFrame(id, n, tries = 8) {
  try {
    const [r, rec] = await Promise.all([api(`/observe/sessions/${id}/steps/${n}.png`), json(`/observe/sessions/${id}`)]);
    // The picture is written just after the step is told: look again shortly.
    if (!r.ok) { if (tries > 0) setTimeout(() => showFrame(id, n, tries - 1), 250); return; }
    const img = await createImageBitmap(await r.blob());
    const step = (rec.steps || []).find((s) => s.index === n) || {};
    let [x, y, w, h] = [0, 0, img.width, img.height];
    if (step.focus && step.picture) {
      const k = img.width / step.picture[0];
      [x, y, w, h] = step.focus.map((v) => v * k);
    }
    const c = $("frame");
    c.width = Math.round(w); c.height = Math.round(h);
    c.getContext("2d").drawImage(img, x, y, w, h, 0, 0, c.width, c.height);
    c.hidden = false; $("noframe").hidden = true;
    $("frameinfo").textContent = "step " + n;
  } catch (err) { console.warn("no picture of step " + n + ": " + err); }
}

function ask(q) {
  $("question").textContent = q.question || q.text || "";
  const ul = $("qsteps"); ul.innerHTML = "";
  for (const r of q.reasons || []) { const li = document.createElement("li"); li.textContent = r; ul.append(li); }
  $("confirm").hidden = false;
  $("yes").focus();
}

async function answer(yes) {
  if (!current) return;
  $("yes").disabled = $("no").disabled = true;
  try { await json(`/observe/sessions/${current}/confirm`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ yes }) }); $("confirm").hidden = true; }
  catch (err) { say("error", err.message); }
  finally { $("yes").disabled = $("no").disabled = false; }
}
$("yes").addEventListener("click", () => answer(true));
$("no").addEventListener("click", () => answer(false));

async function stop() {
  if (!current || !running) return;
  // Said before asking: the session's end can arrive on the event stream before the answer.
  setState("stopping…");
  try { await json(`/observe/sessions/${current}/stop`, { method: "POST" }); }
  catch (err) { say("error", err.message); if (running) setState("running " + current); }
}
$("stop").addEventListener("click", stop);
document.addEventListener("keydown", (e) => { if (e.altKey && (e.key === "s" || e.key === "S")) { e.preventDefault(); stop(); } });

$("provider").addEventListener("change", () => {
  $("model").value = $("provider").value === "local" ? "offline-planner" : "";
});

$("startform").addEventListener("submit", async (e) => {
  e.preventDefault();
  $("starterr").textContent = "";
  try {
    const s = await json("/observe/sessions", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ task: $("task").value, provider: $("provider").value, model: $("model").value, mode: $("mode").value }),
    });
    current = s.id; setRunning(true); setState("running " + s.id);
  } catch (err) { $("starterr").textContent = err.message; }
});

async function refresh() {
  const h = await json("/observe/health").catch(() => null);
  if (h && h.session) {
    current = h.session.id; setRunning(true);
    const s = await json("/observe/sessions/" + current).catch(() => null);
    if (s) {
      $("steps").innerHTML = "";
      s.steps.forEach(addStep);
      if (s.steps.length) showFrame(s.id, s.steps[s.steps.length - 1].index);
      if (s.pending_confirmation) ask(s.pending_confirmation);
    }
    setState("running " + current);
  } else {
    setRunning(false);
    setState(h ? (h.ready ? "ready" : "not ready: see health") : "connected");
  }
  await refreshHistory();
}

let historyAsked = 0;
async function refreshHistory() {
  // Only the newest answer is shown: an older request may come back last.
  const mine = ++historyAsked;
  const l = await json("/observe/sessions").catch(() => ({ sessions: [] }));
  if (mine !== historyAsked) return;
  const ul = $("history"); ul.innerHTML = "";
  for (const s of l.sessions.slice(0, 30)) {
    if (!s.id) continue;
    const li = document.createElement("li");
    const b = document.createElement("span"); b.className = "badge " + s.status; b.textContent = s.status;
    const a = document.createElement("a"); a.href = "#"; a.textContent = s.task; a.style.color = "inherit";
    a.addEventListener("click", (e) => { e.preventDefault(); openReport(s.id); });
    li.append(b, document.createTextNode(" "), a, document.createTextNode(` · ${s.steps} steps`));
    ul.append(li);
  }
}

// The report in a new tab with no way back to this one (noopener: no `opener`, no copy of this
// tab's sessionStorage); the report runs no script (its own Content-Security-Policy).
async function openReport(id) {
  try {
    const r = await api(`/observe/sessions/${id}/report`);
    if (!r.ok) throw new Error((await r.json().catch(() => ({}))).error || r.statusText);
    const url = URL.createObjectURL(new Blob([await r.text()], { type: "text/html" }));
    window.open(url, "_blank", "noopener,noreferrer");
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  } catch (err) { say("error", "no report: " + err.message); }
}

if (token) connect(); else $("token").focus();

// The status page: polls /api/v1/status and draws each series' acceptance curve. No dependencies.
"use strict";
const REFRESH_MS = 2000;
const fmt = (v, d = 2) => (v === null || v === undefined ? "—" : Number(v).toFixed(d));
const pct = (v) => (v === null || v === undefined ? "—" : (100 * v).toFixed(1) + "%");
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));

function ago(seconds) {
  if (seconds < 3600) return Math.max(1, Math.round(seconds / 60)) + " min";
  if (seconds < 48 * 3600) return Math.round(seconds / 3600) + " h";
  return (seconds / 86400).toFixed(1) + " d";
}

function when(epoch) {
  // UTC, as the alerts and logs say it; the date only when it is not today
  const d = new Date(epoch * 1000), iso = d.toISOString(), today = new Date().toISOString().slice(0, 10);
  return (iso.slice(0, 10) === today ? "" : iso.slice(5, 10) + " ") + iso.slice(11, 16) + " UTC";
}

function since(entry) {
  if (entry.health_since === null || entry.health_since === undefined) return "";
  const now = Date.now() / 1000;
  return `<span class="since" data-since="${entry.health_since}">since ${when(entry.health_since)} (${ago(now - entry.health_since)})</span>`;
}

function reference(entry) {
  const ref = entry.reference;
  if (!ref || !ref.ready) return `<div><b class="ref-l">—</b><span>reference L (learning)</span></div>`;
  return `<div title="pooled over ${ref.drafts} healthy drafts"><b class="ref-l">${fmt(ref.mean_acceptance_length)}</b><span>reference L</span></div>`;
}

function previous(entry) {
  return (entry.previous_references || []).map((r) => `<p class="muted previous">earlier reference (${esc(r.method || "?")}, k = ${r.num_speculative_tokens ?? "?"}${r.draft_model ? ", " + esc(r.draft_model) : ""}): L ${fmt(r.mean_acceptance_length)}, positions ${(r.position_acceptance || []).slice(0, 6).map((v) => fmt(v)).join(" ")} — ${esc(String(r.retired).replace("_", " "))} ${when(r.retired_at)}</p>`).join("");
}

const BEGAN = { first_traffic: "the first traffic", restart: "a restart", config_change: "a config change", health: "a change of health", acknowledged: "an acknowledgement", hold: "the hold" };

function period(entry) {
  // what is true now: since the last config change, restart or health change; the past under it
  const now = entry.current_period;
  if (!now) return "";
  const k = now.recommended_speculative_tokens ?? "—", from = now.recommendation_from === "reference" ? " (from the reference)" : "";
  let html = `<p class="now">now, since ${when(now.start)} (${esc(BEGAN[now.began_by] || now.began_by)}): L <b>${fmt(now.mean_acceptance_length)}</b>, α ${pct(now.draft_acceptance_ratio)}, recommended k <b>${k}</b>${from}</p>`;
  if (now.advice) html += `<p class="advice">${esc(now.advice)}</p>`;
  html += (entry.earlier_periods || []).slice(0, 4).map((p) => `<p class="muted earlier">before: ${when(p.start)} → ${when(p.end)} ${esc(p.health || "?")} (${esc(BEGAN[p.began_by] || p.began_by)}), k = ${p.num_speculative_tokens ?? "?"}, L ${fmt(p.mean_acceptance_length)}, position 0 ${fmt(p.position0_acceptance)}</p>`).join("");
  return html;
}

function curve(entry) {
  const rates = entry.position_acceptance || [], cond = entry.conditional_acceptance || [];
  const k = rates.length, w = 320, h = 130, pad = 18, slot = (w - pad) / Math.max(k, 1), bw = slot * 0.38;
  let bars = "";
  rates.forEach((r, i) => {
    const x = pad + i * slot, c = cond[i] === null || cond[i] === undefined ? 0 : cond[i];
    bars += `<rect class="bar-rate" data-position="${i}" data-value="${r}" x="${x}" y="${h - 16 - r * (h - 26)}" width="${bw}" height="${r * (h - 26)}"><title>position ${i}: ${pct(r)} of drafts reach it</title></rect>`;
    bars += `<rect class="bar-cond" data-position="${i}" data-value="${c}" x="${x + bw}" y="${h - 16 - c * (h - 26)}" width="${bw}" height="${c * (h - 26)}"><title>position ${i}: ${pct(c)} accepted when position ${i - 1} was</title></rect>`;
    const ref = entry.reference && entry.reference.ready ? entry.reference.position_acceptance[i] : undefined;
    if (ref !== undefined) bars += `<line class="ref-tick" data-position="${i}" data-value="${ref}" x1="${x - 1}" x2="${x + 2 * bw + 1}" y1="${h - 16 - ref * (h - 26)}" y2="${h - 16 - ref * (h - 26)}"><title>position ${i}: reference ${pct(ref)}</title></line>`;
    if (k <= 16 || i % 2 === 0) bars += `<text x="${x + bw}" y="${h - 3}" text-anchor="middle">${i}</text>`;
  });
  let marker = "";
  const best = entry.current_period ? entry.current_period.recommended_speculative_tokens : entry.recommended_speculative_tokens;
  if (best !== null && best !== undefined && k) {
    const x = pad + best * slot - slot * 0.12, right = x > w - 100;
    marker = `<line class="k-marker" data-k="${best}" x1="${x}" x2="${x}" y1="6" y2="${h - 14}"/><text x="${right ? x - 4 : x + 4}" y="14" text-anchor="${right ? "end" : "start"}">recommended k = ${best}</text>`;
  }
  const axis = `<text x="0" y="12">1.0</text><text x="0" y="${h - 16}">0</text>`;
  return `<svg class="curve" viewBox="0 0 ${w} ${h}" role="img" aria-label="per-position acceptance">${axis}${bars}${marker}</svg>`;
}

function spark(points) {
  if (!points || points.length < 2) return '<p class="muted">L over time appears after a few intervals.</p>';
  const w = 320, h = 56, left = 34, xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs), lo = Math.min(...ys), hi = Math.max(...ys);
  const y0 = Math.max(1, lo - 0.25 * (hi - lo + 0.2)), y1 = hi + 0.1 * (hi - lo + 0.2);
  const px = (t) => left + ((t - x0) / (x1 - x0 || 1)) * (w - left - 2), py = (v) => h - 4 - ((v - y0) / (y1 - y0)) * (h - 8);
  const path = points.map((p, i) => `${i ? "L" : "M"}${px(p[0]).toFixed(1)},${py(p[1]).toFixed(1)}`).join(" ");
  const minutes = Math.max(1, Math.round((x1 - x0) / 60));
  return `<svg class="timeline" viewBox="0 0 ${w} ${h}" aria-label="mean acceptance length over time"><path class="spark" d="${path}"/><text x="0" y="10">${fmt(y1)}</text><text x="0" y="${h - 2}">${fmt(y0)}</text></svg><p class="muted">mean acceptance length per interval, last ${minutes} min</p>`;
}

function crossCheck(entry, checks) {
  // over the longest window: short windows of the two sources start at different moments
  const mine = checks.filter((c) => c.reference_upstream === entry.upstream && c.model_name === entry.model_name && c.engine === entry.engine && c.quantity === "mean_acceptance_length");
  if (!mine.length) return "";
  return mine
    .filter((c) => c.window_seconds === Math.max(...mine.filter((d) => d.compared_upstream === c.compared_upstream).map((d) => d.window_seconds)))
    .map((c) => `<p class="${c.agree ? "up" : "down"} crosscheck">${esc(c.compared_source)} and ${esc(c.reference_source)} ${c.agree ? "agree" : "disagree"} on L over ${esc(c.window)}: ${fmt(c.compared)} vs ${fmt(c.reference)} (${(100 * c.relative_difference).toFixed(1)}%)</p>`)
    .join("");
}

function card(entry, source, checks) {
  const health = source ? (source.up ? '<span class="up">source up</span>' : `<span class="down">source down${source.last_error ? ": " + esc(source.last_error) : ""}</span>`) : "";
  return `<article class="card" data-upstream="${esc(entry.upstream)}" data-model="${esc(entry.model_name)}" data-engine="${esc(entry.engine)}" data-source="${esc(entry.source)}">
    <h2>${esc(entry.model_name)} <span class="badge">engine ${esc(entry.engine)}</span><span class="badge">${esc(entry.source)}</span>
      <span class="verdict ${esc(entry.health)}">${esc(entry.health.replace("_", " "))}</span>${since(entry)}</h2>
    <p class="reason">${esc((entry.current_period ? entry.current_period.reason : entry.reason) || "")}</p>
    ${period(entry)}
    ${(entry.notes || []).map((n) => `<p class="muted note">${esc(n)}</p>`).join("")}
    <div class="numbers">
      <div><b class="mal">${fmt(entry.mean_acceptance_length)}</b><span>mean acceptance length</span></div>
      ${reference(entry)}
      <div><b>${pct(entry.draft_acceptance_ratio)}</b><span>draft acceptance</span></div>
      <div><b>${entry.num_speculative_tokens ?? "—"}</b><span>k drafted</span></div>
      <div><b class="rec-k">${(entry.current_period ? entry.current_period.recommended_speculative_tokens : entry.recommended_speculative_tokens) ?? "—"}</b><span>recommended k${entry.current_period && entry.current_period.recommendation_from === "reference" ? " (reference)" : ""}</span></div>
    </div>
    <div class="plots"><div>${curve(entry)}
    <p class="legend"><span><i style="background:var(--rate)"></i>reached position i</span><span><i style="background:var(--cond)"></i>accepted given i−1</span><span><i class="tick"></i>reference</span><span>window ${esc(entry.window)}</span></p></div>
    <div>${spark(entry.timeline)}</div></div>
    ${previous(entry)}
    ${crossCheck(entry, checks)}
    <p class="muted">${esc(entry.method || "method ?")}${entry.draft_model ? " · " + esc(entry.draft_model) : ""} · ${esc(entry.upstream)} · ${health}</p>
  </article>`;
}

// which zone the log's local stamps are read in (vLLM prints none): a wrong one puts every time hours off
function zone(s) {
  const z = s.log_zone;
  if (!z || s.kind !== "log") return "";
  return z.utc_offset_seconds === null ? ` · stamps: zone ${esc(z.from)}` : ` · stamps in ${esc(z.zone)} (${esc(z.from)})`;
}

function render(status) {
  document.getElementById("error").hidden = true;
  const sources = new Map(status.sources.map((s) => [s.upstream, s]));
  const entries = status.series.filter((s) => s.window === status.health_window);
  const root = document.getElementById("series");
  root.innerHTML = entries.map((e) => card(e, sources.get(e.upstream), status.cross_check || [])).join("");
  const empty = document.getElementById("empty");
  empty.hidden = entries.length > 0;
  document.getElementById("empty-sources").innerHTML = status.sources
    .map((s) => `<li>${esc(s.upstream)} (${esc(s.kind)}): ${s.up ? "up" : "down"}${s.last_error ? " — " + esc(s.last_error) : ""}${zone(s)}</li>`).join("");
  document.getElementById("sources-section").hidden = status.sources.length === 0;
  document.getElementById("sources").innerHTML = status.sources
    .map((s) => `<li class="${s.up ? "up" : "down"}">${esc(s.upstream)} — ${esc(s.kind)}, ${s.up ? "up" : "down"}${s.last_error ? ": " + esc(s.last_error) : ""}${zone(s)}</li>`).join("");
  document.getElementById("updated").textContent = "· updated " + new Date().toLocaleTimeString() + " · v" + status.version;
}

async function refresh() {
  try {
    const response = await fetch("/api/v1/status", { cache: "no-store" });
    if (!response.ok) throw new Error("HTTP " + response.status);
    render(await response.json());
  } catch (error) {
    document.getElementById("error").hidden = false;
    document.getElementById("error-text").textContent = String(error);
  }
}
refresh();
setInterval(refresh, REFRESH_MS);

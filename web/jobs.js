// The job list of `cutrace serve`: GET /api/jobs with the filters, one row per job; "Open" loads
// the job and shows its report page (/job/ID/), "Unload" frees it on the server. Every string
// from the server (job names come from directory names) goes into the page as text, never HTML.
"use strict";

const $ = (id) => document.getElementById(id);
let refreshTimer = null;

function humanBytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? String(n) : n.toFixed(1)) + " " + units[i];
}

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

function button(label, onClick, cls) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  b.className = cls;
  b.addEventListener("click", onClick);
  return b;
}

function showMessage(text, isError) {
  const m = $("message");
  m.textContent = text;
  m.className = isError ? "error" : "";
}

function query() {
  const p = new URLSearchParams();
  const name = $("f-name").value.trim();
  if (name) p.set("name", name);
  const st = [...document.querySelectorAll("#f-status input:checked")].map((c) => c.value);
  if (st.length) p.set("status", st.join(","));
  for (const [key, id] of [["from", "f-from"], ["to", "f-to"]]) {
    const v = $(id).value;
    if (v) {
      const ms = new Date(v).getTime();
      if (Number.isFinite(ms)) p.set(key, String(ms));
    }
  }
  return p.toString();
}

async function post(url) {
  const r = await fetch(url, { method: "POST" });
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

async function openJob(job) {
  showMessage("Loading " + job.name + " ...", false);
  try {
    await post("/api/jobs/" + encodeURIComponent(job.id) + "/load");
    window.location.href = "/job/" + encodeURIComponent(job.id) + "/";
  } catch (e) {
    showMessage("Cannot load " + job.name + ": " + e.message, true);
  }
}

async function unloadJob(job) {
  try {
    await post("/api/jobs/" + encodeURIComponent(job.id) + "/unload");
    showMessage("Unloaded " + job.name, false);
  } catch (e) {
    showMessage("Cannot unload " + job.name + ": " + e.message, true);
  }
  refresh();
}

function row(job) {
  const tr = document.createElement("tr");
  tr.dataset.id = job.id;
  tr.appendChild(cell(job.name, "name"));
  tr.appendChild(cell(new Date(job.created_ns / 1e6).toLocaleString(), "created"));
  const st = cell("", "");
  const badge = document.createElement("span");
  badge.className = "status " + job.status;
  badge.textContent = job.status;
  st.appendChild(badge);
  if (job.reason) {
    const why = document.createElement("span");
    why.className = "reason";
    why.textContent = job.reason;
    st.appendChild(why);
  }
  if (job.problems.length) st.title = job.problems.join("\n");
  if (job.notes && job.notes.length) {
    // The directory holds traces of separate runs, which the report adds up as one job's.
    const mixed = document.createElement("span");
    mixed.className = "mixed";
    mixed.textContent = "mixed runs";
    mixed.title = job.notes.join("\n");
    st.appendChild(mixed);
  }
  tr.appendChild(st);
  tr.appendChild(cell(String(job.ranks), "num ranks"));
  tr.appendChild(cell(humanBytes(job.size_bytes), "num size"));
  tr.appendChild(cell(job.loaded ? "yes" : "no", "loaded"));
  const actions = cell("", "actions");
  actions.appendChild(button("Open", () => openJob(job), "open"));
  // "Compare with...": the first job chosen is A, the next one B (`cutrace diff A B`).
  const cmp = button(compareWith ? (compareWith.id === job.id ? "Cancel" : "Compare with A") : "Compare with...",
                     () => compare(job), "compare");
  if (compareWith && compareWith.id === job.id) tr.classList.add("compare-a");
  actions.appendChild(cmp);
  if (job.loaded) actions.appendChild(button("Unload", () => unloadJob(job), "unload"));
  tr.appendChild(actions);
  return tr;
}

// The job chosen as A of a comparison, until B is chosen (or it is cancelled).
let compareWith = null;
let lastJobs = [];

function compare(job) {
  if (!compareWith) compareWith = job;
  else if (compareWith.id === job.id) compareWith = null;
  else return location.assign("/compare/" + compareWith.id + "/" + job.id + "/");
  showMessage(compareWith ? "Comparing " + compareWith.name + " (A) with the job chosen next (B)" : "", false);
  document.querySelector("#jobs tbody").replaceChildren(...lastJobs.map(row));
}

async function refresh() {
  clearTimeout(refreshTimer);
  let data;
  try {
    const r = await fetch("/api/jobs?" + query());
    data = await r.json();
    if (!r.ok) throw new Error(data.error || r.statusText);
  } catch (e) {
    showMessage("Cannot list the jobs: " + e.message, true);
    return;
  }
  $("root").textContent = data.root;
  const body = document.querySelector("#jobs tbody");
  lastJobs = data.jobs;
  body.replaceChildren(...data.jobs.map(row));
  if (!$("message").classList.contains("error")) {
    showMessage(data.jobs.length + " of " + data.total + " jobs", false);
  }
  // Running jobs change: look again in a few seconds.
  if (data.jobs.some((j) => j.status === "running" || j.status === "stopping")) refreshTimer = setTimeout(refresh, 5000);
}

document.addEventListener("DOMContentLoaded", () => {
  $("filters").addEventListener("submit", (e) => { e.preventDefault(); refresh(); });
  $("f-clear").addEventListener("click", () => { $("filters").reset(); refresh(); });
  for (const box of document.querySelectorAll("#f-status input")) box.addEventListener("change", refresh);
  refresh();
});
// Coming back with the browser's back button shows the page from its cache: list again.
window.addEventListener("pageshow", (e) => { if (e.persisted) refresh(); });

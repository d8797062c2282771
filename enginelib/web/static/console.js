// Ingestion console: counters, sources table, Retry / Drop DLQ, Cancel, Purge DONE, upload; refreshes
// every 5 s while jobs are active (PENDING, RUNNING or FAILED awaiting a retry).
"use strict";
const STATUSES = ["PENDING", "RUNNING", "DONE", "FAILED", "DLQ"];
// The jobs a Cancel can take: not yet run, or failed and waiting for their retry.
const WAITING = ["PENDING", "FAILED"];
let timer = null;
// Whether the message is a refresh's own (no answer, the worker's error): the next refresh
// that reads no error takes it back. It stayed, under counters that had moved on, until a
// button's message replaced it.
let refreshSaid = false;
// The latest refresh's number: refreshes overlap (the timer's, a button's), and one answered
// after a newer one put back its older counts, rows and "active", which could stop the timer.
let refreshes = 0;

function say(text, isError, byRefresh) {
  const node = document.getElementById("message");
  node.textContent = text; node.className = isError ? "error" : "muted";
  refreshSaid = Boolean(byRefresh);
}

async function refresh() {
  const mine = ++refreshes;
  try {
    // Only the counts are shown (the sources table lists the jobs): the default page of 1000
    // job rows was read under the store's lock and sent every 5 s, holding searches back.
    const [jobs, sources] = await Promise.all([api("/api/jobs?limit=1"), api("/api/sources")]);
    if (mine !== refreshes) return;
    for (const status of STATUSES) {
      document.getElementById("count-" + status).textContent = jobs.counts[status];
    }
    document.getElementById("count-HISTORY").textContent = jobs.history;
    renderSources(sources);
    // the worker keeps retrying after its own failure (a full disk): say why nothing moves
    if (jobs.worker_error) { say("worker: " + jobs.worker_error + " (retrying)", true, true); }
    else if (refreshSaid) { say(""); }
    schedule(jobs.active || Boolean(jobs.worker_error));
  } catch (error) { if (mine === refreshes) say(error.message, true, true); }
}

function schedule(active) {
  document.getElementById("refresh-state").textContent = active ? "auto-refresh every 5 s" : "";
  if (active && timer === null) { timer = setInterval(refresh, 5000); }
  if (!active && timer !== null) { clearInterval(timer); timer = null; }
}

function renderSources(rows) {
  const body = document.querySelector("#sources tbody");
  // The rows are made anew each refresh (every 5 s while jobs run): a keyboard user on a
  // row's Drop lost the focus to the page; it goes to the same job's new button.
  const focused = body.contains(document.activeElement) ? document.activeElement.dataset.jobId : undefined;
  body.replaceChildren(...rows.map((row) => el("tr", {"data-status": row.status},
    el("td", {}, row.source, row.error ? el("div", {class: "muted"}, row.error) : null),
    el("td", {}, el("span", {class: "badge st-" + row.status}, row.status),
       row.status === "DLQ" ? dropButton(row) : null,
       WAITING.includes(row.status) ? cancelButton(row) : null),
    el("td", {}, row.tier ? el("span", {class: "badge tier-" + row.tier}, row.tier + " · " + row.truth_level)
                          : (row.truth_level || "")),
    el("td", {}, row.word_count === null ? "" : row.word_count),
    el("td", {}, row.status === "INDEXED" ? bar(row.authority_score) : "", " ",
       row.authority_score === null || row.authority_score === undefined ? "" : row.authority_score),
    el("td", {}, row.evidence_level || ""),
    el("td", {}, row.last_ingested ? row.last_ingested.replace("T", " ").slice(0, 19) + " UTC" : ""))));
  if (focused !== undefined) {
    const again = body.querySelector('button[data-job-id="' + CSS.escape(focused) + '"]');
    if (again) again.focus();
  }
}

// A DLQ row's own Drop: that job only (DELETE /api/jobs/ID), asked first: it is for good.
function dropButton(row) {
  // named for its job: a screen reader listed every row's button as "Drop"
  const button = el("button", {type: "button", class: "drop-job", "data-job-id": row.job_id,
                               "aria-label": "Drop job " + row.job_id + " (" + row.source + ")"}, "Drop");
  button.addEventListener("click", () => {
    if (confirm("Drop job " + row.job_id + " (" + row.document_id + ") for good?")) {
      act("/api/jobs/" + row.job_id, "dropped", "dropped", "DELETE");
    }
  });
  return button;
}

// A waiting row's Cancel (POST /api/jobs/ID/cancel): the job goes to the history as
// CANCELLED before it runs; asked first, as an uploaded file goes with it.
function cancelButton(row) {
  const button = el("button", {type: "button", class: "cancel-job", "data-job-id": row.job_id,
                               "aria-label": "Cancel job " + row.job_id + " (" + row.source + ")"}, "Cancel");
  button.addEventListener("click", () => {
    if (confirm("Cancel job " + row.job_id + " (" + row.document_id + ") before it runs?")) {
      act("/api/jobs/" + row.job_id + "/cancel", "cancelled", "cancelled");
    }
  });
  return button;
}

async function act(path, key, verb, method) {
  try {
    const result = await api(path, {method: method || "POST"});
    say(verb + " " + result[key] + " job" + (result[key] === 1 ? "" : "s"));
  } catch (error) { say(error.message, true); }
  await refresh();
}

document.getElementById("retry-dlq").addEventListener("click", () => act("/api/jobs/retry-dlq", "retried", "retried"));
document.getElementById("drop-dlq").addEventListener("click", () => {
  if (confirm("Drop every DLQ job for good? (Retry DLQ runs them again instead.)")) {
    act("/api/jobs/drop-dlq", "dropped", "dropped");
  }
});
document.getElementById("purge-done").addEventListener("click", () => act("/api/jobs/purge-done", "purged", "purged"));
// One upload at a time, said while under way: on a slow network nothing showed until the
// answer, and Upload pressed again meanwhile sent the file twice (two jobs).
document.getElementById("upload-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  if (form.dataset.busy) return;
  const body = new FormData(form);  // before the fields are disabled: those are left out
  const focused = document.activeElement;  // a disabled field loses the keyboard's focus
  form.dataset.busy = "1";
  for (const field of form.elements) field.disabled = true;
  say("uploading " + body.get("file").name + "…");
  try {
    const result = await api("/api/upload", {method: "POST", body: body});
    say("queued " + result.document_id + " as job " + result.job_id);
    form.reset();
  } catch (error) { say(error.message, true); }
  finally {
    for (const field of form.elements) field.disabled = false;
    delete form.dataset.busy;
    if (form.contains(focused) && document.activeElement === document.body) focused.focus();
  }
  await refresh();
});
// The timer runs only while the jobs this page last saw were active: a job queued elsewhere
// (another tab, `ingest --queue`) left an idle console on its old counts until reloaded.
// It refreshes whenever the user comes back to it.
document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") refresh(); });
window.addEventListener("focus", () => refresh());
window.addEventListener("pageshow", (event) => { if (event.persisted) refresh(); });  // Back
refresh();

// wfexec serve: the page's only script (the Content-Security-Policy allows no inline one). Hand-written, no
// library. The server renders every piece of HTML; this file posts the forms without leaving the page and swaps
// in the fragments the server renders again when the server-sent events say a run moved.
"use strict";

(function () {
  const csrf = (document.querySelector('meta[name="csrf"]') || {}).content || "";
  const finished = new Set(["completed", "failed", "cancelled"]);

  async function fragment(url) {
    const response = await fetch(url, { headers: { Accept: "text/html" }, credentials: "same-origin" });
    if (!response.ok) return null;
    const holder = document.createElement("div");
    holder.innerHTML = (await response.text()).trim();
    return holder.firstElementChild;
  }

  // Forms marked js-action are posted with fetch; without this script they post and come back (303).
  document.addEventListener("submit", async function (event) {
    const form = event.target;
    if (!form.classList || !form.classList.contains("js-action")) return;
    event.preventDefault();
    const error = form.querySelector(".form-error");
    if (error) error.textContent = "";
    // Read before the buttons are disabled: a disabled submitter's value is left out of the form.
    const body = new URLSearchParams(new FormData(form, event.submitter));
    const buttons = form.querySelectorAll("button");
    buttons.forEach(function (b) { b.disabled = true; });
    let data = {};
    let ok = false;
    try {
      const response = await fetch(form.action, {
        method: "POST",
        body: body,
        headers: { Accept: "application/json", "X-CSRF-Token": csrf },
        credentials: "same-origin",
      });
      data = await response.json().catch(function () { return {}; });
      ok = response.ok;
    } catch (e) {
      data = { error: "the server cannot be reached: " + e.message };
    }
    if (!ok) {
      buttons.forEach(function (b) { b.disabled = false; });
      if (error) error.textContent = data.error || "refused";
      return;
    }
    if (form.dataset.go === "run" && data.run_id) {
      window.location.assign("/runs/" + encodeURIComponent(data.run_id));
      return;
    }
    const run = data.run_id || data.id || (form.closest("[data-run]") || document.body).dataset.run;
    if (run) refresh(run);
  });

  function refresh(run) {
    if (document.body.dataset.page === "inbox") refreshCard(run);
    if (document.body.dataset.page === "run") refreshRun();
  }

  // The inbox: a card per run, in the section its status belongs to.
  async function refreshCard(run) {
    const card = await fragment("/runs/" + encodeURIComponent(run) + "/card");
    if (!card) return;
    const status = card.dataset.status;
    const section = status === "waiting" ? "waiting" : finished.has(status) ? "recent" : "running";
    const old = document.querySelector('.card[data-run="' + CSS.escape(run) + '"]');
    const target = document.querySelector('[data-section="' + section + '"]');
    if (old && old.parentElement === target) { old.replaceWith(card); return; }
    if (old) old.remove();
    if (target) target.prepend(card);
  }

  // A run's page: its summary and state again, and each step added to the timeline as it comes.
  async function refreshRun() {
    const run = document.body.dataset.run;
    const summary = await fragment("/runs/" + encodeURIComponent(run) + "/summary");
    const old = document.getElementById("summary");
    if (summary && old) old.replaceWith(summary);
    const state = await fragment("/runs/" + encodeURIComponent(run) + "/state");
    const oldState = document.getElementById("state");
    if (state && oldState) oldState.replaceWith(state);
  }

  function addStep(step) {
    const body = document.getElementById("journal");
    if (!body || body.querySelector('tr[data-step="' + step.step + '"]')) return;
    const row = document.createElement("tr");
    row.dataset.step = step.step;
    const cells = [String(step.step), step.node, step.type, String(step.target),
                   (step.duration_ms || 0).toFixed(1) + " ms", Object.keys(step.changes || {}).join(", ")];
    cells.forEach(function (text, i) {
      const cell = document.createElement("td");
      if (i === 1 || i === 3) {
        const code = document.createElement("code");
        code.textContent = text;
        cell.appendChild(code);
      } else {
        cell.textContent = text;
      }
      row.appendChild(cell);
    });
    body.appendChild(row);
  }

  const source = document.body.dataset.events;
  if (!source || !window.EventSource) return;
  const events = new EventSource(source);
  if (document.body.dataset.page === "inbox") {
    events.addEventListener("run", function (e) { refreshCard(JSON.parse(e.data).id); });
  } else if (document.body.dataset.page === "run") {
    events.addEventListener("step", function (e) { addStep(JSON.parse(e.data)); });
    events.addEventListener("run", function (e) {
      refreshRun();
      // A finished run's stream ends; reconnecting would only say so again.
      if (finished.has(JSON.parse(e.data).status)) events.close();
    });
  }
})();

// wfexec serve: the page's only script (the Content-Security-Policy allows no inline one). Hand-written, no
// library. The server renders every piece of HTML; this file posts the forms without leaving the page and swaps
// in the fragments the server renders again when the server-sent events say a run moved.
"use strict";

(function () {
  const csrf = (document.querySelector('meta[name="csrf"]') || {}).content || "";
  document.documentElement.dataset.script = "ready";  // what a test checks to see the script was allowed to run
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
    // A card the server renders as it was stays the element it was: swapping it in the middle of a click (the
    // press on the old link, the release on the new one) would lose the click.
    if (old && old.parentElement === target) { if (!old.isEqualNode(card)) old.replaceWith(card); return; }
    if (old) old.remove();
    if (target) target.prepend(card);
  }

  // A run's page: its summary, agents and state again, each step added to the timeline as it comes, the graph's
  // marks moved, and the output of its process followed.
  async function refreshRun() {
    const run = encodeURIComponent(document.body.dataset.run);
    for (const [path, id] of [["/summary", "summary"], ["/state", "state"], ["/agents", "agents"]]) {
      const fresh = await fragment("/runs/" + run + path);
      const old = document.getElementById(id);
      if (fresh && old) {
        // An agent's transcript left open stays open.
        if (id === "agents") old.querySelectorAll("details[open]").forEach(function (d) {
          const same = fresh.querySelector('details[data-agent="' + CSS.escape(d.dataset.agent) + '"]');
          if (same) same.open = true;
        });
        if (!old.isEqualNode(fresh)) old.replaceWith(fresh);  // as for a card: a click is not lost
      }
    }
  }

  function nodes(id) {
    return document.querySelectorAll('#graph g.node[data-node="' + CSS.escape(id) + '"], ' +
                                     'ol.graph li[data-node="' + CSS.escape(id) + '"]');
  }

  function markCurrent(id) {
    document.querySelectorAll("#graph g.node.current, ol.graph li.current").forEach(function (n) {
      n.classList.remove("current");
    });
    const box = document.getElementById("graph");
    if (box) box.dataset.current = id || "";
    if (id) nodes(id).forEach(function (n) { n.classList.add("current"); });
  }

  function offset(at) {
    const started = parseFloat(document.body.dataset.started);
    const when = typeof at === "number" ? at : Date.parse(at) / 1000;
    return isNaN(when) || isNaN(started) ? "-" : "+" + (when - started).toFixed(2) + " s";
  }

  function addStep(step) {
    nodes(step.node).forEach(function (n) { n.classList.add("visited"); });
    const body = document.getElementById("journal");
    if (!body || body.querySelector('tr[data-step="' + step.step + '"]')) return;
    const longest = Math.max(parseFloat(body.dataset.longest) || 0, step.duration_ms || 0);
    body.dataset.longest = longest;
    const row = document.createElement("tr");
    row.dataset.step = step.step;
    const cells = [String(step.step), step.node, step.type, String(step.target), offset(step.at), null,
                   Object.keys(step.changes || {}).join(", ")];
    cells.forEach(function (text, i) {
      const cell = document.createElement("td");
      if (i === 1 || i === 3) {
        const code = document.createElement("code");
        code.textContent = text;
        cell.appendChild(code);
      } else if (i === 5) {
        const meter = document.createElement("meter");
        meter.min = 0;
        meter.max = longest || 1;
        meter.value = step.duration_ms || 0;
        cell.append(meter, " " + (step.duration_ms || 0).toFixed(1) + " ms");
      } else {
        cell.textContent = text;
        if (i === 4) cell.className = "muted";
      }
      row.appendChild(cell);
    });
    body.appendChild(row);
  }

  // The output: appended as it grows; it follows the end unless the reader scrolled up, and follows again once
  // they scroll back down to the end.
  const output = document.getElementById("output");
  const paused = document.getElementById("output-paused");
  let reading = false;
  let wanted = false;  // the output grew again while it was being read

  function atEnd(box) { return box.scrollTop + box.clientHeight >= box.scrollHeight - 4; }

  async function readOutput() {
    if (!output) return;
    if (reading) { wanted = true; return; }
    reading = true;
    try {
      do {
        wanted = false;
        await readOutputToItsEnd();
      } while (wanted);
    } finally {
      reading = false;
    }
  }

  async function readOutputToItsEnd() {
    for (;;) {
      const from = parseInt(output.dataset.next, 10) || 0;
      const response = await fetch("/api/runs/" + encodeURIComponent(document.body.dataset.run) +
                                   "/output?from=" + from, { credentials: "same-origin" });
      if (!response.ok) return;
      const data = await response.json();
      if (!data.text) return;
      const following = atEnd(output);
      output.appendChild(document.createTextNode(data.text));
      output.dataset.next = data.next;
      if (following) output.scrollTop = output.scrollHeight;
      else if (paused) paused.hidden = false;
      if (data.next >= data.size) return;
    }
  }

  if (output) {
    output.addEventListener("scroll", function () {
      if (paused) paused.hidden = !(output.scrollHeight > output.clientHeight && !atEnd(output));
    });
  }

  // "Copy" next to a command line: to the clipboard, or selected for Ctrl-C where the clipboard is refused.
  document.addEventListener("click", async function (event) {
    const button = event.target.closest && event.target.closest("button[data-copy]");
    if (!button) return;
    const code = document.querySelector('code[data-command="' + CSS.escape(button.dataset.copy) + '"]');
    if (!code) return;
    try {
      await navigator.clipboard.writeText(code.textContent);
      button.textContent = "Copied";
    } catch (e) {
      const range = document.createRange();
      range.selectNodeContents(code);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      button.textContent = "Selected: Ctrl-C";
    }
  });

  const source = document.body.dataset.events;
  if (!source || !window.EventSource) return;
  const events = new EventSource(source);
  if (document.body.dataset.page === "inbox") {
    events.addEventListener("run", function (e) { refreshCard(JSON.parse(e.data).id); });
  } else if (document.body.dataset.page === "run") {
    readOutput();
    events.addEventListener("step", function (e) { addStep(JSON.parse(e.data)); });
    events.addEventListener("output", function () { readOutput(); });
    events.addEventListener("run", function (e) {
      const run = JSON.parse(e.data);
      if (finished.has(run.status) && run.ending) {
        nodes(run.ending).forEach(function (n) { n.classList.add("visited"); });  // the ending it reached
      }
      markCurrent(finished.has(run.status) ? run.ending : run.current_node);
      refreshRun();
      // A finished run's stream ends; reconnecting would only say so again.
      if (finished.has(run.status)) events.close();
    });
  }
})();

// Tools Manager: switches that fail flip back; Test runs stream live.
//
// A run is a `[data-toolcall-stream="<id>"]` container the server renders (on the page, or
// swapped in by htmx after "Run test"). Each one opens /ws/toolcalls/<id>/, which first sends
// the current card and then every change: the card (versioned) and output chunks (offsets),
// applied with the same helpers as the chat. The socket closes once the call has finished.

import { gettext } from "./i18n.js";
import {
  TERMINAL,
  appendChunk,
  approvalCommand,
  fragment,
  showApprovalError,
  trackTouchedDetails,
  upsert,
} from "./cards.js";

const runs = new Map(); // call id → { socket, retry, done }
const GONE = new Set([4401, 4403, 4404]); // signed out, not staff, no such call

function setStatus(container, status) {
  container.dataset.status = status;
  const stop = container.querySelector('button[data-action="stop"]');
  if (stop) stop.hidden = TERMINAL.has(status) || status === "awaiting_approval";
}

function showRunError(container, message) {
  const line = container.querySelector(".test-run-error");
  if (line) line.textContent = message || "";
}

function apply(container, run, event) {
  if (event.type === "toolcall") {
    const card = upsert(container.querySelector(".toolcall"), fragment(event.html), (el) =>
      container.prepend(el),
    );
    setStatus(container, card.dataset.status);
    if (TERMINAL.has(card.dataset.status)) {
      run.done = true;
      run.socket?.close();
    }
  } else if (event.type === "output") {
    appendChunk(container.querySelector(".toolcall-output"), event.offset, event.text);
  } else if (event.type === "error") {
    if (!(event.call_id && showApprovalError(event.call_id, event.message))) {
      showRunError(container, event.message);
    }
  }
}

function connect(container, id, run) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/ws/toolcalls/${id}/`);
  run.socket = socket;
  socket.addEventListener("open", () => {
    run.retry = 250;
    container.dataset.connected = "true";
    showRunError(container, "");
  });
  socket.addEventListener("message", (message) => apply(container, run, JSON.parse(message.data)));
  socket.addEventListener("close", (event) => {
    container.dataset.connected = "false";
    if (run.done || !container.isConnected) return;
    if (GONE.has(event.code)) {
      showRunError(container, gettext("Live updates are not available for this call."));
      return;
    }
    showRunError(container, gettext("Connection lost — reconnecting…"));
    setTimeout(() => connect(container, id, run), run.retry);
    run.retry = Math.min(run.retry * 2, 5000);
  });
}

function attach(container) {
  const id = container.dataset.toolcallStream;
  if (!id || runs.has(id)) return;
  const run = { socket: null, retry: 250, done: false };
  runs.set(id, run);
  setStatus(container, container.querySelector(".toolcall")?.dataset.status || "");
  // A finished call needs no socket: its card is already final.
  if (TERMINAL.has(container.dataset.status)) {
    run.done = true;
    return;
  }
  connect(container, id, run);
}

function attachWithin(root) {
  if (root.matches?.("[data-toolcall-stream]")) attach(root);
  root.querySelectorAll?.("[data-toolcall-stream]").forEach(attach);
}

// Approve / Deny / Edit arguments on a card, and Stop under it: commands over the run's socket.
document.addEventListener("click", (event) => {
  const button = event.target.closest(".test-run button[data-action]");
  if (!button) return;
  const container = button.closest("[data-toolcall-stream]");
  const run = runs.get(container.dataset.toolcallStream);
  if (!run?.socket || run.socket.readyState !== WebSocket.OPEN) {
    showRunError(container, gettext("Not connected yet — try again in a moment."));
    return;
  }
  const command =
    button.dataset.action === "stop" ? { action: "stop" } : approvalCommand(button);
  if (command) run.socket.send(JSON.stringify(command));
});

// A switch the server refused (expired session, server error) flips back and says why, in
// place of htmx's default (no swap, and an error in the console).
document.body.addEventListener("htmx:beforeSwap", (event) => {
  const form = event.detail.requestConfig?.elt?.closest?.(".switch-form");
  const status = event.detail.xhr.status;
  if (!form || status < 400) return;
  event.detail.shouldSwap = false;
  event.detail.isError = false;
  const box = form.querySelector(".switch-input");
  box.checked = !box.checked;
  form.querySelector(".switch-error").textContent = `not saved (${status})`;
});

const results = document.getElementById("test-results");
if (results) trackTouchedDetails(results);
document.body.addEventListener("htmx:load", (event) => attachWithin(event.detail.elt));
attachWithin(document);

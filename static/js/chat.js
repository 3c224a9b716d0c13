// The chat page's live stream: one websocket per conversation.
//
// The server sends whole, versioned HTML fragments for messages and tool-call cards (rendered
// from the same templates as the page), plus small text chunks for tokens and tool output that
// carry their offset. So a reconnect is just: take the snapshot, then keep applying events;
// stale fragments (lower version) and already-applied chunks (lower offset) are ignored.

import { format, gettext } from "./i18n.js";
import {
  activate,
  adoptNewerCards,
  appendChunk,
  approvalCommand,
  fragment,
  showApprovalError,
  trackTouchedDetails,
  upsert,
} from "./cards.js";
import { enhance, installMessageActions } from "./messages.js";
import { clearAttachments, pendingAttachments } from "./uploads.js";

const chat = document.getElementById("chat");
const messages = document.getElementById("messages");
const form = document.getElementById("composer");
const input = document.getElementById("message-input");
const sendButton = document.getElementById("send-button");
const stopButton = document.getElementById("stop-button");
const connection = document.getElementById("connection");
const errorLine = document.getElementById("composer-error");
const conversationId = chat.dataset.conversationId;

let socket = null;
let retryDelay = 250;
let running = chat.dataset.running === "true";
// A clarification call paused the turn: the next message is the answer (sgr agents).
let waiting = chat.dataset.waiting === "true";
const planArea = document.getElementById("plan-area");
const defaultPlaceholder = input.placeholder;

function nearBottom() {
  return messages.scrollHeight - messages.scrollTop - messages.clientHeight < 120;
}

function keepScrolled(fn) {
  const stick = nearBottom();
  fn();
  if (stick) messages.scrollTop = messages.scrollHeight;
}

// Enter while the agent is still answering: the message waits in the box and goes out when
// the turn ends (emptying the box cancels it).
let queued = false;

function setRunning(value, isWaiting = false) {
  running = value;
  waiting = value && isWaiting;
  chat.dataset.running = String(value);
  chat.dataset.waiting = String(waiting);
  stopButton.hidden = !value;
  sendButton.disabled = value && !waiting;
  input.placeholder = waiting ? gettext("Answer the agent's questions above, then press Send") : defaultPlaceholder;
  if (waiting) input.focus();
  if (queued && (!value || waiting)) {
    queued = false;
    send();
  }
}

function showPlan(html) {
  if (!html) return;
  const incoming = fragment(html);
  const existing = planArea.querySelector(".plan-panel");
  if (existing && existing.dataset.turnId === incoming.dataset.turnId) {
    if (Number(existing.dataset.version) > Number(incoming.dataset.version)) return;
  }
  planArea.replaceChildren(incoming);
}

function showError(text, note = false) {
  errorLine.textContent = text || "";
  errorLine.classList.toggle("is-note", note);
}

// A finished schedule_* call (or a schedule firing into this conversation) changes the
// sidebar's list: ask htmx to reload it.
function refreshSchedulesAfter(card) {
  const tool = card.querySelector(".tool-name")?.textContent || "";
  if (tool.startsWith("schedule_") && card.dataset.status === "succeeded") {
    document.body.dispatchEvent(new Event("schedules-changed"));
  }
}

const handlers = {
  snapshot(event) {
    messages.innerHTML = event.html;
    activate(messages);
    enhance(messages);
    setRunning(event.running, event.waiting);
    if (event.plan_html) showPlan(event.plan_html);
    messages.scrollTop = messages.scrollHeight;
  },
  message(event) {
    keepScrolled(() => {
      messages.querySelector(".empty-state")?.remove();
      const incoming = fragment(event.html);
      adoptNewerCards(incoming);
      upsert(document.getElementById(`message-${event.id}`), incoming, (el) =>
        messages.append(el),
      );
      enhance(messages);
    });
  },
  token(event) {
    keepScrolled(() => {
      const target = document.querySelector(`#message-${event.message_id} .stream-text`);
      appendChunk(target, event.offset, event.text);
    });
  },
  toolcall(event) {
    keepScrolled(() => {
      const incoming = fragment(event.html);
      const card = upsert(document.getElementById(`toolcall-${event.id}`), incoming, (el) => {
        const list = document.getElementById(`message-${event.message_id}-calls`);
        (list || messages).append(el);
      });
      card.dataset.appliedAt = String(Date.now());
      if (card.querySelector(".report-download")) {
        document.getElementById("reports-list")?.dispatchEvent(new Event("refresh"));
      }
      refreshSchedulesAfter(card);
    });
  },
  plan(event) {
    showPlan(event.html);
  },
  schedules() {
    // A schedule recorded how it last fired (after its turn's first message went out).
    document.body.dispatchEvent(new Event("schedules-changed"));
  },
  output(event) {
    keepScrolled(() => {
      const card = document.getElementById(`toolcall-${event.id}`);
      appendChunk(card?.querySelector(".toolcall-output"), event.offset, event.text);
    });
  },
  turn(event) {
    setRunning(event.running, event.phase === "clarify");
    const panel = planArea.querySelector(".plan-panel");
    if (event.running && panel && panel.dataset.turnId !== String(event.id)) planArea.replaceChildren();
    // A scheduled turn in this conversation ended: the sidebar shows how. Any schedule that
    // points here counts (its "last" link may still be on its way when a quick turn ends).
    const here = `#schedule-list a[href="/c/${conversationId}/"]`;
    const scheduled = document.querySelector(here) || messages.querySelector(".message.origin-schedule");
    if (!event.running && scheduled) document.body.dispatchEvent(new Event("schedules-changed"));
  },
  conversation(event) {
    // The first message names the conversation: the sidebar and the tab follow live.
    const link = document.getElementById(`conversation-link-${event.id}`);
    if (link) link.textContent = event.title;
    const rename = document.getElementById(`rename-${event.id}`);
    if (rename) rename.value = event.title;
    if (String(event.id) === conversationId) document.title = format(gettext("%(title)s · Control Center"), { title: event.title });
  },
  error(event) {
    if (event.call_id && showApprovalError(event.call_id, event.message)) return;
    showError(event.message);
  },
};

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}/ws/conversations/${conversationId}/`);
  socket.addEventListener("open", () => {
    retryDelay = 250;
    connection.hidden = true;
    chat.dataset.connected = "true";
  });
  socket.addEventListener("message", (message) => {
    const event = JSON.parse(message.data);
    handlers[event.type]?.(event);
  });
  socket.addEventListener("close", (event) => {
    chat.dataset.connected = "false";
    if (event.code === 4401 || event.code === 4403) {
      connection.textContent = gettext("You no longer have access to this conversation.");
      connection.hidden = false;
      return;
    }
    connection.textContent = gettext("Connection lost — reconnecting…");
    connection.hidden = false;
    setTimeout(connect, retryDelay);
    retryDelay = Math.min(retryDelay * 2, 5000);
  });
}

const maxBytes = Number(chat.dataset.maxBytes || 0);

function send() {
  const files = pendingAttachments();
  if (files === null) {
    showError(gettext("Wait for the upload to finish."));
    return;
  }
  const text = input.value.trim() || (files.length ? format(gettext("(attached: %(files)s)"), { files: files.join(", ") }) : "");
  if (!text) return;
  if (running && !waiting) {
    queued = true;
    showError(gettext("Sends when the agent finishes, or at once if you press Stop. Empty the box to cancel."), true);
    return;
  }
  const size = new TextEncoder().encode(text).length;
  if (maxBytes && size > maxBytes) {
    showError(
      format(gettext("The message is too large: %(size)s KB (the limit is %(limit)s KB)."), { size: Math.round(size / 1024), limit: Math.round(maxBytes / 1024) }),
    );
    return;
  }
  if (!socket || socket.readyState !== WebSocket.OPEN) {
    showError(gettext("Not connected yet — try again in a moment."));
    return;
  }
  showError("");
  socket.send(JSON.stringify({ action: "send", text, files }));
  input.value = "";
  clearAttachments();
}

input.addEventListener("input", () => {
  if (queued && !input.value.trim()) {
    queued = false;
    showError("");
  }
});

form.addEventListener("submit", (event) => {
  event.preventDefault();
  send();
});

input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});

stopButton.addEventListener("click", () => {
  socket?.send(JSON.stringify({ action: "stop" }));
});

// Approval buttons on cards (functions an admin marked "requires approval").
messages.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-action]");
  if (!button || !socket) return;
  const command = approvalCommand(button);
  if (command) socket.send(JSON.stringify(command));
});

trackTouchedDetails(messages);
// Copy, edit, regenerate and branch buttons on messages (messages.js).
installMessageActions(messages, (command) => {
  if (!socket || socket.readyState !== WebSocket.OPEN) {
    showError(gettext("Not connected yet — try again in a moment."));
    return false;
  }
  showError("");
  socket.send(JSON.stringify(command));
  return true;
});

setRunning(running, waiting);
messages.scrollTop = messages.scrollHeight;
connect();
input.focus();

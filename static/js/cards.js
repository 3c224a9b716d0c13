// Tool-call cards, shared by the chat page and the Tools Manager's Test runs.
//
// Cards arrive as whole, versioned HTML fragments (rendered from the same template as the
// page) and live output arrives as chunks with offsets, so applying an event twice or late
// is harmless: an older version is ignored, an already-seen chunk is skipped.

import { format, gettext } from "./i18n.js";
const codePoints = (text) => Array.from(text);

export const TERMINAL = new Set(["succeeded", "failed", "denied", "cancelled"]);

export function fragment(html) {
  const template = document.createElement("template");
  template.innerHTML = html.trim();
  return template.content.firstElementChild;
}

// Replace an element by a newer version of itself, keeping what the person opened.
export function upsert(existing, incoming, insert) {
  if (existing) {
    if (Number(existing.dataset.version) > Number(incoming.dataset.version)) return existing;
    existing.querySelectorAll("details[data-touched]").forEach((d) => {
      const twin = incoming.querySelector(`details.${d.classList[0]}`);
      if (twin) {
        twin.open = d.open;
        twin.dataset.touched = "1";
      }
    });
    existing.replaceWith(incoming);
  } else {
    insert(incoming);
  }
  activate(incoming);
  return incoming;
}

// Let htmx wire a fragment that arrived over the websocket (an approval card asks for its
// preview, and again as its arguments are edited).
export function activate(root) {
  if (root && window.htmx) window.htmx.process(root);
}

// A card may have arrived before its message (events from different workers race). The
// message fragment carries its own copy of the card: keep whichever version is newer, once.
export function adoptNewerCards(incomingMessage) {
  incomingMessage.querySelectorAll(".toolcall").forEach((copy) => {
    const live = document.getElementById(copy.id);
    if (!live) return;
    if (Number(live.dataset.version) > Number(copy.dataset.version)) copy.replaceWith(live);
    else live.remove();
  });
}

export function appendChunk(element, offset, text) {
  if (!element) return;
  const length = Number(element.dataset.len || 0);
  if (offset > length) return; // a gap: the next full fragment brings the missing part
  const fresh = codePoints(text).slice(length - offset).join("");
  if (!fresh) return;
  element.append(fresh);
  element.dataset.len = String(length + codePoints(fresh).length);
}

// The websocket command for a clicked approval button, or null (not one, or bad JSON: then
// the card's error line says why).
export function approvalCommand(button) {
  const callId = Number(button.dataset.callId);
  const action = button.dataset.action;
  if (action === "approve-edited") {
    const card = button.closest(".toolcall");
    const errorBox = card.querySelector(".approval-error");
    let args;
    try {
      args = JSON.parse(card.querySelector(".approval-edit textarea").value);
    } catch (err) {
      errorBox.textContent = format(gettext("Not valid JSON: %(error)s"), { error: err.message });
      return null;
    }
    return { action: "approve", call_id: callId, arguments: args, widening: widening(card) };
  }
  if (action === "approve") {
    return { action, call_id: callId, widening: widening(button.closest(".toolcall")) };
  }
  if (action === "deny") return { action, call_id: callId };
  // The Connect card's Retry: the same call through the same binding (after connecting).
  if (action === "retry") return { action: "retry", call_id: callId };
  return null;
}

// How far the approver widened the approval on this card (null: this call only).
function widening(card) {
  const box = card && card.querySelector(".approval-widen");
  const chosen = box && box.querySelector("input[type=radio]:checked");
  if (!chosen || chosen.value === "call") return null;
  const match = {};
  for (const select of box.querySelectorAll("select[data-argument]")) {
    const name = select.dataset.argument;
    if (select.value === "prefix") {
      const within = box.querySelector(`.widen-prefix[data-argument="${CSS.escape(name)}"]`);
      match[name] = { kind: "prefix", value: within ? within.value : "" };
    } else if (select.value !== "equals") match[name] = select.value;
  }
  const until = box.querySelector(".widen-until").value;
  return { scope: chosen.value, match, until: until || null };
}

// Show a refused decision on its card; false when the card is not on this page.
export function showApprovalError(callId, message) {
  const box = document.querySelector(`#toolcall-${callId} .approval-error`);
  if (!box) return false;
  box.textContent = message;
  box.closest("details").open = true;
  return true;
}

// Remember which collapsible parts the person opened or closed themselves. (Not the toggle
// event: it also fires when a fragment arrives with `open` set.)
export function trackTouchedDetails(root) {
  root.addEventListener("click", (event) => {
    const details = event.target.closest("summary")?.parentElement;
    if (details?.tagName === "DETAILS") details.dataset.touched = "1";
  });
}

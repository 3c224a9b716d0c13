// Approvals, live on every page of an approver: the top bar's badge counts the calls that wait
// for them; on the Approvals page the list follows (new calls appear, decided or expired ones
// leave) without touching a call someone is editing, nor moving it (which would take its focus).
import { format, gettext } from "./i18n.js";
const badge = document.getElementById("approvals-badge");
const list = document.getElementById("approvals-list");
let delay = 1000;

function setCount(count) {
  if (!badge) return;
  badge.textContent = String(count);
  badge.hidden = count === 0;
  badge.setAttribute("aria-label", format(gettext("%(count)s waiting"), { count }));
}

async function refreshList() {
  const response = await fetch("/approvals/", { headers: { "HX-Request": "true" } });
  if (!response.ok) return;
  const holder = document.createElement("div");
  holder.innerHTML = await response.text();
  const fresh = holder.querySelector("#approvals-list");
  if (!fresh) return;
  const kept = new Map([...list.querySelectorAll(".approval-item")].map((el) => [el.id, el]));
  const items = [...fresh.children].map((el) => {
    const mine = el.id && kept.get(el.id);
    if (!mine) return el;
    // Kept as the approver left it, but with who approved meanwhile (several approvers).
    const progress = el.querySelector(".approval-progress");
    const old = mine.querySelector(".approval-progress");
    if (progress && old) old.replaceWith(progress);
    else if (progress) mine.querySelector(".approval-head")?.after(progress);
    return mine;
  });
  // Only what changed moves: an item put back in place, even unchanged, loses the focus of
  // whoever is typing in it (and what they type until they notice).
  [...list.children].forEach((el) => {
    if (!items.includes(el)) el.remove();
  });
  let next = list.firstElementChild;
  items.forEach((el) => {
    if (el === next) next = el.nextElementSibling;
    else list.insertBefore(el, next);
  });
  items.forEach((el) => {
    if (!kept.has(el.id) && window.htmx) window.htmx.process(el);
  });
}

// One refresh at a time, in the order asked: two in flight could land out of order, and an
// older answer (read before a call existed) would take away the item someone is typing in.
let refreshing = null;
let again = false;
function refreshSoon() {
  if (refreshing) {
    again = true;
    return;
  }
  refreshing = refreshList()
    .catch(() => {})
    .finally(() => {
      refreshing = null;
      if (again) {
        again = false;
        refreshSoon();
      }
    });
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/ws/approvals/`);
  socket.addEventListener("open", () => {
    delay = 1000;
    document.body.dataset.approvalsConnected = "true";
  });
  socket.addEventListener("message", (message) => {
    const event = JSON.parse(message.data);
    if (event.type !== "approvals") return;
    setCount(event.count);
    if (list) refreshSoon();
  });
  socket.addEventListener("close", () => {
    document.body.dataset.approvalsConnected = "false";
    setTimeout(connect, delay);
    delay = Math.min(delay * 2, 30000);
  });
}

connect();

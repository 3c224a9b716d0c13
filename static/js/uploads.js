// Files into the conversation's workspace: the Attach button, drag and drop onto the chat,
// and images pasted into the message box. Each file is POSTed as the request body to the
// Files panel's upload URL; what went in shows as a chip above the message box and is sent
// with the next message (chat.js asks `pendingAttachments()`), so a model with image input
// sees the images and every model reads the names. The Files panel (htmx) reloads on
// "files-changed" after an upload, and with its ↻ button (files the agent wrote).

import { format, gettext } from "./i18n.js";
const chat = document.getElementById("chat");
const composer = document.getElementById("composer");
const chips = document.getElementById("attachments");
const picker = document.getElementById("upload-input");
const attachButton = document.getElementById("attach-button");
const input = document.getElementById("message-input");
const errorLine = document.getElementById("composer-error");

const attached = []; // workspace names uploaded since the last message
let busy = 0;

function panel() {
  return document.getElementById("files-panel");
}

function csrfToken() {
  try {
    return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
  } catch {
    return "";
  }
}

function sizeText(bytes) {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return format(gettext("%(count)s bytes"), { count: bytes });
}

function showError(text) {
  if (errorLine) errorLine.textContent = text;
}

function chip(label) {
  const el = document.createElement("span");
  el.className = "attachment uploading";
  const name = document.createElement("span");
  name.className = "attachment-name";
  name.textContent = label;
  name.title = label;
  el.append(name);
  chips.append(el);
  chips.hidden = false;
  return el;
}

function removeButton(el, name) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = "×";
  button.setAttribute("aria-label", format(gettext("Detach %(name)s (it stays in the workspace)"), { name }));
  button.addEventListener("click", () => {
    const at = attached.indexOf(name);
    if (at >= 0) attached.splice(at, 1);
    el.remove();
    chips.hidden = chips.childElementCount === 0;
  });
  el.append(button);
}

function pastedName(file) {
  if (file.name && file.name !== "image.png") return file.name;
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  const ext = (file.type.split("/")[1] || "png").replace("jpeg", "jpg").replace(/[^a-z0-9]/g, "");
  return `pasted-${stamp}.${ext}`;
}

export async function uploadFile(file, name = file.name) {
  const place = panel();
  if (!place) return null;
  // A new upload clears the last error; one that ends later must not clear an error shown since
  // (another file refused meanwhile).
  showError("");
  const limit = Number(place.dataset.maxBytes || 0);
  if (limit && file.size > limit) {
    showError(format(gettext("%(name)s is %(size)s; the upload limit is %(limit)s."), { name, size: sizeText(file.size), limit: sizeText(limit) }));
    return null;
  }
  const el = chip(format(gettext("%(name)s — uploading…"), { name }));
  busy += 1;
  try {
    const url = `${place.dataset.uploadUrl}?name=${encodeURIComponent(name)}`;
    const response = await fetch(url, {
      method: "POST",
      body: file,
      credentials: "same-origin",
      headers: {
        "X-CSRFToken": csrfToken(),
        "Content-Type": file.type || "application/octet-stream",
      },
    });
    let answer = {};
    try {
      answer = await response.json();
    } catch {
      answer = { error: format(gettext("the server answered %(status)s"), { status: response.status }) };
    }
    if (!response.ok) {
      el.remove();
      chips.hidden = chips.childElementCount === 0;
      showError(`${name}: ${answer.error || format(gettext("the server answered %(status)s"), { status: response.status })}`);
      return null;
    }
    const stored = answer.file;
    attached.push(stored.name);
    el.classList.remove("uploading");
    el.dataset.name = stored.name;
    el.querySelector(".attachment-name").textContent = `${stored.name} (${sizeText(stored.size)})`;
    removeButton(el, stored.name);
    document.body.dispatchEvent(new Event("files-changed"));
    return stored;
  } catch (error) {
    el.remove();
    chips.hidden = chips.childElementCount === 0;
    showError(format(gettext("%(name)s: the upload failed (%(error)s)."), { name, error: error.message || error }));
    return null;
  } finally {
    busy -= 1;
  }
}

function uploadAll(files) {
  return Promise.all(Array.from(files).map((file) => uploadFile(file)));
}

/** Names to send with the message; null while an upload is still going. */
export function pendingAttachments() {
  return busy > 0 ? null : [...attached];
}

export function clearAttachments() {
  attached.length = 0;
  chips.replaceChildren();
  chips.hidden = true;
}

if (chat && composer && !composer.hidden && panel()) {
  attachButton?.addEventListener("click", () => picker.click());
  picker?.addEventListener("change", async () => {
    await uploadAll(picker.files);
    picker.value = "";
  });

  // Drag and drop anywhere on the chat column.
  let depth = 0;
  const hasFiles = (event) => Array.from(event.dataTransfer?.types || []).includes("Files");
  chat.addEventListener("dragenter", (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    depth += 1;
    chat.classList.add("dropping");
  });
  chat.addEventListener("dragover", (event) => {
    if (hasFiles(event)) event.preventDefault();
  });
  chat.addEventListener("dragleave", () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) chat.classList.remove("dropping");
  });
  chat.addEventListener("drop", (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    depth = 0;
    chat.classList.remove("dropping");
    uploadAll(event.dataTransfer.files);
  });

  // Images (or files) pasted into the message box.
  input.addEventListener("paste", (event) => {
    const files = Array.from(event.clipboardData?.files || []);
    if (!files.length) return;
    event.preventDefault();
    for (const file of files) uploadFile(file, pastedName(file));
  });

}

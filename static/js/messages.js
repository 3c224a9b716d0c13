// Message actions on the chat page: copy (a whole message, or one code block), syntax
// highlighting of code blocks (highlight.js, vendored), edit-and-resend, regenerate, the
// branch switcher ("‹ 1/2 ›") and the per-conversation model switcher.
//
// Messages arrive as server-rendered fragments (chat.js puts them in place); `enhance` runs
// over whatever was added and is idempotent. Commands go over the chat's websocket through
// the `send` function chat.js hands to `installMessageActions`.

import { gettext } from "./i18n.js";
import hljs from "../vendor/highlightjs/highlight.min.js";

hljs.configure({ ignoreUnescapedHTML: true });

const MAX_HIGHLIGHT = 100_000; // characters: larger blocks stay plain (highlighting is O(n))

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // Plain http on another host has no async clipboard: the old way still works there.
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.append(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    return ok;
  }
}

function flash(button, text) {
  const label = button.dataset.label || button.textContent;
  button.dataset.label = label;
  button.textContent = text;
  setTimeout(() => {
    button.textContent = label;
  }, 1500);
}

function messageSource(article) {
  const source = article.querySelector(":scope > template.message-source");
  if (source) return source.content.textContent;
  return article.querySelector(".message-body")?.innerText.trim() || "";
}

// Highlight the code blocks of finished messages and give each a Copy button.
export function enhance(root) {
  root.querySelectorAll(".message .markdown pre > code").forEach((code) => {
    const pre = code.parentElement;
    if (pre.dataset.enhanced) return;
    pre.dataset.enhanced = "1";
    const language = [...code.classList].find((c) => c.startsWith("language-"))?.slice(9);
    // No language named: highlight.js guesses; one it does not know: left plain.
    if (code.textContent.length <= MAX_HIGHLIGHT && (!language || hljs.getLanguage(language))) {
      hljs.highlightElement(code);
    }
    const wrap = document.createElement("div");
    wrap.className = "code-block";
    pre.replaceWith(wrap);
    wrap.append(pre);
    const button = document.createElement("button");
    button.type = "button";
    button.className = "code-copy";
    button.dataset.msgAction = "copy-code";
    button.textContent = gettext("Copy");
    button.setAttribute("aria-label", gettext("Copy this code"));
    wrap.prepend(button);
  });
  markLastAnswer(root.closest?.("#messages") || document.getElementById("messages"));
}

// Regenerate is offered on the last answer only.
function markLastAnswer(list) {
  if (!list) return;
  const buttons = list.querySelectorAll('button[data-msg-action="regenerate"]');
  buttons.forEach((b, i) => {
    b.hidden = i !== buttons.length - 1;
  });
}

function openEditor(article, send) {
  if (article.querySelector(".message-edit")) return;
  const body = article.querySelector(".message-body");
  const form = document.createElement("form");
  form.className = "message-edit";
  const area = document.createElement("textarea");
  area.rows = Math.min(10, Math.max(2, messageSource(article).split("\n").length));
  area.value = messageSource(article);
  area.setAttribute("aria-label", gettext("Edited text"));
  const save = document.createElement("button");
  save.type = "submit";
  save.className = "primary";
  save.textContent = gettext("Save edit");
  const cancel = document.createElement("button");
  cancel.type = "button";
  cancel.textContent = gettext("Cancel");
  const row = document.createElement("div");
  row.className = "message-edit-actions";
  row.append(cancel, save);
  form.append(area, row);
  body.hidden = true;
  body.after(form);
  area.focus();
  const close = () => {
    form.remove();
    body.hidden = false;
  };
  cancel.addEventListener("click", close);
  area.addEventListener("keydown", (event) => {
    if (event.key === "Escape") close();
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = area.value.trim();
    if (!text) return;
    if (send({ action: "edit", turn_id: Number(article.dataset.turnId), text })) close();
  });
}

export function installMessageActions(messages, send) {
  messages.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-msg-action]");
    if (!button) return;
    const article = button.closest(".message");
    const action = button.dataset.msgAction;
    if (action === "copy") {
      flash(button, (await copyText(messageSource(article))) ? gettext("Copied") : gettext("Copy failed"));
    } else if (action === "copy-code") {
      const code = button.parentElement.querySelector("code");
      flash(button, (await copyText(code.textContent)) ? gettext("Copied") : gettext("Copy failed"));
    } else if (action === "edit") {
      openEditor(article, send);
    } else if (action === "regenerate") {
      send({ action: "regenerate", turn_id: Number(article.dataset.turnId) });
    } else if (action === "branch") {
      send({ action: "branch", turn_id: Number(button.dataset.turnId) });
    }
  });
  enhance(messages);
}

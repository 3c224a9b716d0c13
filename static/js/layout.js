// The page frame on every page: the phone menu, the conversations drawer, the theme toggle and
// the keyboard shortcuts. The chat's own stream lives in chat.js; this file only presses its
// buttons (Stop) and focuses its fields.

import { gettext } from "./i18n.js";
const body = document.body;
const root = document.documentElement;
const narrow = window.matchMedia("(max-width: 760px)");
const systemDark = window.matchMedia("(prefers-color-scheme: dark)");

// --- phone menu -----------------------------------------------------------------------------
const menuButton = document.getElementById("menu-button");
const userMenu = document.querySelector(".site-menu .user-menu");

function setMenu(open) {
  if (!menuButton) return;
  body.classList.toggle("menu-open", open);
  menuButton.setAttribute("aria-expanded", String(open));
  // In the phone menu the account's items show directly; on a wide screen they stay a dropdown.
  if (userMenu && narrow.matches) userMenu.open = open;
  if (open) document.querySelector("#site-menu a, #site-menu button")?.focus();
}
menuButton?.addEventListener("click", () => setMenu(!body.classList.contains("menu-open")));
document.addEventListener("click", (event) => {
  if (body.classList.contains("menu-open") && !event.target.closest("#site-menu, #menu-button")) {
    setMenu(false);
  }
});
narrow.addEventListener("change", () => {
  setMenu(false);
  setDrawer(false);
  if (userMenu) userMenu.open = false;
});

// --- conversations drawer -------------------------------------------------------------------
const drawerButton = document.getElementById("drawer-button");
const sidebar = document.querySelector(".chat-layout .sidebar");
let backdrop = null;

function setDrawer(open) {
  if (!sidebar || !drawerButton) return;
  body.classList.toggle("drawer-open", open);
  drawerButton.setAttribute("aria-expanded", String(open));
  // While the drawer covers the page, Tab stays inside it.
  for (const behind of document.querySelectorAll(".topbar, .chat-layout > :not(.sidebar, .drawer-backdrop)")) {
    behind.inert = open;
  }
  if (open) {
    sidebar.querySelector("a, button, input, select, textarea")?.focus();
  } else if (sidebar.contains(document.activeElement)) {
    drawerButton.focus();
  }
}

if (sidebar && drawerButton) {
  sidebar.id ||= "sidebar";
  drawerButton.setAttribute("aria-controls", sidebar.id);
  const close = document.createElement("button");
  close.type = "button";
  close.className = "drawer-close small";
  close.textContent = gettext("Close");
  close.setAttribute("aria-label", gettext("Close conversations"));
  close.addEventListener("click", () => setDrawer(false));
  sidebar.prepend(close);
  backdrop = document.createElement("div");
  backdrop.className = "drawer-backdrop";
  backdrop.addEventListener("click", () => setDrawer(false));
  sidebar.after(backdrop);
  drawerButton.addEventListener("click", () => {
    setMenu(false);
    setDrawer(!body.classList.contains("drawer-open"));
  });
  // Tab wraps around inside the open drawer instead of leaving for the browser's bar.
  sidebar.addEventListener("keydown", (event) => {
    if (event.key !== "Tab" || !body.classList.contains("drawer-open")) return;
    const focusable = [...sidebar.querySelectorAll("a[href], button, input, select, textarea, summary")]
      .filter((el) => !el.disabled && el.offsetParent !== null);
    const first = focusable[0];
    const last = focusable[focusable.length - 1];
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  });
  // Following a link inside the drawer (another conversation) closes it, also when the
  // sidebar's content is swapped in place. A download (an export) leaves the page where it
  // is, and the drawer open.
  sidebar.addEventListener("click", (event) => {
    if (event.target.closest("a[href]:not([download])") && narrow.matches) setDrawer(false);
  });
}

// --- theme ------------------------------------------------------------------------------------
const themeToggle = document.getElementById("theme-toggle");

function effectiveDark() {
  const chosen = root.dataset.theme;
  return chosen ? chosen === "dark" : systemDark.matches;
}

function showTheme() {
  themeToggle?.setAttribute("aria-pressed", String(effectiveDark()));
}

function rememberTheme(theme) {
  try {
    if (theme === "system") localStorage.removeItem("cc-theme");
    else localStorage.setItem("cc-theme", theme);
  } catch {
    // private mode: the server copy still holds it
  }
}

// The server's copy wins for a signed-in person; the browser's copy serves the login page.
if (body.dataset.themeUrl) rememberTheme(root.dataset.themeChoice || "system");
showTheme();
systemDark.addEventListener("change", showTheme);

themeToggle?.addEventListener("click", async (event) => {
  event.preventDefault();
  const theme = effectiveDark() ? "light" : "dark";
  root.dataset.theme = theme;
  root.dataset.themeChoice = theme;
  rememberTheme(theme);
  showTheme();
  const form = new FormData();
  form.append("theme", theme);
  form.append("csrfmiddlewaretoken", themeToggle.form.querySelector("[name=csrfmiddlewaretoken]").value);
  try {
    await fetch(body.dataset.themeUrl, {
      method: "POST",
      body: form,
      headers: { Accept: "application/json" },
      credentials: "same-origin",
    });
  } catch {
    // offline: localStorage keeps it for this browser
  }
});

// --- shortcuts ------------------------------------------------------------------------------
const dialog = document.getElementById("shortcuts-dialog");
document.getElementById("shortcuts-button")?.addEventListener("click", () => dialog?.showModal());

function typing(target) {
  return target instanceof HTMLElement && (target.isContentEditable || target.matches("input, textarea, select"));
}

function newConversation() {
  const url = body.dataset.newConversationUrl;
  const token = document.querySelector("[name=csrfmiddlewaretoken]")?.value;
  if (!url || !token) return;
  const form = document.createElement("form");
  form.method = "post";
  form.action = url;
  form.hidden = true;
  const field = document.createElement("input");
  field.name = "csrfmiddlewaretoken";
  field.value = token;
  form.append(field);
  body.append(form);
  form.submit();
}

function focusSearch() {
  const search = document.getElementById("conversation-search");
  if (!search) return false;
  if (narrow.matches) setDrawer(true);
  search.focus();
  search.select?.();
  return true;
}

function stopOrClose() {
  // A conversation's "⋯" popover closes first (it may be open inside the phone's drawer).
  const popover = document.querySelector("details.conversation-actions[open]");
  if (popover) {
    popover.open = false;
    popover.querySelector("summary")?.focus();
    return true;
  }
  if (body.classList.contains("drawer-open")) return setDrawer(false), true;
  if (body.classList.contains("menu-open")) {
    setMenu(false);
    menuButton?.focus();
    return true;
  }
  const openMenu = document.querySelector("details.user-menu[open]");
  if (openMenu && !narrow.matches) {
    openMenu.open = false;
    openMenu.querySelector("summary")?.focus();
    return true;
  }
  const stop = document.getElementById("stop-button");
  if (stop && !stop.hidden && !stop.disabled) {
    stop.click();
    return true;
  }
  return false;
}

document.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || event.isComposing) return;
  if (dialog?.open) return; // the dialog handles its own Esc
  const mod = event.ctrlKey || event.metaKey;
  const key = event.key.toLowerCase();
  if (mod && event.shiftKey && key === "o") {
    event.preventDefault();
    newConversation();
  } else if (mod && !event.shiftKey && key === "k") {
    if (focusSearch()) event.preventDefault();
  } else if (event.key === "Escape" && event.shiftKey) {
    const input = document.getElementById("message-input");
    if (input && !input.closest("[hidden]")) {
      event.preventDefault();
      setDrawer(false);
      input.focus();
    }
  } else if (event.key === "Escape" && !mod) {
    if (stopOrClose()) event.preventDefault();
  } else if (event.key === "?" && !mod && !typing(event.target)) {
    event.preventDefault();
    dialog?.showModal();
  }
});

// --- error pages ------------------------------------------------------------------------------
for (const back of document.querySelectorAll("[data-history-back]")) {
  if (window.history.length < 2) continue;
  back.hidden = false;
  back.addEventListener("click", () => window.history.back());
}

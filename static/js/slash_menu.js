// The "/" menu of the message box: typing "/" (and a word) lists the slash commands the person
// may call and the prompts of their library (their own and those shared with their groups).
// Picking a command puts "/name " in the box; picking a prompt puts its text there. Nothing is
// sent: Enter sends only once the menu is closed. The data comes with the page
// (chat_app.services.prompts.slash_menu, as JSON in #slash-menu-data).

import { gettext } from "./i18n.js";

const data = JSON.parse(document.getElementById("slash-menu-data")?.textContent || "null");
const form = document.getElementById("composer");
const input = document.getElementById("message-input");
const LIMIT = 12;

if (data && form && input) {
  const menu = document.createElement("div");
  menu.id = "slash-menu";
  menu.className = "slash-menu";
  menu.setAttribute("role", "listbox");
  menu.setAttribute("aria-label", gettext("Commands and prompts"));
  menu.hidden = true;
  form.prepend(menu);
  // aria-controls and aria-activedescendant: allowed on a textbox (aria-expanded is not, and
  // the box stays a textbox, "Message").
  input.setAttribute("aria-controls", menu.id);
  let items = [];
  let active = -1;

  function matches(word) {
    const w = word.toLowerCase();
    const prompts = data.prompts
      .filter((p) => !w || p.shortcut.toLowerCase().startsWith(w) || p.title.toLowerCase().includes(w))
      .sort((a, b) => Number(b.shortcut.toLowerCase() === w) - Number(a.shortcut.toLowerCase() === w))
      .map((p) => ({ kind: "prompt", label: p.title, key: p.shortcut ? `/${p.shortcut}` : "", hint: (p.owner ? `${gettext("by")} ${p.owner} · ` : "") + p.body.slice(0, 80), value: p.body }));
    const commands = data.commands
      .filter((c) => c.name.startsWith(w) || (c.alias && c.alias.startsWith(w)))
      .map((c) => ({ kind: "command", label: `/${c.name}`, key: c.alias ? `/${c.alias}` : "", hint: c.hint, value: `/${c.name} ` }));
    return [...prompts, ...commands].slice(0, LIMIT);
  }

  function option(item, index) {
    const el = document.createElement("div");
    el.id = `slash-option-${index}`;
    el.className = `slash-option slash-${item.kind}`;
    el.setAttribute("role", "option");
    el.setAttribute("aria-selected", String(index === active));
    el.dataset.index = String(index);
    const label = document.createElement("span");
    label.className = "slash-label";
    label.textContent = item.label;
    el.append(label);
    if (item.key) {
      const key = document.createElement("code");
      key.className = "slash-key";
      key.textContent = item.key;
      el.append(" ", key);
    }
    const tag = document.createElement("span");
    tag.className = "slash-kind";
    tag.textContent = item.kind === "prompt" ? gettext("prompt") : gettext("command");
    el.append(" ", tag);
    if (item.hint) {
      const hint = document.createElement("span");
      hint.className = "slash-hint";
      hint.textContent = item.hint;
      el.append(hint);
    }
    return el;
  }

  function render() {
    menu.replaceChildren(...items.map(option));
    menu.hidden = items.length === 0;
    if (active >= 0 && items.length) {
      input.setAttribute("aria-activedescendant", `slash-option-${active}`);
      document.getElementById(`slash-option-${active}`)?.scrollIntoView({ block: "nearest" });
    } else {
      input.removeAttribute("aria-activedescendant");
    }
  }

  function close() {
    items = [];
    active = -1;
    render();
  }

  function update() {
    const found = /^\/(\S*)$/.exec(input.value);
    if (!found) {
      close();
      return;
    }
    items = matches(found[1]);
    active = items.length ? 0 : -1;
    render();
  }

  function pick(index) {
    const item = items[index];
    if (!item) return;
    input.value = item.value;
    close();
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
    input.dispatchEvent(new Event("input", { bubbles: true }));
  }

  input.addEventListener("input", update);
  input.addEventListener("blur", () => setTimeout(close, 150));
  // On the form, in the capture phase: before the box's own Enter-sends handler (chat.js).
  form.addEventListener(
    "keydown",
    (event) => {
      if (event.target !== input || menu.hidden || event.isComposing) return;
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        active = (active + (event.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
        render();
      } else if (event.key === "Enter" || event.key === "Tab") {
        if (event.shiftKey) return;
        const item = items[active];
        // A command typed out in full ("/help"): Enter sends it, as without the menu.
        if (event.key === "Enter" && item?.kind === "command" && item.value.trim() === input.value.trim()) {
          close();
          return;
        }
        pick(active);
      } else if (event.key === "Escape") {
        close();
      } else {
        return;
      }
      event.preventDefault();
      event.stopPropagation();
    },
    true,
  );
  menu.addEventListener("mousedown", (event) => {
    const el = event.target.closest("[role=option]");
    if (!el) return;
    event.preventDefault(); // keep the focus in the box
    pick(Number(el.dataset.index));
  });
}

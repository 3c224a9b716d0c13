// The sidebar's conversation search: while the box holds words, the results (rendered by the
// server, snippets escaped with matches in <mark>) replace the conversation list; Escape or
// an empty box brings the list back. Enter opens the full results page.

const sidebar = document.querySelector(".sidebar");
const box = document.getElementById("conversation-search");
const results = document.getElementById("search-results");

function update() {
  const searching = box.value.trim() !== "";
  sidebar.classList.toggle("searching", searching);
  if (!searching) results.replaceChildren();
}

if (sidebar && box && results) {
  box.addEventListener("input", update);
  box.addEventListener("search", update);
  box.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && box.value) {
      event.preventDefault();
      event.stopPropagation();
      box.value = "";
      update();
    }
  });
  update();
}

// The active conversation's "⋯" menu is a popover: placed beside its button over the list
// (fixed on a desktop, so the sidebar's scrolling does not clip it), closed by Escape (layout.js), a click
// outside it, or focus leaving it; the first field takes the focus when it opens.
// In the phone's drawer (a transformed, fixed box while it slides) the panel stays below its
// button, where the stylesheet puts it: the drawer is as tall as the screen and scrolls.
const drawerLayout = window.matchMedia("(max-width: 760px)");

function placeMenu(menu) {
  const panel = menu.querySelector(".conversation-actions-panel");
  if (!panel) return;
  if (drawerLayout.matches) {
    panel.classList.remove("placed");
    panel.style.left = panel.style.top = "";
    return;
  }
  const button = menu.querySelector("summary").getBoundingClientRect();
  panel.classList.add("placed");
  const width = panel.offsetWidth;
  const height = panel.offsetHeight;
  const left = Math.max(8, Math.min(button.right - width, window.innerWidth - width - 8));
  let top = button.bottom + 4;
  if (top + height > window.innerHeight - 8) top = Math.max(8, button.top - height - 4);
  panel.style.left = `${left}px`;
  panel.style.top = `${top}px`;
}

document.addEventListener(
  "toggle",
  (event) => {
    const menu = event.target;
    if (!(menu instanceof HTMLDetailsElement) || !menu.classList.contains("conversation-actions")) return;
    if (menu.open) {
      placeMenu(menu);
      menu.querySelector(".conversation-actions-panel input:not([type=hidden]), .conversation-actions-panel button")?.focus();
    }
  },
  true,
);

function closeMenus(except) {
  for (const menu of document.querySelectorAll("details.conversation-actions[open]")) {
    if (menu !== except) menu.open = false;
  }
}

document.addEventListener("click", (event) => {
  closeMenus(event.target.closest?.("details.conversation-actions"));
});
document.addEventListener("focusin", (event) => {
  closeMenus(event.target.closest?.("details.conversation-actions"));
});
window.addEventListener("resize", () => closeMenus(null));
sidebar?.addEventListener("scroll", () => closeMenus(null), { passive: true });

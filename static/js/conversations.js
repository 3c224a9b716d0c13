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

// Agent and provider pages: a group's box ticks its functions (and shows "some" when only a
// few are ticked); "every enabled tool" folds the list away; Test connection says it is busy.
(function () {
  "use strict";
  var groups = document.querySelectorAll(".tool-group[data-group]");
  function syncGroup(fieldset) {
    var box = fieldset.querySelector('input[name="tool_group"]');
    var tools = fieldset.querySelectorAll('input[name="tool"]');
    var ticked = Array.prototype.filter.call(tools, function (t) { return t.checked; }).length;
    box.checked = tools.length > 0 && ticked === tools.length;
    box.indeterminate = ticked > 0 && ticked < tools.length;
  }
  groups.forEach(function (fieldset) {
    var box = fieldset.querySelector('input[name="tool_group"]');
    var tools = fieldset.querySelectorAll('input[name="tool"]');
    box.addEventListener("change", function () {
      tools.forEach(function (t) { t.checked = box.checked; });
      box.indeterminate = false;
    });
    tools.forEach(function (t) { t.addEventListener("change", function () { syncGroup(fieldset); }); });
    syncGroup(fieldset);
  });
  var all = document.querySelector(".all-tools input");
  var list = document.querySelector("[data-tool-groups]");
  function syncAll() { if (list) list.hidden = all.checked; }
  if (all) { all.addEventListener("change", syncAll); syncAll(); }
  document.querySelectorAll("button[data-busy-label]").forEach(function (button) {
    button.form.addEventListener("submit", function () {
      button.textContent = button.dataset.busyLabel;
      setTimeout(function () { button.disabled = true; }, 0);
    });
  });
})();

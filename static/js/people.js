// People pages: copy a one-time link; show the password fields only when setting one now.
(function () {
  "use strict";
  document.querySelectorAll("[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var input = document.getElementById(button.dataset.copy);
      input.select();
      var done = function () { button.textContent = "Copied"; };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(input.value).then(done, function () {});
      } else if (document.execCommand("copy")) {
        done();
      }
    });
  });
  var how = document.querySelectorAll('input[name="how"]');
  var fields = document.querySelectorAll(".password-fields, .password-hint");
  function sync() {
    var checked = document.querySelector('input[name="how"]:checked');
    var show = checked && checked.value === "password";
    fields.forEach(function (el) { el.hidden = !show; });
  }
  how.forEach(function (radio) { radio.addEventListener("change", sync); });
  if (how.length) sync();
})();

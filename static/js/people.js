// People pages: copy a one-time link; show the password fields only when setting one now.
(function () {
  "use strict";
  // Django's JavaScript catalog (base.html) defines gettext; without it, English.
  var gettext = window.gettext || function (text) { return text; };
  document.querySelectorAll("[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var input = document.getElementById(button.dataset.copy);
      input.select();
      var done = function () { button.textContent = gettext("Copied"); };
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
  // The grant editor: a whole tool group covers its functions; their boxes show ticked and
  // are not posted on their own.
  document.querySelectorAll("[data-grant-whole]").forEach(function (whole) {
    whole.addEventListener("change", function () {
      var box = document.querySelector('[data-grant-functions="' + whole.dataset.grantWhole + '"]');
      box.querySelectorAll("input").forEach(function (input) {
        input.disabled = whole.checked;
        input.checked = whole.checked || input.dataset.own === "1";
      });
    });
  });
})();

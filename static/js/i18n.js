// The page's script strings in its language: base.html loads Django's JavaScript catalog
// (/jsi18n/<language>.js, which defines window.gettext) before the modules run. Without it,
// or for a string it does not hold, the English text is used as written.
// `makemessages -d djangojs` collects the gettext("...") calls of these modules.

export function gettext(text) {
  return typeof window.gettext === "function" ? window.gettext(text) : text;
}

// "%(name)s" placeholders, as in the Python side's messages.
export function format(text, params) {
  return text.replace(/%\((\w+)\)s/g, (whole, key) => (key in params ? String(params[key]) : whole));
}

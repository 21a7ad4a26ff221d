// Before the match page is drawn: hide its result unless this browser asked to see
// results (the viewer's "hide results" box, on by default), so that the server's result
// line never shows unasked.
try {
  if (localStorage.getItem("sticheln.hideResult") !== "0") document.documentElement.classList.add("hide-result");
} catch {
  document.documentElement.classList.add("hide-result");  // no storage: hidden, as by default
}

// Before the match page is drawn: hide its result if this browser asked for that (the
// viewer's "hide the result" box), so that the server's result line never shows.
try {
  if (localStorage.getItem("sticheln.hideResult") === "1") document.documentElement.classList.add("hide-result");
} catch {
  // no storage: the result shows
}

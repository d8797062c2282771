// Small helpers shared by the pages: JSON calls that surface the API's error message.
"use strict";
async function api(path, options) {
  let response;
  try {
    response = await fetch(path, Object.assign({credentials: "same-origin"}, options || {}));
  } catch (error) {  // the browser's words alone ("Failed to fetch") said nothing to do
    throw new Error("no answer from the server (" + error.message + "): is `enginelib serve` "
                    + "running? Try again once it is");
  }
  // Only the API's JSON is read as an answer: a proxy's login page, answered 200, was taken
  // for one ("purged undefined jobs"), and its 502 page said only "Bad Gateway".
  const type = response.headers.get("content-type") || "";
  const data = type.startsWith("application/json") ? await response.json().catch(() => null) : null;
  if (data === null || typeof data !== "object") {
    throw new Error("HTTP " + response.status + " " + response.statusText + " from " + path
                    + " is not the API's JSON (" + (type.split(";")[0] || "no content type")
                    + "): is a proxy or a login page in between?");
  }
  if (!response.ok) { throw new Error(data.error || ("HTTP " + response.status + " " + response.statusText)); }
  return data;
}
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined) continue;
    if (key === "class") node.className = value; else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}
function bar(score) {
  const value = score === null || score === undefined ? 0 : Math.max(0, Math.min(100, score));
  const inner = el("span"); inner.style.width = value + "%";
  return el("span", {class: "bar", title: score === null || score === undefined ? "no authority score" : String(score)}, inner);
}
function fixed(value, digits) { return value === null || value === undefined ? "–" : Number(value).toFixed(digits); }

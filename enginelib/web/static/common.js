// Small helpers shared by the pages: JSON calls that surface the API's error message.
"use strict";
async function api(path, options) {
  const response = await fetch(path, Object.assign({credentials: "same-origin"}, options || {}));
  const data = await response.json().catch(() => ({error: response.statusText}));
  if (!response.ok) { throw new Error(data.error || ("HTTP " + response.status)); }
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

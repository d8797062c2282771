// Evidence inspector: runs /api/search and shows, per hit, every score the API returned,
// the citation with highlights and offsets, and the gate's decision; checks an answer.
"use strict";
let lastSearch = null;
// The latest search's number: on a slow network an earlier search's answer could come last
// and replace the latest one's hits, under its query.
let searches = 0;
// The same for answer checks: one answered after a new search's results (or a newer check)
// showed its claims, whose [n] named another search's citations. `shown` counts the
// searches whose results (or error) were put on screen.
let checks = 0, shown = 0;

function searchRequest() {
  const levels = [...document.querySelectorAll("input[name=truth_levels]:checked")].map((n) => n.value);
  const request = {
    query: document.getElementById("query").value,
    strategy: document.getElementById("strategy").value,
    truth_levels: levels.join(","),
    limit: Number(document.getElementById("limit").value || 10),
    diversify: document.getElementById("diversify").checked,
    boost: document.getElementById("boost").checked,
    no_gate: document.getElementById("no_gate").checked,
  };
  const preset = document.getElementById("preset").value;
  if (preset) request.preset = preset;
  const snapshot = document.getElementById("snapshot").value.trim();
  if (snapshot) request.snapshot = snapshot;
  const filters = document.getElementById("filters").value.trim();
  if (filters) request.filters = filters;  // sent as text: the API explains bad JSON
  return request;
}

function showError(message) {
  const node = document.getElementById("error");
  node.hidden = !message; node.textContent = message || "";
}

function quote(hit) {
  // The chunk text with the query terms marked; highlights carry global offsets. They count
  // characters (code points, as Python does), a string's indices UTF-16 units: an emoji
  // (two units) before a term moved its mark, so the text is cut as an array of characters.
  const node = el("blockquote");
  let cursor = 0;
  const chars = Array.from(hit.content);
  const text = (start, end) => chars.slice(start, end).join("");
  for (const h of hit.highlights) {
    const start = h.start_offset - hit.start_offset, end = h.end_offset - hit.start_offset;
    if (start < cursor || end < start || end > chars.length) continue;
    node.append(text(cursor, start), el("mark", {}, text(start, end)));
    cursor = end;
  }
  node.append(text(cursor));
  return node;
}

function renderHit(hit) {
  const s = hit.scores, a = hit.authority || {};
  const tier = a.tier || "bronze";
  return el("li", {class: "hit", "data-document": hit.document_id, "data-chunk": hit.chunk_index},
    el("div", {},
      el("strong", {}, hit.citation.display_text), " ",
      el("span", {class: "badge tier-" + tier, title: "tier " + tier}, hit.truth_level + " · " + tier), " ",
      bar(a.authority_score), " ",
      el("span", {class: "muted"}, a.authority_score === null || a.authority_score === undefined ? "no authority score" : "authority " + a.authority_score)),
    el("div", {class: "scores"},
      el("span", {}, "fused (RRF) ", el("b", {class: "score-fused"}, fixed(s.fused, 6))),
      el("span", {}, "vector rank ", el("b", {class: "score-vector-rank"}, s.vector_rank ?? "–"),
         " score ", el("b", {class: "score-vector"}, fixed(s.vector_score, 4))),
      el("span", {}, "BM25 rank ", el("b", {class: "score-bm25-rank"}, s.bm25_rank ?? "–"),
         " score ", el("b", {class: "score-bm25"}, fixed(s.bm25_score, 4))),
      el("span", {}, "similarity ", el("b", {class: "score-similarity"},
         s.similarity === null || s.similarity === undefined ? "–" : (s.similarity * 100).toFixed(1) + "%"))),
    quote(hit),
    el("div", {class: "muted"}, hit.document_id + " chunk " + hit.chunk_index + ", chars "
       + hit.start_offset + "–" + hit.end_offset + " · ",
       el("a", {href: hit.document_url, class: "doc-link"}, "open the document at the cited span")));
}

// What is on screen belongs to one search: a failed one showed its error above the last
// one's gate and hits (and Check citations checked against them), a new one beside the
// last answer's check, whose [n] named the last search's citations.
function clearResults() {
  shown += 1;
  lastSearch = null;
  const gate = document.getElementById("gate");
  gate.hidden = true; gate.replaceChildren();
  document.getElementById("hits").replaceChildren();
  document.getElementById("claims").replaceChildren();
}

async function runSearch(event) {
  event.preventDefault();
  const search = ++searches;
  showError(null);
  const request = searchRequest();
  try {
    const data = await api("/api/search", {method: "POST", headers: {"content-type": "application/json"},
                                           body: JSON.stringify(request)});
    if (search !== searches) return;
    clearResults();
    lastSearch = request;
    const gate = document.getElementById("gate");
    gate.hidden = false;
    gate.className = "gate " + data.gate.decision;
    // A search with no gate is answered without it: "evidence passes the gate" was said of
    // it too; the gate's own message says it is off.
    gate.replaceChildren(el("strong", {id: "gate-decision"}, data.gate.decision === "answer" ? "Answerable" : "Refused: NO_RELEVANT_SOURCES"),
      " · ", el("span", {id: "gate-reason"}, data.gate.reason || data.gate.message || "evidence passes the gate"),
      " · confidence " + fixed(data.gate.confidence, 3) + " · " + data.strategy_used + " · "
      + data.execution_time_ms.toFixed(1) + " ms");
    document.getElementById("hits").replaceChildren(...data.hits.map(renderHit));
  } catch (error) {
    if (search === searches) { clearResults(); showError(error.message); }
  }
}

async function checkAnswer() {
  const check = ++checks, results = shown;
  const current = () => check === checks && results === shown;
  showError(null);
  if (lastSearch === null) { showError("run a search first: the answer is checked against its citations"); return; }
  try {
    const data = await api("/api/check-answer", {method: "POST", headers: {"content-type": "application/json"},
      body: JSON.stringify({answer: document.getElementById("answer").value, search: lastSearch})});
    if (!current()) return;
    const summary = el("p", {id: "claims-summary"}, data.fabricated.length
      ? "Fabricated references: " + data.fabricated.join(", ")
      : "Every reference points to a returned citation.",
      data.unsupported_sentences.length ? " · " + data.unsupported_sentences.length + " claim(s) without a reference" : "");
    const claims = data.claims.map((claim) => el("div", {class: "claim " + claim.verdict, "data-verdict": claim.verdict},
      el("div", {}, claim.claim),
      el("div", {class: "muted"}, claim.verdict === "unsupported" ? "unsupported: no reference" : null,
        ...claim.references.map((ref) => el("span", {class: "ref " + ref.status},
          " " + ref.ref + " → " + (ref.citation ? ref.citation.document_id + " chunk " + ref.citation.chunk_index
                                                 + " (chars " + ref.citation.start_offset + "–" + ref.citation.end_offset + ")"
                                               : "FABRICATED: no such citation"))))));
    document.getElementById("claims").replaceChildren(summary, ...claims);
  } catch (error) { if (current()) showError(error.message); }
}

document.getElementById("search-form").addEventListener("submit", runSearch);
document.getElementById("check").addEventListener("click", checkAnswer);

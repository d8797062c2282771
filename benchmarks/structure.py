"""Structure-true chunks and answering quotes, measured on the regulatory corpus.

``python -m benchmarks.structure`` prints, for the section chunker and the flat one it
replaced: the share of chunks of ``regulatory/*.md`` lying inside one article, recital or
annex with that unit in their heading path; how many SciFact/NFCorpus documents are cut
differently; and, over full-text searches of the regulatory store, whether every quote is
an exact slice of its hit and how many of the query's words it holds (against the old
quote, the chunk's first 500 characters).
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path

import enginelib
from enginelib import ChunkingConfig, HashingEmbedder
from enginelib.chunker import Chunker
from enginelib.text import normalize_text

from .beir import SHARED_DATASETS as DATASETS_ROOT

ACTS = ("gdpr.md", "gdpr_recitals.md", "eu_ai_act.md", "eu_ai_act_recitals.md")
_HEADING = re.compile(r"^(#{1,6}) (.+)$", re.MULTILINE)
QUERIES = (
    "When must a controller notify a personal data breach?", "right to erasure grounds",
    "data protection officer tasks", "fines for infringements administrative",
    "consent of a child information society services",
    "transfers to third countries adequacy decision", "prohibited AI practices social scoring",
    "obligations of deployers of high-risk AI systems",
    "transparency obligations for chatbots deepfakes",
    "general-purpose AI models with systemic risk",
    "remote biometric identification law enforcement", "record-keeping logs high-risk",
    "data portability machine-readable format", "processor contract obligations",
    "penalties AI Act fines turnover", "right to object direct marketing",
)


def units(text: str) -> list[tuple[int, int, str]]:
    heads = [(m.start(), len(m.group(1)), m.group(2).strip()) for m in _HEADING.finditer(text)]
    out = []
    for i, (offset, level, title) in enumerate(heads):
        if level == 4:  # articles, recitals and annexes are the #### headings
            end = next((o for o, lv, _ in heads[i + 1 :] if lv <= 4), len(text))
            out.append((offset, end, title))
    return out


def chunk_structure(root: Path, structure: str) -> tuple[int, float, float]:
    total = inside = named = 0
    chunker = Chunker(ChunkingConfig(structure=structure))
    for name in ACTS:
        text = normalize_text((root / name).read_text(encoding="utf-8"))
        spans = units(text)
        for c in chunker.chunk(text):
            touched = [u for u in spans if u[0] < c.end_offset and c.start_offset < u[1]
                       and text[max(u[0], c.start_offset) : min(u[1], c.end_offset)].strip()]
            total += 1
            inside += len(touched) <= 1
            named += len(touched) == 1 and touched[0][2] in c.headings
    return total, inside / total, named / total


def changed_documents(path: Path) -> tuple[int, int]:
    new, old = Chunker(), Chunker(ChunkingConfig(structure="flat"))
    seen = changed = 0
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            text = normalize_text(json.loads(line)["text"])
            if not text.strip():
                continue
            seen += 1
            a = [(c.start_offset, c.end_offset) for c in new.chunk(text)]
            b = [(c.start_offset, c.end_offset) for c in old.chunk(text)]
            changed += a != b
    return seen, changed


def quotes(root: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = enginelib.open(Path(tmp) / "s", embedder=HashingEmbedder(32))
        store.ingest_path(*(root / name for name in ACTS), truth_level="L1")
        exact, new_share, old_share, new_none, old_none, lengths = 0, [], [], 0, 0, []
        for query in QUERIES:
            terms = store._text_index.highlight_terms(query)
            words = [w for w in re.findall(r"\w[\w-]*", query.lower()) if w in terms]
            response = store.search(query, strategy="fulltext", limit=10, log=False,
                                    answerability_threshold=None)
            for hit in response.hits:
                c = hit.citation
                text = store.get_document(hit.document_id)["content"]
                exact += (text[c.quote_start : c.quote_end] == c.quote
                          and hit.start_offset <= c.quote_start <= c.quote_end <= hit.end_offset)
                old = hit.content.strip()[:500]
                for quote, shares in ((c.quote, new_share), (old, old_share)):
                    held = sum(bool(re.search(rf"(?<!\w){re.escape(w[:5])}", quote.lower()))
                               for w in words)
                    shares.append(held / max(1, len(words)))
                new_none += new_share[-1] == 0
                old_none += old_share[-1] == 0
                lengths.append(len(c.quote))
        store.close()
    n = len(new_share)
    return {"hits": n, "exact": exact / n, "new_share": statistics.mean(new_share),
            "old_share": statistics.mean(old_share), "new_none": new_none, "old_none": old_none,
            "quote_chars": statistics.median(lengths)}


def main() -> None:
    root = DATASETS_ROOT / "regulatory"
    print("| chunker | chunks | inside one unit | with its unit in the path |")
    print("| --- | --- | --- | --- |")
    for structure in ("sections", "flat"):
        total, inside, named = chunk_structure(root, structure)
        print(f"| {structure} | {total} | {inside:.1%} | {named:.1%} |")
    for name in ("scifact", "nfcorpus"):
        seen, changed = changed_documents(DATASETS_ROOT / name / "corpus.jsonl.gz")
        print(f"{name}: {changed} of {seen} documents cut differently")
    q = quotes(root)
    print(f"quotes: {q['hits']} hits, exact and inside the hit {q['exact']:.1%}; share of the "
          f"query's words held {q['new_share']:.3f} (old {q['old_share']:.3f}); holding none "
          f"{q['new_none']} (old {q['old_none']}); median length {q['quote_chars']:.0f} chars")
    sys.stdout.flush()


if __name__ == "__main__":
    main()

"""How the gate and the ranking hold when a question comes wrapped in the conversational
frame users type around it ("Can you tell me ...", "J'aimerais savoir ...").

    python -m benchmarks.question_frames                  # the 'choose' half of the frames
    python -m benchmarks.question_frames --half check     # the held-out half, run at the end
    python -m benchmarks.question_frames --per-frame --words

Every in-domain and off-domain question of the regulatory sets (``benchmarks/questions``,
the same groups as ``regulatory_eval``: EN, FR, EN over FR) is asked bare and inside each
frame of its language (English frames for EN over FR: the user writes English). The
default configuration answers, with the same harness and cached stores as
``regulatory_eval`` (``run_questions``, ``answered``, ``in_top``). A frame adds no
information about the question, so a framed question should get the bare one's decision
and ranking: in-domain answered and top-3 as high, off-domain refused as often.

The frames were written, and split in two halves by alternation (even positions 'choose',
odd positions 'check'), before any of them was run: 'choose' may be looked at while
deciding a change, 'check' is only run to report it.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from enginelib.embedders.registry import DEFAULT_EMBEDDER

from .regulatory_eval import (
    GROUPS,
    Outcome,
    answered,
    harness_embedder,
    in_top,
    load_questions,
    open_store,
    run_questions,
    share,
)

# Frames users type around a question. Order matters: even positions are the 'choose'
# half, odd positions the 'check' half (fixed before any run).
FRAMES: dict[str, tuple[str, ...]] = {
    "en": (
        "Can you tell me {q}",
        "I'd like to know {q}",
        "Please explain {q}",
        "Quick question: {q}",
        "According to the regulation, {q}",
        "Help me understand {q}",
        "Could you clarify {q}",
        "I was wondering {q}",
        "Hi, I have a question: {q}",
        "Do you know {q}",
        "I need to find out {q}",
        "Can you walk me through {q}",
    ),
    "fr": (
        "Pouvez-vous me dire {q}",
        "J'aimerais savoir {q}",
        "Explique-moi {q}",
        "Petite question : {q}",
        "D'après le règlement, {q}",
        "Aide-moi à comprendre {q}",
        "Pourriez-vous préciser {q}",
        "Je me demandais {q}",
        "Bonjour, j'ai une question : {q}",
        "Savez-vous {q}",
        "Dites-moi {q}",
        "Tu peux m'éclairer : {q}",
    ),
}
HALVES = ("choose", "check")
# Written after the frame cutter (enginelib/question_frames.py) was, by its author: a check
# of it on frames it was not written from, two of them ones it does not cut by design (a
# frame that names who asks).
FRESH_FRAMES: dict[str, tuple[str, ...]] = {
    "en": (
        "Hey there, {q}",
        "Could you please tell me {q}",
        "I need to know {q}",
        "Good morning, I'm curious: {q}",
        "Can you explain to me {q}",
        "My manager asked me this: {q}",
    ),
    "fr": (
        "Salut ! {q}",
        "Pourriez-vous m'indiquer {q}",
        "J'ai besoin de savoir {q}",
        "Bonjour, petite question : {q}",
        "Peux-tu m'expliquer {q}",
        "Mon responsable me demande : {q}",
    ),
}
# the language of the frames each group's questions are written in
GROUP_LANGUAGE = {"EN": "en", "FR": "fr", "EN>FR": "en"}


def frames(language: str, half: str) -> tuple[str, ...]:
    if half == "fresh":
        return FRESH_FRAMES[language]
    return FRAMES[language][HALVES.index(half)::2]


_FIRST_WORD = re.compile(r"\S+")


def framed(frame: str, question: str) -> str:
    """``question`` inside ``frame``, its first letter lower-cased where that is natural:
    not after a colon (a new sentence), not in an acronym ("GDPR", "AI") or "I"."""
    before = frame.split("{q}")[0].rstrip()
    first = _FIRST_WORD.match(question)
    word = first.group(0) if first else ""
    keep = (before.endswith(":") or word == "I" or word.startswith("I'")
            or any(c.isupper() for c in word[1:]))
    text = question if keep or not question else question[0].lower() + question[1:]
    return frame.format(q=text)


def run_group(store: Any, embedder: Any, questions: list[dict[str, Any]],
              frame_list: Sequence[str]) -> dict[str, list[Outcome]]:
    """Outcomes per frame ("" for the bare questions), in the questions' order."""
    out = {"": run_questions(store, embedder, questions, {})}
    for frame in frame_list:
        wrapped = [{**q, "question": framed(frame, q["question"])} for q in questions]
        out[frame] = run_questions(store, embedder, wrapped, {})
    return out


def _rates(inside: list[Outcome], off: list[Outcome]) -> tuple[float, float, float]:
    return (share([answered(o) for o in inside]), share([in_top(o) for o in inside]),
            share([not answered(o) for o in off]))


def table(results: dict[tuple[str, str], dict[str, Any]]) -> str:
    lines = [
        "| group | half | frames | in-domain | answered bare → framed | top-3 bare → framed "
        "| same top hit | off-domain | refused bare → framed |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (group, half), value in results.items():
        inside, off = value["in"], value["off"]
        frame_list = [f for f in inside if f]
        bare = _rates(inside[""], off[""])
        framed_in = [o for f in frame_list for o in inside[f]]
        framed_off = [o for f in frame_list for o in off[f]]
        wrapped = _rates(framed_in, framed_off)
        same_top = share([o.top[:1] == b.top[:1] for f in frame_list
                          for o, b in zip(inside[f], inside[""], strict=True)])
        lines.append(
            f"| {group} | {half} | {len(frame_list)} | {len(inside[''])} | "
            f"{bare[0]:.1%} → {wrapped[0]:.1%} | {bare[1]:.1%} → {wrapped[1]:.1%} | "
            f"{same_top:.1%} | {len(off[''])} | {bare[2]:.1%} → {wrapped[2]:.1%} |")
    return "\n".join(lines)


def per_frame(results: dict[tuple[str, str], dict[str, Any]]) -> str:
    lines = ["| group | frame | answered | top-3 | refused (off) | lost answers | lost top-3 |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for (group, _), value in results.items():
        inside, off = value["in"], value["off"]
        for frame in inside:
            ans, top, ref = _rates(inside[frame], off[frame])
            lost = sum(answered(b) and not answered(o)
                       for o, b in zip(inside[frame], inside[""], strict=True))
            lost_top = sum(in_top(b) and not in_top(o)
                           for o, b in zip(inside[frame], inside[""], strict=True))
            lines.append(f"| {group} | {frame or '(bare)'} | {ans:.1%} | {top:.1%} | {ref:.1%} | "
                         f"{lost} | {lost_top} |")
    return "\n".join(lines)


def frame_words(results: dict[tuple[str, str], dict[str, Any]]) -> str:
    """Words the gate weighs in a framed question and not in the bare one: how often each
    is counted, how often it is missing from the top hits, and in how many lost answers."""
    counted: Counter[str] = Counter()
    missing: Counter[str] = Counter()
    in_lost: Counter[str] = Counter()
    for value in results.values():
        for kind in ("in", "off"):
            outcomes = value[kind]
            for frame in (f for f in outcomes if f):
                for o, b in zip(outcomes[frame], outcomes[""], strict=True):
                    extra = set(o.evidence.content_words) - set(b.evidence.content_words)
                    counted.update(extra)
                    missing.update(extra & set(o.evidence.missing_words))
                    if kind == "in" and answered(b) and not answered(o):
                        in_lost.update(extra)
    rows = ["| word | counted | missing | in lost answers |", "| --- | ---: | ---: | ---: |"]
    rows += [f"| {w} | {n} | {missing[w]} | {in_lost[w]} |" for w, n in counted.most_common()]
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=[*HALVES, "both", "fresh"], default="choose",
                        help="which half of the frames to run ('check' is held out; 'fresh': "
                             "frames written after the frame cutter)")
    parser.add_argument("--split", choices=["train", "test", "fresh", "all"], default="all",
                        help="question split (default: every question)")
    parser.add_argument("--per-frame", action="store_true", help="one row per frame too")
    parser.add_argument("--words", action="store_true",
                        help="the words the frames add to the gate's content words")
    args = parser.parse_args(argv)
    embedder = harness_embedder(DEFAULT_EMBEDDER)
    split = None if args.split == "all" else args.split
    halves = HALVES if args.half == "both" else (args.half,)
    stores = {corpus: open_store(embedder, corpus) for corpus in ("en", "fr")}
    results: dict[tuple[str, str], dict[str, Any]] = {}
    try:
        for group, in_set, off_set, corpus in GROUPS:
            if group not in GROUP_LANGUAGE:  # the other EU languages have no frames here
                continue
            inside = [q for q in load_questions(in_set) if split in (None, q["split"])]
            outside = [q for q in load_questions(off_set) if split in (None, q["split"])]
            for half in halves:
                frame_list = frames(GROUP_LANGUAGE[group], half)
                results[(group, half)] = {
                    "in": run_group(stores[corpus], embedder, inside, frame_list),
                    "off": run_group(stores[corpus], embedder, outside, frame_list),
                }
    finally:
        for store in stores.values():
            store.close()
    print(f"## Question frames, {embedder.name}, default configuration, {args.split} questions, "
          f"frames: {', '.join(halves)}\n")
    print(table(results))
    if args.per_frame:
        print("\n" + per_frame(results))
    if args.words:
        print("\n" + frame_words(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

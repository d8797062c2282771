"""Full-text backend: BM25 over tantivy, with per-language stemming and exact codes.

Schema (one set of text fields per configured language, so each field has a single
analyzer; a chunk fills the fields of its own language, and queries search them all):

    text_<lang>                                     title + headings + content, stemmed for
                                                    <lang>: what an unqualified word searches
    content_<lang>, title_<lang>, headings_<lang>   the same parts apart, for ``title:word``
                                                    queries; ``plain`` suffix for languages
                                                    without a stemmer here
    codes                                           code-like tokens of the chunk, exact
    words                                           every word as written (lowercased,
                                                    accents folded, not stemmed), documents
                                                    only: the vocabulary typo correction and
                                                    ``word*`` prefixes are matched against
    label                                           i64, indexed + fast: delete and filter

Why one combined field for plain words: BM25 summed over separate title/heading/content
fields rewards a short title that repeats a query word far above a passage that answers
the query (per-field length norms). On the train/dev qrels of SciFact and NFCorpus the
combined field scores 0.708 / 0.291 nDCG@10 against 0.640 / 0.280 for boosted separate
fields; ``benchmarks/RESULTS.md`` has the test figures.

On disk: ``directory/tantivy/`` (tantivy's files) and ``directory/stamp.json``.
Writes are buffered in one IndexWriter and committed lazily, on the next read or on
``save``; before a commit that ``save`` did not ask for, the stamp is first rewritten
with ``generation: null``, so a crash in between can never leave a stamp that claims a
generation the index content does not match.

Ties: the contract breaks equal scores on the smaller label; tantivy breaks them on the
document address. ``save`` checks whether address order is label order (true when chunks
were indexed in label order, as the store does) and records it in the stamp with the
opstamp it holds for: then tantivy's own top k is the answer. Otherwise every document
tied at the cut is fetched (4 k deep at once, wider only when the tie is wider) and
sorted by label.

Speed: tantivy-py's search scores every posting of every query term (it never prunes);
a plain words query over a large index first tries ``tantivy_prune`` (the exact top k from
the documents holding its rare terms, with the whole tie at the cut), and only when that
cannot prove its answer cheaply runs the full query.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import tantivy

from enginelib.common_words import CLOSED_CLASS_WORDS
from enginelib.durable import can_write, chmod_like_umask, copy_tree, write_atomic
from enginelib.errors import BackendError, InvalidInputError, InvalidQueryError, StoreLockedError
from enginelib.faults import crash_point
from enginelib.indexes import tantivy_files, tantivy_prune
from enginelib.indexes.analyzers import (
    CODE_ANALYZER,
    LEGACY_MAX_TOKEN_CHARS,
    MAX_TOKEN_CHARS,
    PLAIN,
    analyzer_name,
    build_analyzers,
    check_languages,
    code_tokens,
    is_stopword_anywhere,
    normalize_language,
    stopword_analyzers,
    word_parts,
)
from enginelib.indexes.base import Labels, SearchResult, TextDocument
from enginelib.indexes.lru import Lru
from enginelib.indexes.tantivy_lexicon import TantivyLexicon
from enginelib.indexes.tantivy_query import (
    USER_FIELDS,
    QuerySyntaxError,
    Translation,
    short_query,
    translate,
)
from enginelib.input_files import read_regular
from enginelib.search.gate import QueryTerm, bm25_idf
from enginelib.search.highlights import is_function_word

FORMAT_VERSION = 3  # 2: the combined text_<lang> field; 3: the words field
STAMP = "stamp.json"
INDEX_DIR = "tantivy"
LABEL_FIELD = "label"
CODE_FIELD = "codes"
WORDS_FIELD = "words"
TEXT_FIELD = "text"
# Boosts apply to explicit field queries (``title:word``) and to the code field. Codes at
# 1.0: on the train/dev qrels 2.0 scored lower (SciFact 0.698 vs 0.708), and an exact
# code is a rare term whose IDF already ranks it first.
DEFAULT_BOOSTS = {"title": 1.5, "headings": 1.2, CODE_FIELD: 1.0}
DEFAULT_HEAP_SIZE = 50_000_000
# The label-order check at save reads every document's label (~0.3 s per 100k on an idle
# machine). Past this many documents it is skipped and ties take the exact path: a store's
# every persist would otherwise pay seconds, and at 1M merges had reordered the segments anyway.
LABEL_ORDER_CHECK_MAX = 300_000
# Query translations and parsed queries kept per vocabulary (emptied on commit), least
# recently used dropped first: a search translates its query twice (to parse it, then for
# highlights) and tantivy's parser plus the clause read cost more than the search itself
# on a small index, so a working set of repeated queries stays parsed.
QUERY_CACHE_SIZE = 512
# A parsed query, its plain clauses (None: tantivy_prune cannot answer it) and their
# postings (tantivy_prune.postings).
_Parsed = tuple[tantivy.Query, list[tantivy_prune.Clause] | None, int]


class TantivyTextIndex:
    """BM25 text index following ``enginelib.indexes.base.TextIndex``.

    ``lenient``: when True, a malformed query (unbalanced quote or parenthesis, dangling
    operator) is searched as plain words instead of raising InvalidQueryError. The
    default is strict; ``search(..., lenient=True)`` overrides per call.

    ``read_only``: never change the files (a reader, a snapshot). An index built by another
    format or with other languages then opens as an empty in-memory index with no
    generation, which tells the store to search a private rebuild instead.
    """

    def __init__(
        self,
        directory: Path,
        *,
        languages: Sequence[str] = ("en", "fr"),
        boosts: dict[str, float] | None = None,
        heap_size: int = DEFAULT_HEAP_SIZE,
        lenient: bool = False,
        read_only: bool = False,
    ) -> None:
        self.directory = Path(directory)
        self.languages = check_languages(tuple(languages))
        self.boosts = {**DEFAULT_BOOSTS, **(boosts or {})}
        self.heap_size = heap_size
        self.lenient = lenient
        self.read_only = read_only
        suffixes = (*self.languages, PLAIN)
        self._field_map = {f: [f"{f}_{s}" for s in suffixes] for f in USER_FIELDS}
        self._default_fields = [f"{TEXT_FIELD}_{suffix}" for suffix in suffixes]
        self._field_boosts = {
            name: self.boosts[user]
            for user, names in self._field_map.items() if user in self.boosts
            for name in names
        }
        self._field_boosts[CODE_FIELD] = self.boosts.get(CODE_FIELD, 1.0)
        self._max_token = MAX_TOKEN_CHARS
        self._analyzers = build_analyzers(self.languages, self._max_token)
        self._stopwords = stopword_analyzers(self.languages)
        self._translations: Lru[tuple[str, bool, bool], Translation] = Lru(QUERY_CACHE_SIZE)
        # (text, lenient, correct) -> the parsed query and its plain clauses (None: prune not
        # possible); a tantivy.Query holds no searcher, so it outlives reloads.
        self._parsed: Lru[tuple[str, bool, bool], _Parsed] = Lru(QUERY_CACHE_SIZE)
        self._lexicon: TantivyLexicon | None = None
        self._writer: tantivy.IndexWriter | None = None
        self._pending = False
        self._generation: int | None = None
        # True while the searcher's document addresses run in label order (see module doc).
        self._label_order = False
        # Field names in schema order: a parsed query names its fields by position.
        self._field_names = [f"{field}_{lang}" for lang in suffixes
                             for field in (TEXT_FIELD, *USER_FIELDS)]
        self._field_names += [CODE_FIELD, WORDS_FIELD, LABEL_FIELD]
        self._open()

    # -- opening -------------------------------------------------------------------

    def _schema(self) -> tantivy.Schema:
        builder = tantivy.SchemaBuilder()
        for lang in (*self.languages, PLAIN):
            for field in (TEXT_FIELD, *USER_FIELDS):
                builder.add_text_field(f"{field}_{lang}", tokenizer_name=analyzer_name(lang))
        builder.add_text_field(CODE_FIELD, tokenizer_name=CODE_ANALYZER, index_option="freq")
        # Never searched for scoring, so no frequencies or positions: only its dictionary.
        builder.add_text_field(WORDS_FIELD, tokenizer_name=analyzer_name(PLAIN),
                               index_option="basic")
        # i64, not u64: tantivy-py turns a Python int into an i64 term, so deleting by
        # term on a u64 field silently matches nothing.
        builder.add_integer_field(LABEL_FIELD, indexed=True, fast=True)
        return builder.build()

    def _config(self) -> dict[str, object]:
        return {"format": FORMAT_VERSION, "languages": list(self.languages)}

    def _open(self) -> None:
        stamp = self._read_stamp()
        path = self.directory / INDEX_DIR
        stamped_limit = _stamped_max_token(stamp)
        same_config = stamp is not None and stamped_limit is not None and all(
            stamp.get(key) == value for key, value in self._config().items()
        )
        # The stamp names the CRC each segment file's footer records: a segment file of
        # another index copied in, or one cut short, opens and answers other documents'
        # postings without an error. Derived data: rebuild (a reader, in memory).
        sound = not (same_config and path.exists()) or tantivy_files.files_match(
            path, stamp.get("files") if stamp is not None else None)
        # A pipe or device among its files (tantivy would wait on it): rebuild, the same.
        sound = sound and (not path.exists() or tantivy_files.only_regular_files(path))
        if self.read_only and not (same_config and path.exists() and sound):
            self._index = self._make_index(None)  # in memory: the files stay as they are
            return
        if not sound:
            shutil.rmtree(path)
            same_config = False
        if path.exists() and same_config and not can_write(self.directory):
            # A read-only medium: tantivy wants to create its lock files even to read, so
            # a reader searches a private copy (the stamp and meta are the same files).
            path = self._private_copy(path)
        elif path.exists() and not same_config:
            # Built with other languages or by another format: derived data, rebuild.
            shutil.rmtree(path)
        if path.exists() and stamped_limit is not None:
            # Query words are cut as the index's documents were.
            self._use_max_token(stamped_limit)
        path.mkdir(parents=True, exist_ok=True)
        try:
            self._index = self._make_index(path)
        except BaseException as exc:
            # Half-written segments or a stale meta.json: tantivy raises OSError/ValueError
            # or panics (PanicException derives from BaseException). Derived data: rebuild.
            if not isinstance(exc, (OSError, ValueError)) and type(exc).__name__ != "PanicException":
                raise
            self._use_max_token(MAX_TOKEN_CHARS)
            if self.read_only and path == self.directory / INDEX_DIR:
                # A reader never removes the shared files (a writer may be using them): it
                # searches a rebuild in memory, and the next writer rebuilds them.
                self._index = self._make_index(None)
                return
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True, exist_ok=True)
            self._index = self._make_index(path)
            return
        generation = stamp.get("generation") if stamp is not None and same_config else None
        if isinstance(generation, int) and stamp is not None:
            if stamp.get("opstamp") == self._disk_opstamp():
                self._generation = generation
                self._label_order = stamp.get("label_order") is True

    def _use_max_token(self, limit: int) -> None:
        if limit != self._max_token:
            self._max_token = limit
            self._analyzers = build_analyzers(self.languages, limit)

    def _private_copy(self, path: Path) -> Path:
        folder = tempfile.mkdtemp(prefix="enginelib-ro-text-")
        # Removed with this object (or at exit), silently: no ResourceWarning to catch.
        weakref.finalize(self, shutil.rmtree, folder, True)
        target = Path(folder) / INDEX_DIR
        copy_tree(path, target, ignore=shutil.ignore_patterns(".tantivy-*.lock"))
        return target

    def _make_index(self, path: Path | None) -> tantivy.Index:
        index = tantivy.Index(self._schema(), path=None if path is None else str(path),
                              reuse=True)
        for name, analyzer in self._analyzers.items():
            index.register_tokenizer(name, analyzer)
        index.reload()
        _ = index.searcher().num_docs  # touch the segments now: corruption fails here
        return index

    def _read_stamp(self) -> dict[str, object] | None:
        try:
            stamp = json.loads(read_regular(self.directory / STAMP).decode("utf-8"))
        except (OSError, ValueError):
            return None
        return stamp if isinstance(stamp, dict) else None

    def _disk_opstamp(self) -> int | None:
        try:
            meta = json.loads(read_regular(self.directory / INDEX_DIR / "meta.json").decode("utf-8"))
            return int(meta["opstamp"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @property
    def generation(self) -> int | None:
        return self._generation

    @property
    def max_token(self) -> int:
        """Words of this many UTF-8 bytes or more are not indexed (see analyzers)."""
        return self._max_token

    # -- writes --------------------------------------------------------------------

    def _get_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            try:
                self._writer = self._index.writer(self.heap_size, 1)
            except ValueError as exc:
                raise StoreLockedError(
                    f"the text index in {self.directory} is being written by another "
                    f"process or object; close it first ({exc})", path=self.directory
                ) from exc
        return self._writer

    def add(self, documents: Sequence[TextDocument]) -> None:
        docs = list(documents)
        for doc in docs:
            if isinstance(doc.label, bool) or not isinstance(doc.label, (int, np.integer)) \
                    or doc.label < 0:
                raise InvalidInputError(
                    f"text document labels must be non-negative ints, got {doc.label!r}"
                )
        writer = self._get_writer()
        for doc in docs:
            label = int(doc.label)
            # Delete-then-add makes "add replaces": tantivy applies a delete to every
            # document added before it, including earlier ones in this same batch.
            writer.delete_documents_by_term(LABEL_FIELD, label)
            writer.add_document(self._to_tantivy(doc))
            self._pending = True
        crash_point("after_text_add")  # fault tests: a failure with the writer in a frame

    def _to_tantivy(self, doc: TextDocument) -> tantivy.Document:
        suffix = normalize_language(doc.language, self.languages)
        out = tantivy.Document()
        out.add_integer(LABEL_FIELD, int(doc.label))
        for field in USER_FIELDS:
            text = getattr(doc, field)
            if text:
                out.add_text(f"{field}_{suffix}", text)
        combined = "\n".join(part for part in (doc.title, doc.headings, doc.content) if part)
        out.add_text(f"{TEXT_FIELD}_{suffix}", combined)
        out.add_text(WORDS_FIELD, combined)
        codes = code_tokens(" ".join((doc.title, doc.headings, doc.content)))
        if codes:
            out.add_text(CODE_FIELD, " ".join(codes))
        return out

    def delete(self, labels: Iterable[int]) -> None:
        label_list = [int(label) for label in labels]
        if not label_list:
            return
        writer = self._get_writer()
        for label in label_list:
            if label >= 0:  # a negative label cannot be present: no-op like any unknown
                writer.delete_documents_by_term(LABEL_FIELD, label)
        self._pending = True

    def clear(self) -> None:
        # Not delete_all_documents: it ignores documents added since the last commit,
        # whereas a delete query applies to everything added before it.
        self._get_writer().delete_documents_by_query(tantivy.Query.all_query())
        self._pending = True

    def _commit(self) -> None:
        if not self._pending:
            return
        assert self._writer is not None
        self._writer.commit()
        self._index.reload()
        self._pending = False
        self._label_order = False  # unknown until the next save checks it
        # Typo corrections and prefix expansions depend on the vocabulary just changed.
        self._translations.clear()
        self._parsed.clear()
        self._lexicon = None
        # tantivy writes these through 0600 temp files: give them the user's umask.
        folder = self.directory / INDEX_DIR
        chmod_like_umask(folder / "meta.json", folder / ".managed.json")

    def _refresh(self) -> None:
        """Make pending writes visible to searches (read-your-writes)."""
        if self._pending:
            if self._generation is not None:
                # The content is about to move past the stamped generation: disown it
                # on disk first (see module docstring).
                self._write_stamp(None)
            self._commit()

    def save(self, generation: int) -> None:
        if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
            raise InvalidInputError(f"generation must be a non-negative int, got {generation!r}")
        self._commit()
        if self._writer is not None:
            # Finish merges and release the writer lock so other processes may write.
            self._writer.wait_merging_threads()
            self._writer = None
            self._index.reload()
            folder = self.directory / INDEX_DIR  # merges rewrite meta.json (0600): see _commit
            chmod_like_umask(folder / "meta.json", folder / ".managed.json")
        if not self._label_order:
            self._label_order = self._addresses_in_label_order()
        crash_point("mid_text_save")
        self._write_stamp(generation)

    def release(self) -> None:
        """Drop the writer and its lock without committing (the store is closing after a
        failure; what was not saved replays from the catalog at the next open).

        Consumed, not only dropped: a failure inside ``add`` (Ctrl-C there) keeps the writer
        alive in its traceback's frames, and with it tantivy's lock, so the index reloaded to
        replay the catalog could not write ("being written by another object")."""
        writer, self._writer = self._writer, None
        self._pending = False
        if writer is not None:
            try:
                writer.wait_merging_threads()  # drops what was not committed, and the lock
            except ValueError:  # consumed already
                pass

    def _write_stamp(self, generation: int | None) -> None:
        stamp = {**self._config(), "max_token": self._max_token,
                 "generation": generation, "opstamp": self._disk_opstamp(),
                 "label_order": self._label_order if generation is not None else None,
                 "files": tantivy_files.footer_checksums(self.directory / INDEX_DIR)}
        self.directory.mkdir(parents=True, exist_ok=True)
        write_atomic(self.directory / STAMP, json.dumps(stamp, indent=2).encode())
        self._generation = generation

    def _addresses_in_label_order(self) -> bool:
        """Whether, in document-address order, labels strictly increase (one pass over the
        label fast field: about 0.3 s per 100k documents, paid at save, not per query)."""
        searcher = self._index.searcher()
        total = int(searcher.num_docs)
        if total == 0:
            return True
        if total > LABEL_ORDER_CHECK_MAX:
            return False
        # all_query scores every document 1.0, so its hits come in address order.
        hits = searcher.search(tantivy.Query.all_query(), limit=total, count=False).hits
        labels = self._labels_at(searcher, [a for _, a in hits])
        return bool((np.diff(labels) > 0).all())

    # -- reads ---------------------------------------------------------------------

    def __len__(self) -> int:
        self._refresh()
        return int(self._index.searcher().num_docs)

    def labels(self) -> Labels:
        self._refresh()
        searcher = self._index.searcher()
        total = int(searcher.num_docs)
        if total == 0:
            return np.zeros(0, dtype=np.int64)
        hits = searcher.search(tantivy.Query.all_query(), limit=total, count=False).hits
        return np.sort(self._labels_at(searcher, [addr for _, addr in hits]))

    def _labels_at(self, searcher: tantivy.Searcher, addresses: list[tantivy.DocAddress]) -> Labels:
        values = searcher.fast_field_values(LABEL_FIELD, addresses)
        if any(value is None for value in values):
            # A damaged segment file reads as no label: that was a bare TypeError.
            raise BackendError(f"the text index in {self.directory} is damaged (a segment's "
                               f"label column is unreadable): run `enginelib repair` to rebuild "
                               f"it from the catalog", path=self.directory)
        return np.asarray(values, dtype=np.int64)

    def search(
        self,
        queries: Sequence[str],
        k: int,
        allowed: Labels | None = None,
        *,
        lenient: bool | None = None,
        correct: bool = True,
    ) -> list[SearchResult]:
        """``correct=False`` searches words exactly as typed (no typo fallback)."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
            raise InvalidInputError(f"k must be a positive integer, got {k!r}")
        if isinstance(queries, str):
            raise InvalidInputError("search takes a list of query strings; wrap one in [...]")
        lenient = self.lenient if lenient is None else lenient
        # Refresh first: typo corrections and prefixes are read from the current vocabulary.
        self._refresh()
        parsed = [self._parse_cached(text, lenient, correct) for text in queries]  # fail first
        restriction = None
        if allowed is not None:
            allowed_labels = sorted({int(x) for x in np.asarray(allowed).ravel() if x >= 0})
            if not allowed_labels:
                return [[] for _ in parsed]
            # Constant score 0: the filter restricts the candidates without moving BM25.
            restriction = tantivy.Query.const_score_query(
                tantivy.Query.term_set_query(self._index.schema, LABEL_FIELD, allowed_labels),
                0.0,
            )
        searcher = self._index.searcher()
        results = []
        for query, clauses, postings in parsed:
            if restriction is not None:
                query = tantivy.Query.boolean_query(
                    [(tantivy.Occur.Must, query), (tantivy.Occur.Must, restriction)]
                )
                clauses = None
            elif postings < tantivy_prune.MIN_POSTINGS:
                clauses = None  # the full query is already cheap: pruning would not be tried
            results.append(self._top_k(searcher, query, int(k), clauses))
        return results

    def count(self, query: str) -> int:
        if not isinstance(query, str):
            raise InvalidInputError(f"count takes one query string, got {type(query).__name__}")
        self._refresh()
        parsed, _, _ = self._parse_cached(query, self.lenient, True)
        # tantivy-py collects a top k beside the count (a limit of 0 panics): one hit is the
        # least it can be asked for.
        found = self._index.searcher().search(parsed, limit=1, count=True)
        return int(found.count)  # type: ignore[attr-defined]  # tantivy's stub omits it

    def _top_k(self, searcher: tantivy.Searcher, query: tantivy.Query, k: int,
               clauses: list[tantivy_prune.Clause] | None) -> SearchResult:
        """``clauses``: the query's plain clauses (tantivy_prune may answer), or None."""
        # Pruned hits hold the exact top k and the whole tie at its k-th score.
        hits = None
        if clauses is not None:
            hits = tantivy_prune.top_k(searcher, self._index.schema, clauses, k)
        if hits is None and self._label_order:
            # Tied documents come in address order, which is label order here: tantivy's
            # own top k already follows the contract.
            hits = searcher.search(query, limit=k, count=False).hits
        elif hits is None:
            hits = tantivy_prune.with_ties(searcher, query, k)
        if not hits:
            return []
        labels = self._labels_at(searcher, [addr for _, addr in hits])
        scores = np.fromiter((score for score, _ in hits), dtype=np.float64, count=len(hits))
        order = np.lexsort((labels, -scores))[:k]
        return list(zip(labels[order].tolist(), scores[order].tolist()))

    def _translate(self, text: str, *, plain: bool, correct: bool = True) -> Translation:
        # A search translates its query twice (to parse it, then for highlights): keep
        # the last few translations rather than redo the work.
        key = (text, plain, correct)
        cached = self._translations.get(key)
        if cached is None:
            lexicon = self._get_lexicon()
            cached = translate(text, field_map=self._field_map, code_field=CODE_FIELD, plain=plain,
                               lexicon=lexicon if correct else _PrefixesOnly(lexicon))
            self._translations.put(key, cached)
        return cached

    def _get_lexicon(self) -> TantivyLexicon:
        if self._lexicon is None:
            fields = {
                f"{TEXT_FIELD}_{suffix}": self._analyzers[analyzer_name(suffix)]
                for suffix in (*self.languages, PLAIN)
            }
            self._lexicon = TantivyLexicon(self._index.searcher(), fields,
                                           words_field=WORDS_FIELD,
                                           fold=self._analyzers[analyzer_name(PLAIN)],
                                           is_stopword=self._is_stopword,
                                           is_common=_is_common_word)
        return self._lexicon

    def corrections(self, query: str) -> dict[str, str]:
        """Words of ``query`` the index does not know, each with the indexed word searched
        in its place (``{"GPDR": "gdpr"}``). Never raises on malformed queries."""
        self._refresh()
        for plain in (False, True):
            try:
                return dict(self._translate(query, plain=plain).corrections)
            except QuerySyntaxError:
                continue
        return {}

    def document_frequency(self, word: str) -> tuple[int, int]:
        """(chunks holding ``word`` as written, stop words included, indexed chunks): the
        acronym twin's frequency check (search/rewrite.py)."""
        self._refresh()
        return self._get_lexicon().document_frequency(word)

    def _parse_cached(self, text: str, lenient: bool, correct: bool) -> _Parsed:
        """``_parse``, the query's plain clauses and their postings, kept until the
        vocabulary changes (a query that fails to parse is not kept: it raises again)."""
        key = (text, lenient, correct)
        found = self._parsed.get(key)
        if found is None:
            query = self._parse(text, lenient, correct)
            clauses = tantivy_prune.plain_clauses(query, self._field_names)
            # Kept for this vocabulary (the cache is emptied on commit); were postings to grow
            # unseen (another process's commit), skipping the pruning stays exact, only slower.
            postings = 0 if clauses is None else tantivy_prune.postings(self._index.searcher(),
                                                                        clauses)
            found = (query, clauses, postings)
            self._parsed.put(key, found)
        return found

    def _parse(self, text: str, lenient: bool, correct: bool = True) -> tantivy.Query:
        if not isinstance(text, str) or not text.strip():
            raise InvalidQueryError("empty query: pass at least one word to search for")
        try:
            translation = self._translate(text, plain=False, correct=correct)
            return self._parse_translated(translation, text)
        except (QuerySyntaxError, InvalidQueryError) as exc:
            malformed = exc
        try:
            translation = self._translate(text, plain=True, correct=correct)
        except QuerySyntaxError as exc:
            # Read as plain words it fails too ('???' has none): suggesting --lenient
            # would send the user round to the same refusal.
            raise InvalidQueryError(str(exc)) from exc
        if not lenient:
            hint = ("; or search its words as they are: --lenient (lenient=True)"
                    if isinstance(malformed, QuerySyntaxError) else "")
            raise InvalidQueryError(f"{malformed}{hint}") from malformed
        return self._parse_translated(translation, text)

    def _parse_translated(self, translation: Translation, original: str) -> tantivy.Query:
        try:
            return self._index.parse_query(translation.text, self._default_fields,
                                           field_boosts=self._field_boosts)
        except ValueError as exc:
            if "Only excluding terms" in str(exc) and translation.terms:
                # Every word asked for is one the analyzers drop (MAX_TOKEN_CHARS or longer:
                # a SHA-1, a key), so no document's index holds it either: the query matches
                # nothing, as such a word alone always did, where it was refused as if it
                # only excluded terms.
                return tantivy.Query.empty_query()
            if "Only excluding terms" in str(exc):
                raise InvalidQueryError(
                    f"query {short_query(original)} only excludes terms (NOT / -); add at least "
                    "one term to search for"
                ) from exc
            raise InvalidQueryError(
                f"cannot parse query {short_query(original)}: {exc}; put literal text in double "
                "quotes"
            ) from exc

    def _is_stopword(self, word: str) -> bool:
        """A stop word of the store's languages: dropped from queries."""
        return any(not analyzer.analyze(word) for analyzer in self._stopwords)

    def highlight_terms(self, query: str) -> list[str]:
        """Lowercased query words to highlight, excluded ones left out.

        Each word comes as typed (lowercased), followed by its stems where stemming
        changes it (``running`` -> ``running``, ``run``), so the caller can match either
        the word or a stem as a word prefix. Never raises on malformed queries.
        """
        try:
            terms = self._translate(query, plain=False).terms
        except QuerySyntaxError:
            try:
                terms = self._translate(query, plain=True).terms
            except QuerySyntaxError:
                return []
        out: list[str] = []
        for term in terms:
            for code in code_tokens(term):
                out.append(code.lower())
            for part in word_parts(term):
                if self._is_stopword(part):
                    continue  # "the", "de": highlighting them marks half the passage
                out.append(part.lower())
                for lang in self.languages:
                    out.extend(self._analyzers[analyzer_name(lang)].analyze(part))
        return list(dict.fromkeys(token for token in out if token))

    # -- evidence for the answerability gate ------------------------------------------

    def query_terms(self, query: str) -> list[QueryTerm]:
        """The query's content words with their BM25 IDF here and the tokens that match them.

        Stop words of every configured language are dropped; a code (``1K0615301M``) is
        one term looked up in the code field; a word's document frequency is summed over
        the per-language fields (a chunk fills only its own language's field).
        """
        try:
            raw = self._translate(query, plain=False).terms
        except QuerySyntaxError:
            try:
                raw = self._translate(query, plain=True).terms
            except QuerySyntaxError:
                return []
        self._refresh()
        searcher = self._index.searcher()
        num_docs = int(searcher.num_docs)
        terms: dict[str, QueryTerm] = {}
        for term in raw:
            for code in code_tokens(term):
                token = code.lower()
                if token not in terms:
                    df = int(searcher.doc_freq(CODE_FIELD, token))
                    terms[token] = QueryTerm(token, bm25_idf(df, num_docs), frozenset({token}))
            for part in word_parts(term):
                word = part.lower()
                if word in terms or self._is_stopword(part) or word.isdigit():
                    continue
                stems = {word}
                df = 0
                for suffix in (*self.languages, PLAIN):
                    for token in self._analyzers[analyzer_name(suffix)].analyze(part):
                        stems.add(token)
                        df += int(searcher.doc_freq(f"{TEXT_FIELD}_{suffix}", token))
                terms[word] = QueryTerm(word, bm25_idf(min(df, num_docs), num_docs), frozenset(stems))
        return list(terms.values())

    def text_tokens(self, text: str) -> set[str]:
        """Every token the analyzers make of ``text`` (stems per language, lowercased
        words, codes): what a query term's tokens are matched against."""
        tokens = {code.lower() for code in code_tokens(text)}
        for analyzer in self._analyzers.values():
            tokens.update(analyzer.analyze(text))
        return tokens


class _PrefixesOnly:
    """A lexicon that expands ``word*`` but corrects nothing (``search(correct=False)``)."""

    def __init__(self, lexicon: TantivyLexicon) -> None:
        self._lexicon = lexicon

    def correct(self, word: str) -> None:
        return None

    def expand_prefix(self, prefix: str) -> list[str]:
        return self._lexicon.expand_prefix(prefix)


def _stamped_max_token(stamp: dict[str, object] | None) -> int | None:
    """The token length limit an index was built with; None when its stamp is damaged."""
    if stamp is None:
        return None
    limit = stamp.get("max_token", LEGACY_MAX_TOKEN_CHARS)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 2 <= limit <= MAX_TOKEN_CHARS:
        return None
    return limit


def _is_common_word(word: str) -> bool:
    """A word spelled right whatever the corpus holds: never a typo to correct."""
    return (is_function_word(word) or word.lower() in CLOSED_CLASS_WORDS
            or is_stopword_anywhere(word))

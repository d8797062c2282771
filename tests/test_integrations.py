"""LangChain and LlamaIndex retrievers, against the real libraries: the engine's hits in its
order, citations in metadata, options passed through, the gate's refusal, bad options."""

from __future__ import annotations

import asyncio
import itertools
import json
import time

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever as LangChainBase
from llama_index.core.retrievers import BaseRetriever as LlamaIndexBase
from llama_index.core.schema import MetadataMode, QueryBundle

from enginelib import InvalidInputError, InvalidQueryError, InvalidVectorError
from enginelib.errors import NoRelevantSourcesError
from enginelib.integrations.langchain import EnginelibRetriever as LangChainRetriever
from enginelib.integrations.llama_index import EnginelibRetriever as LlamaIndexRetriever
from enginelib.memory_store import open_memory
from enginelib.testing import enginelib_store_factory, test_embedder  # noqa: F401
from tests.helpers import DATASETS

NO_GATE = {"answerability_threshold": None}
QUESTIONS = [
    "right to erasure of personal data",
    "consent of the data subject",
    "prohibited artificial intelligence practices",
    "high-risk AI systems conformity assessment",
]


@pytest.fixture(scope="module")
def regulatory():
    """GDPR and AI Act recitals/articles (the first 300 records of the shared corpus);
    shared by the module's tests, which only read it."""
    path = DATASETS / "regulatory" / "corpus.jsonl"
    with path.open(encoding="utf-8") as handle:
        records = [json.loads(line) for line in itertools.islice(handle, 300)]
    for i, record in enumerate(records):
        record["truth_level"] = "L1" if i % 3 else "L3"
        record["tags"] = [record["metadata"]["regulation"].lower()]
    store = open_memory(records=records, embedder=test_embedder())
    yield store
    store.close()


def _expect(store, question, **options):
    response = store.search(question, **options)
    assert response.ok, response.reason
    return response


@pytest.mark.parametrize("question", QUESTIONS)
def test_langchain_returns_the_engines_hits_in_order_with_citations(regulatory, question):
    retriever = LangChainRetriever(store=regulatory, search_kwargs={"k": 5, **NO_GATE})
    assert isinstance(retriever, LangChainBase)
    expected = _expect(regulatory, question, limit=5, **NO_GATE)
    documents = retriever.invoke(question)
    assert all(isinstance(d, Document) for d in documents)
    assert [d.id for d in documents] == [f"{h.document_id}#{h.chunk_index}" for h in expected.hits]
    for document, hit in zip(documents, expected.hits, strict=True):
        meta = document.metadata
        assert document.page_content == hit.content
        assert meta["quote"] == hit.citation.quote
        assert (meta["document_id"], meta["chunk_index"]) == (hit.document_id, hit.chunk_index)
        assert (meta["start_offset"], meta["end_offset"]) == (hit.start_offset, hit.end_offset)
        text = regulatory.get_document(hit.document_id)["content"]
        assert text[meta["start_offset"]:meta["end_offset"]] == document.page_content
        # the quote is found in the document too (it had no offsets: only the chunk's)
        assert text[meta["quote_start"]:meta["quote_end"]] == meta["quote"]
        assert meta["truth_level"] == hit.truth_level
        assert meta["fused_score"] == hit.scores.fused and meta["rank"] == hit.rank
        assert meta["citation_number"] == hit.citation.number
    json.dumps([d.metadata for d in documents])  # plain values a vector store or a trace keeps


@pytest.mark.parametrize("question", QUESTIONS)
def test_llama_index_returns_the_engines_hits_in_order_with_citations(regulatory, question):
    retriever = LlamaIndexRetriever(regulatory, similarity_top_k=5, **NO_GATE)
    assert isinstance(retriever, LlamaIndexBase)
    expected = _expect(regulatory, question, limit=5, **NO_GATE)
    nodes = retriever.retrieve(question)
    assert [n.node.node_id for n in nodes] == [f"{h.document_id}#{h.chunk_index}" for h in expected.hits]
    assert [n.score for n in nodes] == [h.scores.fused for h in expected.hits]
    for node, hit in zip(nodes, expected.hits, strict=True):
        assert node.node.get_content() == hit.content
        meta = node.node.metadata
        assert (meta["document_id"], meta["start_offset"], meta["end_offset"]) == (
            hit.document_id, hit.start_offset, hit.end_offset)
        assert meta["truth_level"] == hit.truth_level and meta["quote"] == hit.citation.quote
        assert (meta["quote_start"], meta["quote_end"]) == (hit.citation.quote_start,
                                                            hit.citation.quote_end)
        llm_view = node.node.get_content(metadata_mode=MetadataMode.LLM)
        assert hit.document_id in llm_view and "fused_score" not in llm_view


def test_options_pass_through(regulatory):
    options = {"strategy": "fulltext", "filters": {"tags": ["gdpr"]}, "truth_levels": ["L3"],
               "limit": 4}
    expected = _expect(regulatory, "personal data", **options)
    assert {h.truth_level for h in expected.hits} == {"L3"}
    lc = LangChainRetriever(store=regulatory, search_kwargs=options).invoke("personal data")
    li = LlamaIndexRetriever(regulatory, **options).retrieve("personal data")
    ids = [f"{h.document_id}#{h.chunk_index}" for h in expected.hits]
    assert [d.id for d in lc] == ids == [n.node.node_id for n in li]
    assert all(d.metadata["strategy"] == "fulltext" for d in lc)


def test_langchain_per_call_overrides(regulatory):
    retriever = LangChainRetriever(store=regulatory, search_kwargs={"k": 5, **NO_GATE})
    assert len(retriever.invoke("personal data", k=2)) == 2
    only_l3 = retriever.invoke("personal data", truth_levels=["L3"])
    assert only_l3 and {d.metadata["truth_level"] for d in only_l3} == {"L3"}
    assert len(asyncio.run(retriever.ainvoke("personal data"))) == 5


def test_langchain_async_calls_take_per_call_overrides(regulatory):
    # ainvoke(q, k=2) and abatch([...], k=2) were a bare TypeError from LangChain's default
    # _aget_relevant_documents, which takes no options; invoke and batch took them
    retriever = LangChainRetriever(store=regulatory, search_kwargs={"k": 5, **NO_GATE})
    expected = [d.id for d in retriever.invoke("personal data", k=2, strategy="fulltext")]
    got = asyncio.run(retriever.ainvoke("personal data", k=2, strategy="fulltext"))
    assert [d.id for d in got] == expected and len(expected) == 2
    batches = asyncio.run(retriever.abatch(["personal data", "consent"], k=1))
    assert [len(documents) for documents in batches] == [1, 1]
    with pytest.raises(InvalidInputError, match="unknown search option"):
        asyncio.run(retriever.ainvoke("personal data", colour="red"))


def test_langchain_search_kwargs_changed_after_construction(regulatory):
    # retriever.search_kwargs["k"] = 2 (LangChain's idiom for its own retrievers) was
    # "unknown search option(s) ['k']": k had been renamed to limit at construction
    retriever = LangChainRetriever(store=regulatory, search_kwargs={"k": 5, **NO_GATE})
    assert retriever.search_kwargs["k"] == 5
    retriever.search_kwargs["k"] = 2
    assert len(retriever.invoke("personal data")) == 2
    assert len(retriever.invoke("personal data", k=3)) == 3
    retriever.search_kwargs["strategy"] = "semantic"  # checked when used, with the same error
    with pytest.raises(InvalidInputError, match="LangChain retriever: strategy 'semantic'"):
        retriever.invoke("personal data")
    retriever.search_kwargs = [("k", 2)]  # type: ignore[assignment]
    with pytest.raises(InvalidInputError, match="search options must be a dict"):
        retriever.invoke("personal data")


def test_llama_index_uses_the_bundles_embedding(regulatory):
    question = "right to erasure of personal data"
    vector = regulatory.embedder.embed([question])[0]
    retriever = LlamaIndexRetriever(regulatory, similarity_top_k=3, strategy="vector", **NO_GATE)
    by_text = retriever.retrieve(question)
    by_vector = retriever.retrieve(QueryBundle("ignored words", embedding=vector.tolist()))
    assert [n.node.node_id for n in by_vector] == [n.node.node_id for n in by_text]
    with pytest.raises(InvalidVectorError, match="shape"):
        retriever.retrieve(QueryBundle(question, embedding=[0.1, 0.2]))


def test_refusal_is_empty_by_default_or_raises(regulatory):
    off_topic = "torque of the brake caliper bolts"
    assert not regulatory.search(off_topic).ok
    assert LangChainRetriever(store=regulatory).invoke(off_topic) == []
    assert LlamaIndexRetriever(regulatory).retrieve(off_topic) == []
    with pytest.raises(NoRelevantSourcesError, match="NO_RELEVANT_SOURCES") as caught:
        LangChainRetriever(store=regulatory, on_refusal="raise").invoke(off_topic)
    assert caught.value.reason
    with pytest.raises(NoRelevantSourcesError):
        LlamaIndexRetriever(regulatory, on_refusal="raise").retrieve(off_topic)


def test_async_retrieval_leaves_the_event_loop_free(enginelib_store_factory):
    # LlamaIndex's default _aretrieve calls _retrieve on the loop: the whole search blocked
    # every other task of an async app (LangChain's ainvoke runs it in a thread)
    store = enginelib_store_factory(records=[{"id": "a", "text": "Brake pads wear out."}])

    def slow_reranker(query, passages):
        time.sleep(0.4)
        return [0.0] * len(passages)

    options = {"reranker": slow_reranker, **NO_GATE}
    llama = LlamaIndexRetriever(store, **options)
    chain = LangChainRetriever(store=store, search_kwargs=options)

    async def ticks_during(search):
        ticks = 0

        async def tick():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.02)
                ticks += 1

        ticker = asyncio.create_task(tick())
        results = await search
        ticker.cancel()
        assert len(results) == 1
        return ticks

    assert asyncio.run(ticks_during(chain.ainvoke("brake pads"))) >= 5
    assert asyncio.run(ticks_during(llama.aretrieve("brake pads"))) >= 5


def test_a_raised_refusal_says_whether_anything_matched(regulatory):
    # the error held only the reason's text: a caller could not tell "the filters left no
    # chunk" from "the gate found the hits too weak" without parsing the message
    off_topic, nothing = "torque of the brake caliper bolts", {"filters": {"tags": ["none"]}}
    for retrieve in (
        lambda **o: LangChainRetriever(store=regulatory, on_refusal="raise",
                                       search_kwargs=o).invoke(off_topic),
        lambda **o: LlamaIndexRetriever(regulatory, on_refusal="raise", **o).retrieve(off_topic),
    ):
        with pytest.raises(NoRelevantSourcesError) as weak:
            retrieve()
        with pytest.raises(NoRelevantSourcesError) as unmatched:
            retrieve(**nothing)
        assert weak.value.reason_code == "WEAK_EVIDENCE"
        assert unmatched.value.reason_code == "NO_MATCH"
        assert weak.value.response.gate.evidence.missing_words
        assert unmatched.value.response.total == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"query_vector": [0.1]}, "does not take query_vector"),
        ({"k": 3, "limit": 3}, "not both"),
        ({"colour": "red"}, "unknown search option"),
        ({"strategy": "semantic"}, "strategy 'semantic' is not one of"),
        ({"truth_levels": ["L9"]}, "unknown truth level"),
    ],
)
def test_langchain_refuses_options_it_does_not_support(enginelib_store_factory, options, message):
    store = enginelib_store_factory()
    with pytest.raises(InvalidInputError, match=message):
        LangChainRetriever(store=store, search_kwargs=options)


def test_bad_options_fail_at_construction_or_call(enginelib_store_factory):
    store = enginelib_store_factory()
    with pytest.raises(InvalidInputError, match="on_refusal='ignore' is not one of empty, raise"):
        LangChainRetriever(store=store, on_refusal="ignore")
    with pytest.raises(InvalidInputError, match="unknown search option"):
        LangChainRetriever(store=store).invoke("brakes", colour="red")
    with pytest.raises(InvalidInputError, match="LlamaIndex retriever: unknown search option"):
        LlamaIndexRetriever(store, similarity_cutoff=0.5)
    with pytest.raises(InvalidInputError, match="not both"):
        LlamaIndexRetriever(store, similarity_top_k=3, limit=3)
    with pytest.raises(InvalidInputError, match="on_refusal"):
        LlamaIndexRetriever(store, on_refusal="ignore")


def test_langchain_refuses_a_limit_given_twice_per_call_or_options_not_a_dict(
        enginelib_store_factory):
    # invoke(q, k=2, limit=3) searched with k=2 and dropped limit=3 unseen (construction
    # refuses both); search_kwargs=[...] was a bare TypeError from dict()
    store = enginelib_store_factory(records=[{"id": "a", "text": "Brake pads wear out."}])
    retriever = LangChainRetriever(store=store, search_kwargs=NO_GATE)
    with pytest.raises(InvalidInputError, match="either k= or limit="):
        retriever.invoke("brake pads", k=2, limit=3)
    with pytest.raises(InvalidInputError, match="search options must be a dict"):
        LangChainRetriever(store=store, search_kwargs=[("k", 5)])
    assert len(retriever.invoke("brake pads", limit=1)) == 1


def test_llama_index_takes_simple_metadata_filters(regulatory):
    from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

    filters = MetadataFilters(filters=[
        MetadataFilter(key="tags", value="gdpr", operator=FilterOperator.EQ),
        MetadataFilter(key="metadata.type", value=["recital"], operator=FilterOperator.IN),
    ])
    nodes = LlamaIndexRetriever(regulatory, filters=filters, **NO_GATE).retrieve("personal data")
    expected = _expect(regulatory, "personal data",
                       filters={"tags": ["gdpr"], "metadata.type": ["recital"]}, **NO_GATE)
    assert [n.node.node_id for n in nodes] == [f"{h.document_id}#{h.chunk_index}" for h in expected.hits]
    assert nodes and all(regulatory.get_document(n.node.metadata["document_id"])["custom"]["type"] == "recital"
               for n in nodes)


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ([("tags", "gdpr", "!=")], "operator '!=' on 'tags' has no enginelib filter"),
        ([("domain", "a", "=="), ("domain", "b", "==")], "filtered twice"),
        # the second '>' replaced the first, stricter one unseen: the filter widened
        ([("created_at", "2024-06-01", ">"), ("created_at", "2024-01-01", ">")],
         "'created_at' has two '>' bounds"),
        # a bare TypeError ('str' object does not support item assignment)
        ([("created_at", "2024-06-01", "=="), ("created_at", "2024-01-01", ">")],
         "'created_at' is filtered twice"),
        # == a list searched for any of its values: an equality widened to 'in'
        ([("domain", ["a", "b"], "==")], "'==' on 'domain' compares with one value"),
        ([("tags", ["a", "b"], "contains")], "'contains' on 'tags' compares with one value"),
    ],
)
def test_llama_index_refuses_filters_it_cannot_say(enginelib_store_factory, filters, message):
    from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

    built = MetadataFilters(filters=[
        MetadataFilter(key=k, value=v, operator=FilterOperator(op)) for k, v, op in filters
    ])
    with pytest.raises(InvalidInputError, match=message):
        LlamaIndexRetriever(enginelib_store_factory(), filters=built)
    with pytest.raises(InvalidInputError, match="enginelib filter dict"):
        LlamaIndexRetriever(enginelib_store_factory(), filters=["tags"])


def test_a_store_path_is_refused_with_how_to_open_it(tmp_path, enginelib_store_factory):
    # LlamaIndex took a path and failed at the first retrieve ("'str' object has no
    # attribute 'search'"); LangChain raised pydantic's ValidationError, no enginelib error
    path = str(tmp_path / "mystore")
    with pytest.raises(InvalidInputError, match=r"got str; open it first: enginelib\.open\("):
        LlamaIndexRetriever(path)
    with pytest.raises(InvalidInputError, match=r"got str; open it first: enginelib\.open\("):
        LangChainRetriever(store=path)
    with pytest.raises(InvalidInputError, match="store= takes an open enginelib Store"):
        LangChainRetriever(store=None)
    # swapped in after construction (model_copy skips __init__): refused when used
    store = enginelib_store_factory(records=[{"id": "a", "text": "Brake pads wear out."}])
    swapped = LangChainRetriever(store=store).model_copy(update={"store": path})
    with pytest.raises(InvalidInputError, match="store= takes an open enginelib Store"):
        swapped.invoke("brake pads")
    llama = LlamaIndexRetriever(store)
    llama.store = path
    with pytest.raises(InvalidInputError, match="store= takes an open enginelib Store"):
        llama.retrieve("brake pads")


def test_a_query_must_be_one_string(enginelib_store_factory):
    # invoke(["brake pads", "consent"]) (meant as batch) searched the list as one query and
    # its rewrites, fused into one ranking: one list of documents back, no error
    store = enginelib_store_factory(records=[{"id": "a", "text": "Brake pads wear out."},
                                             {"id": "b", "text": "Consent of the data subject."}])
    chain = LangChainRetriever(store=store, search_kwargs=NO_GATE)
    llama = LlamaIndexRetriever(store, **NO_GATE)
    with pytest.raises(InvalidQueryError, match=r"one query string, got list: .*batch\(\["):
        chain.invoke(["brake pads", "consent"])
    with pytest.raises(InvalidQueryError, match="one query string, got tuple"):
        asyncio.run(chain.ainvoke(("brake pads", "consent")))
    with pytest.raises(InvalidQueryError, match="LlamaIndex retriever takes one query string, got list"):
        llama.retrieve(QueryBundle(["brake pads", "consent"]))
    with pytest.raises(InvalidQueryError, match="LangChain retriever takes one query string, got NoneType"):
        chain.invoke(None)
    assert [len(d) for d in chain.batch(["brake pads", "consent"])] == [2, 2]


def test_on_refusal_changed_after_construction_is_checked_when_used(regulatory):
    # checked only by the constructors: retriever.on_refusal = "rasie" (or model_copy's
    # update) read as "empty", and a caller counting on the exception got [] without a word
    off_topic = "torque of the brake caliper bolts"
    chain = LangChainRetriever(store=regulatory)
    chain.on_refusal = "rasie"
    with pytest.raises(InvalidInputError, match="on_refusal='rasie' is not one of empty, raise"):
        chain.invoke(off_topic)
    copied = LangChainRetriever(store=regulatory).model_copy(update={"on_refusal": "Raise"})
    with pytest.raises(InvalidInputError, match="on_refusal='Raise' is not one of"):
        copied.invoke(off_topic)
    llama = LlamaIndexRetriever(regulatory)
    llama.on_refusal = "rasie"
    with pytest.raises(InvalidInputError, match="on_refusal='rasie' is not one of"):
        llama.retrieve(off_topic)
    llama.on_refusal = "raise"
    with pytest.raises(NoRelevantSourcesError):
        llama.retrieve(off_topic)


def test_llama_index_searches_by_a_bundles_custom_embedding_strs(regulatory):
    # HyDE's QueryBundle(query_str=q, custom_embedding_strs=[hypothetical passage, q]) was
    # searched by q's own vector: the transform changed nothing, without a word. LlamaIndex's
    # retrievers embed those texts as queries and search by their mean.
    from llama_index.core.indices.query.query_transform import HyDEQueryTransform
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import TransformRetriever

    def ids(nodes):
        return [n.node.node_id for n in nodes]

    question = "right to erasure of personal data"
    texts = ["Providers of high-risk AI systems shall carry out a conformity assessment.",
             question]
    retriever = LlamaIndexRetriever(regulatory, similarity_top_k=5, strategy="vector", **NO_GATE)
    mean = regulatory.query_embeddings.embed(texts).mean(axis=0)
    by_mean = ids(retriever.retrieve(QueryBundle(question, embedding=mean.tolist())))
    assert by_mean != ids(retriever.retrieve(question))
    assert ids(retriever.retrieve(QueryBundle(question, custom_embedding_strs=texts))) == by_mean
    hybrid = LlamaIndexRetriever(regulatory, similarity_top_k=5, **NO_GATE)
    assert ids(hybrid.retrieve(QueryBundle(question, custom_embedding_strs=texts))) == ids(
        hybrid.retrieve(QueryBundle(question, embedding=mean.tolist())))
    # an embedding given wins, as in LlamaIndex
    given = QueryBundle(question, custom_embedding_strs=texts,
                        embedding=regulatory.embedder.embed([question])[0].tolist())
    assert ids(retriever.retrieve(given)) == ids(retriever.retrieve(question))
    # through LlamaIndex's own HyDE transform (MockLLM answers the prompt back)
    hyde = HyDEQueryTransform(llm=MockLLM(max_tokens=4), include_original=True)
    bundle = hyde.run(question)
    expected = regulatory.query_embeddings.embed(bundle.embedding_strs).mean(axis=0)
    assert ids(TransformRetriever(retriever, hyde).retrieve(question)) == ids(
        retriever.retrieve(QueryBundle(question, embedding=expected.tolist())))
    with pytest.raises(InvalidQueryError, match="custom_embedding_strs must be a list of"):
        retriever.retrieve(QueryBundle(question, custom_embedding_strs=[question, 7]))


def test_an_empty_query_says_what_the_retriever_can_take(regulatory):
    # the engine's advice, "give query_vector= with strategy='vector'", named an option both
    # retrievers refuse; an image-only QueryBundle was told to "type some words" about
    # nothing it had sent
    chain = LangChainRetriever(store=regulatory, search_kwargs=NO_GATE)
    for empty in ("", "  \n"):
        with pytest.raises(InvalidQueryError, match="LangChain retriever was given an empty "
                                                    "query: ask with some words") as caught:
            chain.invoke(empty)
        assert "query_vector" not in str(caught.value)
    llama = LlamaIndexRetriever(regulatory, **NO_GATE)
    with pytest.raises(InvalidQueryError, match="strategy='vector'") as caught:
        llama.retrieve("")
    assert "query_vector" not in str(caught.value)
    vector = regulatory.embedder.embed(["personal data"])[0].tolist()
    with pytest.raises(InvalidQueryError, match="embedding alone with strategy='vector'") as caught:
        llama.retrieve(QueryBundle("", embedding=vector))
    assert "query_vector" not in str(caught.value)
    with pytest.raises(InvalidQueryError, match=r"searches text.*only an image \('photo\.png'\)"):
        llama.retrieve(QueryBundle("", image_path="photo.png"))
    by_vector = LlamaIndexRetriever(regulatory, strategy="vector", **NO_GATE)
    assert by_vector.retrieve(QueryBundle("", embedding=vector))
    assert by_vector.retrieve(QueryBundle("", image_path="photo.png", embedding=vector))


def test_llama_index_scores_keep_the_engines_order(regulatory):
    # a question naming an article ranks that article's chunks first (search/references.py),
    # above chunks with a higher fused score, and a reranker or MMR reorder too; each node's
    # score was still its fused score, so LlamaIndex's fusion retriever, which sorts each
    # retriever's nodes by score, put the named article back below the others
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever

    def ids(nodes):
        return [n.node.node_id for n in nodes]

    def reranker(query, passages):
        return [float(len(p) % 17) for p in passages]

    named = "GDPR Article 6 lawfulness of processing"
    fused = [h.scores.fused for h in _expect(regulatory, named, limit=6).hits]
    assert sorted(fused, reverse=True) != fused  # the engine's order is not the fused order
    for question, options in ((named, {}), (QUESTIONS[1], {"reranker": reranker, **NO_GATE}),
                              (QUESTIONS[0], {"mmr": True, **NO_GATE})):
        retriever = LlamaIndexRetriever(regulatory, similarity_top_k=6, **options)
        nodes = retriever.retrieve(question)
        scores = [n.score for n in nodes]
        assert len(nodes) == 6 and all(a > b for a, b in zip(scores, scores[1:], strict=False))
        expected = _expect(regulatory, question, limit=6, **options).hits
        assert [n.node.metadata["fused_score"] for n in nodes] == [h.scores.fused for h in expected]
        fusion = QueryFusionRetriever([retriever], similarity_top_k=6, num_queries=1,
                                      mode="reciprocal_rerank", use_async=False, llm=MockLLM())
        assert ids(fusion.retrieve(question)) == ids(nodes) == [
            f"{h.document_id}#{h.chunk_index}" for h in expected]
    # where the engine's order is the fused order, the score is the fused score itself
    plain = LlamaIndexRetriever(regulatory, similarity_top_k=6, **NO_GATE).retrieve(QUESTIONS[0])
    assert [n.score for n in plain] == [n.node.metadata["fused_score"] for n in plain]


def test_langchain_search_option_names_must_be_strings(enginelib_store_factory):
    # search_kwargs={1: 2} (a config read from YAML, a variable for a key) was a bare
    # TypeError, "keywords must be strings", from the ** call checking the options
    store = enginelib_store_factory(records=[{"id": "a", "text": "Brake pads wear out."}])
    with pytest.raises(InvalidInputError, match=r"search option names are strings, got 1 \(int\)"):
        LangChainRetriever(store=store, search_kwargs={"k": 2, 1: 2})
    retriever = LangChainRetriever(store=store, search_kwargs=NO_GATE)
    retriever.search_kwargs[None] = 2  # type: ignore[index]
    with pytest.raises(InvalidInputError, match=r"got None \(NoneType\)"):
        retriever.invoke("brake pads")


def test_a_raised_refusal_survives_pickling_and_copying(regulatory):
    # rebuilt from its message alone, NoRelevantSourcesError could not be unpickled or
    # copied ("__init__() missing 1 required positional argument: 'reason'"): a refusal
    # raised in a worker of a ProcessPoolExecutor broke the pool (BrokenProcessPool) instead
    # of reaching the caller
    import copy
    import pickle

    off_topic = "torque of the brake caliper bolts"
    for retrieve in (
        lambda: LangChainRetriever(store=regulatory, on_refusal="raise").invoke(off_topic),
        lambda: LlamaIndexRetriever(regulatory, on_refusal="raise").retrieve(off_topic),
    ):
        with pytest.raises(NoRelevantSourcesError) as caught:
            retrieve()
        raised = caught.value
        for again in (pickle.loads(pickle.dumps(raised)), copy.copy(raised)):
            assert type(again) is NoRelevantSourcesError and str(again) == str(raised)
            assert (again.query, again.reason, again.reason_code) == (
                raised.query, raised.reason, raised.reason_code)
            assert again.response.status == raised.response.status == "NO_RELEVANT_SOURCES"


def test_langchain_refuses_arguments_that_are_not_its_own(enginelib_store_factory):
    # pydantic ignores a keyword that is not a field: EnginelibRetriever(store=s, k=1,
    # filters={"tenant_id": "a"}) searched every tenant with the default limit, no word said
    store = enginelib_store_factory(records=[
        {"id": f"d{i}", "text": "Brake pads wear out.", "tenant_id": "ab"[i % 2]}
        for i in range(4)])
    with pytest.raises(InvalidInputError, match=r"unknown argument\(s\) \['filters', 'k'\]: "
                                                r"search options go in search_kwargs"):
        LangChainRetriever(store=store, k=1, filters={"tenant_id": "a"}, search_kwargs=NO_GATE)
    with pytest.raises(InvalidInputError, match="did you mean 'search_kwargs'"):
        LangChainRetriever(store=store, searchkwargs={"filters": {"tenant_id": "a"}})
    with pytest.raises(InvalidInputError, match=r"search_kwargs=\{'mmr': True\}"):
        LangChainRetriever(store=store, search_type="mmr")
    # LangChain's own fields are still taken
    retriever = LangChainRetriever(store=store, name="docs", tags=["t"], metadata={"m": 1},
                                   search_kwargs={"filters": {"tenant_id": "a"}, **NO_GATE})
    assert {d.metadata["document_id"] for d in retriever.invoke("brake pads")} == {"d0", "d2"}


@pytest.mark.parametrize("query", [None, b"brake pads", 7, ["brake pads", "consent"],
                                   {"query_str": "brake pads"}])
def test_llama_index_refuses_a_query_that_is_neither_a_string_nor_a_bundle(
        enginelib_store_factory, query):
    # LlamaIndex's retrieve() read the query before _retrieve did: pydantic's ValidationError
    # from its RetrievalStartEvent (None, 7, a list) or an AttributeError (bytes, a dict)
    store = enginelib_store_factory(records=[{"id": "a", "text": "Brake pads wear out."}])
    llama = LlamaIndexRetriever(store, **NO_GATE)
    with pytest.raises(InvalidQueryError, match="takes one query string or a QueryBundle, got"):
        llama.retrieve(query)
    with pytest.raises(InvalidQueryError, match="takes one query string or a QueryBundle, got"):
        asyncio.run(llama.aretrieve(query))
    assert len(llama.retrieve("brake pads")) == len(asyncio.run(llama.aretrieve("brake pads"))) == 1

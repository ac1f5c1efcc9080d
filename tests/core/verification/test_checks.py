"""Pure verification logic: routing table, visible text, locating answers, key terms, verdict rules, parsing."""

import pytest

from components.core.text.analysis import Analyzer
from components.core.text.splitting import Span
from components.core.verification.judgements import judge_messages, lexical_judgement, nli_judgement, nli_label_index, parse_judge_reply
from components.core.text.key_terms import content_terms, key_terms
from components.core.verification.checks import (
    PARTIAL,
    SUPPORTED,
    UNSUPPORTED,
    Piece,
    locate_extractive,
    locate_generative,
    route_decision,
    visible_texts,
)

# Offsets (checked in test_source_offsets):
#   [0,16) heading | [18,49) [50,77) [78,127) paragraph 1 | [129,157) [158,210) paragraph 2 |
#   [212,255) [256,277) paragraph 3;  "30 days" = [107,114), "14 days" = [202,209)
SOURCE = (
    "Acme Pro Billing\n\n"
    "Acme Pro is billed every month. Invoices are sent by email. Refunds are available within 30 days of purchase.\n\n"
    "Acme Basic is billed yearly. Refunds for Acme Basic are available within 14 days.\n\n"
    "Error ERR-4012 means the card was declined. Retry after 24 hours."
)
AN = Analyzer()


def piece(start, end, doc_id="billing", title=""):
    return Piece(doc_id, start, SOURCE[start:end], title)


def test_source_offsets():
    assert SOURCE[18:49] == "Acme Pro is billed every month."
    assert SOURCE[78:127] == "Refunds are available within 30 days of purchase."
    assert SOURCE[107:114] == "30 days" and SOURCE[202:209] == "14 days"
    assert SOURCE[212:255] == "Error ERR-4012 means the card was declined."


# ------------------------------------------------------------------------------------------ routing


@pytest.mark.parametrize(
    ("level", "verdict", "max_level", "expected"),
    [
        ("window", SUPPORTED, "passage", ("answers", None)),
        ("window", PARTIAL, "passage", ("widen", "paragraph")),
        ("window", UNSUPPORTED, "passage", ("widen", "passage")),
        ("chunk", PARTIAL, "passage", ("widen", "paragraph")),
        ("paragraph", PARTIAL, "passage", ("widen", "passage")),
        ("paragraph", UNSUPPORTED, "passage", ("widen", "passage")),
        ("paragraph", SUPPORTED, "passage", ("answers", None)),
        ("passage", PARTIAL, "passage", ("not_found", None)),
        ("passage", UNSUPPORTED, "passage", ("not_found", None)),
        ("passage", SUPPORTED, "passage", ("answers", None)),
        # capped at paragraph: UNSUPPORTED at window only reaches paragraph, paragraph cannot widen
        ("window", UNSUPPORTED, "paragraph", ("widen", "paragraph")),
        ("paragraph", PARTIAL, "paragraph", ("not_found", None)),
    ],
)
def test_route_decision(level, verdict, max_level, expected):
    assert route_decision(level, verdict, max_level) == expected


def test_route_decision_rejects_unknown_values():
    with pytest.raises(ValueError, match="unknown level 'page'"):
        route_decision("page", PARTIAL)
    with pytest.raises(ValueError, match="max_level"):
        route_decision("window", PARTIAL, "window")
    with pytest.raises(ValueError, match="unknown verdict"):
        route_decision("window", "MAYBE")


# ------------------------------------------------------------------------------------- visible text


def test_visible_texts_merges_overlapping_windows_and_keeps_gaps():
    vis = visible_texts([piece(50, 127), piece(18, 77), piece(212, 255), piece(0, 16, "other", "Other")])
    assert [(v.doc_id, v.start, v.end) for v in vis] == [("billing", 18, 127), ("billing", 212, 255), ("other", 0, 16)]
    assert vis[0].text == SOURCE[18:127]
    assert vis[0].units == (Span(18, 49), Span(50, 77), Span(78, 127))
    assert vis[2].title == "Other"


# ----------------------------------------------------------------------------------------- locating


def test_locate_extractive_by_offsets_gives_sentence_and_lead_in():
    vis = visible_texts([piece(18, 127)])
    ev = locate_extractive(vis, "30 days", doc_id="billing", start=107, end=114, lead_in_units=1)
    assert ev.answer == (107, 114)
    assert ev.evidence_span == (78, 127)
    assert ev.lead_in == (Span(50, 77),)
    assert ev.context_span == (50, 127) and ev.context_text == SOURCE[50:127]


def test_lead_in_stays_in_the_paragraph_but_takes_a_heading_above_it():
    vis = visible_texts([piece(0, 277)])

    def lead(text, n):
        start = SOURCE.index(text)
        ev = locate_extractive(vis, text, doc_id="billing", start=start, end=start + len(text), lead_in_units=n)
        return ev.lead_in

    assert lead("14 days", 2) == (Span(129, 157),)  # not into paragraph 1 (about Acme Pro)
    assert lead("the card was declined", 2) == ()
    assert lead("30 days", 2) == (Span(18, 49), Span(50, 77))
    assert lead("30 days", 3) == (Span(0, 16), Span(18, 49), Span(50, 77))  # + heading "Acme Pro Billing"
    assert lead("30 days", 0) == ()
    assert lead("billed every month", 1) == (Span(0, 16),)


def test_locate_extractive_searches_when_offsets_do_not_match_the_text():
    vis = visible_texts([piece(129, 210), piece(18, 127, "other-doc")])
    # offsets point at "Acme Basic", the text says "14 days": the search finds it in the same document
    ev = locate_extractive(vis, "14 DAYS", doc_id="billing", start=129, end=139, lead_in_units=2)
    assert ev.answer == (202, 209) and ev.doc_id == "billing"
    # an unknown document: searched in the read documents in order
    ev = locate_extractive(vis, "30 days", doc_id="nowhere", start=0, end=7)
    assert ev.doc_id == "other-doc" and ev.answer == (107, 114)
    assert locate_extractive(vis, "45 days", doc_id="billing", start=0, end=7) is None


def test_locate_generative_verbatim_inside_cited_span_only():
    vis = visible_texts([piece(18, 210)])
    # "available within" occurs in both paragraphs; only the cited paragraph 2 counts
    ev = locate_generative(vis, "available within", AN, cited=[("billing", 129, 210)], lead_in_units=1)
    assert ev.answer == (185, 201) and SOURCE[185:201] == "available within"
    assert ev.evidence_span == (158, 210) and ev.lead_in == (Span(129, 157),)


def test_locate_generative_by_term_coverage_picks_shortest_run():
    vis = visible_texts([piece(18, 127)])
    ev = locate_generative(vis, "Refunds: within 30 days of buying it", AN, cited=[("billing", 18, 127)])
    # answer terms: refund, within, 30, day, buy -> 4 of 5 in sentence [78,127)
    assert ev.answer is None and ev.units == (Span(78, 127),)
    assert ev.coverage == pytest.approx(4 / 5)
    assert locate_generative(vis, "Zebras", AN) is None


# ---------------------------------------------------------------------------------------- key terms


@pytest.mark.parametrize(
    ("question", "entities", "identifiers"),
    [
        ("How long are refunds available for Acme Pro?", ("Acme Pro",), ()),
        ("Does Acme Pro support SSO?", ("Acme Pro", "SSO"), ()),
        ("Can I cancel the Standard plan?", ("Standard",), ()),
        ("What does ERR-4012 mean in v2.1?", (), ("err-4012", "v2.1")),
        ("Refunds take how long?", (), ()),  # sentence-initial single capital: not a name
        ("Acme Pro's refund period, in 2024?", ("Acme Pro",), ("2024",)),
        ("Is it Acme, Basic or Pro?", ("Acme", "Basic", "Pro"), ()),
        ("How long is the Long Island ferry, and can I take it?", ("Long Island",), ()),
        ("What does The Who sing? What Acme Pro plans exist?", ("The Who", "Acme Pro"), ()),
        ('Who wrote "On the Computational Complexity of Science"?', ("Computational Complexity", "Science"), ()),
    ],
)
def test_key_terms(question, entities, identifiers):
    terms = key_terms(question)
    assert terms.entities == entities
    assert terms.identifiers == identifiers


def test_content_terms_drop_question_words_and_keep_identifiers_whole():
    assert content_terms("What does ERR-4012 mean for Acme Pro's policies?", AN) == {"err-4012", "acm", "pro", "polici"}


# ------------------------------------------------------------------------------------ lexical rules

Q_PRO = "How long are refunds available for Acme Pro?"


def judge(question, vis, text, start, end, **kw):
    ev = locate_extractive(vis, text, doc_id="billing", start=start, end=end, lead_in_units=kw.pop("lead_in", 2))
    return lexical_judgement(question, ev, vis, AN, **kw)


def test_supported_with_key_term_in_lead_in():
    vis = visible_texts([piece(18, 127)])
    j = judge(Q_PRO, vis, "30 days", 107, 114)
    assert j.verdict == SUPPORTED
    assert j.reason == "supported: answer in the evidence with 'Acme Pro'"
    assert j.used_lead_in == (Span(18, 49),)  # "Invoices are sent by email." supplied nothing


def test_partial_when_key_term_only_elsewhere():
    vis = visible_texts([piece(50, 127), piece(0, 16, "faq")])
    j = judge(Q_PRO, vis, "30 days", 107, 114)
    assert j.verdict == PARTIAL
    assert j.reason == "key_terms_elsewhere: 'Acme Pro' only elsewhere in the read documents"


def test_title_counts_as_lead_in():
    vis = visible_texts([piece(50, 127, title="Acme Pro billing")])
    assert judge(Q_PRO, vis, "30 days", 107, 114).verdict == SUPPORTED
    assert judge(Q_PRO, vis, "30 days", 107, 114, use_title=False).verdict == UNSUPPORTED


def test_unsupported_when_key_terms_nowhere_or_answer_absent():
    vis = visible_texts([piece(129, 210)])
    j = judge(Q_PRO, vis, "14 days", 202, 209)  # "pro" is nowhere in the Acme Basic paragraph
    assert (j.verdict, j.reason) == (UNSUPPORTED, "key_terms_missing: 'Acme Pro' not in the read documents")
    j = judge(Q_PRO, vis, "45 days", 202, 209)
    assert (j.verdict, j.reason) == (UNSUPPORTED, "answer_not_in_documents")


def test_half_of_key_terms_missing_is_still_partial():
    vis = visible_texts([piece(212, 277)])
    j = judge("What does ERR-4012 mean for Acme Pro?", vis, "the card was declined", 233, 254)
    # ERR-4012 in the sentence, 'Acme Pro' nowhere: 1 of 2 missing is not "mostly" (> 0.5)
    assert j.verdict == PARTIAL
    assert j.reason == "key_terms_elsewhere: 'Acme Pro' not found"
    j = lexical_judgement(
        "What does ERR-4012 mean for Acme Pro?",
        locate_extractive(vis, "the card was declined", doc_id="billing", start=233, end=254),
        vis, AN, max_missing_key_terms=0.4,
    )
    assert j.verdict == UNSUPPORTED


def test_low_term_coverage_is_partial():
    vis = visible_texts([piece(256, 277)])
    # content terms: wait, retry, declin, card, payment -> only "retri" near the answer
    j = judge("How long should I wait to retry a declined card payment?", vis, "24 hours", 268, 276)
    assert (j.verdict, j.reason) == (PARTIAL, "low_term_coverage: 1/5 question terms near the answer")
    j = judge("How long should I wait to retry a declined card payment?", vis, "24 hours", 268, 276,
              min_term_coverage=0.2)
    assert j.verdict == SUPPORTED


def test_generative_coverage_threshold():
    vis = visible_texts([piece(18, 127)])
    ev = locate_generative(vis, "Refunds: within 30 days of buying it", AN)
    assert lexical_judgement(Q_PRO, ev, vis, AN).verdict == SUPPORTED  # 0.8 >= 0.8
    j = lexical_judgement(Q_PRO, ev, vis, AN, min_answer_coverage=0.9)
    assert j.verdict == UNSUPPORTED
    assert j.reason == "answer_not_in_documents: only 0.80 of its terms in one cited passage"


# ------------------------------------------------------------------------------------- NLI and LLM


def test_nli_label_index_follows_id2label():
    assert nli_label_index({0: "contradiction", 1: "entailment", 2: "neutral"}) == {
        "contradiction": 0, "entailment": 1, "neutral": 2,
    }
    assert nli_label_index({"0": "ENTAILMENT", "1": "NEUTRAL", "2": "CONTRADICTION"}) == {
        "entailment": 0, "neutral": 1, "contradiction": 2,
    }
    with pytest.raises(ValueError, match="no entailment, neutral, contradiction"):
        nli_label_index({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})


@pytest.mark.parametrize(
    ("probs", "verdict"),
    [
        ((0.70, 0.20, 0.10), SUPPORTED),
        ((0.50, 0.00, 0.50), SUPPORTED),  # entailment is checked first, thresholds are inclusive
        ((0.30, 0.10, 0.60), UNSUPPORTED),
        ((0.40, 0.45, 0.15), PARTIAL),
    ],
)
def test_nli_judgement(probs, verdict):
    j = nli_judgement(dict(zip(("entailment", "neutral", "contradiction"), probs)), 0.5, 0.5)
    assert j.verdict == verdict
    assert j.reason == f"nli: entailment {probs[0]:.2f}, neutral {probs[1]:.2f}, contradiction {probs[2]:.2f}"


@pytest.mark.parametrize(
    ("reply", "verdict", "reason"),
    [
        ("SUPPORTED - the passage states 30 days.", SUPPORTED, "llm: the passage states 30 days."),
        ("UNSUPPORTED: wrong product", UNSUPPORTED, "llm: wrong product"),
        ("**PARTIAL**\nThe product is not named.", PARTIAL, "llm: The product is not named."),
        ("The answer is not supported; it names Basic.", UNSUPPORTED, "llm: it names Basic."),
        ("Verdict: partially supported, says 30 days", PARTIAL, "llm: supported, says 30 days"),
        ("it is not fully supported. PARTIAL", PARTIAL, "llm: no reason given"),  # upper-case word wins
        ("Supported", SUPPORTED, "llm: no reason given"),
        ("I cannot tell.", UNSUPPORTED, "unparseable_judge_reply: 'I cannot tell.'"),
        ("", UNSUPPORTED, "unparseable_judge_reply: ''"),
    ],
)
def test_parse_judge_reply(reply, verdict, reason):
    j = parse_judge_reply(reply)
    assert (j.verdict, j.reason) == (verdict, reason)


def test_judge_messages():
    msgs = judge_messages("Q?", "A", "Some evidence.")
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert msgs[1]["content"] == (
        "Evidence:\nSome evidence.\n\nQuestion: Q?\nAnswer: A\n\n"
        "Return SUPPORTED, PARTIAL or UNSUPPORTED, then one short reason."
    )
    assert "Return SUPPORTED, PARTIAL or UNSUPPORTED, then one short reason." in msgs[0]["content"]


def test_quantity_question_needs_a_number_in_the_answer():
    from components.core.text.analysis import asks_for_quantity, has_quantity

    assert asks_for_quantity("How far away can the Motion Sensor detect movement?")
    assert asks_for_quantity("What is the price of the Beacon plan?")
    assert not asks_for_quantity("What causes ERR-7730?")
    assert asks_for_quantity("What exit status does the bridge use?") and asks_for_quantity("Which HTTP status code?")
    assert not asks_for_quantity("What status does the refund policy have?")
    assert not asks_for_quantity("What does error code ERR-3318 mean?")  # asks for a meaning
    assert has_quantity("up to 7 metres") and has_quantity("twice a day") and has_quantity("$149.90")
    assert not has_quantity("# Glimmerline Motion Sensor (GLN-MOT-01)")
    text = "Acme Pro plans. Refunds are handled by the billing team."
    vis = visible_texts([Piece("d1", 0, text, "Billing")])
    ev = locate_extractive(vis, "Refunds are handled by the billing team.", doc_id="d1", start=16, end=len(text),
                           lead_in_units=2)
    j = lexical_judgement("How long do refunds take for Acme Pro?", ev, vis, Analyzer())
    assert (j.verdict, j.reason.split(":")[0]) == ("PARTIAL", "answer_type_missing")


def test_a_when_question_needs_a_time_in_the_answer():
    from components.core.text.analysis import asks_for_time, has_time

    assert asks_for_time("When was the policy introduced?") and asks_for_time("In what year did it start?")
    assert not asks_for_time("What is time complexity?")
    assert has_time("in 1876") and has_time("every spring") and not has_time("the hub restarts")
    text = "Acme Pro plans. Refunds were introduced by the billing team."
    vis = visible_texts([Piece("d1", 0, text, "Billing")])
    ev = locate_extractive(vis, "Refunds were introduced by the billing team.", doc_id="d1", start=16, end=len(text),
                           lead_in_units=2)
    j = lexical_judgement("When were refunds introduced for Acme Pro?", ev, vis, Analyzer())
    assert (j.verdict, j.reason.split(":")[0]) == ("PARTIAL", "answer_type_missing")


# --------------------------------------------------------------- questions that say the opposite


def _sentence_judgement(question, text):
    vis = visible_texts([Piece("d1", 0, text, "")])
    ev = locate_extractive(vis, text, doc_id="d1", start=0, end=len(text), lead_in_units=2)
    return lexical_judgement(question, ev, vis, Analyzer())


def test_negated_question_against_a_positive_statement_is_unsupported():
    text = "Complexity theory studies how algorithms scale with an increase in the input size."
    j = _sentence_judgement("What does complexity theory not study about algorithms?", text)
    assert (j.verdict, j.reason) == (UNSUPPORTED, "negation_mismatch: the question is negated, the evidence is not")
    # the same question, asked of a sentence that is itself negated, passes this rule
    negated = "Complexity theory does not study how algorithms are written."
    assert _sentence_judgement("What does complexity theory not study about algorithms?", negated).verdict == SUPPORTED


def test_an_opposite_word_makes_the_question_unsupported():
    text = "Complexity theory studies how algorithms scale with an increase in the input size."
    j = _sentence_judgement("How do algorithms scale with a decrease in the input size in complexity theory?", text)
    assert j.verdict == UNSUPPORTED
    assert j.reason == "opposite_terms: the question says 'decrease' where the source says 'increase'"
    j = _sentence_judgement("How do algorithms scale with an increase in the input size in complexity theory?", text)
    assert j.verdict == SUPPORTED


@pytest.mark.parametrize(
    "question, evidence, expected",
    [
        ("the set of all unconnected graphs", "whether the given graph is connected", [("unconnected", "connected")]),
        ("Which problems are solvable?", "these problems are unsolvable", [("solvable", "unsolvable")]),
        ("What is impossible for RP?", "it is possible that RP equals P", [("impossible", "possible")]),
        ("the least known resources", "the most well known resources", [("least", "most")]),
        # the question's own word is in the evidence too: no contradiction
        ("the largest and smallest values", "the largest value and the smallest", []),
        # 'display' is not a negated 'play' (too short after the prefix); 'irate' has no 'r' after 'ir'
        ("Which display is used?", "the play button", []),
        ("Who is irate?", "the ate fruit", []),
        # identifiers are never read as words with a prefix
        ("What does UN-4012 mean?", "4012 is an error", []),
    ],
)
def test_opposite_terms(question, evidence, expected):
    from components.core.text.analysis import opposite_terms

    assert opposite_terms(question, evidence, Analyzer()) == expected


def test_is_negated():
    from components.core.text.analysis import is_negated

    assert is_negated("What cannot be solved?") and is_negated("Which isn't used?") and is_negated("never")
    assert not is_negated("What can be solved in nominal time?")  # 'nominal' holds 'no' but is no negation
    assert not is_negated("What decides how powerful a machine may or may not be?")
    assert not is_negated("It checks whether or not the graph is connected.")
    assert is_negated("It may or may not halt, but it does not loop.")


def test_a_code_line_answer_takes_the_sentence_naming_its_key_as_reference():
    text = (
        '```json\n{\n  "rate_limit_per_minute": 120\n}\n```\n\n'
        "Each token may send the number of requests per minute shown in `rate_limit_per_minute`."
    )
    vis = visible_texts([Piece("api", 0, text, "Local API")])
    start = text.index('"rate_limit')
    ev = locate_extractive(vis, '"rate_limit_per_minute": 120', doc_id="api", start=start, end=start + 28)
    assert [text[u.start : u.end] for u in ev.references] == [text[text.index("Each") :]]
    from dataclasses import replace

    from components.core.verification.outcome import answer_spans

    q = "How many requests may a token send per minute?"
    j = lexical_judgement(q, ev, vis, Analyzer())
    assert j.verdict == SUPPORTED
    # "request", "token" and "send" are only in the referring sentence
    alone = lexical_judgement(q, replace(ev, references=()), vis, Analyzer())
    assert (alone.verdict, alone.reason) == (PARTIAL, "low_term_coverage: 2/5 question terms near the answer")
    assert answer_spans(ev, j)[-1]["text"].startswith("Each token may send")
    # the referring sentence itself has no references (it is no code line)
    s = text.index("Each")
    assert locate_extractive(vis, text[s:], doc_id="api", start=s, end=len(text)).references == ()


def test_a_table_rows_lead_in_is_its_header_and_heading_never_the_neighbouring_row():
    from components.core.verification.checks import Piece, lead_in, visible_texts

    text = ("## Error codes\n\n| Code | Meaning |\n| --- | --- |\n| ERR-1 | Card declined |\n"
            "| ERR-2 | Seat limit reached |\n")
    (vis,) = visible_texts([Piece("codes.md", 0, text)])
    rows = [vis.slice(u.start, u.end) for u in vis.units]
    row2 = rows.index("| ERR-2 | Seat limit reached |")
    assert [vis.slice(u.start, u.end) for u in lead_in(vis, row2, 2)] == ["## Error codes", "| Code | Meaning |"]

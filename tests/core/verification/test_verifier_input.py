"""The trained verifier's input and verdicts: the answer marked in its sentence with lead-in and title, exactly;
P(right) mapped to a verdict at the YAML's thresholds."""

from components.core.verification.checks import Piece, locate_extractive, visible_texts
from components.core.verification.judgements import trained_judgement
from components.core.verification.verifier_input import marked_context, verifier_pair


def _evidence(text, answer, title="Billing", lead_in_units=2):
    vis = visible_texts([Piece("d1", 0, text, title)])
    start = text.index(answer)
    return locate_extractive(vis, answer, doc_id="d1", start=start, end=start + len(answer),
                             lead_in_units=lead_in_units)


def test_the_answer_is_marked_in_its_sentence_after_the_lead_in_and_title():
    text = "Acme Pro plans.  Refunds take 30 days.\nShipping is free."
    ev = _evidence(text, "30 days")
    assert verifier_pair("How long do  refunds take?", "30 days", ev) == (
        "How long do refunds take?", "Billing. Acme Pro plans. Refunds take « 30 days » .")


def test_no_title_and_no_lead_in():
    ev = _evidence("Refunds take 30 days. Shipping is free.", "Shipping is free", title="", lead_in_units=0)
    assert verifier_pair("q", "Shipping is free", ev)[1] == "« Shipping is free » ."


def test_an_answer_not_at_a_span_is_put_in_front():
    from dataclasses import replace

    ev = replace(_evidence("Refunds take 30 days.", "30 days"), answer=None)
    assert marked_context(ev, "a month") == "« a month » Refunds take 30 days."


def test_probability_to_verdict():
    assert trained_judgement(0.5, 0.5, 0.1).verdict == "SUPPORTED"
    assert trained_judgement(0.49, 0.5, 0.1).verdict == "PARTIAL"
    low = trained_judgement(0.09, 0.5, 0.1)
    assert (low.verdict, low.reason, low.probability) == ("UNSUPPORTED", "verifier_refuted: verifier P(right) 0.09", 0.09)


TABLE = ("## Errors\n\n| Code | Meaning | Retry |\n|---|---|---|\n| ERR-1 | Card expired | no |\n"
         "| ERR-4012 | Payment declined |  |\n")


def test_a_table_cell_is_read_under_its_column_with_the_row_beside_it():
    ev = _evidence(TABLE, "Payment declined")
    # the heading stays; each cell says its column; the empty Retry cell is left out
    assert verifier_pair("What does ERR-4012 mean?", "Payment declined", ev)[1] == (
        "Billing. ## Errors Code: ERR-4012 | Meaning: « Payment declined »")
    ev = _evidence(TABLE, "ERR-1")
    assert marked_context(ev, "ERR-1") == "## Errors Code: « ERR-1 » | Meaning: Card expired | Retry: no"


def test_a_row_whose_cells_do_not_match_its_header_is_read_as_a_line():
    text = "| Code | Meaning |\n|---|---|\n| ERR-7 | Timed out | extra |\n"
    ev = _evidence(text, "Timed out", title="")
    assert marked_context(ev, "Timed out") == "| Code | Meaning | | ERR-7 | « Timed out » | extra |"

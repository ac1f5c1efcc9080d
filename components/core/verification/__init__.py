"""Verification: where an answer stands in the read text, judgements, answer helpers, the confidence combiner."""

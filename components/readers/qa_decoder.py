"""Running an ``AutoModelForQuestionAnswering`` over (question, context) pairs: tokenise with overflow windows,
run each context's sequences in forward passes of their own (sorted by length, padding columns dropped), decode
every sequence's best spans (``components.core.reading.span_decoding``), and remember the result per (question, context),
so that a widening runs the model only on the text that changed.

    decoder = QADecoder(tokenizer, model, max_seq_length=384, stride=128, batch_size=16, answers_per_seq=20,
                        max_answer_length=30, calibration_factor=0.1)
    per_context = decoder.decode_contexts("When was it finished?", [text_a, text_b])  # [[WindowDecoding, ...], ...]
"""

from __future__ import annotations

import threading

import numpy as np

from components.core.memo import MISSING, Memo
from components.core.reading.span_decoding import decode_window


class QADecoder:
    """A loaded QA model and its fast tokenizer, with the decoding settings of the reader that owns it."""

    def __init__(self, tokenizer, model, *, max_seq_length: int, stride: int, batch_size: int, answers_per_seq: int,
                 max_answer_length: int | None, calibration_factor: float, memo_size: int = 4096):
        self.tokenizer, self.model = tokenizer, model
        self.max_seq_length, self.stride, self.batch_size = max_seq_length, stride, batch_size
        self.answers_per_seq, self.max_answer_length = answers_per_seq, max_answer_length
        self.calibration_factor = calibration_factor
        self._memo = Memo(maxsize=memo_size)  # (question, context) -> its decoded sequences
        self._lock = threading.Lock()

    def decode_contexts(self, query: str, contexts: list[str]) -> list[list]:
        """The decoded sequences of each context, reading only contexts this question has not read yet.

        A widening re-reads the windows that were already whole paragraphs; those come from the memo. Each
        context is run in forward passes of its own sequences (``decode``), so what it decodes to never
        depends on which other contexts are read with it, and a memo hit equals a fresh read."""
        out: list[list | None] = [self._memo.get((query, c)) for c in contexts]
        todo = sorted({c for c, hit in zip(contexts, out) if hit is MISSING})
        if todo:
            decoded, sample_map = self.decode(query, todo)
            fresh: dict[str, list] = {c: [] for c in todo}
            for d in decoded:
                fresh[todo[sample_map[d.window]]].append(d)
            for c, decodings in fresh.items():
                self._memo.put((query, c), decodings)
            out = [fresh[c] if hit is MISSING else hit for c, hit in zip(contexts, out)]
        return out

    def decode(self, query: str, contexts: list[str]):
        """Tokenise all (query, context) pairs, run the model per context in batches of its sequences, decode
        each sequence."""
        import torch

        enc = self.tokenize(query, contexts)
        input_ids, attention = enc["input_ids"], enc["attention_mask"]
        offsets = enc["offset_mapping"]
        sequence_ids = np.array([[-1 if s is None else s for s in enc.sequence_ids(i)] for i in range(len(input_ids))])
        extra = {}
        if "token_type_ids" in enc and getattr(self.model.config, "type_vocab_size", 1) > 1:
            extra["token_type_ids"] = enc["token_type_ids"]
        cls_id = self.tokenizer.cls_token_id
        device = self.model.device

        decoded = [None] * len(input_ids)
        samples = np.asarray(enc["overflow_to_sample_mapping"])
        batches = []
        for sample in dict.fromkeys(samples.tolist()):  # a context's sequences only share a forward pass
            seqs = np.flatnonzero(samples == sample)
            seqs = seqs[np.argsort(-attention[seqs].sum(axis=1), kind="stable")]
            batches += [seqs[b : b + self.batch_size] for b in range(0, len(seqs), self.batch_size)]
        for rows in batches:
            cols = attention[rows].any(axis=0)  # drop padding columns no row of this batch needs
            inputs = {"input_ids": input_ids[rows][:, cols], "attention_mask": attention[rows][:, cols]}
            inputs.update({k: v[rows][:, cols] for k, v in extra.items()})
            with torch.inference_mode():
                out = self.model(**{k: torch.from_numpy(v).to(device) for k, v in inputs.items()})
            starts = out.start_logits.float().cpu().numpy()
            ends = out.end_logits.float().cpu().numpy()
            for r, row in enumerate(rows):
                ids = inputs["input_ids"][r]
                hits = np.flatnonzero(ids == cls_id) if cls_id is not None else []
                decoded[row] = decode_window(
                    starts[r],
                    ends[r],
                    offsets[row][cols],
                    sequence_ids[row][cols],
                    inputs["attention_mask"][r],
                    k=self.answers_per_seq,
                    max_answer_length=self.max_answer_length,
                    calibration_factor=self.calibration_factor,
                    cls_index=int(hits[0]) if len(hits) else 0,
                    window=int(row),
                )
        return decoded, [int(s) for s in enc["overflow_to_sample_mapping"]]

    def fit_question(self, query: str) -> str:
        """The question, unchanged unless it is so long that no context token beyond the ``stride`` would fit in a
        sequence (the tokenizer then panics — a Rust panic, not an Exception; a CISI query can be a whole
        paragraph): then cut, at a token boundary of the original text, to at most half a sequence."""
        limit = self.max_seq_length - self.stride - 4  # 3 special tokens + at least one new context token
        enc = self.tokenizer(query, add_special_tokens=False, return_offsets_mapping=True)
        if len(enc["input_ids"]) <= limit:
            return query
        keep = max(1, min(limit, (self.max_seq_length - 3) // 2))
        return query[: enc["offset_mapping"][keep - 1][1]]

    def tokenize(self, query: str, contexts: list[str]):
        """Fast-tokenizer encoding with overflow windows, offsets, padded to the longest sequence (numpy)."""
        kwargs = dict(
            padding="longest",
            max_length=self.max_seq_length,
            stride=self.stride,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            return_tensors="np",
        )
        # a fast tokenizer keeps its truncation and padding settings on the shared Rust object and changes them per
        # call: threads must not interleave calls with different settings — fit_question's call too (it pads
        # nothing: run between another thread's settings and its encoding, it once gave unpadded rows) — so every
        # call is serialised (they are cheap)
        with self._lock:
            queries = [self.fit_question(query)] * len(contexts)
            try:  # truncate only the context: the question stays whole in every window
                return self.tokenizer(queries, contexts, truncation="only_second", **kwargs)
            except Exception:  # noqa: BLE001 - a question too long to leave room for context: cut both
                return self.tokenizer(queries, contexts, truncation="longest_first", **kwargs)

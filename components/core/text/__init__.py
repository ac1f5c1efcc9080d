"""Text: the one splitter (blocks, sentences, units, chunks — every offset into the original), analysis for BM25 and key terms, planted-instruction detection, windows."""

"""Retrieval: corpus loading, the span index and its cache, BM25, rank fusion, metadata filters."""

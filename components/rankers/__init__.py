"""Rankers: re-order retrieved passages before reading."""

from components.rankers.cross_encoder_ranker import CrossEncoderRanker

__all__ = ["CrossEncoderRanker"]

"""Routers: decide where a query goes next (answer, widen the context, or give up)."""

from components.routers.verifier_router import VerifierRouter

__all__ = ["VerifierRouter"]

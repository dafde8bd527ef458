"""Advisors: the whitepaper's decisions as pure functions, used by operators and shown to users."""

"""textkit: small text helpers for page titles and summaries."""

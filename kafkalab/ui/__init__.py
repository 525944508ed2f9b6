"""The Textual lab console. Only this package imports Textual; the core never does."""

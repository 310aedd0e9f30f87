"""A run's report: one model (`model.RunReport`) and its formats (text, JSON, JUnit, Markdown,
GitHub annotations, HTML), and what `cachelint run` and `cachelint report` publish."""

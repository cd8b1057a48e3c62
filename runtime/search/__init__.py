"""Tool search: the tokenizer and search documents (shared with the generator) and the BM25
index the OpenAI adapter's client-side search ranks with."""

__all__: list[str] = []

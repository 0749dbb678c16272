"""The search engine: text to terms, a lexical index (BM25F), embeddings and their fusion.

Knows nothing of requests or policy: it ranks the documents it is given. Depends on
``core`` only.
"""

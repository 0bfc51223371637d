"""Task documents (SOP folders): the document model, the runner, and the index."""

"""ATTP, the TOML tool-use protocol: the system prompt and the reply parser."""

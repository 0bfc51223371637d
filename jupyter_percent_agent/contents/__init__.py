"""Contents manager and server extension that open message files as notebooks."""

"""Tool registry (Jarvis style): loads tool modules and describes their tools."""

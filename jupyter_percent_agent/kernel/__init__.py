"""The agent kernel: a Jupyter kernel whose cells are messages."""

"""The quickstart: one agent that finds a weather tool by tool search and answers with it."""

"""The command line: one small Typer app per command group. Parse, call the library, render."""

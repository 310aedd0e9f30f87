"""One module per subcommand; see cachelint.cli."""

"""One module per `prep` command (click's lazy group, see tui/cli.py's COMMANDS): a command's
module is imported only when that command runs, or when its help is asked for."""

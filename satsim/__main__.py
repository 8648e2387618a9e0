"""``python -m satsim`` runs the command line."""

from satsim.cli.main import main

main()

"""``python -m satsim`` runs the command line."""

from satsim.cli import main

main()

"""``python -m ember`` runs the demo."""
from .demo import main

main()

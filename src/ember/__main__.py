"""``python -m ember`` runs the demo (see ember/demo.py)."""
from .demo import main

main()

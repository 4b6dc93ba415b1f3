import sys

from skiff.cli import main

sys.exit(main())

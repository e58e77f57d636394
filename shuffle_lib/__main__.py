import sys

from shuffle_lib.cli import main

sys.exit(main())

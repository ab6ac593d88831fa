import sys
from kernelscope.cli import main

sys.exit(main())

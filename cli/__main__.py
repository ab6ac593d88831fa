from kernelscope.cli import run

run()

"""kernelscope.analysis: the editor-agnostic engine.

The pipeline, one module (or package) per stage:
toolchain -> compile -> sass / cfg / source -> program -> arch + occupancy -> static_facts
-> profile (emulator/ or measure/) -> blame -> optimizers/ -> estimators -> roofline -> reports/.
This package never imports kernelscope.server, pygls or lsprotocol.
"""

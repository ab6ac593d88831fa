"""The GPU as data: architecture and device specs (cited), occupancy, the hierarchical
roofline and the integer work it places."""

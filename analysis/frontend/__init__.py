"""From a .cu file to the program the other stages read: the compiler, conditional
blocks, the source's structure (tree-sitter-cuda), SASS (cubin decoder or nvdisasm), opcode
facts, control flow, and the program model that maps PCs to lines."""

// A project header the compile reaches through -I (tests/inputs/test_host_folding.py passes it).
#pragma once
#define BLOCK_SIZE 192
#define NUM_BLOCKS (4 * 66)

/* CRC32C (Castagnoli) over buffers, hardware-accelerated by ISA-L. */
#ifndef WEFT_CRC_H
#define WEFT_CRC_H

#include <stddef.h>
#include <stdint.h>

/* CRC32C of len bytes, continuing from seed (0 for a fresh checksum). Any thread. */
uint32_t crc32c(uint32_t seed, const void *p, size_t len);

#endif

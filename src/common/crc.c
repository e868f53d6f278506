/* CRC32C via ISA-L's crc32_iscsi. ISA-L's function takes and returns the raw
 * (non-inverted) register, so we invert on entry and exit to get the standard CRC32C. */
#include "common/crc.h"

#include <isa-l/crc.h>

uint32_t crc32c(uint32_t seed, const void *p, size_t len)
{
	return ~crc32_iscsi((unsigned char *)p, (int)len, ~seed);
}

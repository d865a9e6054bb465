/* SHA-256 (FIPS 180-4) for tests that check a generated file against a
 * digest recorded in a fixture.  Plain value state, nothing to free. */
#ifndef TEST_SHA256_H
#define TEST_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct th_sha256 {
    uint32_t h[8];
    uint64_t len;          /* bytes hashed so far */
    unsigned char buf[64]; /* partial block */
    size_t   nbuf;
} th_sha256;

void th_sha256_init(th_sha256 *s);
void th_sha256_update(th_sha256 *s, const void *data, size_t n);
/* Writes 64 lower-case hex digits and a NUL to hex[65]. */
void th_sha256_hex(th_sha256 *s, char hex[65]);
/* The digest of a whole file as hex; -1 if it cannot be read. */
int th_sha256_file(const char *path, char hex[65]);

#endif

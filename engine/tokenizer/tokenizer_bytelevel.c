/* Byte-level alias tables: GPT-2's reversible byte <-> printable code point
 * mapping that byte-level BPE vocabularies are written in. */
#include "engine/tokenizer/tokenizer_internal.h"

static int printable_self(int b)
{
    return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

void sx_bl_init(sx_bytelevel *bl)
{
    int extra = 0;
    for (int i = 0; i < 324; i++)
        bl->rev[i] = -1;
    for (int b = 0; b < 256; b++) {
        int cp = printable_self(b) ? b : 256 + extra++;
        bl->alias[b] = (uint16_t)cp;
        bl->rev[cp] = (int16_t)b;
    }
}

long sx_bl_decode(const sx_bytelevel *bl, const char *piece, size_t len, char *out)
{
    const unsigned char *s = (const unsigned char *)piece;
    size_t i = 0, n = 0;
    while (i < len) {
        uint32_t cp;
        size_t k = sx_utf8_decode(s + i, len - i, &cp);
        /* aliases are all below U+0144 (one or two UTF-8 bytes) */
        if (!k || cp >= 324 || bl->rev[cp] < 0)
            return -1;
        i += k;
        out[n++] = (char)bl->rev[cp];
    }
    return (long)n;
}

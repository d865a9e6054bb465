/* sx_utf8: UTF-8 as RFC 3629 defines it -- no overlong forms, no
 * surrogates (U+D800..U+DFFF), nothing past U+10FFFF -- the one set of
 * helpers the regex engine, the tokenizer, generation and the tools share.
 * (The validator keeps its own: its re-check shares no code.)
 * Nothing here allocates. */
#ifndef SX_COMMON_UTF8_H
#define SX_COMMON_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length of the sequence that lead byte c starts: 1 (ASCII), 2 (C2..DF),
 * 3 (E0..EF), 4 (F0..F4); 0 for a byte no valid sequence starts with
 * (a continuation byte, C0, C1, F5..FF). */
static inline int sx_utf8_lead_len(uint8_t c)
{
    return c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
         : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
}

/* One code point at s[0..len): its length (1..4) with *cp set, or 0 when no
 * valid sequence starts there (bad lead, bad continuation, overlong,
 * surrogate, past U+10FFFF, or cut short by len; len 0 included). */
size_t sx_utf8_decode(const uint8_t *s, size_t len, uint32_t *cp);

/* Writes cp's UTF-8 form to out[0..4) and returns its length (1..4); 0
 * (nothing written) for a surrogate or a value past U+10FFFF. */
size_t sx_utf8_encode(uint32_t cp, uint8_t out[4]);

/* Length of the maximal invalid subpart starting at s[0] (>= 1; len >= 1),
 * or 0 if a valid sequence starts there (its length via *seq).  For an
 * invalid subpart *seq is 0 when only the end of the input cut it short
 * (more bytes could complete it), else 1.  (The unit of U+FFFD
 * replacement in the WHATWG decoder.) */
size_t sx_utf8_bad_len(const unsigned char *s, size_t len, size_t *seq);

/* Offset of the first byte of the first invalid sequence, or len if the
 * text is valid UTF-8.  *ascii (may be NULL) is set to 1 if every byte is
 * below 0x80. */
size_t sx_utf8_check(const char *s, size_t len, int *ascii);

#endif
